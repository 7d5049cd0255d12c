//! The bridge fed frames and time, without a socket or an engine: each test
//! reads the outputs as one line each (see [`show`]) and checks the
//! answers its callers get.

use super::*;
use rete_cloud_protocol::config::{ConfigShown, SecretState};
use rete_cloud_protocol::frame::{
    BacklogRow, Config, ErrorFrame, Hello, LineFrame, NetworkInfo, NetworkUpdate, Ready, SendAck,
    Sync, TokenRotate,
};
use rete_cloud_protocol::{
    decode_client, encode_server, ClientFrame, ServerFrame, MAX_FRAME_BYTES, PROTOCOL_VERSION,
};
use tokio::sync::oneshot;

const NET: &str = "libera";

fn stream() -> StreamId {
    StreamId("libera.1".into())
}

fn hello_on(network: &str, state: NetworkState) -> ServerFrame {
    ServerFrame::Hello(Hello {
        version: PROTOCOL_VERSION,
        user: "alice".into(),
        heartbeat_ms: 30_000,
        max_frame_bytes: MAX_FRAME_BYTES,
        networks: vec![NetworkInfo {
            network: NetworkId(network.into()),
            stream: stream(),
            name: "Libera".into(),
            state,
            nick: Some("alice".into()),
            earliest: 1,
            latest: 100,
        }],
    })
}

fn feed(b: &mut Bridge, now: u64, frame: ServerFrame) {
    b.handle_frame(now, &encode_server(&frame).unwrap());
}

/// Every output polled now, one line each.
fn outputs(b: &mut Bridge) -> Vec<String> {
    std::iter::from_fn(|| b.poll_output())
        .map(|o| show(&o))
        .collect()
}

/// An output as one line: a frame sent by its type and what tells it apart.
fn show(o: &Output) -> String {
    match o {
        Output::Transmit(text) => match decode_client(text).unwrap() {
            ClientFrame::Auth(a) => format!("send auth resume={}", a.resume.len()),
            ClientFrame::Send(s) => format!("send send {} {}", s.id.0, s.line.as_str()),
            ClientFrame::Fetch(f) => format!("send fetch {} {} {:?}", f.id.0, f.buffer, f.before),
            ClientFrame::ConfigUpdate(c) => format!("send config_update {}", c.id.0),
            ClientFrame::TokenAck(a) => format!("send token_ack {}", a.generation),
            ClientFrame::Ping(_) => "send ping".into(),
            ClientFrame::Pong(_) => "send pong".into(),
        },
        Output::PersistToken { generation, .. } => format!("persist token {generation}"),
        Output::Attached { stream, user } => format!("attached {} as {user}", stream.0),
        Output::Sync(lines) => format!("sync {} lines", lines.len()),
        Output::Row { line, seq } => format!("row {seq} {line}"),
        Output::Ready => "ready".into(),
        Output::UpstreamDown(why) => format!("upstream down: {why}"),
        Output::Status(text) => format!("status: {text}"),
        Output::Backlog(f) => format!(
            "backlog {} rows={} older={} counted={}",
            f.backlog().buffer,
            f.backlog().rows.len(),
            f.older(),
            f.counted().is_some()
        ),
        Output::SettingsAnswer { result, .. } => format!("settings answer {result:?}"),
        Output::AgentSent(t) => format!("agent sent {t}"),
        Output::AgentNotSent(t) => format!("agent not sent {t}"),
        Output::Close { why, refused } => format!("close refused={refused}: {why}"),
    }
}

/// The SettingsAnswer outputs carried out (their replies sent), the rest shown.
fn carry_out(b: &mut Bridge) -> Vec<String> {
    let mut shown = Vec::new();
    while let Some(o) = b.poll_output() {
        shown.push(show(&o));
        if let Output::SettingsAnswer { reply, result } = o {
            let _ = reply.send(result);
        }
    }
    shown
}

/// Opens, authenticates and takes `ready`: attached and live.
fn attach(b: &mut Bridge, now: u64) -> Vec<String> {
    let opened = b.handle_open(now, NET, Ok(Some(Token::new("rct1_first"))), 7, Vec::new);
    assert_eq!(opened, Opened::Authenticating);
    feed(b, now + 1, hello_on(NET, NetworkState::Connected));
    feed(b, now + 2, ServerFrame::Ready(Ready {}));
    outputs(b)
}

