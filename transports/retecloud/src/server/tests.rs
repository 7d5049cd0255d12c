use super::*;
use crate::frame::{Ready, SendAck};

fn drain(c: &mut ServerConnection) -> Vec<ServerAction> {
    std::iter::from_fn(|| c.poll_action()).collect()
}

fn codes(actions: &[ServerAction]) -> Vec<(ErrorCode, bool)> {
    actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Send(ServerFrame::Error(e)) => Some((e.code, e.fatal)),
            _ => None,
        })
        .collect()
}

fn closed(actions: &[ServerAction]) -> Option<u16> {
    actions.iter().find_map(|a| match a {
        ServerAction::Close { status } => Some(*status),
        _ => None,
    })
}

const AUTH: &str =
    r#"{"type":"auth","version":1,"token":"rct1_x","resume":[{"stream":"libera.1","after":3}]}"#;

fn hello() -> Hello {
    Hello {
        version: 0,
        user: "alice".into(),
        heartbeat_ms: 0,
        max_frame_bytes: 0,
        networks: vec![],
    }
}

fn open() -> ServerConnection {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, AUTH);
    drain(&mut c);
    c.accept(2, hello());
    drain(&mut c);
    c
}

#[test]
fn auth_is_handed_out_then_hello_goes_out() {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, AUTH);
    let a = drain(&mut c);
    let [ServerAction::Authenticate(auth)] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(auth.token.expose(), "rct1_x");
    assert_eq!(auth.resume[0].after, 3);
    assert!(!c.is_open());
    c.accept(2, hello());
    let a = drain(&mut c);
    let [ServerAction::Send(ServerFrame::Hello(h))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(h.version, PROTOCOL_VERSION);
    assert_eq!(h.heartbeat_ms, 30_000);
    assert_eq!(h.max_frame_bytes, crate::MAX_FRAME_BYTES);
    assert!(c.is_open());
}

#[test]
fn every_bad_input_before_auth_is_a_fatal_error_and_nothing_is_handed_out() {
    let cases: &[(&str, ErrorCode)] = &[
        (r#"{"type":"ping","n":1}"#, ErrorCode::NotAuthenticated),
        (
            r#"{"type":"send","id":"s","network":"n","line":"PRIVMSG #a :x"}"#,
            ErrorCode::NotAuthenticated,
        ),
        ("not json", ErrorCode::MalformedFrame),
        (r#"{"type":"auth","version":1}"#, ErrorCode::MissingField),
        (
            r#"{"type":"auth","version":1,"token":"t","x":1}"#,
            ErrorCode::UnknownField,
        ),
        (
            r#"{"type":"auth","version":9,"token":"t"}"#,
            ErrorCode::UnsupportedVersion,
        ),
        (r#"{"type":"hello"}"#, ErrorCode::UnknownType),
    ];
    for (text, code) in cases {
        let mut c = ServerConnection::new(0, ServerConfig::default());
        c.handle_text(1, text);
        let a = drain(&mut c);
        assert_eq!(codes(&a), [(*code, true)], "{text}");
        assert_eq!(closed(&a), Some(close_status::POLICY_VIOLATION), "{text}");
        assert!(!a
            .iter()
            .any(|x| matches!(x, ServerAction::Authenticate(_) | ServerAction::Request(_))));
        c.handle_text(2, AUTH);
        assert!(drain(&mut c).is_empty(), "nothing is read after a close");
    }
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, &"x".repeat(70_000));
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::FrameTooLarge, true)]);
    assert_eq!(closed(&a), Some(close_status::MESSAGE_TOO_BIG));
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_binary(1);
    assert_eq!(codes(&drain(&mut c)), [(ErrorCode::BinaryMessage, true)]);
}

#[test]
fn the_unsupported_version_error_names_the_supported_ones() {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, r#"{"type":"auth","version":2,"token":"t"}"#);
    let a = drain(&mut c);
    let Some(ServerAction::Send(ServerFrame::Error(e))) = a.first() else {
        panic!("{a:?}")
    };
    assert_eq!(e.supported, Some(vec![PROTOCOL_VERSION]));
}

