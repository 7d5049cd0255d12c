//! The service's side of one ReteCloud connection, without I/O: the gate
//! every frame passes before the service acts on it.
//!
//! [`ServerConnection`] enforces the protocol's rules for bad input, so the
//! service's WebSocket loop stays thin: the first frame must be `auth`
//! within the time allowed; a frame that cannot be decoded is answered with
//! its error code (fatal before authentication, and after it when the code
//! says so); a second `auth` is refused; `ping` is answered; a
//! `token_ack` is matched against the rotation in flight; heartbeats are
//! kept; requests past the connection's allowance (a burst of
//! [`REQUEST_BURST`], then one per [`REQUEST_INTERVAL_MS`]) are refused with
//! `rate_limited` and not handed out. What needs the service's state (judging a token against its
//! [`TokenChain`](super::token_chain::TokenChain), carrying out a request)
//! is handed out as a [`ServerAction`] and answered with a call
//! ([`accept`](ServerConnection::accept), [`refuse`](ServerConnection::refuse),
//! [`send`](ServerConnection::send)).
//!
//! A refused frame is never handed out, so nothing of it is stored or sent
//! to IRC. [`SentIds`] is the per-client memory of acknowledged send ids
//! the service keeps across connections, so a resent line goes to IRC once.

use crate::allowance::Allowance;
use crate::codec::{binary_message_error, decode_client, message_too_large};
use crate::error_code::ErrorCode;
use crate::frame::{
    Auth, ClientFrame, ErrorFrame, Hello, Ping, Pong, RequestId, ServerFrame, TokenRotate,
};
use crate::secret::Token;
use crate::PROTOCOL_VERSION;
use std::collections::{HashSet, VecDeque};

/// WebSocket close statuses (RFC 6455 §7.4.1) the service closes with.
pub mod close_status {
    /// The service is going away (`shutting_down`).
    pub const GOING_AWAY: u16 = 1001;
    /// A frame broke the protocol's rules.
    pub const POLICY_VIOLATION: u16 = 1008;
    /// A message over the frame limit.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
    /// The service failed.
    pub const INTERNAL_ERROR: u16 = 1011;
}

/// Settings for every connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// How long a new connection has to send `auth`.
    pub auth_timeout_ms: u64,
    /// The heartbeat interval `hello` announces.
    pub heartbeat_ms: u64,
    /// Requests (`fetch`, `send`, `config_update`) one connection may make
    /// at once before `rate_limited`: room for a client's whole resend
    /// queue (256 sends) after `ready`, and a few fetches.
    pub request_burst: u32,
    /// One more request is allowed per this many milliseconds (20: fifty a
    /// second, far above a person's pace and the control surface's caps).
    pub request_interval_ms: u64,
}

/// [`ServerConfig::request_burst`] by default.
pub const REQUEST_BURST: u32 = 300;

/// [`ServerConfig::request_interval_ms`] by default.
pub const REQUEST_INTERVAL_MS: u64 = 20;

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            auth_timeout_ms: 10_000,
            heartbeat_ms: 30_000,
            request_burst: REQUEST_BURST,
            request_interval_ms: REQUEST_INTERVAL_MS,
        }
    }
}

/// The id of a request frame.
fn request_id(frame: &ClientFrame) -> Option<&RequestId> {
    match frame {
        ClientFrame::Fetch(f) => Some(&f.id),
        ClientFrame::Send(s) => Some(&s.id),
        ClientFrame::ConfigUpdate(c) => Some(&c.id),
        _ => None,
    }
}

/// What the service must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum ServerAction {
    /// Write this frame.
    Send(ServerFrame),
    /// Judge this `auth` (its version is checked already): find the token's
    /// chain, then call `accept` with the `hello` or `refuse` with the code.
    Authenticate(Auth),
    /// Carry out a request of the authenticated user: a `fetch`, `send` or
    /// `config_update`, already checked against every frame rule. Answer it
    /// with `send` (its answer frame, or an error naming its id).
    Request(ClientFrame),
    /// The rotation of this generation is acknowledged: call
    /// `TokenChain::acknowledge` and store the chain.
    TokenAcknowledged(u64),
    /// Close the WebSocket with this status; nothing more is read from it.
    Close {
        /// The WebSocket close status.
        status: u16,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the first frame, `auth`.
    AwaitingAuth { deadline: u64 },
    /// `auth` handed out, waiting for the service's verdict.
    Judging { deadline: u64 },
    /// Authenticated: frames are requests.
    Open,
    /// Closed; every input is ignored.
    Closed,
}

/// One connection's gate (see the module doc).
#[derive(Debug)]
pub struct ServerConnection {
    config: ServerConfig,
    phase: Phase,
    rotation: Option<u64>,
    last_received: u64,
    last_sent: u64,
    ping_n: u64,
    allowance: Allowance,
    actions: VecDeque<ServerAction>,
}

impl ServerConnection {
    /// A connection opened at `now`.
    pub fn new(now: u64, config: ServerConfig) -> Self {
        Self {
            config,
            phase: Phase::AwaitingAuth {
                deadline: now.saturating_add(config.auth_timeout_ms),
            },
            rotation: None,
            last_received: now,
            last_sent: now,
            ping_n: 0,
            allowance: Allowance::full(now, config.request_burst, config.request_interval_ms),
            actions: VecDeque::new(),
        }
    }

