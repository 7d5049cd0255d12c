//! The client's side of a ReteCloud connection, without I/O.
//!
//! One [`CloudClient`] lives as long as the session, across reconnects: it
//! holds the token (and the last four it replaced, which the session's
//! secret scan needs), each stream's [`Cursor`] (the resume points), and
//! the sends not yet acknowledged. Per connection it runs
//! `auth → hello → (sync, replay) → ready → live`, keeps the heartbeat, and
//! decides whether a closed connection should be retried. It keeps its
//! requests within an allowance stricter than the service's, holding the
//! rest back in order, so the service never has to refuse one as
//! `rate_limited`.
//!
//! Inputs are `handle_*` calls with the time (milliseconds on the host's
//! monotonic clock); outputs are [`Action`]s from [`poll_action`] and the
//! next wake-up from [`poll_timeout`]. The host:
//! - opens the WebSocket and calls [`handle_open`]; sends every
//!   [`Action::Send`] frame; closes the socket on [`Action::Close`] and,
//!   when it says [`Reconnect::Retry`], opens again after its `Backoff`;
//! - on [`Action::PersistToken`] writes the token to the secrets file (0600,
//!   atomically) and then calls [`handle_token_persisted`] (or
//!   [`handle_token_persist_failed`]). **The acknowledgement is sent only
//!   after that confirmation**, and while a store is outstanding the client
//!   does not authenticate a new connection (it waits for the outcome), so
//!   the token it presents is always the one on disk;
//! - hands [`Action::Sync`] and [`Action::Row`] lines to the engine.
//!
//! [`poll_action`]: CloudClient::poll_action
//! [`poll_timeout`]: CloudClient::poll_timeout
//! [`handle_open`]: CloudClient::handle_open
//! [`handle_token_persisted`]: CloudClient::handle_token_persisted
//! [`handle_token_persist_failed`]: CloudClient::handle_token_persist_failed

use crate::allowance::Allowance;
use crate::codec::FrameError;
use crate::cursor::{Cursor, Offer};
use crate::error_code::ErrorCode;
use crate::frame::{
    Auth, Backlog, ClientFrame, Config, ErrorFrame, Hello, NetworkId, NetworkUpdate, Ping, Pong,
    Problem, RequestId, ResumePoint, Send, ServerFrame, StreamId, TokenAck,
};
use crate::secret::{IrcLine, Token};
use crate::PROTOCOL_VERSION;
use std::collections::{BTreeMap, VecDeque};

/// How many replaced tokens the client remembers (the session's secrets).
pub const REPLACED_TOKENS_KEPT: usize = 4;

/// The most sends waiting for their acknowledgement.
pub const MAX_UNACKED_SENDS: usize = 256;

/// Requests (sends, fetches, settings changes) the client sends at once
/// before it holds the next ones back: under the service's burst
/// ([`server::REQUEST_BURST`], 300) by a margin for frames that reach it
/// closer together than they left, so none is refused `rate_limited`.
///
/// [`server::REQUEST_BURST`]: crate::server::REQUEST_BURST
pub const REQUEST_BURST: u32 = 250;

/// One more request per this many milliseconds once the burst is spent:
/// slower than the service's 20.
pub const REQUEST_INTERVAL_MS: u64 = 25;

/// The heartbeat interval's bounds: a `hello` asking for less or more is
/// clamped, so a service cannot make the client ping in a busy loop or
/// never notice a dead connection.
pub const HEARTBEAT_MS_RANGE: (u64, u64) = (1_000, 300_000);

/// Settings that do not change across connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The client's name and version for `auth` (at most 64 bytes).
    pub client: String,
    /// How long to wait for `hello` after sending `auth`.
    pub auth_timeout_ms: u64,
    /// Prefix for send ids, random per client run (the host draws it), so
    /// ids never collide with another client of the same user.
    pub id_prefix: String,
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The service sent a fatal error.
    ServerError(ErrorCode),
    /// The service sent a frame the codec refused.
    BadFrame(ErrorCode),
    /// The service sent a frame that does not fit where the connection is
    /// (a row of an unknown stream, a row out of order, a frame before
    /// `hello`, a `hello` of another version).
    ProtocolViolation,
    /// No `hello` in time.
    AuthTimeout,
    /// Nothing received for twice the heartbeat interval.
    HeartbeatMissed,
    /// The WebSocket closed.
    ConnectionLost,
}

