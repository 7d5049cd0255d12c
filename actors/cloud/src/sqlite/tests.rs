use super::*;
use crate::store::{Append, NetworkSettings, NewRow};
use rete_cloud_protocol::token_chain::AuthOutcome;
use rete_cloud_protocol::{Secret, Token};

fn settings() -> NetworkSettings {
    NetworkSettings {
        name: "local".into(),
        host: "127.0.0.1".into(),
        port: 6667,
        tls: false,
        nick: "alice".into(),
        username: "alice".into(),
        realname: "Alice".into(),
        channels: vec!["#rete".into()],
        sasl_mechanism: None,
        sasl_username: None,
        sasl_password: Some(Secret::new("pw")),
        server_password: None,
    }
}

fn row(line: &str) -> NewRow<'_> {
    NewRow {
        time: 5,
        buffer: "#rete",
        msgid: None,
        line,
    }
}

#[test]
fn rows_are_numbered_consecutively_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cloud.db");
    let token = Token::from_random([7; 32]);
    let net = NetworkId("local".into());
    let (user, stream) = {
        let mut s = SqliteStore::open(&path).unwrap();
        let user = s
            .add_user("alice", &TokenChain::new(&token, 1000), 1)
            .unwrap();
        assert!(matches!(
            s.add_user("alice", &TokenChain::new(&token, 1000), 1),
            Err(StoreError::Exists(_))
        ));
        let rec = s.add_network(user, &net, &settings()).unwrap();
        assert_eq!(s.extent(user, &net).unwrap(), StoreExtent::EMPTY);
        for (i, l) in ["a", "b", "c", "d"].iter().enumerate() {
            assert_eq!(s.append_row(user, &net, row(l), 3).unwrap(), i as u64 + 1);
        }
        (user, rec.stream)
    };
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.networks(user).unwrap()[0].stream, stream);
    assert_eq!(s.networks(user).unwrap()[0].settings, settings());
    // keep = 3: row 1 was evicted, the numbering goes on.
    assert_eq!(
        s.extent(user, &net).unwrap(),
        StoreExtent::new(2, 4).unwrap()
    );
    let lines: Vec<_> = s
        .rows(user, &net, 1..=4)
        .unwrap()
        .into_iter()
        .map(|r| r.line)
        .collect();
    assert_eq!(lines, ["b", "c", "d"]);
    s.evict_before(user, &net, 5).unwrap();
    assert_eq!(
        s.extent(user, &net).unwrap(),
        StoreExtent::new(5, 4).unwrap()
    );
    assert_eq!(s.append_row(user, &net, row("e"), 3).unwrap(), 5);
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

#[test]
fn another_users_network_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let a = s
        .add_user("a", &TokenChain::new(&Token::from_random([1; 32]), 1), 1)
        .unwrap();
    let b = s
        .add_user("b", &TokenChain::new(&Token::from_random([2; 32]), 1), 1)
        .unwrap();
    let net = NetworkId("n".into());
    s.add_network(a, &net, &settings()).unwrap();
    assert!(s.networks(b).unwrap().is_empty());
    assert!(matches!(s.extent(b, &net), Err(StoreError::Unknown(_))));
    assert!(s.append_row(b, &net, row("x"), 10).is_err());
    assert!(s.rows(b, &net, 1..=10).unwrap().is_empty());
}

#[test]
fn a_chain_round_trips_by_hash() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("c.db")).unwrap();
    let t0 = Token::from_random([3; 32]);
    s.add_user("a", &TokenChain::new(&t0, 1000), 1).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t0)).unwrap().unwrap();
    let t1 = Token::from_random([4; 32]);
    let g = f.tokens.begin_rotation(&t1).unwrap();
    s.save_chain(f.chain, &f.tokens, 1).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t1)).unwrap().unwrap();
    f.tokens.acknowledge(10, g).unwrap();
    s.save_chain(f.chain, &f.tokens, 10).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t0)).unwrap().unwrap();
    assert_eq!(f.current_since_ms, 10);
    assert!(matches!(
        f.tokens.authenticate(500, &t0),
        AuthOutcome::AcceptedInGrace { .. }
    ));
    assert!(matches!(
        f.tokens.authenticate(2000, &t0),
        AuthOutcome::Reused { .. }
    ));
    s.save_chain(f.chain, &f.tokens, 10).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t1)).unwrap().unwrap();
    assert_eq!(f.tokens.authenticate(2001, &t1), AuthOutcome::Revoked);
    assert!(s
        .chain_by_hash(&TokenHash::of(&Token::from_random([9; 32])))
        .unwrap()
        .is_none());
}