#[test]
fn no_auth_in_time_closes() {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    assert_eq!(c.poll_timeout(), Some(10_000));
    c.handle_timeout(9_999);
    assert!(drain(&mut c).is_empty());
    c.handle_timeout(10_000);
    assert_eq!(codes(&drain(&mut c)), [(ErrorCode::AuthTimeout, true)]);
    // The deadline holds while the service judges the token too.
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, AUTH);
    drain(&mut c);
    c.handle_timeout(10_000);
    assert_eq!(codes(&drain(&mut c)), [(ErrorCode::AuthTimeout, true)]);
    c.accept(10_001, hello());
    assert!(drain(&mut c).is_empty(), "too late");
}

#[test]
fn a_refused_token_closes() {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, AUTH);
    drain(&mut c);
    c.refuse(2, ErrorCode::TokenRevoked, "revoked");
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::TokenRevoked, true)]);
    assert!(c.is_closed());
}

#[test]
fn after_auth_a_bad_request_fails_alone() {
    let mut c = open();
    c.handle_text(
        3,
        r#"{"type":"send","id":"s1","network":"libera","line":"a\r\nb"}"#,
    );
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::BadLine, false)]);
    assert!(closed(&a).is_none());
    let Some(ServerAction::Send(ServerFrame::Error(e))) = a.first() else {
        panic!()
    };
    assert_eq!(e.id, Some(RequestId("s1".into())));
    c.handle_text(
        4,
        r#"{"type":"send","id":"s2","network":"libera","line":"PRIVMSG #a :ok"}"#,
    );
    let a = drain(&mut c);
    assert!(
        matches!(a.as_slice(), [ServerAction::Request(ClientFrame::Send(s))] if s.id.0 == "s2"),
        "{a:?}"
    );
    // A frame that cannot be read at all still closes.
    c.handle_text(5, "{");
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::MalformedFrame, true)]);
    assert!(c.is_closed());
}

#[test]
fn a_second_auth_is_refused() {
    let mut c = open();
    c.handle_text(3, AUTH);
    assert_eq!(
        codes(&drain(&mut c)),
        [(ErrorCode::AlreadyAuthenticated, true)]
    );
}

#[test]
fn pings_are_answered_and_heartbeats_kept() {
    let mut c = open();
    c.handle_text(3, r#"{"type":"ping","n":5}"#);
    assert_eq!(
        drain(&mut c),
        [ServerAction::Send(ServerFrame::Pong(Pong { n: 5 }))]
    );
    assert_eq!(c.poll_timeout(), Some(30_003));
    c.handle_timeout(30_003);
    assert_eq!(
        drain(&mut c),
        [ServerAction::Send(ServerFrame::Ping(Ping { n: 1 }))]
    );
    c.handle_timeout(60_003);
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::HeartbeatMissed, true)], "{a:?}");
}

#[test]
fn a_token_ack_must_match_the_rotation_in_flight() {
    let mut c = open();
    c.rotate(3, 4, Token::new("rct1_new"), 300_000);
    let a = drain(&mut c);
    assert!(
        matches!(a.as_slice(), [ServerAction::Send(ServerFrame::TokenRotate(r))] if r.generation == 4)
    );
    c.handle_text(4, r#"{"type":"token_ack","generation":3}"#);
    assert_eq!(
        codes(&drain(&mut c)),
        [(ErrorCode::RotationNotPending, false)]
    );
    c.handle_text(5, r#"{"type":"token_ack","generation":4}"#);
    assert_eq!(drain(&mut c), [ServerAction::TokenAcknowledged(4)]);
    c.handle_text(6, r#"{"type":"token_ack","generation":4}"#);
    assert_eq!(
        codes(&drain(&mut c)),
        [(ErrorCode::RotationNotPending, false)],
        "only once"
    );
}

#[test]
fn the_services_frames_pass_through_and_a_fatal_one_closes() {
    let mut c = open();
    c.send(3, ServerFrame::Ready(Ready {}));
    c.refuse_request(
        3,
        RequestId("f1".into()),
        ErrorCode::UnknownStream,
        "no such stream",
    );
    let a = drain(&mut c);
    assert_eq!(a[0], ServerAction::Send(ServerFrame::Ready(Ready {})));
    assert_eq!(codes(&a), [(ErrorCode::UnknownStream, false)]);
    c.shut_down(4);
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::ShuttingDown, true)]);
    assert_eq!(closed(&a), Some(close_status::GOING_AWAY));
    c.send(
        5,
        ServerFrame::SendAck(SendAck {
            id: RequestId("x".into()),
            duplicate: false,
        }),
    );
    assert!(drain(&mut c).is_empty());
}

