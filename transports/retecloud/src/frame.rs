//! The frames: one JSON object per WebSocket text message, named by its
//! `type` member.
//!
//! Frames are closed: an unknown `type` or member is refused (see
//! [`codec`](super::codec)), so a typo or a smuggled member is an error, not
//! silently ignored; a new member needs a new protocol version. The frames a
//! client sends ([`ClientFrame`]) and those a service sends ([`ServerFrame`])
//! are separate types, so neither side can accept the other's frames.
//!
//! Beyond the JSON shape, each frame has rules `problem` checks (ids,
//! stream names, IRC lines, limits); the codec runs it on every frame it
//! decodes or encodes.

use crate::config::{entries_problem, ConfigEntry, ConfigShown};
use crate::error_code::ErrorCode;
use crate::secret::{IrcLine, Token};
use serde::{Deserialize, Serialize};

/// A frame a client sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// The first frame: version, bearer token and resume points.
    Auth(Auth),
    /// Older rows of one buffer.
    Fetch(Fetch),
    /// One IRC line for a network.
    Send(Send),
    /// A change to a network's settings.
    ConfigUpdate(ConfigUpdate),
    /// The rotated token is stored; the old one may start its grace period.
    TokenAck(TokenAck),
    /// A heartbeat.
    Ping(Ping),
    /// The answer to a heartbeat.
    Pong(Pong),
}

/// A frame a service sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The answer to a good `auth`: the user's networks and streams.
    Hello(Hello),
    /// A network's IRC state as lines (not stored rows), before its replay.
    Sync(Sync),
    /// One stored row of a stream, replayed or live.
    Line(LineFrame),
    /// Every replay is done; what follows is live.
    Ready(Ready),
    /// A network's connection state changed.
    Network(NetworkUpdate),
    /// The answer to a `fetch`.
    Backlog(Backlog),
    /// A `send` was handed to the network.
    SendAck(SendAck),
    /// A network's settings after a `config_update`.
    Config(Config),
    /// A new token: store it, then acknowledge it.
    TokenRotate(TokenRotate),
    /// A heartbeat.
    Ping(Ping),
    /// The answer to a heartbeat.
    Pong(Pong),
    /// A refused frame or request.
    Error(ErrorFrame),
}

/// The names of the client's frame types, in [`ClientFrame`] order.
pub const CLIENT_TYPES: [&str; 7] = [
    "auth",
    "fetch",
    "send",
    "config_update",
    "token_ack",
    "ping",
    "pong",
];

/// The names of the service's frame types, in [`ServerFrame`] order.
pub const SERVER_TYPES: [&str; 12] = [
    "hello",
    "sync",
    "line",
    "ready",
    "network",
    "backlog",
    "send_ack",
    "config",
    "token_rotate",
    "ping",
    "pong",
    "error",
];

/// A client's name for one of its requests, echoed in the answer (and in an
/// error about it): 1 to 64 printable ASCII characters, no space.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub String);

/// A stream's id: the service's name for one network's sequence of rows.
/// It changes when the numbering restarts (a new store), so a resume point
/// from an old numbering can never match. 1 to 64 of `A-Z a-z 0-9 . _ : -`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StreamId(pub String);

/// A network's id within the user's account, same character rules as a
/// stream id. Stable for the network's lifetime.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NetworkId(pub String);

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

fn name_problem(what: &str, s: &str) -> Option<String> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(is_id_char) {
        Some(format!("{what} must be 1 to 64 of A-Z a-z 0-9 . _ : -"))
    } else {
        None
    }
}

impl RequestId {
    fn problem(&self) -> Option<String> {
        let ok = !self.0.is_empty()
            && self.0.len() <= 64
            && self.0.bytes().all(|b| b.is_ascii_graphic());
        (!ok).then(|| "id must be 1 to 64 printable ASCII characters, no space".into())
    }
}

impl StreamId {
    fn problem(&self) -> Option<String> {
        name_problem("stream", &self.0)
    }
}

