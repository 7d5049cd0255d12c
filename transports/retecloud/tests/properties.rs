//! ReteCloud properties over generated frames and schedules: frames
//! round-trip through the codec; no frame carrying a secret shows it once
//! masked (whole, or cut anywhere); the service's feed and the client's
//! state machine together deliver every missed row exactly once, in order,
//! and report every row the store evicted before it could be sent.
// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use rete_cloud_protocol::client::{Action, ClientConfig, CloudClient};
use rete_cloud_protocol::config::{ConfigEntry, ConfigShown, SaslMechanism, SecretState};
use rete_cloud_protocol::cursor::Offer;
use rete_cloud_protocol::frame::*;
use rete_cloud_protocol::replay::{plan_resume, NextRead, ResumePlan, StoreExtent, StreamFeed};
use rete_cloud_protocol::{
    decode_client, decode_server, encode_client, encode_server, ErrorCode, IrcLine, Secret, Token,
    PROTOCOL_VERSION,
};
use rete_redact::mask_retecloud_frame;

// ---- generators ----

fn id_text() -> impl Strategy<Value = String> {
    "[a-z0-9._:-]{1,20}"
}

fn word() -> impl Strategy<Value = String> {
    "[a-z]{1,12}"
}

/// An IRC line of ordinary traffic (lowercase words, no credential verb).
fn plain_line() -> impl Strategy<Value = IrcLine> {
    ("[a-z]{1,8}", "[a-z #]{0,40}")
        .prop_map(|(nick, text)| IrcLine::new(format!(":{nick}!u@h PRIVMSG #rete :{text}")))
}

fn request_id() -> impl Strategy<Value = RequestId> {
    id_text().prop_map(RequestId)
}
fn stream_id() -> impl Strategy<Value = StreamId> {
    id_text().prop_map(StreamId)
}
fn network_id() -> impl Strategy<Value = NetworkId> {
    id_text().prop_map(NetworkId)
}

fn config_entry(secret: BoxedStrategy<String>) -> impl Strategy<Value = ConfigEntry> {
    prop_oneof![
        word().prop_map(ConfigEntry::Nick),
        word().prop_map(ConfigEntry::Username),
        "[a-z ]{0,20}".prop_map(ConfigEntry::Realname),
        proptest::collection::vec("#[a-z]{1,10}", 0..4).prop_map(ConfigEntry::Channels),
        prop_oneof![
            Just(None),
            Just(Some(SaslMechanism::Plain)),
            Just(Some(SaslMechanism::ScramSha256))
        ]
        .prop_map(ConfigEntry::SaslMechanism),
        proptest::option::of(word()).prop_map(ConfigEntry::SaslUsername),
        proptest::option::of(secret.clone().prop_map(Secret::new))
            .prop_map(ConfigEntry::SaslPassword),
        proptest::option::of(secret.prop_map(Secret::new)).prop_map(ConfigEntry::ServerPassword),
    ]
}

/// Distinct keys, as the codec requires.
fn config_entries(secret: BoxedStrategy<String>) -> impl Strategy<Value = Vec<ConfigEntry>> {
    proptest::collection::vec(config_entry(secret), 1..6).prop_map(|mut v| {
        let mut seen = Vec::new();
        v.retain(|e| {
            let fresh = !seen.contains(&e.key());
            seen.push(e.key());
            fresh
        });
        v
    })
}

fn ordinary_secret() -> BoxedStrategy<String> {
    "[a-z]{1,12}".boxed()
}

