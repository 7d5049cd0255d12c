//! Step tests for a bridged session (ReteCloud): the service holds the IRC
//! connection, so the engine sends only what a person or an agent asks for.

use super::*;
use crate::buffer::BufferKind;
use crate::clock::{Mono, Now, UnixMillis};
use crate::ids::SessionId;
use crate::row::Payload;

fn bridged() -> Session {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    let mut c = SessionConfig::new(id, "cloud", "rete");
    c.channels = vec![ChannelSpec {
        name: "#rete".into(),
        key: None,
    }];
    c.password = Some("server-pass".into());
    c.bridged = true;
    Session::new(c)
}

fn now(ms: u64) -> Now {
    Now {
        mono: Mono(ms),
        wall: UnixMillis(1_790_769_600_000 + ms as i64),
    }
}

/// Every line the engine would write at `at`, unpaced or not.
fn sent(s: &mut Session, at: u64) -> Vec<String> {
    std::iter::from_fn(|| s.poll_transmit(Mono(at))).collect()
}

/// The sync a service sends: welcome, our JOIN, names.
fn attach(s: &mut Session) {
    s.handle_connecting(now(1_000), false);
    s.handle_connected(now(1_000), "127.0.0.1:8080", None, [7; 18]);
    for l in [
        ":rete-cloud 001 rete :Welcome",
        ":rete!u@h JOIN #rete",
        ":rete-cloud 353 rete = #rete :rete bob",
        ":rete-cloud 366 rete #rete :End of /NAMES list.",
    ] {
        s.handle_line(now(1_000), l);
    }
}

#[test]
fn registration_comes_from_the_sync_and_nothing_is_sent_for_it() {
    let mut s = bridged();
    s.handle_connecting(now(1_000), false);
    s.handle_connected(now(1_000), "127.0.0.1:8080", None, [7; 18]);
    assert_eq!(
        sent(&mut s, 1_000),
        Vec::<String>::new(),
        "no CAP, PASS, NICK, USER"
    );
    assert_eq!(s.view().state(), ConnState::Connecting);
    s.handle_line(now(1_000), ":rete-cloud 001 rete :Welcome");
    assert_eq!(s.view().state(), ConnState::Connected);
    s.handle_line(now(1_000), ":rete!u@h JOIN #rete");
    assert_eq!(
        sent(&mut s, 1_000),
        Vec::<String>::new(),
        "no JOIN after 001, no WHO or CHATHISTORY after our JOIN"
    );
}

#[test]
fn protocol_answers_and_timers_stay_with_the_service() {
    let mut s = bridged();
    attach(&mut s);
    s.handle_line(now(2_000), "PING :irc.example");
    s.handle_line(now(2_000), ":bob!b@h PRIVMSG rete :\u{1}VERSION\u{1}");
    s.handle_line(now(2_000), ":bob!b@h PRIVMSG rete :\u{1}PING 42\u{1}");
    // An hour of timers: no WHO poll, no lag probe.
    for t in (2_000..3_600_000).step_by(10_000) {
        s.handle_timeout(now(t));
        assert_eq!(sent(&mut s, t), Vec::<String>::new(), "nothing at {t} ms");
    }
    assert_eq!(s.poll_timeout(Mono(3_600_000)), None);
}

#[test]
fn the_persons_lines_go_out_unpaced_and_are_not_echoed_locally() {
    let mut s = bridged();
    attach(&mut s);
    let rows_before = s
        .view()
        .buffer(s.view().find_buffer(BufferKind::Channel, "#rete").unwrap())
        .unwrap()
        .display()
        .count();
    for i in 0..20 {
        s.commands().privmsg("#rete", &format!("line {i}")).unwrap();
    }
    s.commands().join("#more", None).unwrap();
    let out = sent(&mut s, 1_000);
    assert_eq!(out.len(), 21, "all at once, no flood pacing: {out:?}");
    assert_eq!(out[0], "PRIVMSG #rete :line 0");
    assert_eq!(out[20], "JOIN #more");
    let v = s.view();
    let chan = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
    assert_eq!(
        v.buffer(&chan).unwrap().display().count(),
        rows_before,
        "the stream carries our message back; no local echo"
    );
    // The stream's copy is the one row.
    s.handle_line(now(1_100), ":rete!u@h PRIVMSG #rete :line 0");
    let v = s.view();
    let last = v
        .buffer(&chan)
        .unwrap()
        .display()
        .last()
        .unwrap()
        .payload
        .clone();
    assert_eq!(
        last,
        Payload::Privmsg {
            text: "line 0".into()
        }
    );
}

