//! The session's link: the one wire its actor drives, a direct IRC
//! connection or a ReteCloud connection.
//!
//! Both run in the same connection task (see [`crate::connection`]): it
//! connects, hands each received line (or each WebSocket text message, one
//! frame) to the actor, and writes what the actor gives it. What differs is
//! what the actor does with them, and that is decided here, in one `match`
//! per call, so the actor's handler reads the same for both:
//! [`link_connect`](SessionState::link_connect) and
//! [`link_close`](SessionState::link_close) for the session's own moves,
//! [`link_opened`](SessionState::link_opened) when the connection task
//! connected, [`link_received`](SessionState::link_received) for each line,
//! [`link_send`](SessionState::link_send) for each of the engine's lines,
//! [`link_closed`](SessionState::link_closed) at a close,
//! [`link_timeout`](SessionState::link_timeout) when its timer fires,
//! [`link_drive`](SessionState::link_drive) after the engine's outputs,
//! and [`link_handed_tickets`](SessionState::link_handed_tickets) when agent
//! lines are settled at a close.
//!
//! A ReteCloud link's state is the session's
//! [`Bridge`](super::bridge::Bridge) (I/O-free, kept in
//! [`SessionShared`](super::SessionShared) across reconnects and restarts).
//! Driving it is quinn's `ConnectionDriver` loop: feed it the input, then
//! carry out each [`Output`] it polls out (a frame to the writer, rows to
//! the engine, an answer to a caller, a close), feeding it back what the
//! engine answered, until it has none. The engine runs bridged: it sends
//! only what a person or an agent asks for.
//!
//! Frames reach the raw tap masked (`rete_redact::mask_retecloud_frame`):
//! every frame sent, and the frames received only while the session's raw
//! buffer is shown.

use super::bridge::{is_message, with_time, Fetched, Opened, Output, SendOutcome};
use super::{SessionMsg, SessionState};
use crate::cloud_backlog::{BacklogReply, CloudBacklogError};
use crate::cloud_settings::{CloudSettingsError, SettingsReply};
use crate::connection::{self, Outgoing};
use crate::raw_tap::Direction;
use ractor::ActorRef;
use rete_cloud_protocol::config::ConfigEntry;
use rete_cloud_protocol::Token;
use rete_engine::clock::{Mono, Now};
use rete_engine::ids::BufferId;
use rete_engine::session::{Session, Ticket};
use rete_transports::{CloudConfig, TokenStored, Transport};
use std::collections::HashSet;
use std::sync::atomic::Ordering;

/// Which wire the session runs on: built once from its transport.
pub(super) enum Link {
    /// A direct IRC connection: lines go to and from the socket as they are.
    Irc,
    /// A ReteCloud connection: lines become frames of the session's
    /// [`Bridge`](super::bridge::Bridge).
    ReteCloud(CloudConfig),
}

impl Link {
    /// The link of a session with `transport`.
    pub(super) fn new(transport: &Transport) -> Self {
        match transport {
            Transport::Irc(_) => Self::Irc,
            Transport::ReteCloud(c) => Self::ReteCloud(c.clone()),
        }
    }

    /// True when detaching sends QUIT first. Bridged, detaching only
    /// closes the WebSocket: a QUIT would end the service's IRC connection,
    /// which it keeps while we are away.
    pub(super) fn quits_on_detach(&self) -> bool {
        matches!(self, Self::Irc)
    }

    /// True when the engine's registration proves the connection (the
    /// reconnect delays start over once it stays up a while). A bridged
    /// engine registers at each 001 the service relays (its IRC link
    /// reconnecting too): its connection proves itself at `ready` instead.
    pub(super) fn proven_by_registration(&self) -> bool {
        matches!(self, Self::Irc)
    }
}

