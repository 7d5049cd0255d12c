use super::*;
use crate::read::result::encode;
use crate::updates::inbox::tests::event;
use crate::updates::Event;
use rete_engine::ids::BufferId;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

fn id(n: u64) -> SubId {
    SubId::from_bits(n)
}

/// Reads and holds the page's own size bookkeeping to the real encoding:
/// what it counted is the encoded size, plus the truncated flag it always
/// reserves when the page is not cut.
fn read_checked(targets: &mut [Target<'_>], detail: Detail, peek: bool) -> Value {
    let (value, used) = read_measured(targets, detail, peek);
    let len = encode(&value).len();
    let reserved = if value.get("truncated").is_some() {
        0
    } else {
        TRUNCATED_FLAG
    };
    assert_eq!(used, len + reserved, "counted size of {}", encode(&value));
    assert!(len <= BUDGET, "{len}");
    value
}

fn read_one(sub: &SubId, inbox: &mut Inbox, detail: Detail, peek: bool) -> Value {
    read_checked(&mut [Target { id: sub, inbox }], detail, peek)
}

fn push(inbox: &mut Inbox, e: Event) {
    let at = e.collected;
    inbox.push(Arc::new(e), at);
}

fn msg(buffer: &str, from: &str, text: &str) -> Event {
    event(buffer, from, text, Instant::now())
}

fn mention(buffer: &str, from: &str, text: &str) -> Event {
    Event {
        mention: true,
        ..msg(buffer, from, text)
    }
}

fn full(limit: usize) -> Detail {
    Detail::Full { limit }
}

fn event_texts(entry: &Value) -> Vec<String> {
    entry["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"]["payload"]["text"].as_str().unwrap().to_owned())
        .collect()
}

fn buffer(s: &str) -> BufferId {
    BufferId::from_client(s)
}

#[test]
fn nothing_to_report_is_an_empty_list() {
    assert_eq!(
        encode(&read_checked(&mut [], Detail::Digest, false)),
        r#"{"untrusted":true,"updates":[]}"#
    );
    let (a, b) = (id(1), id(2));
    let (mut ia, mut ib) = (Inbox::new(), Inbox::new());
    let mut targets = [
        Target {
            id: &a,
            inbox: &mut ia,
        },
        Target {
            id: &b,
            inbox: &mut ib,
        },
    ];
    for detail in [Detail::Digest, full(50)] {
        let out = read_checked(&mut targets, detail, false);
        assert_eq!(encode(&out), r#"{"untrusted":true,"updates":[]}"#);
    }
}

#[test]
fn digest_shape_is_exact() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    inbox.add_backfilled(&buffer("B3"), "#hist", 4);
    push(&mut inbox, mention("B1", "alice", "hi"));
    push(&mut inbox, msg("B1", "Bob", "yo"));
    push(&mut inbox, msg("B2", "dave", "hey"));
    push(&mut inbox, mention("B1", "ALICE", "again"));
    push(&mut inbox, msg("B1", "carol", "x"));
    inbox.add_withheld(&buffer("B2"), "#b2", 2);
    inbox.mark_evicted(&buffer("B4"), "#gone");
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    assert_eq!(
        encode(&out),
        concat!(
            r##"{"untrusted":true,"updates":[{"buffers":["##,
            r##"{"backfilled":4,"buffer":"B3","from":[],"mentions":0,"name":"#hist","new":0},"##,
            r##"{"buffer":"B1","from":["alice","Bob","carol"],"mentions":2,"name":"#b1","new":4},"##,
            r##"{"buffer":"B2","from":["dave"],"mentions":0,"name":"#b2","new":1,"withheld":2},"##,
            r##"{"buffer":"B4","evicted":true,"from":[],"mentions":0,"name":"#gone","new":0}"##,
            r##"],"subscription":"sub_000000000001"}]}"##
        )
    );
    assert!(
        !inbox.has_report(),
        "digest removed everything it summarised"
    );
    let again = read_one(&sub, &mut inbox, Detail::Digest, false);
    assert_eq!(
        encode(&again),
        r#"{"untrusted":true,"updates":[]}"#,
        "counters are reported once"
    );
}

#[test]
fn digest_names_ten_distinct_senders_ignoring_case() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    push(&mut inbox, msg("B1", "Nick0", "a"));
    push(&mut inbox, msg("B1", "NICK0", "a"));
    push(&mut inbox, msg("B1", "", "server notice"));
    for i in 1..12 {
        push(&mut inbox, msg("B1", &format!("nick{i}"), "a"));
    }
    push(&mut inbox, msg("B1", "nick0", "a"));
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    let row = &out["updates"][0]["buffers"][0];
    assert_eq!(row["new"], 15);
    assert_eq!(
        row["from"],
        json!([
            "Nick0", "nick1", "nick2", "nick3", "nick4", "nick5", "nick6", "nick7", "nick8",
            "nick9"
        ])
    );
}

