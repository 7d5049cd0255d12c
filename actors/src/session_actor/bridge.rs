//! A ReteCloud session's bridge: the session's [`CloudClient`] and the
//! bookkeeping of its requests, without I/O.
//!
//! The bridge is kept in [`SessionShared`](super::SessionShared) across
//! reconnects and actor restarts, so a reattach resumes exactly and a line
//! handed to the service is still answered after a reconnect. It holds the
//! agent lines sent as `send` frames (by request id, until acknowledged or
//! refused), the settings changes and fetches of older rows waiting for
//! their answer (with their callers' reply ports), the streams whose recent
//! history was fetched in this run, and each buffer's oldest row known
//! ([`Older`]).
//!
//! Like the client it drives (and quinn-proto's `Connection`), it opens no
//! socket and reads no clock: the session actor feeds it
//! - the link's inputs: [`handle_open`](Bridge::handle_open) with the token
//!   it read from the store, [`handle_frame`](Bridge::handle_frame) with
//!   each text message, [`handle_closed`](Bridge::handle_closed),
//!   [`handle_timeout`](Bridge::handle_timeout) and
//!   [`handle_token_stored`](Bridge::handle_token_stored);
//! - the session's requests: [`send_line`](Bridge::send_line),
//!   [`config_update`](Bridge::config_update) and
//!   [`fetch_older`](Bridge::fetch_older);
//! - the engine's answers to an [`Output`] that asks for one:
//!   [`handle_row_fed`](Bridge::handle_row_fed),
//!   [`fetch_first_history`](Bridge::fetch_first_history) and
//!   [`handle_backlog_fed`](Bridge::handle_backlog_fed);
//!
//! with the time in milliseconds of the engine's monotonic clock, and then
//! carries out every [`Output`] from [`poll_output`](Bridge::poll_output)
//! until it has none, arms its timer for
//! [`poll_timeout`](Bridge::poll_timeout), and (once the rows' events are
//! out) sends the answers from [`poll_answer`](Bridge::poll_answer).
//!
//! A request whose connection closes before the service answers it has its
//! reply port dropped, which its caller reads as `NoAnswer`; an agent line
//! the client holds is not: the client resends it after the next `ready`,
//! and the service's acknowledgement answers it.

use super::older::{message_buffer, Older};
use crate::cloud_backlog::{BacklogReply, CloudBacklogError, OlderRows, MAX_BACKLOG_ROWS};
use crate::cloud_settings::{shown_text, CloudSettingsError, SettingsReply};
use rete_cloud_protocol::client::{ClientConfig, CloseReason, Reconnect};
use rete_cloud_protocol::config::ConfigEntry;
use rete_cloud_protocol::frame::{
    Backlog, Before, NetworkId, NetworkState, RequestId, ResumePoint, StreamId,
};
use rete_cloud_protocol::{
    decode_server, encode_client, Action, CloudClient, ErrorCode, IrcLine, Token,
};
use rete_engine::ids::BufferId;
use rete_engine::session::Ticket;
use std::collections::{HashMap, HashSet, VecDeque};

/// How long the client waits for `hello` after `auth`.
const AUTH_TIMEOUT_MS: u64 = 15_000;

/// Rows of each channel fetched at a stream's first attach in a run.
const FIRST_FETCH_ROWS: u32 = 50;

/// The least time between two stores of the resume points while rows
/// arrive (a connection's end and `ready` store them at once): a host
/// killed meanwhile shows at most this much again after its restart.
pub(super) const RESUME_STORE_INTERVAL_MS: u64 = 5_000;

