//! A ReteCloud session's side of the session actor.
//!
//! The connection task only moves text: each WebSocket text message arrives
//! as a `SessionMsg::Line` (with the same permit as an IRC line), and each
//! frame to send leaves through the same writer. Here the actor decodes
//! frames and feeds the session's one [`CloudClient`] (kept in
//! [`SessionShared`](super::SessionShared) across reconnects and actor
//! restarts, so a reattach resumes exactly), and carries out its actions:
//! the sync and rows of this session's network go to the engine (which runs
//! bridged: it sends only what a person or an agent asks for), the engine's
//! lines become `send` frames, a rotated token is stored before it is
//! acknowledged, and a refused token stops the retries.
//!
//! Frames reach the raw tap masked (`rete_redact::mask_retecloud_frame`):
//! every frame sent, and the frames received only while the session's raw
//! buffer is shown.

use super::older::{message_buffer, Older};
use super::{SessionMsg, SessionState};
use crate::cloud_backlog::{BacklogReply, CloudBacklogError, OlderRows, MAX_BACKLOG_ROWS};
use crate::cloud_settings::{shown_text, CloudSettingsError, SettingsReply};
use crate::connection::Outgoing;
use crate::raw_tap::Direction;
use ractor::ActorRef;
use rete_cloud_protocol::client::{ClientConfig, CloseReason, Reconnect};
use rete_cloud_protocol::frame::{Backlog, Before, NetworkId, NetworkState, RequestId, StreamId};
use rete_cloud_protocol::{
    decode_server, encode_client, Action, CloudClient, ErrorCode, IrcLine, Token,
};
use rete_engine::clock::Now;
use rete_engine::ids::BufferId;
use rete_engine::session::Ticket;
use rete_transports::{CloudConfig, TokenStored, Transport};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// How long the client waits for `hello` after `auth`.
const AUTH_TIMEOUT_MS: u64 = 15_000;

/// Rows of each channel fetched at a stream's first attach in a run.
const FIRST_FETCH_ROWS: u32 = 50;

/// A ReteCloud session's state beside its engine (empty for IRC).
#[derive(Default)]
pub(crate) struct CloudSide {
    /// Created at the first connection, from the stored token.
    client: Option<CloudClient>,
    /// This session's stream on the current attach.
    stream: Option<StreamId>,
    /// Agent lines sent as `send` frames, until acknowledged or refused.
    tickets: HashMap<RequestId, Ticket>,
    /// Set by an explicit connect: read the token again (the person may
    /// have set a new one).
    reload_token: bool,
    /// Streams whose recent history was fetched in this run: a stream is
    /// fetched at its first attach only (later ones resume exactly).
    fetched: std::collections::HashSet<StreamId>,
    /// Fetches in flight, by id.
    fetches: HashMap<RequestId, Fetching>,
    /// Each buffer's oldest row known, and whether older ones exist.
    older: Older,
    /// Answers to hosts' requests for older rows, sent once the rows'
    /// events are out (see `cloud_answer_backlogs`).
    answered: Vec<(BacklogReply, Result<OlderRows, CloudBacklogError>)>,
    /// Settings changes waiting for the service's answer, by id.
    settings: HashMap<RequestId, SettingsReply>,
}

/// A fetch in flight.
struct Fetching {
    /// The buffer asked for, as `fetch` names it.
    buffer: String,
    /// A host's request (the first attach's fetch has none): the engine's
    /// buffer the rows are counted in, and where the count goes.
    host: Option<(BufferId, BacklogReply)>,
    /// The fetch ends before the oldest row held (it has a `before`): its
    /// rows are older than every row of the buffer, even one of the same
    /// millisecond (see `Session::mark_batch_older`). The newest rows, as
    /// the first attach fetches them, may be as new as rows held.
    older: bool,
}

impl CloudSide {
    /// Asks the next connection to read the stored token again.
    pub(crate) fn reload_token(&mut self) {
        self.reload_token = true;
    }

    /// The connection's requests end unanswered: dropping their replies
    /// answers each caller `NoAnswer`, and no buffer stays "being fetched".
    fn settle_requests(&mut self) {
        self.settings.clear();
        self.fetches.clear();
        self.older.settle();
    }
}

