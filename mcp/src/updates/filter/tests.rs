use super::*;
use crate::read::args::Args;
use rete_engine::clock::UnixMillis;
use rete_engine::row::Payload;
use serde_json::{json, Value};

const S1: &str = "0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const S2: &str = "1F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";
const B1: &str = "aa8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const B2: &str = "BB8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";

fn parse(v: Value) -> Filter {
    crate::tools::subscribe::parse(&Args::from_request(Some(&v)).unwrap()).unwrap()
}

fn row(from: &str, payload: Payload) -> Row {
    Row {
        seq: 1,
        time: UnixMillis(0),
        msgid: None,
        from: from.into(),
        history: false,
        payload,
    }
}

fn say(from: &str, text: &str) -> Row {
    row(from, Payload::Privmsg { text: text.into() })
}

fn join(from: &str) -> Row {
    row(
        from,
        Payload::UserJoined {
            account: None,
            userhost: Some("u@mriron.example".into()),
        },
    )
}

const CHAN: BufferKind = BufferKind::Channel;

#[test]
fn kinds_default_to_what_people_say() {
    let f = parse(json!({"from": ["alice"]}));
    assert_eq!(f.matches(&say("alice", "hi"), CHAN, "me"), Some(false));
    let act = row(
        "alice",
        Payload::Action {
            text: "waves".into(),
        },
    );
    assert_eq!(f.matches(&act, CHAN, "me"), Some(false));
    let notice = row("alice", Payload::Notice { text: "n".into() });
    assert_eq!(f.matches(&notice, CHAN, "me"), Some(false));
    assert_eq!(f.matches(&join("alice"), CHAN, "me"), None);
    assert!(!f.wants_kind(Kind::Topic));

    let joins = parse(json!({"kinds": ["join", "part"]}));
    assert_eq!(joins.matches(&join("bob"), CHAN, "me"), Some(false));
    assert_eq!(joins.matches(&say("bob", "hi"), CHAN, "me"), None);
    assert!(joins.wants_kind(Kind::Part) && !joins.wants_kind(Kind::Privmsg));
}

#[test]
fn from_is_any_entry_ignoring_case() {
    let f = parse(json!({"from": ["Alice", "ÉLODIE"]}));
    assert!(f.matches(&say("ALICE", "x"), CHAN, "me").is_some());
    assert!(f.matches(&say("élodie", "x"), CHAN, "me").is_some());
    assert!(f.matches(&say("Élodie", "x"), CHAN, "me").is_some());
    assert!(f.matches(&say("alice2", "x"), CHAN, "me").is_none());
    assert!(f.matches(&say("bob", "alice"), CHAN, "me").is_none());
}

#[test]
fn queries_only_in_query_buffers() {
    let f = parse(json!({"queries": true}));
    assert!(f.matches(&say("a", "x"), BufferKind::Query, "me").is_some());
    assert!(f.matches(&say("a", "x"), CHAN, "me").is_none());
    assert!(f
        .matches(&say("a", "x"), BufferKind::Server, "me")
        .is_none());
}

#[test]
fn match_uses_the_search_matcher() {
    let sub = parse(json!({"match": "DEPLOY"}));
    assert!(sub
        .matches(&say("a", "the deploy failed"), CHAN, "me")
        .is_some());
    assert!(sub.matches(&say("deployer", "hi"), CHAN, "me").is_some());
    assert!(sub.matches(&say("a", "dep loy"), CHAN, "me").is_none());
    let glob = parse(json!({"match": "deploy*", "match_mode": "glob"}));
    assert!(glob.matches(&say("a", "Deploy done"), CHAN, "me").is_some());
    assert!(glob.matches(&say("a", "the deploy"), CHAN, "me").is_none());
}

#[test]
fn mentions_use_text_fields_and_the_given_nick() {
    let f = parse(json!({"mentions": true}));
    assert_eq!(
        f.matches(&say("a", "hey MrIron: ping"), CHAN, "mriron"),
        Some(true)
    );
    assert_eq!(f.matches(&say("a", "mrironman"), CHAN, "mriron"), None);
    // The sender is not a text field; a nick change is followed by the
    // caller passing the current nick.
    assert_eq!(f.matches(&say("mriron", "hello"), CHAN, "mriron"), None);
    assert_eq!(
        f.matches(&say("a", "hi newnick"), CHAN, "newnick"),
        Some(true)
    );
    assert_eq!(f.matches(&say("a", "anything"), CHAN, ""), None);
    // A userhost is not a text field either.
    let joins = parse(json!({"mentions": true, "kinds": ["join", "kick"]}));
    assert_eq!(joins.matches(&join("a"), CHAN, "mriron"), None);
    let kick = row(
        "op",
        Payload::UserKicked {
            victim: "mriron".into(),
            reason: None,
        },
    );
    assert_eq!(joins.matches(&kick, CHAN, "mriron"), Some(true));
    // Without the mentions filter the flag is still reported.
    let any = parse(json!({"queries": true}));
    let q = BufferKind::Query;
    assert_eq!(any.matches(&say("a", "mriron!"), q, "mriron"), Some(true));
    assert_eq!(any.matches(&say("a", "hello"), q, "mriron"), Some(false));
}

#[test]
fn every_filter_must_match_and_lists_are_any_of() {
    let f = parse(json!({"from": ["alice", "bob"], "match": "ship", "queries": true}));
    let q = BufferKind::Query;
    assert!(f.matches(&say("bob", "ship it"), q, "me").is_some());
    assert!(f.matches(&say("alice", "shipped"), q, "me").is_some());
    assert!(f.matches(&say("carol", "ship it"), q, "me").is_none());
    assert!(f.matches(&say("bob", "wait"), q, "me").is_none());
    assert!(f.matches(&say("bob", "ship it"), CHAN, "me").is_none());
}

#[test]
fn scope_is_any_listed_session_or_buffer() {
    let s1 = SessionId::parse(S1).unwrap();
    let s2 = SessionId::parse(S2).unwrap();
    let b1 = BufferId::from_client(&B1.to_uppercase());
    let b2 = BufferId::from_client(B2);
    let everywhere = parse(json!({"mentions": true}));
    assert!(everywhere.in_scope(&s2, &b2));
    let sessions = parse(json!({"sessions": [S1]}));
    assert!(sessions.in_scope(&s1, &b2));
    assert!(!sessions.in_scope(&s2, &b2));
    let buffers = parse(json!({"buffers": [B1]}));
    assert!(buffers.in_scope(&s2, &b1));
    assert!(!buffers.in_scope(&s1, &b2));
    let both = parse(json!({"sessions": [S1], "buffers": [B1]}));
    assert!(both.in_scope(&s1, &b2));
    assert!(both.in_scope(&s2, &b1));
    assert!(!both.in_scope(&s2, &b2));
}