/// Whether to open a new connection after one closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconnect {
    /// Retry after the backoff; resume where the last connection stopped.
    Retry,
    /// Do not retry: retrying cannot help (a bad or revoked token, a version
    /// the service does not speak) until the person changes something.
    Stop,
}

/// What the host must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Action {
    /// Send this frame.
    Send(ClientFrame),
    /// Store this token (secrets file, 0600, atomic), then confirm with
    /// `handle_token_persisted(generation)`.
    PersistToken {
        /// The rotation's generation.
        generation: u64,
        /// The new token.
        token: Token,
    },
    /// Authenticated: the user's networks and streams.
    Attached(Hello),
    /// A network's state lines, for the engine.
    Sync {
        /// The stream.
        stream: StreamId,
        /// The lines.
        lines: Vec<IrcLine>,
    },
    /// One row for the engine, each exactly once and in order.
    Row {
        /// The stream.
        stream: StreamId,
        /// Its sequence number.
        seq: u64,
        /// When the service received it (Unix milliseconds).
        time: u64,
        /// The IRC line.
        line: IrcLine,
        /// True when it was missed while detached.
        replay: bool,
    },
    /// Every replay is done (the host may reset its backoff).
    Ready,
    /// These rows are gone from the service's store and will never come;
    /// the rows after them follow (replayed from the oldest row held).
    Gap {
        /// The stream.
        stream: StreamId,
        /// The rows lost.
        lost: std::ops::RangeInclusive<u64>,
    },
    /// The stream's numbering is not the one the resume point came from;
    /// rows resume live after `latest`.
    StreamReset {
        /// The stream.
        stream: StreamId,
        /// The newest row.
        latest: u64,
    },
    /// A network's state changed.
    Network(NetworkUpdate),
    /// The answer to a fetch.
    Backlog(Backlog),
    /// A send was handed to the network.
    SendAcked(RequestId),
    /// A network's settings after a change.
    Config(Config),
    /// A request was refused (the error names it by id).
    RequestFailed(ErrorFrame),
    /// Close the connection.
    Close {
        /// Why.
        reason: CloseReason,
        /// Whether to open another.
        reconnect: Reconnect,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No connection.
    Idle,
    /// Open, but a token store is outstanding: `auth` waits for it.
    WaitingForStore,
    /// `auth` sent, waiting for `hello` until the deadline.
    Authenticating { deadline: u64 },
    /// `hello` received, replays running.
    Replaying,
    /// `ready` received: live.
    Ready,
}

/// The client's side of ReteCloud (see the module doc).
#[derive(Debug)]
pub struct CloudClient {
    config: ClientConfig,
    phase: Phase,
    token: Token,
    /// Newest first.
    replaced: VecDeque<Token>,
    /// A rotation whose token the host is storing.
    storing: Option<(u64, Token)>,
    cursors: BTreeMap<StreamId, Cursor>,
    heartbeat_ms: u64,
    last_received: u64,
    last_sent: u64,
    ping_n: u64,
    unacked: VecDeque<Send>,
    /// This connection's requests within [`REQUEST_BURST`] and
    /// [`REQUEST_INTERVAL_MS`]; full again at each `hello`.
    allowance: Allowance,
    /// Requests held back until the allowance has room, in the order they
    /// were made (a send's place among them is its place on IRC).
    held: VecDeque<ClientFrame>,
    next_send: u64,
    stopped: Option<CloseReason>,
    duplicates: u64,
    actions: VecDeque<Action>,
}

impl CloudClient {
    /// A client holding `token`, resuming each stream after its point.
    pub fn new(
        token: Token,
        resume: impl IntoIterator<Item = ResumePoint>,
        config: ClientConfig,
    ) -> Self {
        Self {
            config,
            phase: Phase::Idle,
            token,
            replaced: VecDeque::new(),
            storing: None,
            cursors: resume
                .into_iter()
                .map(|r| (r.stream, Cursor::after(r.after)))
                .collect(),
            heartbeat_ms: HEARTBEAT_MS_RANGE.1,
            last_received: 0,
            last_sent: 0,
            ping_n: 0,
            unacked: VecDeque::new(),
            allowance: Allowance::full(0, REQUEST_BURST, REQUEST_INTERVAL_MS),
            held: VecDeque::new(),
            next_send: 1,
            stopped: None,
            duplicates: 0,
            actions: VecDeque::new(),
        }
    }

