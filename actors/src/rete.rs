//! The facade a host application embeds: start the actor tree, add and remove
//! sessions, read them, act on them, and watch their events.
//!
//! Reading and sending are separate handles: a [`SessionReader`] can only
//! run read-only closures over a [`SessionView`]; a [`SessionSender`] is the
//! only way to make a session send. A host hands out only what a component needs.

use crate::hook::RawOutHook;
use crate::session_actor::{SessionEvent, SessionMsg, SessionShared};
use crate::supervisor::{RootMsg, RootRef, RootSupervisor};
use parking_lot::Mutex;
use ractor::Actor;
use rete_engine::ids::SessionId;
use rete_engine::session::{CommandError, Commands, Session, SessionConfig};
use rete_engine::view::SessionView;
use rete_transports::{Backoff, Transport, TransportKind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot};

/// How many events a slow observer may fall behind before it misses some.
const EVENT_BACKLOG: usize = 8192;

/// How long [`SessionReader::read`] waits for a failed session actor's successor before
/// it answers [`ReteError::Restarting`]: well past the supervisor's first restart delays
/// (100 ms, doubling), short enough that a session failing over and over is reported.
const RESTART_WAIT: Duration = Duration::from_secs(5);

/// Why a facade call failed.
#[derive(Debug, thiserror::Error)]
pub enum ReteError {
    /// The actor tree could not start.
    #[error("the actor system could not start: {0}")]
    Spawn(String),
    /// The actor tree has stopped.
    #[error("the actor system has stopped")]
    Stopped,
    /// No session has that id.
    #[error("unknown session")]
    UnknownSession,
    /// The session's actor is being restarted; try again shortly.
    #[error("the session is restarting")]
    Restarting,
    /// The session could not be added.
    #[error("{0}")]
    Add(String),
    /// The session refused the command.
    #[error("{0}")]
    Command(#[from] CommandError),
}

/// Everything needed to run one session.
pub struct SessionSpec {
    /// The engine configuration (identity, registration, channels).
    pub config: SessionConfig,
    /// Which wire the session speaks over, and where it connects.
    pub transport: Transport,
    /// Connect as soon as the session is added.
    pub autoconnect: bool,
    /// Delays between reconnect attempts.
    pub reconnect: Backoff,
}

/// Options for [`Rete::start`].
#[derive(Default)]
pub struct ReteOptions {
    /// Sees every outgoing line and may veto it.
    pub raw_out_hook: Option<Arc<dyn RawOutHook>>,
}

/// The running engine: a root supervisor and its sessions.
pub struct Rete {
    root: RootRef,
    /// The sessions in the order added, kept beside the supervisor's own
    /// list so that listing them is a read of shared state rather than a
    /// round trip through the supervisor's mailbox.
    sessions: Mutex<Vec<Arc<SessionShared>>>,
    events: broadcast::Sender<SessionEvent>,
    origin: Instant,
    hook: Option<Arc<dyn RawOutHook>>,
    raw: Arc<crate::raw_tap::RawTap>,
    join: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Rete {
    /// Starts the actor tree with no sessions.
    pub async fn start(options: ReteOptions) -> Result<Rete, ReteError> {
        let (root, join) = Actor::spawn(None, RootSupervisor, ())
            .await
            .map_err(|e| ReteError::Spawn(e.to_string()))?;
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        Ok(Rete {
            root,
            sessions: Mutex::new(Vec::new()),
            events,
            origin: Instant::now(),
            hook: options.raw_out_hook,
            raw: Arc::default(),
            join: Mutex::new(Some(join)),
        })
    }

    /// Sets (or, with `None`, clears) the observer of every session's raw
    /// lines in and out, masked with `rete_redact::mask_line`. While none
    /// is set a line costs one atomic load: nothing is masked or copied.
    pub fn set_raw_observer(&self, observer: Option<Arc<dyn crate::raw_tap::RawObserver>>) {
        self.raw.set(observer);
    }

    /// The debug slot of the raw tap, for the control surface's debug
    /// capture: a second observer, independent of the one
    /// [`Rete::set_raw_observer`] sets, with the same masking and the same
    /// one-atomic-load cost while empty.
    pub fn debug_raw_slot(&self) -> crate::raw_tap::DebugRawSlot {
        crate::raw_tap::DebugRawSlot::new(self.raw.clone())
    }

    /// Sets (or, with `None`, clears) the recorder: a third observer, for a
    /// host that keeps every session's lines verbatim for the person's own
    /// client (the rete-cloud service stores them this way). It is handed
    /// each line unmasked, with the time the session stamped it (see
    /// [`RawCapture`](crate::raw_tap::RawCapture)), and is independent of
    /// the display and debug slots: a recording host can still run a debug
    /// capture.
    pub fn set_raw_recorder(&self, recorder: Option<Arc<dyn crate::raw_tap::RawCapture>>) {
        self.raw.set_record(recorder);
    }

    /// Adds a session (connecting it when `autoconnect`).
    pub async fn add_session(&self, spec: SessionSpec) -> Result<SessionHandle, ReteError> {
        let id = spec.config.id.clone();
        let mut config = spec.config;
        // A ReteCloud session's engine runs bridged whatever the embedder
        // said: the service registers, answers the protocol and paces, and
        // `/smsg` is refused (the service would store its text).
        config.bridged = matches!(spec.transport, Transport::ReteCloud(_));
        let shared = Arc::new(SessionShared {
            engine: Mutex::new(Session::new(config)),
            transport: spec.transport,
            events: self.events.clone(),
            hook: self.hook.clone(),
            raw: self.raw.clone(),
            origin: self.origin,
            wants_connection: Mutex::new(spec.autoconnect),
            backoff: Mutex::new(spec.reconnect),
            span: tracing::info_span!(target: "rete::network", "session", id = %id),
            id,
            current: Mutex::new(None),
            actor_changed: tokio::sync::Notify::new(),
            removed: std::sync::atomic::AtomicBool::new(false),
            restarts: AtomicU32::new(0),
            cloud: Mutex::new(Default::default()),
            agent: Arc::new(Mutex::new(Default::default())),
            agent_reports_held: tokio::sync::watch::Sender::new(false),
            raw_frames_shown: std::sync::atomic::AtomicBool::new(false),
        });
        let result = ractor::call!(self.root, |reply| RootMsg::Add {
            shared: shared.clone(),
            reply
        })
        .map_err(|_| ReteError::Stopped)?;
        result.map_err(ReteError::Add)?;
        self.sessions.lock().push(shared.clone());
        Ok(SessionHandle::new(shared))
    }

    /// Stops a session and forgets it.
    pub async fn remove_session(&self, id: &SessionId) -> Result<(), ReteError> {
        let existed = ractor::call!(self.root, |reply| RootMsg::Remove {
            id: id.clone(),
            reply
        })
        .map_err(|_| ReteError::Stopped)?;
        if existed {
            self.sessions.lock().retain(|s| &s.id != id);
            Ok(())
        } else {
            Err(ReteError::UnknownSession)
        }
    }

    /// Every session, in the order added. It never awaits, so actors may
    /// call it inside their message handlers.
    pub fn sessions(&self) -> Vec<SessionHandle> {
        self.sessions
            .lock()
            .iter()
            .cloned()
            .map(SessionHandle::new)
            .collect()
    }

    /// The session with this id.
    pub async fn session(&self, id: &SessionId) -> Result<SessionHandle, ReteError> {
        self.sessions()
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or(ReteError::UnknownSession)
    }

    /// Every session's events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    /// Disconnects every session (with QUIT) and stops the tree, waiting up to
    /// `grace` for QUITs to go out.
    pub async fn shutdown(&self, grace: Duration) {
        let sessions = self.sessions();
        // Subscribe before asking, so no state change is missed.
        let mut events = self.events.subscribe();
        for s in &sessions {
            s.sender().disconnect(Some("Leaving".into()));
        }
        let all_down = async {
            while sessions.iter().any(SessionHandle::is_connected_now) {
                match events.recv().await {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        };
        let _ = tokio::time::timeout(grace, all_down).await;
        self.root.stop(None);
        let join = self.join.lock().take();
        if let Some(join) = join {
            let _ = join.await;
        }
        // No actor comes back now: a read still waiting for one ends at
        // once, and so does an agent line still waiting for its outcome.
        for s in &sessions {
            s.shared.retire();
        }
    }
}

/// One session: its id and its two interfaces.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<SessionShared>,
}

impl SessionHandle {
    fn new(shared: Arc<SessionShared>) -> SessionHandle {
        SessionHandle { shared }
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.shared.id
    }

    /// The read-only interface.
    pub fn reader(&self) -> SessionReader {
        SessionReader {
            shared: self.shared.clone(),
        }
    }

    /// The sending interface.
    pub fn sender(&self) -> SessionSender {
        SessionSender {
            shared: self.shared.clone(),
        }
    }

    /// How many times the supervisor restarted the session's actor.
    pub fn restarts(&self) -> u32 {
        self.shared.restarts.load(Ordering::Relaxed)
    }

    /// Whether the session has a connection now, registered or on its way
    /// (its state is anything but disconnected).
    pub fn is_connected_now(&self) -> bool {
        self.shared.engine.lock().view().state() != rete_engine::event::ConnState::Disconnected
    }

    /// Makes the session's actor fail, to exercise supervision in tests.
    #[doc(hidden)]
    pub fn crash_for_test(&self) {
        if let Some(actor) = self.shared.current.lock().clone() {
            let _ = actor.cast(SessionMsg::Crash);
        }
    }

    /// Holds back the writer's reports that it wrote an agent's line until
    /// the returned guard is dropped, so tests can end the connection (or
    /// the actor) after a line reached the socket but before the actor took
    /// the report — a window the writer's marks must cover whatever order
    /// the report and the close arrive in. Production code never calls it.
    #[doc(hidden)]
    #[must_use]
    pub fn hold_agent_reports_for_test(&self) -> impl Sized {
        /// Releases the reports when dropped.
        struct Held(tokio::sync::watch::Sender<bool>);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.send_replace(false);
            }
        }
        self.shared.agent_reports_held.send_replace(true);
        Held(self.shared.agent_reports_held.clone())
    }

