//! One IRC session (one network): a deterministic state machine.
//!
//! # Polling order
//! The host feeds inputs and drains outputs:
//! - inputs: [`Session::handle_connected`], [`Session::handle_line`],
//!   [`Session::handle_disconnected`], [`Session::handle_timeout`], and the
//!   user's actions through [`Session::commands`];
//! - outputs, after every input: [`Session::poll_transmit`] until `None`
//!   (lines for the wire, paced by the flood throttle),
//!   [`Session::poll_key_derivation`] (SCRAM's PBKDF2, for the host to run
//!   off the session and answer with [`Session::handle_key_derived`]),
//!   [`Session::poll_event`] until `None`, then [`Session::poll_timeout`] to
//!   learn when to call `handle_timeout` next.
//!
//! Time is always passed in. Extra `handle_timeout` calls do nothing.
//!
//! # Reading
//! Readers get a [`SessionView`](crate::view::SessionView), which holds a
//! shared borrow and offers only getters: it cannot send or change anything.
//!
//! # Layout
//! - `registration.rs`: CAP, SASL, PASS/NICK/USER, 001 and ISUPPORT.
//! - `channels.rs`: JOIN, PART, KICK, QUIT, NICK, MODE, TOPIC, NAMES, WHO, away/account/chghost.
//! - `messages.rs`: PRIVMSG, NOTICE, CTCP and the server buffer.
//! - `batches.rs`: BATCH bookkeeping and what counts as history.
//! - `commands.rs`: the sending interface.
//! - `store.rs`: the buffers of the session.

mod batches;
mod channel_modes;
mod channels;
mod commands;
mod config;
mod messages;
mod nick_choice;
mod queued_line;
mod raw_masks;
mod refusal;
mod registration;
pub(crate) mod registration_names;
mod store;

pub use commands::{CommandError, Commands, SECRET_MASK};
pub use config::{ChannelSpec, SaslSettings, SessionConfig, DEFAULT_MAX_QUERY_BUFFERS};
pub use queued_line::Ticket;
pub(crate) use registration::{RegStep, SaslOutcome};
pub use store::Buffers;

use crate::buffer::{NewRow, Pushed};
use crate::cap::Capabilities;
use crate::clock::{Mono, Now, UnixMillis};
use crate::event::{ConnState, Event};
use crate::flood::{FloodThrottle, Priority};
use crate::ids::BufferId;
use crate::isupport::Isupport;
use crate::line::{Line, OutLine};
use crate::members::{Channel, Users};
use crate::row::{CompactString, Payload};
use crate::who_queue::{WhoQueue, DEFAULT_WHOX_TOKEN};
use batches::Batches;
use registration::{Registration, SaslState};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

/// The connection as the engine sees it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Connection {
    /// Where the session stands.
    pub state: ConnState,
    /// Our current nick (the configured one until registration says otherwise).
    pub nick: String,
    /// The server's name from the source of its replies, once known.
    pub server_name: Option<String>,
    /// Our user modes.
    pub user_modes: String,
    /// Why the last connection ended, when it did.
    pub last_error: Option<String>,
    /// Lines that could not be parsed and were dropped.
    pub unparsable_lines: u64,
    /// Why the server refused the last connection for good (a wrong server
    /// or bouncer password, SASL refused where the server requires it, no
    /// nick accepted). Retrying would fail the same way and can get the
    /// address banned, so the host does not reconnect after it; cleared when
    /// a connection opens.
    pub registration_refused: Option<String>,
    /// While reconnecting: how long the host waits before the next attempt
    /// (its backoff), so a person reads "reconnecting in 4 s". The host's
    /// timer, not the engine's: the engine only reports it.
    #[serde(skip)]
    pub retry_in: Option<std::time::Duration>,
}

