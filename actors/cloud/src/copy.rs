//! A whole store copied into another: `migrate` (SQLite to PostgreSQL, or
//! back), and a PostgreSQL store's `backup`, which is a SQLite file like a
//! SQLite store's.

use crate::sqlite::SqliteStore;
use crate::store::{CloudStore, StoreError};
use std::path::Path;

/// Copies everything `from` holds into `to`, which must hold no user: in
/// one transaction of `to`, so a failed copy leaves it as it was.
pub fn copy_store(from: &dyn CloudStore, to: &mut dyn CloudStore) -> Result<(), StoreError> {
    to.import(&mut |sink| from.export(sink))
}

/// Writes a copy of `from` as of one moment to a new SQLite file at `to`
/// (which must not exist yet); a failed copy leaves no file behind.
pub fn backup_to_sqlite(from: &dyn CloudStore, to: &Path) -> Result<(), StoreError> {
    if to.exists() {
        return Err(StoreError::Exists(to.display().to_string()));
    }
    let copied = SqliteStore::open(to).and_then(|mut target| copy_store(from, &mut target));
    if copied.is_err() {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = to.as_os_str().to_owned();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
    copied
}