#[test]
fn sent_ids_are_remembered_for_their_time_and_bounded() {
    let mut ids = SentIds::new(SENT_ID_TTL_MS, 3);
    let id = |s: &str| RequestId(s.into());
    assert!(!ids.was_sent(0, &id("a")));
    ids.record(0, id("a"));
    assert!(ids.was_sent(SENT_ID_TTL_MS - 1, &id("a")));
    assert!(
        !ids.was_sent(SENT_ID_TTL_MS, &id("a")),
        "forgotten after its time"
    );
    for (t, s) in [(1, "b"), (2, "c"), (3, "d"), (4, "e")] {
        ids.record(SENT_ID_TTL_MS + t, id(s));
    }
    assert!(
        !ids.was_sent(SENT_ID_TTL_MS + 5, &id("b")),
        "the oldest past the capacity"
    );
    assert!(ids.was_sent(SENT_ID_TTL_MS + 5, &id("e")));
}

#[test]
fn debug_shows_no_token() {
    let mut c = ServerConnection::new(0, ServerConfig::default());
    c.handle_text(1, AUTH);
    let shown = format!("{:?}", c.poll_action());
    assert!(!shown.contains("rct1_x"), "{shown}");
}

#[test]
fn requests_past_the_allowance_are_refused_and_not_handed_out() {
    let config = ServerConfig {
        request_burst: 3,
        request_interval_ms: 100,
        ..ServerConfig::default()
    };
    let mut c = ServerConnection::new(0, config);
    c.handle_text(1, AUTH);
    drain(&mut c);
    c.accept(2, hello());
    drain(&mut c);
    let fetch = |n: u32| {
        format!(r##"{{"type":"fetch","id":"f{n}","stream":"libera.1","buffer":"#a","limit":5}}"##)
    };
    for n in 0..3 {
        c.handle_text(10, &fetch(n));
    }
    let a = drain(&mut c);
    assert!(a.iter().all(|x| matches!(x, ServerAction::Request(_))) && a.len() == 3);
    c.handle_text(10, &fetch(3));
    let a = drain(&mut c);
    assert_eq!(codes(&a), [(ErrorCode::RateLimited, false)]);
    let Some(ServerAction::Send(ServerFrame::Error(e))) = a.first() else {
        panic!()
    };
    assert_eq!(e.id, Some(RequestId("f3".into())));
    assert!(!c.is_closed());
    // Pings are not requests: answered while the allowance is spent.
    c.handle_text(20, r#"{"type":"ping","n":1}"#);
    assert_eq!(
        drain(&mut c),
        [ServerAction::Send(ServerFrame::Pong(Pong { n: 1 }))]
    );
    // One more per interval, never more than the burst.
    c.handle_text(110, &fetch(4));
    c.handle_text(110, &fetch(5));
    let a = drain(&mut c);
    assert!(matches!(a[0], ServerAction::Request(_)));
    assert_eq!(codes(&a[1..]), [(ErrorCode::RateLimited, false)]);
    c.handle_text(100_000, &fetch(6));
    for n in 7..10 {
        c.handle_text(100_000, &fetch(n));
    }
    let a = drain(&mut c);
    assert_eq!(
        a.iter()
            .filter(|x| matches!(x, ServerAction::Request(_)))
            .count(),
        3
    );
    assert_eq!(codes(&a), [(ErrorCode::RateLimited, false)]);
}