/// One IRC session. See the module docs for the input/output protocol.
#[derive(Debug, Serialize)]
pub struct Session {
    pub(crate) config: SessionConfig,
    pub(crate) connection: Connection,
    pub(crate) registration: Registration,
    pub(crate) sasl: SaslState,
    pub(crate) caps: Capabilities,
    pub(crate) isupport: Isupport,
    pub(crate) buffers: Buffers,
    pub(crate) channels: BTreeMap<String, Channel>,
    pub(crate) users: Users,
    pub(crate) batches: Batches,
    pub(crate) who: WhoQueue,
    /// The lag probe of this connection. Not serialized: a measurement of
    /// the moment, not state to restore.
    #[serde(skip)]
    pub(crate) lag: crate::lag::Lag,
    /// The nick last chosen with `/nick` and confirmed by the server: tried
    /// first on the next connection, before the configured one.
    pub(crate) preferred_nick: Option<String>,
    /// The nick asked for with `/nick`, until the server confirms or refuses it.
    #[serde(skip)]
    pub(crate) requested_nick: Option<String>,
    /// Channels to be in: the configured ones plus `/join`s, less `/part`s
    /// and channels we were kicked from.
    /// Joined again after a reconnect. Keyed by case-folded name.
    pub(crate) wanted_channels: BTreeMap<String, ChannelSpec>,
    /// Channels (case-folded) whose 324/329 replies answer the MODE query
    /// made on our JOIN (bridged: the service's), so they set the
    /// channel's modes without a server-buffer row. See `channel_modes`.
    #[serde(skip)]
    pub(crate) modes_asked: std::collections::BTreeSet<String>,
    /// Channels joined whose `MODE #channel` query is still to be sent
    /// (case-folded key, name): one at a time, only while nothing else is
    /// queued, so a person's lines never wait behind a join burst's queries.
    #[serde(skip)]
    pub(crate) modes_to_ask: VecDeque<(String, String)>,
    /// Outgoing lines, paced. Skipped in serialization and masked in
    /// `Debug`: lines may hold secrets.
    #[serde(skip)]
    pub(crate) outbox: FloodThrottle<queued_line::QueuedLine>,
    /// The last ticket handed to an agent's line.
    pub(crate) next_ticket: Ticket,
    /// Agent lines taken out of the queue unsent when the person quit (see
    /// [`Commands::quit`]), for the host to answer "not sent".
    #[serde(skip)]
    pub(crate) unsent_agent_lines: VecDeque<Ticket>,
    #[serde(skip)]
    pub(crate) events: VecDeque<Event>,
    /// `/smsg` texts whose echo-message copy is still expected.
    #[serde(skip)]
    pub(crate) pending_secrets: Vec<commands::PendingSecret>,
    /// `/smsg` texts the raw views show masked for a while.
    #[serde(skip)]
    pub(crate) raw_masks: raw_masks::RawMasks,
    /// True once this connection said that the query buffer cap was reached.
    #[serde(skip)]
    pub(crate) query_cap_reported: bool,
    /// The newest server time on a line sent as it happened on this
    /// connection (001, our own JOINs); older server times are replays.
    #[serde(skip)]
    pub(crate) attached_at: Option<UnixMillis>,
    /// The newest server time on a history batch's own BATCH line: the
    /// moment a bouncer played back its buffer. ZNC stamps a line it buffered
    /// with the time it read it, which can be that very millisecond, so a
    /// line outside a batch at or before it is a replay too.
    #[serde(skip)]
    pub(crate) playback_at: Option<UnixMillis>,
    /// Batches of older rows marked so far (see `mark_batch_older`); kept
    /// across connections, as the buffers whose rows it ranks are.
    #[serde(skip)]
    pub(crate) older_batches: u64,
    /// Set once QUIT is queued: what is still queued goes out unpaced, since
    /// the link is closing and pacing would only lose it (agent lines are
    /// taken out instead, see [`Commands::quit`]).
    #[serde(skip)]
    pub(crate) closing: bool,
    /// The latest time seen, so inputs that need "now" outside a handler have it.
    #[serde(skip)]
    pub(crate) now: Now,
    /// The exact secret values this session holds (server password, SASL
    /// password, channel keys, and every credential it has sent: see
    /// `learn_credentials_of`), for the way-out scan and what the terminal
    /// masks. Opaque: it never gives a value back, and is never serialized.
    #[serde(skip)]
    pub(crate) secrets: rete_redact::SecretSet,
    /// `secrets` without the transport's (see `set_transport_secrets`), so
    /// a rotated token replaces the old set rather than growing it.
    #[serde(skip)]
    pub(crate) base_secrets: rete_redact::SecretSet,
    /// The credentials this session has sent (a PASS, an OPER, a service
    /// login in any spelling), masked in our own messages as the server
    /// echoes them back: a login to `#rete,NickServ` comes back to `#rete`
    /// as a plain message.
    #[serde(skip)]
    pub(crate) sent_credentials: rete_redact::SecretSet,
}

