//! Scoped grants (issue 33) in reterm: `/control grant add|list|revoke` and
//! the headers file each grant's token lives in.
//!
//! A grant's token is written once, to `~/.rete/grants/NAME.json`
//! (`{"Authorization": "Bearer …"}`, 0600 from the start, replaced
//! atomically, in a 0700 directory), and shown nowhere: not in an answer,
//! not in the secrets file, which keeps each grant as a record holding its
//! token's SHA-256 (`mcp-grants-reterm`). The one [`Grants`] list of the run
//! is what every control server reterm starts recognises tokens in, so an
//! addition or a revocation acts on the running server at once.
//!
//! A grant that has ended is refused by the gate from that moment; `list`
//! shows it as ended for the rest of the run, and the next start forgets it
//! (its record and its headers file go).

use super::register::write_headers;
use chrono::{DateTime, Utc};
use rete_mcp::grant::{GrantRecord, GrantSpec, Grants};
use reterm::secrets::{read_grants, update_grants};
use std::io;
use std::path::{Path, PathBuf};

/// Grant names that `/control register NAME` would read as its own words.
const RESERVED: [&str; 3] = ["user", "local", "project"];

/// `~/.rete/grants/NAME.json`, the headers file of the grant `name`; None
/// without a HOME. `name` must be a grant's (checked) name.
pub fn headers_path(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(
        PathBuf::from(home)
            .join(".rete")
            .join("grants")
            .join(format!("{name}.json")),
    )
}

/// What [`load`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The grants still live.
    pub live: Vec<GrantRecord>,
    /// The names of the grants that had ended and were forgotten now.
    pub forgotten: Vec<String>,
    /// What to show: something forgotten, or not readable.
    pub notice: Option<String>,
}

/// The grants kept in the secrets file at `secrets`, those ended at
/// `now_ms` forgotten (their records and headers files removed), and a
/// notice to show when something was forgotten or could not be read.
pub fn load(secrets: &Path, now_ms: i64) -> Loaded {
    let kept = match read_grants(secrets) {
        Ok(kept) => kept,
        Err(e) => {
            return Loaded {
                notice: Some(format!("no grants loaded: {e}")),
                ..Loaded::default()
            }
        }
    };
    if kept.iter().all(|r| r.is_live(now_ms)) {
        return Loaded {
            live: kept,
            ..Loaded::default()
        };
    }
    let pruned = update_grants(secrets, |grants| {
        let mut ended = Vec::new();
        grants.retain(|r| {
            let live = r.is_live(now_ms);
            if !live {
                ended.push(r.name.clone());
            }
            live
        });
        let changed = !ended.is_empty();
        ((grants.clone(), ended), changed)
    });
    match pruned {
        Ok((live, ended)) => {
            for name in &ended {
                if let Some(path) = headers_path(name) {
                    // Best effort: the token in it is refused anyway.
                    let _ = std::fs::remove_file(path);
                }
            }
            let notice = (!ended.is_empty())
                .then(|| format!("grants ended and forgotten: {}", ended.join(", ")));
            Loaded {
                live,
                forgotten: ended,
                notice,
            }
        }
        // Kept as read: the gate refuses the ended ones all the same.
        Err(e) => Loaded {
            live: kept,
            forgotten: Vec::new(),
            notice: Some(format!("ended grants not forgotten: {e}")),
        },
    }
}

/// `/control grant add WORDS…`: the lines to print. Nothing is made unless
/// all of it is: a bad word, a taken name, or a headers file or secrets file
/// that cannot be written leaves no grant, no record and no headers file.
pub fn add(grants: &Grants, secrets: &Path, words: &[String], now_ms: i64) -> Vec<String> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let spec = match GrantSpec::parse(&words) {
        Ok(spec) => spec,
        Err(why) => return vec![format!("grant not added: {why}")],
    };
    let name = spec.name.clone();
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
        return vec![format!(
            "grant not added: `{name}` is a word of /control register; choose another name"
        )];
    }
    let taken = || {
        vec![format!(
            "grant not added: there is a grant named {name} already (/control grant revoke {name} ends it)"
        )]
    };
    if grants.list().iter().any(|r| r.name == name) {
        return taken();
    }
    let Some(headers) = headers_path(&name) else {
        return vec!["grant not added: HOME is not set".to_owned()];
    };
    let (record, token) = GrantRecord::issue(spec, now_ms);
    let written = match headers.parent() {
        Some(dir) => private_dir(dir),
        None => Ok(()),
    }
    .and_then(|()| write_headers(&headers, token.expose()));
    if let Err(e) = written {
        // A directory or file made before the failure holds no token.
        return vec![format!(
            "grant not added: cannot write {}: {}",
            headers.display(),
            e.kind()
        )];
    }
    drop(token);
    let undo_headers = || {
        let _ = std::fs::remove_file(&headers);
    };
    let stored = update_grants(secrets, |kept| {
        if kept.iter().any(|r| r.name == name) {
            return (false, false);
        }
        kept.push(record.clone());
        (true, true)
    });
    match stored {
        Ok(true) => {}
        Ok(false) => {
            undo_headers();
            return taken();
        }
        Err(e) => {
            undo_headers();
            return vec![format!("grant not added: {e}")];
        }
    }
    if grants.add(record.clone()).is_err() {
        let _ = update_grants(secrets, |kept| {
            kept.retain(|r| r.name != name);
            ((), true)
        });
        undo_headers();
        return taken();
    }
    let _ = persist_last_use(grants, secrets);
    vec![format!(
        "grant {name} added: {}; its token is in {} and nowhere else — /control register {name} connects Claude Code with it",
        describe(&record, now_ms),
        headers.display()
    )]
}