fn attached() -> Bridge {
    let mut b = Bridge::default();
    let shown = attach(&mut b, 0);
    assert_eq!(
        shown,
        ["send auth resume=0", "attached libera.1 as alice", "ready"]
    );
    b
}

fn ack(id: &str) -> ServerFrame {
    ServerFrame::SendAck(SendAck {
        id: RequestId(id.into()),
        duplicate: false,
    })
}

fn refusal(code: ErrorCode, id: &str, message: &str) -> ServerFrame {
    let mut e = ErrorFrame::new(code, message);
    e.id = Some(RequestId(id.into()));
    ServerFrame::Error(e)
}

fn row(seq: u64, line: &str) -> BacklogRow {
    BacklogRow {
        seq,
        time: 1_764_644_400_000,
        line: IrcLine::new(line),
    }
}

#[test]
fn each_agent_line_is_answered_by_the_ack_of_its_own_send() {
    let mut b = attached();
    assert_eq!(
        b.send_line(10, "PRIVMSG #rete :one".into(), Some(1)),
        SendOutcome::Queued
    );
    assert_eq!(
        b.send_line(11, "PRIVMSG #rete :mine".into(), None),
        SendOutcome::Queued
    );
    assert_eq!(
        b.send_line(12, "PRIVMSG #rete :two".into(), Some(2)),
        SendOutcome::Queued
    );
    let prefix = format!("{:016x}", 7);
    assert_eq!(
        outputs(&mut b),
        [
            format!("send send {prefix}-1 PRIVMSG #rete :one"),
            format!("send send {prefix}-2 PRIVMSG #rete :mine"),
            format!("send send {prefix}-3 PRIVMSG #rete :two"),
        ]
    );
    assert_eq!(b.handed_tickets(), HashSet::from([1, 2]));
    // Acknowledged out of order, the person's line among them.
    feed(&mut b, 20, ack(&format!("{prefix}-3")));
    feed(&mut b, 21, ack(&format!("{prefix}-2")));
    feed(&mut b, 22, ack(&format!("{prefix}-1")));
    assert_eq!(outputs(&mut b), ["agent sent 2", "agent sent 1"]);
    assert!(b.handed_tickets().is_empty());
    // An ack of nothing waited for answers nobody.
    feed(&mut b, 23, ack(&format!("{prefix}-1")));
    assert!(outputs(&mut b).is_empty());
}

#[test]
fn an_agent_line_held_at_a_drop_is_resent_and_answered_after_the_reconnect() {
    let mut b = attached();
    let _ = b.send_line(10, "PRIVMSG #rete :held".into(), Some(4));
    let sent = outputs(&mut b);
    b.handle_closed();
    assert!(outputs(&mut b).is_empty(), "the close is the caller's");
    assert_eq!(b.handed_tickets(), HashSet::from([4]), "still waits");
    // Sent before the next `ready` too: queued, not refused.
    assert_eq!(
        b.send_line(11, "PRIVMSG #rete :later".into(), Some(5)),
        SendOutcome::Queued
    );
    let resent = attach(&mut b, 100);
    assert_eq!(&resent[1..3], ["attached libera.1 as alice", "ready"]);
    assert_eq!(resent[3], sent[0], "the same send, same id");
    let prefix = format!("{:016x}", 7);
    feed(&mut b, 110, ack(&format!("{prefix}-1")));
    feed(&mut b, 111, ack(&format!("{prefix}-2")));
    assert_eq!(outputs(&mut b), ["agent sent 4", "agent sent 5"]);
}

#[test]
fn a_refused_send_is_not_sent_and_said_so() {
    let mut b = attached();
    let _ = b.send_line(10, "PRIVMSG #rete :no".into(), Some(3));
    let _ = outputs(&mut b);
    let id = format!("{:016x}-1", 7);
    feed(
        &mut b,
        11,
        refusal(ErrorCode::SendRefused, &id, "not joined"),
    );
    assert_eq!(
        outputs(&mut b),
        [
            "agent not sent 3",
            "status: The service refused a request (send_refused): not joined"
        ]
    );
    assert!(b.handed_tickets().is_empty());
}