impl SessionState {
    /// Starts the connection task of this attempt (`self.generation`); the
    /// lines to send go to its writer. The task is the same for both links.
    pub(super) fn link_connect(&mut self, myself: &ActorRef<SessionMsg>) {
        let (wire, tasks) = connection::spawn(
            self.shared.transport.clone(),
            myself.clone(),
            self.generation,
            self.shared.span.clone(),
            connection::AgentReports {
                lines: self.shared.agent.clone(),
                held: self.shared.agent_reports_held.subscribe(),
            },
        );
        self.wire = Some(wire);
        self.tasks = Some(tasks);
    }

    /// The session closes its connection: nothing more is written, the
    /// agent lines waiting are settled and the link is told, then the
    /// connection task is stopped. Bridged, a line handed to the ReteCloud
    /// client may have reached the service already; it is resent (same id)
    /// after the next `ready`, and answered when the service acknowledges it.
    pub(super) fn link_close(&mut self) {
        self.wire = None;
        self.settle_agent_lines();
        self.link_closed();
        if let Some(t) = self.tasks.take() {
            t.abort();
        }
    }

    /// A new actor took over: the old one's connection died with it. The
    /// agent lines the ReteCloud client holds are answered after the
    /// reconnect; an IRC connection's lines died with it, but those it had
    /// written are sent. A rotated token the old actor was storing is
    /// stored again: the first store's outcome went to the old actor, and
    /// the client authenticates no connection until it hears one (the store
    /// takes the same generation and token twice as one write).
    pub(super) fn link_restarted(&mut self, myself: &ActorRef<SessionMsg>) {
        self.link_closed();
        self.settle_agent_lines();
        if matches!(self.link, Link::ReteCloud(_)) {
            let storing = self.shared.cloud.lock().token_being_stored();
            if let Some((generation, token)) = storing {
                self.store_token(myself, generation, token);
            }
        }
    }

    /// The connection task connected (the engine knows already). ReteCloud:
    /// read the stored token, then authenticate.
    pub(super) fn link_opened(&mut self, myself: &ActorRef<SessionMsg>) {
        let Link::ReteCloud(cfg) = &self.link else {
            return;
        };
        let now = self.shared.now();
        let stored = cfg.token_store.load().map_err(|e| e.to_string());
        let id = &self.shared.id;
        let resume = || match cfg.resume_store.as_ref().map(|s| s.load()) {
            Some(Ok(points)) => points,
            Some(Err(e)) => {
                tracing::warn!(
                    target: "rete::network",
                    session = %id,
                    "the stored ReteCloud resume points could not be read ({e}); starting live"
                );
                Vec::new()
            }
            None => Vec::new(),
        };
        let opened = self.shared.cloud.lock().handle_open(
            now.mono.0,
            &cfg.network,
            stored,
            rand::random(),
            resume,
        );
        match opened {
            Opened::Authenticating => {}
            Opened::WithHeldToken => tracing::warn!(
                target: "rete::auth",
                session = %self.shared.id,
                "the stored ReteCloud token could not be read; presenting the one held"
            ),
            Opened::Refused => {
                self.link_drive(myself);
                return;
            }
        }
        self.update_transport_secrets();
        self.link_drive(myself);
    }

    /// One line from the connection task: an IRC line for the engine, or a
    /// ReteCloud frame for the bridge (whose outputs are carried out here).
    pub(super) fn link_received(&mut self, myself: &ActorRef<SessionMsg>, line: &str) {
        let now = self.shared.now();
        let shared = &self.shared;
        match self.link {
            Link::Irc => {
                let mut engine = shared.engine.lock();
                // An echo of our /smsg is shown masked, as the engine stores it.
                let shown = engine.raw_shown(line);
                shared.raw.see(
                    &mut self.tap_view,
                    &shared.id,
                    Direction::In,
                    now.wall,
                    &shown,
                );
                drop(shown);
                engine.handle_line(now, line);
            }
            Link::ReteCloud(_) => {
                if shared.raw_frames_shown.load(Ordering::Relaxed) {
                    let masked = rete_redact::mask_retecloud_frame(line);
                    shared.raw.see(
                        &mut self.tap_view,
                        &shared.id,
                        Direction::In,
                        now.wall,
                        &masked,
                    );
                }
                shared.cloud.lock().handle_frame(now.mono.0, line);
                self.link_drive(myself);
            }
        }
    }

