//! One `serve` per database. Two services on one SQLite file would both
//! connect every network to IRC and store every line twice, out of order;
//! the second one to start refuses instead. The lock is an advisory `flock`
//! on a file beside the database, which the kernel lets go when the
//! process ends however it ends, so a crash never leaves the database
//! locked. (Several nodes sharing one database need a store built for it:
//! each network owned through a lease, not this lock.)

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Held while the service serves `db`; dropping it (or exiting) lets go.
#[derive(Debug)]
pub struct ServeLock {
    _file: File,
}

/// The lock file of `db`: its name with `.serve-lock` added.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".serve-lock");
    PathBuf::from(name)
}

impl ServeLock {
    /// Takes the lock of `db`, or says why not: another process holds it,
    /// or the lock file cannot be opened.
    pub fn take(db: &Path) -> Result<ServeLock, String> {
        let path = lock_path(db);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: flock(2) on a descriptor this function owns.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if taken != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                let holder = holder.trim();
                return Err(format!(
                    "{}: another `rete-cloud serve`{} is using this database; stop it first",
                    db.display(),
                    if holder.is_empty() {
                        String::new()
                    } else {
                        format!(" (pid {holder})")
                    }
                ));
            }
            return Err(format!("{}: {e}", path.display()));
        }
        // Who holds it, for the message above and for an admin.
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(ServeLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cloud.db");
        let first = ServeLock::take(&db).unwrap();
        let refused = ServeLock::take(&db).unwrap_err();
        assert!(refused.contains("another `rete-cloud serve`"), "{refused}");
        assert!(
            refused.contains(&format!("pid {}", std::process::id())),
            "{refused}"
        );
        drop(first);
        ServeLock::take(&db).unwrap();
    }
}