fn client_frame() -> impl Strategy<Value = ClientFrame> {
    prop_oneof![
        (
            1u32..3,
            "[a-z0-9_]{1,30}",
            proptest::option::of("[a-z/.0-9]{1,20}"),
            proptest::collection::btree_map(id_text(), any::<u64>(), 0..4)
        )
            .prop_map(|(version, token, client, resume)| ClientFrame::Auth(Auth {
                version,
                token: Token::new(token),
                client,
                resume: resume
                    .into_iter()
                    .map(|(s, after)| ResumePoint {
                        stream: StreamId(s),
                        after
                    })
                    .collect(),
            })),
        (
            request_id(),
            stream_id(),
            "[#a-z]{1,20}",
            proptest::option::of(prop_oneof![
                "[a-zA-Z0-9]{1,20}".prop_map(Before::Msgid),
                any::<u64>().prop_map(Before::Time),
                any::<u64>().prop_map(Before::Seq),
            ]),
            1u32..=MAX_FETCH_LIMIT
        )
            .prop_map(
                |(id, stream, buffer, before, limit)| ClientFrame::Fetch(Fetch {
                    id,
                    stream,
                    buffer,
                    before,
                    limit
                })
            ),
        (request_id(), network_id(), plain_line())
            .prop_map(|(id, network, line)| ClientFrame::Send(Send { id, network, line })),
        (
            request_id(),
            network_id(),
            config_entries(ordinary_secret())
        )
            .prop_map(|(id, network, entries)| {
                ClientFrame::ConfigUpdate(ConfigUpdate {
                    id,
                    network,
                    entries,
                })
            }),
        any::<u64>().prop_map(|generation| ClientFrame::TokenAck(TokenAck { generation })),
        any::<u64>().prop_map(|n| ClientFrame::Ping(Ping { n })),
        any::<u64>().prop_map(|n| ClientFrame::Pong(Pong { n })),
    ]
}

fn state() -> impl Strategy<Value = NetworkState> {
    prop_oneof![
        Just(NetworkState::Connected),
        Just(NetworkState::Connecting),
        Just(NetworkState::Reconnecting),
        Just(NetworkState::Disconnected),
    ]
}

fn server_frame() -> impl Strategy<Value = ServerFrame> {
    let network_info = (
        network_id(),
        stream_id(),
        word(),
        state(),
        proptest::option::of(word()),
        0u64..1000,
        0u64..1000,
    )
        .prop_map(|(network, stream, name, state, nick, a, b)| {
            let latest = a.max(b);
            NetworkInfo {
                network,
                stream,
                name,
                state,
                nick,
                earliest: a.min(b) + 1,
                latest,
            }
        });
    let shown = prop_oneof![
        word().prop_map(ConfigShown::Nick),
        proptest::collection::vec("#[a-z]{1,10}", 0..3).prop_map(ConfigShown::Channels),
        prop_oneof![Just(SecretState::Set), Just(SecretState::Unset)]
            .prop_map(ConfigShown::SaslPassword),
    ];
    let code = proptest::sample::select(ErrorCode::ALL.to_vec());
    prop_oneof![
        (
            word(),
            1u64..100_000,
            proptest::collection::vec(network_info, 0..3)
        )
            .prop_map(|(user, hb, networks)| {
                ServerFrame::Hello(Hello {
                    version: PROTOCOL_VERSION,
                    user,
                    heartbeat_ms: hb,
                    max_frame_bytes: 65_536,
                    networks,
                })
            }),
        (stream_id(), proptest::collection::vec(plain_line(), 0..4))
            .prop_map(|(stream, lines)| ServerFrame::Sync(Sync { stream, lines })),
        (
            stream_id(),
            1u64..,
            any::<u64>(),
            plain_line(),
            any::<bool>()
        )
            .prop_map(
                |(stream, seq, time, line, replay)| ServerFrame::Line(LineFrame {
                    stream,
                    seq,
                    time,
                    line,
                    replay
                })
            ),
        Just(ServerFrame::Ready(Ready {})),
        (
            network_id(),
            state(),
            proptest::option::of(word()),
            proptest::option::of("[a-z ]{0,20}")
        )
            .prop_map(|(network, state, nick, error)| ServerFrame::Network(
                NetworkUpdate {
                    network,
                    state,
                    nick,
                    error
                }
            )),
        (
            request_id(),
            stream_id(),
            "[#a-z]{1,10}",
            proptest::collection::vec((any::<u64>(), any::<u64>(), plain_line()), 0..3),
            any::<bool>()
        )
            .prop_map(
                |(id, stream, buffer, rows, more)| ServerFrame::Backlog(Backlog {
                    id,
                    stream,
                    buffer,
                    rows: rows
                        .into_iter()
                        .map(|(seq, time, line)| BacklogRow { seq, time, line })
                        .collect(),
                    more
                })
            ),
        (request_id(), any::<bool>())
            .prop_map(|(id, duplicate)| ServerFrame::SendAck(SendAck { id, duplicate })),
        (
            proptest::option::of(request_id()),
            network_id(),
            proptest::collection::vec(shown, 0..3)
        )
            .prop_map(|(id, network, entries)| ServerFrame::Config(Config {
                id,
                network,
                entries
            })),
        (any::<u64>(), "[a-z0-9_]{1,30}", any::<u64>()).prop_map(|(generation, t, grace_ms)| {
            ServerFrame::TokenRotate(TokenRotate {
                generation,
                token: Token::new(t),
                grace_ms,
            })
        }),
        any::<u64>().prop_map(|n| ServerFrame::Ping(Ping { n })),
        any::<u64>().prop_map(|n| ServerFrame::Pong(Pong { n })),
        (
            code,
            "[a-z ]{0,30}",
            any::<bool>(),
            proptest::option::of(request_id()),
            proptest::option::of(stream_id())
        )
            .prop_map(|(code, message, fatal, id, stream)| {
                let mut e = ErrorFrame::new(code, message);
                e.fatal = fatal;
                e.id = id;
                e.stream = stream;
                ServerFrame::Error(e)
            }),
    ]
}