#[test]
fn a_line_with_no_client_is_not_sent() {
    let mut b = Bridge::default();
    assert_eq!(
        b.send_line(0, "PING :x".into(), Some(9)),
        SendOutcome::AgentNotSent(9)
    );
    assert_eq!(
        b.send_line(0, "PING :x".into(), None),
        SendOutcome::NotSent("not attached to the service".into())
    );
    assert!(b.poll_output().is_none());
    assert_eq!(b.poll_timeout(), None);
    assert_eq!(b.secrets(), None);
}

#[tokio::test]
async fn a_settings_change_is_answered_by_its_own_echo() {
    let mut b = attached();
    let (reply, answer) = oneshot::channel();
    b.config_update(10, vec![ConfigEntry::Nick("rete2".into())], reply);
    let id = format!("{:016x}-c1", 7);
    assert_eq!(outputs(&mut b), [format!("send config_update {id}")]);
    // Another client's change first: news, but not this answer.
    let echo = |id: Option<&str>| {
        ServerFrame::Config(Config {
            id: id.map(|i| RequestId(i.into())),
            network: NetworkId(NET.into()),
            entries: vec![
                ConfigShown::Nick("rete2".into()),
                ConfigShown::SaslPassword(SecretState::Set),
            ],
        })
    };
    feed(&mut b, 11, echo(None));
    feed(&mut b, 12, echo(Some(&id)));
    assert_eq!(
        carry_out(&mut b),
        [
            "status: ReteCloud settings of libera changed by another client: nick rete2, sasl_password set",
            "status: ReteCloud settings of libera changed: nick rete2, sasl_password set",
            "settings answer Ok(\"nick rete2, sasl_password set\")",
        ]
    );
    assert_eq!(
        answer.await.unwrap(),
        Ok("nick rete2, sasl_password set".into())
    );
}

#[tokio::test]
async fn a_refused_settings_change_carries_the_services_reason_escaped() {
    let mut b = attached();
    let (reply, answer) = oneshot::channel();
    b.config_update(10, vec![ConfigEntry::Nick("rete2".into())], reply);
    let _ = outputs(&mut b);
    let id = format!("{:016x}-c1", 7);
    feed(
        &mut b,
        11,
        refusal(ErrorCode::BadConfig, &id, "bad\u{1b}[2J"),
    );
    let shown = carry_out(&mut b);
    assert_eq!(shown.len(), 2);
    assert_eq!(
        answer.await.unwrap(),
        Err(CloudSettingsError::Refused {
            code: "bad_config",
            message: "bad\\u{1B}[2J".into()
        })
    );
}

#[tokio::test]
async fn requests_in_flight_at_a_drop_end_with_no_answer() {
    let mut b = attached();
    let (settings, settings_answer) = oneshot::channel();
    b.config_update(10, vec![ConfigEntry::Nick("rete2".into())], settings);
    let (older, older_answer) = oneshot::channel();
    b.fetch_older(
        10,
        &BufferId::from_client("#rete"),
        Some("#rete".into()),
        20,
        older,
    );
    assert_eq!(outputs(&mut b).len(), 2);
    b.handle_closed();
    // A dropped reply is what a caller reads as `NoAnswer`.
    assert!(settings_answer.await.is_err());
    assert!(older_answer.await.is_err());
    // No buffer stays "being fetched", and nothing answers on the next connection.
    let _ = attach(&mut b, 100);
    let (again, again_answer) = oneshot::channel();
    b.fetch_older(
        110,
        &BufferId::from_client("#rete"),
        Some("#rete".into()),
        20,
        again,
    );
    let shown = outputs(&mut b);
    assert_eq!(shown.len(), 1);
    assert!(shown[0].starts_with("send fetch"), "{shown:?}");
    drop(b);
    assert!(again_answer.await.is_err());
}

