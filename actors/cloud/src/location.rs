//! Where a store lives, as `--db` names it: a SQLite file (the default,
//! nothing to set up) or a PostgreSQL database by URL, for several service
//! nodes on one database.

use crate::postgres::PostgresStore;
use crate::sqlite::SqliteStore;
use crate::store::{CloudStore, StoreError};
use std::fmt;
use std::path::PathBuf;

/// A store's place. Shown (Display, Debug) without a URL's password.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database: `postgresql://user@host:port/db`.
    Postgres(String),
}

impl Location {
    /// `postgresql://…` or `postgres://…` is a database; anything else a
    /// file path.
    pub fn parse(db: &str) -> Location {
        if db.starts_with("postgresql://") || db.starts_with("postgres://") {
            Location::Postgres(db.to_owned())
        } else {
            Location::Sqlite(PathBuf::from(db))
        }
    }

    /// Opens the store there (creating its tables when absent).
    pub fn open(&self) -> Result<Box<dyn CloudStore>, StoreError> {
        Ok(match self {
            Location::Sqlite(path) => Box::new(SqliteStore::open(path)?),
            Location::Postgres(url) => Box::new(PostgresStore::open(url)?),
        })
    }
}

/// `url` with the password of its user part, if any, replaced by `***`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let shown = match userinfo.split_once(':') {
                Some((name, _)) => format!("{name}:***"),
                None => userinfo.to_owned(),
            };
            format!("{scheme}://{shown}@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_a_database_and_is_shown_without_its_password() {
        let l = Location::parse("postgresql://rete:s3cret@db.example:5432/cloud?sslmode=disable");
        assert!(matches!(l, Location::Postgres(_)));
        assert_eq!(
            l.to_string(),
            "postgresql://rete:***@db.example:5432/cloud?sslmode=disable"
        );
        assert!(!format!("{l:?}").contains("s3cret"));
        let plain = Location::parse("postgres://rete@127.0.0.1:5/db");
        assert_eq!(plain.to_string(), "postgres://rete@127.0.0.1:5/db");
        assert_eq!(
            Location::parse("/var/lib/cloud.db"),
            Location::Sqlite("/var/lib/cloud.db".into())
        );
        assert_eq!(
            Location::parse("postgresql://a:b:c@h/d").to_string(),
            "postgresql://a:***@h/d"
        );
    }
}
