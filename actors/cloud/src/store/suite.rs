//! One test suite for every [`CloudStore`] backend: each backend's tests
//! run [`CASES`] against databases of its own (SQLite files, PostgreSQL
//! databases), so both give the same answers.

use super::*;
use rete_cloud_protocol::token_chain::AuthOutcome;
use rete_cloud_protocol::Token;

/// Opens the same database again each time it is called.
pub(crate) type Opener = Box<dyn Fn() -> Box<dyn CloudStore>>;

/// Where a backend's test makes its databases.
pub(crate) trait Databases {
    /// A new, empty database.
    fn fresh(&mut self) -> Opener;
}

/// One case of the suite.
type Case = fn(&mut dyn Databases);

/// Every case, by name (for the failure message).
pub(crate) const CASES: &[(&str, Case)] = &[
    (
        "rows_are_numbered_consecutively_and_survive_reopening",
        rows_are_numbered_consecutively_and_survive_reopening,
    ),
    (
        "another_users_network_is_unknown",
        another_users_network_is_unknown,
    ),
    ("a_chain_round_trips_by_hash", a_chain_round_trips_by_hash),
    (
        "a_removed_network_is_gone_and_its_name_starts_a_fresh_stream",
        a_removed_network_is_gone_and_its_name_starts_a_fresh_stream,
    ),
    (
        "acknowledged_send_ids_survive_reopening_bounded_by_time_and_count",
        acknowledged_send_ids_survive_reopening_bounded_by_time_and_count,
    ),
    (
        "a_replaced_chain_stays_revoked_when_an_old_connection_saves_it",
        a_replaced_chain_stays_revoked_when_an_old_connection_saves_it,
    ),
    (
        "a_batch_appends_to_several_streams_in_one_go",
        a_batch_appends_to_several_streams_in_one_go,
    ),
    (
        "a_backlog_before_the_largest_number_gives_the_newest_rows",
        a_backlog_before_the_largest_number_gives_the_newest_rows,
    ),
    (
        "a_name_taken_and_a_removed_user_answer_clearly",
        a_name_taken_and_a_removed_user_answer_clearly,
    ),
    (
        "a_copy_holds_everything_and_goes_on_where_the_source_stopped",
        a_copy_holds_everything_and_goes_on_where_the_source_stopped,
    ),
    (
        "a_copy_into_a_store_with_users_or_a_failed_copy_changes_nothing",
        a_copy_into_a_store_with_users_or_a_failed_copy_changes_nothing,
    ),
    (
        "one_node_holds_a_network_and_the_previous_holder_writes_nothing",
        one_node_holds_a_network_and_the_previous_holder_writes_nothing,
    ),
    (
        "an_outbox_line_is_taken_by_the_holder_once_per_epoch",
        an_outbox_line_is_taken_by_the_holder_once_per_epoch,
    ),
];

/// Runs every case, each on databases of its own.
pub(crate) fn run_all(databases: &mut dyn Databases) {
    for (name, case) in CASES {
        eprintln!("store case: {name}");
        case(databases);
    }
}