/// A secret no other generated text can contain (other text is lowercase).
fn secret() -> impl Strategy<Value = String> {
    "S3CR[A-Z0-9]{6,20}"
}

/// A frame that carries `secret` somewhere Rete must never show it.
fn frame_carrying(secret: String) -> impl Strategy<Value = String> {
    let s = secret.clone();
    let lines = prop_oneof![
        Just(format!("PASS {s}")),
        Just(format!("PASS :{s}")),
        Just(format!("AUTHENTICATE {s}")),
        Just(format!("OPER root {s}")),
        Just(format!("@label=a :me PRIVMSG NickServ :IDENTIFY alice {s}")),
        Just(format!("NS IDENTIFY {s}")),
        Just(format!("PRIVMSG NickServ :SET PASSWORD {s}")),
    ];
    let t = secret.clone();
    let c = secret.clone();
    prop_oneof![
        (request_id(), network_id(), lines.clone()).prop_map(|(id, network, line)| {
            encode_client(&ClientFrame::Send(Send {
                id,
                network,
                line: IrcLine::new(line),
            }))
            .unwrap()
        }),
        (stream_id(), 1u64.., lines.clone()).prop_map(|(stream, seq, line)| {
            encode_server(&ServerFrame::Line(LineFrame {
                stream,
                seq,
                time: 1,
                line: IrcLine::new(line),
                replay: false,
            }))
            .unwrap()
        }),
        (stream_id(), lines).prop_map(|(stream, line)| {
            encode_server(&ServerFrame::Sync(Sync {
                stream,
                lines: vec![IrcLine::new(":srv 001 me :hi"), IrcLine::new(line)],
            }))
            .unwrap()
        }),
        Just(t.clone()).prop_map(|t| {
            encode_client(&ClientFrame::Auth(Auth {
                version: 1,
                token: Token::new(t),
                client: None,
                resume: vec![],
            }))
            .unwrap()
        }),
        any::<u64>().prop_map(move |generation| {
            encode_server(&ServerFrame::TokenRotate(TokenRotate {
                generation,
                token: Token::new(t.clone()),
                grace_ms: 1,
            }))
            .unwrap()
        }),
        (
            request_id(),
            network_id(),
            config_entries(ordinary_secret()),
            any::<bool>()
        )
            .prop_map(move |(id, network, mut entries, server)| {
                let e = if server {
                    ConfigEntry::ServerPassword(Some(Secret::new(c.clone())))
                } else {
                    ConfigEntry::SaslPassword(Some(Secret::new(c.clone())))
                };
                let key = e.key();
                entries.retain(|x| x.key() != key);
                entries.truncate(7);
                entries.push(e);
                encode_client(&ClientFrame::ConfigUpdate(ConfigUpdate {
                    id,
                    network,
                    entries,
                }))
                .unwrap()
            }),
    ]
}

// ---- the properties ----
// (Debug output is checked alongside masking: a frame that carries a secret
// must not print it either.)