impl NetworkId {
    /// Why this cannot be a network's id, or None: the rules every frame
    /// that carries one is checked against (so a service that stored a
    /// network under another id could never name it to a client).
    pub fn problem(&self) -> Option<String> {
        name_problem("network", &self.0)
    }
}

/// The first frame a client sends. `resume` names, per stream, the last
/// sequence number the client holds (0: none), so the service replays
/// exactly the rows after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// The protocol version the client speaks.
    pub version: u32,
    /// The bearer token.
    pub token: Token,
    /// The client's name and version, for the service's log (at most 64 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Where to resume each stream the client already holds rows of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resume: Vec<ResumePoint>,
}

/// A stream and the last sequence number the client holds of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumePoint {
    /// The stream.
    pub stream: StreamId,
    /// The last sequence number held; rows after it are replayed.
    pub after: u64,
}

/// The most resume points one `auth` may carry.
pub const MAX_RESUME_POINTS: usize = 256;

/// A request for rows of one buffer older than a point (or the newest rows).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fetch {
    /// The request's id, echoed in the `backlog`.
    pub id: RequestId,
    /// The stream whose store is read.
    pub stream: StreamId,
    /// The buffer: a channel, a nick (a query), or `*` for the server buffer.
    pub buffer: String,
    /// Rows strictly before this point; absent: the newest rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Before>,
    /// How many rows at most, 1 to [`MAX_FETCH_LIMIT`].
    pub limit: u32,
}

/// The most rows one fetch may ask for.
pub const MAX_FETCH_LIMIT: u32 = 500;

/// Where a fetch's rows end (exclusive).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Before {
    /// Before the row with this IRCv3 msgid.
    Msgid(String),
    /// Before this time (Unix milliseconds).
    Time(u64),
    /// Before this sequence number of the stream.
    Seq(u64),
}

/// One IRC line for a network, acknowledged by `send_ack` with the same id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Send {
    /// The client's id for this send; a repeat of an id the service has
    /// acknowledged is acknowledged again and not sent twice.
    pub id: RequestId,
    /// The network to send on.
    pub network: NetworkId,
    /// The line, without CR LF.
    pub line: IrcLine,
}

/// A change to a network's settings, applied whole or not at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigUpdate {
    /// The request's id, echoed in the `config`.
    pub id: RequestId,
    /// The network.
    pub network: NetworkId,
    /// The fields to change.
    pub entries: Vec<ConfigEntry>,
}

/// The client has stored the token of this rotation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenAck {
    /// The rotation's generation, from `token_rotate`.
    pub generation: u64,
}

/// A heartbeat; the other side answers with a `pong` carrying the same `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ping {
    /// A number the sender picks (counting up).
    pub n: u64,
}

/// The answer to a `ping`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pong {
    /// The ping's `n`.
    pub n: u64,
}

/// The service's answer to a good `auth`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The protocol version of this connection (the one `auth` asked for).
    pub version: u32,
    /// The account the token belongs to.
    pub user: String,
    /// Send something at least this often; silence for twice as long means
    /// the connection is dead.
    pub heartbeat_ms: u64,
    /// The frame size limit, in bytes of the text message, both ways.
    pub max_frame_bytes: usize,
    /// The user's networks, each with its stream.
    pub networks: Vec<NetworkInfo>,
}

/// A network as `hello` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkInfo {
    /// The network's id.
    pub network: NetworkId,
    /// Its stream's id.
    pub stream: StreamId,
    /// Its display name.
    pub name: String,
    /// Its IRC connection's state.
    pub state: NetworkState,
    /// The nick it is registered with, when connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nick: Option<String>,
    /// The oldest sequence number the store holds (latest + 1 when none).
    pub earliest: u64,
    /// The newest sequence number the stream has given out (0 when none).
    pub latest: u64,
}

/// A network's IRC connection state, as list_sessions names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkState {
    /// Registered with the IRC server.
    Connected,
    /// Opening the connection or registering.
    Connecting,
    /// Waiting to reconnect.
    Reconnecting,
    /// Not connected and not trying.
    Disconnected,
}

