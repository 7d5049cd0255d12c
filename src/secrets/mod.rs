//! reterm's secrets file: `~/.rete/secrets.json` (or the file
//! `$RETE_SECRETS_FILE` names), holding the control server's access token
//! (reterm's [`TokenStore`] for rete-mcp, [`SecretsFile`]) and each ReteCloud
//! service account's token, every value base64-encoded under its key; and
//! the scoped grants (issue 33) as a JSON array of records under
//! `mcp-grants-reterm`, each holding its token's SHA-256, never the token.
//!
//! The file is mode 0600 in a directory created 0700, and it is replaced
//! atomically ([`private_file`]): a new file is created 0600 beside it,
//! synced and renamed over the old one, so no secret is ever readable by
//! others, not even for a moment. Each change reads, edits and writes the
//! file under an exclusive `flock` on `secrets.json.lock` beside it, so two
//! writers never lose each other's key.

pub mod private_file;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use private_file::FileMode;
use rete_mcp::grant::GrantRecord;
use rete_mcp::{Token, TokenStore, TokenStoreError};
use serde_json::{Map, Value};
use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

/// The key under which reterm's control token is stored.
const KEY: &str = "mcp-token-reterm";

/// The key under which reterm's scoped grants are kept: an array of
/// [`GrantRecord`]s, which hold hashes, not tokens.
const GRANTS_KEY: &str = "mcp-grants-reterm";

/// Why the secrets file could not be read or written. Never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// No `$HOME` and no `$RETE_SECRETS_FILE`.
    #[error("no home directory to keep the token in")]
    NoHome,
    /// Reading or writing the secrets file failed.
    #[error("the token could not be stored in {path}: {source}")]
    Io {
        /// The secrets file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The secrets file is not the JSON object it should be.
    #[error("{0} is not a JSON object of secrets")]
    Malformed(PathBuf),
    /// The grants in the secrets file are not a list of grant records.
    #[error("the grants in {0} (mcp-grants-reterm) are not a list of grant records")]
    MalformedGrants(PathBuf),
}

/// The control server's token in the secrets file: the [`TokenStore`]
/// reterm hands rete-mcp.
#[derive(Debug, Clone)]
pub struct SecretsFile {
    /// The secrets file.
    pub path: PathBuf,
}

impl TokenStore for SecretsFile {
    fn load_or_store(&self, fresh: Token) -> Result<Token, TokenStoreError> {
        load_or_create(&self.path, fresh).map_err(|e| TokenStoreError(e.to_string()))
    }

    fn replace(&self, fresh: &Token) -> Result<(), TokenStoreError> {
        store_token(&self.path, fresh).map_err(|e| TokenStoreError(e.to_string()))
    }
}