proptest! {
    #[test]
    fn client_frames_round_trip(frame in client_frame()) {
        let text = encode_client(&frame).unwrap();
        prop_assert_eq!(decode_client(&text).unwrap(), frame);
    }

    #[test]
    fn server_frames_round_trip(frame in server_frame()) {
        let text = encode_server(&frame).unwrap();
        prop_assert_eq!(decode_server(&text).unwrap(), frame);
    }

    #[test]
    fn no_frame_carrying_a_secret_shows_it_once_masked(
        (secret, text) in secret().prop_flat_map(|s| (Just(s.clone()), frame_carrying(s))),
        cut in any::<prop::sample::Index>(),
    ) {
        prop_assert!(text.contains(&secret));
        let shown = mask_retecloud_frame(&text);
        prop_assert!(!shown.contains(&secret), "{} -> {}", text, shown);
        // Debug output of the decoded frame holds no secret either.
        let debug = match decode_client(&text) {
            Ok(f) => format!("{f:?}"),
            Err(_) => format!("{:?}", decode_server(&text).unwrap()),
        };
        prop_assert!(!debug.contains(&secret), "{}", debug);
        // Cut anywhere (a frame that does not parse): masked by pattern or
        // replaced by a note, never shown whole.
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let shown = mask_retecloud_frame(&text[..at]);
        prop_assert!(!shown.contains(&secret), "{} -> {}", &text[..at], shown);
    }

    #[test]
    fn masking_any_text_never_panics(text in any::<String>()) {
        let _ = mask_retecloud_frame(&text);
        let _ = decode_client(&text);
        let _ = decode_server(&text);
    }
}

// ---- replay: the service's feed against the client's state machine ----

/// One thing that can happen while a client is attached.
#[derive(Clone, Debug)]
enum Event {
    /// A new row is stored, then broadcast live: delivered once, lost
    /// (the broadcast lagged) or delivered twice.
    Row { copies: u8 },
    /// The service reads its next chunk from the store.
    Read,
    /// The store evicts its oldest rows (up to this many).
    Evict(u64),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (0u8..3).prop_map(|copies| Event::Row { copies }),
        Just(Event::Read),
        (1u64..6).prop_map(Event::Evict),
    ]
}

fn stream() -> StreamId {
    StreamId("libera.1".into())
}

fn gone(earliest: u64) -> ErrorFrame {
    let mut err = ErrorFrame::new(ErrorCode::ResumePointGone, "gone");
    err.stream = Some(stream());
    err.earliest = Some(earliest);
    err
}

fn line_frame(seq: u64, replay: bool) -> ServerFrame {
    ServerFrame::Line(LineFrame {
        stream: stream(),
        seq,
        time: seq,
        line: IrcLine::new(format!("PRIVMSG #a :{seq}")),
        replay,
    })
}

