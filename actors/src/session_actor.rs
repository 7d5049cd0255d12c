//! The session actor: one per IRC session. It owns the connection task and
//! drives the engine: each message is one engine input, after which the
//! actor drains the engine's outputs (lines to the wire, events to
//! observers, the next timer). It never awaits inside `handle` beyond its
//! own mailbox work: connecting, reading and writing run in the connection task.
//!
//! The engine itself lives in [`SessionShared`], owned by the supervisor, so
//! a restarted actor picks up the same buffers.
//!
//! # Layout
//! - this file: the messages, the actor, its connection's life (connect,
//!   close, lost, reconnect) and the drain of the engine's outputs.
//! - `link`: the session's one wire, IRC or ReteCloud: what the actor does
//!   with a line received, a line to send, a close, a timeout, and the
//!   ReteCloud bridge's outputs. The only place the two transports differ.
//! - `bridge`: a ReteCloud session's I/O-free bridge, its client and the
//!   bookkeeping of its requests, fed frames and time.
//! - `older`: each buffer's oldest row known, for fetches of older rows.

use crate::agent_line::{AgentReply, Record, SharedAgentLines};
use crate::connection::{ConnectionTasks, LinePermit, Outgoing};
use crate::hook::{RawOutHook, Verdict};
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rand::Rng as _;
use rete_engine::clock::{Mono, Now};
use rete_engine::event::{ConnState, Event};
use rete_engine::ids::SessionId;
use rete_engine::sasl::SaltedPassword;
use rete_engine::session::{CommandError, Commands, Session};
use rete_engine::view::SessionView;
use rete_transports::{Backoff, Transport};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};

mod bridge;
mod link;
mod older;
pub(crate) use bridge::Bridge;
use link::Link;

/// A reference to a session actor.
pub type SessionRef = ActorRef<SessionMsg>;