/// Where the token lives: `$RETE_SECRETS_FILE`, else `~/.rete/secrets.json`.
pub fn secrets_path() -> Result<PathBuf, SecretsError> {
    if let Some(p) = std::env::var_os("RETE_SECRETS_FILE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(SecretsError::NoHome)?;
    Ok(PathBuf::from(home).join(".rete").join("secrets.json"))
}

/// The stored control token, or `fresh` stored now when there is none.
fn load_or_create(path: &Path, fresh: Token) -> Result<Token, SecretsError> {
    update(path, |secrets| {
        if let Some(token) = secrets
            .get(KEY)
            .and_then(Value::as_str)
            .and_then(|b| STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(Token::from_stored)
        {
            return (token, false);
        }
        secrets.insert(KEY.into(), Value::String(STANDARD.encode(fresh.expose())));
        (fresh, true)
    })
}

/// Replaces the stored control token with `fresh`.
fn store_token(path: &Path, fresh: &Token) -> Result<(), SecretsError> {
    update(path, |secrets| {
        secrets.insert(KEY.into(), Value::String(STANDARD.encode(fresh.expose())));
        ((), true)
    })
}

/// A secret kept in the file under `key` (base64, as the control token
/// is): a ReteCloud session's token, say. None when there is none.
pub fn read_secret(path: &Path, key: &str) -> Result<Option<String>, SecretsError> {
    Ok(read(path)?
        .get(key)
        .and_then(Value::as_str)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok()))
}

/// Stores `value` under `key`, keeping every other secret; the file is
/// replaced atomically and is 0600 from the start. Returns once it is on disk.
/// A value stored this way has no generation (see [`store_secret_generation`]):
/// any generation stored after it replaces it.
pub fn store_secret(path: &Path, key: &str, value: &str) -> Result<(), SecretsError> {
    update(path, |secrets| {
        secrets.insert(key.into(), Value::String(STANDARD.encode(value)));
        secrets.remove(&generation_key(key));
        ((), true)
    })
}

/// Stores `value` under `key` as generation `generation` of a sequence (a
/// ReteCloud token's chain), unless the file holds a later or the same
/// generation under `key` already, which then stays: two writers of one
/// sequence (two sessions of one account) cannot put an older value back.
/// True when `value` is the stored one now: written, or found stored as
/// this generation already (a store repeated after its first outcome was
/// lost). Read, compared and written under the file's lock, as every change
/// is.
pub fn store_secret_generation(
    path: &Path,
    key: &str,
    value: &str,
    generation: u64,
) -> Result<bool, SecretsError> {
    update(path, |secrets| {
        let stored = secrets.get(&generation_key(key)).and_then(Value::as_u64);
        if stored == Some(generation) {
            let encoded = STANDARD.encode(value);
            let held = secrets.get(key).and_then(Value::as_str).unwrap_or("");
            // A token: compared in constant time, as every token is.
            let same = bool::from(held.as_bytes().ct_eq(encoded.as_bytes()));
            return (same, false);
        }
        if stored.is_some_and(|g| g > generation) {
            return (false, false);
        }
        secrets.insert(key.into(), Value::String(STANDARD.encode(value)));
        secrets.insert(generation_key(key), Value::from(generation));
        (true, true)
    })
}

/// The scoped grants kept in the file, as they were added; none when there
/// are none.
pub fn read_grants(path: &Path) -> Result<Vec<GrantRecord>, SecretsError> {
    grants_in(path, &read(path)?)
}

/// Reads the kept grants, lets `change` edit them, and writes them back when
/// it says so, under the file's lock as every change is. Malformed grants
/// are an error and stay as they are.
pub fn update_grants<R>(
    path: &Path,
    change: impl FnOnce(&mut Vec<GrantRecord>) -> (R, bool),
) -> Result<R, SecretsError> {
    update(path, |secrets| {
        let mut grants = match grants_in(path, secrets) {
            Ok(grants) => grants,
            Err(e) => return (Err(e), false),
        };
        let (answer, changed) = change(&mut grants);
        if !changed {
            return (Ok(answer), false);
        }
        match serde_json::to_value(&grants) {
            Ok(value) => {
                secrets.insert(GRANTS_KEY.into(), value);
                (Ok(answer), true)
            }
            Err(_) => (Err(SecretsError::MalformedGrants(path.to_owned())), false),
        }
    })?
}

fn grants_in(path: &Path, secrets: &Map<String, Value>) -> Result<Vec<GrantRecord>, SecretsError> {
    match secrets.get(GRANTS_KEY) {
        None => Ok(Vec::new()),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| SecretsError::MalformedGrants(path.to_owned())),
    }
}

/// Where the generation of the value under `key` is kept.
fn generation_key(key: &str) -> String {
    format!("{key}.generation")
}

