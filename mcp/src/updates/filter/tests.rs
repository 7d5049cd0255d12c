use super::*;
use crate::read::result::encode;
use rete_engine::clock::UnixMillis;
use rete_engine::row::Payload;
use serde_json::json;

const S1: &str = "0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const S2: &str = "1F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";
const B1: &str = "aa8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const B2: &str = "BB8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";

fn args(v: Value) -> Args {
    Args::from_request(Some(&v)).unwrap()
}

fn parse(v: Value) -> Filter {
    Filter::parse(&args(v), false).unwrap()
}

fn err_with(v: Value, debug: bool) -> String {
    match Filter::parse(&args(v), debug) {
        Err(ToolOutcome::Error(text)) => text,
        other => panic!("not a tool error: {other:?}"),
    }
}

fn err(v: Value) -> String {
    err_with(v, false)
}

fn filters(v: Value) -> String {
    encode(&parse(v).to_json())
}

fn many(s: &str, n: usize) -> Vec<String> {
    vec![s.to_owned(); n]
}

#[test]
fn raw_and_log_with_debug_off_are_refused_before_anything_else() {
    for v in [
        json!({"raw": null}),
        json!({"log": {}}),
        json!({"raw": 5, "zeta": 1, "sessions": 5}),
        json!({"log": null, "sessions": many("x", 51)}),
    ] {
        assert_eq!(err(v), "debug tools are disabled");
    }
}

fn debug_err(v: Value) -> String {
    err_with(v, true)
}

fn debug_filters(v: Value) -> String {
    encode(&Filter::parse(&args(v), true).unwrap().to_json())
}