/// A read to run against the engine, inside the actor, with a read-only view.
pub type ReadFn = Box<dyn FnOnce(SessionView<'_>) + Send>;

/// A user action to run against the engine's sending interface.
pub type CommandFn = Box<dyn FnOnce(&mut Commands<'_>) -> Result<(), CommandError> + Send>;

/// An engine event, tagged with its session.
#[derive(Clone, Debug)]
pub struct SessionEvent {
    /// The session it happened in.
    pub session: SessionId,
    /// What happened.
    pub event: Event,
}

/// What survives a restart of the session actor: the engine and its settings.
pub struct SessionShared {
    /// The engine. Locked only by the session actor's handler and for short reads.
    pub(crate) engine: Mutex<Session>,
    pub(crate) transport: Transport,
    pub(crate) events: broadcast::Sender<SessionEvent>,
    pub(crate) hook: Option<Arc<dyn RawOutHook>>,
    /// The raw tap: lines in and out, masked, for an observer when one is set.
    pub(crate) raw: Arc<crate::raw_tap::RawTap>,
    /// The zero of the engine's monotonic clock.
    pub(crate) origin: Instant,
    /// True while the session should be connected (autoconnect or `/connect`,
    /// until `/disconnect`); a restarted actor reconnects only then.
    pub(crate) wants_connection: Mutex<bool>,
    /// Reconnect delays, kept across restarts so a crash loop backs off.
    pub(crate) backoff: Mutex<Backoff>,
    pub(crate) id: SessionId,
    /// The live actor, swapped by the supervisor on restart; None while restarting.
    /// Set through [`SessionShared::set_actor`], which wakes reads waiting for one.
    pub(crate) current: Mutex<Option<SessionRef>>,
    /// Woken whenever `current` gets a new actor, or the session is removed, so a read
    /// that found no live actor waits for the next one (see `SessionReader::read`).
    pub(crate) actor_changed: tokio::sync::Notify,
    /// Set once the session is removed: no actor will come back for it.
    pub(crate) removed: std::sync::atomic::AtomicBool,
    /// How many times the supervisor restarted this session's actor.
    pub(crate) restarts: std::sync::atomic::AtomicU32,
    /// The session's tracing span: its actor's handling and its connection
    /// tasks run inside it, so every log line can be told apart by session.
    pub(crate) span: tracing::Span,
    /// A ReteCloud session's bridge (empty for IRC): kept here so resume
    /// points, the token, unacknowledged sends and their agents' tickets
    /// survive reconnects and actor restarts.
    pub(crate) cloud: Mutex<Bridge>,
    /// Agent lines waiting for their outcome, shared with the connection's
    /// writer, which marks each line as it writes it. Kept across actor
    /// restarts: a line the old actor's writer wrote still gets its row, and
    /// a ReteCloud send the client holds is still answered, on its
    /// `send_ack` after the reconnect, and so still leaves its audit row.
    pub(crate) agent: SharedAgentLines,
    /// Test-only: while true, the writer holds back its report that it wrote
    /// an agent's line (see `SessionHandle::hold_agent_reports_for_test`).
    pub(crate) agent_reports_held: tokio::sync::watch::Sender<bool>,
    /// True while the host shows this session's raw buffer: only then do a
    /// ReteCloud session's received frames reach the raw tap (sent ones
    /// always do).
    pub(crate) raw_frames_shown: std::sync::atomic::AtomicBool,
}

impl SessionShared {
    /// Installs the session's live actor (None while it restarts or once removed) and
    /// wakes every read waiting for one.
    pub(crate) fn set_actor(&self, actor: Option<SessionRef>) {
        *self.current.lock() = actor;
        self.actor_changed.notify_waiters();
    }

    /// The session is gone for good (removed, or Rete shut down): no actor
    /// comes back for it, so reads waiting for one end, and agent lines
    /// still waiting are answered "not sent".
    pub(crate) fn retire(&self) {
        self.removed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.set_actor(None);
        self.agent.lock().close();
    }

    fn now(&self) -> Now {
        Now {
            mono: Mono(self.origin.elapsed().as_millis() as u64),
            wall: crate::wall_clock::now(),
        }
    }
}

/// Messages a session actor handles.
pub enum SessionMsg {
    /// Start connecting (does nothing while connected or connecting).
    Connect,
    /// Close the connection and stay disconnected. Sends QUIT first when
    /// registered.
    Disconnect {
        /// The QUIT reason.
        reason: Option<String>,
    },
    /// Close the connection at once, writing nothing more (no QUIT), and
    /// stay disconnected.
    Abandon,
    /// The connection task connected.
    Connected {
        /// Which attempt.
        generation: u64,
        /// The peer address.
        peer: String,
        /// The server certificate's fingerprint on TLS.
        tls_fingerprint: Option<String>,
    },
    /// A line arrived.
    Line {
        /// Which attempt.
        generation: u64,
        /// The line without CR LF.
        line: String,
        /// Its place in the bounded queue of received lines; released when
        /// the message is dropped after handling.
        permit: LinePermit,
    },
    /// The connection ended or failed to open.
    Closed {
        /// Which attempt.
        generation: u64,
        /// Why, for the server buffer.
        reason: String,
    },
    /// The engine's timer fired.
    Timer {
        /// Which timer; stale ones are ignored.
        generation: u64,
    },
    /// The reconnect delay passed.
    Retry {
        /// Which attempt it was scheduled for.
        generation: u64,
    },
    /// A SCRAM key derivation finished on a blocking task.
    KeyDerived {
        /// Which attempt it was started for.
        generation: u64,
        /// The engine's id for the derivation.
        id: u64,
        /// The result.
        salted: SaltedPassword,
    },
    /// Queue an agent's line (send_raw), or a line relayed for the host's
    /// client. MUST be answered through `reply`: once the line is written,
    /// or with why it was not sent.
    AgentLine {
        /// The line as the agent (or the relayed client) sent it.
        line: String,
        /// What it leaves once sent: an agent's audit row, or nothing.
        record: Record,
        /// Where the outcome goes.
        reply: AgentReply,
    },
    /// The writer wrote an agent's line. Taken whatever connection wrote
    /// it: a ticket names one line for the session's whole life.
    Written {
        /// The line's ticket.
        ticket: rete_engine::session::Ticket,
    },
    /// Run a read. MUST be answered: the closure carries its own reply.
    Read(ReadFn),
    /// Run a user action. MUST reply with its outcome.
    Command(CommandFn, RpcReplyPort<Result<(), CommandError>>),
    /// Change the ReteCloud network's settings. MUST be answered through
    /// `reply`: with the service's echo, or with why not.
    CloudSettings {
        /// The fields to change.
        entries: Vec<rete_cloud_protocol::config::ConfigEntry>,
        /// Where the outcome goes.
        reply: crate::cloud_settings::SettingsReply,
    },
    /// Fetch older rows of one buffer from the ReteCloud service. MUST be
    /// answered through `reply`: with what was added, or with why not.
    CloudBacklog {
        /// The buffer.
        buffer: rete_engine::ids::BufferId,
        /// How many rows at most.
        limit: u32,
        /// Where the outcome goes.
        reply: crate::cloud_backlog::BacklogReply,
    },
    /// A rotated ReteCloud token was stored, or could not be.
    TokenStored {
        /// The rotation's generation.
        generation: u64,
        /// The outcome; the error holds no token.
        result: Result<rete_transports::TokenStored, String>,
    },
    /// Fail the actor on purpose, so tests can show supervision at work.
    #[doc(hidden)]
    Crash,
    /// Panic inside the actor on purpose, with the engine locked, so tests can show that a
    /// panic takes the same supervised path as a failure and leaves the engine usable.
    #[doc(hidden)]
    Panic,
}

/// The session actor. It holds nothing: its state is [`SessionState`].
pub struct SessionActor;

/// A session actor's state for one incarnation.
pub struct SessionState {
    shared: Arc<SessionShared>,
    /// The wire this session runs on, built once from its transport.
    link: Link,
    /// Lines for the current connection's writer.
    wire: Option<mpsc::UnboundedSender<Outgoing>>,
    tasks: Option<ConnectionTasks>,
    /// Bumped for every connection attempt; messages from older attempts are stale.
    generation: u64,
    /// Bumped for every timer scheduled; older timers are stale.
    timer_generation: u64,
    timer_due: Option<Mono>,
    /// Set once QUIT went out, so the close that follows is not retried
    /// (a `Connect` since then reconnects at once instead).
    quitting: bool,
    /// The engine's progress as last logged; compared after every drain.
    progress: rete_engine::view::Progress,
    /// This session's copy of the raw tap's observers.
    tap_view: crate::raw_tap::TapView,
}

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = Arc<SessionShared>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        shared: Arc<SessionShared>,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = SessionState {
            link: Link::new(&shared.transport),
            shared,
            wire: None,
            tasks: None,
            generation: 0,
            timer_generation: 0,
            timer_due: None,
            quitting: false,
            progress: Default::default(),
            tap_view: Default::default(),
        };
        // A restarted actor finds the engine as the last one left it: the
        // old connection died with that actor, so say so, then reconnect.
        let was_up = state.shared.engine.lock().view().state() != ConnState::Disconnected;
        // The old connection ended with the old actor: settle its healthy
        // mark, as a loss would, before the new one starts.
        let now = state.shared.now();
        state.shared.backoff.lock().connection_ended(now.mono.0);
        // The writer's reports go to this actor from now on; a line the old
        // actor's writer wrote before it died is settled just below.
        state.shared.agent.lock().set_actor(myself.clone());
        // The link died with the old actor too: its agent lines are settled.
        state.link_restarted(&myself);
        if was_up {
            state
                .shared
                .engine
                .lock()
                .handle_disconnected(now, "the session restarted");
            state.drain(&myself);
        }
        if *state.shared.wants_connection.lock() {
            state.start_connecting(&myself, was_up);
        }
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(t) = state.tasks.take() {
            t.abort();
        }
        // A host stopping (reterm's /quit) resumes here next run.
        state.store_resume(true);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Everything logged while a message is handled (the engine's steps,
        // reconnects, audit lines) is inside this session's span.
        let span = state.shared.span.clone();
        span.in_scope(|| state.handle_msg(&myself, msg))
    }
}

/// The panic [`SessionMsg::Panic`] asks for: the one panic outside tests, on purpose.
#[allow(clippy::panic)]
fn panic_on_purpose() -> ! {
    panic!("panic requested")
}

impl SessionState {
    /// An agent's line was handed over (written to the socket, or
    /// acknowledged by the ReteCloud service): its audit row and log line.
    /// True when the ticket was still waited for.
    fn agent_written(&mut self, ticket: rete_engine::session::Ticket) -> bool {
        let Some(record) = self.shared.agent.lock().written(ticket) else {
            return false;
        };
        if let Some(shown) = record.audited() {
            self.record_agent_line_sent(&shown);
        }
        true
    }

    /// The audit row and log line of an agent's line that was sent.
    fn record_agent_line_sent(&self, shown: &str) {
        let mut engine = self.shared.engine.lock();
        engine.note_agent_line_sent(shown);
        tracing::info!(
            target: "rete::network",
            "AI access sent a line on {}: {shown}",
            engine.view().name()
        );
    }

    /// The connection is gone: each agent line still waiting is settled —
    /// one the writer put on the socket is answered sent and recorded
    /// (whether or not its report reached this actor), one not yet written
    /// is answered "not sent" and never written, one being written is left
    /// to its writer. Bridged, the lines the ReteCloud client holds wait
    /// for the service's answer after a reconnect.
    fn settle_agent_lines(&mut self) {
        let handed = self.link_handed_tickets();
        let sent = self.shared.agent.lock().settle(|t| handed.contains(&t));
        for shown in &sent {
            self.record_agent_line_sent(shown);
        }
    }

    /// Handles one message (see [`SessionActor`]'s `handle`).
    fn handle_msg(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        msg: SessionMsg,
    ) -> Result<(), ActorProcessingErr> {
        let state = self;
        match msg {
            SessionMsg::Connect => {
                *state.shared.wants_connection.lock() = true;
                state.shared.cloud.lock().reload_token();
                if state.tasks.is_none() {
                    state.shared.backoff.lock().reset();
                    state.start_connecting(myself, false);
                }
            }
            SessionMsg::Disconnect { reason } => state.disconnect(myself, reason),
            SessionMsg::Abandon => {
                *state.shared.wants_connection.lock() = false;
                state.close(myself, "abandoned");
            }
            SessionMsg::Connected {
                generation,
                peer,
                tls_fingerprint,
            } if generation == state.generation => {
                crate::session_log::connected(
                    &state.shared.id,
                    &peer,
                    crate::session_log::uses_tls(&state.shared.transport),
                );
                let entropy: [u8; 18] = rand::rng().random();
                let now = state.shared.now();
                state.shared.engine.lock().handle_connected(
                    now,
                    &peer,
                    tls_fingerprint.as_deref(),
                    entropy,
                );
                state.link_opened(myself);
                state.drain(myself);
            }
            SessionMsg::Line {
                generation,
                line,
                permit,
            } if generation == state.generation => {
                state.link_received(myself, &line);
                state.drain(myself);
                drop(permit);
            }
            SessionMsg::Closed { generation, reason } if generation == state.generation => {
                state.link_closed();
                state.connection_lost(myself, &reason);
            }
            SessionMsg::Timer { generation } if generation == state.timer_generation => {
                state.timer_due = None;
                let now = state.shared.now();
                state.shared.engine.lock().handle_timeout(now);
                state.link_timeout(myself, now);
                state.drain(myself);
            }
            SessionMsg::CloudSettings { entries, reply } => {
                state.link_settings(entries, reply);
                // The frame waits in the bridge's outputs until drained.
                state.drain(myself);
            }
            SessionMsg::CloudBacklog {
                buffer,
                limit,
                reply,
            } => {
                state.link_backlog(&buffer, limit, reply);
                state.drain(myself);
            }
            SessionMsg::TokenStored { generation, result } => {
                state.link_token_stored(myself, generation, result);
                state.drain(myself);
            }
            SessionMsg::Retry { generation } if generation == state.generation => {
                if *state.shared.wants_connection.lock() && state.tasks.is_none() {
                    state.start_connecting(myself, true);
                }
            }
            SessionMsg::KeyDerived {
                generation,
                id,
                salted,
            } if generation == state.generation => {
                let now = state.shared.now();
                state
                    .shared
                    .engine
                    .lock()
                    .handle_key_derived(now, id, &salted);
                state.drain(myself);
            }
            SessionMsg::AgentLine {
                line,
                record,
                reply,
            } => {
                let queued = state.shared.engine.lock().commands().agent_line(&line);
                match queued {
                    Ok(ticket) => {
                        state.shared.agent.lock().insert(ticket, reply, record);
                        state.drain(myself);
                    }
                    Err(CommandError::NotConnected) => {
                        let _ = reply.send(Err(crate::AgentLineError::NotConnected));
                    }
                    Err(_) => {
                        let _ = reply.send(Err(crate::AgentLineError::NotSent));
                    }
                }
            }
            SessionMsg::Written { ticket } => {
                if state.agent_written(ticket) {
                    state.drain(myself);
                }
            }
            SessionMsg::Read(read) => {
                let engine = state.shared.engine.lock();
                read(engine.view());
            }
            SessionMsg::Command(command, reply) => {
                let result = {
                    let mut engine = state.shared.engine.lock();
                    let mut commands = engine.commands();
                    command(&mut commands)
                };
                state.drain(myself);
                let _ = reply.send(result);
            }
            SessionMsg::Crash => {
                return Err("crash requested".into());
            }
            SessionMsg::Panic => {
                // ractor catches the unwind and reports the actor failed; the engine's
                // lock (parking_lot, which does not poison) is released as it unwinds.
                let _engine = state.shared.engine.lock();
                panic_on_purpose();
            }
            // Stale messages from an earlier connection attempt or timer.
            SessionMsg::Connected { .. }
            | SessionMsg::Line { .. }
            | SessionMsg::Closed { .. }
            | SessionMsg::Timer { .. }
            | SessionMsg::KeyDerived { .. }
            | SessionMsg::Retry { .. } => {}
        }
        Ok(())
    }

    fn start_connecting(&mut self, myself: &ActorRef<SessionMsg>, reconnect: bool) {
        self.generation += 1;
        self.quitting = false;
        crate::session_log::connecting(&self.shared.id, &self.shared.transport, reconnect);
        // The lines from here on are a new connection's: a raw capture
        // starts a new tap sequence for them.
        self.shared.raw.connecting(&self.shared.id);
        let now = self.shared.now();
        self.shared.engine.lock().handle_connecting(now, reconnect);
        self.link_connect(myself);
        self.drain(myself);
    }

    fn disconnect(&mut self, myself: &ActorRef<SessionMsg>, reason: Option<String>) {
        *self.shared.wants_connection.lock() = false;
        if self.quitting {
            // QUIT is out already; the server is closing the link.
            return;
        }
        let registered = self.shared.engine.lock().view().state() == ConnState::Connected;
        if registered && self.wire.is_some() && self.link.quits_on_detach() {
            // Let QUIT go out; the server closes the link, and `Closed` lands
            // as a deliberate end because `quitting` is set.
            let result = self.shared.engine.lock().commands().quit(reason.as_deref());
            if result.is_ok() {
                self.quitting = true;
                self.drain(myself);
                return;
            }
        }
        self.close(myself, "disconnected");
    }

    fn close(&mut self, myself: &ActorRef<SessionMsg>, reason: &str) {
        self.generation += 1;
        self.link_close();
        let now = self.shared.now();
        let mut engine = self.shared.engine.lock();
        engine.handle_disconnected(now, reason);
        drop(engine);
        self.drain(myself);
    }

    fn connection_lost(&mut self, myself: &ActorRef<SessionMsg>, reason: &str) {
        self.wire = None;
        self.tasks = None;
        // A ReteCloud client resends an unacknowledged line after the next
        // `ready` (the service sends it once): its agent keeps waiting
        // (`settle_agent_lines`).
        self.settle_agent_lines();
        let now = self.shared.now();
        let refused = {
            let mut engine = self.shared.engine.lock();
            engine.handle_disconnected(now, reason);
            let refused = engine.view().registration_refused().map(str::to_owned);
            // A QUIT with a `Connect` after it reconnects, so it is not logged.
            if refused.is_some() || !*self.shared.wants_connection.lock() {
                crate::session_log::stays_down(&self.shared.id, reason, refused.as_deref());
            }
            refused.is_some()
        };
        // A refusal retrying cannot fix (a wrong password, say) is not
        // retried: reconnecting every few seconds gets an address banned.
        // The engine said why and how to retry (`/connect`).
        if refused {
            *self.shared.wants_connection.lock() = false;
        }
        let wanted = *self.shared.wants_connection.lock();
        if self.quitting && wanted {
            // A `Connect` came while our QUIT was on its way (`/reconnect`,
            // or `/connect` right after `/disconnect`): the link closed as
            // asked, and the new one starts now, without a backoff.
            self.drain(myself);
            self.shared.backoff.lock().reset();
            self.start_connecting(myself, false);
            return;
        }
        if !wanted {
            self.drain(myself);
            return;
        }
        let delay = self
            .shared
            .backoff
            .lock()
            .next_delay_after_loss(now.mono.0, &mut rand::rng());
        crate::session_log::reconnecting(&self.shared.id, reason, delay);
        self.shared.engine.lock().handle_reconnecting_in(now, delay);
        self.drain(myself);
        let generation = self.generation;
        myself.send_after(delay, move || SessionMsg::Retry { generation });
    }

    /// Drains the engine's outputs: lines to the wire (through the hook),
    /// events to observers, and the next timer.
    fn drain(&mut self, myself: &ActorRef<SessionMsg>) {
        // Bridged, the engine's lines become frames, and the bridge's
        // outputs may feed the engine again: repeat until both are quiet.
        loop {
            self.drain_engine(myself);
            if !self.link_drive(myself) {
                break;
            }
        }
        // Answered only now, after the rows' events went out: a host that
        // prints both sees the rows before the count.
        self.link_answer();
    }

    fn drain_engine(&mut self, myself: &ActorRef<SessionMsg>) {
        let now = self.shared.now();
        let shared = Arc::clone(&self.shared);
        let mut engine = shared.engine.lock();
        while let Some((line, ticket)) = engine.poll_transmit_ticketed(now.mono) {
            let allowed = self
                .shared
                .hook
                .as_ref()
                .is_none_or(|h| h.on_raw_out(&self.shared.id, &line) == Verdict::Allow);
            if !allowed {
                let record = ticket.and_then(|t| self.shared.agent.lock().not_sent(t));
                match record {
                    // An agent's vetoed line leaves no row, only a log line.
                    Some(Record::Audited(shown)) => tracing::info!(
                        target: "rete::network",
                        "AI access line on {} was not sent: {shown}",
                        engine.view().name()
                    ),
                    // A person's line, here or relayed from a client.
                    Some(Record::Relayed) | None => engine.note_vetoed_line(),
                }
                continue;
            }
            self.link_send(&mut engine, now, line, ticket);
        }
        // Agent lines still queued when the person quit: never hurried out
        // unpaced behind their lines, so not sent.
        while let Some(t) = engine.poll_unsent_agent_line() {
            let record = self.shared.agent.lock().not_sent(t);
            if let Some(Record::Audited(shown)) = record {
                tracing::info!(
                    target: "rete::network",
                    "AI access line on {} was not sent: {shown}",
                    engine.view().name()
                );
            }
        }
        // PBKDF2 (up to the engine's iteration cap) runs on a blocking
        // thread, so reads and lines keep flowing; the result comes back as
        // an input, dropped if the attempt is gone by then.
        while let Some((id, work)) = engine.poll_key_derivation() {
            let me = myself.clone();
            let generation = self.generation;
            tokio::task::spawn_blocking(move || {
                let salted = work.derive();
                let _ = me.cast(SessionMsg::KeyDerived {
                    generation,
                    id,
                    salted,
                });
            });
        }
        while let Some(event) = engine.poll_event() {
            // Registered is healthy, but the delays start over only once
            // the connection has stayed up a while (`HEALTHY_AFTER`).
            if event == Event::Registered && self.link.proven_by_registration() {
                self.shared.backoff.lock().proven(now.mono.0);
            }
            // No receiver is fine: nobody is watching.
            let _ = self.shared.events.send(SessionEvent {
                session: self.shared.id.clone(),
                event,
            });
        }
        let progress = engine.view().progress();
        if progress != self.progress {
            crate::session_log::progress(
                &self.shared.id,
                &self.progress,
                &progress,
                &engine.view(),
            );
            self.progress = progress;
        }
        let due = engine.poll_timeout(now.mono);
        drop(engine);
        let due = due.into_iter().chain(self.link_due()).min();
        if let Some(due) = due {
            if self.timer_due.is_none_or(|t| due < t) {
                self.timer_generation += 1;
                self.timer_due = Some(due);
                let generation = self.timer_generation;
                let wait = Duration::from_millis(due.ms_since(now.mono));
                myself.send_after(wait, move || SessionMsg::Timer { generation });
            }
        }
    }
}