/// Reads the secrets, lets `change` edit them, and writes them back when it
/// says so, all under an exclusive lock on a file beside them (`flock`, which
/// also excludes other threads of this process, since each takes the lock
/// through its own open file): the control token regenerated while a
/// ReteCloud session stores its rotated token, or `reterm retecloud-token`
/// run beside a running reterm, would otherwise each write back what it read
/// and lose the other's change.
fn update<R>(
    path: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> (R, bool),
) -> Result<R, SecretsError> {
    ensure_dir(path)?;
    let _lock = FileLock::exclusive(&lock_path(path)).map_err(io_err(path))?;
    let mut secrets = read(path)?;
    let (answer, changed) = change(&mut secrets);
    if changed {
        write(path, &secrets)?;
    }
    Ok(answer)
}

/// `secrets.json` → `secrets.json.lock`, in the same private directory.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// An exclusive `flock` held until dropped (closing the file releases it).
struct FileLock {
    /// Held only to keep the descriptor, and so the lock, open.
    _file: fs::File,
}

impl FileLock {
    fn exclusive(path: &Path) -> io::Result<FileLock> {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        loop {
            // SAFETY: the descriptor is open for as long as `file` lives.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(FileLock { _file: file });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SecretsError + '_ {
    move |source| SecretsError::Io {
        path: path.to_owned(),
        source,
    }
}

fn read(path: &Path) -> Result<Map<String, Value>, SecretsError> {
    match fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(SecretsError::Malformed(path.to_owned())),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Creates the secrets file's directory (0700) when it is missing.
fn ensure_dir(path: &Path) -> Result<(), SecretsError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err(path))?;
    }
    Ok(())
}