    /// One of the engine's lines, past the hook, for the wire. An agent's
    /// line (`ticket`) that cannot go is answered "not sent".
    pub(super) fn link_send(
        &mut self,
        engine: &mut Session,
        now: Now,
        line: String,
        ticket: Option<Ticket>,
    ) {
        if let Link::ReteCloud(_) = &self.link {
            let sent = self.shared.cloud.lock().send_line(now.mono.0, line, ticket);
            match sent {
                SendOutcome::Queued => {}
                SendOutcome::AgentNotSent(t) => {
                    self.shared.agent.lock().not_sent(t);
                }
                SendOutcome::NotSent(why) => {
                    engine.note_transport_status(&format!("Not sent: {why}"))
                }
            }
            return;
        }
        let Some(wire) = &self.wire else {
            if let Some(t) = ticket {
                self.shared.agent.lock().not_sent(t);
            }
            return;
        };
        let shared = &self.shared;
        // An agent's line is shown as the audit records it: every
        // AUTHENTICATE masked, the mechanism line too.
        let seen = match ticket {
            Some(_) => rete_redact::mask_sent_line(&line),
            // A /smsg is shown masked, as the engine stores it.
            None => engine.raw_shown(&line),
        };
        shared.raw.see(
            &mut self.tap_view,
            &shared.id,
            Direction::Out,
            now.wall,
            &seen,
        );
        drop(seen);
        if wire.send(Outgoing { line, ticket }).is_err() {
            if let Some(t) = ticket {
                self.shared.agent.lock().not_sent(t);
            }
        }
    }

    /// The connection closed (the task said so, the session closed it, or
    /// the actor restarted without it). ReteCloud: the requests of that
    /// connection end unanswered (`NoAnswer`); its sends wait for the next.
    pub(super) fn link_closed(&mut self) {
        if let Link::ReteCloud(_) = &self.link {
            self.shared.cloud.lock().handle_closed();
            self.store_resume(true);
        }
    }

    /// Stores the ReteCloud client's resume points where the host keeps
    /// them, when they moved (see `Bridge::resume_to_store`). A small
    /// write, done here on the actor so that the points stored never run
    /// ahead of the rows handed to the engine.
    pub(super) fn store_resume(&self, now_due: bool) {
        let Link::ReteCloud(cfg) = &self.link else {
            return;
        };
        let Some(store) = &cfg.resume_store else {
            return;
        };
        let now = self.shared.now();
        let points = self
            .shared
            .cloud
            .lock()
            .resume_to_store(now.mono.0, now_due);
        if let Some(points) = points {
            if let Err(e) = store.store(&points) {
                tracing::warn!(
                    target: "rete::network",
                    session = %self.shared.id,
                    "the ReteCloud resume points could not be stored: {e}"
                );
            }
        }
    }

    /// The session's timer fired: the ReteCloud client's heartbeat and deadlines.
    pub(super) fn link_timeout(&mut self, myself: &ActorRef<SessionMsg>, now: Now) {
        if let Link::ReteCloud(_) = &self.link {
            self.shared.cloud.lock().handle_timeout(now.mono.0);
            self.link_drive(myself);
        }
    }

    /// When the link wants [`link_timeout`](Self::link_timeout), on the
    /// engine's clock.
    pub(super) fn link_due(&self) -> Option<Mono> {
        match &self.link {
            Link::Irc => None,
            Link::ReteCloud(_) => self.shared.cloud.lock().poll_timeout().map(Mono),
        }
    }

    /// The agent lines the link still answers after a close (the ReteCloud
    /// client's sends, acknowledged after a reconnect).
    pub(super) fn link_handed_tickets(&self) -> HashSet<Ticket> {
        match &self.link {
            Link::Irc => HashSet::new(),
            Link::ReteCloud(_) => self.shared.cloud.lock().handed_tickets(),
        }
    }