/// Makes `dir` (and what is missing above it) 0700, and narrows it to 0700
/// when others could read or search it.
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// `/control grant list`: one line per grant, never its token or hash.
pub fn list(grants: &Grants, secrets: &Path, now_ms: i64) -> Vec<String> {
    let saved = persist_last_use(grants, secrets);
    let records = grants.list();
    if records.is_empty() {
        return vec![
            "no grants: /control grant add NAME gives an agent a token of its own that sees less"
                .to_owned(),
        ];
    }
    let mut lines: Vec<String> = records
        .iter()
        .map(|r| {
            let used = r.last_used_ms.map_or_else(|| "never".to_owned(), when);
            format!("{}: {}, last used {used}", r.name, describe(r, now_ms))
        })
        .collect();
    if let Err(why) = saved {
        lines.push(format!("(last use not saved: {why})"));
    }
    lines
}

/// `/control grant revoke NAME`: refused from the next request on, gone
/// from the secrets file, its headers file deleted. Ok: it was revoked (the
/// lines say how far); Err: there was nothing to revoke, or it could not be.
pub fn revoke(grants: &Grants, secrets: &Path, name: &str) -> Result<Vec<String>, Vec<String>> {
    if GrantSpec::parse(&[name]).is_err() {
        // Not a name a grant can have, so none has it (and it names no file).
        return Err(vec![unknown(name)]);
    }
    let _ = persist_last_use(grants, secrets);
    let in_memory = grants.revoke(name).is_some();
    let stored = update_grants(secrets, |kept| {
        let before = kept.len();
        kept.retain(|r| r.name != name);
        let removed = kept.len() != before;
        (removed, removed)
    });
    if !in_memory && !matches!(stored, Ok(true)) {
        return Err(match stored {
            Err(e) => vec![format!("grant {name} not revoked: {e}")],
            Ok(_) => vec![unknown(name)],
        });
    }
    // Only a grant's name, checked when it was added, names a file here.
    let headers = headers_path(name);
    let removed = match headers.as_deref().map(std::fs::remove_file) {
        Some(Ok(())) => headers.map(|p| format!("; {} removed", p.display())),
        Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => None,
        Some(Err(e)) => {
            headers.map(|p| format!("; {} could not be removed ({})", p.display(), e.kind()))
        }
        None => None,
    }
    .unwrap_or_default();
    Ok(match stored {
        Ok(_) => vec![format!(
            "grant {name} revoked: its token is refused from now on{removed}"
        )],
        Err(e) => vec![format!(
            "grant {name} revoked for this run (its token is refused from now on){removed}, but it is still in the secrets file ({e}): /control grant revoke {name} again"
        )],
    })
}

/// The answer for a name no grant has.
pub fn unknown(name: &str) -> String {
    format!(
        "no grant named {}: /control grant list shows them",
        name.escape_debug()
    )
}

/// Saves the grants' last-use times (kept in memory by the gate) to the
/// secrets file, keeping the later of the two; Err is why it could not.
pub fn persist_last_use(grants: &Grants, secrets: &Path) -> Result<(), String> {
    let live = grants.list();
    if live.iter().all(|r| r.last_used_ms.is_none()) {
        return Ok(());
    }
    update_grants(secrets, |kept| {
        let mut changed = false;
        for record in kept.iter_mut() {
            let seen = live
                .iter()
                .find(|r| r.name == record.name && r.created_ms == record.created_ms)
                .and_then(|r| r.last_used_ms);
            if seen > record.last_used_ms {
                record.last_used_ms = seen;
                changed = true;
            }
        }
        ((), changed)
    })
    .map_err(|e| e.to_string())
}