fn write(path: &Path, secrets: &Map<String, Value>) -> Result<(), SecretsError> {
    ensure_dir(path)?;
    let body = serde_json::to_vec_pretty(&Value::Object(secrets.clone()))
        .map_err(|e| io_err(path)(io::Error::other(e)))?;
    // 0600 from the start: the bytes are never in a file others could read.
    private_file::replace(path, &body, FileMode::Exactly(0o600)).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn load_or_create(path: &Path) -> Result<Token, TokenStoreError> {
        SecretsFile {
            path: path.to_owned(),
        }
        .load_or_store(Token::generate())
    }

    fn regenerate(path: &Path) -> Result<Token, TokenStoreError> {
        let fresh = Token::generate();
        SecretsFile {
            path: path.to_owned(),
        }
        .replace(&fresh)?;
        Ok(fresh)
    }

    #[test]
    fn stored_private_and_stable_and_regenerated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("secrets.json");
        let t1 = load_or_create(&path).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // Stored base64-encoded, not as the token itself.
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains(t1.expose()));
        assert!(text.contains(&STANDARD.encode(t1.expose())));
        assert_eq!(load_or_create(&path).unwrap(), t1);
        let t2 = regenerate(&path).unwrap();
        assert_ne!(t1, t2);
        assert_eq!(load_or_create(&path).unwrap(), t2);
        assert_eq!(mode(&path), 0o600);
        // No temporary file left behind: the secrets and their lock only.
        let mut names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["secrets.json", "secrets.json.lock"]);
        assert_eq!(mode(&lock_path(&path)), 0o600);
    }

    /// Writers that overlap (threads here; `flock` excludes processes the
    /// same way) each keep the other's secret.
    #[test]
    fn concurrent_stores_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        let t = load_or_create(&path).unwrap();
        std::thread::scope(|s| {
            for w in 0..4 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..25 {
                        store_secret(path, &format!("k{w}-{i}"), "v").unwrap();
                    }
                });
            }
        });
        for w in 0..4 {
            for i in 0..25 {
                assert_eq!(
                    read_secret(&path, &format!("k{w}-{i}")).unwrap().as_deref(),
                    Some("v"),
                    "k{w}-{i} was lost"
                );
            }
        }
        assert_eq!(load_or_create(&path).unwrap(), t, "the token was kept");
    }

    #[test]
    fn other_secrets_sit_beside_the_token_private_and_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        let t = load_or_create(&path).unwrap();
        assert_eq!(read_secret(&path, "retecloud-token-x").unwrap(), None);
        store_secret(&path, "retecloud-token-x", "rct1_abc").unwrap();
        assert_eq!(
            read_secret(&path, "retecloud-token-x").unwrap().as_deref(),
            Some("rct1_abc")
        );
        assert_eq!(
            load_or_create(&path).unwrap(),
            t,
            "the access token is kept"
        );
        assert!(!fs::read_to_string(&path).unwrap().contains("rct1_abc"));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_generation_never_goes_back_and_a_value_set_by_hand_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        let key = "retecloud-token-x";
        let read = || read_secret(&path, key).unwrap();
        assert!(store_secret_generation(&path, key, "rct1_g2", 2).unwrap());
        // Another writer of the sequence, later with an earlier generation
        // (or the same one again): nothing changes.
        assert!(!store_secret_generation(&path, key, "rct1_g1", 1).unwrap());
        assert!(!store_secret_generation(&path, key, "rct1_g2b", 2).unwrap());
        assert_eq!(read().as_deref(), Some("rct1_g2"));
        // The same store repeated (its first outcome was lost): it holds.
        assert!(store_secret_generation(&path, key, "rct1_g2", 2).unwrap());
        assert_eq!(read().as_deref(), Some("rct1_g2"));
        assert!(store_secret_generation(&path, key, "rct1_g3", 3).unwrap());
        assert_eq!(read().as_deref(), Some("rct1_g3"));
        // Set by hand (a new chain's first token): any generation follows.
        store_secret(&path, key, "rct1_new").unwrap();
        assert_eq!(read().as_deref(), Some("rct1_new"));
        assert!(store_secret_generation(&path, key, "rct1_n1", 1).unwrap());
        assert_eq!(read().as_deref(), Some("rct1_n1"));
    }

    #[test]
    fn grants_are_kept_as_hashes_beside_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        let t = load_or_create(&path).unwrap();
        assert!(read_grants(&path).unwrap().is_empty());
        let spec = rete_mcp::grant::GrantSpec::parse(&["bot", "buffers=#rust*"]).unwrap();
        let (record, token) = GrantRecord::issue(spec, 1_000);
        let added = update_grants(&path, |grants| {
            grants.push(record.clone());
            (grants.len(), true)
        })
        .unwrap();
        assert_eq!(added, 1);
        assert_eq!(read_grants(&path).unwrap(), std::slice::from_ref(&record));
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains(token.expose()));
        assert!(!text.contains(&STANDARD.encode(token.expose())));
        assert_eq!(load_or_create(&path).unwrap(), t, "the token was kept");
        // Nothing changed, nothing written; a removal is kept.
        update_grants(&path, |_| ((), false)).unwrap();
        update_grants(&path, |grants| ((), grants.pop().is_some())).unwrap();
        assert!(read_grants(&path).unwrap().is_empty());
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Grants that are not records are refused and left as they are.
        let mut v: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        v[GRANTS_KEY] = Value::from("garbage");
        fs::write(&path, v.to_string()).unwrap();
        let e = update_grants(&path, |grants| ((), grants.is_empty())).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "the grants in {} (mcp-grants-reterm) are not a list of grant records",
                path.display()
            )
        );
        assert!(read_grants(&path).is_err());
        let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(after[GRANTS_KEY], "garbage");
    }

    #[test]
    fn other_secrets_are_kept_and_garbage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        fs::write(&path, r#"{"other":"x"}"#).unwrap();
        load_or_create(&path).unwrap();
        let v: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["other"], "x");
        // A stored control token that is not one is replaced.
        let short = format!(r#"{{"{KEY}":"{}"}}"#, STANDARD.encode("short"));
        fs::write(&path, short).unwrap();
        assert_eq!(load_or_create(&path).unwrap().expose().len(), 43);
        fs::write(&path, "not json").unwrap();
        assert_eq!(
            load_or_create(&path).unwrap_err().to_string(),
            format!("{} is not a JSON object of secrets", path.display())
        );
        assert!(matches!(
            read_secret(&path, "other"),
            Err(SecretsError::Malformed(_))
        ));
    }
}