    /// True once `accept` ran and until the connection closes.
    pub fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// True once the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// The next thing to do.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.actions.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        match self.phase {
            Phase::AwaitingAuth { deadline } | Phase::Judging { deadline } => Some(deadline),
            Phase::Open => Some(
                self.last_sent.saturating_add(self.config.heartbeat_ms).min(
                    self.last_received
                        .saturating_add(2 * self.config.heartbeat_ms),
                ),
            ),
            Phase::Closed => None,
        }
    }

    /// A text message arrived.
    pub fn handle_text(&mut self, now: u64, text: &str) {
        if self.phase == Phase::Closed {
            return;
        }
        self.last_received = now;
        let authenticated = self.phase == Phase::Open;
        let frame = match decode_client(text) {
            Ok(f) => f,
            Err(e) => {
                let error = e.to_error_frame(authenticated);
                return self.answer_error(now, error);
            }
        };
        match (self.phase, frame) {
            (Phase::AwaitingAuth { deadline }, ClientFrame::Auth(auth)) => {
                if auth.version != PROTOCOL_VERSION {
                    let mut e = ErrorFrame::new(
                        ErrorCode::UnsupportedVersion,
                        format!("this service speaks version {PROTOCOL_VERSION}"),
                    );
                    e.supported = Some(vec![PROTOCOL_VERSION]);
                    return self.answer_error(now, e);
                }
                self.phase = Phase::Judging { deadline };
                self.actions.push_back(ServerAction::Authenticate(auth));
            }
            (Phase::AwaitingAuth { .. } | Phase::Judging { .. }, _) => self.answer_error(
                now,
                ErrorFrame::new(
                    ErrorCode::NotAuthenticated,
                    "the first frame must be auth, then wait for hello",
                ),
            ),
            (_, ClientFrame::Auth(_)) => self.answer_error(
                now,
                ErrorFrame::new(
                    ErrorCode::AlreadyAuthenticated,
                    "this connection is authenticated already",
                ),
            ),
            (_, ClientFrame::Ping(Ping { n })) => self.send(now, ServerFrame::Pong(Pong { n })),
            (_, ClientFrame::Pong(_)) => {}
            (_, ClientFrame::TokenAck(ack)) => {
                if self.rotation == Some(ack.generation) {
                    self.rotation = None;
                    self.actions
                        .push_back(ServerAction::TokenAcknowledged(ack.generation));
                } else {
                    self.answer_error(
                        now,
                        ErrorFrame::new(
                            ErrorCode::RotationNotPending,
                            format!("no rotation of generation {} is waiting", ack.generation),
                        ),
                    );
                }
            }
            (_, request) => {
                if self.allowance.take(now) {
                    self.actions.push_back(ServerAction::Request(request));
                } else if let Some(id) = request_id(&request).cloned() {
                    self.refuse_request(
                        now,
                        id,
                        ErrorCode::RateLimited,
                        format!(
                            "more than {} requests at once, or over one per {} ms; this one was not carried out",
                            self.config.request_burst, self.config.request_interval_ms
                        ),
                    );
                }
            }
        }
    }

    /// A binary message arrived: refused, fatal.
    pub fn handle_binary(&mut self, now: u64) {
        if self.phase != Phase::Closed {
            self.last_received = now;
            let error = binary_message_error().to_error_frame(self.phase == Phase::Open);
            self.answer_error(now, error);
        }
    }

    /// A text message of `size` bytes arrived that the transport would not
    /// even read whole (past its own, larger limit): answered as one over
    /// the frame limit is, with its real size.
    pub fn handle_too_large(&mut self, now: u64, size: usize) {
        if self.phase != Phase::Closed {
            self.last_received = now;
            let error = message_too_large(size).to_error_frame(self.phase == Phase::Open);
            self.answer_error(now, error);
        }
    }

    /// The client closed the WebSocket (or the network failed).
    pub fn handle_closed(&mut self) {
        self.phase = Phase::Closed;
    }

    /// Time passed: the auth deadline and heartbeats.
    pub fn handle_timeout(&mut self, now: u64) {
        match self.phase {
            Phase::AwaitingAuth { deadline } | Phase::Judging { deadline } if now >= deadline => {
                self.answer_error(
                    now,
                    ErrorFrame::new(ErrorCode::AuthTimeout, "no auth in time"),
                )
            }
            Phase::Open => {
                if now
                    >= self
                        .last_received
                        .saturating_add(2 * self.config.heartbeat_ms)
                {
                    self.answer_error(
                        now,
                        ErrorFrame::new(
                            ErrorCode::HeartbeatMissed,
                            "nothing received for twice the heartbeat",
                        ),
                    );
                } else if now >= self.last_sent.saturating_add(self.config.heartbeat_ms) {
                    self.ping_n += 1;
                    self.send(now, ServerFrame::Ping(Ping { n: self.ping_n }));
                }
            }
            _ => {}
        }
    }

    /// The token is good: `hello` goes out and the connection is open. The
    /// service then sends `sync`, the replays and `ready` with
    /// [`send`](Self::send). The heartbeat announced is this connection's.
    pub fn accept(&mut self, now: u64, mut hello: Hello) {
        if !matches!(self.phase, Phase::Judging { .. }) {
            return;
        }
        hello.version = PROTOCOL_VERSION;
        hello.heartbeat_ms = self.config.heartbeat_ms;
        hello.max_frame_bytes = crate::codec::MAX_FRAME_BYTES;
        self.phase = Phase::Open;
        self.send(now, ServerFrame::Hello(hello));
    }

    /// The token is refused (`auth_failed` or `token_revoked`): the error
    /// goes out and the connection closes.
    pub fn refuse(&mut self, now: u64, code: ErrorCode, message: impl Into<String>) {
        if matches!(self.phase, Phase::Judging { .. }) {
            let mut e = ErrorFrame::new(code, message);
            e.fatal = true;
            self.answer_error(now, e);
        }
    }

    /// Sends a rotated token (made by `TokenChain::begin_rotation`); its
    /// `token_ack` comes back as [`ServerAction::TokenAcknowledged`].
    pub fn rotate(&mut self, now: u64, generation: u64, token: Token, grace_ms: u64) {
        if self.phase == Phase::Open {
            self.rotation = Some(generation);
            self.send(
                now,
                ServerFrame::TokenRotate(TokenRotate {
                    generation,
                    token,
                    grace_ms,
                }),
            );
        }
    }

    /// The service is stopping: `shutting_down`, then close.
    pub fn shut_down(&mut self, now: u64) {
        if self.phase != Phase::Closed {
            self.answer_error(
                now,
                ErrorFrame::new(ErrorCode::ShuttingDown, "the service is stopping"),
            );
        }
    }

    /// Sends a frame of the service's (an answer, a row, `ready`); a fatal
    /// error frame closes the connection after it.
    pub fn send(&mut self, now: u64, frame: ServerFrame) {
        if self.phase == Phase::Closed {
            return;
        }
        if let ServerFrame::Error(e) = frame {
            return self.answer_error(now, e);
        }
        self.last_sent = now;
        self.actions.push_back(ServerAction::Send(frame));
    }

    /// An error for a request, naming it by id; not fatal.
    pub fn refuse_request(
        &mut self,
        now: u64,
        id: RequestId,
        code: ErrorCode,
        message: impl Into<String>,
    ) {
        let mut e = ErrorFrame::new(code, message);
        e.id = Some(id);
        self.send(now, ServerFrame::Error(e));
    }

    fn answer_error(&mut self, now: u64, e: ErrorFrame) {
        let fatal = e.fatal;
        let status = match e.code {
            ErrorCode::FrameTooLarge => close_status::MESSAGE_TOO_BIG,
            ErrorCode::ShuttingDown => close_status::GOING_AWAY,
            ErrorCode::Internal => close_status::INTERNAL_ERROR,
            _ => close_status::POLICY_VIOLATION,
        };
        self.last_sent = now;
        self.actions
            .push_back(ServerAction::Send(ServerFrame::Error(e)));
        if fatal {
            self.phase = Phase::Closed;
            self.actions.push_back(ServerAction::Close { status });
        }
    }
}

