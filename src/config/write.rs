//! Atomic replacement of the config file, through the one helper the token's
//! secrets file uses too ([`crate::secrets::private_file`]): readers (and a crash)
//! see either the old or the new contents, never a mix.

use crate::secrets::private_file::{self, FileMode};
use std::fs;
use std::io;
use std::path::Path;

/// Mode of a config file we create; it may hold passwords.
pub(super) const FILE_MODE: u32 = 0o600;

/// Writes `contents` to `path` via a temporary file in the same directory,
/// fsync and rename. The file keeps its current mode (or gets `new_mode` when
/// it does not exist yet). A symlinked config is replaced at its target, so the
/// link survives.
pub(super) fn replace_file(path: &Path, contents: &[u8], new_mode: u32) -> io::Result<()> {
    private_file::replace(path, contents, FileMode::KeepOr(new_mode))
}

/// Creates the config directory, private to the user (it holds secrets and,
/// later, logs). Existing directories are left as they are.
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}