impl Session {
    /// A disconnected session with an empty server buffer.
    pub fn new(config: SessionConfig) -> Session {
        let isupport = Isupport::default();
        let buffers = Buffers::new(&config.id, &config.name, config.buffer_capacity);
        let wanted_channels = config
            .channels
            .iter()
            .map(|c| (isupport.casemapping.fold(&c.name), c.clone()))
            .collect();
        Session {
            connection: Connection {
                nick: config.nick.clone(),
                ..Connection::default()
            },
            registration: Registration::default(),
            sasl: SaslState::default(),
            caps: Capabilities::default(),
            buffers,
            channels: BTreeMap::new(),
            users: Users::new(),
            batches: Batches::default(),
            who: WhoQueue::new(DEFAULT_WHOX_TOKEN, config.who_poll_interval_ms),
            lag: crate::lag::Lag::default(),
            preferred_nick: None,
            requested_nick: None,
            wanted_channels,
            modes_asked: std::collections::BTreeSet::new(),
            modes_to_ask: VecDeque::new(),
            outbox: FloodThrottle::new(config.flood),
            next_ticket: 0,
            unsent_agent_lines: VecDeque::new(),
            events: VecDeque::new(),
            pending_secrets: Vec::new(),
            raw_masks: raw_masks::RawMasks::default(),
            attached_at: None,
            playback_at: None,
            older_batches: 0,
            query_cap_reported: false,
            closing: false,
            now: Now::default(),
            secrets: configured_secrets(&config),
            base_secrets: configured_secrets(&config),
            sent_credentials: rete_redact::SecretSet::empty(),
            isupport,
            config,
        }
    }

    // ----- inputs -----

    /// The transport is about to connect (or retry): records the state.
    pub fn handle_connecting(&mut self, now: Now, reconnect: bool) {
        self.now = now;
        self.connection.retry_in = None;
        let state = if reconnect {
            ConnState::Reconnecting
        } else {
            ConnState::Connecting
        };
        self.set_state(state);
    }

    /// The connection was lost and the host tries again after `delay` (its
    /// backoff): the state becomes reconnecting, and the view says when.
    pub fn handle_reconnecting_in(&mut self, now: Now, delay: std::time::Duration) {
        self.handle_connecting(now, true);
        self.connection.retry_in = Some(delay);
    }

    /// The transport connected to `peer` (over TLS when the server's
    /// certificate fingerprint is given): starts registration. `entropy`
    /// seeds the SCRAM client nonce (the engine has no randomness of its own).
    pub fn handle_connected(
        &mut self,
        now: Now,
        peer: &str,
        tls_fingerprint: Option<&str>,
        entropy: [u8; 18],
    ) {
        self.now = now;
        self.reset_connection_state(now.mono);
        self.connection.registration_refused = None;
        self.connection.retry_in = None;
        self.set_state(ConnState::Connecting);
        match tls_fingerprint {
            Some(fp) => self.status(&format!(
                "Connected to {peer} over TLS (server certificate SHA-256 {fp})"
            )),
            None => self.status(&format!("Connected to {peer}")),
        }
        if self.config.bridged {
            // The service holds the registration; its sync's 001 says we are in.
            self.registration.step = RegStep::AwaitWelcome;
            self.registration.cap_end_sent = true;
        } else {
            self.start_registration(entropy);
        }
    }