pub(crate) fn settings() -> NetworkSettings {
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

fn chain(seed: u8) -> TokenChain {
    TokenChain::new(&Token::from_random([seed; 32]), 1_000)
}

/// Everything `s` holds, as its export gives it (Debug, to compare).
fn everything(s: &dyn CloudStore) -> Vec<String> {
    let mut items = Vec::new();
    s.export(&mut |item| {
        items.push(format!("{item:?}"));
        Ok(())
    })
    .unwrap();
    items
}

fn rows_items(s: &dyn CloudStore) -> Vec<(UserId, NetworkId, u64, String)> {
    let mut rows = Vec::new();
    s.export(&mut |item| {
        if let StoreItem::Row {
            user, network, row, ..
        } = item
        {
            rows.push((user, network, row.seq, row.line));
        }
        Ok(())
    })
    .unwrap();
    rows
}

fn lines(rows: Vec<StoredRow>) -> Vec<String> {
    rows.into_iter().map(|r| r.line).collect()
}

fn rows_are_numbered_consecutively_and_survive_reopening(dbs: &mut dyn Databases) {
    let open = dbs.fresh();
    let token = Token::from_random([7; 32]);
    let net = NetworkId("local".into());
    let (user, stream) = {
        let mut s = open();
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
    let mut s = open();
    assert_eq!(s.networks(user).unwrap()[0].stream, stream);
    assert_eq!(s.networks(user).unwrap()[0].settings, settings());
    // keep = 3: row 1 was evicted, the numbering goes on.
    assert_eq!(
        s.extent(user, &net).unwrap(),
        StoreExtent::new(2, 4).unwrap()
    );
    assert_eq!(lines(s.rows(user, &net, 1..=4).unwrap()), ["b", "c", "d"]);
    assert_eq!(s.newest_time(user, &net).unwrap(), Some(5));
    s.evict_before(user, &net, 5).unwrap();
    assert_eq!(
        s.extent(user, &net).unwrap(),
        StoreExtent::new(5, 4).unwrap()
    );
    assert_eq!(s.newest_time(user, &net).unwrap(), None);
    assert_eq!(s.append_row(user, &net, row("e"), 3).unwrap(), 5);
    let tagged = NewRow {
        msgid: Some("m1"),
        ..row("f")
    };
    assert_eq!(s.append_row(user, &net, tagged, 3).unwrap(), 6);
    assert_eq!(s.seq_of_msgid(user, &net, "m1").unwrap(), Some(6));
    assert_eq!(s.seq_of_msgid(user, &net, "m2").unwrap(), None);
}

fn another_users_network_is_unknown(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let a = s.add_user("a", &chain(1), 1).unwrap();
    let b = s.add_user("b", &chain(2), 1).unwrap();
    let net = NetworkId("n".into());
    s.add_network(a, &net, &settings()).unwrap();
    assert!(s.networks(b).unwrap().is_empty());
    assert!(matches!(s.extent(b, &net), Err(StoreError::Unknown(_))));
    assert!(s.append_row(b, &net, row("x"), 10).is_err());
    assert!(s.rows(b, &net, 1..=10).unwrap().is_empty());
    assert!(matches!(
        s.save_settings(b, &net, &settings()),
        Err(StoreError::Unknown(_))
    ));
}

fn a_chain_round_trips_by_hash(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let t0 = Token::from_random([3; 32]);
    s.add_user("a", &TokenChain::new(&t0, 1000), 1).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t0)).unwrap().unwrap();
    assert_eq!(f.user_name, "a");
    // Another connection (another node) read it too.
    let stale = s.chain_by_hash(&TokenHash::of(&t0)).unwrap().unwrap();
    let t1 = Token::from_random([4; 32]);
    let g = f.tokens.begin_rotation(&t1).unwrap();
    s.save_chain(f.chain, &f.tokens, 1, f.version).unwrap();
    // Its save comes second: refused, and the first one's change stands.
    assert!(matches!(
        s.save_chain(stale.chain, &stale.tokens, 2, stale.version),
        Err(StoreError::Conflict(_))
    ));
    assert!(s.chain_by_hash(&TokenHash::of(&t1)).unwrap().is_some());
    let mut f = s.chain_by_hash(&TokenHash::of(&t1)).unwrap().unwrap();
    f.tokens.acknowledge(10, g).unwrap();
    s.save_chain(f.chain, &f.tokens, 10, f.version).unwrap();
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
    s.save_chain(f.chain, &f.tokens, 10, f.version).unwrap();
    let mut f = s.chain_by_hash(&TokenHash::of(&t1)).unwrap().unwrap();
    assert_eq!(f.tokens.authenticate(2001, &t1), AuthOutcome::Revoked);
    assert!(s
        .chain_by_hash(&TokenHash::of(&Token::from_random([9; 32])))
        .unwrap()
        .is_none());
}