#[tokio::test]
async fn older_rows_are_fetched_before_the_oldest_row_seen_and_counted() {
    let mut b = attached();
    let buffer = BufferId::from_client("#rete");
    // A live row of #rete moves where the next fetch ends.
    feed(
        &mut b,
        10,
        ServerFrame::Line(LineFrame {
            stream: stream(),
            seq: 101,
            time: 1_764_644_400_000,
            line: IrcLine::new(":bob!b@h PRIVMSG #Rete :hi"),
            replay: false,
        }),
    );
    let Some(Output::Row { line, seq }) = b.poll_output() else {
        panic!("a row");
    };
    assert_eq!(
        (line.as_str(), seq),
        (
            "@time=2025-12-02T03:00:00.000Z :bob!b@h PRIVMSG #Rete :hi",
            101
        )
    );
    b.handle_row_fed(&line, "alice", seq);
    let (reply, answer) = oneshot::channel();
    b.fetch_older(11, &buffer, Some("#rete".into()), 20, reply);
    let id = format!("{:016x}-f1", 7);
    assert_eq!(
        outputs(&mut b),
        [format!("send fetch {id} #rete Some(Seq(101))")]
    );
    // A second request while the first waits is busy.
    let (busy, busy_answer) = oneshot::channel();
    b.fetch_older(12, &buffer, Some("#rete".into()), 20, busy);
    assert_eq!(busy_answer.await.unwrap(), Err(CloudBacklogError::Busy));
    feed(
        &mut b,
        13,
        ServerFrame::Backlog(Backlog {
            id: RequestId(id),
            stream: stream(),
            buffer: "#rete".into(),
            rows: vec![row(90, ":bob!b@h PRIVMSG #rete :old")],
            more: false,
        }),
    );
    let Some(Output::Backlog(fetched)) = b.poll_output() else {
        panic!("a backlog");
    };
    assert!(fetched.older());
    assert_eq!(fetched.counted(), Some(&buffer));
    b.handle_backlog_fed(fetched, 1);
    assert!(b.poll_output().is_none());
    // Answered only when the actor polls for it, once the rows' events are out.
    let (reply, result) = b.poll_answer().unwrap();
    let _ = reply.send(result);
    assert_eq!(
        answer.await.unwrap(),
        Ok(OlderRows {
            added: 1,
            no_older: true
        })
    );
    // Nothing older: answered at once, nothing sent.
    let (reply, answer) = oneshot::channel();
    b.fetch_older(14, &buffer, Some("#rete".into()), 20, reply);
    assert!(outputs(&mut b).is_empty());
    assert_eq!(
        answer.await.unwrap(),
        Ok(OlderRows {
            added: 0,
            no_older: true
        })
    );
}

#[tokio::test]
async fn a_fetch_that_cannot_be_sent_is_answered_at_once() {
    let mut b = Bridge::default();
    let buffer = BufferId::from_client("#rete");
    let ask = |b: &mut Bridge, name: Option<&str>, limit| {
        let (reply, mut answer) = oneshot::channel();
        b.fetch_older(0, &buffer, name.map(str::to_owned), limit, reply);
        answer.try_recv().unwrap()
    };
    assert!(matches!(
        ask(&mut b, Some("#rete"), 0),
        Err(CloudBacklogError::Invalid(_))
    ));
    assert_eq!(ask(&mut b, None, 10), Err(CloudBacklogError::NoSuchBuffer));
    assert_eq!(
        ask(&mut b, Some("#rete"), 10),
        Err(CloudBacklogError::NotAttached)
    );
    let (reply, mut answer) = oneshot::channel();
    b.config_update(0, vec![ConfigEntry::Nick("x".into())], reply);
    assert_eq!(
        answer.try_recv().unwrap(),
        Err(CloudSettingsError::NotAttached)
    );
}

#[tokio::test]
async fn a_backlog_of_another_stream_is_dropped_unanswered() {
    let mut b = attached();
    let (reply, answer) = oneshot::channel();
    b.fetch_older(
        10,
        &BufferId::from_client("#rete"),
        Some("#rete".into()),
        20,
        reply,
    );
    let _ = outputs(&mut b);
    feed(
        &mut b,
        11,
        ServerFrame::Backlog(Backlog {
            id: RequestId(format!("{:016x}-f1", 7)),
            stream: StreamId("other.1".into()),
            buffer: "#rete".into(),
            rows: vec![],
            more: true,
        }),
    );
    assert!(outputs(&mut b).is_empty());
    assert!(answer.await.is_err(), "NoAnswer");
}