    /// Bridged only: the service's IRC connection went down (`reason` from
    /// the service) while our link to the service stays up. The session
    /// shows reconnecting and waits for the service's next 001.
    pub fn handle_upstream_down(&mut self, now: Now, reason: &str) {
        if self.connection.state == ConnState::Disconnected {
            return;
        }
        self.handle_disconnected(now, reason);
        self.handle_connecting(now, true);
        self.registration.step = RegStep::AwaitWelcome;
        self.registration.cap_end_sent = true;
    }

    /// A refusal of the transport's that retrying cannot fix (a ReteCloud
    /// token the service refused): recorded like a registration refusal, so
    /// the host does not reconnect and the person is told how to retry.
    pub fn note_transport_refused(&mut self, why: &str) {
        self.connection.registration_refused = Some(why.to_owned());
    }

    /// A status line from the transport (a ReteCloud gap, say) in the
    /// server buffer. `text` must hold no secret.
    pub fn note_transport_status(&mut self, text: &str) {
        self.status(text);
    }

    /// The transport's own secrets (a ReteCloud token and the ones it
    /// replaced), scanned for like the configured ones; each call replaces
    /// the previous call's values.
    pub fn set_transport_secrets<I, S>(&mut self, secrets: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.secrets = self.base_secrets.extended(secrets);
    }

    /// The connection closed (`reason` says why, for the server buffer).
    pub fn handle_disconnected(&mut self, now: Now, reason: &str) {
        self.now = now;
        let was_up = self.connection.state != ConnState::Disconnected;
        self.connection.retry_in = None;
        self.lag.stop();
        self.connection.last_error = Some(reason.to_owned());
        self.note_closed_before_welcome();
        self.reset_connection_state(now.mono);
        for channel in self.channels.values_mut() {
            channel.joined = false;
            channel.members.clear();
            channel.names_pending = None;
        }
        self.users.clear();
        self.buffers.end_replays();
        if was_up {
            self.status(&format!("Disconnected: {reason}"));
        }
        if let Some(why) = self.connection.registration_refused.clone() {
            self.status(&format!(
                "Not reconnecting: {why}. Fix it, then type /connect {} to try again",
                self.config.name
            ));
        }
        self.set_state(ConnState::Disconnected);
    }

    /// Timers: WHO timeouts and polls. Flood pacing is handled by `poll_transmit`.
    pub fn handle_timeout(&mut self, now: Now) {
        self.now = now;
        // Bridged, the service polls WHO and probes the lag.
        if self.connection.state != ConnState::Connected || self.config.bridged {
            return;
        }
        if self.who.poll_due(now.mono) {
            let joined: Vec<(String, String)> = self
                .channels
                .iter()
                .filter(|(_, c)| c.joined)
                .map(|(k, c)| (k.clone(), c.name.clone()))
                .collect();
            self.who.schedule_poll(
                now.mono,
                joined.iter().map(|(k, n)| (k.as_str(), n.as_str())),
            );
        }
        self.pump_who(now.mono);
        self.pump_mode_queries();
        if let Some(token) = self.lag.poll_probe(now.mono) {
            self.send_urgent(OutLine::new("PING").param(&token));
        }
    }