/// The send ids a client had acknowledged, remembered for `ttl_ms` (and at
/// most `capacity` of them), so a line resent after a reconnect is
/// acknowledged again (`"duplicate":true`) without going to IRC twice. One
/// per token chain: a client's resend may come on any later connection.
/// This is the memory and its rules only; `rete-cloud` also writes each id
/// to its store and fills a chain's memory from there after a restart.
#[derive(Debug)]
pub struct SentIds {
    ttl_ms: u64,
    capacity: usize,
    order: VecDeque<(u64, RequestId)>,
    ids: HashSet<RequestId>,
}

/// How long acknowledged send ids are remembered: ten minutes.
pub const SENT_ID_TTL_MS: u64 = 600_000;

/// How many acknowledged send ids one chain remembers at most.
pub const SENT_IDS_CAPACITY: usize = 4_096;

impl SentIds {
    /// An empty memory.
    pub fn new(ttl_ms: u64, capacity: usize) -> Self {
        Self {
            ttl_ms,
            capacity: capacity.max(1),
            order: VecDeque::new(),
            ids: HashSet::new(),
        }
    }

    fn expire(&mut self, now: u64) {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_sub(*at) < self.ttl_ms && self.order.len() <= self.capacity {
                break;
            }
            if let Some((_, id)) = self.order.pop_front() {
                self.ids.remove(&id);
            }
        }
    }

    /// True when `id` was acknowledged within the time remembered.
    pub fn was_sent(&mut self, now: u64, id: &RequestId) -> bool {
        self.expire(now);
        self.ids.contains(id)
    }

    /// `id` was handed to IRC and acknowledged at `now`.
    pub fn record(&mut self, now: u64, id: RequestId) {
        if self.ids.insert(id.clone()) {
            self.order.push_back((now, id));
        }
        self.expire(now);
    }
}

#[cfg(test)]
mod tests;