#[test]
fn the_first_attach_of_a_stream_fetches_the_joined_channels_once() {
    let mut b = attached();
    b.fetch_first_history(10, vec!["#rete".into(), "#help".into()]);
    let prefix = format!("{:016x}", 7);
    assert_eq!(
        outputs(&mut b),
        [
            format!("send fetch {prefix}-f1 #rete None"),
            format!("send fetch {prefix}-f2 #help None"),
        ]
    );
    feed(
        &mut b,
        11,
        ServerFrame::Backlog(Backlog {
            id: RequestId(format!("{prefix}-f1")),
            stream: stream(),
            buffer: "#rete".into(),
            rows: vec![row(5, ":bob!b@h PRIVMSG #rete :recent")],
            more: true,
        }),
    );
    assert_eq!(
        outputs(&mut b),
        ["backlog #rete rows=1 older=false counted=false"]
    );
    b.handle_closed();
    let _ = attach(&mut b, 100);
    b.fetch_first_history(110, vec!["#rete".into()]);
    assert!(
        outputs(&mut b).is_empty(),
        "resumed exactly: not fetched again"
    );
}

#[test]
fn rows_sync_and_news_of_other_streams_are_not_fed() {
    let mut b = attached();
    let other = StreamId("other.1".into());
    feed(
        &mut b,
        10,
        ServerFrame::Sync(Sync {
            stream: other.clone(),
            lines: vec![IrcLine::new(":srv 001 alice :hi")],
        }),
    );
    feed(
        &mut b,
        11,
        ServerFrame::Sync(Sync {
            stream: stream(),
            lines: vec![IrcLine::new(":srv 001 alice :hi")],
        }),
    );
    feed(
        &mut b,
        12,
        ServerFrame::Network(NetworkUpdate {
            network: NetworkId("other".into()),
            state: NetworkState::Reconnecting,
            nick: None,
            error: None,
        }),
    );
    feed(
        &mut b,
        13,
        ServerFrame::Network(NetworkUpdate {
            network: NetworkId(NET.into()),
            state: NetworkState::Reconnecting,
            nick: None,
            error: Some("ping timeout".into()),
        }),
    );
    assert_eq!(
        outputs(&mut b),
        ["sync 1 lines", "upstream down: ping timeout"]
    );
}

#[test]
fn a_network_the_service_does_not_list_stops_the_session() {
    let mut b = Bridge::default();
    let _ = b.handle_open(0, "oftc", Ok(Some(Token::new("rct1_first"))), 7, Vec::new);
    feed(&mut b, 1, hello_on(NET, NetworkState::Connected));
    assert_eq!(
        outputs(&mut b),
        [
            "send auth resume=0",
            "close refused=true: the ReteCloud service has no network \"oftc\" for this user"
        ]
    );
}

#[test]
fn an_upstream_down_at_attach_is_said() {
    let mut b = Bridge::default();
    let _ = b.handle_open(0, NET, Ok(Some(Token::new("rct1_first"))), 7, Vec::new);
    feed(&mut b, 1, hello_on(NET, NetworkState::Connecting));
    assert_eq!(
        outputs(&mut b),
        [
            "send auth resume=0",
            "attached libera.1 as alice",
            "upstream down: the service's connection to Libera is down"
        ]
    );
}

#[test]
fn a_refused_token_stops_and_the_lines_held_are_not_sent() {
    let mut b = attached();
    let _ = b.send_line(10, "PRIVMSG #rete :agent".into(), Some(1));
    let _ = b.send_line(10, "PRIVMSG #rete :person".into(), None);
    let _ = outputs(&mut b);
    b.handle_closed();
    let _ = b.handle_open(100, NET, Ok(Some(Token::new("rct1_first"))), 7, Vec::new);
    let mut fatal = ErrorFrame::new(ErrorCode::AuthFailed, "no");
    fatal.fatal = true;
    feed(&mut b, 101, ServerFrame::Error(fatal));
    assert_eq!(
        outputs(&mut b),
        [
            "send auth resume=1",
            "status: Not sent: 1 of your lines were still waiting for the service",
            "agent not sent 1",
            "close refused=true: the ReteCloud service does not know this session's token (auth_failed); set the right one with reterm retecloud-token",
        ]
    );
    assert!(b.handed_tickets().is_empty());
    // A later connect sends nothing that was answered "not sent".
    b.reload_token();
    let shown = attach(&mut b, 200);
    assert_eq!(shown.len(), 3, "{shown:?}");
}