#[test]
fn a_removed_network_is_gone_and_its_name_starts_a_fresh_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let mut s = SqliteStore::open(&path).unwrap();
    let user = s
        .add_user("a", &TokenChain::new(&Token::from_random([3; 32]), 1), 1)
        .unwrap();
    let (net, other) = (NetworkId("n".into()), NetworkId("m".into()));
    let old = s.add_network(user, &net, &settings()).unwrap();
    s.add_network(user, &other, &settings()).unwrap();
    for l in ["a", "b", "c"] {
        s.append_row(user, &net, row(l), 10).unwrap();
        s.append_row(user, &other, row(l), 10).unwrap();
    }
    // An unknown network: an error, and nothing changed.
    let missing = NetworkId("x".into());
    assert!(matches!(
        s.remove_network(user, &missing),
        Err(StoreError::Unknown(_))
    ));
    assert_eq!(s.networks(user).unwrap().len(), 2);

    s.remove_network(user, &net).unwrap();
    let names: Vec<_> = s
        .networks(user)
        .unwrap()
        .into_iter()
        .map(|n| n.network.0)
        .collect();
    assert_eq!(names, ["m"]);
    assert!(matches!(s.extent(user, &net), Err(StoreError::Unknown(_))));
    let left: i64 =
        s.db.query_row(
            "SELECT COUNT(*) FROM rows WHERE user_id = ?1 AND network = 'n'",
            params![user.0],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "its rows are deleted");
    // The other network keeps its rows and numbering.
    assert_eq!(
        s.extent(user, &other).unwrap(),
        StoreExtent::new(1, 3).unwrap()
    );
    assert!(matches!(
        s.remove_network(user, &net),
        Err(StoreError::Unknown(_))
    ));

    // Added again under the same name: a new stream id, numbered from 1.
    let again = s.add_network(user, &net, &settings()).unwrap();
    assert_ne!(again.stream, old.stream);
    assert_ne!(again.session, old.session);
    assert_eq!(s.extent(user, &net).unwrap(), StoreExtent::EMPTY);
    assert_eq!(s.append_row(user, &net, row("z"), 10).unwrap(), 1);
    let retired: i64 =
        s.db.query_row(
            "SELECT COUNT(*) FROM retired_streams WHERE user_id = ?1 AND stream = ?2",
            params![user.0, old.stream.0],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(retired, 1, "the old stream id is never drawn again");
}

#[test]
fn acknowledged_send_ids_survive_reopening_bounded_by_time_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cloud.db");
    let token = Token::from_random([9; 32]);
    let id = |s: &str| RequestId(s.into());
    let chain = {
        let mut s = SqliteStore::open(&path).unwrap();
        s.add_user("alice", &TokenChain::new(&token, 1000), 1)
            .unwrap();
        let chain = s
            .chain_by_hash(&TokenHash::of(&token))
            .unwrap()
            .unwrap()
            .chain;
        // Keep 3, forget what was recorded at or before time 10.
        for (at, name) in [(5, "a"), (20, "b"), (21, "c"), (22, "d"), (23, "e")] {
            s.record_sent_id(chain, &id(name), at, 10, 3).unwrap();
        }
        chain
    };
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(
        s.sent_ids(chain, 10, 100).unwrap(),
        [(21, id("c")), (22, id("d")), (23, id("e"))],
        "the newest three, oldest first, after reopening"
    );
    assert_eq!(
        s.sent_ids(chain, 21, 100).unwrap(),
        [(22, id("d")), (23, id("e"))],
        "only those recorded after the time asked for"
    );
    assert_eq!(s.sent_ids(chain, 0, 1).unwrap(), [(23, id("e"))]);
    assert!(s.sent_ids(ChainId(chain.0 + 1), 0, 100).unwrap().is_empty());
}