    /// Sends the answers to hosts' requests for older rows: called once the
    /// rows' events are out, so a host that prints both sees the rows
    /// before the count.
    pub(super) fn link_answer(&mut self) {
        if let Link::Irc = self.link {
            return;
        }
        loop {
            let answer = self.shared.cloud.lock().poll_answer();
            let Some((reply, result)) = answer else {
                return;
            };
            let _ = reply.send(result);
        }
    }

    /// Carries out the bridge's outputs until it has none (nothing for an
    /// IRC link). Returns true when the engine was fed lines (its outputs
    /// need draining again).
    pub(super) fn link_drive(&mut self, myself: &ActorRef<SessionMsg>) -> bool {
        if let Link::Irc = self.link {
            return false;
        }
        let mut fed = false;
        let mut ready = false;
        loop {
            let output = self.shared.cloud.lock().poll_output();
            let Some(output) = output else {
                if fed || ready {
                    self.store_resume(ready);
                }
                return fed;
            };
            let now = self.shared.now();
            match output {
                Output::Transmit(text) => {
                    let masked = rete_redact::mask_retecloud_frame(&text);
                    let shared = &self.shared;
                    shared.raw.see(
                        &mut self.tap_view,
                        &shared.id,
                        Direction::Out,
                        now.wall,
                        &masked,
                    );
                    if let Some(wire) = &self.wire {
                        let _ = wire.send(Outgoing {
                            line: text,
                            ticket: None,
                        });
                    }
                }
                Output::PersistToken { generation, token } => {
                    self.update_transport_secrets();
                    self.store_token(myself, generation, token);
                }
                Output::Attached { stream, user } => tracing::info!(
                    target: "rete::network",
                    session = %self.shared.id,
                    stream = %stream.0,
                    "attached to the ReteCloud service as {user}"
                ),
                Output::Sync(lines) => {
                    let mut engine = self.shared.engine.lock();
                    for l in &lines {
                        engine.handle_line(now, l.as_str());
                    }
                    fed = true;
                }
                Output::Row { line, seq } => {
                    let nick = {
                        let mut engine = self.shared.engine.lock();
                        // Filed by the nick the line arrived under.
                        let nick = engine.view().nick().to_owned();
                        engine.handle_line(now, &line);
                        nick
                    };
                    self.shared.cloud.lock().handle_row_fed(&line, &nick, seq);
                    fed = true;
                }
                Output::Ready => {
                    ready = true;
                    // Attached; the delays start over once it stays up a
                    // while (`HEALTHY_AFTER`), as for a registered IRC link.
                    self.shared.backoff.lock().proven(now.mono.0);
                    let channels = self.joined_channels();
                    self.shared
                        .cloud
                        .lock()
                        .fetch_first_history(now.mono.0, channels);
                }
                Output::UpstreamDown(why) => {
                    self.shared.engine.lock().handle_upstream_down(now, &why);
                }
                Output::Status(text) => {
                    self.shared.engine.lock().note_transport_status(&text);
                }
                Output::Backlog(fetched) => {
                    let added = self.feed_backlog(now, &fetched);
                    self.shared.cloud.lock().handle_backlog_fed(fetched, added);
                    fed = true;
                }
                Output::SettingsAnswer { reply, result } => {
                    let _ = reply.send(result);
                }
                Output::AgentSent(ticket) => {
                    self.agent_written(ticket);
                }
                Output::AgentNotSent(ticket) => {
                    self.shared.agent.lock().not_sent(ticket);
                }
                Output::Close { why, refused } => {
                    // Closes the WebSocket now (the client asked for it).
                    self.wire = None;
                    if let Some(t) = self.tasks.take() {
                        t.abort();
                    }
                    // A refusal retrying cannot fix is recorded in the
                    // engine, which says why and how to retry; the actor
                    // does not reconnect.
                    if refused {
                        self.shared.engine.lock().note_transport_refused(&why);
                    }
                    self.generation += 1;
                    self.connection_lost(myself, &why);
                }
            }
        }
    }

