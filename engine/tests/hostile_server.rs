//! A hostile server, as generated lines fed to a registered session: random bytes, lines
//! of 8 KB, malformed and flooding tags, CAP and BATCH abuse, NAMES floods, private
//! messages from thousands of nicks, numerics with missing or absurd parameters.
//!
//! Whatever arrives, the engine never panics, keeps the session registered, stays within
//! its bounds (query buffers, rows per buffer, open batches) and sends a bounded number
//! of lines per line received (ARCHITECTURE.md, "What the network can make us send").
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use rete_engine::buffer::BufferKind;
use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::event::ConnState;
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, Session, SessionConfig};
use rete_engine::state_dump::Section;

const WALL: i64 = 1_790_769_600_000;
/// On average, the most lines one received line may make the session send: a PONG, a CTCP
/// answer, a WHO for a channel just joined, a NICK retry, the joins a repeated 001 asks
/// for — never a stream. Counted over a whole case, since the throttler moves lines
/// between the moments they are drained.
const MOST_SENT_PER_LINE: usize = 4;
/// Small bounds, so a case reaches them.
const CAPACITY: usize = 50;
const MAX_QUERIES: usize = 20;

fn now(ms: u64) -> Now {
    Now {
        mono: Mono(1_000 + ms),
        wall: UnixMillis(WALL + ms as i64),
    }
}

/// A session registered on a server that offers the capabilities a hostile one abuses.
fn registered() -> Session {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    let mut config = SessionConfig::new(id, "hostile", "rete");
    config.buffer_capacity = CAPACITY;
    config.max_query_buffers = MAX_QUERIES;
    config.channels = vec![ChannelSpec {
        name: "#c".into(),
        key: None,
    }];
    let mut s = Session::new(config);
    s.handle_connected(now(0), "127.0.0.1:6667", None, [7; 18]);
    for line in [
        ":srv CAP * LS :message-tags batch server-time echo-message draft/chathistory multi-prefix",
        ":srv CAP * ACK :message-tags batch server-time echo-message draft/chathistory multi-prefix",
        ":srv 001 rete :Welcome",
        ":srv 005 rete WHOX NETWORK=Test CHANTYPES=# PREFIX=(ov)@+ :are supported",
        ":rete!u@h JOIN #c",
        ":srv 366 rete #c :End of /NAMES list.",
    ] {
        s.handle_line(now(0), line);
    }
    drain(&mut s, 0);
    assert_eq!(s.view().state(), ConnState::Connected);
    s
}

fn drain(s: &mut Session, ms: u64) -> usize {
    std::iter::from_fn(|| s.poll_transmit(now(ms).mono)).count()
}

fn nick() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z][a-zA-Z0-9_]{0,12}",
        Just("rete".to_owned()),
        Just("RETE".to_owned()),
        Just(String::new()),
        "\\PC{1,20}",
    ]
}

fn param() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("#c".to_owned()),
        Just("rete".to_owned()),
        Just("*".to_owned()),
        Just(":".to_owned()),
        "[#&][a-z]{1,6}",
        "[^ \r\n\0]{0,30}",
        "[0-9]{1,25}",
        Just("x".repeat(600)),
    ]
}

fn tags() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("@;;= ".to_owned()),
        Just("@=x ".to_owned()),
        Just("@a=\\ ".to_owned()),
        Just("@time=not-a-time ".to_owned()),
        Just("@time=2026-01-01T00:00:00.000Z;msgid=m1 ".to_owned()),
        Just("@batch=nosuch ".to_owned()),
        (1..900usize).prop_map(|n| {
            let flood: Vec<String> = (0..n).map(|i| format!("k{i}=v{i}")).collect();
            format!("@{} ", flood.join(";"))
        }),
        "@[^ \r\n\0]{1,200} ",
    ]
}

const COMMANDS: &[&str] = &[
    "PRIVMSG",
    "NOTICE",
    "JOIN",
    "PART",
    "KICK",
    "MODE",
    "TOPIC",
    "NICK",
    "QUIT",
    "CAP",
    "BATCH",
    "353",
    "366",
    "005",
    "001",
    "432",
    "433",
    "AUTHENTICATE",
    "PING",
    "ERROR",
    "900",
    "903",
    "904",
    "332",
    "333",
    "352",
    "354",
    "315",
    "INVITE",
    "TAGMSG",
    "FAIL",
    "CHGHOST",
    "ACCOUNT",
    "AWAY",
    "SETNAME",
    "324",
    "329",
    "401",
    "421",
    "437",
    "471",
    "473",
    "474",
    "475",
    "477",
    "AUTHENTICATE",
    "CHATHISTORY",
    "MARKREAD",
];

/// One structured hostile line.
fn structured() -> impl Strategy<Value = String> {
    (
        tags(),
        prop::option::of(nick()),
        prop::sample::select(COMMANDS),
        prop::collection::vec(param(), 0..18),
        prop::option::of("[^\r\n\0]{0,400}"),
    )
        .prop_map(|(tags, source, command, params, trailing)| {
            let mut line = tags;
            if let Some(nick) = source {
                line.push_str(&format!(":{nick}!u@h "));
            }
            line.push_str(command);
            for p in params {
                line.push(' ');
                line.push_str(&p);
            }
            if let Some(t) = trailing {
                line.push_str(" :");
                line.push_str(&t);
            }
            line
        })
}

