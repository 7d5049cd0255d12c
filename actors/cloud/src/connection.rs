//! One client connection: the protocol gate (`ServerConnection`) fed by the
//! WebSocket, and the service's answers to what it hands out.
//!
//! After a good `auth` the connection is bound to one user: [`Bound`] is
//! set once and every store query and session lookup below takes its
//! `user`, so a frame naming another user's network or stream finds nothing
//! (`unknown_network`, `unknown_stream`). Each stream's rows go through a
//! `StreamFeed`: replay from the store, then live, each row once in order.

use crate::admission::Seat;
use crate::hub::{sasl_of, Hub, HubOptions, Live};
use crate::sends::{Outcome, Relay};
use crate::store::{BacklogEnd, ChainId, FoundChain, StoreError, UserId};
use crate::tokens::new_token;
use crate::ws::{close_message, Ws};
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use futures_util::{SinkExt, StreamExt};
use rete_actors::wall_clock;
use rete_cloud_protocol::client::MAX_UNACKED_SENDS;
use rete_cloud_protocol::codec::{encode_server, MAX_FRAME_BYTES};
use rete_cloud_protocol::config::ConfigEntry;
use rete_cloud_protocol::cursor::Offer;
use rete_cloud_protocol::frame::{
    Auth, Backlog, BacklogRow, Before, ClientFrame, Config, ConfigUpdate, ErrorFrame, Fetch, Hello,
    LineFrame, NetworkId, NetworkInfo, NetworkState, NetworkUpdate, Ready, RequestId, Send,
    SendAck, ServerFrame, StreamId, Sync,
};
use rete_cloud_protocol::replay::{plan_resume, NextRead, ResumePlan, StreamFeed};
use rete_cloud_protocol::server::{ServerAction, ServerConfig, ServerConnection};
use rete_cloud_protocol::token_chain::{AuthOutcome, TokenChain, TokenHash};
use rete_cloud_protocol::{ErrorCode, IrcLine};
use rete_engine::line::{message_part, Line, MAX_MESSAGE_BYTES};
use rete_engine::session::CommandError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::Message;

/// How often a change to a token chain is read and saved again when
/// another save came first (compare-and-swap across connections and nodes).
const SAVE_ATTEMPTS: usize = 5;

/// Rows read from the store per step of a replay.
const REPLAY_CHUNK: u64 = 200;

/// The shortest time an attached connection waits between the
/// acknowledgement of one rotation and the start of the next, whatever
/// `rotate_after_ms` says: `0` means "rotate at every attach", and must not
/// make an attached connection rotate in a loop. Together with "never while
/// a rotation is in flight" it bounds a connection to one rotation per
/// second, each waiting for the client's durable store.
const ATTACHED_ROTATE_FLOOR_MS: u64 = 1_000;

/// The user a connection serves, fixed at authentication.
struct Bound {
    user: UserId,
    chain: ChainId,
    /// The hash of the token this connection holds now (the one presented,
    /// then the rotated one once acknowledged), to find its chain again.
    token: TokenHash,
    /// The rotation in flight: the new token's hash.
    rotating: Option<TokenHash>,
}

/// Why the loop stops.
struct Closed;

struct Conn {
    hub: Arc<Hub>,
    id: u64,
    sink: futures_util::stream::SplitSink<Ws, Message>,
    gate: ServerConnection,
    start: Instant,
    seat: Seat,
    bound: Option<Bound>,
    feeds: HashMap<StreamId, (NetworkId, StreamFeed)>,
    /// When this attached connection's token is next rotated: armed at
    /// authentication and at each acknowledged rotation, unset while a
    /// rotation is in flight (see [`ATTACHED_ROTATE_FLOOR_MS`]).
    rotate_at: Option<Instant>,
    /// This connection's sends not yet written, each resolving to its
    /// answer (see [`crate::sends`]).
    sends: FuturesUnordered<BoxFuture<'static, SendDone>>,
}

/// A send's end, as its connection answers it.
struct SendDone {
    id: RequestId,
    network: NetworkId,
    /// A repeat of an id that was on its way already.
    duplicate: bool,
    outcome: Outcome,
}

/// The protocol gate's settings for this service.
pub fn server_config(options: &HubOptions) -> ServerConfig {
    ServerConfig {
        heartbeat_ms: options.heartbeat_ms,
        ..ServerConfig::default()
    }
}