#[test]
fn smsg_is_refused_and_sends_nothing() {
    let mut s = bridged();
    attach(&mut s);
    let e = s.commands().secret_privmsg("#rete", "hunter2").unwrap_err();
    assert!(e.to_string().contains("ReteCloud"), "{e}");
    assert_eq!(sent(&mut s, 1_000), Vec::<String>::new());
}

#[test]
fn the_services_who_poll_is_absorbed() {
    let mut s = bridged();
    attach(&mut s);
    let before = s
        .view()
        .buffer(s.view().server_buffer())
        .unwrap()
        .display()
        .count();
    s.handle_line(
        now(2_000),
        ":srv 352 rete #rete b h srv bob G :0 Bob Example",
    );
    s.handle_line(now(2_000), ":srv 315 rete #rete :End of /WHO list.");
    let v = s.view();
    assert_eq!(
        v.buffer(v.server_buffer()).unwrap().display().count(),
        before,
        "no rows for the service's WHO"
    );
}

#[test]
fn an_upstream_outage_shows_reconnecting_until_the_next_welcome() {
    let mut s = bridged();
    attach(&mut s);
    s.handle_upstream_down(now(2_000), "Ping timeout");
    assert_eq!(s.view().state(), ConnState::Reconnecting);
    assert_eq!(sent(&mut s, 2_000), Vec::<String>::new());
    s.handle_line(now(3_000), ":irc.example 001 rete :Welcome back");
    assert_eq!(s.view().state(), ConnState::Connected);
    assert_eq!(
        sent(&mut s, 3_000),
        Vec::<String>::new(),
        "the service rejoins"
    );
}

#[test]
fn transport_secrets_are_scanned_and_replaced() {
    let mut s = bridged();
    s.set_transport_secrets(["rct1_aaaaaaaaaaaaaaaa"]);
    assert!(s
        .view()
        .secrets()
        .contains_secret("x rct1_AAAAAAAAAAAAAAAA y"));
    assert!(
        s.view().secrets().contains_secret("server-pass"),
        "the configured ones stay"
    );
    s.set_transport_secrets(["rct1_bbbbbbbbbbbbbbbb"]);
    assert!(!s.view().secrets().contains_secret("rct1_aaaaaaaaaaaaaaaa"));
    assert!(s.view().secrets().contains_secret("rct1_bbbbbbbbbbbbbbbb"));
}

#[test]
fn a_learned_secret_outlives_the_transport_secrets_being_replaced() {
    let mut s = bridged();
    assert!(!s.view().secrets().contains_secret("sasl-pw-typed-later"));
    s.learn_secret("sasl-pw-typed-later");
    s.set_transport_secrets(["rct1_bbbbbbbbbbbbbbbb"]);
    assert!(s
        .view()
        .secrets()
        .contains_secret("PRIVMSG #x :sasl-pw-typed-later"));
    assert!(s.view().secrets().contains_secret("rct1_bbbbbbbbbbbbbbbb"));
}

#[test]
fn a_transport_refusal_stops_reconnecting_and_says_why() {
    let mut s = bridged();
    attach(&mut s);
    s.note_transport_refused("the service refused the token");
    s.handle_disconnected(now(2_000), "auth_failed");
    assert_eq!(
        s.view().registration_refused(),
        Some("the service refused the token")
    );
}

