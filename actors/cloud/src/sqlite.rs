//! The default [`CloudStore`]: one SQLite file (rusqlite, SQLite bundled).
//!
//! WAL mode, so an operator's `rete-cloud` command can read or prune the
//! database while the service runs, and a row committed before the service
//! is killed is still there when it starts again. A network's `latest`
//! counter lives in its own row, so numbering never goes back even when
//! every row is evicted. A chain's acknowledged send ids are numbered per
//! chain (`n`), so the newest `keep` are one index seek away.

use crate::store::{
    fresh_stream_id, standing_columns, standing_from, Append, Appended, BacklogEnd, ChainId,
    CloudStore, FoundChain, Held, ItemSink, LeaseView, NetworkRecord, NetworkSettings, Node,
    Outgoing, SendOutcome, StoreError, StoredRow, UserId, UserSummary,
};
use rete_actors::wall_clock;
use rete_cloud_protocol::frame::{NetworkId, RequestId, StreamId};
use rete_cloud_protocol::replay::StoreExtent;
use rete_cloud_protocol::token_chain::{ChainEntry, TokenChain, TokenHash};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::Path;

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS chains (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
  revoked INTEGER NOT NULL, grace_ms INTEGER NOT NULL, current_since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chain_entries (hash BLOB NOT NULL PRIMARY KEY, chain_id INTEGER NOT NULL REFERENCES chains(id),
  generation INTEGER NOT NULL, standing TEXT NOT NULL, until_ms INTEGER);
CREATE TABLE IF NOT EXISTS networks (user_id INTEGER NOT NULL REFERENCES users(id), network TEXT NOT NULL,
  stream TEXT NOT NULL, session TEXT NOT NULL, settings TEXT NOT NULL, latest INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, network));