/// A connection still holding the old chain cannot undo `user token`: a
/// chain once revoked stays revoked whatever is saved over it.
#[test]
fn a_replaced_chain_stays_revoked_when_an_old_connection_saves_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("cloud.db")).unwrap();
    let old = Token::from_random([1; 32]);
    let user = s
        .add_user("alice", &TokenChain::new(&old, 1_000), 0)
        .unwrap();
    let held = s.chain_by_hash(&TokenHash::of(&old)).unwrap().unwrap();
    let fresh = Token::from_random([2; 32]);
    s.replace_chain(user, &TokenChain::new(&fresh, 1_000), 5)
        .unwrap();
    // What an attached connection would write back: its copy, unrevoked.
    s.save_chain(held.chain, &held.tokens, 9).unwrap();
    let mut again = s.chain_by_hash(&TokenHash::of(&old)).unwrap().unwrap();
    assert_eq!(again.tokens.authenticate(10, &old), AuthOutcome::Revoked);
    let mut now = s.chain_by_hash(&TokenHash::of(&fresh)).unwrap().unwrap();
    assert!(now.tokens.authenticate(10, &fresh).error_code().is_none());
    assert_eq!(
        s.users().unwrap(),
        [crate::store::UserSummary {
            name: "alice".into(),
            networks: 0,
            has_token: true
        }]
    );
}

/// A batch is one transaction: rows of several streams numbered on, a row
/// of a network removed meanwhile skipped (None), eviction once per stream.
#[test]
fn a_batch_appends_to_several_streams_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("cloud.db")).unwrap();
    let user = s
        .add_user(
            "alice",
            &TokenChain::new(&Token::from_random([3; 32]), 1_000),
            0,
        )
        .unwrap();
    let (a, b, gone) = (
        NetworkId("a".into()),
        NetworkId("b".into()),
        NetworkId("gone".into()),
    );
    s.add_network(user, &a, &settings()).unwrap();
    s.add_network(user, &b, &settings()).unwrap();
    let append = |network, line| Append {
        user,
        network,
        row: row(line),
    };
    let batch = [
        append(&a, "a1"),
        append(&b, "b1"),
        append(&gone, "lost"),
        append(&a, "a2"),
        append(&a, "a3"),
    ];
    assert_eq!(
        s.append_rows(&batch, 2).unwrap(),
        [Some(1), Some(1), None, Some(2), Some(3)]
    );
    let held = |n: &NetworkId| {
        s.rows(user, n, 1..=10)
            .unwrap()
            .into_iter()
            .map(|r| r.line)
            .collect::<Vec<_>>()
    };
    assert_eq!(held(&a), ["a2", "a3"], "two kept");
    assert_eq!(held(&b), ["b1"]);
}

/// A backlog `before` past i64::MAX (the protocol allows any u64) is no
/// bound at all: the newest rows, not none (issue 32, item 9).
#[test]
fn a_backlog_before_the_largest_number_gives_the_newest_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("cloud.db")).unwrap();
    let user = s
        .add_user(
            "alice",
            &TokenChain::new(&Token::from_random([4; 32]), 1_000),
            0,
        )
        .unwrap();
    let net = NetworkId("local".into());
    s.add_network(user, &net, &settings()).unwrap();
    for l in ["a", "b", "c"] {
        s.append_row(user, &net, row(l), 10).unwrap();
    }
    for end in [BacklogEnd::Seq(u64::MAX), BacklogEnd::Time(u64::MAX)] {
        let got: Vec<String> = s
            .backlog(user, &net, "#rete", end, 2)
            .unwrap()
            .into_iter()
            .map(|r| r.line)
            .collect();
        assert_eq!(got, ["c", "b"], "{end:?}");
    }
}