#[test]
fn digest_counts_mentions() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    for i in 0..12 {
        let e = if i % 4 == 0 {
            mention("B1", "a", "m")
        } else {
            msg("B1", "a", "x")
        };
        push(&mut inbox, e);
    }
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    let row = &out["updates"][0]["buffers"][0];
    assert_eq!(
        (row["new"].as_u64(), row["mentions"].as_u64()),
        (Some(12), Some(3))
    );
}

#[test]
fn dropped_is_reported_once() {
    let sub = id(7);
    let mut inbox = Inbox::new();
    for i in 0..502 {
        push(&mut inbox, msg("B1", "a", &i.to_string()));
    }
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    assert_eq!(out["updates"][0]["dropped"], 2);
    assert_eq!(out["updates"][0]["buffers"][0]["new"], 500);
    assert_eq!(inbox.dropped(), 0);
    push(&mut inbox, msg("B1", "a", "later"));
    let out = read_one(&sub, &mut inbox, full(50), false);
    assert_eq!(out["updates"][0].get("dropped"), None);
    assert_eq!(event_texts(&out["updates"][0]), ["later"]);
}

#[test]
fn counter_only_entries_in_full_mode() {
    let sub = id(3);
    let mut inbox = Inbox::new();
    inbox.add_backfilled(&buffer("B1"), "#a", 2);
    inbox.add_backfilled(&buffer("B2"), "#b", 3);
    inbox.add_withheld(&buffer("B2"), "#b", 1);
    inbox.mark_evicted(&buffer("B2"), "#b");
    let out = read_one(&sub, &mut inbox, full(50), false);
    assert_eq!(
        encode(&out),
        r#"{"untrusted":true,"updates":[{"backfilled":5,"events":[],"evicted":true,"subscription":"sub_000000000003","truncated":false,"withheld":1}]}"#
    );
    assert!(!inbox.has_report());
}

#[test]
fn full_mode_pages_by_limit_oldest_first() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    for i in 1..=5 {
        push(&mut inbox, msg("B1", "a", &i.to_string()));
    }
    inbox.add_withheld(&buffer("B1"), "#b1", 1);
    let first = read_one(&sub, &mut inbox, full(2), false);
    let entry = &first["updates"][0];
    assert_eq!(event_texts(entry), ["1", "2"]);
    assert_eq!(entry["truncated"], true);
    assert_eq!(entry["withheld"], 1);
    assert_eq!(inbox.pending(), 3);
    let second = read_one(&sub, &mut inbox, full(2), false);
    assert_eq!(event_texts(&second["updates"][0]), ["3", "4"]);
    assert_eq!(second["updates"][0].get("withheld"), None, "reported once");
    let third = read_one(&sub, &mut inbox, full(2), false);
    assert_eq!(event_texts(&third["updates"][0]), ["5"]);
    assert_eq!(third["updates"][0]["truncated"], false);
    assert_eq!(third.get("truncated"), None);
    let fourth = read_one(&sub, &mut inbox, full(2), false);
    assert_eq!(fourth["updates"], json!([]));
}

#[test]
fn full_entry_is_exact() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    let e = msg("B1", "a", "hi");
    let ev = encode(&e.json);
    push(&mut inbox, e);
    let out = read_one(&sub, &mut inbox, full(50), false);
    assert_eq!(
        encode(&out),
        format!(
            r#"{{"untrusted":true,"updates":[{{"events":[{ev}],"subscription":"sub_000000000001","truncated":false}}]}}"#
        )
    );
}