/// Serves one WebSocket until it closes.
///
/// `accepted` is when the TCP connection was accepted: the gate's times
/// count from it, so the auth timeout covers the handshakes before this.
/// `seat` is the connection's place in the budget, given back as it ends.
pub async fn serve(
    hub: Arc<Hub>,
    ws: Ws,
    id: u64,
    mut shutdown: watch::Receiver<bool>,
    accepted: Instant,
    seat: Seat,
) {
    let (sink, mut stream) = ws.split();
    let config = server_config(&hub.options);
    let mut conn = Conn {
        hub,
        id,
        sink,
        gate: ServerConnection::new(0, config),
        start: accepted,
        seat,
        bound: None,
        feeds: HashMap::new(),
        rotate_at: None,
        sends: FuturesUnordered::new(),
    };
    let mut live: Option<broadcast::Receiver<Live>> = None;
    loop {
        match conn.pump().await {
            Ok(Some(rx)) => live = Some(rx),
            Ok(None) => {}
            Err(Closed) => return,
        }
        let now = conn.now();
        let deadline = conn.gate.poll_timeout().unwrap_or(now + 60_000);
        let sleep = tokio::time::sleep_until(
            (conn.start + std::time::Duration::from_millis(deadline)).into(),
        );
        tokio::select! {
            msg = stream.next() => match msg {
                Some(Ok(Message::Text(t))) => conn.gate.handle_text(conn.now(), t.as_str()),
                Some(Ok(Message::Binary(_))) => conn.gate.handle_binary(conn.now()),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(e))) => {
                    // Past even the transport's hard limit: answered as the
                    // codec answers a message over the frame limit, with the
                    // size the transport saw.
                    let size = match e {
                        CapacityError::MessageTooLong { size, .. } => size,
                        CapacityError::TooManyHeaders => MAX_FRAME_BYTES + 1,
                    };
                    conn.gate.handle_too_large(conn.now(), size);
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    conn.gate.handle_closed();
                    return;
                }
            },
            l = next_live(&mut live) => match l {
                Ok(l) => { if conn.on_live(l).await.is_err() { return; } }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if conn.catch_up_all().await.is_err() { return; }
                }
                Err(broadcast::error::RecvError::Closed) => live = None,
            },
            _ = sleep => conn.gate.handle_timeout(conn.now()),
            _ = sleep_until_some(conn.rotate_at) => conn.rotate_while_attached(),
            Some(done) = conn.sends.next(), if !conn.sends.is_empty() => conn.send_done(done),
            _ = shutdown.changed() => conn.gate.shut_down(conn.now()),
        }
    }
}

