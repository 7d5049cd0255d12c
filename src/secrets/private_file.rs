//! Atomic replacement of a private file (the token's secrets file, reterm's
//! config): readers, and a crash, see either the old or the new contents,
//! never a mix, and the bytes are never in a file others could read.
//!
//! The new contents go to a hidden temporary file beside the target, created
//! with its final mode from the start (`create_new`, then the mode set again
//! in case the umask narrowed it), synced, and renamed over the target; then
//! the directory is synced. A symlinked target is replaced at the file it
//! points to, so the link survives.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The mode the replaced file gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// This mode, whatever the old file had (the secrets file: always 0600).
    Exactly(u32),
    /// The old file's mode, or this one when there is no old file yet (a
    /// config the user may have made group-readable on purpose).
    KeepOr(u32),
}

/// Writes `contents` to `path` atomically, with `mode`.
pub fn replace(path: &Path, contents: &[u8], mode: FileMode) -> io::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mode = match mode {
        FileMode::Exactly(m) => m,
        FileMode::KeepOr(new) => current_mode(&target)?.unwrap_or(new),
    };
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

/// A unique hidden sibling name, so editors and globbing ignore it.
fn temp_path(dir: &Path, target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_string());
    dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()))
}

fn write_synced(temp: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(temp)?;
    // The umask may have narrowed `mode`; the mode must be kept exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.write_all(contents)?;
    file.sync_all()
}

fn current_mode(path: &Path) -> io::Result<Option<u32>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions().mode() & 0o7777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes the rename durable. Some file systems refuse to fsync a directory;
/// the rename has still happened, so that is only logged.
fn sync_dir(dir: &Path) {
    if let Err(error) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), %error, "cannot fsync the directory");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn modes_are_set_exactly_or_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        replace(&path, b"one", FileMode::KeepOr(0o600)).unwrap();
        assert_eq!(mode_of(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        replace(&path, b"two", FileMode::KeepOr(0o600)).unwrap();
        assert_eq!(
            (fs::read(&path).unwrap(), mode_of(&path)),
            (b"two".to_vec(), 0o640)
        );
        replace(&path, b"three", FileMode::Exactly(0o600)).unwrap();
        assert_eq!(
            (fs::read(&path).unwrap(), mode_of(&path)),
            (b"three".to_vec(), 0o600)
        );
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_is_replaced_at_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let link = dir.path().join("link");
        fs::write(&real, b"old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace(&link, b"new", FileMode::Exactly(0o600)).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
    }
}