    /// Holds the session's engine until the returned guard is dropped, as its
    /// actor does in the middle of an input, so tests can show what a read
    /// that finds the engine busy does.
    #[doc(hidden)]
    #[must_use]
    pub fn hold_engine_for_test(&self) -> impl Sized + '_ {
        self.shared.engine.lock()
    }

    /// Makes the session's actor panic (with the engine locked), to exercise supervision
    /// of a panic in tests.
    #[doc(hidden)]
    pub fn panic_for_test(&self) {
        if let Some(actor) = self.shared.current.lock().clone() {
            let _ = actor.cast(SessionMsg::Panic);
        }
    }
}

/// Reads a session. It can only run closures over a [`SessionView`], which
/// offers getters alone: nothing reached through it can send or change state.
#[derive(Clone)]
pub struct SessionReader {
    shared: Arc<SessionShared>,
}

impl SessionReader {
    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.shared.id
    }

    /// The kind of wire the session speaks over; fixed for its life.
    pub fn transport(&self) -> TransportKind {
        self.shared.transport.kind()
    }

    /// Runs `f` inside the session actor, between two engine inputs, so it
    /// sees one consistent instant. Dropping the returned future cancels the
    /// wait (the closure may still run, and its result is discarded).
    ///
    /// A session's actor that fails is restarted by the supervisor with the
    /// same engine, so a read that finds none (or whose message was lost with
    /// the failed one) waits for the next and runs there: a restart is not a
    /// session going away. It gives up with [`ReteError::Restarting`] after
    /// 5 seconds (`RESTART_WAIT`), or if `f` itself was running when the actor failed
    /// (it is never run twice), and answers [`ReteError::UnknownSession`] once
    /// the session is removed.
    pub async fn read<R, F>(&self, f: F) -> Result<R, ReteError>
    where
        R: Send + 'static,
        F: FnOnce(SessionView<'_>) -> R + Send + 'static,
    {
        // `f` stays here until an actor takes it, so a message lost with a
        // failed actor leaves it to be sent to the next one.
        let pending = Arc::new(Mutex::new(Some(f)));
        let mut give_up = None;
        loop {
            let (tx, rx) = oneshot::channel();
            let slot = pending.clone();
            let tried = self.queue(move |view: SessionView<'_>| {
                if let Some(f) = slot.lock().take() {
                    let _ = tx.send(f(view));
                }
            });
            let tried = match tried {
                Ok(actor) => match rx.await {
                    Ok(r) => return Ok(r),
                    Err(_) => Some(actor),
                },
                Err(tried) => tried,
            };
            if pending.lock().is_none() {
                return Err(ReteError::Restarting);
            }
            let give_up =
                *give_up.get_or_insert_with(|| tokio::time::Instant::now() + RESTART_WAIT);
            self.next_actor(tried, give_up).await?;
        }
    }

    /// Waits until the session has a live actor other than `tried` (the one a
    /// read was just lost with), or fails at `give_up` or once it is removed.
    async fn next_actor(
        &self,
        tried: Option<ractor::ActorId>,
        give_up: tokio::time::Instant,
    ) -> Result<(), ReteError> {
        loop {
            let changed = self.shared.actor_changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so a change from here on wakes it.
            changed.as_mut().enable();
            if self.shared.removed.load(Ordering::SeqCst) {
                return Err(ReteError::UnknownSession);
            }
            let current = self.shared.current.lock().as_ref().map(|a| a.get_id());
            if current.is_some() && current != tried {
                return Ok(());
            }
            if tokio::time::timeout_at(give_up, changed).await.is_err() {
                return Err(ReteError::Restarting);
            }
        }
    }

    /// Queues `f` in the live actor, as [`read_detached`](Self::read_detached)
    /// does, and says which actor took it; or, when none did, which one
    /// refused it (a failed actor the supervisor has not yet replaced), if any.
    fn queue<F>(&self, f: F) -> Result<ractor::ActorId, Option<ractor::ActorId>>
    where
        F: FnOnce(SessionView<'_>) + Send + 'static,
    {
        let actor = self.shared.current.lock().clone().ok_or(None)?;
        actor
            .cast(SessionMsg::Read(Box::new(f)))
            .map_err(|_| Some(actor.get_id()))?;
        Ok(actor.get_id())
    }

    /// Runs `f` over the engine here, on the calling thread, when nothing
    /// holds it at this moment; `None` when something does (its actor in the
    /// middle of an input), with `f` not run. The engine is held only for
    /// whole steps of its own (an input, or one line taken from its queue),
    /// so `f` sees it between two steps, as [`read`](Self::read) does,
    /// without a message to the actor and a wake-up on each side. It never
    /// waits, so a worker thread is never held behind a long input; a caller
    /// that must have the answer falls back to `read`. It also reads a
    /// session whose actor is being restarted: the engine is the same one.
    pub fn try_peek<R>(&self, f: impl FnOnce(SessionView<'_>) -> R) -> Option<R> {
        let engine = self.shared.engine.try_lock()?;
        Some(f(engine.view()))
    }

    /// Queues `f` to run inside the session actor, as [`read`](Self::read)
    /// does, and returns at once: `f` itself delivers what it read (an
    /// actor sends itself a message from it). The queueing happens before
    /// this returns, so `f` sees every line the session handles after this
    /// call. If the actor stops first, `f` is dropped without running; a
    /// caller that must know holds a guard in `f` that reports on drop.
    pub fn read_detached<F>(&self, f: F) -> Result<(), ReteError>
    where
        F: FnOnce(SessionView<'_>) + Send + 'static,
    {
        self.queue(f).map(|_| ()).map_err(|_| ReteError::Restarting)
    }
}

/// Makes a session act: connect, disconnect, and the user commands.
#[derive(Clone)]
pub struct SessionSender {
    shared: Arc<SessionShared>,
}

impl SessionSender {
    fn actor(&self) -> Result<crate::session_actor::SessionRef, ReteError> {
        self.shared
            .current
            .lock()
            .clone()
            .ok_or(ReteError::Restarting)
    }

    /// Starts connecting (and keeps reconnecting) until `disconnect`.
    pub fn connect(&self) {
        if let Ok(actor) = self.actor() {
            let _ = actor.cast(SessionMsg::Connect);
        } else {
            *self.shared.wants_connection.lock() = true;
        }
    }

    /// Sends QUIT (when registered), closes the connection and stops reconnecting.
    pub fn disconnect(&self, reason: Option<String>) {
        *self.shared.wants_connection.lock() = false;
        if let Ok(actor) = self.actor() {
            let _ = actor.cast(SessionMsg::Disconnect { reason });
        }
    }

    /// Closes the connection at once without a QUIT or any other line,
    /// and stops reconnecting: for a host that no longer owns the network
    /// (a rete-cloud node whose lease ended), where a parting line would
    /// come from a second client of the same person.
    pub fn abandon(&self) {
        *self.shared.wants_connection.lock() = false;
        if let Ok(actor) = self.actor() {
            let _ = actor.cast(SessionMsg::Abandon);
        }
    }

    /// Sends an agent's line (send_raw) where `/quote` sends, paced like any
    /// command, and resolves once the writer has written it — or with why it
    /// was not sent (not connected; vetoed by the raw-out hook; the
    /// connection closed first). `shown` is the line as recorded (masked,
    /// display-escaped): the audit row `AI access sent: <shown>` and the log
    /// line use it, never the line itself. Once called, the line goes out
    /// and leaves its row even if the returned future is dropped.
    pub async fn agent_line(
        &self,
        line: String,
        shown: String,
    ) -> Result<(), crate::AgentLineError> {
        self.ticketed_line(line, crate::agent_line::Record::Audited(shown))
            .await
    }

    /// Sends a line a client of the host handed over (the ReteCloud
    /// service's `send`), paced like any command, and resolves once the
    /// writer has written it, or with why it was not sent — as
    /// [`agent_line`](Self::agent_line), without the audit row: the line is
    /// the person's own. The caller checks it is one IRC line first.
    ///
    /// The line is queued by this call, not when the future is first
    /// polled, so lines relayed one after another go out in that order
    /// whichever task awaits them; once called, the line goes out even if
    /// the returned future is dropped.
    pub fn relayed_line(
        &self,
        line: String,
    ) -> impl std::future::Future<Output = Result<(), crate::AgentLineError>> + Send + 'static {
        self.ticketed_line(line, crate::agent_line::Record::Relayed)
    }

    /// Queues the line now; the future is its outcome.
    fn ticketed_line(
        &self,
        line: String,
        record: crate::agent_line::Record,
    ) -> impl std::future::Future<Output = Result<(), crate::AgentLineError>> + Send + 'static {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let queued = self.actor().ok().and_then(|actor| {
            actor
                .cast(SessionMsg::AgentLine {
                    line,
                    record,
                    reply,
                })
                .ok()
        });
        async move {
            match queued {
                Some(()) => answer.await.unwrap_or(Err(crate::AgentLineError::NotSent)),
                None => Err(crate::AgentLineError::NotConnected),
            }
        }
    }

    /// Changes the settings the ReteCloud service keeps for this session's
    /// network (nick, channels, SASL, ...) and resolves with the settings
    /// as the service now shows them (secrets only as `set`/`unset`), or
    /// with why not. A password given is a secret of this session from the
    /// moment it is handed over: masked in the frame the raw tap sees, and
    /// scanned for in everything the session shows.
    pub async fn cloud_settings(
        &self,
        entries: Vec<rete_cloud_protocol::config::ConfigEntry>,
    ) -> Result<String, crate::CloudSettingsError> {
        use crate::CloudSettingsError;
        if !matches!(
            self.shared.transport,
            rete_transports::Transport::ReteCloud(_)
        ) {
            return Err(CloudSettingsError::NotCloud);
        }
        let actor = self.actor().map_err(|_| CloudSettingsError::NotAttached)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        actor
            .cast(SessionMsg::CloudSettings { entries, reply })
            .map_err(|_| CloudSettingsError::NotAttached)?;
        answer.await.unwrap_or(Err(CloudSettingsError::NoAnswer))
    }

    /// Fetches up to `limit` (1 to [`MAX_BACKLOG_ROWS`]) older rows of
    /// `buffer` from the ReteCloud service: the rows before the oldest one
    /// this session knows of there, stored in the buffer as history
    /// (placed by time; a row held already is not stored again). Resolves
    /// with how many were added and whether the service holds older ones;
    /// once it said it holds none, asking again answers that at once,
    /// without a request. An IRC session refuses
    /// ([`NotCloud`](crate::CloudBacklogError::NotCloud)); so does a
    /// second request for a buffer while one is waiting
    /// ([`Busy`](crate::CloudBacklogError::Busy)).
    ///
    /// [`MAX_BACKLOG_ROWS`]: crate::cloud_backlog::MAX_BACKLOG_ROWS
    pub async fn cloud_backlog(
        &self,
        buffer: rete_engine::ids::BufferId,
        limit: u32,
    ) -> Result<crate::OlderRows, crate::CloudBacklogError> {
        use crate::CloudBacklogError;
        if !matches!(
            self.shared.transport,
            rete_transports::Transport::ReteCloud(_)
        ) {
            return Err(CloudBacklogError::NotCloud);
        }
        let actor = self.actor().map_err(|_| CloudBacklogError::NotAttached)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        actor
            .cast(SessionMsg::CloudBacklog {
                buffer,
                limit,
                reply,
            })
            .map_err(|_| CloudBacklogError::NotAttached)?;
        answer.await.unwrap_or(Err(CloudBacklogError::NoAnswer))
    }

    /// Says whether the host shows this session's raw buffer now. A
    /// ReteCloud session hands the frames it receives to the raw tap only
    /// while it does (the frames it sends, always); an IRC session ignores it.
    pub fn set_raw_shown(&self, shown: bool) {
        self.shared.raw_frames_shown.store(shown, Ordering::Relaxed);
    }

    /// Runs a user command against the engine's sending interface.
    pub async fn command<F>(&self, f: F) -> Result<(), ReteError>
    where
        F: FnOnce(&mut Commands<'_>) -> Result<(), CommandError> + Send + 'static,
    {
        let actor = self.actor()?;
        let result = ractor::call!(actor, |reply| SessionMsg::Command(Box::new(f), reply))
            .map_err(|_| ReteError::Restarting)?;
        result.map_err(ReteError::Command)
    }
}
