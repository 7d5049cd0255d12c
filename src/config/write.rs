//! Atomic replacement of a file: readers (and a crash) see either the old or
//! the new contents, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Mode of a config file we create; it may hold passwords.
pub(super) const FILE_MODE: u32 = 0o600;

/// Writes `contents` to `path` via a temporary file in the same directory,
/// fsync and rename. The file keeps its current mode (or gets `new_mode` when
/// it does not exist yet). A symlinked config is replaced at its target, so the
/// link survives.
pub(super) fn replace_file(path: &Path, contents: &[u8], new_mode: u32) -> io::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mode = current_mode(&target)?.unwrap_or(new_mode);
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temp = temp_path(&dir, &target);
    let result = write_synced(&temp, contents, mode).and_then(|()| fs::rename(&temp, &target));
    if result.is_err() {
        // Best effort: the temp file is ours and useless now.
        let _ = fs::remove_file(&temp);
    }
    result?;
    sync_dir(&dir);
    Ok(())
}

/// A unique sibling name, hidden, so editors and globbing ignore it.
fn temp_path(dir: &Path, target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".to_string());
    dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()))
}

fn write_synced(temp: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let mut file = create_new(temp, mode)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(unix)]
fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have narrowed `mode`; the original mode must be kept exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    Ok(file)
}

#[cfg(not(unix))]
fn create_new(path: &Path, _mode: u32) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(unix)]
fn current_mode(path: &Path) -> io::Result<Option<u32>> {
    use std::os::unix::fs::PermissionsExt;
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions().mode() & 0o7777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn current_mode(_path: &Path) -> io::Result<Option<u32>> {
    Ok(None)
}

/// Makes the rename durable. Some file systems refuse to fsync a directory;
/// the rename has still happened, so that is only logged.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(error) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), %error, "cannot fsync config directory");
    }
    #[cfg(not(unix))]
    let _ = dir;
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
