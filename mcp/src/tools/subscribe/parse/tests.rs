use super::*;
use crate::read::result::encode;
use crate::tools::context::Settings;
use crate::tools::subscribe::TOOL;
use serde_json::{json, Value};

const S1: &str = "0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const S2: &str = "1F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";
const B1: &str = "aa8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const B2: &str = "BB8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B";

fn args(v: Value) -> Args {
    Args::from_request(Some(&v)).unwrap()
}

/// What a subscribe call with `v` gets: the registry's name checks, then
/// the tool's parse.
fn checked(v: Value, debug: bool) -> Result<Filter, ToolOutcome> {
    let a = args(v);
    TOOL.spec
        .check_names(&a, &Settings { debug, send: false })?;
    super::parse(&a)
}

fn parse_ok(v: Value) -> Filter {
    checked(v, false).unwrap()
}

fn err_with(v: Value, debug: bool) -> String {
    match checked(v, debug) {
        Err(ToolOutcome::Error(text)) => text,
        other => panic!("not a tool error: {other:?}"),
    }
}

fn err(v: Value) -> String {
    err_with(v, false)
}

fn filters(v: Value) -> String {
    encode(&parse_ok(v).to_json())
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
    encode(&checked(v, true).unwrap().to_json())
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
    assert!(checked(json!({"mentions": true}), true).is_ok());
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
    assert!(checked(json!({"raw": {"commands": many("A", 50)}}), true).is_ok());
    let cap = json!({"raw": {"commands": ["P".repeat(32)]}});
    assert!(checked(cap, true).is_ok());
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
        let f = checked(v, true).unwrap();
        let session = SessionId::parse(S2).unwrap();
        let buffer = BufferId::from_client(B2);
        assert!(!f.in_scope(&session, &buffer));
    }
    let both = json!({"raw": {}, "sessions": [S2]});
    let f = checked(both, true).unwrap();
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
    assert_eq!(
        parse_ok(json!({"sessions": many(S1, 50)})).sessions.len(),
        1
    );
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
        parse_ok(json!({"from": ["É".repeat(32)]})).from,
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
    assert!(parse_ok(json!({"match": "m".repeat(256)})).text.is_some());
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
    assert_eq!(parse_ok(json!({"buffers": [B1]})).buffers.len(), 1);
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
        assert!(checked(one.clone(), false).is_ok(), "{one}");
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