    /// A person's change of the ReteCloud network's settings. A SASL or
    /// server password in it is one of the session's secrets from here on,
    /// scanned for in everything the session shows, whatever the service
    /// answers.
    pub(super) fn link_settings(&mut self, entries: Vec<ConfigEntry>, reply: SettingsReply) {
        if let Link::Irc = &self.link {
            let _ = reply.send(Err(CloudSettingsError::NotCloud));
            return;
        }
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
        self.shared
            .cloud
            .lock()
            .config_update(now.mono.0, entries, reply);
    }

    /// A host asks for older rows of `buffer` (see
    /// [`Bridge::fetch_older`](super::bridge::Bridge::fetch_older)).
    pub(super) fn link_backlog(&mut self, buffer: &BufferId, limit: u32, reply: BacklogReply) {
        if let Link::Irc = &self.link {
            let _ = reply.send(Err(CloudBacklogError::NotCloud));
            return;
        }
        let name = {
            let engine = self.shared.engine.lock();
            let view = engine.view();
            view.buffer(buffer).map(|b| match b.kind() {
                rete_engine::buffer::BufferKind::Server => "*".to_owned(),
                _ => b.name().to_owned(),
            })
        };
        let now = self.shared.now();
        self.shared
            .cloud
            .lock()
            .fetch_older(now.mono.0, buffer, name, limit, reply);
    }

    /// A rotated token's store finished (on a blocking thread).
    pub(super) fn link_token_stored(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        generation: u64,
        result: Result<TokenStored, String>,
    ) {
        let now = self.shared.now();
        let written = matches!(result, Ok(TokenStored::Written));
        if !self
            .shared
            .cloud
            .lock()
            .handle_token_stored(now.mono.0, generation, written)
        {
            return;
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
        self.link_drive(myself);
    }

    /// Stores a rotated token on a blocking thread; the outcome comes back
    /// to `myself` as [`SessionMsg::TokenStored`].
    fn store_token(&self, myself: &ActorRef<SessionMsg>, generation: u64, token: Token) {
        let Link::ReteCloud(cfg) = &self.link else {
            return;
        };
        let store = cfg.token_store.clone();
        let me = myself.clone();
        tokio::task::spawn_blocking(move || {
            let result = store.store(&token, generation).map_err(|e| e.to_string());
            let _ = me.cast(SessionMsg::TokenStored { generation, result });
        });
    }

    /// The token values the engine must scan for: current, replaced, being stored.
    fn update_transport_secrets(&self) {
        let secrets = self.shared.cloud.lock().secrets();
        if let Some(secrets) = secrets {
            self.shared.engine.lock().set_transport_secrets(secrets);
        }
    }

    /// The engine's joined channels, whose recent history a first attach fetches.
    fn joined_channels(&self) -> Vec<String> {
        let engine = self.shared.engine.lock();
        let view = engine.view();
        view.buffers()
            .filter(|b| b.kind() == rete_engine::buffer::BufferKind::Channel)
            .filter(|b| view.channel(b.id()).is_some_and(|c| c.joined))
            .map(|b| b.name().to_owned())
            .collect()
    }

    /// A backlog's rows as a history batch, so the engine places them by
    /// time and drops those it holds already (by msgid, or by time, sender
    /// and text), as it does with a bouncer's playback; when the fetch
    /// ended before the oldest row held, at an equal time its rows go
    /// before the held ones. Returns how many rows the counted buffer (a
    /// host's request's) gained.
    fn feed_backlog(&mut self, now: Now, fetched: &Fetched) -> usize {
        let b = fetched.backlog();
        let counted = fetched.counted();
        // Our own id (hex and a counter), kept to what a batch reference may hold.
        let reference: String = b.id.0.chars().filter(char::is_ascii_alphanumeric).collect();
        let mut engine = self.shared.engine.lock();
        let last_seq = |engine: &Session| {
            counted
                .and_then(|id| engine.view().buffer(id).map(|b| b.last_seq()))
                .unwrap_or(0)
        };
        let before = last_seq(&engine);
        engine.handle_line(now, &format!("BATCH +{reference} chathistory {}", b.buffer));
        if fetched.older() {
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
}