/// The session's ReteCloud settings, if it is a ReteCloud session.
pub(crate) fn cloud_config(transport: &Transport) -> Option<&CloudConfig> {
    match transport {
        Transport::ReteCloud(c) => Some(c),
        Transport::Irc(_) => None,
    }
}

/// `line` with the row's time as its `@time` tag when it has none, so the
/// engine places a replayed row by when the service received it.
fn with_time(line: &str, time: u64) -> String {
    let stamp = rete_engine::timefmt::iso_millis(rete_engine::clock::UnixMillis(time as i64));
    match line.strip_prefix('@') {
        Some(tags) => {
            let tag_part = tags.split(' ').next().unwrap_or("");
            if tag_part
                .split(';')
                .any(|t| t == "time" || t.starts_with("time="))
            {
                line.to_owned()
            } else {
                format!("@time={stamp};{tags}")
            }
        }
        None => format!("@time={stamp} {line}"),
    }
}

/// True for a PRIVMSG or NOTICE line (tags and source skipped).
fn is_message(line: &str) -> bool {
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    let mut word = words.next().unwrap_or("");
    if word.starts_with('@') {
        word = words.next().unwrap_or("");
    }
    if word.starts_with(':') {
        word = words.next().unwrap_or("");
    }
    word.eq_ignore_ascii_case("PRIVMSG") || word.eq_ignore_ascii_case("NOTICE")
}

/// Why a stopped client stopped, for the person (no token in it).
fn refusal_text(reason: CloseReason) -> &'static str {
    match reason {
        CloseReason::ServerError(ErrorCode::AuthFailed) => {
            "the ReteCloud service does not know this session's token (auth_failed); set the right one with reterm retecloud-token"
        }
        CloseReason::ServerError(ErrorCode::TokenRevoked) => {
            "the ReteCloud service revoked this session's token: a replaced token was used again (token_revoked); get a new one from the service's operator"
        }
        CloseReason::ServerError(ErrorCode::UnsupportedVersion) => {
            "the ReteCloud service does not speak this client's protocol version (unsupported_version)"
        }
        _ => "the ReteCloud service refused this client",
    }
}

fn close_text(reason: CloseReason) -> String {
    match reason {
        CloseReason::ServerError(code) => {
            format!("the service closed the connection ({})", code.as_str())
        }
        CloseReason::BadFrame(code) => format!(
            "the service sent a frame this client refuses ({})",
            code.as_str()
        ),
        CloseReason::ProtocolViolation => "the service broke the frame protocol".into(),
        CloseReason::AuthTimeout => "the service did not answer auth in time".into(),
        CloseReason::HeartbeatMissed => "the service sent nothing for two heartbeats".into(),
        CloseReason::ConnectionLost => "the connection to the service closed".into(),
    }
}

impl SessionState {
    pub(super) fn is_bridged(&self) -> bool {
        cloud_config(&self.shared.transport).is_some()
    }

    /// The WebSocket opened: read the stored token, then authenticate.
    pub(super) fn cloud_open(&mut self, myself: &ActorRef<SessionMsg>) {
        let Some(cfg) = cloud_config(&self.shared.transport).cloned() else {
            return;
        };
        let now = self.shared.now();
        let mut side = self.shared.cloud.lock();
        // Read at every connection, not only the first: another session of
        // the same account (another of its networks, or another reterm)
        // may have stored a later token, and the one to present is the one
        // stored (PROTOCOL §9 rule 1). An explicit connect sets it even
        // when unchanged, which also lifts a stop.
        let reload = std::mem::take(&mut side.reload_token);
        match cfg.token_store.load() {
            Ok(Some(token)) => match side.client.as_mut() {
                Some(c) if reload || c.token() != &token => c.set_token(token),
                Some(_) => {}
                None => {
                    let prefix: u64 = rand::random();
                    side.client = Some(CloudClient::new(
                        token,
                        [],
                        ClientConfig {
                            client: format!("rete/{}", env!("CARGO_PKG_VERSION")),
                            auth_timeout_ms: AUTH_TIMEOUT_MS,
                            id_prefix: format!("{prefix:016x}"),
                        },
                    ))
                }
            },
            // A reconnect that cannot read the store goes on with the
            // token it holds (the last it stored or read).
            Ok(None) | Err(_) if side.client.is_some() && !reload => {
                tracing::warn!(
                    target: "rete::auth",
                    session = %self.shared.id,
                    "the stored ReteCloud token could not be read; presenting the one held"
                );
            }
            Ok(None) => {
                drop(side);
                return self.cloud_refused(
                    myself,
                    "no ReteCloud token is set for this session; set one with reterm retecloud-token",
                );
            }
            Err(e) => {
                drop(side);
                let why = format!("the ReteCloud token could not be read: {e}");
                return self.cloud_refused(myself, &why);
            }
        }
        if let Some(c) = side.client.as_mut() {
            c.handle_open(now.mono.0);
        }
        drop(side);
        self.update_transport_secrets();
        self.cloud_pump(myself);
    }

