//! The SQLite store's whole contents, out ([`CloudStore::export`]) and in
//! ([`CloudStore::import`]), for `migrate` and backups across backends.
//!
//! [`CloudStore::export`]: crate::store::CloudStore::export
//! [`CloudStore::import`]: crate::store::CloudStore::import

use super::{backend, load_chain, SqliteStore};
use crate::store::{
    standing_columns, ChainId, ItemSink, NetworkRecord, StoreError, StoreItem, StoredRow, UserId,
};
use rete_cloud_protocol::frame::{NetworkId, RequestId, StreamId};

impl SqliteStore {
    pub(super) fn export_items(&self, sink: &mut ItemSink<'_>) -> Result<(), StoreError> {
        // One read transaction: every item as of one moment, while the
        // service goes on writing (WAL).
        let tx = self.db.unchecked_transaction().map_err(backend)?;
        let mut users = tx
            .prepare("SELECT id, name FROM users ORDER BY id")
            .map_err(backend)?;
        let mut rows = users.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            sink(StoreItem::User {
                id: UserId(r.get(0).map_err(backend)?),
                name: r.get(1).map_err(backend)?,
            })?;
        }
        let mut chains = tx
            .prepare("SELECT id, user_id, revoked, grace_ms, current_since FROM chains ORDER BY id")
            .map_err(backend)?;
        let mut rows = chains.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            let id: i64 = r.get(0).map_err(backend)?;
            sink(StoreItem::Chain {
                id: ChainId(id),
                user: UserId(r.get(1).map_err(backend)?),
                tokens: load_chain(
                    &tx,
                    id,
                    r.get(2).map_err(backend)?,
                    r.get(3).map_err(backend)?,
                )?,
                current_since_ms: r.get::<_, i64>(4).map_err(backend)? as u64,
            })?;
        }
        let mut sent = tx
            .prepare("SELECT chain_id, n, id, at FROM sent_ids ORDER BY chain_id, n")
            .map_err(backend)?;
        let mut rows = sent.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            sink(StoreItem::SentId {
                chain: ChainId(r.get(0).map_err(backend)?),
                n: r.get::<_, i64>(1).map_err(backend)? as u64,
                id: RequestId(r.get(2).map_err(backend)?),
                at_ms: r.get::<_, i64>(3).map_err(backend)? as u64,
            })?;
        }
        let mut networks = tx
            .prepare("SELECT user_id, network, stream, session, settings, latest, epoch FROM networks ORDER BY user_id, network")
            .map_err(backend)?;
        let mut rows = networks.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            let network: String = r.get(1).map_err(backend)?;
            let settings: String = r.get(4).map_err(backend)?;
            let settings = serde_json::from_str(&settings)
                .map_err(|e| StoreError::Backend(format!("network {network}: settings: {e}")))?;
            sink(StoreItem::Network {
                user: UserId(r.get(0).map_err(backend)?),
                record: NetworkRecord {
                    network: NetworkId(network),
                    stream: StreamId(r.get(2).map_err(backend)?),
                    session: r.get(3).map_err(backend)?,
                    settings,
                },
                latest: r.get::<_, i64>(5).map_err(backend)? as u64,
                epoch: r.get::<_, i64>(6).map_err(backend)? as u64,
            })?;
        }
        let mut retired = tx
            .prepare("SELECT user_id, stream FROM retired_streams ORDER BY user_id, stream")
            .map_err(backend)?;
        let mut rows = retired.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            sink(StoreItem::RetiredStream {
                user: UserId(r.get(0).map_err(backend)?),
                stream: StreamId(r.get(1).map_err(backend)?),
            })?;
        }
        let mut stored = tx
            .prepare("SELECT user_id, network, seq, time, buffer, msgid, line FROM rows ORDER BY user_id, network, seq")
            .map_err(backend)?;
        let mut rows = stored.query([]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            sink(StoreItem::Row {
                user: UserId(r.get(0).map_err(backend)?),
                network: NetworkId(r.get(1).map_err(backend)?),
                buffer: r.get(4).map_err(backend)?,
                msgid: r.get(5).map_err(backend)?,
                row: StoredRow {
                    seq: r.get::<_, i64>(2).map_err(backend)? as u64,
                    time: r.get::<_, i64>(3).map_err(backend)? as u64,
                    line: r.get(6).map_err(backend)?,
                },
            })?;
        }
        Ok(())
    }

    pub(super) fn import_items(
        &mut self,
        export: &mut dyn FnMut(&mut ItemSink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let tx = self.db.transaction().map_err(backend)?;
        let users: i64 = tx
            .query_row("SELECT count(*) FROM users", [], |r| r.get(0))
            .map_err(backend)?;
        if users > 0 {
            return Err(StoreError::Exists("a user in the target store".into()));
        }
        {
            let insert = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<(), StoreError> {
                tx.prepare_cached(sql)
                    .and_then(|mut st| st.execute(p))
                    .map(drop)
                    .map_err(backend)
            };
            export(&mut |item| {
                match item {
                StoreItem::User { id, name } => {
                    insert("INSERT INTO users (id, name) VALUES (?1, ?2)", &[&id.0, &name])
                }
                StoreItem::Chain {
                    id,
                    user,
                    tokens,
                    current_since_ms,
                } => {
                    insert(
                        "INSERT INTO chains (id, user_id, revoked, grace_ms, current_since) VALUES (?1, ?2, ?3, ?4, ?5)",
                        &[&id.0, &user.0, &tokens.is_revoked(), &(tokens.grace_ms() as i64), &(current_since_ms as i64)],
                    )?;
                    for e in tokens.entries() {
                        let (s, until) = standing_columns(e.standing);
                        insert(
                            "INSERT INTO chain_entries (hash, chain_id, generation, standing, until_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                            &[&&e.hash.as_bytes()[..], &id.0, &(e.generation as i64), &s, &until],
                        )?;
                    }
                    Ok(())
                }
                StoreItem::SentId { chain, n, id, at_ms } => insert(
                    "INSERT INTO sent_ids (chain_id, n, id, at) VALUES (?1, ?2, ?3, ?4)",
                    &[&chain.0, &(n as i64), &id.0, &(at_ms as i64)],
                ),
                StoreItem::Network {
                    user,
                    record,
                    latest,
                    epoch,
                } => {
                    let json = serde_json::to_string(&record.settings)
                        .map_err(|e| StoreError::Backend(e.to_string()))?;
                    insert(
                        "INSERT INTO networks (user_id, network, stream, session, settings, latest, epoch) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        &[&user.0, &record.network.0, &record.stream.0, &record.session, &json, &(latest as i64), &(epoch as i64)],
                    )
                }
                StoreItem::RetiredStream { user, stream } => insert(
                    "INSERT INTO retired_streams (user_id, stream) VALUES (?1, ?2)",
                    &[&user.0, &stream.0],
                ),
                StoreItem::Row {
                    user,
                    network,
                    buffer,
                    msgid,
                    row,
                } => insert(
                    "INSERT INTO rows (user_id, network, seq, time, buffer, msgid, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    &[&user.0, &network.0, &(row.seq as i64), &(row.time as i64), &buffer, &msgid, &row.line],
                ),
            }
            })?;
        }
        tx.commit().map_err(backend)
    }
}