CREATE TABLE IF NOT EXISTS rows (user_id INTEGER NOT NULL, network TEXT NOT NULL, seq INTEGER NOT NULL,
  time INTEGER NOT NULL, buffer TEXT NOT NULL, msgid TEXT, line TEXT NOT NULL,
  PRIMARY KEY (user_id, network, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rows_by_buffer ON rows (user_id, network, buffer, seq);
-- The first msgid index held every row, most with no msgid: each batch paid
-- for it. Replaced by one of the rows that have one (its only lookups).
DROP INDEX IF EXISTS rows_by_msgid;
CREATE INDEX IF NOT EXISTS rows_by_present_msgid ON rows (user_id, network, msgid) WHERE msgid IS NOT NULL;
CREATE TABLE IF NOT EXISTS retired_streams (user_id INTEGER NOT NULL, stream TEXT NOT NULL,
  PRIMARY KEY (user_id, stream)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sent_ids (chain_id INTEGER NOT NULL REFERENCES chains(id), n INTEGER NOT NULL,
  id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (chain_id, n)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sent_ids_by_time ON sent_ids (chain_id, at);
CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, network TEXT NOT NULL,
  chain_id INTEGER NOT NULL, request_id TEXT NOT NULL, line TEXT NOT NULL, taken_epoch INTEGER, outcome TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS outbox_waiting ON outbox (chain_id, request_id) WHERE outcome IS NULL;
";

/// Columns newer than the first schema, added to a file that lacks them
/// (`ALTER TABLE … ADD COLUMN` has no `IF NOT EXISTS` in SQLite).
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    (
        "networks",
        "owner",
        "ALTER TABLE networks ADD COLUMN owner TEXT",
    ),
    (
        "networks",
        "owner_node",
        "ALTER TABLE networks ADD COLUMN owner_node TEXT",
    ),
    (
        "networks",
        "epoch",
        "ALTER TABLE networks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0",
    ),
    (
        "networks",
        "lease_until",
        "ALTER TABLE networks ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0",
    ),
    (
        "chains",
        "version",
        "ALTER TABLE chains ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
    ),
];

fn add_missing_columns(db: &Connection) -> Result<(), StoreError> {
    // One writer at a time, so two commands opening an old file at once
    // do not both add a column.
    db.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
    let added = ADDED_COLUMNS.iter().try_for_each(|(table, column, alter)| {
        let present: bool = db.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
            params![table, column],
            |r| r.get(0),
        )?;
        if !present {
            db.execute_batch(alter)?;
        }
        Ok(())
    });
    let end = if added.is_ok() { "COMMIT" } else { "ROLLBACK" };
    db.execute_batch(end).map_err(backend)?;
    added.map_err(backend)
}

/// Inserts `chain` as a new, unrevoked chain of `user`.
fn insert_chain(
    tx: &rusqlite::Transaction<'_>,
    user: i64,
    chain: &TokenChain,
    now_ms: u64,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO chains (user_id, revoked, grace_ms, current_since) VALUES (?1, 0, ?2, ?3)",
        params![user, chain.grace_ms() as i64, now_ms as i64],
    )
    .map_err(backend)?;
    let chain_id = tx.last_insert_rowid();
    for e in chain.entries() {
        let (s, until) = standing_columns(e.standing);
        tx.execute(
            "INSERT INTO chain_entries (hash, chain_id, generation, standing, until_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![&e.hash.as_bytes()[..], chain_id, e.generation as i64, s, until],
        )
        .map_err(backend)?;
    }
    Ok(())
}

/// Chain `chain`'s tokens, read from its entries.
fn load_chain(
    db: &Connection,
    chain: i64,
    revoked: bool,
    grace_ms: i64,
) -> Result<TokenChain, StoreError> {
    let mut st = db
        .prepare_cached("SELECT hash, generation, standing, until_ms FROM chain_entries WHERE chain_id = ?1 ORDER BY generation")
        .map_err(backend)?;
    let raw = st
        .query_map(params![chain], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(backend)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(backend)?;
    let bad = || StoreError::Backend(format!("chain {chain} is inconsistent"));
    let mut entries = Vec::with_capacity(raw.len());
    for (h, generation, s, until) in raw {
        let bytes: [u8; 32] = h.try_into().map_err(|_| bad())?;
        entries.push(ChainEntry {
            generation: generation as u64,
            hash: TokenHash::from_bytes(bytes),
            standing: standing_from(&s, until).ok_or_else(bad)?,
        });
    }
    TokenChain::from_entries(entries, revoked, grace_ms as u64).map_err(|_| bad())
}

/// The SQLite store.
pub struct SqliteStore {
    db: Connection,
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl SqliteStore {
    /// Opens (creating when absent) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = Connection::open(path).map_err(backend)?;
        // The file holds network passwords (SASL, PASS): owner only. SQLite
        // gives its -wal and -shm files the same mode.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        }
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(backend)?;
        db.execute_batch(SCHEMA).map_err(backend)?;
        add_missing_columns(&db)?;
        Ok(Self { db })
    }

    fn record(
        network: String,
        stream: String,
        session: String,
        settings: String,
    ) -> Result<NetworkRecord, StoreError> {
        let settings = serde_json::from_str(&settings)
            .map_err(|e| StoreError::Backend(format!("network {network}: settings: {e}")))?;
        Ok(NetworkRecord {
            network: NetworkId(network),
            stream: StreamId(stream),
            session,
            settings,
        })
    }

    fn query_networks(
        &self,
        sql: &str,
        p: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<(UserId, NetworkRecord)>, StoreError> {
        let mut st = self.db.prepare(sql).map_err(backend)?;
        let raw = st
            .query_map(p, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)?;
        raw.into_iter()
            .map(|(u, n, s, id, set)| Ok((UserId(u), Self::record(n, s, id, set)?)))
            .collect()
    }

    fn read_rows(
        &self,
        sql: &str,
        p: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<StoredRow>, StoreError> {
        let mut st = self.db.prepare_cached(sql).map_err(backend)?;
        let rows = st
            .query_map(p, |r| {
                Ok(StoredRow {
                    seq: r.get::<_, i64>(0)? as u64,
                    time: r.get::<_, i64>(1)? as u64,
                    line: r.get(2)?,
                })
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend);
        rows
    }
}

impl CloudStore for SqliteStore {
    fn add_user(
        &mut self,
        name: &str,
        chain: &TokenChain,
        now_ms: u64,
    ) -> Result<UserId, StoreError> {
        if self.user_by_name(name)?.is_some() {
            return Err(StoreError::Exists(format!("user {name}")));
        }
        let tx = self.db.transaction().map_err(backend)?;
        tx.execute("INSERT INTO users (name) VALUES (?1)", params![name])
            .map_err(backend)?;
        let user = tx.last_insert_rowid();
        insert_chain(&tx, user, chain, now_ms)?;
        tx.commit().map_err(backend)?;
        Ok(UserId(user))
    }

    fn users(&self) -> Result<Vec<UserSummary>, StoreError> {
        let mut q = self
            .db
            .prepare(
                "SELECT name, (SELECT count(*) FROM networks n WHERE n.user_id = u.id),
                   EXISTS (SELECT 1 FROM chains c WHERE c.user_id = u.id AND c.revoked = 0)
                 FROM users u ORDER BY name",
            )
            .map_err(backend)?;
        let rows = q
            .query_map([], |r| {
                Ok(UserSummary {
                    name: r.get(0)?,
                    networks: r.get::<_, i64>(1)?.max(0) as u64,
                    has_token: r.get(2)?,
                })
            })
            .map_err(backend)?;
        rows.collect::<Result<_, _>>().map_err(backend)
    }

    fn replace_chain(
        &mut self,
        user: UserId,
        chain: &TokenChain,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        tx.execute(
            "UPDATE chains SET revoked = 1 WHERE user_id = ?1",
            params![user.0],
        )
        .map_err(backend)?;
        insert_chain(&tx, user.0, chain, now_ms)?;
        tx.commit().map_err(backend)
    }

    fn remove_user(&mut self, user: UserId) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        for statement in [
            "DELETE FROM rows WHERE user_id = ?1",
            "DELETE FROM outbox WHERE user_id = ?1",
            "DELETE FROM networks WHERE user_id = ?1",
            "DELETE FROM retired_streams WHERE user_id = ?1",
            "DELETE FROM sent_ids WHERE chain_id IN (SELECT id FROM chains WHERE user_id = ?1)",
            "DELETE FROM chain_entries WHERE chain_id IN (SELECT id FROM chains WHERE user_id = ?1)",
            "DELETE FROM chains WHERE user_id = ?1",
        ] {
            tx.execute(statement, params![user.0]).map_err(backend)?;
        }
        if tx
            .execute("DELETE FROM users WHERE id = ?1", params![user.0])
            .map_err(backend)?
            == 0
        {
            return Err(StoreError::Unknown(format!("user {}", user.0)));
        }
        tx.commit().map_err(backend)
    }

    fn backup(&self, to: &Path) -> Result<(), StoreError> {
        if to.exists() {
            return Err(StoreError::Exists(to.display().to_string()));
        }
        let target = to
            .to_str()
            .ok_or_else(|| StoreError::Backend(format!("{}: not UTF-8", to.display())))?;
        // One read transaction: the copy is the store as of one moment,
        // WAL included, while the service goes on writing.
        self.db
            .execute("VACUUM INTO ?1", params![target])
            .map_err(backend)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| StoreError::Backend(format!("{}: {e}", to.display())))
    }

    fn user_by_name(&self, name: &str) -> Result<Option<UserId>, StoreError> {
        self.db
            .query_row("SELECT id FROM users WHERE name = ?1", params![name], |r| {
                r.get(0)
            })
            .optional()
            .map(|o| o.map(UserId))
            .map_err(backend)
    }

    fn chain_by_hash(&self, hash: &TokenHash) -> Result<Option<FoundChain>, StoreError> {
        let head = self
            .db
            .query_row(
                "SELECT c.id, c.user_id, u.name, c.revoked, c.grace_ms, c.current_since, c.version
                 FROM chain_entries e JOIN chains c ON c.id = e.chain_id JOIN users u ON u.id = c.user_id
                 WHERE e.hash = ?1",
                params![&hash.as_bytes()[..]],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, bool>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                },
            )
            .optional()
            .map_err(backend)?;
        let Some((chain, user, user_name, revoked, grace, since, version)) = head else {
            return Ok(None);
        };
        let tokens = load_chain(&self.db, chain, revoked, grace)?;
        Ok(Some(FoundChain {
            chain: ChainId(chain),
            user: UserId(user),
            user_name,
            tokens,
            current_since_ms: since as u64,
            version: version as u64,
        }))
    }

    fn save_chain(
        &mut self,
        chain: ChainId,
        tokens: &TokenChain,
        current_since_ms: u64,
        version: u64,
    ) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        let saved = tx
            .execute(
                "UPDATE chains SET revoked = (revoked OR ?2), current_since = ?3, version = version + 1
                 WHERE id = ?1 AND version = ?4",
                params![
                    chain.0,
                    tokens.is_revoked(),
                    current_since_ms as i64,
                    version as i64
                ],
            )
            .map_err(backend)?;
        if saved == 0 {
            return Err(StoreError::Conflict(format!("chain {}", chain.0)));
        }
        tx.execute(
            "DELETE FROM chain_entries WHERE chain_id = ?1",
            params![chain.0],
        )
        .map_err(backend)?;
        for e in tokens.entries() {
            let (s, until) = standing_columns(e.standing);
            tx.execute(
                "INSERT INTO chain_entries (hash, chain_id, generation, standing, until_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![&e.hash.as_bytes()[..], chain.0, e.generation as i64, s, until],
            )
            .map_err(backend)?;
        }
        tx.commit().map_err(backend)
    }

    fn add_network(
        &mut self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<NetworkRecord, StoreError> {
        let exists: Option<i64> = self
            .db
            .query_row(
                "SELECT 1 FROM networks WHERE user_id = ?1 AND network = ?2",
                params![user.0, network.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        if exists.is_some() {
            return Err(StoreError::Exists(format!("network {}", network.0)));
        }
        // A fresh numbering gets a fresh stream id, so a resume point from
        // an older store of the same name can never match it; in this store
        // a removed network's id is retired, so a network added again under
        // its name never draws it.
        let stream = loop {
            let stream = fresh_stream_id(network);
            let taken: Option<i64> = self
                .db
                .query_row(
                    "SELECT 1 FROM retired_streams WHERE user_id = ?1 AND stream = ?2
                     UNION ALL SELECT 1 FROM networks WHERE user_id = ?1 AND stream = ?2",
                    params![user.0, stream],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            if taken.is_none() {
                break stream;
            }
        };
        let session = crate::tokens::new_uuid();
        let json =
            serde_json::to_string(settings).map_err(|e| StoreError::Backend(e.to_string()))?;
        self.db
            .execute(
                "INSERT INTO networks (user_id, network, stream, session, settings) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![user.0, network.0, stream, session, json],
            )
            .map_err(backend)?;
        Ok(NetworkRecord {
            network: network.clone(),
            stream: StreamId(stream),
            session,
            settings: settings.clone(),
        })
    }

    fn remove_network(&mut self, user: UserId, network: &NetworkId) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        let stream: Option<String> = tx
            .query_row(
                "DELETE FROM networks WHERE user_id = ?1 AND network = ?2 RETURNING stream",
                params![user.0, network.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        let Some(stream) = stream else {
            // Dropping the transaction rolls it back: nothing changed.
            return Err(StoreError::Unknown(format!("network {}", network.0)));
        };
        for statement in [
            "DELETE FROM rows WHERE user_id = ?1 AND network = ?2",
            "DELETE FROM outbox WHERE user_id = ?1 AND network = ?2",
        ] {
            tx.execute(statement, params![user.0, network.0])
                .map_err(backend)?;
        }
        tx.execute(
            "INSERT OR IGNORE INTO retired_streams (user_id, stream) VALUES (?1, ?2)",
            params![user.0, stream],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)
    }

    fn save_settings(
        &mut self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<(), StoreError> {
        let json =
            serde_json::to_string(settings).map_err(|e| StoreError::Backend(e.to_string()))?;
        let n = self
            .db
            .execute(
                "UPDATE networks SET settings = ?3 WHERE user_id = ?1 AND network = ?2",
                params![user.0, network.0, json],
            )
            .map_err(backend)?;
        if n == 0 {
            return Err(StoreError::Unknown(format!("network {}", network.0)));
        }
        Ok(())
    }

    fn networks(&self, user: UserId) -> Result<Vec<NetworkRecord>, StoreError> {
        Ok(self
            .query_networks(
                "SELECT user_id, network, stream, session, settings FROM networks WHERE user_id = ?1 ORDER BY network",
                &[&user.0],
            )?
            .into_iter()
            .map(|(_, n)| n)
            .collect())
    }

    fn all_networks(&self) -> Result<Vec<(UserId, NetworkRecord)>, StoreError> {
        self.query_networks(
            "SELECT user_id, network, stream, session, settings FROM networks ORDER BY user_id, network",
            &[],
        )
    }

    fn append_rows(&mut self, rows: &[Append<'_>], keep: u64) -> Result<Vec<Appended>, StoreError> {
        let keep = keep.max(1) as i64;
        let tx = self.db.transaction().map_err(backend)?;
        let mut seqs = Vec::with_capacity(rows.len());
        // The newest row appended per stream, to evict once per batch.
        let mut newest: HashMap<(i64, &str), i64> = HashMap::new();
        {
            // Numbered only while the network's epoch is the append's.
            let mut next = tx
                .prepare_cached(
                    "UPDATE networks SET latest = latest + 1
                     WHERE user_id = ?1 AND network = ?2 AND (?3 IS NULL OR epoch = ?3) RETURNING latest",
                )
                .map_err(backend)?;
            let mut exists = tx
                .prepare_cached("SELECT 1 FROM networks WHERE user_id = ?1 AND network = ?2")
                .map_err(backend)?;
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO rows (user_id, network, seq, time, buffer, msgid, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(backend)?;
            for Append {
                user,
                network,
                row,
                epoch,
            } in rows
            {
                let epoch = epoch.map(|e| e as i64);
                let seq: Option<i64> = next
                    .query_row(params![user.0, network.0, epoch], |r| r.get(0))
                    .optional()
                    .map_err(backend)?;
                let Some(seq) = seq else {
                    let found = exists.exists(params![user.0, network.0]).map_err(backend)?;
                    seqs.push(if found {
                        Appended::Fenced
                    } else {
                        Appended::Gone
                    });
                    continue;
                };
                insert
                    .execute(params![
                        user.0,
                        network.0,
                        seq,
                        row.time as i64,
                        row.buffer,
                        row.msgid,
                        row.line
                    ])
                    .map_err(backend)?;
                newest.insert((user.0, network.0.as_str()), seq);
                seqs.push(Appended::Stored(seq as u64));
            }
        }
        for ((user, network), seq) in newest {
            if seq > keep {
                tx.execute(
                    "DELETE FROM rows WHERE user_id = ?1 AND network = ?2 AND seq <= ?3",
                    params![user, network, seq - keep],
                )
                .map_err(backend)?;
            }
        }
        tx.commit().map_err(backend)?;
        Ok(seqs)
    }

    fn claim_networks(
        &mut self,
        node: &Node,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<Held>, StoreError> {
        let until = wall_clock::now().unsigned().saturating_add(lease_ms) as i64;
        let mut st = self
            .db
            .prepare_cached(
                "UPDATE networks SET owner = ?1, owner_node = ?2, epoch = epoch + 1, lease_until = ?3
                 WHERE (user_id, network) IN
                   (SELECT user_id, network FROM networks WHERE owner IS NOT ?1 ORDER BY user_id, network LIMIT ?4)
                 RETURNING user_id, network, stream, session, settings, epoch",
            )
            .map_err(backend)?;
        let raw = st
            .query_map(params![node.instance, node.name, until, max as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)?;
        raw.into_iter()
            .map(|(user, network, stream, session, settings, epoch)| {
                Ok(Held {
                    user: UserId(user),
                    record: Self::record(network, stream, session, settings)?,
                    epoch: epoch as u64,
                })
            })
            .collect()
    }

    fn renew_leases(
        &mut self,
        node: &Node,
        lease_ms: u64,
    ) -> Result<Vec<(UserId, NetworkId, u64)>, StoreError> {
        let until = wall_clock::now().unsigned().saturating_add(lease_ms) as i64;
        let mut st = self
            .db
            .prepare_cached(
                "UPDATE networks SET lease_until = ?2 WHERE owner = ?1 RETURNING user_id, network, epoch",
            )
            .map_err(backend)?;
        let held = st
            .query_map(params![node.instance, until], |r| {
                Ok((
                    UserId(r.get(0)?),
                    NetworkId(r.get(1)?),
                    r.get::<_, i64>(2)? as u64,
                ))
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend);
        held
    }

    fn release_leases(&mut self, node: &Node) -> Result<(), StoreError> {
        self.db
            .execute(
                "UPDATE networks SET owner = NULL, owner_node = NULL, lease_until = 0 WHERE owner = ?1",
                params![node.instance],
            )
            .map(drop)
            .map_err(backend)
    }

    fn release_lease(
        &mut self,
        node: &Node,
        user: UserId,
        network: &NetworkId,
    ) -> Result<(), StoreError> {
        self.db
            .execute(
                "UPDATE networks SET owner = NULL, owner_node = NULL, lease_until = 0
                 WHERE owner = ?1 AND user_id = ?2 AND network = ?3",
                params![node.instance, user.0, network.0],
            )
            .map(drop)
            .map_err(backend)
    }

    fn lease_census(&self, _node: &Node) -> Result<(u64, u64), StoreError> {
        let networks: i64 = self
            .db
            .query_row("SELECT count(*) FROM networks", [], |r| r.get(0))
            .map_err(backend)?;
        Ok((0, networks as u64))
    }

    fn shared(&self) -> bool {
        false
    }

    fn queue_send(
        &mut self,
        user: UserId,
        network: &NetworkId,
        chain: ChainId,
        request: &RequestId,
        line: &str,
    ) -> Result<i64, StoreError> {
        self.db
            .execute(
                "INSERT INTO outbox (user_id, network, chain_id, request_id, line) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (chain_id, request_id) WHERE outcome IS NULL DO NOTHING",
                params![user.0, network.0, chain.0, request.0, line],
            )
            .map_err(backend)?;
        self.db
            .query_row(
                "SELECT id FROM outbox WHERE chain_id = ?1 AND request_id = ?2 AND outcome IS NULL",
                params![chain.0, request.0],
                |r| r.get(0),
            )
            .map_err(backend)
    }

    fn take_sends(&mut self, node: &Node) -> Result<Vec<Outgoing>, StoreError> {
        let mut st = self
            .db
            .prepare_cached(
                "UPDATE outbox SET taken_epoch = (SELECT n.epoch FROM networks n
                   WHERE n.user_id = outbox.user_id AND n.network = outbox.network)
                 WHERE outcome IS NULL AND EXISTS (SELECT 1 FROM networks n
                   WHERE n.user_id = outbox.user_id AND n.network = outbox.network AND n.owner = ?1
                     AND (outbox.taken_epoch IS NULL OR outbox.taken_epoch < n.epoch))
                 RETURNING id, user_id, network, chain_id, request_id, line",
            )
            .map_err(backend)?;
        let taken = st
            .query_map(params![node.instance], |r| {
                Ok(Outgoing {
                    id: r.get(0)?,
                    user: UserId(r.get(1)?),
                    network: NetworkId(r.get(2)?),
                    chain: ChainId(r.get(3)?),
                    request: RequestId(r.get(4)?),
                    line: r.get(5)?,
                })
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend);
        taken
    }

    fn finish_send(&mut self, id: i64, outcome: SendOutcome) -> Result<(), StoreError> {
        self.db
            .execute(
                "UPDATE outbox SET outcome = ?2 WHERE id = ?1",
                params![id, outcome.name()],
            )
            .map(drop)
            .map_err(backend)
    }

    fn send_outcome(&mut self, id: i64, give_up: bool) -> Result<Option<SendOutcome>, StoreError> {
        if give_up {
            self.db
                .execute(
                    "UPDATE outbox SET outcome = 'not_sent' WHERE id = ?1 AND outcome IS NULL AND taken_epoch IS NULL",
                    params![id],
                )
                .map_err(backend)?;
        }
        let outcome: Option<Option<String>> = self
            .db
            .query_row(
                "SELECT outcome FROM outbox WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        let outcome = outcome.flatten().and_then(|o| SendOutcome::from_name(&o));
        if outcome.is_some() {
            self.db
                .execute("DELETE FROM outbox WHERE id = ?1", params![id])
                .map_err(backend)?;
        }
        Ok(outcome)
    }

    fn lease_of(&self, user: UserId, network: &NetworkId) -> Result<LeaseView, StoreError> {
        let now = wall_clock::now().unsigned() as i64;
        self.db
            .query_row(
                "SELECT CASE WHEN lease_until > ?3 THEN owner_node END, epoch FROM networks WHERE user_id = ?1 AND network = ?2",
                params![user.0, network.0, now],
                |r| {
                    Ok(LeaseView {
                        node: r.get(0)?,
                        epoch: r.get::<_, i64>(1)? as u64,
                    })
                },
            )
            .optional()
            .map_err(backend)?
            .ok_or_else(|| StoreError::Unknown(format!("network {}", network.0)))
    }

    fn newest_time(&self, user: UserId, network: &NetworkId) -> Result<Option<u64>, StoreError> {
        self.db
            .query_row(
                "SELECT time FROM rows WHERE user_id = ?1 AND network = ?2 ORDER BY seq DESC LIMIT 1",
                params![user.0, network.0],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|t| t.map(|t| t.max(0) as u64))
            .map_err(backend)
    }

    fn extent(&self, user: UserId, network: &NetworkId) -> Result<StoreExtent, StoreError> {
        let (latest, earliest): (i64, Option<i64>) = self
            .db
            .query_row(
                "SELECT n.latest, (SELECT MIN(seq) FROM rows r WHERE r.user_id = n.user_id AND r.network = n.network)
                 FROM networks n WHERE n.user_id = ?1 AND n.network = ?2",
                params![user.0, network.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(backend)?
            .ok_or_else(|| StoreError::Unknown(format!("network {}", network.0)))?;
        let latest = latest as u64;
        let earliest = earliest.map_or(latest + 1, |e| e as u64);
        StoreExtent::new(earliest, latest)
            .ok_or_else(|| StoreError::Backend(format!("network {}: bad extent", network.0)))
    }

    fn rows(
        &self,
        user: UserId,
        network: &NetworkId,
        range: RangeInclusive<u64>,
    ) -> Result<Vec<StoredRow>, StoreError> {
        self.read_rows(
            "SELECT seq, time, line FROM rows WHERE user_id = ?1 AND network = ?2 AND seq BETWEEN ?3 AND ?4 ORDER BY seq",
            &[&user.0, &network.0, &(*range.start() as i64), &(*range.end() as i64)],
        )
    }

    fn backlog(
        &self,
        user: UserId,
        network: &NetworkId,
        buffer: &str,
        end: BacklogEnd,
        limit: u32,
    ) -> Result<Vec<StoredRow>, StoreError> {
        let limit = i64::from(limit);
        // SQLite's integers are signed: a bound past i64::MAX (the protocol
        // allows any u64) is the same as no bound, not a negative one.
        let bound = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        match end {
            BacklogEnd::Newest => self.read_rows(
                "SELECT seq, time, line FROM rows WHERE user_id = ?1 AND network = ?2 AND buffer = ?3 ORDER BY seq DESC LIMIT ?4",
                &[&user.0, &network.0, &buffer, &limit],
            ),
            BacklogEnd::Seq(s) => self.read_rows(
                "SELECT seq, time, line FROM rows WHERE user_id = ?1 AND network = ?2 AND buffer = ?3 AND seq < ?5 ORDER BY seq DESC LIMIT ?4",
                &[&user.0, &network.0, &buffer, &limit, &bound(s)],
            ),
            BacklogEnd::Time(t) => self.read_rows(
                "SELECT seq, time, line FROM rows WHERE user_id = ?1 AND network = ?2 AND buffer = ?3 AND time < ?5 ORDER BY seq DESC LIMIT ?4",
                &[&user.0, &network.0, &buffer, &limit, &bound(t)],
            ),
        }
    }

    fn seq_of_msgid(
        &self,
        user: UserId,
        network: &NetworkId,
        msgid: &str,
    ) -> Result<Option<u64>, StoreError> {
        self.db
            .query_row(
                "SELECT seq FROM rows WHERE user_id = ?1 AND network = ?2 AND msgid = ?3 ORDER BY seq LIMIT 1",
                params![user.0, network.0, msgid],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|o| o.map(|s| s as u64))
            .map_err(backend)
    }

    fn evict_before(
        &mut self,
        user: UserId,
        network: &NetworkId,
        before: u64,
    ) -> Result<(), StoreError> {
        self.db
            .execute(
                "DELETE FROM rows WHERE user_id = ?1 AND network = ?2 AND seq < ?3",
                params![user.0, network.0, before as i64],
            )
            .map(|_| ())
            .map_err(backend)
    }

    fn record_sent_id(
        &mut self,
        chain: ChainId,
        id: &RequestId,
        at_ms: u64,
        alive_after_ms: u64,
        keep: usize,
    ) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        tx.execute(
            "INSERT INTO sent_ids (chain_id, n, id, at)
             SELECT ?1, COALESCE(MAX(n), 0) + 1, ?2, ?3 FROM sent_ids WHERE chain_id = ?1",
            params![chain.0, id.0, at_ms as i64],
        )
        .map_err(backend)?;
        tx.execute(
            "DELETE FROM sent_ids WHERE chain_id = ?1 AND at <= ?2",
            params![chain.0, alive_after_ms as i64],
        )
        .map_err(backend)?;
        tx.execute(
            "DELETE FROM sent_ids WHERE chain_id = ?1 AND n <=
             (SELECT n FROM sent_ids WHERE chain_id = ?1 ORDER BY n DESC LIMIT 1 OFFSET ?2)",
            params![chain.0, keep.max(1) as i64],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)
    }

    fn sent_ids(
        &self,
        chain: ChainId,
        alive_after_ms: u64,
        limit: usize,
    ) -> Result<Vec<(u64, RequestId)>, StoreError> {
        let mut st = self
            .db
            .prepare_cached(
                "SELECT at, id FROM sent_ids WHERE chain_id = ?1 AND at > ?2 ORDER BY n DESC LIMIT ?3",
            )
            .map_err(backend)?;
        let mut ids = st
            .query_map(params![chain.0, alive_after_ms as i64, limit as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, RequestId(r.get(1)?)))
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)?;
        ids.reverse();
        Ok(ids)
    }

    fn export(&self, sink: &mut ItemSink<'_>) -> Result<(), StoreError> {
        self.export_items(sink)
    }

    fn import(
        &mut self,
        export: &mut dyn FnMut(&mut ItemSink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.import_items(export)
    }
}

mod export;
#[cfg(test)]
mod tests;