/// A line of several kinds a hostile server sends in bulk.
fn abuse() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        // Batches opened and never closed, and closes of batches never opened.
        (1..200usize).prop_map(|n| (0..n)
            .map(|i| if i % 3 == 0 {
                format!(":srv BATCH -b{i}")
            } else {
                format!(":srv BATCH +b{i} chathistory #c")
            })
            .collect()),
        // NAMES for thousands of nicks in one channel.
        (1..30usize).prop_map(|lines| (0..lines)
            .map(|l| {
                let nicks: Vec<String> = (0..200).map(|i| format!("@n{l}x{i}")).collect();
                format!(":srv 353 rete = #c :{}", nicks.join(" "))
            })
            .collect()),
        // Private messages from many nicks: one query buffer each, up to the bound.
        (1..200usize).prop_map(|n| (0..n)
            .map(|i| format!(":q{i}!u@h PRIVMSG rete :hello {i}"))
            .collect()),
        // CAP abuse: LS, NEW, DEL, ACK and NAK of nonsense, after registration.
        prop::collection::vec(
            ("(LS|NEW|DEL|ACK|NAK|LIST|END|\\*)", "[^\r\n\0]{0,300}")
                .prop_map(|(sub, caps)| format!(":srv CAP rete {sub} :{caps}")),
            1..50,
        ),
        // A flood of the channel's messages, past its capacity.
        (1..300usize).prop_map(|n| (0..n)
            .map(|i| format!(":x!u@h PRIVMSG #c :flood {i}"))
            .collect()),
    ]
}

/// Random bytes, as the transport would hand them on (lossy UTF-8, up to its 8,703-byte
/// line limit).
fn bytes() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        prop::collection::vec(any::<u8>(), 8_000..8_703),
    ]
    .prop_map(|b| {
        String::from_utf8_lossy(&b)
            .replace(['\r', '\n', '\0'], " ")
            .to_string()
    })
}

fn input() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            6 => structured().prop_map(|l| vec![l]),
            2 => bytes().prop_map(|l| vec![l]),
            2 => abuse(),
        ],
        1..40,
    )
    .prop_map(|groups| groups.into_iter().flatten().collect())
}

fn check_bounds(s: &Session) -> Result<(), TestCaseError> {
    let view = s.view();
    prop_assert_eq!(view.state(), ConnState::Connected, "the session was lost");
    let queries = view
        .buffers()
        .filter(|b| b.kind() == BufferKind::Query)
        .count();
    prop_assert!(queries <= MAX_QUERIES, "{} query buffers", queries);
    for b in view.buffers() {
        prop_assert!(b.len() <= CAPACITY, "{} rows in {}", b.len(), b.name());
    }
    let batches = view
        .state_index()
        .into_iter()
        .find(|e| e.section == Section::Batches)
        .map_or(0, |e| e.count);
    prop_assert!(batches <= 64, "{} open batches", batches);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_hostile_server_never_breaks_or_grows_the_session(lines in input()) {
        let mut s = registered();
        let mut sent = 0;
        for (i, line) in lines.iter().enumerate() {
            let at = 10 * i as u64;
            s.handle_line(now(at), line);
            // A server that never answers: timers fire as they come due.
            s.handle_timeout(now(at + 5));
            sent += drain(&mut s, at + 5);
        }
        // Whatever the throttler still holds goes out too.
        let end = 10 * lines.len() as u64 + 600_000;
        s.handle_timeout(now(end));
        sent += drain(&mut s, end);
        prop_assert!(
            sent <= MOST_SENT_PER_LINE * lines.len() + 8,
            "{} lines sent for {} received", sent, lines.len()
        );
        check_bounds(&s)?;
    }
}

/// 100,000 nicks in one channel's NAMES, then 10,000 private messages from as many nicks:
/// the session keeps answering, within its bounds.
#[test]
fn names_for_a_hundred_thousand_nicks_and_ten_thousand_queries() {
    let mut s = registered();
    for l in 0..500 {
        let nicks: Vec<String> = (0..200).map(|i| format!("n{l}x{i}")).collect();
        s.handle_line(now(1), &format!(":srv 353 rete = #c :{}", nicks.join(" ")));
    }
    s.handle_line(now(1), ":srv 366 rete #c :End of /NAMES list.");
    for i in 0..10_000 {
        s.handle_line(now(2), &format!(":p{i}!u@h PRIVMSG rete :hi"));
    }
    s.handle_line(now(3), "PING :still-here");
    let sent: Vec<String> = std::iter::from_fn(|| s.poll_transmit(now(3).mono)).collect();
    assert!(
        sent.iter()
            .any(|l| l.starts_with("PONG") && l.ends_with("still-here")),
        "{sent:?}"
    );
    let members = s
        .view()
        .buffers()
        .find(|b| b.name() == "#c")
        .map(|b| b.id().clone())
        .and_then(|id| s.view().members(&id))
        .map_or(0, |m| m.len());
    assert!(members >= 100_000, "{members} members");
    check_bounds(&s).unwrap();
}