/// A ReteCloud session's bridge (see the module doc); empty for IRC.
#[derive(Default)]
pub(crate) struct Bridge {
    /// Created at the first connection, from the stored token.
    client: Option<CloudClient>,
    /// This session's network, as the service names it (set at each open).
    network: String,
    /// This session's stream on the current attach.
    stream: Option<StreamId>,
    /// Agent lines sent as `send` frames, until acknowledged or refused.
    tickets: HashMap<RequestId, Ticket>,
    /// Set by an explicit connect: read the token again (the person may
    /// have set a new one).
    reload_token: bool,
    /// Streams whose recent history was fetched in this run: a stream is
    /// fetched at its first attach only (later ones resume exactly).
    fetched: HashSet<StreamId>,
    /// Fetches in flight, by id.
    fetches: HashMap<RequestId, Fetching>,
    /// Each buffer's oldest row known, and whether older ones exist.
    older: Older,
    /// Answers to hosts' requests for older rows, sent once the rows'
    /// events are out (see [`Bridge::poll_answer`]).
    answered: VecDeque<(BacklogReply, Result<OlderRows, CloudBacklogError>)>,
    /// Settings changes waiting for the service's answer, by id.
    settings: HashMap<RequestId, SettingsReply>,
    /// Outputs made from the client's last action, before its next one.
    outputs: VecDeque<Output>,
    /// The resume points last handed out to be stored, and when.
    stored_resume: Option<(u64, Vec<ResumePoint>)>,
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

/// A fetch's answer for the engine; handed back, with the rows the engine
/// gained, to [`Bridge::handle_backlog_fed`].
pub(super) struct Fetched {
    backlog: Backlog,
    fetching: Fetching,
}

impl Fetched {
    /// The rows, oldest first.
    pub(super) fn backlog(&self) -> &Backlog {
        &self.backlog
    }

    /// The engine's buffer whose rows gained are counted (a host's request).
    pub(super) fn counted(&self) -> Option<&BufferId> {
        self.fetching.host.as_ref().map(|(id, _)| id)
    }

    /// The rows are older than every row held (see [`Fetching`]).
    pub(super) fn older(&self) -> bool {
        self.fetching.older
    }
}

/// What the session actor must do next, in order.
#[must_use]
pub(super) enum Output {
    /// Send this text message (a client frame, encoded) to the service.
    Transmit(String),
    /// Store this rotated token on a blocking thread, then call
    /// [`Bridge::handle_token_stored`]; the session's secrets change now.
    PersistToken {
        /// The rotation's generation.
        generation: u64,
        /// The new token.
        token: Token,
    },
    /// Attached to the service as `user`, on `stream` (for the log).
    Attached {
        /// The session's stream.
        stream: StreamId,
        /// The account.
        user: String,
    },
    /// The network's state lines, for the engine.
    Sync(Vec<IrcLine>),
    /// One row (with its time as its `@time` tag) for the engine; then
    /// call [`Bridge::handle_row_fed`].
    Row {
        /// The line to handle.
        line: String,
        /// Its sequence number.
        seq: u64,
    },
    /// Every replay is done: the connection proves itself (as a registered
    /// IRC link does), and the recent history of the engine's joined
    /// channels is fetched ([`Bridge::fetch_first_history`]).
    Ready,
    /// The service's IRC connection is down, for this reason.
    UpstreamDown(String),
    /// A line for the server buffer.
    Status(String),
    /// A fetch's rows, for the engine as a history batch; then call
    /// [`Bridge::handle_backlog_fed`] with how many it gained.
    Backlog(Fetched),
    /// A settings change is answered.
    SettingsAnswer {
        /// The caller.
        reply: SettingsReply,
        /// The service's echo, or why not.
        result: Result<String, CloudSettingsError>,
    },
    /// The service acknowledged the agent line of this ticket: it was sent.
    AgentSent(Ticket),
    /// The agent line of this ticket will not be sent.
    AgentNotSent(Ticket),
    /// Close the connection: the session loses it for this reason, and
    /// `refused` says retrying cannot help (the engine records a refusal
    /// and the session stays down).
    Close {
        /// Why, for the person (no token in it).
        why: String,
        /// A refusal retrying cannot fix.
        refused: bool,
    },
}

/// How [`Bridge::handle_open`] went.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Opened {
    /// Authenticating (or waiting for a token store first).
    Authenticating,
    /// The stored token could not be read: authenticating with the one held.
    WithHeldToken,
    /// No token to present: refused (see the [`Output::Close`] that follows).
    Refused,
}