    /// One WebSocket text message from the service.
    pub(super) fn cloud_frame(&mut self, myself: &ActorRef<SessionMsg>, text: &str) {
        let now = self.shared.now();
        if self.shared.raw_frames_shown.load(Ordering::Relaxed) {
            let masked = rete_redact::mask_retecloud_frame(text);
            let shared = &self.shared;
            let view = &mut self.tap_view;
            shared
                .raw
                .see(view, &shared.id, Direction::In, now.wall, &masked);
        }
        {
            let mut side = self.shared.cloud.lock();
            let Some(c) = side.client.as_mut() else {
                return;
            };
            match decode_server(text) {
                Ok(frame) => c.handle_frame(now.mono.0, frame),
                Err(e) => c.handle_bad_frame(&e),
            }
        }
        self.cloud_pump(myself);
    }

    /// The connection task says the WebSocket closed (or the session closed
    /// it, or the actor restarted without it).
    pub(super) fn cloud_closed(&mut self) {
        let mut side = self.shared.cloud.lock();
        side.stream = None;
        if let Some(c) = side.client.as_mut() {
            c.handle_closed();
            // The close it answers with is this one, which the caller handles.
            while c.poll_action().is_some() {}
        }
        // The requests of that connection get no answer on a later one.
        side.settle_requests();
    }

    /// Time passed: the client's heartbeat and deadlines.
    pub(super) fn cloud_timeout(&mut self, now: Now) {
        if let Some(c) = self.shared.cloud.lock().client.as_mut() {
            c.handle_timeout(now.mono.0);
        }
    }

    /// When the client wants its next timeout, on the engine's clock.
    pub(super) fn cloud_due(&self) -> Option<u64> {
        self.shared
            .cloud
            .lock()
            .client
            .as_ref()
            .and_then(|c| c.poll_timeout())
    }

    /// Stores a rotated token on a blocking thread; the outcome comes back
    /// to `myself` as [`SessionMsg::TokenStored`].
    fn store_token(&self, myself: &ActorRef<SessionMsg>, generation: u64, token: Token) {
        let Some(cfg) = cloud_config(&self.shared.transport) else {
            return;
        };
        let store = cfg.token_store.clone();
        let me = myself.clone();
        tokio::task::spawn_blocking(move || {
            let result = store.store(&token, generation).map_err(|e| e.to_string());
            let _ = me.cast(SessionMsg::TokenStored { generation, result });
        });
    }

    /// A restarted actor whose client was storing a rotated token stores it
    /// again: the first store's outcome went to the old actor, and the
    /// client authenticates no connection until it hears one. The store
    /// takes the same generation and token twice as one write.
    pub(super) fn store_token_again(&self, myself: &ActorRef<SessionMsg>) {
        let pending = {
            let side = self.shared.cloud.lock();
            side.client
                .as_ref()
                .and_then(|c| c.token_being_stored())
                .map(|(generation, token)| (generation, token.clone()))
        };
        if let Some((generation, token)) = pending {
            self.store_token(myself, generation, token);
        }
    }