#[test]
fn only_subscriptions_with_a_report_are_listed_in_order() {
    let (a, b, c) = (id(0xa), id(0xb), id(0xc));
    let (mut ia, mut ib, mut ic) = (Inbox::new(), Inbox::new(), Inbox::new());
    push(&mut ic, msg("B1", "a", "c"));
    push(&mut ia, msg("B1", "a", "a"));
    let mut targets = [
        Target {
            id: &a,
            inbox: &mut ia,
        },
        Target {
            id: &b,
            inbox: &mut ib,
        },
        Target {
            id: &c,
            inbox: &mut ic,
        },
    ];
    let out = read_checked(&mut targets, Detail::Digest, false);
    let subs: Vec<_> = out["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["subscription"].clone())
        .collect();
    assert_eq!(subs, [json!(a.as_str()), json!(c.as_str())]);
}

/// Events of about `size` bytes each.
fn big(text: &str, size: usize) -> Event {
    let overhead = msg("B1", "a", "").size;
    let mut body = text.to_owned();
    body.push_str(&"x".repeat(size - overhead - text.len()));
    msg("B1", "a", &body)
}

fn tag(text: &str) -> String {
    text.trim_end_matches('x').to_owned()
}

#[test]
fn the_budget_cuts_full_pages_and_nothing_is_lost() {
    let (a, b, c) = (id(1), id(2), id(3));
    let (mut ia, mut ib, mut ic) = (Inbox::new(), Inbox::new(), Inbox::new());
    for i in 0..20 {
        push(&mut ia, big(&format!("a{i}"), 5_000));
        push(&mut ib, big(&format!("b{i}"), 7_000));
    }
    ic.add_backfilled(&buffer("B9"), "#c", 1);
    let mut delivered = Vec::new();
    let mut reads = 0;
    loop {
        let mut targets = [
            Target {
                id: &a,
                inbox: &mut ia,
            },
            Target {
                id: &b,
                inbox: &mut ib,
            },
            Target {
                id: &c,
                inbox: &mut ic,
            },
        ];
        let out = read_checked(&mut targets, full(500), false);
        if reads == 0 {
            assert!(
                encode(&out).len() > BUDGET - 7_000,
                "the first page is full"
            );
            let entries = out["updates"].as_array().unwrap();
            // a fills the page and is cut; b fits nothing and is left out;
            // c (counters only) still fits after it.
            assert_eq!(entries.len(), 2);
            assert_eq!(entries[0]["truncated"], true);
            assert_eq!(entries[1]["subscription"], c.as_str());
            assert_eq!(entries[1]["backfilled"], 1);
            assert_eq!(out["truncated"], true);
            assert_eq!(ib.pending(), 20, "a left-out entry loses nothing");
        }
        let entries = out["updates"].as_array().unwrap().clone();
        if entries.is_empty() {
            break;
        }
        for entry in &entries {
            delivered.extend(event_texts(entry).iter().map(|t| tag(t)));
        }
        reads += 1;
        assert!(reads < 50);
    }
    let mut want: Vec<String> = (0..20).map(|i| format!("a{i}")).collect();
    want.extend((0..20).map(|i| format!("b{i}")));
    assert_eq!(delivered, want);
}

#[test]
fn the_budget_cuts_a_digest_to_its_oldest_buffers() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    let long = "n".repeat(200);
    inbox.add_backfilled(&buffer("C0"), "#first", 3);
    for i in 0..400 {
        let mut e = msg(&format!("B{i}"), "someone", "x");
        e.buffer_name = format!("#{long}{i}");
        push(&mut inbox, e);
    }
    inbox.add_backfilled(&buffer("C1"), "#last", 5);
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    let entry = &out["updates"][0];
    assert_eq!(entry["truncated"], true);
    assert_eq!(out.get("truncated"), None, "the entry was placed, only cut");
    let rows = entry["buffers"].as_array().unwrap();
    assert_eq!(rows[0]["buffer"], "C0");
    assert_eq!(rows[1]["buffer"], "B0");
    let summarised = rows.len() - 1;
    assert!(summarised > 100 && summarised < 400, "{summarised}");
    assert!(encode(&out).len() > BUDGET - 300);
    assert_eq!(inbox.pending(), 400 - summarised);
    let left: Vec<_> = inbox
        .counters_in_order()
        .iter()
        .map(|(b, _)| b.as_str().to_owned())
        .collect();
    assert_eq!(left, ["C1"], "only reported buffers' counters are reset");
    let mut total = summarised;
    let mut last = None;
    while inbox.has_report() {
        let out = read_one(&sub, &mut inbox, Detail::Digest, false);
        let rows = out["updates"][0]["buffers"].as_array().unwrap().clone();
        total += rows.iter().filter(|r| r["new"] == 1).count();
        last = rows.last().cloned();
    }
    assert_eq!(total, 400);
    let last = last.unwrap();
    assert_eq!(
        (last["buffer"].as_str(), last["backfilled"].as_u64()),
        (Some("C1"), Some(5))
    );
}

/// The frame around a lone event: a page of one entry with no counters.
fn lone_frame(sub: &SubId) -> usize {
    let page = json!({"truncated":true,"untrusted":true,"updates":[{"events":[],"subscription":sub.as_str(),"truncated":false}]});
    encode(&page).len()
}