/// What became of a line given to [`Bridge::send_line`].
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(super) enum SendOutcome {
    /// The client holds it until the service acknowledges it.
    Queued,
    /// The agent line of this ticket was not sent.
    AgentNotSent(Ticket),
    /// The person's line was not sent, for this reason.
    NotSent(String),
}

impl Bridge {
    // ---- getters ----

    /// The token values the engine must scan for (current, replaced, being
    /// stored); None before the first connection.
    pub(super) fn secrets(&self) -> Option<Vec<String>> {
        let c = self.client.as_ref()?;
        Some(c.secrets().map(|t| t.expose().to_owned()).collect())
    }

    /// The rotated token the client waits to hear stored, with its generation.
    pub(super) fn token_being_stored(&self) -> Option<(u64, Token)> {
        let c = self.client.as_ref()?;
        c.token_being_stored().map(|(g, t)| (g, t.clone()))
    }

    /// The agent lines the client holds: at a close they are answered after
    /// a reconnect, when the service acknowledges them, not "not sent".
    pub(super) fn handed_tickets(&self) -> HashSet<Ticket> {
        self.tickets.values().copied().collect()
    }

    // ---- outputs ----

    /// The next thing the actor must do.
    #[must_use]
    pub(super) fn poll_output(&mut self) -> Option<Output> {
        loop {
            if let Some(output) = self.outputs.pop_front() {
                return Some(output);
            }
            let action = self.client.as_mut()?.poll_action()?;
            self.on_action(action);
        }
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    #[must_use]
    pub(super) fn poll_timeout(&self) -> Option<u64> {
        self.client.as_ref().and_then(|c| c.poll_timeout())
    }

    /// The next answer to a host's request for older rows; polled only once
    /// the events of the rows fetched are out, so a host that prints both
    /// sees the rows before the count.
    #[must_use]
    pub(super) fn poll_answer(
        &mut self,
    ) -> Option<(BacklogReply, Result<OlderRows, CloudBacklogError>)> {
        self.answered.pop_front()
    }

    // ---- commands ----

    /// Asks the next connection to read the stored token again.
    pub(crate) fn reload_token(&mut self) {
        self.reload_token = true;
    }

    /// The engine's line, as a `send` frame for the service.
    pub(super) fn send_line(
        &mut self,
        now: u64,
        line: String,
        ticket: Option<Ticket>,
    ) -> SendOutcome {
        let network = NetworkId(self.network.clone());
        let result = match self.client.as_mut() {
            Some(c) => c
                .send_line(now, network, IrcLine::new(line))
                .map_err(|(_, why)| why),
            None => Err("not attached to the service".to_owned()),
        };
        match (result, ticket) {
            (Ok(id), Some(t)) => {
                self.tickets.insert(id, t);
                SendOutcome::Queued
            }
            (Ok(_), None) => SendOutcome::Queued,
            (Err(_), Some(t)) => SendOutcome::AgentNotSent(t),
            (Err(why), None) => SendOutcome::NotSent(why),
        }
    }

    /// A person's settings change: sent as a `config_update` now, answered
    /// ([`Output::SettingsAnswer`]) when the service echoes it or refuses
    /// it; answered here when it cannot be sent.
    pub(super) fn config_update(
        &mut self,
        now: u64,
        entries: Vec<ConfigEntry>,
        reply: SettingsReply,
    ) {
        let network = NetworkId(self.network.clone());
        let sent = match self.client.as_mut() {
            None => Err(CloudSettingsError::NotAttached),
            Some(c) => c
                .config_update(now, network, entries)
                .map_err(|(code, why)| match code {
                    ErrorCode::NotAuthenticated => CloudSettingsError::NotAttached,
                    _ => CloudSettingsError::Invalid(why),
                }),
        };
        match sent {
            Ok(id) => {
                self.settings.insert(id, reply);
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// A host asks for older rows of `buffer` (`name`: its name as `fetch`
    /// names it, None when the engine has no such buffer): a `fetch` before
    /// the oldest row known there, answered ([`poll_answer`](Self::poll_answer))
    /// when the rows are stored; or the answer at once (none older exist,
    /// one is in flight, not attached).
    pub(super) fn fetch_older(
        &mut self,
        now: u64,
        buffer: &BufferId,
        name: Option<String>,
        limit: u32,
        reply: BacklogReply,
    ) {
        match self.send_fetch(now, name, limit) {
            Ok((id, name, older)) => {
                self.fetches.insert(
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

    /// The `fetch` of [`fetch_older`](Self::fetch_older): its id, the buffer
    /// name and whether it ends before a row held, when sent; else the
    /// answer to give at once.
    fn send_fetch(
        &mut self,
        now: u64,
        name: Option<String>,
        limit: u32,
    ) -> Result<(RequestId, String, bool), Result<OlderRows, CloudBacklogError>> {
        if limit == 0 || limit > MAX_BACKLOG_ROWS {
            return Err(Err(CloudBacklogError::Invalid(format!(
                "the number of older rows is 1 to {MAX_BACKLOG_ROWS}"
            ))));
        }
        let name = name.ok_or(Err(CloudBacklogError::NoSuchBuffer))?;
        if self.older.is_asking(&name) {
            return Err(Err(CloudBacklogError::Busy));
        }
        if self.older.no_older(&name) {
            return Err(Ok(OlderRows {
                added: 0,
                no_older: true,
            }));
        }
        let before = self.older.before(&name).map(Before::Seq);
        let older = before.is_some();
        let (Some(c), Some(stream)) = (self.client.as_mut(), self.stream.clone()) else {
            return Err(Err(CloudBacklogError::NotAttached));
        };
        let id = c
            .fetch(now, stream, name.clone(), before, limit)
            .map_err(|(code, why)| {
                Err(match code {
                    ErrorCode::NotAuthenticated => CloudBacklogError::NotAttached,
                    _ => CloudBacklogError::Invalid(why),
                })
            })?;
        self.older.ask(&name);
        Ok((id, name, older))
    }

    // ---- inputs ----

    /// The WebSocket to the service opened: `stored` is the token read from
    /// the store now (None: none is set; Err: it could not be read), and
    /// `id_prefix` the random prefix of a new client's request ids.
    ///
    /// The token is read at every connection, not only the first: another
    /// session of the same account (another of its networks, or another
    /// reterm) may have stored a later token, and the one to present is the
    /// one stored (PROTOCOL §9 rule 1). An explicit connect sets it even
    /// when unchanged, which also lifts a stop.
    ///
    /// `resume` reads the resume points a host kept from an earlier run; it
    /// is called once, when the client is made at the first connection. A
    /// stream resumed from one replays exactly the rows missed, so its
    /// recent history is not fetched as well.
    pub(super) fn handle_open(
        &mut self,
        now: u64,
        network: &str,
        stored: Result<Option<Token>, String>,
        id_prefix: u64,
        resume: impl FnOnce() -> Vec<ResumePoint>,
    ) -> Opened {
        network.clone_into(&mut self.network);
        let reload = std::mem::take(&mut self.reload_token);
        let opened = match stored {
            Ok(Some(token)) => {
                match self.client.as_mut() {
                    Some(c) if reload || c.token() != &token => c.set_token(token),
                    Some(_) => {}
                    None => {
                        let resume = resume();
                        self.fetched.extend(resume.iter().map(|p| p.stream.clone()));
                        self.stored_resume = Some((now, resume.clone()));
                        self.client = Some(CloudClient::new(
                            token,
                            resume,
                            ClientConfig {
                                client: format!("rete/{}", env!("CARGO_PKG_VERSION")),
                                auth_timeout_ms: AUTH_TIMEOUT_MS,
                                id_prefix: format!("{id_prefix:016x}"),
                            },
                        ))
                    }
                }
                Opened::Authenticating
            }
            // A reconnect that cannot read the store goes on with the
            // token it holds (the last it stored or read).
            Ok(None) | Err(_) if self.client.is_some() && !reload => Opened::WithHeldToken,
            Ok(None) => {
                self.stop("no ReteCloud token is set for this session; set one with reterm retecloud-token".to_owned());
                return Opened::Refused;
            }
            Err(e) => {
                self.stop(format!("the ReteCloud token could not be read: {e}"));
                return Opened::Refused;
            }
        };
        if let Some(c) = self.client.as_mut() {
            c.handle_open(now);
        }
        opened
    }

    /// One WebSocket text message from the service.
    pub(super) fn handle_frame(&mut self, now: u64, text: &str) {
        let Some(c) = self.client.as_mut() else {
            return;
        };
        match decode_server(text) {
            Ok(frame) => c.handle_frame(now, frame),
            Err(e) => c.handle_bad_frame(&e),
        }
    }

    /// The WebSocket closed (or the session closed it, or the actor
    /// restarted without it).
    pub(super) fn handle_closed(&mut self) {
        self.stream = None;
        if let Some(c) = self.client.as_mut() {
            c.handle_closed();
            // The close it answers with is this one, which the caller handles.
            while c.poll_action().is_some() {}
        }
        // The requests of that connection get no answer on a later one.
        self.settle_requests();
    }

    /// The resume points to store now, if they moved since last stored and
    /// `RESUME_STORE_INTERVAL_MS` passed since (or at once when `now_due`:
    /// a connection's end, a `ready`). Taken after the rows that moved
    /// them were handed to the engine.
    pub(super) fn resume_to_store(&mut self, now: u64, now_due: bool) -> Option<Vec<ResumePoint>> {
        let c = self.client.as_ref()?;
        if let Some((at, points)) = &self.stored_resume {
            if !now_due && now < at.saturating_add(RESUME_STORE_INTERVAL_MS) {
                return None;
            }
            let current = c.resume_points();
            if &current == points {
                return None;
            }
            self.stored_resume = Some((now, current.clone()));
            return Some(current);
        }
        let current = c.resume_points();
        self.stored_resume = Some((now, current.clone()));
        Some(current)
    }

    /// Time passed: the client's heartbeat and deadlines.
    pub(super) fn handle_timeout(&mut self, now: u64) {
        if let Some(c) = self.client.as_mut() {
            c.handle_timeout(now);
        }
    }

    /// The store of rotation `generation`'s token finished: `written` when
    /// it holds it now (else the store failed, or kept a later token of the
    /// account, which this session presents from its next connection on).
    /// False when there is no client to tell.
    pub(super) fn handle_token_stored(&mut self, now: u64, generation: u64, written: bool) -> bool {
        let Some(c) = self.client.as_mut() else {
            return false;
        };
        if written {
            c.handle_token_persisted(now, generation);
        } else {
            c.handle_token_persist_failed(now, generation);
        }
        true
    }

    /// The engine handled an [`Output::Row`]: its buffer's oldest row known
    /// moves (the buffer is filed by `own_nick`, the nick the line arrived
    /// under).
    pub(super) fn handle_row_fed(&mut self, line: &str, own_nick: &str, seq: u64) {
        if let Some(b) = message_buffer(line, own_nick) {
            self.older.seen(&b, seq);
        }
    }

    /// At a stream's first attach in this run (no resume point: a restarted
    /// client starts live), asks for the recent rows of each of `channels`
    /// (the engine's joined channels), after an [`Output::Ready`].
    pub(super) fn fetch_first_history(&mut self, now: u64, channels: Vec<String>) {
        let Some(stream) = self.stream.clone() else {
            return;
        };
        if !self.fetched.insert(stream.clone()) {
            return;
        }
        for channel in channels {
            let Some(c) = self.client.as_mut() else {
                return;
            };
            if let Ok(id) = c.fetch(now, stream.clone(), channel.clone(), None, FIRST_FETCH_ROWS) {
                self.older.ask(&channel);
                self.fetches.insert(
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

    /// The engine stored an [`Output::Backlog`]'s rows: `added` of them were
    /// new in the counted buffer. Its host's answer waits in
    /// [`poll_answer`](Self::poll_answer).
    pub(super) fn handle_backlog_fed(&mut self, fetched: Fetched, added: usize) {
        let Fetched { backlog, fetching } = fetched;
        self.older.answered(
            &fetching.buffer,
            backlog.rows.first().map(|r| r.seq),
            backlog.more,
        );
        if let Some((_, reply)) = fetching.host {
            self.answered.push_back((
                reply,
                Ok(OlderRows {
                    added,
                    no_older: !backlog.more,
                }),
            ));
        }
    }

    // ---- the client's actions ----

    fn is_our_stream(&self, stream: &StreamId) -> bool {
        self.stream.as_ref() == Some(stream)
    }

    /// Turns one of the client's actions into outputs.
    fn on_action(&mut self, action: Action) {
        match action {
            Action::Send(frame) => {
                // The client builds only frames that encode; one that
                // did not would be a bug here, and is dropped.
                if let Ok(text) = encode_client(&frame) {
                    self.outputs.push_back(Output::Transmit(text));
                }
            }
            Action::PersistToken { generation, token } => {
                self.outputs
                    .push_back(Output::PersistToken { generation, token });
            }
            Action::Attached(hello) => {
                let Some(net) = hello.networks.iter().find(|n| n.network.0 == self.network) else {
                    let why = format!(
                        "the ReteCloud service has no network {:?} for this user",
                        self.network
                    );
                    self.stream = None;
                    return self.stop(why);
                };
                self.stream = Some(net.stream.clone());
                self.outputs.push_back(Output::Attached {
                    stream: net.stream.clone(),
                    user: hello.user.clone(),
                });
                if net.state != NetworkState::Connected {
                    let why = format!("the service's connection to {} is down", net.name);
                    self.outputs.push_back(Output::UpstreamDown(why));
                }
            }
            Action::Sync { stream, lines } => {
                if self.is_our_stream(&stream) {
                    self.outputs.push_back(Output::Sync(lines));
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
                    let line = with_time(line.as_str(), time);
                    self.outputs.push_back(Output::Row { line, seq });
                }
            }
            Action::Ready => self.outputs.push_back(Output::Ready),
            Action::Gap { stream, lost } => {
                if self.is_our_stream(&stream) {
                    self.outputs.push_back(Output::Status(format!(
                        "The service no longer holds rows {} to {} of this network; they are missing here",
                        lost.start(),
                        lost.end()
                    )));
                }
            }
            Action::StreamReset { stream, .. } => {
                if self.is_our_stream(&stream) {
                    self.older.forget();
                    self.outputs.push_back(Output::Status(
                        "The service's history of this network was renumbered; rows go on live from here".to_owned(),
                    ));
                }
            }
            Action::Network(update) => {
                if update.network.0 == self.network && update.state != NetworkState::Connected {
                    let why = update
                        .error
                        .unwrap_or_else(|| "the service's connection is down".to_owned());
                    self.outputs.push_back(Output::UpstreamDown(why));
                }
            }
            Action::Backlog(backlog) => {
                let Some(fetching) = self.fetches.remove(&backlog.id) else {
                    return;
                };
                if !self.is_our_stream(&backlog.stream) {
                    // Dropping a host's reply answers it `NoAnswer`.
                    self.older.failed(&fetching.buffer);
                    return;
                }
                self.outputs
                    .push_back(Output::Backlog(Fetched { backlog, fetching }));
            }
            Action::Config(c) => {
                let reply = c.id.as_ref().and_then(|id| self.settings.remove(id));
                let shown = shown_text(&c.entries);
                // Another client's change is news too: the person sees
                // what the service now holds either way.
                let by = if reply.is_some() {
                    ""
                } else {
                    " by another client"
                };
                self.outputs.push_back(Output::Status(format!(
                    "ReteCloud settings of {} changed{by}: {shown}",
                    c.network.0
                )));
                if let Some(reply) = reply {
                    self.outputs.push_back(Output::SettingsAnswer {
                        reply,
                        result: Ok(shown),
                    });
                }
            }
            Action::SendAcked(id) => {
                if let Some(t) = self.tickets.remove(&id) {
                    self.outputs.push_back(Output::AgentSent(t));
                }
            }
            Action::RequestFailed(e) => {
                let id = e.id.as_ref();
                if let Some(t) = id.and_then(|id| self.tickets.remove(id)) {
                    self.outputs.push_back(Output::AgentNotSent(t));
                }
                if let Some(reply) = id.and_then(|id| self.settings.remove(id)) {
                    self.outputs.push_back(Output::SettingsAnswer {
                        reply,
                        result: Err(CloudSettingsError::Refused {
                            code: e.code.as_str(),
                            message: shown_message(&e.message),
                        }),
                    });
                }
                if let Some(f) = id.and_then(|id| self.fetches.remove(id)) {
                    self.older.failed(&f.buffer);
                    if let Some((_, reply)) = f.host {
                        self.answered.push_back((
                            reply,
                            Err(CloudBacklogError::Refused {
                                code: e.code.as_str(),
                                message: shown_message(&e.message),
                            }),
                        ));
                    }
                }
                self.outputs.push_back(Output::Status(format!(
                    "The service refused a request ({}): {}",
                    e.code.as_str(),
                    e.message
                )));
            }
            Action::Close { reason, reconnect } => {
                self.stream = None;
                self.settle_requests();
                match reconnect {
                    Reconnect::Stop => self.stop(refusal_text(reason).to_owned()),
                    Reconnect::Retry => self.outputs.push_back(Output::Close {
                        why: close_text(reason),
                        refused: false,
                    }),
                }
            }
        }
    }

    /// A refusal retrying cannot fix: the session stays down until the
    /// person connects again. Lines the client still holds are not sent
    /// then, and the client forgets them: kept, they would wait for a
    /// `/connect` that may never come (and a later `/connect` must not send
    /// what was answered "not sent").
    fn stop(&mut self, why: String) {
        let forgotten = self.client.as_mut().map_or(0, |c| c.forget_unacked_sends());
        let tickets: Vec<Ticket> = self.tickets.drain().map(|(_, t)| t).collect();
        // Every agent line waiting has a ticket; the rest are the person's.
        let persons = forgotten.saturating_sub(tickets.len());
        if persons > 0 {
            self.outputs.push_back(Output::Status(format!(
                "Not sent: {persons} of your lines were still waiting for the service"
            )));
        }
        self.outputs
            .extend(tickets.into_iter().map(Output::AgentNotSent));
        self.outputs.push_back(Output::Close { why, refused: true });
    }

    /// The connection's requests end unanswered: dropping their replies
    /// answers each caller `NoAnswer`, and no buffer stays "being fetched".
    fn settle_requests(&mut self) {
        self.settings.clear();
        self.fetches.clear();
        self.older.settle();
    }
}

/// `line` with the row's time as its `@time` tag when it has none, so the
/// engine places a replayed row by when the service received it.
pub(super) fn with_time(line: &str, time: u64) -> String {
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
pub(super) fn is_message(line: &str) -> bool {
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

/// A service's error message as an error of ours carries it: escaped, so a
/// host that prints the error (reterm's line mode writes it to the
/// terminal) cannot be made to move the cursor or fake a line by the
/// service, as text from IRC cannot.
fn shown_message(message: &str) -> String {
    rete_redact::display_escape(message).into_owned()
}

#[cfg(test)]
mod tests;
