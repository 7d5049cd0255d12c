use super::*;
use crate::copy::copy_store;
use crate::sqlite::SqliteStore;
use crate::store::suite::{self, Databases, Opener};
use rete_test_support::{Postgres, PostgresConfig};

/// Databases of one test cluster.
struct Cluster(Postgres);

impl Databases for Cluster {
    fn fresh(&mut self) -> Opener {
        let url = self.0.create_database().unwrap();
        Box::new(move || Box::new(PostgresStore::open(&url).unwrap()))
    }
}

/// A connection the server ended (a restart, a failover, an admin's
/// `pg_terminate_backend`) fails the call that finds it ended, and the
/// next call connects again: before, every call failed from then on.
fn a_connection_the_server_ended_is_made_again(pg: &mut Cluster) {
    let url = pg.0.create_database().unwrap();
    let mut s = PostgresStore::open(&url).unwrap();
    let database = url.rsplit('/').next().unwrap();
    // Several rounds: the call that meets the ended connection and the
    // connection's own end race, and the next call must not lose that race.
    for round in 0..3u8 {
        let name = format!("user{round}");
        s.add_user(
            &name,
            &TokenChain::new(&rete_cloud_protocol::Token::from_random([round; 32]), 10),
            0,
        )
        .unwrap();
        // The timeout makes the server wait until the session has ended.
        let ended = pg
            .0
            .psql(
                "postgres",
                &format!(
                    "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE datname = '{database}'"
                ),
            )
            .unwrap();
        assert_eq!(ended, "1");
        // The first call meets the ended connection (or the reader already
        // noticed); the next one is served on a new connection.
        let _ = s.users();
        assert_eq!(
            s.users().unwrap().len(),
            usize::from(round) + 1,
            "round {round}"
        );
    }
}

/// A call in flight when the server ends the session gets the server's
/// error, and the very next call is served on a new connection: it must
/// not be sent down the old one while that connection's reader is still
/// winding down.
fn the_call_after_one_that_met_the_end_is_served(pg: &mut Cluster) {
    let url = pg.0.create_database().unwrap();
    let s = PostgresStore::open(&url).unwrap();
    for round in 0..20 {
        // The session ends itself, in answer to this very statement.
        let ended = s.wait(
            s.client()
                .unwrap()
                .execute("SELECT pg_terminate_backend(pg_backend_pid())", &[]),
        );
        assert!(ended.is_err(), "round {round}");
        assert_eq!(s.users().unwrap().len(), 0, "round {round}");
    }
}

fn cluster() -> Cluster {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    Cluster(
        runtime
            .block_on(Postgres::start(PostgresConfig::new()))
            .unwrap(),
    )
}

/// One cluster for the whole suite (each case makes its own databases).
#[test]
fn the_store_suite_passes_on_postgres() {
    let mut pg = cluster();
    suite::run_all(&mut pg);
    a_connection_the_server_ended_is_made_again(&mut pg);
    the_call_after_one_that_met_the_end_is_served(&mut pg);
    rows_locked_by_a_node_frozen_mid_transaction_are_free_to_claim_within_a_lease(&mut pg);

    // SQLite to PostgreSQL and back: the same items, and a PostgreSQL
    // store's backup is a SQLite file holding them too.
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = SqliteStore::open(&dir.path().join("from.db")).unwrap();
    let user = sqlite
        .add_user(
            "alice",
            &TokenChain::new(&rete_cloud_protocol::Token::from_random([1; 32]), 10),
            0,
        )
        .unwrap();
    let net = NetworkId("n".into());
    sqlite.add_network(user, &net, &suite::settings()).unwrap();
    sqlite
        .append_row(
            user,
            &net,
            crate::store::NewRow {
                time: 1,
                buffer: "#a",
                msgid: Some("x"),
                line: "PRIVMSG #a :hi",
            },
            10,
        )
        .unwrap();
    let mut postgres = pg.fresh()();
    copy_store(&sqlite, postgres.as_mut()).unwrap();
    let backup = dir.path().join("backup.db");
    postgres.backup(&backup).unwrap();
    assert!(matches!(
        postgres.backup(&backup),
        Err(StoreError::Exists(_))
    ));
    let back = SqliteStore::open(&backup).unwrap();
    let all = |s: &dyn CloudStore| {
        let mut items = Vec::new();
        s.export(&mut |i| {
            items.push(format!("{i:?}"));
            Ok(())
        })
        .unwrap();
        items
    };
    assert_eq!(all(&back), all(&sqlite));
    assert_eq!(all(postgres.as_ref()), all(&sqlite));
}

#[test]
fn a_bad_url_or_an_unreachable_server_is_a_clear_error_without_the_password() {
    let Err(StoreError::Backend(e)) = PostgresStore::open("postgresql://u:hunter2@[::1") else {
        panic!("a malformed URL must fail");
    };
    assert!(!e.contains("hunter2"), "{e}");
    let port = rete_test_support::ports::free_port().unwrap();
    let url = format!("postgresql://u:hunter2@127.0.0.1:{port}/db");
    let Err(StoreError::Backend(e)) = PostgresStore::open(&url) else {
        panic!("nothing listens there");
    };
    assert!(!e.contains("hunter2"), "{e}");
    assert!(!e.is_empty());
}

/// A node whose link froze between a renewal's UPDATE and its COMMIT leaves
/// its networks' rows locked; claims skip locked rows. The server ends such
/// a session (idle in a transaction) in 2 s, so the rows are free to claim
/// within a lease. Before, after 30 s: takeovers waited that long.
fn rows_locked_by_a_node_frozen_mid_transaction_are_free_to_claim_within_a_lease(pg: &mut Cluster) {
    use crate::store::Node;
    let url = pg.0.create_database().unwrap();
    let mut frozen = PostgresStore::open(&url).unwrap();
    let user = frozen
        .add_user(
            "alice",
            &TokenChain::new(&rete_cloud_protocol::Token::from_random([5; 32]), 10),
            0,
        )
        .unwrap();
    frozen
        .add_network(user, &NetworkId("n".into()), &suite::settings())
        .unwrap();
    let one = Node {
        name: "one".into(),
        instance: "one-run".into(),
    };
    assert_eq!(frozen.claim_networks(&one, 1, 10).unwrap().len(), 1);
    // A renewal that got as far as its UPDATE, then nothing more.
    wait(frozen.client().unwrap().batch_execute(
        "BEGIN; UPDATE networks SET lease_until = lease_until WHERE owner = 'one-run'",
    ))
    .unwrap();
    let mut other = PostgresStore::open(&url).unwrap();
    let two = Node {
        name: "two".into(),
        instance: "two-run".into(),
    };
    let start = std::time::Instant::now();
    let claimed = loop {
        let claimed = other.claim_networks(&two, 60_000, 10).unwrap();
        if !claimed.is_empty() || start.elapsed() > std::time::Duration::from_secs(10) {
            break claimed;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(claimed.len(), 1, "still locked after {:?}", start.elapsed());
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}
