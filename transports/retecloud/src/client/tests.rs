use super::*;
use crate::frame::{LineFrame, NetworkInfo, NetworkState, Ready, SendAck, TokenRotate};

fn config() -> ClientConfig {
    ClientConfig {
        client: "reterm/0.1.0".into(),
        auth_timeout_ms: 10_000,
        id_prefix: "p1".into(),
    }
}

fn stream() -> StreamId {
    StreamId("libera.1".into())
}

fn net() -> NetworkId {
    NetworkId("libera".into())
}

fn hello(earliest: u64, latest: u64) -> ServerFrame {
    ServerFrame::Hello(Hello {
        version: PROTOCOL_VERSION,
        user: "alice".into(),
        heartbeat_ms: 30_000,
        max_frame_bytes: crate::MAX_FRAME_BYTES,
        networks: vec![NetworkInfo {
            network: net(),
            stream: stream(),
            name: "Libera".into(),
            state: NetworkState::Connected,
            nick: Some("alice".into()),
            earliest,
            latest,
        }],
    })
}

fn line(seq: u64, replay: bool) -> ServerFrame {
    ServerFrame::Line(LineFrame {
        stream: stream(),
        seq,
        time: 1_764_644_400_000 + seq,
        line: IrcLine::new(format!(":bob!b@h PRIVMSG #rete :row {seq}")),
        replay,
    })
}

fn drain(c: &mut CloudClient) -> Vec<Action> {
    std::iter::from_fn(|| c.poll_action()).collect()
}

fn sent(actions: &[Action]) -> Vec<&ClientFrame> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(f) => Some(f),
            _ => None,
        })
        .collect()
}