    /// The engine's line, as a `send` frame for the service.
    pub(super) fn cloud_send(&mut self, now: Now, line: String, ticket: Option<Ticket>) {
        let Some(cfg) = cloud_config(&self.shared.transport) else {
            return;
        };
        let network = NetworkId(cfg.network.clone());
        let mut side = self.shared.cloud.lock();
        let result = match side.client.as_mut() {
            Some(c) => c
                .send_line(now.mono.0, network, IrcLine::new(line))
                .map_err(|(_, why)| why),
            None => Err("not attached to the service".to_owned()),
        };
        match (result, ticket) {
            (Ok(id), Some(t)) => {
                side.tickets.insert(id, t);
            }
            (Ok(_), None) => {}
            (Err(_), Some(t)) => {
                drop(side);
                self.shared.agent.lock().not_sent(t);
            }
            (Err(why), None) => {
                drop(side);
                self.shared
                    .engine
                    .lock()
                    .note_transport_status(&format!("Not sent: {why}"));
            }
        }
    }

    /// A person's settings change: sent as a `config_update` now, answered
    /// when the service echoes it or refuses it. A SASL or server password
    /// in it is one of the session's secrets from here on, scanned for in
    /// everything the session shows, whatever the service answers.
    pub(super) fn cloud_settings(
        &mut self,
        entries: Vec<rete_cloud_protocol::config::ConfigEntry>,
        reply: SettingsReply,
    ) {
        use rete_cloud_protocol::config::ConfigEntry;
        let Some(cfg) = cloud_config(&self.shared.transport) else {
            let _ = reply.send(Err(CloudSettingsError::NotCloud));
            return;
        };
        let network = NetworkId(cfg.network.clone());
        {
            let mut engine = self.shared.engine.lock();
            for e in &entries {
                if let ConfigEntry::SaslPassword(Some(p)) | ConfigEntry::ServerPassword(Some(p)) = e
                {
                    engine.learn_secret(p.expose());
                }
            }
        }
        let now = self.shared.now();
        let mut side = self.shared.cloud.lock();
        let sent = match side.client.as_mut() {
            None => Err(CloudSettingsError::NotAttached),
            Some(c) => c
                .config_update(now.mono.0, network, entries)
                .map_err(|(code, why)| match code {
                    ErrorCode::NotAuthenticated => CloudSettingsError::NotAttached,
                    _ => CloudSettingsError::Invalid(why),
                }),
        };
        match sent {
            Ok(id) => {
                side.settings.insert(id, reply);
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// A rotated token's store finished (on a blocking thread).
    pub(super) fn cloud_token_stored(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        generation: u64,
        result: Result<TokenStored, String>,
    ) {
        let now = self.shared.now();
        {
            let mut side = self.shared.cloud.lock();
            let Some(c) = side.client.as_mut() else {
                return;
            };
            match &result {
                Ok(TokenStored::Written) => c.handle_token_persisted(now.mono.0, generation),
                // Not acknowledged: the later token stored is the account's,
                // and this session presents it from its next connection on.
                Ok(TokenStored::LaterKept) | Err(_) => {
                    c.handle_token_persist_failed(now.mono.0, generation)
                }
            }
        }
        match result {
            Ok(TokenStored::Written) => tracing::info!(
                target: "rete::auth",
                session = %self.shared.id,
                generation,
                "the rotated ReteCloud token is stored"
            ),
            Ok(TokenStored::LaterKept) => tracing::info!(
                target: "rete::auth",
                session = %self.shared.id,
                generation,
                "a later ReteCloud token of this account is stored already; it is used from the next connection"
            ),
            Err(e) => tracing::warn!(
                target: "rete::auth",
                session = %self.shared.id,
                generation,
                "the rotated ReteCloud token could not be stored ({e}); keeping the old one"
            ),
        }
        self.update_transport_secrets();
        self.cloud_pump(myself);
    }

    /// The token values the engine must scan for: current, replaced, being stored.
    fn update_transport_secrets(&self) {
        let secrets: Vec<String> = match self.shared.cloud.lock().client.as_ref() {
            Some(c) => c.secrets().map(|t| t.expose().to_owned()).collect(),
            None => return,
        };
        self.shared.engine.lock().set_transport_secrets(secrets);
    }

    /// A refusal retrying cannot fix: recorded in the engine, which says
    /// why and how to retry; the actor does not reconnect. Lines the client
    /// still holds are not sent then, and the client forgets them: kept,
    /// they would wait for a `/connect` that may never come.
    fn cloud_refused(&mut self, myself: &ActorRef<SessionMsg>, why: &str) {
        self.fail_cloud_tickets();
        self.shared.engine.lock().note_transport_refused(why);
        self.generation += 1;
        self.connection_lost(myself, why);
    }

    /// Carries out the client's actions. Returns true when the engine was
    /// fed lines (its outputs need draining again).
    pub(super) fn cloud_pump(&mut self, myself: &ActorRef<SessionMsg>) -> bool {
        let mut fed = false;
        loop {
            let action = {
                let mut side = self.shared.cloud.lock();
                side.client.as_mut().and_then(|c| c.poll_action())
            };
            let Some(action) = action else {
                return fed;
            };
            let now = self.shared.now();
            match action {
                Action::Send(frame) => {
                    // The client builds only frames that encode; one that
                    // did not would be a bug here, and is dropped.
                    let Ok(text) = encode_client(&frame) else {
                        continue;
                    };
                    let masked = rete_redact::mask_retecloud_frame(&text);
                    let shared = &self.shared;
                    let view = &mut self.tap_view;
                    shared
                        .raw
                        .see(view, &shared.id, Direction::Out, now.wall, &masked);
                    if let Some(wire) = &self.wire {
                        let _ = wire.send(Outgoing {
                            line: text,
                            ticket: None,
                        });
                    }
                }
                Action::PersistToken { generation, token } => {
                    self.update_transport_secrets();
                    self.store_token(myself, generation, token);
                }
                Action::Attached(hello) => {
                    let Some(cfg) = cloud_config(&self.shared.transport) else {
                        continue;
                    };
                    let Some(net) = hello.networks.iter().find(|n| n.network.0 == cfg.network)
                    else {
                        let why = format!(
                            "the ReteCloud service has no network {:?} for this user",
                            cfg.network
                        );
                        self.cloud_abort();
                        self.cloud_refused(myself, &why);
                        return fed;
                    };
                    self.shared.cloud.lock().stream = Some(net.stream.clone());
                    tracing::info!(
                        target: "rete::network",
                        session = %self.shared.id,
                        stream = %net.stream.0,
                        "attached to the ReteCloud service as {}",
                        hello.user
                    );
                    if net.state != NetworkState::Connected {
                        let why = format!("the service's connection to {} is down", net.name);
                        self.shared.engine.lock().handle_upstream_down(now, &why);
                    }
                }
                Action::Sync { stream, lines } => {
                    if self.is_our_stream(&stream) {
                        let mut engine = self.shared.engine.lock();
                        for l in &lines {
                            engine.handle_line(now, l.as_str());
                        }
                        fed = true;
                    }
                }
                Action::Row {
                    stream,
                    seq,
                    time,
                    line,
                    ..
                } => {
                    if self.is_our_stream(&stream) {
                        let stamped = with_time(line.as_str(), time);
                        let buffer = {
                            let mut engine = self.shared.engine.lock();
                            // Filed by the nick the line arrived under.
                            let buffer = message_buffer(line.as_str(), engine.view().nick());
                            engine.handle_line(now, &stamped);
                            buffer
                        };
                        if let Some(b) = buffer {
                            self.shared.cloud.lock().older.seen(&b, seq);
                        }
                        fed = true;
                    }
                }
                Action::Ready => {
                    // Attached; the delays start over once it stays up a
                    // while (`HEALTHY_AFTER`), as for a registered IRC link.
                    self.shared.backoff.lock().proven(now.mono.0);
                    self.fetch_first_history(now);
                }
                Action::Gap { stream, lost } => {
                    if self.is_our_stream(&stream) {
                        self.shared.engine.lock().note_transport_status(&format!(
                            "The service no longer holds rows {} to {} of this network; they are missing here",
                            lost.start(),
                            lost.end()
                        ));
                    }
                }
                Action::StreamReset { stream, .. } => {
                    if self.is_our_stream(&stream) {
                        self.shared.cloud.lock().older.forget();
                        self.shared.engine.lock().note_transport_status(
                            "The service's history of this network was renumbered; rows go on live from here",
                        );
                    }
                }
                Action::Network(update) => {
                    let ours = cloud_config(&self.shared.transport)
                        .is_some_and(|c| c.network == update.network.0);
                    if ours && update.state != NetworkState::Connected {
                        let why = update
                            .error
                            .clone()
                            .unwrap_or_else(|| "the service's connection is down".to_owned());
                        self.shared.engine.lock().handle_upstream_down(now, &why);
                    }
                }
                Action::Backlog(b) => {
                    let fetching = self.shared.cloud.lock().fetches.remove(&b.id);
                    let Some(fetching) = fetching else {
                        continue;
                    };
                    if !self.is_our_stream(&b.stream) {
                        // Dropping a host's reply answers it `NoAnswer`.
                        self.shared.cloud.lock().older.failed(&fetching.buffer);
                        continue;
                    }
                    let counted = fetching.host.as_ref().map(|(id, _)| id);
                    let added = self.feed_backlog(now, &b, counted, fetching.older);
                    fed = true;
                    let mut side = self.shared.cloud.lock();
                    side.older
                        .answered(&fetching.buffer, b.rows.first().map(|r| r.seq), b.more);
                    if let Some((_, reply)) = fetching.host {
                        side.answered.push((
                            reply,
                            Ok(OlderRows {
                                added,
                                no_older: !b.more,
                            }),
                        ));
                    }
                }
                Action::Config(c) => {
                    let reply =
                        c.id.as_ref()
                            .and_then(|id| self.shared.cloud.lock().settings.remove(id));
                    let shown = shown_text(&c.entries);
                    // Another client's change is news too: the person sees
                    // what the service now holds either way.
                    let by = if reply.is_some() {
                        ""
                    } else {
                        " by another client"
                    };
                    self.shared.engine.lock().note_transport_status(&format!(
                        "ReteCloud settings of {} changed{by}: {shown}",
                        c.network.0
                    ));
                    if let Some(reply) = reply {
                        let _ = reply.send(Ok(shown));
                    }
                }
                Action::SendAcked(id) => {
                    let ticket = self.shared.cloud.lock().tickets.remove(&id);
                    if let Some(t) = ticket {
                        self.agent_written(t);
                    }
                }
                Action::RequestFailed(e) => {
                    let ticket =
                        e.id.as_ref()
                            .and_then(|id| self.shared.cloud.lock().tickets.remove(id));
                    if let Some(t) = ticket {
                        self.shared.agent.lock().not_sent(t);
                    }
                    let settings =
                        e.id.as_ref()
                            .and_then(|id| self.shared.cloud.lock().settings.remove(id));
                    if let Some(reply) = settings {
                        let _ = reply.send(Err(CloudSettingsError::Refused {
                            code: e.code.as_str(),
                            message: shown_message(&e.message),
                        }));
                    }
                    let fetch =
                        e.id.as_ref()
                            .and_then(|id| self.shared.cloud.lock().fetches.remove(id));
                    if let Some(f) = fetch {
                        let mut side = self.shared.cloud.lock();
                        side.older.failed(&f.buffer);
                        if let Some((_, reply)) = f.host {
                            side.answered.push((
                                reply,
                                Err(CloudBacklogError::Refused {
                                    code: e.code.as_str(),
                                    message: shown_message(&e.message),
                                }),
                            ));
                        }
                    }
                    self.shared.engine.lock().note_transport_status(&format!(
                        "The service refused a request ({}): {}",
                        e.code.as_str(),
                        e.message
                    ));
                }
                Action::Close { reason, reconnect } => {
                    self.cloud_abort();
                    self.shared.cloud.lock().settle_requests();
                    match reconnect {
                        Reconnect::Stop => {
                            let why = refusal_text(reason);
                            self.cloud_refused(myself, why);
                        }
                        Reconnect::Retry => {
                            self.generation += 1;
                            self.connection_lost(myself, &close_text(reason));
                        }
                    }
                }
            }
        }
    }

    /// At a stream's first attach in this run (no resume point: a restarted
    /// client starts live), asks for each joined channel's recent rows.
    fn fetch_first_history(&mut self, now: Now) {
        let mut side = self.shared.cloud.lock();
        let Some(stream) = side.stream.clone() else {
            return;
        };
        if !side.fetched.insert(stream.clone()) {
            return;
        }
        let channels: Vec<String> = {
            let engine = self.shared.engine.lock();
            let view = engine.view();
            view.buffers()
                .filter(|b| b.kind() == rete_engine::buffer::BufferKind::Channel)
                .filter(|b| view.channel(b.id()).is_some_and(|c| c.joined))
                .map(|b| b.name().to_owned())
                .collect()
        };
        for channel in channels {
            let Some(c) = side.client.as_mut() else {
                return;
            };
            if let Ok(id) = c.fetch(
                now.mono.0,
                stream.clone(),
                channel.clone(),
                None,
                FIRST_FETCH_ROWS,
            ) {
                side.older.ask(&channel);
                side.fetches.insert(
                    id,
                    Fetching {
                        buffer: channel,
                        host: None,
                        older: false,
                    },
                );
            }
        }
    }

    /// A backlog's rows as a history batch, so the engine places them by
    /// time and drops those it holds already (by msgid, or by time, sender
    /// and text), as it does with a bouncer's playback; `older` when the
    /// fetch ended before the oldest row held, so at an equal time its rows
    /// go before the held ones. Returns how many rows `counted` (an engine
    /// buffer) gained.
    fn feed_backlog(
        &mut self,
        now: Now,
        b: &Backlog,
        counted: Option<&BufferId>,
        older: bool,
    ) -> usize {
        // Our own id (hex and a counter), kept to what a batch reference may hold.
        let reference: String = b.id.0.chars().filter(char::is_ascii_alphanumeric).collect();
        let mut engine = self.shared.engine.lock();
        let last_seq = |engine: &rete_engine::session::Session| {
            counted
                .and_then(|id| engine.view().buffer(id).map(|b| b.last_seq()))
                .unwrap_or(0)
        };
        let before = last_seq(&engine);
        engine.handle_line(now, &format!("BATCH +{reference} chathistory {}", b.buffer));
        if older {
            engine.mark_batch_older(&reference);
        }
        // Only messages: a fetched JOIN, NAMES or MODE would be replayed as
        // state (a JOIN of ours clears the members the sync gave).
        for row in b.rows.iter().filter(|r| is_message(r.line.as_str())) {
            let line = with_time(row.line.as_str(), row.time);
            let tagged = match line.strip_prefix('@') {
                Some(rest) => format!("@batch={reference};{rest}"),
                None => format!("@batch={reference} {line}"),
            };
            engine.handle_line(now, &tagged);
        }
        engine.handle_line(now, &format!("BATCH -{reference}"));
        usize::try_from(last_seq(&engine).saturating_sub(before)).unwrap_or(usize::MAX)
    }

    /// A host asks for older rows of `buffer`: a `fetch` before the oldest
    /// row known there, or at once the answer that none exist; answered
    /// when the rows are stored (see [`OlderRows`]).
    pub(super) fn cloud_backlog(&mut self, buffer: &BufferId, limit: u32, reply: BacklogReply) {
        match self.send_fetch(buffer, limit) {
            Ok((id, name, older)) => {
                self.shared.cloud.lock().fetches.insert(
                    id,
                    Fetching {
                        buffer: name,
                        host: Some((buffer.clone(), reply)),
                        older,
                    },
                );
            }
            Err(answer) => {
                let _ = reply.send(answer);
            }
        }
    }

    /// The `fetch` of [`cloud_backlog`](Self::cloud_backlog): its id, the
    /// buffer name and whether it ends before a row held, when sent; else
    /// the answer to give at once.
    fn send_fetch(
        &mut self,
        buffer: &BufferId,
        limit: u32,
    ) -> Result<(RequestId, String, bool), Result<OlderRows, CloudBacklogError>> {
        if cloud_config(&self.shared.transport).is_none() {
            return Err(Err(CloudBacklogError::NotCloud));
        }
        if limit == 0 || limit > MAX_BACKLOG_ROWS {
            return Err(Err(CloudBacklogError::Invalid(format!(
                "the number of older rows is 1 to {MAX_BACKLOG_ROWS}"
            ))));
        }
        let name = {
            let engine = self.shared.engine.lock();
            let view = engine.view();
            view.buffer(buffer).map(|b| match b.kind() {
                rete_engine::buffer::BufferKind::Server => "*".to_owned(),
                _ => b.name().to_owned(),
            })
        };
        let name = name.ok_or(Err(CloudBacklogError::NoSuchBuffer))?;
        let now = self.shared.now();
        let mut side = self.shared.cloud.lock();
        if side.older.is_asking(&name) {
            return Err(Err(CloudBacklogError::Busy));
        }
        if side.older.no_older(&name) {
            return Err(Ok(OlderRows {
                added: 0,
                no_older: true,
            }));
        }
        let before = side.older.before(&name).map(Before::Seq);
        let older = before.is_some();
        let side = &mut *side;
        let (Some(c), Some(stream)) = (side.client.as_mut(), side.stream.clone()) else {
            return Err(Err(CloudBacklogError::NotAttached));
        };
        let id = c
            .fetch(now.mono.0, stream, name.clone(), before, limit)
            .map_err(|(code, why)| {
                Err(match code {
                    ErrorCode::NotAuthenticated => CloudBacklogError::NotAttached,
                    _ => CloudBacklogError::Invalid(why),
                })
            })?;
        side.older.ask(&name);
        Ok((id, name, older))
    }

    /// Sends the answers to hosts' requests for older rows.
    pub(super) fn cloud_answer_backlogs(&mut self) {
        let answered = std::mem::take(&mut self.shared.cloud.lock().answered);
        for (reply, result) in answered {
            let _ = reply.send(result);
        }
    }

    fn is_our_stream(&self, stream: &StreamId) -> bool {
        self.shared.cloud.lock().stream.as_ref() == Some(stream)
    }

    /// Closes the WebSocket now (the client asked for it).
    fn cloud_abort(&mut self) {
        self.shared.cloud.lock().stream = None;
        self.wire = None;
        if let Some(t) = self.tasks.take() {
            t.abort();
        }
    }

    /// The agent lines the client holds: at a close they are answered after
    /// a reconnect, when the service acknowledges them, not "not sent".
    pub(super) fn cloud_handed_tickets(&self) -> std::collections::HashSet<Ticket> {
        self.shared.cloud.lock().tickets.values().copied().collect()
    }

    /// The client stopped (a refusal retrying cannot fix): lines still
    /// waiting for an acknowledgement will not be sent, so the client
    /// forgets them (a later `/connect` does not send what was answered
    /// "not sent").
    fn fail_cloud_tickets(&mut self) {
        let (tickets, persons) = {
            let mut side = self.shared.cloud.lock();
            let forgotten = side.client.as_mut().map_or(0, |c| c.forget_unacked_sends());
            let tickets: Vec<Ticket> = side.tickets.drain().map(|(_, t)| t).collect();
            // Every agent line waiting has a ticket; the rest are the person's.
            let persons = forgotten.saturating_sub(tickets.len());
            (tickets, persons)
        };
        if persons > 0 {
            self.shared.engine.lock().note_transport_status(&format!(
                "Not sent: {persons} of your lines were still waiting for the service"
            ));
        }
        for t in tickets {
            self.shared.agent.lock().not_sent(t);
        }
    }
}

/// A service's error message as an error of ours carries it: escaped, so a
/// host that prints the error (reterm's line mode writes it to the
/// terminal) cannot be made to move the cursor or fake a line by the
/// service, as text from IRC cannot.
fn shown_message(message: &str) -> String {
    rete_redact::display_escape(message).into_owned()
}

#[cfg(test)]
mod tests {
    use super::with_time;

    #[test]
    fn a_services_message_is_escaped_before_it_reaches_a_host() {
        let shown = super::shown_message("no such network\u{1b}[2J\r\nfake line");
        assert_eq!(shown, "no such network\\u{1B}[2J\\r\\nfake line");
        assert_eq!(super::shown_message("plain text"), "plain text");
    }

    #[test]
    fn only_messages_are_fed_from_a_backlog() {
        use super::is_message;
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
}