    // ---- getters ----

    /// The token to present (the one on disk).
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Every token value the session must treat as secret: the current one,
    /// the last four it replaced, and one being stored.
    pub fn secrets(&self) -> impl Iterator<Item = &Token> {
        std::iter::once(&self.token)
            .chain(self.replaced.iter())
            .chain(self.storing.as_ref().map(|(_, t)| t))
    }

    /// Where each stream would resume now.
    pub fn resume_points(&self) -> Vec<ResumePoint> {
        self.cursors
            .iter()
            .map(|(stream, c)| ResumePoint {
                stream: stream.clone(),
                after: c.last(),
            })
            .collect()
    }

    /// True once `ready` arrived on this connection.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Rows the service sent twice and the client dropped (the service
    /// should send none; counted for tests and the log).
    pub fn duplicates_dropped(&self) -> u64 {
        self.duplicates
    }

    /// Sends not yet acknowledged (resent, same ids, after a reconnect).
    pub fn unacked_sends(&self) -> usize {
        self.unacked.len()
    }

    /// True while [`send_line`](Self::send_line) can take another line.
    pub fn has_room_for_send(&self) -> bool {
        self.unacked.len() < MAX_UNACKED_SENDS
    }

    /// Forgets every send not yet acknowledged (the host told their
    /// senders they were not sent: a stop, which only the person's next
    /// connect ends); returns how many there were.
    pub fn forget_unacked_sends(&mut self) -> usize {
        self.held.retain(|f| !matches!(f, ClientFrame::Send(_)));
        std::mem::take(&mut self.unacked).len()
    }

    /// The rotated token the host was asked to store and has not answered
    /// for yet, with its generation.
    pub fn token_being_stored(&self) -> Option<(u64, &Token)> {
        self.storing.as_ref().map(|(g, t)| (*g, t))
    }

    /// Requests held back for the allowance on this connection.
    pub fn held_requests(&self) -> usize {
        self.held.len()
    }

    // ---- outputs ----

