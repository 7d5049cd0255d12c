use super::*;
use crate::store::suite::{self, Databases, Opener};
use tempfile::TempDir;

/// SQLite files in one temp dir.
struct Files {
    dir: TempDir,
    made: u32,
}

impl Databases for Files {
    fn fresh(&mut self) -> Opener {
        self.made += 1;
        let path = self.dir.path().join(format!("cloud{}.db", self.made));
        Box::new(move || Box::new(SqliteStore::open(&path).unwrap()))
    }
}

#[test]
fn the_store_suite_passes_on_sqlite() {
    suite::run_all(&mut Files {
        dir: tempfile::tempdir().unwrap(),
        made: 0,
    });
}

#[test]
fn the_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    SqliteStore::open(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
