//! The PostgreSQL store's whole contents, out ([`CloudStore::export`]) and
//! in ([`CloudStore::import`]), for `migrate` and its `backup`.
//!
//! [`CloudStore::export`]: crate::store::CloudStore::export
//! [`CloudStore::import`]: crate::store::CloudStore::import

use super::{backend, load_entries, wait, PostgresStore};
use crate::store::{
    standing_columns, ChainId, ItemSink, NetworkRecord, StoreError, StoreItem, StoredRow, UserId,
};
use rete_cloud_protocol::frame::{NetworkId, RequestId, StreamId};
use rete_cloud_protocol::token_chain::TokenChain;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Transaction};

/// Rows inserted per statement by an import.
const IMPORT_BATCH: usize = 5_000;

/// Calls `each` with every row `sql` answers, one at a time (the answer is
/// streamed, never held whole).
fn each_row(
    client: &Client,
    sql: &str,
    mut each: impl FnMut(&Row) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let stream = wait(client.query_raw(sql, std::iter::empty::<&(dyn ToSql + Sync)>()))?;
    for row in futures_executor::block_on_stream(Box::pin(stream)) {
        each(&row.map_err(backend)?)?;
    }
    Ok(())
}

/// Rows waiting to be inserted by one statement.
#[derive(Default)]
struct RowBatch {
    users: Vec<i64>,
    networks: Vec<String>,
    seqs: Vec<i64>,
    times: Vec<i64>,
    buffers: Vec<String>,
    msgids: Vec<Option<String>>,
    lines: Vec<String>,
}

impl RowBatch {
    fn flush(&mut self, tx: &Transaction<'_>) -> Result<(), StoreError> {
        if self.users.is_empty() {
            return Ok(());
        }
        wait(tx.execute(
            "INSERT INTO rows (user_id, network, seq, time, buffer, msgid, line)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[])",
            &[&self.users, &self.networks, &self.seqs, &self.times, &self.buffers, &self.msgids, &self.lines],
        ))?;
        *self = Self::default();
        Ok(())
    }
}

impl PostgresStore {
    pub(super) fn export_items(&self, sink: &mut ItemSink<'_>) -> Result<(), StoreError> {
        // One snapshot for every statement: the items as of one moment.
        let client = self.client()?;
        wait(client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))?;
        let exported = export_in_snapshot(&client, sink);
        let ended = wait(client.batch_execute("COMMIT"));
        exported.and(ended)
    }
}

fn export_in_snapshot(c: &Client, sink: &mut ItemSink<'_>) -> Result<(), StoreError> {
    each_row(c, "SELECT id, name FROM users ORDER BY id", |r| {
        sink(StoreItem::User {
            id: UserId(r.get(0)),
            name: r.get(1),
        })
    })?;
    let mut chains = Vec::new();
    each_row(
        c,
        "SELECT id, user_id, revoked, grace_ms, current_since FROM chains ORDER BY id",
        |r| {
            chains.push((
                r.get::<_, i64>(0),
                r.get::<_, i64>(1),
                r.get::<_, bool>(2),
                r.get::<_, i64>(3),
                r.get::<_, i64>(4),
            ));
            Ok(())
        },
    )?;
    for (id, user, revoked, grace_ms, since) in chains {
        let entries = load_entries(c, id)?;
        let tokens = TokenChain::from_entries(entries, revoked, grace_ms as u64)
            .map_err(|_| StoreError::Backend(format!("chain {id} is inconsistent")))?;
        sink(StoreItem::Chain {
            id: ChainId(id),
            user: UserId(user),
            tokens,
            current_since_ms: since as u64,
        })?;
    }
    each_row(
        c,
        "SELECT chain_id, n, id, at FROM sent_ids ORDER BY chain_id, n",
        |r| {
            sink(StoreItem::SentId {
                chain: ChainId(r.get(0)),
                n: r.get::<_, i64>(1) as u64,
                id: RequestId(r.get(2)),
                at_ms: r.get::<_, i64>(3) as u64,
            })
        },
    )?;
    each_row(
            c,
            "SELECT user_id, network, stream, session, settings, latest, epoch FROM networks ORDER BY user_id, network",
            |r| {
                let network: String = r.get(1);
                let settings = serde_json::from_str(r.get(4)).map_err(|e| {
                    StoreError::Backend(format!("network {network}: settings: {e}"))
                })?;
                sink(StoreItem::Network {
                    user: UserId(r.get(0)),
                    record: NetworkRecord {
                        network: NetworkId(network),
                        stream: StreamId(r.get(2)),
                        session: r.get(3),
                        settings,
                    },
                    latest: r.get::<_, i64>(5) as u64,
                    epoch: r.get::<_, i64>(6) as u64,
                })
            },
        )?;
    each_row(
        c,
        "SELECT user_id, stream FROM retired_streams ORDER BY user_id, stream",
        |r| {
            sink(StoreItem::RetiredStream {
                user: UserId(r.get(0)),
                stream: StreamId(r.get(1)),
            })
        },
    )?;
    each_row(
            c,
            "SELECT user_id, network, seq, time, buffer, msgid, line FROM rows ORDER BY user_id, network, seq",
            |r| {
                sink(StoreItem::Row {
                    user: UserId(r.get(0)),
                    network: NetworkId(r.get(1)),
                    buffer: r.get(4),
                    msgid: r.get(5),
                    row: StoredRow {
                        seq: r.get::<_, i64>(2) as u64,
                        time: r.get::<_, i64>(3) as u64,
                        line: r.get(6),
                    },
                })
            },
        )
}