fn rows(actions: &[Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Row { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect()
}

fn attached(resume_after: Option<u64>, earliest: u64, latest: u64) -> CloudClient {
    let resume = resume_after.map(|after| ResumePoint {
        stream: stream(),
        after,
    });
    let mut c = CloudClient::new(Token::new("rct1_first"), resume, config());
    c.handle_open(0);
    c.handle_frame(1, hello(earliest, latest));
    drain(&mut c);
    c
}

#[test]
fn the_first_frame_is_auth_with_the_token_and_resume_points() {
    let resume = [ResumePoint {
        stream: stream(),
        after: 41,
    }];
    let mut c = CloudClient::new(Token::new("rct1_first"), resume.clone(), config());
    assert_eq!(c.poll_timeout(), None);
    c.handle_open(100);
    let a = drain(&mut c);
    let [Action::Send(ClientFrame::Auth(auth))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(auth.version, PROTOCOL_VERSION);
    assert_eq!(auth.token.expose(), "rct1_first");
    assert_eq!(auth.resume, resume.to_vec());
    assert_eq!(c.poll_timeout(), Some(10_100));
    c.handle_timeout(10_099);
    assert!(drain(&mut c).is_empty());
    c.handle_timeout(10_100);
    assert_eq!(
        drain(&mut c),
        [Action::Close {
            reason: CloseReason::AuthTimeout,
            reconnect: Reconnect::Retry
        }]
    );
}

#[test]
fn a_resumed_stream_gets_exactly_the_missed_rows_then_live() {
    let mut c = attached(Some(41), 1, 45);
    for s in 42..=45 {
        c.handle_frame(2, line(s, true));
    }
    c.handle_frame(2, line(44, true)); // a duplicate is dropped
    c.handle_frame(3, ServerFrame::Ready(Ready {}));
    c.handle_frame(4, line(46, false));
    let a = drain(&mut c);
    assert_eq!(rows(&a), [42, 43, 44, 45, 46]);
    assert!(a.contains(&Action::Ready));
    assert_eq!(c.duplicates_dropped(), 1);
    assert_eq!(
        c.resume_points(),
        [ResumePoint {
            stream: stream(),
            after: 46
        }]
    );
}

#[test]
fn a_stream_not_resumed_starts_live_after_its_newest_row() {
    let mut c = attached(None, 1, 500);
    c.handle_frame(2, ServerFrame::Ready(Ready {}));
    c.handle_frame(3, line(501, false));
    assert_eq!(rows(&drain(&mut c)), [501]);
}

#[test]
fn a_gap_closes_and_the_reconnect_resumes_before_it() {
    let mut c = attached(Some(10), 1, 12);
    c.handle_frame(2, line(11, true));
    c.handle_frame(2, line(13, true));
    let a = drain(&mut c);
    assert_eq!(rows(&a), [11]);
    assert_eq!(
        a.last(),
        Some(&Action::Close {
            reason: CloseReason::ProtocolViolation,
            reconnect: Reconnect::Retry
        })
    );
    c.handle_open(5);
    let a = drain(&mut c);
    let [Action::Send(ClientFrame::Auth(auth))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(
        auth.resume,
        [ResumePoint {
            stream: stream(),
            after: 11
        }]
    );
}

#[test]
fn resume_point_gone_is_reported_as_a_gap_and_the_held_rows_follow() {
    let mut c = attached(Some(3), 100, 102);
    let mut e = ErrorFrame::new(ErrorCode::ResumePointGone, "rows after 3 are gone");
    e.stream = Some(stream());
    e.earliest = Some(100);
    e.latest = Some(102);
    c.handle_frame(2, ServerFrame::Error(e));
    for s in 100..=102 {
        c.handle_frame(2, line(s, true));
    }
    c.handle_frame(3, ServerFrame::Ready(Ready {}));
    c.handle_frame(4, line(103, false));
    let a = drain(&mut c);
    assert!(
        a.contains(&Action::Gap {
            stream: stream(),
            lost: 4..=99
        }),
        "{a:?}"
    );
    assert_eq!(rows(&a), [100, 101, 102, 103]);
}

#[test]
fn eviction_in_the_middle_of_a_replay_is_a_gap_too() {
    let mut c = attached(Some(3), 1, 20);
    c.handle_frame(2, line(4, true));
    c.handle_frame(2, line(5, true));
    let mut e = ErrorFrame::new(ErrorCode::ResumePointGone, "evicted");
    e.stream = Some(stream());
    e.earliest = Some(9);
    c.handle_frame(2, ServerFrame::Error(e));
    c.handle_frame(2, line(9, true));
    let a = drain(&mut c);
    assert!(
        a.contains(&Action::Gap {
            stream: stream(),
            lost: 6..=8
        }),
        "{a:?}"
    );
    assert_eq!(rows(&a), [4, 5, 9]);
    assert!(!a.iter().any(|x| matches!(x, Action::Close { .. })));
}

#[test]
fn resume_point_unknown_goes_live_after_the_newest_row() {
    let mut c = attached(Some(500), 1, 17);
    let mut e = ErrorFrame::new(ErrorCode::ResumePointUnknown, "no row 500");
    e.stream = Some(stream());
    e.latest = Some(17);
    c.handle_frame(2, ServerFrame::Error(e));
    c.handle_frame(3, ServerFrame::Ready(Ready {}));
    c.handle_frame(4, line(18, false));
    let a = drain(&mut c);
    assert!(
        a.contains(&Action::StreamReset {
            stream: stream(),
            latest: 17
        }),
        "{a:?}"
    );
    assert_eq!(rows(&a), [18]);
}

#[test]
fn the_rotated_token_is_stored_before_it_is_acknowledged() {
    let mut c = attached(None, 1, 0);
    c.handle_frame(2, ServerFrame::Ready(Ready {}));
    drain(&mut c);
    c.handle_frame(
        3,
        ServerFrame::TokenRotate(TokenRotate {
            generation: 1,
            token: Token::new("rct1_second"),
            grace_ms: 60_000,
        }),
    );
    let a = drain(&mut c);
    assert_eq!(
        a,
        [Action::PersistToken {
            generation: 1,
            token: Token::new("rct1_second")
        }]
    );
    assert!(sent(&a).is_empty(), "no ack before the store is confirmed");
    assert_eq!(c.token().expose(), "rct1_first", "still the one on disk");
    assert!(
        c.secrets().any(|t| t.expose() == "rct1_second"),
        "a token being stored is a secret too"
    );
    c.handle_token_persisted(4, 2); // another generation: ignored
    assert!(drain(&mut c).is_empty());
    c.handle_token_persisted(4, 1);
    assert_eq!(
        drain(&mut c),
        [Action::Send(ClientFrame::TokenAck(TokenAck {
            generation: 1
        }))]
    );
    assert_eq!(c.token().expose(), "rct1_second");
    let secrets: Vec<&str> = c.secrets().map(Token::expose).collect();
    assert_eq!(secrets, ["rct1_second", "rct1_first"]);
}

#[test]
fn no_auth_while_a_token_is_being_stored() {
    let mut c = attached(None, 1, 0);
    c.handle_frame(
        2,
        ServerFrame::TokenRotate(TokenRotate {
            generation: 7,
            token: Token::new("rct1_new"),
            grace_ms: 1,
        }),
    );
    c.handle_closed();
    drain(&mut c);
    c.handle_open(10);
    assert!(drain(&mut c).is_empty(), "waits for the store's outcome");
    c.handle_token_persisted(11, 7);
    let a = drain(&mut c);
    let [Action::Send(ClientFrame::Auth(auth))] = a.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(
        auth.token.expose(),
        "rct1_new",
        "presenting it acknowledges it"
    );
}

#[test]
fn a_failed_store_keeps_the_old_token_and_never_acknowledges() {
    let mut c = attached(None, 1, 0);
    c.handle_frame(
        2,
        ServerFrame::TokenRotate(TokenRotate {
            generation: 1,
            token: Token::new("rct1_new"),
            grace_ms: 1,
        }),
    );
    drain(&mut c);
    c.handle_token_persist_failed(3, 1);
    assert!(drain(&mut c).is_empty());
    assert_eq!(c.token().expose(), "rct1_first");
    assert_eq!(c.secrets().count(), 1);
}

#[test]
fn only_five_tokens_are_remembered() {
    let mut c = attached(None, 1, 0);
    for g in 1..=6u64 {
        c.handle_frame(
            2,
            ServerFrame::TokenRotate(TokenRotate {
                generation: g,
                token: Token::new(format!("rct1_{g}")),
                grace_ms: 1,
            }),
        );
        c.handle_token_persisted(3, g);
    }
    let secrets: Vec<&str> = c.secrets().map(Token::expose).collect();
    assert_eq!(secrets, ["rct1_6", "rct1_5", "rct1_4", "rct1_3", "rct1_2"]);
}

#[test]
fn heartbeat_due_then_missed() {
    let mut c = attached(None, 1, 0);
    // hello asked for 30 s: ping after 30 s of sending nothing.
    assert_eq!(c.poll_timeout(), Some(30_000));
    c.handle_timeout(30_000);
    assert_eq!(
        drain(&mut c),
        [Action::Send(ClientFrame::Ping(Ping { n: 1 }))]
    );
    c.handle_frame(30_010, ServerFrame::Pong(Pong { n: 1 }));
    assert_eq!(c.poll_timeout(), Some(60_000));
    c.handle_timeout(60_000);
    assert_eq!(
        drain(&mut c),
        [Action::Send(ClientFrame::Ping(Ping { n: 2 }))]
    );
    // Nothing comes back: dead after twice the interval since the pong.
    c.handle_timeout(90_009);
    assert!(drain(&mut c)
        .iter()
        .all(|a| !matches!(a, Action::Close { .. })));
    c.handle_timeout(90_010);
    let a = drain(&mut c);
    assert!(
        a.contains(&Action::Close {
            reason: CloseReason::HeartbeatMissed,
            reconnect: Reconnect::Retry
        }),
        "{a:?}"
    );
}

#[test]
fn the_service_is_answered_ping_for_ping() {
    let mut c = attached(None, 1, 0);
    c.handle_frame(5, ServerFrame::Ping(Ping { n: 77 }));
    assert_eq!(
        drain(&mut c),
        [Action::Send(ClientFrame::Pong(Pong { n: 77 }))]
    );
}

#[test]
fn a_bad_or_revoked_token_stops_reconnecting() {
    for code in [
        ErrorCode::AuthFailed,
        ErrorCode::TokenRevoked,
        ErrorCode::UnsupportedVersion,
    ] {
        let mut c = CloudClient::new(Token::new("rct1_x"), [], config());
        c.handle_open(0);
        drain(&mut c);
        c.handle_frame(1, ServerFrame::Error(ErrorFrame::new(code, "no")));
        let close = Action::Close {
            reason: CloseReason::ServerError(code),
            reconnect: Reconnect::Stop,
        };
        assert_eq!(drain(&mut c), std::slice::from_ref(&close));
        c.handle_open(2);
        assert_eq!(drain(&mut c), [close], "stays stopped");
        c.set_token(Token::new("rct1_y"));
        c.handle_open(3);
        assert!(matches!(
            drain(&mut c).as_slice(),
            [Action::Send(ClientFrame::Auth(_))]
        ));
    }
    for code in [
        ErrorCode::ShuttingDown,
        ErrorCode::Internal,
        ErrorCode::FrameTooLarge,
    ] {
        let mut c = attached(None, 1, 0);
        c.handle_frame(1, ServerFrame::Error(ErrorFrame::new(code, "x")));
        assert_eq!(
            drain(&mut c),
            [Action::Close {
                reason: CloseReason::ServerError(code),
                reconnect: Reconnect::Retry
            }]
        );
    }
}

#[test]
fn frames_out_of_place_are_a_protocol_violation() {
    let mut c = CloudClient::new(Token::new("rct1_x"), [], config());
    c.handle_open(0);
    drain(&mut c);
    c.handle_frame(1, line(1, false));
    assert_eq!(
        drain(&mut c),
        [Action::Close {
            reason: CloseReason::ProtocolViolation,
            reconnect: Reconnect::Retry
        }]
    );
    let mut c = attached(None, 1, 0);
    let mut other = line(1, false);
    if let ServerFrame::Line(l) = &mut other {
        l.stream = StreamId("oftc.1".into());
    }
    c.handle_frame(2, other);
    assert!(matches!(
        drain(&mut c).as_slice(),
        [Action::Close {
            reason: CloseReason::ProtocolViolation,
            ..
        }]
    ));
}

#[test]
fn sends_wait_for_ready_and_are_resent_with_the_same_id_until_acknowledged() {
    let mut c = CloudClient::new(Token::new("rct1_x"), [], config());
    let id = c
        .send_line(0, net(), IrcLine::new("PRIVMSG #rete :hi"))
        .unwrap();
    assert_eq!(id, RequestId("p1-1".into()));
    assert!(c.send_line(0, net(), IrcLine::new("bad\r\nline")).is_err());
    c.handle_open(1);
    c.handle_frame(2, hello(1, 0));
    c.handle_frame(3, ServerFrame::Ready(Ready {}));
    let a = drain(&mut c);
    assert!(
        sent(&a)
            .iter()
            .any(|f| matches!(f, ClientFrame::Send(s) if s.id == id)),
        "{a:?}"
    );
    // The connection drops before the ack: resent on the next one.
    c.handle_closed();
    c.handle_open(10);
    c.handle_frame(11, hello(1, 0));
    c.handle_frame(12, ServerFrame::Ready(Ready {}));
    let a = drain(&mut c);
    assert!(sent(&a)
        .iter()
        .any(|f| matches!(f, ClientFrame::Send(s) if s.id == id)));
    c.handle_frame(
        13,
        ServerFrame::SendAck(SendAck {
            id: id.clone(),
            duplicate: true,
        }),
    );
    assert_eq!(drain(&mut c), [Action::SendAcked(id)]);
    assert_eq!(c.unacked_sends(), 0);
}

#[test]
fn debug_output_holds_no_token() {
    let mut c = attached(None, 1, 0);
    c.handle_frame(
        2,
        ServerFrame::TokenRotate(TokenRotate {
            generation: 1,
            token: Token::new("rct1_second"),
            grace_ms: 1,
        }),
    );
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("rct1_first") && !shown.contains("rct1_second"),
        "{shown}"
    );
}

#[test]
fn a_fetch_goes_out_only_while_attached() {
    let mut c = CloudClient::new(Token::new("rct1_first"), [], config());
    assert!(c.fetch(0, stream(), "#rete".into(), None, 50).is_err());
    assert!(drain(&mut c).is_empty(), "nothing queued before attaching");
    let mut c = attached(None, 1, 10);
    let id = c.fetch(2, stream(), "#rete".into(), None, 50).unwrap();
    let actions = drain(&mut c);
    match sent(&actions).as_slice() {
        [ClientFrame::Fetch(f)] => {
            assert_eq!((&f.id, f.buffer.as_str(), f.limit), (&id, "#rete", 50));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        c.fetch(3, stream(), "#rete".into(), None, 0).is_err(),
        "a limit of 0 is refused"
    );
}

#[test]
fn a_config_update_goes_out_only_while_attached_and_is_checked_first() {
    use crate::config::ConfigEntry;
    use crate::secret::Secret;
    let entries = || {
        vec![
            ConfigEntry::Nick("newnick".into()),
            ConfigEntry::SaslPassword(Some(Secret::new("hunter2-pw"))),
        ]
    };
    let mut c = CloudClient::new(Token::new("rct1_first"), [], config());
    assert!(c.config_update(0, net(), entries()).is_err());
    assert!(drain(&mut c).is_empty(), "nothing queued before attaching");
    let mut c = attached(None, 1, 10);
    let id = c.config_update(2, net(), entries()).unwrap();
    let actions = drain(&mut c);
    match sent(&actions).as_slice() {
        [ClientFrame::ConfigUpdate(u)] => {
            assert_eq!((&u.id, &u.network, u.entries.len()), (&id, &net(), 2));
        }
        other => panic!("{other:?}"),
    }
    // The frame rules apply before anything is sent: a field twice.
    let twice = vec![ConfigEntry::Nick("a".into()), ConfigEntry::Nick("b".into())];
    assert!(c.config_update(3, net(), twice).is_err());
    assert!(c.config_update(3, net(), vec![]).is_err(), "no entries");
    assert!(drain(&mut c).is_empty(), "a refused update sends nothing");
}

/// A ready client whose `hello` arrived at `hello_at`.
fn ready_at(hello_at: u64) -> CloudClient {
    let mut c = CloudClient::new(Token::new("rct1_x"), [], config());
    c.handle_open(hello_at);
    c.handle_frame(hello_at, hello(1, 0));
    c.handle_frame(hello_at, ServerFrame::Ready(Ready {}));
    drain(&mut c);
    c
}

fn send_ids(actions: &[Action]) -> Vec<String> {
    sent(actions)
        .iter()
        .filter_map(|f| match f {
            ClientFrame::Send(s) => Some(s.id.0.clone()),
            _ => None,
        })
        .collect()
}

/// Sends `extra` lines more than the request allowance's burst, at 10 ms.
fn send_past_the_burst(c: &mut CloudClient, extra: usize) {
    for n in 0..REQUEST_BURST as usize + extra {
        c.send_line(10, net(), IrcLine::new(format!("PRIVMSG #rete :{n}")))
            .unwrap();
    }
}

#[test]
fn requests_past_the_allowance_are_held_back_and_sent_in_order_as_it_refills() {
    let mut c = ready_at(1);
    let burst = REQUEST_BURST as usize;
    send_past_the_burst(&mut c, 3);
    let first = send_ids(&drain(&mut c));
    assert_eq!(first.len(), burst);
    assert_eq!(c.held_requests(), 3);
    // A fetch made now waits behind the held sends.
    c.fetch(10, stream(), "#rete".into(), None, 5).unwrap();
    assert!(drain(&mut c).is_empty());
    // The next token is earned one interval after the allowance began.
    let due = 1 + REQUEST_INTERVAL_MS;
    assert_eq!(c.poll_timeout(), Some(due));
    c.handle_timeout(due - 1);
    assert!(sent(&drain(&mut c)).is_empty());
    c.handle_timeout(due);
    assert_eq!(send_ids(&drain(&mut c)), [format!("p1-{}", burst + 1)]);
    c.handle_timeout(due + 2 * REQUEST_INTERVAL_MS);
    let a = drain(&mut c);
    assert_eq!(
        send_ids(&a),
        [format!("p1-{}", burst + 2), format!("p1-{}", burst + 3)]
    );
    assert!(!sent(&a).iter().any(|f| matches!(f, ClientFrame::Fetch(_))));
    c.handle_timeout(due + 3 * REQUEST_INTERVAL_MS);
    assert!(matches!(sent(&drain(&mut c))[..], [ClientFrame::Fetch(_)]));
    assert_eq!(c.held_requests(), 0);
    // Nothing held: the next wake-up is the heartbeat's.
    assert!(c.poll_timeout().unwrap() > due + 10_000);
}

#[test]
fn held_sends_are_resent_after_the_next_ready_and_held_fetches_end_with_the_connection() {
    let mut c = ready_at(1);
    let burst = REQUEST_BURST as usize;
    send_past_the_burst(&mut c, 2);
    c.fetch(10, stream(), "#rete".into(), None, 5).unwrap();
    drain(&mut c);
    assert_eq!(c.held_requests(), 3);
    c.handle_closed();
    drain(&mut c);
    assert_eq!(c.held_requests(), 0);
    assert_eq!(c.unacked_sends(), burst + 2);
    c.handle_open(100);
    c.handle_frame(101, hello(1, 0));
    c.handle_frame(102, ServerFrame::Ready(Ready {}));
    let a = drain(&mut c);
    let expected: Vec<String> = (1..=burst).map(|n| format!("p1-{n}")).collect();
    assert_eq!(
        send_ids(&a),
        expected,
        "the oldest first, the burst at once"
    );
    assert!(!sent(&a).iter().any(|f| matches!(f, ClientFrame::Fetch(_))));
    c.handle_timeout(101 + 2 * REQUEST_INTERVAL_MS);
    assert_eq!(
        send_ids(&drain(&mut c)),
        [format!("p1-{}", burst + 1), format!("p1-{}", burst + 2)]
    );
}

/// What the client sends as fast as its allowance lets it, arriving late by
/// a random delay (in order, as on one TCP connection), is never refused
/// by the service's allowance. (The service's side is compiled only with
/// the `service` feature, which the workspace's test build turns on.)
#[cfg(feature = "service")]
#[test]
fn a_client_sending_flat_out_is_never_refused_by_the_services_allowance() {
    use crate::codec::encode_client;
    use crate::server::{ServerAction, ServerConfig, ServerConnection};
    use rand::{Rng, SeedableRng};
    for seed in 0..20 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut service = ServerConnection::new(0, ServerConfig::default());
        service.handle_text(
            0,
            r#"{"type":"auth","version":1,"token":"rct1_x","client":"t","resume":[]}"#,
        );
        while service.poll_action().is_some() {}
        let Some(ServerFrame::Hello(h)) = Some(hello(1, 0)) else {
            unreachable!()
        };
        let hello_at = rng.random_range(0..50);
        service.accept(hello_at, h);
        while service.poll_action().is_some() {}
        let mut c = ready_at(hello_at + rng.random_range(0..50));
        let mut now = hello_at + 50;
        let mut arrived = 0;
        let mut lines = 0;
        while lines < 2_000 || c.held_requests() > 0 {
            while lines < 2_000 && c.has_room_for_send() && rng.random_bool(0.9) {
                c.send_line(now, net(), IrcLine::new(format!("PRIVMSG #rete :{lines}")))
                    .unwrap();
                lines += 1;
            }
            c.handle_timeout(now);
            for action in drain(&mut c) {
                let Action::Send(frame) = action else {
                    continue;
                };
                arrived = arrived.max(now + rng.random_range(0..400));
                service.handle_text(arrived, &encode_client(&frame).unwrap());
                while let Some(a) = service.poll_action() {
                    match a {
                        ServerAction::Request(ClientFrame::Send(s)) => c.handle_frame(
                            now,
                            ServerFrame::SendAck(SendAck {
                                id: s.id,
                                duplicate: false,
                            }),
                        ),
                        ServerAction::Request(_) => {}
                        other => panic!("seed {seed}: the service answered {other:?}"),
                    }
                }
            }
            drain(&mut c);
            now = c.poll_timeout().unwrap().min(now + rng.random_range(1..30));
        }
    }
}

#[test]
fn forgotten_sends_are_not_resent() {
    let mut c = CloudClient::new(Token::new("rct1_x"), [], config());
    for n in 0..2 {
        c.send_line(0, net(), IrcLine::new(format!("PRIVMSG #rete :{n}")))
            .unwrap();
    }
    assert_eq!(c.forget_unacked_sends(), 2);
    assert_eq!(c.unacked_sends(), 0);
    c.handle_open(1);
    c.handle_frame(2, hello(1, 0));
    c.handle_frame(3, ServerFrame::Ready(Ready {}));
    assert!(send_ids(&drain(&mut c)).is_empty());
}