    /// The next thing the host must do.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        match self.phase {
            Phase::Authenticating { deadline } => Some(deadline),
            Phase::Replaying | Phase::Ready => {
                let heartbeat = self
                    .last_sent
                    .saturating_add(self.heartbeat_ms)
                    .min(self.last_received.saturating_add(2 * self.heartbeat_ms));
                // A take failed when the first request was held back.
                let held = (!self.held.is_empty()).then(|| self.allowance.next_token_at());
                Some(held.map_or(heartbeat, |at| at.min(heartbeat)))
            }
            Phase::Idle | Phase::WaitingForStore => None,
        }
    }

    // ---- commands ----

    /// Queues an IRC line for `network`; sent now when live, else when the
    /// next connection is ready. The id is the client's own, kept across
    /// reconnects, so the service sends the line once however often it is
    /// resent.
    pub fn send_line(
        &mut self,
        now: u64,
        network: NetworkId,
        line: IrcLine,
    ) -> Result<RequestId, Problem> {
        if self.unacked.len() >= MAX_UNACKED_SENDS {
            return Err((
                ErrorCode::RateLimited,
                format!("{MAX_UNACKED_SENDS} sends are waiting already"),
            ));
        }
        let id = RequestId(format!("{}-{}", self.config.id_prefix, self.next_send));
        let send = Send {
            id: id.clone(),
            network,
            line,
        };
        let frame = ClientFrame::Send(send.clone());
        if let Some(p) = frame.problem() {
            return Err(p);
        }
        self.next_send += 1;
        self.unacked.push_back(send);
        if self.phase == Phase::Ready {
            self.request(now, frame);
        }
        Ok(id)
    }

    /// Asks for up to `limit` rows of `buffer` in `stream` before `before`
    /// (the newest when None); the answer is an [`Action::Backlog`] with the
    /// returned id. Only on an attached connection: a fetch is not queued.
    pub fn fetch(
        &mut self,
        now: u64,
        stream: StreamId,
        buffer: String,
        before: Option<crate::frame::Before>,
        limit: u32,
    ) -> Result<RequestId, Problem> {
        if !matches!(self.phase, Phase::Replaying | Phase::Ready) {
            return Err((ErrorCode::NotAuthenticated, "not attached".into()));
        }
        let id = RequestId(format!("{}-f{}", self.config.id_prefix, self.next_send));
        let frame = ClientFrame::Fetch(crate::frame::Fetch {
            id: id.clone(),
            stream,
            buffer,
            before,
            limit,
        });
        if let Some(p) = frame.problem() {
            return Err(p);
        }
        self.next_send += 1;
        self.request(now, frame);
        Ok(id)
    }

    /// Asks the service to change `network`'s settings (whole or not at
    /// all); the answer is an [`Action::Config`] or an
    /// [`Action::RequestFailed`] with the returned id. Only on an attached
    /// connection, like a fetch: a settings change is the person's, made
    /// while they see the answer, so it is never queued for later.
    pub fn config_update(
        &mut self,
        now: u64,
        network: NetworkId,
        entries: Vec<crate::config::ConfigEntry>,
    ) -> Result<RequestId, Problem> {
        if !matches!(self.phase, Phase::Replaying | Phase::Ready) {
            return Err((ErrorCode::NotAuthenticated, "not attached".into()));
        }
        let id = RequestId(format!("{}-c{}", self.config.id_prefix, self.next_send));
        let frame = ClientFrame::ConfigUpdate(crate::frame::ConfigUpdate {
            id: id.clone(),
            network,
            entries,
        });
        if let Some(p) = frame.problem() {
            return Err(p);
        }
        self.next_send += 1;
        self.request(now, frame);
        Ok(id)
    }

    /// A new token from the host's store (typed by the person, or stored by
    /// another session of the account): clears a stop. The old one stays
    /// among the session's secrets, as a rotated-out token does.
    pub fn set_token(&mut self, token: Token) {
        if token != self.token {
            // Still one of the session's secrets, as a rotated-out one is.
            let old = std::mem::replace(&mut self.token, token);
            self.replaced.push_front(old);
            self.replaced.truncate(REPLACED_TOKENS_KEPT);
        }
        self.stopped = None;
    }

    // ---- inputs ----

    /// The WebSocket is open: authenticate (or wait for an outstanding
    /// token store first). After a stop, answers with the same close.
    pub fn handle_open(&mut self, now: u64) {
        if let Some(reason) = self.stopped {
            self.close(reason, Reconnect::Stop);
            return;
        }
        self.last_received = now;
        self.last_sent = now;
        if self.storing.is_some() {
            self.phase = Phase::WaitingForStore;
        } else {
            self.authenticate(now);
        }
    }

    fn authenticate(&mut self, now: u64) {
        let auth = ClientFrame::Auth(Auth {
            version: PROTOCOL_VERSION,
            token: self.token.clone(),
            client: Some(self.config.client.clone()).filter(|c| !c.is_empty()),
            resume: self.resume_points(),
        });
        self.phase = Phase::Authenticating {
            deadline: now.saturating_add(self.config.auth_timeout_ms),
        };
        self.send(now, auth);
    }

    /// The service's frame arrived.
    pub fn handle_frame(&mut self, now: u64, frame: ServerFrame) {
        if self.phase == Phase::Idle {
            return;
        }
        self.last_received = now;
        match frame {
            ServerFrame::Ping(Ping { n }) => self.send(now, ClientFrame::Pong(Pong { n })),
            ServerFrame::Pong(_) => {}
            ServerFrame::Error(e) => self.handle_error(e),
            ServerFrame::Hello(h) => self.handle_hello(now, h),
            _ if !matches!(self.phase, Phase::Replaying | Phase::Ready) => {
                self.close(CloseReason::ProtocolViolation, Reconnect::Retry)
            }
            ServerFrame::Sync(s) => self.actions.push_back(Action::Sync {
                stream: s.stream,
                lines: s.lines,
            }),
            ServerFrame::Line(l) => {
                let Some(cursor) = self.cursors.get_mut(&l.stream) else {
                    return self.close(CloseReason::ProtocolViolation, Reconnect::Retry);
                };
                match cursor.offer(l.seq) {
                    Offer::Next => self.actions.push_back(Action::Row {
                        stream: l.stream,
                        seq: l.seq,
                        time: l.time,
                        line: l.line,
                        replay: l.replay,
                    }),
                    Offer::Duplicate => self.duplicates += 1,
                    // A gap: resuming on a new connection fills it.
                    Offer::Ahead { .. } => {
                        self.close(CloseReason::ProtocolViolation, Reconnect::Retry)
                    }
                }
            }
            ServerFrame::Ready(_) => {
                self.phase = Phase::Ready;
                self.actions.push_back(Action::Ready);
                let pending: Vec<Send> = self.unacked.iter().cloned().collect();
                for s in pending {
                    self.request(now, ClientFrame::Send(s));
                }
            }
            ServerFrame::Network(n) => self.actions.push_back(Action::Network(n)),
            ServerFrame::Backlog(b) => self.actions.push_back(Action::Backlog(b)),
            ServerFrame::SendAck(a) => {
                self.unacked.retain(|s| s.id != a.id);
                self.actions.push_back(Action::SendAcked(a.id));
            }
            ServerFrame::Config(c) => self.actions.push_back(Action::Config(c)),
            ServerFrame::TokenRotate(r) => {
                self.storing = Some((r.generation, r.token.clone()));
                self.actions.push_back(Action::PersistToken {
                    generation: r.generation,
                    token: r.token,
                });
            }
        }
    }

    fn handle_hello(&mut self, now: u64, h: Hello) {
        if !matches!(self.phase, Phase::Authenticating { .. }) {
            return self.close(CloseReason::ProtocolViolation, Reconnect::Retry);
        }
        if h.version != PROTOCOL_VERSION {
            return self.close(
                CloseReason::ServerError(ErrorCode::UnsupportedVersion),
                Reconnect::Stop,
            );
        }
        self.heartbeat_ms = h
            .heartbeat_ms
            .clamp(HEARTBEAT_MS_RANGE.0, HEARTBEAT_MS_RANGE.1);
        // Streams the service no longer lists are gone; a stream not
        // resumed goes live after its newest row.
        let mut cursors = BTreeMap::new();
        for n in &h.networks {
            let cursor = self
                .cursors
                .get(&n.stream)
                .copied()
                .unwrap_or_else(|| Cursor::after(n.latest));
            cursors.insert(n.stream.clone(), cursor);
        }
        self.cursors = cursors;
        // The service's allowance began with the connection, before this
        // `hello`: one started now never runs ahead of it.
        self.allowance = Allowance::full(now, REQUEST_BURST, REQUEST_INTERVAL_MS);
        self.phase = Phase::Replaying;
        self.actions.push_back(Action::Attached(h));
    }

    fn handle_error(&mut self, e: ErrorFrame) {
        if e.fatal {
            let reconnect = match e.code {
                ErrorCode::AuthFailed | ErrorCode::TokenRevoked | ErrorCode::UnsupportedVersion => {
                    Reconnect::Stop
                }
                _ => Reconnect::Retry,
            };
            return self.close(CloseReason::ServerError(e.code), reconnect);
        }
        let point = match e.code {
            ErrorCode::ResumePointGone => e.earliest,
            _ => e.latest,
        };
        match (e.code, e.stream.clone(), point) {
            // At attach, or when the store evicted rows a replay still had
            // to send: the replay goes on from `earliest`.
            (ErrorCode::ResumePointGone, Some(stream), Some(earliest))
                if self.cursors.contains_key(&stream) =>
            {
                let Some(cursor) = self.cursors.get_mut(&stream) else {
                    return;
                };
                let first_lost = cursor.next();
                cursor.skip_to(earliest.saturating_sub(1));
                if first_lost < earliest {
                    self.actions.push_back(Action::Gap {
                        stream,
                        lost: first_lost..=earliest - 1,
                    });
                }
            }
            (ErrorCode::ResumePointUnknown, Some(stream), Some(latest))
                if self.cursors.contains_key(&stream) =>
            {
                self.cursors.insert(stream.clone(), Cursor::after(latest));
                self.actions
                    .push_back(Action::StreamReset { stream, latest });
            }
            _ => {
                // A refused send is not retried: the service said no.
                if let Some(id) = &e.id {
                    self.unacked.retain(|s| &s.id != id);
                }
                self.actions.push_back(Action::RequestFailed(e));
            }
        }
    }

    /// The service sent a message the codec refused.
    pub fn handle_bad_frame(&mut self, error: &FrameError) {
        if self.phase != Phase::Idle {
            self.close(CloseReason::BadFrame(error.code), Reconnect::Retry);
        }
    }

    /// The WebSocket closed (the service closed it, or the network failed).
    pub fn handle_closed(&mut self) {
        if self.phase != Phase::Idle {
            self.close(CloseReason::ConnectionLost, Reconnect::Retry);
        }
    }

    /// Time passed: heartbeats and deadlines.
    pub fn handle_timeout(&mut self, now: u64) {
        match self.phase {
            Phase::Authenticating { deadline } if now >= deadline => {
                self.close(CloseReason::AuthTimeout, Reconnect::Retry)
            }
            Phase::Replaying | Phase::Ready => {
                self.release_held(now);
                if now >= self.last_received.saturating_add(2 * self.heartbeat_ms) {
                    self.close(CloseReason::HeartbeatMissed, Reconnect::Retry);
                } else if now >= self.last_sent.saturating_add(self.heartbeat_ms) {
                    self.ping_n += 1;
                    self.send(now, ClientFrame::Ping(Ping { n: self.ping_n }));
                }
            }
            _ => {}
        }
    }

    /// The token of rotation `generation` is stored: it becomes the token
    /// presented from now on, and the rotation is acknowledged (on this
    /// connection if it is still up; else the next `auth`, presenting it,
    /// acknowledges it).
    pub fn handle_token_persisted(&mut self, now: u64, generation: u64) {
        let Some((g, token)) = self.storing.take_if(|(g, _)| *g == generation) else {
            return;
        };
        let old = std::mem::replace(&mut self.token, token);
        self.replaced.push_front(old);
        self.replaced.truncate(REPLACED_TOKENS_KEPT);
        match self.phase {
            Phase::Replaying | Phase::Ready => {
                self.send(now, ClientFrame::TokenAck(TokenAck { generation: g }))
            }
            Phase::WaitingForStore => self.authenticate(now),
            _ => {}
        }
    }

    /// The token of rotation `generation` was not stored (the store failed,
    /// or holds a later generation of the account's already): keep the old
    /// one and never acknowledge (the service abandons the rotation once a
    /// later one is taken).
    pub fn handle_token_persist_failed(&mut self, now: u64, generation: u64) {
        if self.storing.take_if(|(g, _)| *g == generation).is_some()
            && self.phase == Phase::WaitingForStore
        {
            self.authenticate(now);
        }
    }

    fn send(&mut self, now: u64, frame: ClientFrame) {
        self.last_sent = now;
        self.actions.push_back(Action::Send(frame));
    }

    /// Sends a request now if the allowance has room and none is held
    /// before it, else holds it back behind the others.
    fn request(&mut self, now: u64, frame: ClientFrame) {
        self.release_held(now);
        if self.held.is_empty() && self.allowance.take(now) {
            self.send(now, frame);
        } else {
            self.held.push_back(frame);
        }
    }

    /// Sends the held requests the allowance has room for now, in order.
    fn release_held(&mut self, now: u64) {
        while !self.held.is_empty() && self.allowance.take(now) {
            if let Some(frame) = self.held.pop_front() {
                self.send(now, frame);
            }
        }
    }

    fn close(&mut self, reason: CloseReason, reconnect: Reconnect) {
        self.phase = Phase::Idle;
        // Held sends stay unacknowledged and go out after the next `ready`;
        // a held fetch or settings change ends with the connection, as one
        // sent does.
        self.held.clear();
        if reconnect == Reconnect::Stop {
            self.stopped = Some(reason);
        }
        self.actions.push_back(Action::Close { reason, reconnect });
    }
}

#[cfg(test)]
mod tests;