#[test]
fn an_event_too_large_for_any_page_is_skipped() {
    let sub = id(1);
    let most = BUDGET - lone_frame(&sub);
    let mut inbox = Inbox::new();
    push(&mut inbox, big("fits", most));
    push(&mut inbox, big("huge", most + 1));
    push(&mut inbox, msg("B1", "a", "small"));

    let first = read_one(&sub, &mut inbox, full(500), false);
    // Measured with "truncated":false; the entry says true, one byte shorter.
    assert_eq!(
        encode(&first).len(),
        BUDGET - TRUNCATED_FLAG - 1,
        "the largest event fits exactly"
    );
    assert_eq!(
        event_texts(&first["updates"][0])
            .iter()
            .map(|t| tag(t))
            .collect::<Vec<_>>(),
        ["fits"]
    );
    assert_eq!(first["updates"][0]["truncated"], true);

    let peeked = read_one(&sub, &mut inbox, full(500), true);
    let entry = &peeked["updates"][0];
    assert_eq!(entry["skipped"], 1);
    assert_eq!(
        entry["truncated"], true,
        "peek leaves the skipped event pending"
    );
    assert_eq!(event_texts(entry), ["small"]);
    assert_eq!(inbox.pending(), 2);

    let second = read_one(&sub, &mut inbox, full(500), false);
    let entry = &second["updates"][0];
    assert_eq!(entry["skipped"], 1);
    assert_eq!(entry["truncated"], false);
    assert_eq!(event_texts(entry), ["small"]);
    assert!(!inbox.has_report(), "a skipped event is removed");
}

#[test]
fn skipped_events_do_not_count_toward_the_limit() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    push(&mut inbox, big("huge", BUDGET));
    push(&mut inbox, msg("B1", "a", "one"));
    push(&mut inbox, msg("B1", "a", "two"));
    let out = read_one(&sub, &mut inbox, full(1), false);
    let entry = &out["updates"][0];
    assert_eq!(
        (entry["skipped"].as_u64(), entry["truncated"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(event_texts(entry), ["one"]);
    assert_eq!(inbox.pending(), 1);
}

#[test]
fn peek_removes_nothing() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    for i in 0..503 {
        let e = if i % 2 == 0 {
            mention("B1", "a", &i.to_string())
        } else {
            msg("B2", "b", &i.to_string())
        };
        push(&mut inbox, e);
    }
    inbox.add_backfilled(&buffer("B1"), "#b1", 2);
    inbox.mark_evicted(&buffer("B2"), "#b2");
    for detail in [Detail::Digest, full(10)] {
        let a = read_one(&sub, &mut inbox, detail, true);
        let b = read_one(&sub, &mut inbox, detail, true);
        assert_eq!(a, b);
        assert_eq!((inbox.pending(), inbox.dropped()), (500, 3));
        assert_eq!(inbox.counters_in_order().len(), 2);
        assert_eq!(a["updates"][0]["dropped"], 3);
    }
    let peeked = read_one(&sub, &mut inbox, full(10), true);
    let taken = read_one(&sub, &mut inbox, full(10), false);
    assert_eq!(peeked, taken, "peek answers what a read would");
    assert_eq!(inbox.pending(), 490);
    assert_eq!(inbox.dropped(), 0);
}

#[test]
fn a_digest_that_does_not_fit_is_left_out_whole() {
    let (a, b) = (id(1), id(2));
    let (mut ia, mut ib) = (Inbox::new(), Inbox::new());
    for i in 0..400 {
        let mut e = msg(&format!("A{i}"), "someone", "x");
        e.buffer_name = format!("#{}{i}", "n".repeat(200));
        push(&mut ia, e);
    }
    let mut e = msg("B1", "other", "x");
    e.buffer_name = "#".repeat(1_000);
    push(&mut ib, e);
    ib.add_withheld(&buffer("B1"), "#b1", 1);
    let mut targets = [
        Target {
            id: &a,
            inbox: &mut ia,
        },
        Target {
            id: &b,
            inbox: &mut ib,
        },
    ];
    let out = read_checked(&mut targets, Detail::Digest, false);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["updates"].as_array().unwrap().len(), 1);
    assert_eq!(
        (ib.pending(), ib.counters_in_order().len()),
        (1, 1),
        "nothing taken from it"
    );
    let out = read_one(&b, &mut ib, Detail::Digest, false);
    assert_eq!(out["updates"][0]["buffers"][0]["withheld"], 1);
}

#[test]
fn a_digest_of_dropped_events_only() {
    let sub = id(1);
    let mut inbox = Inbox::new();
    push(
        &mut inbox,
        big("huge", crate::updates::inbox::MAX_BYTES + 1),
    );
    let out = read_one(&sub, &mut inbox, Detail::Digest, false);
    assert_eq!(
        encode(&out),
        r#"{"untrusted":true,"updates":[{"buffers":[],"dropped":1,"subscription":"sub_000000000001"}]}"#
    );
    assert!(!inbox.has_report());
}