async fn next_live(
    live: &mut Option<broadcast::Receiver<Live>>,
) -> Result<Live, broadcast::error::RecvError> {
    match live {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or for ever when it is unset.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The chain with the service's grace period (`serve --grace-ms`), which
/// governs whatever a chain was created with.
fn with_grace(mut f: FoundChain, grace_ms: u64) -> FoundChain {
    if let Ok(t) =
        TokenChain::from_entries(f.tokens.entries().to_vec(), f.tokens.is_revoked(), grace_ms)
    {
        f.tokens = t;
    }
    f
}

/// What attached clients are told of a network removed from the account:
/// a `network` frame of version 1 (whose states have no "removed"), saying
/// `disconnected` with this reason. See PROTOCOL.md, "Streams".
fn removed_update(network: NetworkId) -> NetworkUpdate {
    NetworkUpdate {
        network,
        state: NetworkState::Disconnected,
        nick: None,
        error: Some(REMOVED_REASON.to_owned()),
    }
}

/// The `error` of a removed network's last `network` frame.
const REMOVED_REASON: &str = "removed from this account";

fn internal(e: &StoreError) -> ErrorFrame {
    tracing::error!(target: "rete::cloud", "{e}");
    ErrorFrame::new(ErrorCode::Internal, "the service's store failed")
}

impl Conn {
    fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// A token this connection presented failed: counted against its
    /// address, and said in the log (never the token) when that address has
    /// used its last try for a while.
    fn auth_failed(&self) {
        if self.seat.auth_failed(self.hub.uptime_ms()) {
            tracing::warn!(
                target: "rete::cloud",
                "connection {}: too many failed authentications from its address; its connections are refused for a while",
                self.id
            );
        }
    }

    /// Carries out every action the gate has; a new live channel after auth.
    async fn pump(&mut self) -> Result<Option<broadcast::Receiver<Live>>, Closed> {
        let mut live = None;
        while let Some(action) = self.gate.poll_action() {
            match action {
                ServerAction::Send(f) => self.write(&f).await?,
                ServerAction::Close { status } => return Err(self.close(status).await),
                ServerAction::Authenticate(auth) => live = self.authenticate(auth).await?,
                ServerAction::Request(r) => self.request(r).await,
                ServerAction::TokenAcknowledged(g) => self.token_acked(g),
            }
        }
        Ok(live)
    }

    /// Writes the frames queued so far (used inside a long replay).
    async fn flush(&mut self) -> Result<(), Closed> {
        while let Some(action) = self.gate.poll_action() {
            match action {
                ServerAction::Send(f) => self.write(&f).await?,
                ServerAction::Close { status } => return Err(self.close(status).await),
                // No input is read while a replay runs, so nothing else is queued.
                _ => {}
            }
        }
        Ok(())
    }

    async fn write(&mut self, frame: &ServerFrame) -> Result<(), Closed> {
        let text = match encode_server(frame) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(target: "rete::cloud", "a frame could not be encoded: {e}");
                return Ok(());
            }
        };
        self.sink
            .send(Message::text(text))
            .await
            .map_err(|_| Closed)
    }

    async fn close(&mut self, status: u16) -> Closed {
        let _ = self.sink.send(close_message(status)).await;
        let _ = self.sink.close().await;
        Closed
    }

    fn send(&mut self, frame: ServerFrame) {
        let now = self.now();
        self.gate.send(now, frame);
    }

    fn refuse(
        &mut self,
        id: &rete_cloud_protocol::frame::RequestId,
        code: ErrorCode,
        message: String,
    ) {
        let now = self.now();
        self.gate.refuse_request(now, id.clone(), code, message);
    }

    async fn authenticate(
        &mut self,
        auth: Auth,
    ) -> Result<Option<broadcast::Receiver<Live>>, Closed> {
        let hash = TokenHash::of(&auth.token);
        let now = self.now();
        let grace = self.hub.options.grace_ms;
        // Read, judged and saved as one step, and again when another
        // connection (on this node or another) saved the chain in between.
        let judged = self.hub.store(|s| {
            for _ in 0..SAVE_ATTEMPTS {
                let Some(mut found) = s.chain_by_hash(&hash)?.map(|f| with_grace(f, grace)) else {
                    return Ok(None);
                };
                let wall = wall_clock::now().unsigned();
                let outcome = found.tokens.authenticate(wall, &auth.token);
                let since = match outcome {
                    AuthOutcome::AcceptedPending { .. } => wall,
                    _ => found.current_since_ms,
                };
                match s.save_chain(found.chain, &found.tokens, since, found.version) {
                    Ok(()) => {
                        found.current_since_ms = since;
                        return Ok(Some((found, outcome)));
                    }
                    Err(StoreError::Conflict(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(StoreError::Conflict(
                "the token chain, at every try,".into(),
            ))
        });
        let wall = wall_clock::now().unsigned();
        let (found, outcome) = match judged {
            Ok(Some(judged)) => judged,
            Ok(None) => {
                self.auth_failed();
                self.gate
                    .refuse(now, ErrorCode::AuthFailed, "unknown token");
                return Ok(None);
            }
            Err(e) => {
                self.gate
                    .refuse(now, ErrorCode::Internal, internal(&e).message);
                return Ok(None);
            }
        };
        let since = found.current_since_ms;
        if let Some(code) = outcome.error_code() {
            let message = match outcome {
                AuthOutcome::Reused { .. } => {
                    "this token was replaced and used again; every token of its chain is revoked"
                }
                AuthOutcome::Revoked => "every token of this chain is revoked",
                _ => "unknown token",
            };
            self.auth_failed();
            self.gate.refuse(now, code, message);
            return Ok(None);
        }
        let user = found.user;
        if self.seat.bind(user).is_err() {
            tracing::info!(
                target: "rete::cloud",
                "connection {}: refused, its user has {} clients attached",
                self.id,
                self.hub.options.limits.clients_per_user
            );
            self.gate.refuse(
                now,
                ErrorCode::TooManyConnections,
                "this user has as many clients attached as the service allows; close one and reconnect",
            );
            return Ok(None);
        }
        // Subscribe before reading the extents: a row stored meanwhile is
        // then both in the store and in the channel, and the feed drops the
        // second copy.
        let live = self.hub.subscribe(user);
        self.bound = Some(Bound {
            user,
            chain: found.chain,
            token: hash,
            rotating: None,
        });
        let networks = match self.hub.store(|s| s.networks(user)) {
            Ok(n) => n,
            Err(e) => {
                self.gate
                    .refuse(now, ErrorCode::Internal, internal(&e).message);
                return Ok(None);
            }
        };
        let mut infos = Vec::new();
        let mut extents = HashMap::new();
        for n in &networks {
            let extent = match self.hub.store(|s| s.extent(user, &n.network)) {
                Ok(e) => e,
                Err(e) => {
                    self.gate
                        .refuse(now, ErrorCode::Internal, internal(&e).message);
                    return Ok(None);
                }
            };
            extents.insert(n.stream.clone(), extent);
            let (state, nick) = self.hub.network_state(user, &n.network).await;
            infos.push(NetworkInfo {
                network: n.network.clone(),
                stream: n.stream.clone(),
                name: n.settings.name.clone(),
                state,
                nick,
                earliest: extent.earliest,
                latest: extent.latest,
            });
        }
        self.gate.accept(
            self.now(),
            Hello {
                version: 0,
                user: found.user_name,
                heartbeat_ms: 0,
                max_frame_bytes: 0,
                networks: infos,
            },
        );
        for n in &networks {
            let lines = self.hub.sync_of(user, &n.network).await;
            for chunk in lines.chunks(100) {
                self.send(ServerFrame::Sync(Sync {
                    stream: n.stream.clone(),
                    lines: chunk.iter().cloned().map(IrcLine::new).collect(),
                }));
            }
            let extent = extents[&n.stream];
            let plan = auth
                .resume
                .iter()
                .find(|r| r.stream == n.stream)
                .map_or(ResumePlan::UpToDate, |r| plan_resume(extent, r.after));
            match plan {
                ResumePlan::Gone { earliest, latest } => {
                    let mut e = ErrorFrame::new(
                        ErrorCode::ResumePointGone,
                        format!("rows before {earliest} are no longer stored"),
                    );
                    e.stream = Some(n.stream.clone());
                    e.earliest = Some(earliest);
                    e.latest = Some(latest);
                    self.send(ServerFrame::Error(e));
                }
                ResumePlan::Unknown { latest } => {
                    let after = auth
                        .resume
                        .iter()
                        .find(|r| r.stream == n.stream)
                        .map_or(0, |r| r.after);
                    let mut e = ErrorFrame::new(
                        ErrorCode::ResumePointUnknown,
                        format!("the stream has no row {after}; resume from 0 to start over"),
                    );
                    e.stream = Some(n.stream.clone());
                    e.latest = Some(latest);
                    self.send(ServerFrame::Error(e));
                }
                _ => {}
            }
            self.feeds.insert(
                n.stream.clone(),
                (n.network.clone(), StreamFeed::start(plan, extent)),
            );
            self.catch_up(&n.stream).await?;
        }
        for r in &auth.resume {
            if !self.feeds.contains_key(&r.stream) {
                let mut e = ErrorFrame::new(
                    ErrorCode::UnknownStream,
                    "resume names a stream this account does not have",
                );
                e.stream = Some(r.stream.clone());
                self.send(ServerFrame::Error(e));
            }
        }
        self.send(ServerFrame::Ready(Ready {}));
        let rotate_due = matches!(outcome, AuthOutcome::AcceptedInGrace { .. })
            || wall.saturating_sub(since) >= self.hub.options.rotate_after_ms;
        if rotate_due {
            self.rotate();
        } else {
            self.arm_rotation(since, wall);
        }
        Ok(Some(live))
    }

    /// Arms the rotation of this attached connection's token, current since
    /// `since` (wall clock), for when it reaches `rotate_after_ms`, and no
    /// sooner than [`ATTACHED_ROTATE_FLOOR_MS`] after `since`.
    fn arm_rotation(&mut self, since: u64, wall: u64) {
        let age_due = self
            .hub
            .options
            .rotate_after_ms
            .max(ATTACHED_ROTATE_FLOOR_MS);
        let wait = since.saturating_add(age_due).saturating_sub(wall);
        self.rotate_at = Some(Instant::now() + std::time::Duration::from_millis(wait));
    }

    /// The attached connection's timer fired: rotate, unless a rotation is
    /// in flight already (then its acknowledgement arms the next one).
    fn rotate_while_attached(&mut self) {
        self.rotate_at = None;
        if self.bound.as_ref().is_some_and(|b| b.rotating.is_none()) {
            self.rotate();
        }
    }

    /// Begins a rotation: the pending hash is stored before the token is sent.
    /// A store error is fatal to the connection (`internal`), so the client
    /// reconnects and its `auth` checks the token's age again.
    fn rotate(&mut self) {
        let Some(b) = self.bound.as_mut() else { return };
        let token = new_token();
        let (hub, chain_id, current) = (self.hub.clone(), b.chain, b.token);
        let grace = hub.options.grace_ms;
        let result = hub.store(|s| -> Result<Option<u64>, StoreError> {
            for _ in 0..SAVE_ATTEMPTS {
                let Some(mut f) = s.chain_by_hash(&current)?.map(|f| with_grace(f, grace)) else {
                    return Ok(None);
                };
                if f.chain != chain_id {
                    return Ok(None);
                }
                let Ok(g) = f.tokens.begin_rotation(&token) else {
                    return Ok(None);
                };
                match s.save_chain(f.chain, &f.tokens, f.current_since_ms, f.version) {
                    Ok(()) => return Ok(Some(g)),
                    Err(StoreError::Conflict(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(StoreError::Conflict(
                "the token chain, at every try,".into(),
            ))
        });
        match result {
            Ok(Some(g)) => {
                b.rotating = Some(TokenHash::of(&token));
                let grace = self.hub.options.grace_ms;
                let now = self.now();
                self.gate.rotate(now, g, token, grace);
            }
            Ok(None) => {}
            Err(e) => {
                let f = internal(&e);
                self.send(ServerFrame::Error(f));
            }
        }
    }

    /// The client stored the rotated token: it becomes current.
    fn token_acked(&mut self, generation: u64) {
        let Some(b) = self.bound.as_mut() else { return };
        let Some(new) = b.rotating.take() else { return };
        let chain_id = b.chain;
        let wall = wall_clock::now().unsigned();
        let grace = self.hub.options.grace_ms;
        let result = self.hub.store(|s| -> Result<bool, StoreError> {
            for _ in 0..SAVE_ATTEMPTS {
                let Some(mut f) = s.chain_by_hash(&new)?.map(|f| with_grace(f, grace)) else {
                    return Ok(false);
                };
                if f.chain != chain_id || f.tokens.acknowledge(wall, generation).is_err() {
                    return Ok(false);
                }
                match s.save_chain(f.chain, &f.tokens, wall, f.version) {
                    Ok(()) => return Ok(true),
                    Err(StoreError::Conflict(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(StoreError::Conflict(
                "the token chain, at every try,".into(),
            ))
        });
        match result {
            Ok(true) => b.token = new,
            // Given up (a later token of the chain was taken first, on
            // another connection) or the chain revoked meanwhile: the
            // client is told, as for any acknowledgement of a rotation not
            // waiting, and the next rotation reads the chain again.
            Ok(false) => {
                let e = ErrorFrame::new(
                    ErrorCode::RotationNotPending,
                    format!(
                        "generation {generation} is no longer waiting: a later token of this chain was taken first, or the chain was revoked"
                    ),
                );
                self.send(ServerFrame::Error(e));
            }
            Err(e) => {
                let f = internal(&e);
                return self.send(ServerFrame::Error(f));
            }
        }
        self.arm_rotation(wall, wall);
    }

    /// Sends a stream's rows from the store up to its newest.
    async fn catch_up(&mut self, stream: &StreamId) -> Result<(), Closed> {
        let Some(user) = self.bound.as_ref().map(|b| b.user) else {
            return Ok(());
        };
        loop {
            let Some((network, feed)) = self.feeds.get(stream) else {
                return Ok(());
            };
            let network = network.clone();
            let extent = match self.hub.store(|s| s.extent(user, &network)) {
                Ok(e) => e,
                Err(e) => {
                    self.send(ServerFrame::Error(internal(&e)));
                    return self.flush().await;
                }
            };
            match feed.next_read(extent, REPLAY_CHUNK) {
                NextRead::Nothing => return Ok(()),
                NextRead::Lost(lost) => {
                    let mut e = ErrorFrame::new(
                        ErrorCode::ResumePointGone,
                        format!(
                            "rows {} to {} are no longer stored",
                            lost.start(),
                            lost.end()
                        ),
                    );
                    e.stream = Some(stream.clone());
                    e.earliest = Some(extent.earliest);
                    e.latest = Some(extent.latest);
                    self.send(ServerFrame::Error(e));
                    if let Some((_, f)) = self.feeds.get_mut(stream) {
                        f.skip_lost(extent);
                    }
                }
                NextRead::Rows(range) => {
                    let rows = match self.hub.store(|s| s.rows(user, &network, range)) {
                        Ok(r) => r,
                        Err(e) => {
                            self.send(ServerFrame::Error(internal(&e)));
                            return self.flush().await;
                        }
                    };
                    for row in rows {
                        let Some((_, f)) = self.feeds.get_mut(stream) else {
                            break;
                        };
                        if f.offer(row.seq) == Offer::Next {
                            let replay = f.is_replay(row.seq);
                            self.send(ServerFrame::Line(LineFrame {
                                stream: stream.clone(),
                                seq: row.seq,
                                time: row.time,
                                line: IrcLine::new(row.line),
                                replay,
                            }));
                        }
                    }
                    self.flush().await?;
                }
            }
        }
    }

    async fn catch_up_all(&mut self) -> Result<(), Closed> {
        let streams: Vec<StreamId> = self.feeds.keys().cloned().collect();
        for s in streams {
            self.catch_up(&s).await?;
        }
        self.flush().await
    }

    async fn on_live(&mut self, live: Live) -> Result<(), Closed> {
        match live {
            Live::Row {
                stream,
                seq,
                time,
                line,
            } => {
                let Some((_, feed)) = self.feeds.get_mut(&stream) else {
                    return Ok(());
                };
                match feed.offer(seq) {
                    Offer::Next => self.send(ServerFrame::Line(LineFrame {
                        stream,
                        seq,
                        time,
                        line: IrcLine::new(line),
                        replay: false,
                    })),
                    Offer::Duplicate => {}
                    // A broadcast was missed: the store has the rows.
                    Offer::Ahead { .. } => self.catch_up(&stream).await?,
                }
            }
            // A network added while this connection is attached is not in
            // its hello: the client learns of it at its next attach.
            Live::Network(update) => {
                if self.feeds.values().any(|(n, _)| *n == update.network) {
                    self.send(ServerFrame::Network(update));
                }
            }
            // The last frame about it: its feed ends here, so a later
            // `fetch` of its stream is `unknown_stream` and a `send` to it
            // `unknown_network`, and the next `hello` does not list it.
            Live::Removed(network) => {
                let before = self.feeds.len();
                self.feeds.retain(|_, (n, _)| *n != network);
                if self.feeds.len() != before {
                    self.send(ServerFrame::Network(removed_update(network)));
                }
            }
            Live::Config { origin, frame } => {
                if origin != self.id {
                    self.send(ServerFrame::Config(frame));
                }
            }
        }
        self.flush().await
    }

    async fn request(&mut self, request: ClientFrame) {
        let Some(user) = self.bound.as_ref().map(|b| b.user) else {
            return;
        };
        match request {
            ClientFrame::Fetch(f) => self.fetch(user, f),
            ClientFrame::Send(s) => self.send_line(user, s).await,
            ClientFrame::ConfigUpdate(c) => self.config_update(user, c).await,
            _ => {}
        }
    }

    fn fetch(&mut self, user: UserId, f: Fetch) {
        let Some(network) = self.feeds.get(&f.stream).map(|(n, _)| n.clone()) else {
            return self.refuse(
                &f.id,
                ErrorCode::UnknownStream,
                "fetch: this account has no such stream".into(),
            );
        };
        let end = match &f.before {
            None => BacklogEnd::Newest,
            Some(Before::Seq(s)) => BacklogEnd::Seq(*s),
            Some(Before::Time(t)) => BacklogEnd::Time(*t),
            Some(Before::Msgid(m)) => match self.hub.store(|s| s.seq_of_msgid(user, &network, m)) {
                Ok(Some(s)) => BacklogEnd::Seq(s),
                Ok(None) => {
                    return self.refuse(
                        &f.id,
                        ErrorCode::InvalidField,
                        "fetch: before.msgid names no stored row".into(),
                    )
                }
                Err(e) => return self.send(ServerFrame::Error(internal(&e))),
            },
        };
        let buffer = if f.buffer == "*" {
            "*".to_owned()
        } else {
            f.buffer.to_ascii_lowercase()
        };
        let mut rows = match self
            .hub
            .store(|s| s.backlog(user, &network, &buffer, end, f.limit + 1))
        {
            Ok(r) => r,
            Err(e) => return self.send(ServerFrame::Error(internal(&e))),
        };
        let mut more = rows.len() > f.limit as usize;
        rows.truncate(f.limit as usize);
        rows.reverse();
        let mut backlog = Backlog {
            id: f.id,
            stream: f.stream,
            buffer: f.buffer,
            rows: rows
                .into_iter()
                .map(|r| BacklogRow {
                    seq: r.seq,
                    time: r.time,
                    line: IrcLine::new(r.line),
                })
                .collect(),
            more,
        };
        // An answer always fits one frame: drop the oldest rows, say `more`.
        while backlog.rows.len() > 1
            && encode_server(&ServerFrame::Backlog(backlog.clone())).is_err()
        {
            let drop = (backlog.rows.len() / 4).max(1);
            backlog.rows.drain(..drop);
            more = true;
            backlog.more = more;
        }
        self.send(ServerFrame::Backlog(backlog));
    }

    async fn send_line(&mut self, user: UserId, s: Send) {
        let Some(chain) = self.bound.as_ref().map(|b| b.chain) else {
            return;
        };
        // A network another node holds (nodes sharing a database) is sent
        // to through the outbox.
        let session = self.hub.session_of(user, &s.network);
        let elsewhere = self.hub.is_shared() && self.feeds.values().any(|(n, _)| *n == s.network);
        if session.is_none() && !elsewhere {
            return self.refuse(
                &s.id,
                ErrorCode::UnknownNetwork,
                "send: this account has no such network".into(),
            );
        }
        let line = s.line.as_str().to_owned();
        // A server reads at most 512 bytes past the tags (CR LF included) and
        // cuts the rest without a word: refuse rather than acknowledge a line
        // that would not reach IRC whole.
        let body = message_part(&line).unwrap_or_default();
        if body.len() > MAX_MESSAGE_BYTES {
            return self.refuse(
                &s.id,
                ErrorCode::BadLine,
                format!(
                    "send: the line is {} bytes after its tags; IRC takes at most {MAX_MESSAGE_BYTES}",
                    body.len()
                ),
            );
        }
        if Line::parse(&line).is_err() {
            return self.refuse(
                &s.id,
                ErrorCode::BadLine,
                "send: the line is not an IRC line".into(),
            );
        }
        if self.sends.len() >= MAX_UNACKED_SENDS {
            return self.refuse(
                &s.id,
                ErrorCode::RateLimited,
                format!("send: {MAX_UNACKED_SENDS} sends of this connection are waiting for IRC already"),
            );
        }
        // Queued in the engine's outbox, paced by its flood throttler, and
        // acknowledged once written (`send_done`).
        let relay = match session {
            Some(session) => self.hub.relay(chain, &s.id, &session, line),
            None => self
                .hub
                .relay_elsewhere(chain, &s.id, user, &s.network, line),
        };
        let relay = match relay {
            Ok(r) => r,
            // Not knowing whether it went out, send nothing.
            Err(e) => return self.send(ServerFrame::Error(internal(&e))),
        };
        let (waiting, duplicate) = match relay {
            Relay::AlreadySent => {
                return self.send(ServerFrame::SendAck(SendAck {
                    id: s.id,
                    duplicate: true,
                }))
            }
            Relay::Joined(w) => (w, true),
            Relay::Started(w) => (w, false),
        };
        let (id, network) = (s.id, s.network);
        self.sends.push(Box::pin(async move {
            SendDone {
                id,
                network,
                duplicate,
                outcome: waiting.await,
            }
        }));
    }

    /// A line this connection sent reached its end: written (acknowledged),
    /// or not sent (refused, and not to be sent again).
    fn send_done(&mut self, done: SendDone) {
        let SendDone {
            id,
            network,
            duplicate,
            outcome,
        } = done;
        match outcome {
            Outcome::Sent => self.send(ServerFrame::SendAck(SendAck { id, duplicate })),
            Outcome::AlreadySent => self.send(ServerFrame::SendAck(SendAck {
                id,
                duplicate: true,
            })),
            Outcome::NotConnected => self.refuse(
                &id,
                ErrorCode::SendRefused,
                format!("{} is not connected", network.0),
            ),
            Outcome::NotSent => self.refuse(
                &id,
                ErrorCode::SendRefused,
                format!(
                    "{}: the connection to IRC ended before the line was written",
                    network.0
                ),
            ),
        }
    }

    async fn config_update(&mut self, user: UserId, c: ConfigUpdate) {
        let record = match self.hub.store(|s| s.networks(user)) {
            Ok(n) => n.into_iter().find(|n| n.network == c.network),
            Err(e) => return self.send(ServerFrame::Error(internal(&e))),
        };
        let Some(record) = record else {
            return self.refuse(
                &c.id,
                ErrorCode::UnknownNetwork,
                "config_update: this account has no such network".into(),
            );
        };
        let mut settings = record.settings;
        let (mut new_nick, mut channels_changed, mut login_changed) = (None, false, false);
        for e in &c.entries {
            match e {
                ConfigEntry::Nick(n) => {
                    settings.nick = n.clone();
                    new_nick = Some(n.clone());
                }
                ConfigEntry::Channels(ch) => {
                    settings.channels = ch.clone();
                    channels_changed = true;
                }
                other => {
                    login_changed = true;
                    match other {
                        ConfigEntry::Username(u) => settings.username = u.clone(),
                        ConfigEntry::Realname(r) => settings.realname = r.clone(),
                        ConfigEntry::SaslMechanism(m) => settings.sasl_mechanism = *m,
                        ConfigEntry::SaslUsername(u) => settings.sasl_username = u.clone(),
                        ConfigEntry::SaslPassword(p) => settings.sasl_password = p.clone(),
                        ConfigEntry::ServerPassword(p) => settings.server_password = p.clone(),
                        ConfigEntry::Nick(_) | ConfigEntry::Channels(_) => {}
                    }
                }
            }
        }
        // The live session first: the channels are joined and parted at once
        // (when connected), the login settings used from its next
        // connection. A name the server's CHANTYPES refuses changes nothing.
        if let Some(session) = self.hub.session_of(user, &c.network) {
            if channels_changed || login_changed {
                let live = settings.clone();
                let applied = session
                    .sender()
                    .command(move |cmd| {
                        if channels_changed {
                            let names: Vec<&str> =
                                live.channels.iter().map(String::as_str).collect();
                            cmd.set_channels(&names)?;
                        }
                        if login_changed {
                            cmd.set_login(
                                &live.username,
                                &live.realname,
                                live.server_password.as_ref().map(|p| p.expose()),
                                sasl_of(&live),
                            )?;
                        }
                        Ok(())
                    })
                    .await;
                if let Err(rete_actors::ReteError::Command(e)) = applied {
                    let message = match e {
                        CommandError::Invalid(m) => format!("config_update: {m}"),
                        _ => "config_update: the network cannot take these settings".into(),
                    };
                    return self.refuse(&c.id, ErrorCode::BadConfig, message);
                }
            }
        }
        if let Err(e) = self.hub.save_settings(user, &c.network, &settings) {
            return self.send(ServerFrame::Error(internal(&e)));
        }
        if let (Some(nick), Some(session)) = (new_nick, self.hub.session_of(user, &c.network)) {
            // Connected: change now; not connected: the next registration uses it.
            let _ = session.sender().command(move |cmd| cmd.nick(&nick)).await;
        }
        let entries: Vec<_> = c.entries.iter().map(ConfigEntry::shown).collect();
        self.hub.broadcast_config(
            user,
            self.id,
            Config {
                id: None,
                network: c.network.clone(),
                entries: entries.clone(),
            },
        );
        self.send(ServerFrame::Config(Config {
            id: Some(c.id),
            network: c.network,
            entries,
        }));
    }
}