#[test]
fn the_syncs_channel_modes_are_state_and_make_no_row() {
    let mut s = bridged();
    attach(&mut s);
    s.handle_line(now(1_000), ":rete-cloud 324 rete #rete +lntk 10 hunter22");
    s.handle_line(now(1_000), ":rete-cloud 329 rete #rete 1790000000");
    assert_eq!(sent(&mut s, 1_000), Vec::<String>::new());
    let v = s.view();
    let id = v.find_buffer(BufferKind::Channel, "#rete").unwrap().clone();
    let c = v.channel(&id).unwrap();
    assert_eq!(c.modes.letters.keys().collect::<String>(), "klnt");
    assert!(c.modes.has_key());
    assert_eq!(c.created_at, Some(1_790_000_000));
    let server = v.buffers().next().unwrap().id().clone();
    let texts: Vec<String> = v
        .buffer(&server)
        .unwrap()
        .display()
        .map(|r| format!("{:?}", r.payload))
        .collect();
    assert!(!texts.iter().any(|t| t.contains("hunter22")), "{texts:?}");
}

/// The texts of the channel's PRIVMSG rows, in display order.
fn said_in(s: &Session, chan: &str) -> Vec<String> {
    let v = s.view();
    let id = v.find_buffer(BufferKind::Channel, chan).unwrap();
    v.buffer(id)
        .unwrap()
        .display()
        .filter_map(|r| match &r.payload {
            Payload::Privmsg { text } => Some(text.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn fetched_older_rows_sort_before_held_rows_of_the_same_millisecond() {
    let mut s = bridged();
    attach(&mut s);
    let t = "@time=2026-12-03T10:00:00.500Z";
    // The newest rows, fetched at attach as plain history, then a live one.
    s.handle_line(now(2_000), "BATCH +n1 chathistory #rete");
    for text in ["held 1", "held 2"] {
        s.handle_line(
            now(2_000),
            &format!("{t};batch=n1 :bob!b@h PRIVMSG #rete :{text}"),
        );
    }
    s.handle_line(now(2_000), "BATCH -n1");
    // Rows from before "held 1", one of them in its very millisecond:
    // older, so before it, though it arrives after.
    let older = |s: &mut Session, reference: &str, texts: &[&str]| {
        s.handle_line(now(3_000), &format!("BATCH +{reference} chathistory #rete"));
        s.mark_batch_older(reference);
        s.handle_line(
            now(3_000),
            &format!(
                "@time=2026-12-03T10:00:00.100Z;batch={reference} :bob!b@h PRIVMSG #rete :{}",
                texts[0]
            ),
        );
        for text in &texts[1..] {
            s.handle_line(
                now(3_000),
                &format!("{t};batch={reference} :bob!b@h PRIVMSG #rete :{text}"),
            );
        }
        s.handle_line(now(3_000), &format!("BATCH -{reference}"));
    };
    older(&mut s, "o1", &["old 1", "old 2", "old 3"]);
    assert_eq!(
        said_in(&s, "#rete"),
        ["old 1", "old 2", "old 3", "held 1", "held 2"]
    );
    // A second fetch goes further back: before the first one's rows of the
    // same millisecond too (.100 and .500).
    older(&mut s, "o2", &["older 1", "older 2"]);
    assert_eq!(
        said_in(&s, "#rete"),
        ["older 1", "old 1", "older 2", "old 2", "old 3", "held 1", "held 2"]
    );
    // Marking a batch that is not open, or not history, changes nothing:
    // history of the held rows' millisecond, in a batch opened again under
    // the closed reference or nested in a marked netsplit batch, goes after
    // the held rows, where its arrival puts it (marked older, it would go
    // before them).
    s.mark_batch_older("o1");
    s.handle_line(now(4_000), "BATCH +o1 chathistory #rete");
    s.handle_line(
        now(4_000),
        &format!("{t};batch=o1 :bob!b@h PRIVMSG #rete :again"),
    );
    s.handle_line(now(4_000), "BATCH -o1");
    s.handle_line(now(4_000), "BATCH +x1 netsplit a b");
    s.mark_batch_older("x1");
    s.handle_line(now(4_000), "@batch=x1 BATCH +x2 chathistory #rete");
    s.handle_line(
        now(4_000),
        &format!("{t};batch=x2 :bob!b@h PRIVMSG #rete :nested"),
    );
    s.handle_line(now(4_000), "BATCH -x2");
    s.handle_line(now(4_000), "BATCH -x1");
    assert_eq!(
        said_in(&s, "#rete"),
        ["older 1", "old 1", "older 2", "old 2", "old 3", "held 1", "held 2", "again", "nested"]
    );
}