/// What a grant covers and until when, as `/control grant` shows it.
fn describe(r: &GrantRecord, now_ms: i64) -> String {
    let networks = if r.scope.networks.is_empty() {
        "all".to_owned()
    } else {
        r.scope.networks.join(",")
    };
    let buffers = if r.scope.buffers.is_empty() {
        "all channels".to_owned()
    } else {
        r.scope.buffers.join(",")
    };
    let expiry = match r.expires_ms {
        None => "expires never".to_owned(),
        Some(end) if now_ms >= end => format!("ended {}", when(end)),
        Some(end) => format!("expires {}", when(end)),
    };
    format!(
        "networks {networks}, buffers {buffers}, queries {}, tier {}, {expiry}",
        if r.scope.queries { "on" } else { "off" },
        r.tier.as_str()
    )
}

/// A time as the grant lines show it: to the minute, in UTC.
fn when(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(words: &[&str], now_ms: i64) -> GrantRecord {
        GrantRecord::issue(GrantSpec::parse(words).unwrap(), now_ms).0
    }

    #[test]
    fn a_grant_is_described_by_its_scope_tier_and_end() {
        let at = 1_796_000_000_000; // 2026-11-30 00:53:20 UTC
        let plain = record(&["a"], at);
        assert_eq!(
            describe(&plain, at),
            "networks all, buffers all channels, queries off, tier read, expires 2026-11-30 08:53 UTC"
        );
        let narrow = record(
            &[
                "b",
                "networks=libera,oftc",
                "buffers=#rust*,#x",
                "queries=on",
                "tier=send",
                "expires=never",
            ],
            at,
        );
        assert_eq!(
            describe(&narrow, at),
            "networks libera,oftc, buffers #rust*,#x, queries on, tier send, expires never"
        );
        let short = record(&["c", "expires=1m"], at);
        assert_eq!(
            describe(&short, at + 60_000),
            "networks all, buffers all channels, queries off, tier read, ended 2026-11-30 00:54 UTC"
        );
    }

    #[test]
    fn the_grants_directory_is_made_or_narrowed_to_0700() {
        use std::os::unix::fs::PermissionsExt as _;
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".rete").join("grants");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        private_dir(&dir).unwrap();
        assert_eq!((mode(&dir), mode(dir.parent().unwrap())), (0o700, 0o700));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn revoking_an_unknown_name_touches_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets.json");
        std::fs::write(&secrets, "not json").unwrap();
        let grants = Grants::default();
        assert_eq!(
            revoke(&grants, &secrets, "../secrets"),
            Err(vec![
                "no grant named ../secrets: /control grant list shows them".to_owned()
            ])
        );
        // A secrets file that cannot be read: nothing is said to be revoked
        // and no headers file is touched.
        assert_eq!(
            revoke(&grants, &secrets, "nobody"),
            Err(vec![format!(
                "grant nobody not revoked: {} is not a JSON object of secrets",
                secrets.display()
            )])
        );
        assert_eq!(std::fs::read_to_string(&secrets).unwrap(), "not json");
    }

    #[test]
    fn start_forgets_ended_grants_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets.json");
        let live = record(&["live"], 1_000);
        let ended = record(&["ended", "expires=1s"], 1_000);
        update_grants(&secrets, |kept| {
            kept.extend([live.clone(), ended.clone()]);
            ((), true)
        })
        .unwrap();
        let loaded = load(&secrets, 5_000);
        assert_eq!(loaded.live, std::slice::from_ref(&live));
        assert_eq!(loaded.forgotten, ["ended"]);
        assert_eq!(
            loaded.notice.as_deref(),
            Some("grants ended and forgotten: ended")
        );
        assert_eq!(read_grants(&secrets).unwrap(), std::slice::from_ref(&live));
        assert_eq!(
            load(&secrets, 5_000),
            Loaded {
                live: vec![live],
                ..Loaded::default()
            }
        );
    }

    #[test]
    fn last_use_is_saved_keeping_the_later_time() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets.json");
        let mut a = record(&["a"], 1_000);
        update_grants(&secrets, |kept| {
            kept.push(a.clone());
            ((), true)
        })
        .unwrap();
        a.last_used_ms = Some(9_000);
        let grants = Grants::new(vec![a.clone()]);
        persist_last_use(&grants, &secrets).unwrap();
        assert_eq!(read_grants(&secrets).unwrap()[0].last_used_ms, Some(9_000));
        a.last_used_ms = Some(2_000);
        persist_last_use(&Grants::new(vec![a]), &secrets).unwrap();
        assert_eq!(read_grants(&secrets).unwrap()[0].last_used_ms, Some(9_000));
    }
}