fn a_removed_network_is_gone_and_its_name_starts_a_fresh_stream(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("a", &chain(3), 1).unwrap();
    let (net, other) = (NetworkId("n".into()), NetworkId("m".into()));
    let old = s.add_network(user, &net, &settings()).unwrap();
    s.add_network(user, &other, &settings()).unwrap();
    assert!(matches!(
        s.add_network(user, &net, &settings()),
        Err(StoreError::Exists(_))
    ));
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
    assert!(
        rows_items(s.as_ref()).iter().all(|(_, n, ..)| n != &net),
        "its rows are deleted"
    );
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
    let retired = format!(
        "{:?}",
        StoreItem::RetiredStream {
            user,
            stream: old.stream
        }
    );
    assert!(
        everything(s.as_ref()).contains(&retired),
        "the old stream id is never drawn again"
    );
}

fn acknowledged_send_ids_survive_reopening_bounded_by_time_and_count(dbs: &mut dyn Databases) {
    let open = dbs.fresh();
    let token = Token::from_random([9; 32]);
    let id = |s: &str| RequestId(s.into());
    let chain = {
        let mut s = open();
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
    let s = open();
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
fn a_replaced_chain_stays_revoked_when_an_old_connection_saves_it(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let old = Token::from_random([1; 32]);
    let user = s
        .add_user("alice", &TokenChain::new(&old, 1_000), 0)
        .unwrap();
    let held = s.chain_by_hash(&TokenHash::of(&old)).unwrap().unwrap();
    let fresh = Token::from_random([2; 32]);
    s.replace_chain(user, &TokenChain::new(&fresh, 1_000), 5)
        .unwrap();
    // What an attached connection would write back: its copy, unrevoked.
    s.save_chain(held.chain, &held.tokens, 9, held.version)
        .unwrap();
    let mut again = s.chain_by_hash(&TokenHash::of(&old)).unwrap().unwrap();
    assert_eq!(again.tokens.authenticate(10, &old), AuthOutcome::Revoked);
    let mut now = s.chain_by_hash(&TokenHash::of(&fresh)).unwrap().unwrap();
    assert!(now.tokens.authenticate(10, &fresh).error_code().is_none());
    assert_eq!(
        s.users().unwrap(),
        [UserSummary {
            name: "alice".into(),
            networks: 0,
            has_token: true
        }]
    );
}

/// A batch is one transaction: rows of several streams numbered on, a row
/// of a network removed meanwhile skipped (None), eviction once per stream.
fn a_batch_appends_to_several_streams_in_one_go(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("alice", &chain(3), 0).unwrap();
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
        epoch: None,
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
        [
            Appended::Stored(1),
            Appended::Stored(1),
            Appended::Gone,
            Appended::Stored(2),
            Appended::Stored(3)
        ]
    );
    assert_eq!(
        lines(s.rows(user, &a, 1..=10).unwrap()),
        ["a2", "a3"],
        "two kept"
    );
    assert_eq!(lines(s.rows(user, &b, 1..=10).unwrap()), ["b1"]);
}

/// A backlog `before` past i64::MAX (the protocol allows any u64) is no
/// bound at all: the newest rows, not none (issue 32, item 9).
fn a_backlog_before_the_largest_number_gives_the_newest_rows(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("alice", &chain(4), 0).unwrap();
    let net = NetworkId("local".into());
    s.add_network(user, &net, &settings()).unwrap();
    for l in ["a", "b", "c"] {
        s.append_row(user, &net, row(l), 10).unwrap();
    }
    for end in [
        BacklogEnd::Seq(u64::MAX),
        BacklogEnd::Time(u64::MAX),
        BacklogEnd::Newest,
    ] {
        let got = lines(s.backlog(user, &net, "#rete", end, 2).unwrap());
        assert_eq!(got, ["c", "b"], "{end:?}");
    }
    assert_eq!(
        lines(
            s.backlog(user, &net, "#rete", BacklogEnd::Seq(3), 5)
                .unwrap()
        ),
        ["b", "a"]
    );
    assert!(s
        .backlog(user, &net, "#other", BacklogEnd::Newest, 5)
        .unwrap()
        .is_empty());
}

fn a_name_taken_and_a_removed_user_answer_clearly(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("alice", &chain(5), 0).unwrap();
    assert_eq!(s.user_by_name("alice").unwrap(), Some(user));
    assert_eq!(s.user_by_name("bob").unwrap(), None);
    let net = NetworkId("n".into());
    s.add_network(user, &net, &settings()).unwrap();
    s.append_row(user, &net, row("a"), 10).unwrap();
    let found = s.chain_by_hash(&TokenHash::of(&Token::from_random([5; 32])));
    let held = found.unwrap().unwrap().chain;
    s.record_sent_id(held, &RequestId("r".into()), 1, 0, 10)
        .unwrap();
    s.remove_user(user).unwrap();
    assert!(
        everything(s.as_ref()).is_empty(),
        "nothing of theirs is left"
    );
    assert!(matches!(s.remove_user(user), Err(StoreError::Unknown(_))));
    assert!(matches!(
        s.add_network(user, &net, &settings()),
        Err(StoreError::Unknown(_) | StoreError::Backend(_))
    ));
    // The name is free again.
    s.add_user("alice", &chain(6), 0).unwrap();
}

/// A store with two users, networks with rows (one evicted), a removed
/// network, a rotated chain, a revoked one and sent ids.
fn filled(s: &mut dyn CloudStore) -> (UserId, NetworkId) {
    let alice = s.add_user("alice", &chain(10), 1).unwrap();
    let bob = s.add_user("bob", &chain(11), 2).unwrap();
    s.replace_chain(bob, &chain(12), 3).unwrap();
    let net = NetworkId("libera".into());
    let gone = NetworkId("gone".into());
    s.add_network(alice, &net, &settings()).unwrap();
    s.add_network(alice, &gone, &settings()).unwrap();
    s.add_network(bob, &net, &settings()).unwrap();
    s.remove_network(alice, &gone).unwrap();
    for i in 0..7 {
        let line = format!("PRIVMSG #rete :line {i} \u{1F600}");
        let tagged = NewRow {
            msgid: (i % 2 == 0).then_some("id"),
            ..row(&line)
        };
        s.append_row(alice, &net, tagged, 5).unwrap();
        s.append_row(bob, &net, row(&line), 100).unwrap();
    }
    let found = s.chain_by_hash(&TokenHash::of(&Token::from_random([10; 32])));
    let held = found.unwrap().unwrap().chain;
    s.record_sent_id(held, &RequestId("sent-1".into()), 50, 0, 10)
        .unwrap();
    (alice, net)
}

fn a_copy_holds_everything_and_goes_on_where_the_source_stopped(dbs: &mut dyn Databases) {
    let (from, to) = (dbs.fresh(), dbs.fresh());
    let mut source = from();
    let (alice, net) = filled(source.as_mut());
    let mut target = to();
    crate::copy::copy_store(source.as_ref(), target.as_mut()).unwrap();
    assert_eq!(everything(target.as_ref()), everything(source.as_ref()));
    // It goes on: numbering, tokens, sent ids, new ids past the copied ones.
    assert_eq!(target.append_row(alice, &net, row("next"), 5).unwrap(), 8);
    let t = Token::from_random([10; 32]);
    let found = target.chain_by_hash(&TokenHash::of(&t)).unwrap().unwrap();
    assert_eq!(found.user, alice);
    assert_eq!(
        target.sent_ids(found.chain, 0, 10).unwrap(),
        [(50, RequestId("sent-1".into()))]
    );
    let revoked = Token::from_random([11; 32]);
    let mut old = target
        .chain_by_hash(&TokenHash::of(&revoked))
        .unwrap()
        .unwrap();
    assert_eq!(old.tokens.authenticate(10, &revoked), AuthOutcome::Revoked);
    let carol = target.add_user("carol", &chain(13), 4).unwrap();
    assert!(carol.0 > alice.0);
    let before = everything(target.as_ref()).len();
    target.replace_chain(carol, &chain(14), 5).unwrap();
    assert!(everything(target.as_ref()).len() > before);
}

fn a_copy_into_a_store_with_users_or_a_failed_copy_changes_nothing(dbs: &mut dyn Databases) {
    let (from, to) = (dbs.fresh(), dbs.fresh());
    let mut source = from();
    filled(source.as_mut());
    let mut target = to();
    target.add_user("zed", &chain(20), 0).unwrap();
    let held = everything(target.as_ref());
    assert!(matches!(
        crate::copy::copy_store(source.as_ref(), target.as_mut()),
        Err(StoreError::Exists(_))
    ));
    assert_eq!(everything(target.as_ref()), held);

    // A copy that fails halfway writes nothing.
    let empty = dbs.fresh();
    let mut target = empty();
    let mut given = 0;
    let failed = target.import(&mut |sink| {
        source.export(&mut |item| {
            given += 1;
            if given == 12 {
                return Err(StoreError::Backend("the source went away".into()));
            }
            sink(item)
        })
    });
    assert!(matches!(failed, Err(StoreError::Backend(_))));
    assert!(everything(target.as_ref()).is_empty());
    assert!(target.users().unwrap().is_empty());
}

fn node(name: &str) -> Node {
    Node {
        name: name.into(),
        instance: format!("{name}-instance"),
    }
}

fn keys(held: &[Held]) -> Vec<(i64, String, u64)> {
    let mut k: Vec<_> = held
        .iter()
        .map(|h| (h.user.0, h.record.network.0.clone(), h.epoch))
        .collect();
    k.sort();
    k
}

/// Leases: a claim takes networks nobody holds, each with the next epoch;
/// while held, another node gets none (on SQLite, where one `serve` holds
/// the file, a new run takes them all); once the lease ends, another node
/// claims it with a higher epoch and every append of the old epoch is
/// refused (`Fenced`) and stores nothing.
fn one_node_holds_a_network_and_the_previous_holder_writes_nothing(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("alice", &chain(30), 0).unwrap();
    let (a, b) = (NetworkId("a".into()), NetworkId("b".into()));
    s.add_network(user, &a, &settings()).unwrap();
    s.add_network(user, &b, &settings()).unwrap();
    let (one, two) = (node("one"), node("two"));
    assert_eq!(s.lease_census(&one).unwrap(), (0, 2));
    let first = s.claim_networks(&one, 60_000, 1).unwrap();
    assert_eq!(keys(&first), [(user.0, "a".to_owned(), 1)], "one at most");
    let rest = s.claim_networks(&one, 60_000, 10).unwrap();
    assert_eq!(keys(&rest), [(user.0, "b".to_owned(), 1)]);
    assert!(s.claim_networks(&one, 60_000, 10).unwrap().is_empty());
    assert_eq!(
        s.renew_leases(&one, 60_000).unwrap().len(),
        2,
        "both renewed"
    );
    assert_eq!(s.lease_of(user, &a).unwrap().node.as_deref(), Some("one"));
    let row = |line| Append {
        user,
        network: &a,
        row: NewRow {
            time: 1,
            buffer: "#rete",
            msgid: None,
            line,
        },
        epoch: Some(1),
    };
    assert_eq!(
        s.append_rows(&[row("held")], 10).unwrap(),
        [Appended::Stored(1)]
    );
    if s.shared() {
        assert_eq!(s.lease_census(&two).unwrap(), (1, 2), "one live node");
        assert_eq!(s.lease_census(&one).unwrap(), (0, 2), "none but itself");
        assert!(
            s.claim_networks(&two, 60_000, 10).unwrap().is_empty(),
            "live leases are not claimed"
        );
        // One's leases run out (1 ms), two claims them.
        s.renew_leases(&one, 1).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(s.lease_census(&two).unwrap(), (0, 2), "none live");
    }
    let taken = s.claim_networks(&two, 60_000, 10).unwrap();
    assert_eq!(
        keys(&taken),
        [(user.0, "a".to_owned(), 2), (user.0, "b".to_owned(), 2)],
        "the next epoch"
    );
    assert!(
        s.renew_leases(&one, 60_000).unwrap().is_empty(),
        "one holds none"
    );
    assert_eq!(s.lease_of(user, &a).unwrap().node.as_deref(), Some("two"));
    // One's appends are fenced and store nothing; two's go on after them.
    assert_eq!(
        s.append_rows(&[row("stale"), row("stale")], 10).unwrap(),
        [Appended::Fenced, Appended::Fenced]
    );
    let fresh = Append {
        epoch: Some(2),
        ..row("fresh")
    };
    let gone = NetworkId("gone".into());
    let nowhere = Append {
        network: &gone,
        ..row("nowhere")
    };
    assert_eq!(
        s.append_rows(&[fresh, nowhere], 10).unwrap(),
        [Appended::Stored(2), Appended::Gone]
    );
    assert_eq!(lines(s.rows(user, &a, 1..=10).unwrap()), ["held", "fresh"]);
    // Given up: nobody holds them, and the next claim bumps the epoch.
    s.release_leases(&two).unwrap();
    assert_eq!(s.lease_of(user, &a).unwrap().node, None);
    let again = s.claim_networks(&one, 60_000, 10).unwrap();
    assert_eq!(keys(&again)[0].2, 3);
    assert!(matches!(
        s.lease_of(user, &gone),
        Err(StoreError::Unknown(_))
    ));
}

/// The outbox: a line is queued once per (chain, id) while it waits; only
/// the network's holder takes it, once per epoch (a new holder gets it
/// again); its outcome is read once; a line nobody took can be given up,
/// and then nobody takes it.
fn an_outbox_line_is_taken_by_the_holder_once_per_epoch(dbs: &mut dyn Databases) {
    let mut s = dbs.fresh()();
    let user = s.add_user("alice", &chain(40), 0).unwrap();
    let net = NetworkId("a".into());
    s.add_network(user, &net, &settings()).unwrap();
    let found = s.chain_by_hash(&TokenHash::of(&Token::from_random([40; 32])));
    let sender = found.unwrap().unwrap().chain;
    let (one, two) = (node("one"), node("two"));
    let request = RequestId("r-1".into());
    let id = s
        .queue_send(user, &net, sender, &request, "PRIVMSG #a :hi")
        .unwrap();
    assert_eq!(
        s.queue_send(user, &net, sender, &request, "PRIVMSG #a :hi")
            .unwrap(),
        id,
        "the same line"
    );
    assert!(
        s.take_sends(&one).unwrap().is_empty(),
        "one holds nothing yet"
    );
    s.claim_networks(&one, 60_000, 10).unwrap();
    let taken = s.take_sends(&one).unwrap();
    assert_eq!(
        taken,
        [Outgoing {
            id,
            user,
            network: net.clone(),
            chain: sender,
            request: request.clone(),
            line: "PRIVMSG #a :hi".into(),
        }]
    );
    assert!(s.take_sends(&one).unwrap().is_empty(), "taken once");
    assert_eq!(
        s.send_outcome(id, true).unwrap(),
        None,
        "taken: not given up"
    );
    // One loses the network before writing the outcome: two takes it again.
    s.release_leases(&one).unwrap();
    s.claim_networks(&two, 60_000, 10).unwrap();
    assert_eq!(s.take_sends(&two).unwrap().len(), 1);
    s.finish_send(id, SendOutcome::Sent).unwrap();
    assert_eq!(s.send_outcome(id, false).unwrap(), Some(SendOutcome::Sent));
    assert_eq!(s.send_outcome(id, false).unwrap(), None, "read once");
    // A line nobody took, given up: ended, never taken.
    let late = s
        .queue_send(
            user,
            &net,
            sender,
            &RequestId("r-2".into()),
            "PRIVMSG #a :late",
        )
        .unwrap();
    assert_ne!(late, id);
    assert_eq!(
        s.send_outcome(late, true).unwrap(),
        Some(SendOutcome::NotSent)
    );
    assert!(s.take_sends(&two).unwrap().is_empty());
    // A removed network's waiting lines go with it.
    let gone = s
        .queue_send(
            user,
            &net,
            sender,
            &RequestId("r-3".into()),
            "PRIVMSG #a :x",
        )
        .unwrap();
    s.remove_network(user, &net).unwrap();
    assert_eq!(s.send_outcome(gone, true).unwrap(), None);
}