    /// `line` (received, or about to be written) as a raw view may show it:
    /// a `/smsg` text sent in the last minute is masked, since the engine
    /// stores it masked but the line itself carries it. Borrowed, at the
    /// cost of one check, when no `/smsg` was sent lately.
    pub fn raw_shown<'a>(&mut self, line: &'a str) -> std::borrow::Cow<'a, str> {
        let now = self.now.mono;
        self.raw_masks.shown(line, now)
    }

    /// One line from the server, without its CR LF.
    pub fn handle_line(&mut self, now: Now, raw: &str) {
        self.now = now;
        let line = match Line::parse(raw) {
            Ok(line) => line,
            Err(_) => {
                self.connection.unparsable_lines += 1;
                return;
            }
        };
        let cmd = line.command();
        let cmd: Cow<'_, str> = if cmd.bytes().any(|b| b.is_ascii_lowercase()) {
            Cow::Owned(cmd.to_ascii_uppercase())
        } else {
            Cow::Borrowed(cmd)
        };
        if let Some(server) = line.source() {
            if self.connection.server_name.is_none() && !server.contains('!') && cmd.len() == 3 {
                self.connection.server_name = Some(server.to_owned());
            }
        }
        match &*cmd {
            "PING" => {
                let token = line.param(0).unwrap_or("");
                self.send_urgent(OutLine::new("PONG").param(token));
            }
            // PONGs are never rows; the one answering our lag probe is measured.
            "PONG" => {
                let token = line.params().last().copied().unwrap_or("");
                self.lag.on_pong(now.mono, token);
            }
            "CAP" => self.on_cap(&line),
            "AUTHENTICATE" => self.on_authenticate(&line),
            "BATCH" => self.on_batch(&line),
            "PRIVMSG" | "NOTICE" => self.on_message(&line, &cmd),
            "JOIN" => self.on_join(&line),
            "PART" => self.on_part(&line),
            "KICK" => self.on_kick(&line),
            "QUIT" => self.on_quit(&line),
            "NICK" => self.on_nick(&line),
            "MODE" => self.on_mode(&line),
            "TOPIC" => self.on_topic(&line),
            "INVITE" => self.on_invite(&line),
            "AWAY" => self.on_away(&line),
            "ACCOUNT" => self.on_account(&line),
            "CHGHOST" => self.on_chghost(&line),
            "SETNAME" => self.on_setname(&line),
            "ERROR" => self.on_error(&line),
            _ => self.on_numeric_or_other(&line, &cmd),
        }
    }

    // ----- outputs -----

    /// The next line to write to the wire now, if the throttle allows one.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Mono) -> Option<String> {
        self.poll_transmit_ticketed(now).map(|(line, _)| line)
    }

    /// Like [`poll_transmit`](Self::poll_transmit), with the ticket of an
    /// agent's line ([`Commands::agent_line`]), so the host can report when
    /// that line was written.
    #[must_use]
    pub fn poll_transmit_ticketed(&mut self, now: Mono) -> Option<(String, Option<Ticket>)> {
        // Bridged, the service paces: the outbox only keeps the order.
        let line = if self.closing || self.config.bridged {
            self.outbox.pop_unpaced()
        } else {
            self.outbox.poll_send(now)
        };
        let queued = line?;
        self.learn_credentials_of(&queued.0);
        let ticket = match queued.1 {
            queued_line::Origin::Plain => None,
            queued_line::Origin::Agent(ticket) => Some(ticket),
            queued_line::Origin::SilentWho => {
                self.who.on_written(now);
                None
            }
        };
        Some((queued.0, ticket))
    }

    /// The next agent line that will never be written: it was still queued
    /// when the person quit ([`Commands::quit`]), so its caller is to be
    /// answered "not sent".
    #[must_use]
    pub fn poll_unsent_agent_line(&mut self) -> Option<Ticket> {
        self.unsent_agent_lines.pop_front()
    }

    /// Records an agent's line that went on the wire: the audit row `AI
    /// access sent: <shown>` in the server buffer. `shown` is the line as the
    /// control surface records it (masked, with formatting stripped and
    /// invisible characters escaped), never the line itself.
    pub fn note_agent_line_sent(&mut self, shown: &str) {
        self.status(&format!("AI access sent: {shown}"));
    }

    /// The next change notification.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call `poll_transmit` or `handle_timeout` next.
    #[must_use]
    pub fn poll_timeout(&self, now: Mono) -> Option<Mono> {
        let flood = self.outbox.poll_timeout(now);
        let (who, lag) = if self.connection.state == ConnState::Connected && !self.config.bridged {
            (self.who.poll_timeout(now), self.lag.poll_timeout())
        } else {
            (None, None)
        };
        // A mode query waits for an empty outbox and a full bucket.
        let modes = if self.connection.state == ConnState::Connected && !self.config.bridged {
            self.mode_query_due(now)
        } else {
            None
        };
        [flood, who, lag, modes].into_iter().flatten().min()
    }

    /// An embedder's raw-out hook vetoed a line the engine produced.
    pub fn note_vetoed_line(&mut self) {
        self.status("A line was not sent: it was vetoed by a raw-out hook");
    }

    /// Lines waiting for the flood throttle.
    pub fn queued_lines(&self) -> usize {
        self.outbox.queued()
    }

    // ----- access -----

    /// The sending interface: user actions that put lines on the wire.
    pub fn commands(&mut self) -> Commands<'_> {
        Commands::new(self)
    }

    /// The read-only interface.
    pub fn view(&self) -> crate::view::SessionView<'_> {
        crate::view::SessionView::new(self)
    }

    // ----- shared helpers for the handler files -----

    fn set_state(&mut self, state: ConnState) {
        if self.connection.state != state {
            self.connection.state = state;
            self.events.push_back(Event::State(state));
        }
    }

    fn reset_connection_state(&mut self, now: Mono) {
        self.registration = Registration::default();
        self.sasl.reset();
        self.caps.reset();
        self.batches = Batches::default();
        self.who.clear();
        self.modes_to_ask.clear();
        self.modes_asked.clear();
        self.outbox.reset(now);
        self.attached_at = None;
        self.playback_at = None;
        self.query_cap_reported = false;
        self.closing = false;
        self.connection.server_name = None;
        self.connection.user_modes.clear();
        self.connection.nick = self
            .preferred_nick
            .clone()
            .unwrap_or_else(|| self.config.nick.clone());
        self.requested_nick = None;
    }

    /// The engine's own lines (registration, PONG, CTCP answers, JOINs
    /// after 001, CHATHISTORY): never sent when bridged, since the service
    /// holds the IRC connection and sends its own. The person's and
    /// agents' lines go through `Commands`, which does not come here.
    fn send(&mut self, line: OutLine) {
        self.queue(line, Priority::Normal);
    }

    /// Queues our own WHO, whose timeout starts when it is written.
    fn send_silent_who(&mut self, line: OutLine) {
        if self.config.bridged {
            return;
        }
        match line.to_wire() {
            Ok(wire) => self.outbox.push(
                queued_line::QueuedLine(wire, queued_line::Origin::SilentWho),
                Priority::Normal,
            ),
            Err(e) => self.status(&format!("Not sent: {e}")),
        }
    }

    fn send_urgent(&mut self, line: OutLine) {
        self.queue(line, Priority::Urgent);
    }

    /// Queues a line that goes only from spare capacity (CTCP replies).
    fn send_spare(&mut self, line: OutLine) {
        self.queue(line, Priority::Spare);
    }

    fn queue(&mut self, line: OutLine, prio: Priority) {
        if self.config.bridged {
            return;
        }
        // Lines are built by the engine from validated parts; a line that
        // still fails to serialize is dropped rather than sent malformed.
        match line.to_wire() {
            Ok(wire) => self.outbox.push(queued_line::QueuedLine::plain(wire), prio),
            Err(e) => self.status(&format!("Not sent: {e}")),
        }
    }

    fn fold(&self, name: &str) -> String {
        self.isupport.casemapping.fold(name)
    }

    fn is_me(&self, nick: &str) -> bool {
        self.isupport.casemapping.eq(nick, &self.connection.nick)
    }

    /// Stores a row in `buffer` and announces it.
    fn push_row(&mut self, buffer: &BufferId, row: NewRow) -> Option<u64> {
        let pushed = self.buffers.get_mut(buffer)?.push(row);
        match pushed {
            Pushed::Stored { seq, .. } => {
                self.events.push_back(Event::Row {
                    buffer: buffer.clone(),
                    seq,
                });
                Some(seq)
            }
            Pushed::Duplicate => None,
        }
    }

    /// A row for the current line: its server time, msgid and batch state.
    /// A line outside any batch whose server time is older than our own
    /// arrival on this connection (see `attached_at`) is a replay too.
    fn row_for(&self, line: &Line<'_>, from: &str, payload: Payload) -> NewRow {
        let server_time = line
            .tag("time")
            .and_then(|t| crate::timefmt::parse_server_time(&t));
        let replayed = server_time.is_some_and(|t| {
            self.attached_at.is_some_and(|at| t < at) || self.playback_at.is_some_and(|at| t <= at)
        });
        NewRow {
            time: server_time.unwrap_or(self.now.wall),
            server_time: server_time.is_some(),
            msgid: line.tag("msgid").map(CompactString::from),
            from: from.into(),
            in_history_batch: replayed || self.batches.is_history(line),
            payload,
            older_batch: self.batches.older_batch(line),
        }
    }

    /// Notes the server time of a line the server sent as it happened (001,
    /// our own JOIN), outside any history batch: anything it sends later with
    /// an older time is a replay. ZNC 1.8 replays private notices after its
    /// playback batches, with their old times and no batch tag.
    fn note_attach_time(&mut self, line: &Line<'_>) {
        if self.batches.is_history(line) {
            return;
        }
        if let Some(t) = line_time(line) {
            self.attached_at = Some(self.attached_at.map_or(t, |at| at.max(t)));
        }
    }

    /// Notes the server time of a history batch's BATCH line (see `playback_at`).
    fn note_playback_time(&mut self, line: &Line<'_>) {
        if let Some(t) = line_time(line) {
            self.playback_at = Some(self.playback_at.map_or(t, |at| at.max(t)));
        }
    }

    /// A status line of the client's own in the server buffer.
    fn status(&mut self, text: &str) {
        let row = NewRow {
            time: self.now.wall,
            server_time: false,
            msgid: None,
            from: "".into(),
            in_history_batch: false,
            payload: Payload::ClientStatus { text: text.into() },
            older_batch: None,
        };
        let id = self.buffers.server_id().clone();
        self.push_row(&id, row);
    }

    fn now_wall(&self) -> UnixMillis {
        self.now.wall
    }

    /// A channel key given to `/join`: scanned for from now on, and kept
    /// after a part (the key is still a secret once we leave).
    fn learn_channel_key(&mut self, key: &str) {
        self.learn_secret(key);
    }

    /// A secret the person gave outside the session's configuration (a
    /// channel key typed with `/join`, a password sent in a ReteCloud
    /// settings change): scanned for from now on, for the session's life.
    pub fn learn_secret(&mut self, secret: &str) {
        self.secrets = self.secrets.extended([secret]);
        self.base_secrets = self.base_secrets.extended([secret]);
    }

    /// A line leaving the session, whoever wrote it (the person, an agent,
    /// the engine itself): each credential it gives away (a PASS or OPER
    /// password, a service login's) is held from now on, for the session's
    /// life. The values stay inside the opaque sets; nothing is rebuilt for
    /// a line that carries none, or none new.
    fn learn_credentials_of(&mut self, line: &str) {
        let Some(sent) = self.sent_credentials.with_credentials_of(line) else {
            return;
        };
        self.sent_credentials = sent;
        if let Some(held) = self.secrets.with_credentials_of(line) {
            self.secrets = held;
        }
        if let Some(base) = self.base_secrets.with_credentials_of(line) {
            self.base_secrets = base;
        }
    }
}

/// The line's server time, if tagged.
fn line_time(line: &Line<'_>) -> Option<UnixMillis> {
    line.tag("time")
        .and_then(|t| crate::timefmt::parse_server_time(&t))
}

/// The secrets a configuration holds: the server password, the SASL
/// password and the configured channel keys.
fn configured_secrets(config: &SessionConfig) -> rete_redact::SecretSet {
    let sasl = config
        .sasl
        .as_ref()
        .map(|s| s.credentials.password.as_str());
    let keys = config.channels.iter().filter_map(|c| c.key.as_deref());
    rete_redact::SecretSet::new(
        config
            .password
            .as_deref()
            .into_iter()
            .chain(sasl)
            .chain(keys),
    )
}

#[cfg(test)]
mod bridged_tests;
#[cfg(test)]
mod debug_tests;
#[cfg(test)]
mod tests;