/// A network's current IRC state as lines (welcome numerics, ISUPPORT,
/// joins, names, topics), for the client's engine; not rows, no sequence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sync {
    /// The network's stream.
    pub stream: StreamId,
    /// The lines, in the order an IRC server would send them.
    pub lines: Vec<IrcLine>,
}

/// One row of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineFrame {
    /// The stream.
    pub stream: StreamId,
    /// Its sequence number: one more than the stream's previous row.
    pub seq: u64,
    /// When the service received it (Unix milliseconds).
    pub time: u64,
    /// The IRC line, as the IRC server sent it (or, for our own message on
    /// a server without echo-message, as the service echoed it).
    pub line: IrcLine,
    /// True while the row is replayed at attach (missed while detached).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
}

/// Every resumed stream has been replayed up to `hello`'s `latest`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ready {}

/// A network's connection state changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkUpdate {
    /// The network.
    pub network: NetworkId,
    /// Its new state.
    pub state: NetworkState,
    /// The nick, when connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nick: Option<String>,
    /// Why it disconnected, when it did (the server's text, for people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer to a `fetch`: rows oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backlog {
    /// The fetch's id.
    pub id: RequestId,
    /// The stream.
    pub stream: StreamId,
    /// The buffer.
    pub buffer: String,
    /// The rows, oldest first.
    pub rows: Vec<BacklogRow>,
    /// True when older rows exist (fetch again before the first row).
    pub more: bool,
}

/// One row of a backlog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BacklogRow {
    /// The row's sequence number in its stream (so a client can tell it
    /// from a row it already holds).
    pub seq: u64,
    /// When the service received it (Unix milliseconds).
    pub time: u64,
    /// The IRC line.
    pub line: IrcLine,
}

/// A `send`'s line was handed to the network's connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendAck {
    /// The send's id.
    pub id: RequestId,
    /// True when the id was acknowledged before and the line was not sent again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

/// A network's settings after a change (or when another client changed them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The config_update's id; absent when another client made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The network.
    pub network: NetworkId,
    /// The changed fields, secrets only as `set`/`unset`.
    pub entries: Vec<ConfigShown>,
}

/// A new token for this client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRotate {
    /// The rotation's number in the token's chain.
    pub generation: u64,
    /// The new token.
    pub token: Token,
    /// How long the old token still works after the acknowledgement.
    pub grace_ms: u64,
}

/// A refused frame or request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorFrame {
    /// The stable code.
    pub code: ErrorCode,
    /// For people; never holds a secret or a frame's content.
    pub message: String,
    /// True when the sender closes the connection after this frame.
    pub fatal: bool,
    /// The request this answers, when the refused frame had a readable id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The stream, for a resume error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamId>,
    /// The oldest sequence number held, for a resume error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest: Option<u64>,
    /// The newest sequence number, for a resume error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<u64>,
    /// The versions the service speaks, for unsupported_version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported: Option<Vec<u32>>,
}

impl ErrorFrame {
    /// An error with the code's default `fatal` flag and no other member.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            fatal: code.is_fatal_by_default(),
            id: None,
            stream: None,
            earliest: None,
            latest: None,
            supported: None,
        }
    }
}

fn buffer_problem(buffer: &str) -> Option<String> {
    let ok = !buffer.is_empty()
        && buffer.len() <= 200
        && !buffer
            .bytes()
            .any(|b| matches!(b, b' ' | b'\r' | b'\n' | 0));
    (!ok).then(|| "buffer must be 1 to 200 bytes with no space or line break".into())
}

fn line_problem(line: &IrcLine) -> Option<String> {
    line.problem().map(|p| format!("line {p}"))
}

/// A frame member's rule broken: the code to answer with and why.
pub type Problem = (ErrorCode, String);

fn invalid(p: Option<String>) -> Option<Problem> {
    p.map(|m| (ErrorCode::InvalidField, m))
}

