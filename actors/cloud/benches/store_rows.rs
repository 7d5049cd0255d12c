//! How fast the store takes received lines, and what SQLite writes to disk
//! for each: the writer's batches (one transaction per batch, as
//! `Hub::write_rows` stores them) beside one transaction per row (as it
//! stored them before); and three nodes writing their own networks' rows
//! to one PostgreSQL at once (a cluster the bench starts, with PostgreSQL's
//! durable defaults), beside one SQLite node, in one run on one machine.
//!
//! Rows: IRC lines of 120 bytes to 50 networks of one user, 200,000 in all
//! (env `STORE_ROWS`), in batches of `WRITE_BATCH`. Bytes written are the
//! process's `write_bytes` from `/proc/self/io` (what reached the block
//! layer, WAL and checkpoints included), divided by the rows stored.
//!
//! Run: `cargo bench -p rete-cloud --bench store_rows` (as root it runs
//! PostgreSQL as `nobody`, as the tests do).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_cloud::hub::WRITE_BATCH;
use rete_cloud::postgres::PostgresStore;
use rete_cloud::sqlite::SqliteStore;
use rete_cloud::store::{Append, CloudStore, NetworkSettings, NewRow};
use rete_cloud::tokens::new_token;
use rete_cloud_protocol::frame::NetworkId;
use rete_cloud_protocol::token_chain::TokenChain;
use rete_test_support::{Postgres, PostgresConfig};
use std::time::Instant;

/// Service nodes writing to one PostgreSQL at once.
const NODES: usize = 3;

const NETWORKS: usize = 50;

fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn settings() -> NetworkSettings {
    NetworkSettings {
        name: "n".into(),
        host: "127.0.0.1".into(),
        port: 6667,
        tls: false,
        nick: "alice".into(),
        username: "alice".into(),
        realname: "alice".into(),
        channels: vec!["#rete".into()],
        sasl_mechanism: None,
        sasl_username: None,
        sasl_password: None,
        server_password: None,
    }
}

/// Stores `rows` rows in transactions of `per_tx`; returns (rows/s, bytes/row).
fn run(rows: usize, per_tx: usize) -> (f64, f64) {
    let dir =
        tempfile::tempdir_in(std::env::var("STORE_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let mut store = SqliteStore::open(&dir.path().join("cloud.db")).unwrap();
    let user = store
        .add_user("alice", &TokenChain::new(&new_token(), 300_000), 0)
        .unwrap();
    let networks: Vec<NetworkId> = (0..NETWORKS).map(|i| NetworkId(format!("n{i}"))).collect();
    for n in &networks {
        store.add_network(user, n, &settings()).unwrap();
    }
    let lines: Vec<String> = (0..rows)
        .map(|i| {
            format!(
                ":bob!bob@127.0.0.1 PRIVMSG #rete :line {i:08} {}",
                "x".repeat(70)
            )
        })
        .collect();
    let before = written_bytes();
    let start = Instant::now();
    for (chunk_no, chunk) in lines.chunks(per_tx).enumerate() {
        let batch: Vec<Append<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(i, line)| Append {
                user,
                network: &networks[(chunk_no * per_tx + i) % NETWORKS],
                row: NewRow {
                    time: 1,
                    buffer: "#rete",
                    msgid: None,
                    line,
                },
                epoch: None,
            })
            .collect();
        store.append_rows(&batch, 1_000_000).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    drop(store);
    let bytes = written_bytes() - before;
    (rows as f64 / secs, bytes as f64 / rows as f64)
}

/// `rows` rows written by [`NODES`] nodes at once, each its own networks'
/// (one in [`NODES`]), each in batches of `WRITE_BATCH` on its own
/// connection, as each node's writer stores them; returns rows/s overall.
fn run_nodes(url: &str, rows: usize) -> f64 {
    let mut admin = PostgresStore::open(url).unwrap();
    let user = admin
        .add_user("alice", &TokenChain::new(&new_token(), 300_000), 0)
        .unwrap();
    let networks: Vec<NetworkId> = (0..NETWORKS).map(|i| NetworkId(format!("n{i}"))).collect();
    for n in &networks {
        admin.add_network(user, n, &settings()).unwrap();
    }
    let barrier = std::sync::Barrier::new(NODES + 1);
    let per_node = rows / NODES;
    let took = std::thread::scope(|scope| {
        for node in 0..NODES {
            let (barrier, networks) = (&barrier, &networks);
            scope.spawn(move || {
                let mut store = PostgresStore::open(url).unwrap();
                let mine: Vec<&NetworkId> = networks.iter().skip(node).step_by(NODES).collect();
                let lines: Vec<String> = (0..per_node)
                    .map(|i| {
                        format!(
                            ":bob!bob@127.0.0.1 PRIVMSG #rete :line {i:08} {}",
                            "x".repeat(70)
                        )
                    })
                    .collect();
                barrier.wait();
                for (chunk_no, chunk) in lines.chunks(WRITE_BATCH).enumerate() {
                    let batch: Vec<Append<'_>> = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, line)| Append {
                            user,
                            network: mine[(chunk_no * WRITE_BATCH + i) % mine.len()],
                            row: NewRow {
                                time: 1,
                                buffer: "#rete",
                                msgid: None,
                                line,
                            },
                            epoch: None,
                        })
                        .collect();
                    store.append_rows(&batch, 1_000_000).unwrap();
                }
            });
        }
        barrier.wait();
        // The scope returns once every node is done.
        Instant::now()
    })
    .elapsed();
    (per_node * NODES) as f64 / took.as_secs_f64()
}

fn main() {
    let rows: usize = std::env::var("STORE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    // The old way needs far longer per row: a tenth of the rows is enough.
    let (single_rate, single_bytes) = run(rows / 10, 1);
    let (batch_rate, batch_bytes) = run(rows, WRITE_BATCH);
    println!("one transaction per row: {single_rate:>9.0} rows/s, {single_bytes:>7.0} bytes written per row ({} rows)", rows / 10);
    println!("batches of {WRITE_BATCH}:        {batch_rate:>9.0} rows/s, {batch_bytes:>7.0} bytes written per row ({rows} rows)");
    println!(
        "batches: {:.1}x the rows/s, {:.1}x fewer bytes per row",
        batch_rate / single_rate,
        single_bytes / batch_bytes
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut pg = runtime
        .block_on(Postgres::start(PostgresConfig::new().durable()))
        .unwrap();
    let url = pg.create_database().unwrap();
    let nodes_rate = run_nodes(&url, rows);
    println!(
        "{NODES} nodes on one PostgreSQL: {nodes_rate:>9.0} rows/s in all ({rows} rows); {:.2}x one SQLite node",
        nodes_rate / batch_rate
    );
}