impl PostgresStore {
    pub(super) fn import_items(
        &mut self,
        export: &mut dyn FnMut(&mut ItemSink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut client = self.client()?;
        let tx = wait(client.transaction())?;
        let users: i64 = wait(tx.query_one("SELECT count(*) FROM users", &[]))?.get(0);
        if users > 0 {
            return Err(StoreError::Exists("a user in the target store".into()));
        }
        let mut rows = RowBatch::default();
        let run = |sql: &str, p: &[&(dyn ToSql + Sync)]| wait(tx.execute(sql, p)).map(drop);
        export(&mut |item| match item {
            StoreItem::User { id, name } => run(
                "INSERT INTO users (id, name) VALUES ($1, $2)",
                &[&id.0, &name],
            ),
            StoreItem::Chain {
                id,
                user,
                tokens,
                current_since_ms,
            } => {
                run(
                    "INSERT INTO chains (id, user_id, revoked, grace_ms, current_since) VALUES ($1, $2, $3, $4, $5)",
                    &[&id.0, &user.0, &tokens.is_revoked(), &(tokens.grace_ms() as i64), &(current_since_ms as i64)],
                )?;
                for e in tokens.entries() {
                    let (s, until) = standing_columns(e.standing);
                    run(
                        "INSERT INTO chain_entries (hash, chain_id, generation, standing, until_ms) VALUES ($1, $2, $3, $4, $5)",
                        &[&&e.hash.as_bytes()[..], &id.0, &(e.generation as i64), &s, &until],
                    )?;
                }
                Ok(())
            }
            StoreItem::SentId {
                chain,
                n,
                id,
                at_ms,
            } => run(
                "INSERT INTO sent_ids (chain_id, n, id, at) VALUES ($1, $2, $3, $4)",
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
                run(
                    "INSERT INTO networks (user_id, network, stream, session, settings, latest, epoch) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[&user.0, &record.network.0, &record.stream.0, &record.session, &json, &(latest as i64), &(epoch as i64)],
                )
            }
            StoreItem::RetiredStream { user, stream } => run(
                "INSERT INTO retired_streams (user_id, stream) VALUES ($1, $2)",
                &[&user.0, &stream.0],
            ),
            StoreItem::Row {
                user,
                network,
                buffer,
                msgid,
                row,
            } => {
                rows.users.push(user.0);
                rows.networks.push(network.0);
                rows.seqs.push(row.seq as i64);
                rows.times.push(row.time as i64);
                rows.buffers.push(buffer);
                rows.msgids.push(msgid);
                rows.lines.push(row.line);
                if rows.users.len() >= IMPORT_BATCH {
                    rows.flush(&tx)?;
                }
                Ok(())
            }
        })?;
        rows.flush(&tx)?;
        // Ids were given explicitly: the identity columns go on after them.
        for table in ["users", "chains"] {
            wait(tx.execute(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE((SELECT max(id) FROM {table}), 0) + 1, false)"
                ),
                &[],
            ))?;
        }
        wait(tx.commit())
    }
}