impl ClientFrame {
    /// The request id, when the frame has one.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ClientFrame::Fetch(f) => Some(&f.id),
            ClientFrame::Send(s) => Some(&s.id),
            ClientFrame::ConfigUpdate(c) => Some(&c.id),
            _ => None,
        }
    }

    /// The first rule the frame breaks beyond its JSON shape, or None.
    pub fn problem(&self) -> Option<Problem> {
        match self {
            ClientFrame::Auth(a) => {
                if a.client.as_ref().is_some_and(|c| c.len() > 64) {
                    return invalid(Some("client is longer than 64 bytes".into()));
                }
                if a.resume.len() > MAX_RESUME_POINTS {
                    return invalid(Some(format!(
                        "resume holds more than {MAX_RESUME_POINTS} points"
                    )));
                }
                for (i, r) in a.resume.iter().enumerate() {
                    if let Some(p) = r.stream.problem() {
                        return invalid(Some(p));
                    }
                    if a.resume[..i].iter().any(|e| e.stream == r.stream) {
                        return invalid(Some(format!("resume names stream {} twice", r.stream.0)));
                    }
                }
                None
            }
            ClientFrame::Fetch(f) => {
                let limit = (f.limit == 0 || f.limit > MAX_FETCH_LIMIT)
                    .then(|| format!("limit must be 1 to {MAX_FETCH_LIMIT}"));
                let msgid = match &f.before {
                    Some(Before::Msgid(m)) if m.is_empty() || m.len() > 256 => {
                        Some("before.msgid must be 1 to 256 bytes".to_string())
                    }
                    _ => None,
                };
                invalid(
                    f.id.problem()
                        .or_else(|| f.stream.problem())
                        .or_else(|| buffer_problem(&f.buffer))
                        .or(limit)
                        .or(msgid),
                )
            }
            ClientFrame::Send(s) => invalid(s.id.problem().or_else(|| s.network.problem()))
                .or_else(|| line_problem(&s.line).map(|m| (ErrorCode::BadLine, m))),
            ClientFrame::ConfigUpdate(c) => invalid(c.id.problem().or_else(|| c.network.problem()))
                .or_else(|| entries_problem(&c.entries).map(|m| (ErrorCode::BadConfig, m))),
            ClientFrame::TokenAck(_) | ClientFrame::Ping(_) | ClientFrame::Pong(_) => None,
        }
    }
}

impl ServerFrame {
    /// The first rule the frame breaks beyond its JSON shape, or None.
    pub fn problem(&self) -> Option<Problem> {
        let p = match self {
            ServerFrame::Hello(h) => h.networks.iter().find_map(|n| {
                n.network
                    .problem()
                    .or_else(|| n.stream.problem())
                    .or_else(|| {
                        (n.earliest == 0 || n.earliest > n.latest.saturating_add(1)).then(|| {
                            format!("network {}: earliest must be 1 to latest + 1", n.network.0)
                        })
                    })
            }),
            ServerFrame::Sync(s) => s
                .stream
                .problem()
                .or_else(|| s.lines.iter().find_map(line_problem)),
            ServerFrame::Line(l) => l
                .stream
                .problem()
                .or_else(|| line_problem(&l.line))
                .or_else(|| (l.seq == 0).then(|| "seq starts at 1".to_string())),
            ServerFrame::Network(n) => n.network.problem(),
            ServerFrame::Backlog(b) => {
                b.id.problem()
                    .or_else(|| b.stream.problem())
                    .or_else(|| b.rows.iter().find_map(|r| line_problem(&r.line)))
            }
            ServerFrame::SendAck(a) => a.id.problem(),
            ServerFrame::Config(c) => {
                c.id.as_ref()
                    .and_then(RequestId::problem)
                    .or_else(|| c.network.problem())
            }
            ServerFrame::Error(e) => {
                e.id.as_ref()
                    .and_then(RequestId::problem)
                    .or_else(|| e.stream.as_ref().and_then(StreamId::problem))
            }
            ServerFrame::Ready(_)
            | ServerFrame::TokenRotate(_)
            | ServerFrame::Ping(_)
            | ServerFrame::Pong(_) => None,
        };
        invalid(p)
    }
}