#[test]
fn raw_and_log_with_debug_on_are_closed_objects() {
    let cases = [
        (
            json!({"raw": 5}),
            "invalid arguments: raw must be an object",
        ),
        (
            json!({"log": []}),
            "invalid arguments: log must be an object",
        ),
        (
            json!({"raw": {"session": []}}),
            "invalid arguments: unknown argument \"raw.session\"",
        ),
        (
            json!({"log": {"level": "error"}}),
            "invalid arguments: unknown argument \"log.level\"",
        ),
        (
            json!({"log": {"categories": "app"}}),
            "invalid arguments: log.categories must be an array of strings",
        ),
        (
            json!({"raw": {"commands": [1]}}),
            "invalid arguments: raw.commands must be an array of strings",
        ),
        (
            json!({"raw": {"direction": true}}),
            "invalid arguments: raw.direction must be a string",
        ),
        (
            json!({"log": {"min_level": 3}}),
            "invalid arguments: log.min_level must be a string",
        ),
        // Shape errors come before the top-level values are parsed.
        (
            json!({"match_mode": "regex", "raw": {"x": 1}}),
            "invalid arguments: unknown argument \"raw.x\"",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(debug_err(v.clone()), want, "{v}");
    }
    // Debug on changes nothing else.
    assert!(Filter::parse(&args(json!({"mentions": true})), true).is_ok());
}

#[test]
fn debug_lists_have_their_counts_and_caps() {
    let cases = [
        (
            json!({"raw": {"sessions": many(S1, 51)}}),
            "invalid arguments: raw.sessions has more than 50 entries",
        ),
        (
            json!({"raw": {"commands": many("PING", 51)}}),
            "invalid arguments: commands has more than 50 entries",
        ),
        (
            json!({"log": {"categories": many("app", 51)}}),
            "invalid arguments: categories has more than 50 entries",
        ),
        (
            json!({"raw": {"sessions": ["x".repeat(65)]}}),
            "invalid arguments: raw.sessions entry is longer than 64 bytes",
        ),
        (
            json!({"raw": {"commands": ["P".repeat(33)]}}),
            "invalid arguments: commands entry is longer than 32 bytes",
        ),
        (
            json!({"log": {"categories": ["a".repeat(65)]}}),
            "invalid arguments: categories entry is longer than 64 bytes",
        ),
        // Counts of every list come before any byte cap.
        (
            json!({"from": ["x".repeat(65)], "raw": {"commands": many("A", 51)}}),
            "invalid arguments: commands has more than 50 entries",
        ),
        // Caps come before values: an over-long bad id is a length error.
        (
            json!({"raw": {"sessions": ["x".repeat(65)], "direction": "up"}}),
            "invalid arguments: raw.sessions entry is longer than 64 bytes",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(debug_err(v.clone()), want, "{v}");
    }
    assert!(Filter::parse(&args(json!({"raw": {"commands": many("A", 50)}})), true).is_ok());
    let cap = json!({"raw": {"commands": ["P".repeat(32)]}});
    assert!(Filter::parse(&args(cap), true).is_ok());
}

#[test]
fn debug_values_have_their_errors_in_order() {
    let cases = [
        (
            json!({"raw": {"direction": "both"}}),
            "invalid direction: expected \"in\" or \"out\"",
        ),
        (
            json!({"log": {"min_level": "loud"}}),
            "invalid arguments: unknown level: \"loud\"",
        ),
        (
            json!({"log": {"categories": ["app", "irc"]}}),
            "invalid arguments: unknown category: \"irc\"",
        ),
        (json!({"raw": {"sessions": ["nope"]}}), "unknown session"),
        // Every invalid-arguments error comes before an unknown session.
        (
            json!({"raw": {"sessions": ["nope"]}, "log": {"min_level": "x"}}),
            "invalid arguments: unknown level: \"x\"",
        ),
        (
            json!({"buffers": ["nope"], "raw": {"sessions": ["nope"]}}),
            "unknown buffer",
        ),
        (
            json!({"kinds": ["say"], "raw": {"direction": "up"}}),
            "invalid arguments: unknown kind: \"say\"",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(debug_err(v.clone()), want, "{v}");
    }
}

#[test]
fn debug_filters_are_normalised() {
    assert_eq!(
        debug_filters(json!({"raw": {
            "commands": ["privmsg", " 354 ", "", "  ", "PRIVMSG", "join"],
            "direction": "in",
            "sessions": [S2, S1, S1],
        }})),
        format!(
            r#"{{"raw":{{"commands":["354","JOIN","PRIVMSG"],"direction":"in","sessions":["{}","{}"]}}}}"#,
            S1.to_uppercase(),
            S2
        )
    );
    assert_eq!(
        debug_filters(json!({"log": {"min_level": "warning", "categories": []}})),
        r#"{"log":{}}"#
    );
    assert_eq!(
        debug_filters(
            json!({"log": {"min_level": "error", "categories": ["network", "auth", "network"]}})
        ),
        r#"{"log":{"categories":["auth","network"],"min_level":"error"}}"#
    );
    assert_eq!(debug_filters(json!({"raw": {}})), r#"{"raw":{}}"#);
    assert_eq!(
        debug_filters(json!({"raw": null, "log": null, "mentions": true})),
        r#"{"mentions":true}"#
    );
    assert_eq!(
        debug_err(json!({"raw": null})),
        "invalid arguments: a subscription needs at least one filter"
    );
}

#[test]
fn a_raw_or_log_only_subscription_matches_no_messages() {
    for v in [json!({"raw": {}}), json!({"log": {"min_level": "debug"}})] {
        let f = Filter::parse(&args(v), true).unwrap();
        let session = SessionId::parse(S2).unwrap();
        let buffer = BufferId::from_client(B2);
        assert!(!f.in_scope(&session, &buffer));
    }
    let both = json!({"raw": {}, "sessions": [S2]});
    let f = Filter::parse(&args(both), true).unwrap();
    assert!(f.in_scope(&SessionId::parse(S2).unwrap(), &BufferId::from_client(B2)));
}

#[test]
fn unknown_arguments_and_types() {
    assert_eq!(
        err(json!({"mentions": true, "query": "x"})),
        "invalid arguments: unknown argument \"query\""
    );
    let cases = [
        (
            json!({"sessions": "x"}),
            "sessions must be an array of strings",
        ),
        (
            json!({"buffers": [1]}),
            "buffers must be an array of strings",
        ),
        (json!({"mentions": "yes"}), "mentions must be a boolean"),
        (json!({"queries": 1}), "queries must be a boolean"),
        (json!({"from": "alice"}), "from must be an array of strings"),
        (
            json!({"kinds": "join"}),
            "kinds must be an array of strings",
        ),
        (json!({"match": 5}), "match must be a string"),
        (json!({"match_mode": true}), "match_mode must be a string"),
        // Types are checked in the schema's order, before any count.
        (
            json!({"sessions": many("x", 51), "buffers": 1}),
            "buffers must be an array of strings",
        ),
    ];
    for (v, detail) in cases {
        assert_eq!(err(v), format!("invalid arguments: {detail}"));
    }
}

#[test]
fn entry_counts_are_as_sent_and_come_first() {
    assert_eq!(
        err(json!({"sessions": many(S1, 51)})),
        "invalid arguments: sessions has more than 50 entries"
    );
    assert_eq!(parse(json!({"sessions": many(S1, 50)})).sessions.len(), 1);
    assert_eq!(
        err(json!({"buffers": many(B1, 51)})),
        "invalid arguments: buffers has more than 50 entries"
    );
    // Empty from entries are dropped, but only after counting.
    assert_eq!(
        err(json!({"from": many("", 51)})),
        "invalid arguments: from has more than 50 entries"
    );
    // Every count comes before any entry's length.
    assert_eq!(
        err(json!({"sessions": ["x".repeat(65)], "from": many("a", 51)})),
        "invalid arguments: from has more than 50 entries"
    );
}

#[test]
fn entry_lengths_come_before_any_entry_is_parsed() {
    let long = "x".repeat(65);
    assert_eq!(
        err(json!({"sessions": [S1, long]})),
        "invalid arguments: sessions entry is longer than 64 bytes"
    );
    assert_eq!(
        err(json!({"sessions": ["x".repeat(64)]})),
        "unknown session"
    );
    assert_eq!(
        err(json!({"buffers": [long]})),
        "invalid arguments: buffers entry is longer than 64 bytes"
    );
    assert_eq!(
        err(json!({"from": ["é".repeat(33)]})),
        "invalid arguments: from entry is longer than 64 bytes"
    );
    assert_eq!(
        parse(json!({"from": ["É".repeat(32)]})).from,
        ["é".repeat(32)]
    );
    // Before the match, match_mode, kinds and ids too.
    assert_eq!(
        err(json!({"from": [long], "match": "m".repeat(300), "kinds": ["x"]})),
        "invalid arguments: from entry is longer than 64 bytes"
    );
}

#[test]
fn match_length_then_mode_then_kinds() {
    assert_eq!(
        err(json!({"match": "€".repeat(86), "match_mode": "regex"})),
        "invalid arguments: match is longer than 256 bytes"
    );
    assert!(parse(json!({"match": "m".repeat(256)})).text.is_some());
    for mode in ["regex", "Glob", ""] {
        assert_eq!(
            err(json!({"match": "x", "match_mode": mode, "kinds": ["x"]})),
            "invalid arguments: match_mode must be substring or glob"
        );
    }
    // A bad match_mode is reported even with no filter at all.
    assert_eq!(
        err(json!({"match_mode": "regex"})),
        "invalid arguments: match_mode must be substring or glob"
    );
}

#[test]
fn kinds_take_only_message_kinds() {
    for kind in ["ctcp", "server", "invite", "PRIVMSG", ""] {
        assert_eq!(
            err(json!({"kinds": ["privmsg", kind]})),
            format!("invalid arguments: unknown kind: \"{kind}\"")
        );
    }
    let long = format!("{}\"", "k".repeat(70));
    assert_eq!(
        err(json!({"kinds": [long]})),
        format!("invalid arguments: unknown kind: \"{}\"", "k".repeat(64))
    );
    assert_eq!(
        err(json!({"kinds": ["a\"b\n"]})),
        "invalid arguments: unknown kind: \"a\\\"b\\n\""
    );
    // Argument errors come before unknown session.
    assert_eq!(
        err(json!({"kinds": ["x"], "sessions": ["nope"]})),
        "invalid arguments: unknown kind: \"x\""
    );
}

#[test]
fn malformed_ids_are_unknown() {
    assert_eq!(err(json!({"sessions": ["nope"]})), "unknown session");
    assert_eq!(err(json!({"sessions": [""]})), "unknown session");
    assert_eq!(err(json!({"buffers": [B1, "nope"]})), "unknown buffer");
    assert_eq!(
        err(json!({"sessions": ["nope"], "buffers": ["nope"]})),
        "unknown session"
    );
    // Only the hyphenated spelling the release tools use is an id.
    let simple = S1.replace('-', "");
    for odd in [format!("{{{S1}}}"), format!(" {S1}"), simple] {
        assert_eq!(err(json!({"sessions": [odd]})), "unknown session", "{odd}");
    }
    // A well-formed id that names nothing is accepted.
    assert_eq!(parse(json!({"buffers": [B1]})).buffers.len(), 1);
}

#[test]
fn a_subscription_needs_a_filter() {
    let none = "invalid arguments: a subscription needs at least one filter";
    assert_eq!(err(json!({})), none);
    assert_eq!(
        err(json!({
            "sessions": [], "buffers": [], "mentions": false, "queries": false,
            "from": ["", ""], "kinds": [], "match": "", "match_mode": "glob",
        })),
        none
    );
    assert_eq!(err(json!({"mentions": null, "match": null})), none);
    for one in [
        json!({"sessions": [S1]}),
        json!({"buffers": [B1]}),
        json!({"mentions": true}),
        json!({"queries": true}),
        json!({"from": ["", "a"]}),
        json!({"kinds": ["join"]}),
        json!({"match": " "}),
    ] {
        assert!(Filter::parse(&args(one.clone()), false).is_ok(), "{one}");
    }
}

#[test]
fn normalised_filters_are_byte_exact() {
    let full = json!({
        "sessions": [S2, S1, S1.to_uppercase()],
        "buffers": [B2, B1, B2.to_lowercase()],
        "mentions": true,
        "queries": true,
        "from": ["Bob", "", "alice", "BOB", "ÉLODIE"],
        "kinds": ["notice", "privmsg", "join", "notice", "action"],
        "match": "Hi *",
        "match_mode": "glob",
    });
    let expected = format!(
        concat!(
            r#"{{"buffers":["{b1}","{b2}"],"from":["alice","bob","élodie"],"#,
            r#""kinds":["action","join","notice","privmsg"],"match":"Hi *","#,
            r#""match_mode":"glob","mentions":true,"queries":true,"#,
            r#""sessions":["{s1}","{s2}"]}}"#
        ),
        b1 = B1.to_uppercase(),
        b2 = B2,
        s1 = S1.to_uppercase(),
        s2 = S2,
    );
    assert_eq!(filters(full), expected);
}

#[test]
fn defaults_and_empty_filters_are_left_out() {
    let v = json!({"mentions": true, "queries": false, "match": "", "match_mode": "glob",
                   "kinds": [], "from": [""], "sessions": [], "buffers": null});
    assert_eq!(filters(v), r#"{"mentions":true}"#);
    let v = json!({"match": "Iron", "match_mode": "substring"});
    assert_eq!(filters(v), r#"{"match":"Iron"}"#);
    assert_eq!(filters(json!({"queries": true})), r#"{"queries":true}"#);
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