#[test]
fn a_lost_connection_is_retried() {
    let mut b = attached();
    feed(
        &mut b,
        10,
        ServerFrame::Ping(rete_cloud_protocol::frame::Ping { n: 1 }),
    );
    assert_eq!(outputs(&mut b), ["send pong"]);
    let due = b.poll_timeout().unwrap();
    b.handle_timeout(due + 60_000);
    assert_eq!(
        outputs(&mut b),
        ["close refused=false: the service sent nothing for two heartbeats"]
    );
}

#[test]
fn no_token_to_present_refuses_and_a_held_one_is_presented() {
    let mut b = Bridge::default();
    assert_eq!(
        b.handle_open(0, NET, Ok(None), 7, Vec::new),
        Opened::Refused
    );
    assert_eq!(
        outputs(&mut b),
        ["close refused=true: no ReteCloud token is set for this session; set one with reterm retecloud-token"]
    );
    assert_eq!(
        b.handle_open(0, NET, Err("permission denied".into()), 7, Vec::new),
        Opened::Refused
    );
    assert_eq!(
        outputs(&mut b),
        ["close refused=true: the ReteCloud token could not be read: permission denied"]
    );
    let _ = attach(&mut b, 10);
    b.handle_closed();
    assert_eq!(
        b.handle_open(100, NET, Err("permission denied".into()), 7, Vec::new),
        Opened::WithHeldToken
    );
    assert_eq!(outputs(&mut b), ["send auth resume=1"]);
    // After an explicit connect, the held token is not enough.
    b.handle_closed();
    b.reload_token();
    assert_eq!(
        b.handle_open(200, NET, Ok(None), 7, Vec::new),
        Opened::Refused
    );
}

#[test]
fn a_rotated_token_is_a_secret_at_once_and_acknowledged_once_stored() {
    let mut b = attached();
    feed(
        &mut b,
        10,
        ServerFrame::TokenRotate(TokenRotate {
            generation: 2,
            token: Token::new("rct1_second"),
            grace_ms: 60_000,
        }),
    );
    assert_eq!(outputs(&mut b), ["persist token 2"]);
    let secrets = b.secrets().unwrap();
    assert!(
        secrets.contains(&"rct1_second".to_owned()),
        "{}",
        secrets.len()
    );
    assert_eq!(b.token_being_stored().map(|(g, _)| g), Some(2));
    assert!(b.handle_token_stored(11, 2, true));
    assert_eq!(outputs(&mut b), ["send token_ack 2"]);
    assert_eq!(b.token_being_stored(), None);
    assert!(
        !Bridge::default().handle_token_stored(0, 2, true),
        "no client"
    );
}

#[test]
fn a_gap_and_a_renumbering_are_news_and_a_renumbering_forgets_the_oldest_rows() {
    let mut b = attached();
    b.handle_row_fed(":bob!b@h PRIVMSG #rete :hi", "alice", 101);
    let mut reset = ErrorFrame::new(ErrorCode::ResumePointUnknown, "renumbered");
    reset.stream = Some(stream());
    reset.latest = Some(7);
    feed(&mut b, 10, ServerFrame::Error(reset));
    assert_eq!(
        outputs(&mut b),
        ["status: The service's history of this network was renumbered; rows go on live from here"]
    );
    let (reply, _answer) = oneshot::channel();
    b.fetch_older(
        11,
        &BufferId::from_client("#rete"),
        Some("#rete".into()),
        5,
        reply,
    );
    let shown = outputs(&mut b);
    assert!(shown[0].ends_with("#rete None"), "{shown:?}");
}