proptest! {
    #[test]
    fn every_missed_row_arrives_once_in_order(
        latest in 0u64..50,
        evicted in 0u64..50,
        after in 0u64..60,
        chunk in 1u64..8,
        events in proptest::collection::vec(event(), 0..60),
    ) {
        let earliest = evicted.min(latest) + 1;
        let mut extent = StoreExtent::new(earliest, latest).unwrap();
        let plan = plan_resume(extent, after);
        let mut feed = StreamFeed::start(plan, extent);

        let mut client = CloudClient::new(
            Token::new("rct1_t"),
            [ResumePoint { stream: stream(), after }],
            ClientConfig { client: "t".into(), auth_timeout_ms: 10_000, id_prefix: "p".into() },
        );
        client.handle_open(0);
        client.handle_frame(1, ServerFrame::Hello(Hello {
            version: PROTOCOL_VERSION,
            user: "u".into(),
            heartbeat_ms: 30_000,
            max_frame_bytes: 65_536,
            networks: vec![NetworkInfo {
                network: NetworkId("libera".into()),
                stream: stream(),
                name: "Libera".into(),
                state: NetworkState::Connected,
                nick: None,
                earliest,
                latest,
            }],
        }));
        let expected_first = match plan {
            ResumePlan::Replay { from, .. } => from,
            ResumePlan::UpToDate => after + 1,
            ResumePlan::Gone { earliest: e, latest: l } => {
                prop_assert!(after + 1 < e && after <= l);
                client.handle_frame(1, ServerFrame::Error(gone(e)));
                after + 1
            }
            ResumePlan::Unknown { latest: l } => {
                prop_assert!(after > l);
                let mut err = ErrorFrame::new(ErrorCode::ResumePointUnknown, "unknown");
                err.stream = Some(stream());
                err.latest = Some(l);
                client.handle_frame(1, ServerFrame::Error(err));
                l + 1
            }
        };

        // What the service sends: a row only when its feed takes it.
        let send = |feed: &mut StreamFeed, client: &mut CloudClient, seq: u64| {
            if feed.offer(seq) == Offer::Next {
                client.handle_frame(2, line_frame(seq, feed.is_replay(seq)));
            }
        };
        let read = |feed: &mut StreamFeed, client: &mut CloudClient, extent: StoreExtent| -> bool {
            match feed.next_read(extent, chunk) {
                NextRead::Nothing => false,
                NextRead::Rows(r) => {
                    // The store can only return rows it holds.
                    assert!(
                        *r.start() >= extent.earliest && *r.end() <= extent.latest,
                        "read {r:?} from a store holding {extent:?}"
                    );
                    for seq in r {
                        send(feed, client, seq);
                    }
                    true
                }
                NextRead::Lost(_) => {
                    client.handle_frame(2, ServerFrame::Error(gone(extent.earliest)));
                    feed.skip_lost(extent);
                    true
                }
            }
        };
        for e in events {
            match e {
                Event::Row { copies } => {
                    // Stored first, then broadcast.
                    extent = StoreExtent::new(extent.earliest, extent.latest + 1).unwrap();
                    for _ in 0..copies {
                        send(&mut feed, &mut client, extent.latest);
                    }
                }
                Event::Read => {
                    read(&mut feed, &mut client, extent);
                }
                Event::Evict(n) => {
                    let earliest = (extent.earliest + n).min(extent.latest + 1);
                    extent = StoreExtent::new(earliest, extent.latest).unwrap();
                }
            }
        }
        while read(&mut feed, &mut client, extent) {}
        prop_assert!(feed.replayed());

        // Rows and reported gaps, in order, cover exactly what was missed.
        let mut got = Vec::new();
        while let Some(a) = client.poll_action() {
            match a {
                Action::Row { seq, .. } => got.push(seq),
                Action::Gap { lost, .. } => got.extend(lost),
                Action::Close { reason, .. } => prop_assert!(false, "closed: {:?}", reason),
                _ => {}
            }
        }
        let want: Vec<u64> = (expected_first..=extent.latest).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(client.duplicates_dropped(), 0, "the service sent no row twice");
    }
}

// ---- error messages never quote a value ----

/// A JSON value that holds `secret` somewhere (as a string, in an array,
/// in an object), or something else of the wrong type.
fn value_with(secret: String) -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let s = secret.clone();
    prop_oneof![
        Just(Value::String(s.clone())),
        Just(json!([s.clone()])),
        Just(json!({ "k": s.clone() })),
        Just(json!([{ "key": "sasl_password", "value": s.clone() }])),
        Just(json!([{ "key": s.clone(), "value": "x" }])),
        Just(json!([{ "key": "sasl_mechanism", "value": s.clone() }])),
        Just(json!({ "msgid": s.clone(), "time": 1 })),
        Just(json!({ s.clone(): 1 })),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

/// The members each client frame type has, so generated frames fail deep
/// inside (a wrong value in a real member), not only at an unknown name.
fn members_of(frame_type: &str) -> Vec<&'static str> {
    match frame_type {
        "auth" => vec!["version", "token", "client", "resume"],
        "fetch" => vec!["id", "stream", "buffer", "before", "limit"],
        "send" => vec!["id", "network", "line"],
        "config_update" => vec!["id", "network", "entries"],
        "token_ack" => vec!["generation"],
        _ => vec!["n"],
    }
}

proptest! {
    #[test]
    fn an_error_message_never_quotes_a_member_value(
        (secret, frame_type, members) in (secret(), proptest::sample::select(CLIENT_TYPES.to_vec()))
            .prop_flat_map(|(s, t)| {
                let names = proptest::sample::select(members_of(t));
                (Just(s.clone()), Just(t), proptest::collection::vec((names, value_with(s)), 1..4))
            }),
    ) {
        let mut object = serde_json::Map::new();
        object.insert("type".into(), serde_json::Value::String(frame_type.into()));
        for (name, value) in members {
            object.insert(name.into(), value);
        }
        let text = serde_json::Value::Object(object).to_string();
        if let Err(e) = decode_client(&text) {
            prop_assert!(!e.message.contains(&secret), "{} -> {}", text, e.message);
        }
    }
}