#[test]
fn only_messages_are_fed_from_a_backlog() {
    assert!(is_message("@time=x;msgid=1 :bob!b@h PRIVMSG #rete :hi"));
    assert!(is_message(":bob!b@h notice alice :hi"));
    assert!(!is_message(":alice!a@h JOIN #rete"));
    assert!(!is_message(":srv 353 alice = #rete :alice bob"));
    assert!(!is_message(""));
}

#[test]
fn a_row_without_a_time_tag_gets_the_rows_time() {
    let t = 1_764_644_400_000;
    assert_eq!(
        with_time(":bob!b@h PRIVMSG #rete :hi", t),
        "@time=2025-12-02T03:00:00.000Z :bob!b@h PRIVMSG #rete :hi"
    );
    assert_eq!(
        with_time("@msgid=a1 :bob!b@h PRIVMSG #rete :hi", t),
        "@time=2025-12-02T03:00:00.000Z;msgid=a1 :bob!b@h PRIVMSG #rete :hi"
    );
    let tagged = "@time=2026-01-01T00:00:00.000Z;msgid=a1 :bob!b@h PRIVMSG #rete :hi";
    assert_eq!(with_time(tagged, t), tagged);
}

#[test]
fn a_services_message_is_escaped_before_it_reaches_a_host() {
    let shown = shown_message("no such network\u{1b}[2J\r\nfake line");
    assert_eq!(shown, "no such network\\u{1B}[2J\\r\\nfake line");
    assert_eq!(shown_message("plain text"), "plain text");
}

fn live_row(seq: u64) -> ServerFrame {
    ServerFrame::Line(LineFrame {
        stream: stream(),
        seq,
        time: 1_764_644_400_000,
        line: IrcLine::new(":bob!b@h PRIVMSG #rete :hi"),
        replay: false,
    })
}

fn point(after: u64) -> ResumePoint {
    ResumePoint {
        stream: stream(),
        after,
    }
}

/// Bug (issue 32, 9): a restarted reterm showed 50 of 120 rows missed,
/// since its resume points lived in memory only. Points kept from an
/// earlier run are offered at the first `auth`, and the stream they resume
/// is not fetched as if new.
#[test]
fn resume_points_from_an_earlier_run_are_offered_and_not_fetched_again() {
    let mut b = Bridge::default();
    let mut read = 0;
    let opened = b.handle_open(0, NET, Ok(Some(Token::new("rct1_first"))), 7, || {
        read += 1;
        vec![point(30)]
    });
    assert_eq!(opened, Opened::Authenticating);
    assert_eq!(outputs(&mut b), ["send auth resume=1"]);
    feed(&mut b, 1, hello_on(NET, NetworkState::Connected));
    feed(&mut b, 2, ServerFrame::Ready(Ready {}));
    let _ = outputs(&mut b);
    b.fetch_first_history(3, vec!["#rete".into()]);
    assert!(outputs(&mut b).is_empty(), "resumed exactly: not fetched");
    // The store is read once, at the client's making.
    b.handle_closed();
    let _ = b.handle_open(10, NET, Ok(Some(Token::new("rct1_first"))), 7, || {
        read += 1;
        Vec::new()
    });
    assert_eq!(read, 1);
}

#[test]
fn resume_points_are_stored_when_they_moved_at_most_every_interval() {
    let mut b = attached();
    // At `ready`: the point the attach set (the stream's latest).
    assert_eq!(b.resume_to_store(3, true), Some(vec![point(100)]));
    assert_eq!(b.resume_to_store(4, true), None, "unchanged");
    feed(&mut b, 10, live_row(101));
    let _ = outputs(&mut b);
    assert_eq!(b.resume_to_store(11, false), None, "too soon");
    let due = 3 + RESUME_STORE_INTERVAL_MS;
    assert_eq!(b.resume_to_store(due, false), Some(vec![point(101)]));
    feed(&mut b, due + 1, live_row(102));
    let _ = outputs(&mut b);
    // A connection's end stores at once.
    b.handle_closed();
    assert_eq!(b.resume_to_store(due + 2, true), Some(vec![point(102)]));
}
