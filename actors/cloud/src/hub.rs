//! The service's shared state: the store, the engine holding every user's
//! networks as supervised IRC sessions, and one broadcast channel per user.
//!
//! Rows come from the engine's raw tap (its record slot, which hands lines
//! unmasked: the service must keep the IRC lines verbatim, since clients run
//! their own engine on them). One writer thread stores each received line
//! with the next sequence number of its stream and only then broadcasts it
//! to that user's attached connections: the replay planner's rule (a row is
//! stored before it is broadcast), so a connection that misses a broadcast
//! finds the row in the store.

use crate::admission::{Admission, Limits};
use crate::buffer_of::{buffer_of, msgid_of};
use crate::echo::Identity;
use crate::ingest::{Ingest, Ingested, DEFAULT_INGEST_CAPACITY};
use crate::ownership::Fence;
use crate::sends::{self, InFlight, Outcome, Relay};
use crate::store::{
    Append, Appended, ChainId, CloudStore, NetworkRecord, NetworkSettings, NewRow, Node,
    StoreError, UserId,
};
use parking_lot::Mutex;
use rete_actors::wall_clock;
use rete_actors::{Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_cloud_protocol::config::SaslMechanism;
use rete_cloud_protocol::frame::{
    Config, NetworkId, NetworkState, NetworkUpdate, RequestId, StreamId,
};
use rete_cloud_protocol::server::{SentIds, SENT_IDS_CAPACITY, SENT_ID_TTL_MS};
use rete_engine::clock::UnixMillis;
use rete_engine::event::{ConnState, Event};
use rete_engine::flood::FloodConfig;
use rete_engine::ids::SessionId;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{ChannelSpec, SaslSettings, SessionConfig};
use rete_engine::timefmt::iso_seconds;
use rete_transports::{Backoff, ConnectConfig, Transport};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// The row a gap leaves in its stream: where it is and how many received
/// lines it lost (a NOTICE from the service, in the server buffer).
pub(super) fn gap_line(nick: &str, lost: u64, store_failed: bool) -> String {
    let why = if store_failed {
        "the store failed to write them"
    } else {
        "they came faster than it could store them"
    };
    format!(
        ":rete-cloud NOTICE {nick} :rete-cloud lost {lost} received line{} here: {why}",
        if lost == 1 { "" } else { "s" }
    )
}

/// What an away marker says: the lines of that time are not in the stream,
/// and never will be (the service was not on IRC to receive them).
pub(super) fn away_text(since: u64, back: u64) -> String {
    let at = |ms: u64| iso_seconds(UnixMillis(i64::try_from(ms).unwrap_or(i64::MAX)));
    format!(
        "rete-cloud was away from IRC from {} to {}: lines sent in that time were not received",
        at(since),
        at(back)
    )
}

/// The QUIT reason a removed network leaves IRC with.
const REMOVED_QUIT: &str = "Leaving";

/// The QUIT reason of a network starting again with what `network set` gave it.
const MOVED_QUIT: &str = "Reconnecting";

/// The QUIT reason of a network moved to another node (see `leases`).
const HANDED_OVER_QUIT: &str = "Moving to another server";

mod leases;
mod remote_rows;
mod remote_sends;
mod views;

/// How many live frames a slow connection may fall behind before it reads
/// from the store instead (nothing is lost: the store holds every row).
const LIVE_BACKLOG: usize = 4096;

/// How long a stop waits for the writer to store what was received.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Most messages the writer takes from its queue for one transaction.
/// A batch dirties a few pages at each network's end of each b-tree, so
/// rows spread over many networks cost far fewer bytes per row in larger
/// batches (`benches/store_rows.rs` measures it); a batch only fills when
/// rows come faster than they are written, so a quiet service still
/// writes each at once.
pub const WRITE_BATCH: usize = 5_000;

/// A row waiting for its batch's transaction.
struct PendingRow {
    session: SessionId,
    route: Route,
    time: u64,
    buffer: String,
    msgid: Option<String>,
    line: String,
}

/// The service's settings.
#[derive(Clone, Copy, Debug)]
pub struct HubOptions {
    /// Rows kept per stream; older ones are evicted.
    pub keep_rows: u64,
    /// Grace period of a replaced token.
    pub grace_ms: u64,
    /// A connection whose current token is older than this gets a new one:
    /// at authentication, and while it stays attached (timed from the last
    /// acknowledged rotation, at least `ATTACHED_ROTATE_FLOOR_MS` apart, so
    /// 0 means "at every attach, and once a second while attached").
    pub rotate_after_ms: u64,
    /// Heartbeat interval announced in `hello`.
    pub heartbeat_ms: u64,
    /// Received lines waiting for the writer, all networks together (see
    /// `ingest`: past it a network's lines are counted and its gap recorded).
    pub ingest_capacity: usize,
    /// How often the running service looks in the store for networks added
    /// by `rete-cloud network add`.
    pub admin_poll_ms: u64,
    /// The connection budget (see [`crate::admission`]).
    pub limits: Limits,
    /// How every network paces the lines it sends (clients' sends are
    /// acknowledged as they are written, so this paces the acks too).
    pub flood: FloodConfig,
    /// Rows each of a session's in-memory buffers keeps. Every row is in
    /// the store, which is what clients read; the engine's own buffers
    /// serve nothing here, so they are kept small and the service's memory
    /// under load stays bounded by this.
    pub buffer_rows: usize,
}

/// [`HubOptions::buffer_rows`] unless `serve --buffer-rows` says otherwise.
pub const DEFAULT_BUFFER_ROWS: usize = 100;

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            keep_rows: 1_000_000,
            grace_ms: 300_000,
            rotate_after_ms: 86_400_000,
            heartbeat_ms: 30_000,
            ingest_capacity: DEFAULT_INGEST_CAPACITY,
            admin_poll_ms: 2_000,
            limits: Limits::default(),
            flood: FloodConfig::default(),
            buffer_rows: DEFAULT_BUFFER_ROWS,
        }
    }
}

/// What a user's attached connections are told.
#[derive(Clone, Debug)]
pub enum Live {
    /// A row, stored already.
    Row {
        /// Its stream.
        stream: StreamId,
        /// Its sequence number.
        seq: u64,
        /// When received.
        time: u64,
        /// The IRC line.
        line: String,
    },
    /// A network's connection state changed.
    Network(NetworkUpdate),
    /// A network was removed from the account (`rete-cloud network
    /// remove`): its session is stopping and its rows are gone.
    Removed(NetworkId),
    /// A network's settings changed, by connection `origin`.
    Config {
        /// The connection that made the change (it answers itself).
        origin: u64,
        /// The echo, without id.
        frame: Config,
    },
}

/// Where a session's rows go: known before the session starts, so its
/// first line already has a stream.
#[derive(Clone)]
struct Route {
    user: UserId,
    network: NetworkId,
    stream: StreamId,
    /// The settings `network set` changes, as this session has them:
    /// stored ones that differ were changed by the admin, and the network
    /// starts again with them.
    admin: AdminSettings,
    /// The epoch of this node's lease on the network: its rows are stored
    /// only while the network's epoch is still this one.
    epoch: u64,
}

/// Server, TLS, nick and channels: what `network set` changes.
type AdminSettings = (String, u16, bool, String, Vec<String>);

fn admin_settings(s: &NetworkSettings) -> AdminSettings {
    (
        s.host.clone(),
        s.port,
        s.tls,
        s.nick.clone(),
        s.channels.clone(),
    )
}

/// Why a running network's session stops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// `network remove`: its clients are told it is gone.
    Removed,
    /// `network set` changed its settings: it starts again with them, on
    /// the same stream.
    Moved,
    /// Another node holds it now (or may, past this node's deadline): the
    /// connection is closed without a word, since any line would come from
    /// a second client of the same person.
    Lost,
    /// This node holds more than its share: QUIT, then the lease is given
    /// up for a node with fewer to claim.
    HandedOver,
}

/// The shared state (see the module doc).
pub struct Hub {
    store: Mutex<Box<dyn CloudStore>>,
    rete: Rete,
    routes: Mutex<HashMap<SessionId, Route>>,
    handles: Mutex<HashMap<(UserId, NetworkId), SessionHandle>>,
    live: Mutex<HashMap<UserId, broadcast::Sender<Live>>>,
    sent: Mutex<HashMap<ChainId, SentIds>>,
    /// Sends written to nobody yet (see [`crate::sends`]).
    in_flight: Mutex<InFlight>,
    /// The options.
    pub options: HubOptions,
    /// The connection budget every connection takes its seat in.
    pub admission: Arc<Mutex<Admission>>,
    /// When the hub started: the budget's clock counts from it.
    started: Instant,
    /// The recorder the sessions hand lines to, and the writer's queue.
    ingest: Arc<Ingest>,
    /// This node, as its leases name it.
    node: Node,
    /// Silences the node's sessions past its lease (see [`crate::ownership`]).
    fence: Arc<Fence>,
    /// Set by `shutdown`: the lease loop starts nothing more.
    stopping: AtomicBool,
    /// Per stream of a network another node holds: its id, and the newest
    /// row broadcast here (see `remote_rows`).
    remote_seen: Mutex<HashMap<(UserId, NetworkId), (StreamId, u64)>>,
    /// This node's clients' lines waiting in the outbox, by outbox id: woken
    /// when the holding node writes the outcome back (see `remote_sends`).
    remote_waits: Mutex<HashMap<i64, Arc<tokio::sync::Notify>>>,
}

fn state_of(s: ConnState) -> NetworkState {
    match s {
        ConnState::Connected => NetworkState::Connected,
        ConnState::Connecting => NetworkState::Connecting,
        ConnState::Reconnecting => NetworkState::Reconnecting,
        ConnState::Disconnected => NetworkState::Disconnected,
    }
}

/// The SASL settings of a stored network.
pub(super) fn sasl_of(s: &NetworkSettings) -> Option<SaslSettings> {
    s.sasl_mechanism.map(|m| SaslSettings {
        mechanism: match m {
            SaslMechanism::Plain => Mechanism::Plain,
            SaslMechanism::ScramSha256 => Mechanism::ScramSha256,
            SaslMechanism::External => Mechanism::External,
        },
        credentials: Credentials {
            authcid: s.sasl_username.clone().unwrap_or_default(),
            password: s
                .sasl_password
                .as_ref()
                .map(|p| p.expose().to_owned())
                .unwrap_or_default(),
            authzid: None,
        },
    })
}

/// The engine configuration of a stored network.
fn session_spec(record: &NetworkRecord, options: &HubOptions) -> Result<SessionSpec, StoreError> {
    let s = &record.settings;
    let id = SessionId::parse(&record.session).map_err(|_| {
        StoreError::Backend(format!("network {}: bad session id", record.network.0))
    })?;
    let mut config = SessionConfig::new(id, &s.name, &s.nick);
    config.username = s.username.clone();
    config.realname = s.realname.clone();
    config.password = s.server_password.as_ref().map(|p| p.expose().to_owned());
    config.channels = s
        .channels
        .iter()
        .map(|c| ChannelSpec {
            name: c.clone(),
            key: None,
        })
        .collect();
    config.sasl = sasl_of(s);
    config.flood = options.flood;
    config.buffer_capacity = options.buffer_rows.max(1);
    Ok(SessionSpec {
        config,
        transport: Transport::Irc(ConnectConfig {
            host: s.host.clone(),
            port: s.port,
            tls: s.tls,
            tls_fingerprint: None,
            client_cert: None,
            connect_timeout: Duration::from_secs(15),
        }),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
    })
}

impl Hub {
    /// Milliseconds since the hub started: the one clock of the connection
    /// budget, which the listener and every connection share.
    pub fn uptime_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts the engine as `node` and connects the networks it claims:
    /// every stored network when the database is this node's alone, its
    /// share of those nobody holds when nodes share it. `notices` (nodes
    /// sharing a database) say when another node's streams grow, so this
    /// node's clients get their rows live.
    pub async fn start(
        store: Box<dyn CloudStore>,
        options: HubOptions,
        node: Node,
        notices: Option<tokio::sync::mpsc::Receiver<crate::postgres::notices::Notice>>,
    ) -> Result<Arc<Hub>, String> {
        let fence = Arc::new(Fence::new(store.shared()));
        let rete = Rete::start(ReteOptions {
            raw_out_hook: Some(fence.clone()),
        })
        .await
        .map_err(|e| e.to_string())?;
        let (ingest, rx) = Ingest::new(options.ingest_capacity);
        let hub = Arc::new(Hub {
            store: Mutex::new(store),
            rete,
            routes: Mutex::new(HashMap::new()),
            handles: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            sent: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(InFlight::default()),
            admission: Arc::new(Mutex::new(Admission::new(options.limits))),
            started: Instant::now(),
            ingest: ingest.clone(),
            options,
            node,
            fence,
            stopping: AtomicBool::new(false),
            remote_seen: Mutex::new(HashMap::new()),
            remote_waits: Mutex::new(HashMap::new()),
        });
        hub.rete.set_raw_recorder(Some(ingest.clone()));
        let writer = hub.clone();
        std::thread::Builder::new()
            .name("rete-cloud-writer".into())
            .spawn(move || writer.write_rows(&ingest, &rx))
            .map_err(|e| e.to_string())?;
        hub.clone().watch_states();
        if let Some(notices) = notices {
            hub.clone().follow_remote_rows(notices);
        }
        if hub.fence.shared() {
            hub.clone().publish_views();
        }
        hub.first_look().await;
        hub.clone().keep_leases();
        hub.clone().watch_deadline();
        Ok(hub)
    }

    /// Starts the engine session of a network this node holds with
    /// `epoch` (routed before it starts, so its first line already has a
    /// stream). A network that cannot start (settings the engine refuses)
    /// is logged with its reason: the other users are served.
    async fn start_network(&self, user: UserId, record: &NetworkRecord, epoch: u64) {
        if let Err(e) = self.try_start_network(user, record, epoch).await {
            tracing::error!(
                target: "rete::cloud",
                "network {} of user {}: not started: {e}",
                record.network.0,
                user.0
            );
        }
    }

    async fn try_start_network(
        &self,
        user: UserId,
        record: &NetworkRecord,
        epoch: u64,
    ) -> Result<(), String> {
        let spec = session_spec(record, &self.options).map_err(|e| e.to_string())?;
        self.routes.lock().insert(
            spec.config.id.clone(),
            Route {
                user,
                network: record.network.clone(),
                stream: record.stream.clone(),
                admin: admin_settings(&record.settings),
                epoch,
            },
        );
        let id = spec.config.id.clone();
        let handle = match self.rete.add_session(spec).await {
            Ok(handle) => handle,
            Err(e) => {
                self.routes.lock().remove(&id);
                return Err(e.to_string());
            }
        };
        self.handles
            .lock()
            .insert((user, record.network.clone()), handle);
        Ok(())
    }

    /// Stops a network's session: unrouted first, so nothing more is
    /// stored or broadcast for it; then, as `why` says, attached clients
    /// told and QUIT sent (the engine sends it when registered), or the
    /// connection closed without a word; then the session forgotten.
    async fn stop_network(&self, user: UserId, network: &NetworkId, why: Stop) {
        let Some(handle) = self.handles.lock().remove(&(user, network.clone())) else {
            return;
        };
        self.routes.lock().remove(handle.id());
        let reason = match why {
            Stop::Removed => {
                self.broadcast(user, Live::Removed(network.clone()));
                REMOVED_QUIT
            }
            Stop::Moved => MOVED_QUIT,
            Stop::HandedOver => HANDED_OVER_QUIT,
            Stop::Lost => {
                handle.sender().abandon();
                if let Err(e) = self.rete.remove_session(handle.id()).await {
                    tracing::warn!(target: "rete::cloud", "network {}: stopping its session: {e}", network.0);
                }
                self.fence.forget(handle.id());
                return;
            }
        };
        let mut events = self.rete.subscribe();
        handle.sender().disconnect(Some(reason.into()));
        let down = async {
            while handle.is_connected_now() {
                match events.recv().await {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), down).await;
        if let Err(e) = self.rete.remove_session(handle.id()).await {
            tracing::warn!(target: "rete::cloud", "network {}: stopping its session: {e}", network.0);
        }
    }

    /// Runs `f` on the store. A database call can block for long (a
    /// PostgreSQL that stopped answering), so on a runtime worker the
    /// worker's other tasks move to another thread meanwhile: the deadline
    /// watch and the sessions keep running while the store does not.
    pub fn store<R>(&self, f: impl FnOnce(&mut dyn CloudStore) -> R) -> R {
        tokio::task::block_in_place(|| f(self.store.lock().as_mut()))
    }

    /// The user's live channel (made on first use).
    pub fn subscribe(&self, user: UserId) -> broadcast::Receiver<Live> {
        self.live
            .lock()
            .entry(user)
            .or_insert_with(|| broadcast::channel(LIVE_BACKLOG).0)
            .subscribe()
    }

    fn broadcast(&self, user: UserId, live: Live) {
        if let Some(tx) = self.live.lock().get(&user) {
            let _ = tx.send(live);
        }
    }

    /// Tells a user's other connections about a settings change.
    pub fn broadcast_config(&self, user: UserId, origin: u64, frame: Config) {
        self.broadcast(user, Live::Config { origin, frame });
    }

    /// The engine session of a user's network: only that user's.
    pub fn session_of(&self, user: UserId, network: &NetworkId) -> Option<SessionHandle> {
        self.handles.lock().get(&(user, network.clone())).cloned()
    }

    /// Sends `line` for the send `id` of `chain`, unless that id was sent
    /// already or is on its way (see [`crate::sends`]): the line goes once,
    /// and its id is stored as sent before anyone hears it was.
    pub(crate) fn relay(
        self: &Arc<Self>,
        chain: ChainId,
        id: &RequestId,
        session: &SessionHandle,
        line: String,
    ) -> Result<Relay, StoreError> {
        // Held while deciding, so two connections sending one id at once
        // cannot both start it; the task's own removal waits for it.
        let mut in_flight = self.in_flight.lock();
        if let Some(waiting) = in_flight.get(chain, id) {
            return Ok(Relay::Joined(waiting));
        }
        if self.was_sent(chain, id)? {
            return Ok(Relay::AlreadySent);
        }
        let hub = Arc::clone(self);
        let sent_id = id.clone();
        let waiting = sends::start(&session.sender(), line, move |outcome| {
            if outcome == Outcome::Sent {
                hub.record_sent(chain, &sent_id);
            }
            hub.in_flight.lock().remove(chain, &sent_id);
        });
        in_flight.insert(chain, id.clone(), waiting.clone());
        Ok(Relay::Started(waiting))
    }

    /// Whether the send `id` was acknowledged on this chain within the time
    /// remembered, in this run or before a restart: a chain's ids are read
    /// from the store at its first send of the run, then kept in memory.
    fn was_sent(&self, chain: ChainId, id: &RequestId) -> Result<bool, StoreError> {
        let now = wall_clock::now().unsigned();
        if let Some(ids) = self.sent.lock().get_mut(&chain) {
            return Ok(ids.was_sent(now, id));
        }
        let alive_after = now.saturating_sub(SENT_ID_TTL_MS);
        let stored = self.store(|s| s.sent_ids(chain, alive_after, SENT_IDS_CAPACITY))?;
        let mut all = self.sent.lock();
        let ids = all.entry(chain).or_insert_with(|| {
            let mut ids = SentIds::new(SENT_ID_TTL_MS, SENT_IDS_CAPACITY);
            for (at, id) in stored {
                ids.record(at, id);
            }
            ids
        });
        Ok(ids.was_sent(now, id))
    }

    /// Whether other nodes share the database (and may hold some of a
    /// user's networks).
    pub fn is_shared(&self) -> bool {
        self.fence.shared()
    }

    /// Remembers in memory that the send `id` went to IRC (stored as sent
    /// by the node that sent it).
    fn remember_sent(&self, chain: ChainId, id: &RequestId) {
        let now = wall_clock::now().unsigned();
        self.sent
            .lock()
            .entry(chain)
            .or_insert_with(|| SentIds::new(SENT_ID_TTL_MS, SENT_IDS_CAPACITY))
            .record(now, id.clone());
    }

    /// The send `id` went to IRC: remembered in memory and in the store
    /// (before its `send_ack` goes out, so an acknowledged id survives a
    /// restart). A store that fails leaves it in memory only, and says so.
    fn record_sent(&self, chain: ChainId, id: &RequestId) {
        self.remember_sent(chain, id);
        let now = wall_clock::now().unsigned();
        let alive_after = now.saturating_sub(SENT_ID_TTL_MS);
        if let Err(e) =
            self.store(|s| s.record_sent_id(chain, id, now, alive_after, SENT_IDS_CAPACITY))
        {
            tracing::error!(
                target: "rete::cloud",
                "an acknowledged send id was not stored ({e}): resent after a restart, its line would go to IRC again"
            );
        }
    }

    /// Saves a network's new settings (the nick applies now when connected).
    pub fn save_settings(
        &self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<(), StoreError> {
        self.store(|s| s.save_settings(user, network, settings))?;
        // A client's change: the session applies it itself (nick and
        // channels now, the rest at its next connection), so the admin's
        // look must not start the network again for it.
        if let Some(handle) = self.session_of(user, network) {
            if let Some(route) = self.routes.lock().get_mut(handle.id()) {
                route.admin = admin_settings(settings);
            }
        }
        Ok(())
    }

    /// Stops every session, sending QUIT.
    ///
    /// Then waits (at most [`FLUSH_LIMIT`]) until the writer has stored
    /// every line the sessions received before they stopped, so a stop loses
    /// none of them.
    pub async fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.rete.shutdown(Duration::from_secs(2)).await;
        let ingest = self.ingest.clone();
        let flushed = tokio::task::spawn_blocking(move || ingest.flush(FLUSH_LIMIT))
            .await
            .unwrap_or(false);
        if !flushed {
            tracing::error!(
                target: "rete::cloud",
                "stopping: lines received just before the stop may not all be stored"
            );
        }
        // Off IRC and stored: other nodes may claim them at once.
        if let Err(e) = self.store(|s| s.release_leases(&self.node)) {
            tracing::warn!(target: "rete::cloud", "stopping: leases not given up ({e}): other nodes claim them once they expire");
        }
    }

    /// The writer thread: store, then broadcast, in the order the sessions
    /// received the lines; our own messages echoed when the server does not
    /// echo them; a lane's gap recorded once it drained.
    ///
    /// Rows are stored in batches, one transaction each: whatever queued
    /// while the last batch was being written, up to [`WRITE_BATCH`]
    /// messages. A quiet service writes each line at once (a batch of one);
    /// a busy one writes many per transaction, which is where the disk's
    /// cost lies. Rows are broadcast only once their batch is committed.
    fn write_rows(&self, ingest: &Ingest, rx: &Receiver<Ingested>) {
        let mut identities: HashMap<SessionId, Identity> = HashMap::new();
        // Sessions whose lines the store failed to write since their last
        // gap row: that row then says so, not that lines came too fast.
        let mut failed: HashSet<SessionId> = HashSet::new();
        loop {
            let mut batch = Vec::new();
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(m) => batch.push(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let mut rows: Vec<PendingRow> = Vec::new();
            let mut handled: Vec<SessionId> = Vec::new();
            let mut flushed = Vec::new();
            for msg in batch {
                match msg {
                    Ingested::Connecting { session } => {
                        identities
                            .entry(session.clone())
                            .or_default()
                            .on_connecting();
                        handled.push(session);
                    }
                    Ingested::In {
                        session,
                        time,
                        line,
                    } => {
                        let me = identities.entry(session.clone()).or_default();
                        if std::mem::take(&mut me.fresh) {
                            // Back on IRC: the time away is a hole nobody
                            // could fill; each buffer says so.
                            rows.extend(self.away_markers(&session, time, &me.nick));
                        }
                        me.on_received(&line);
                        let nick = me.nick.clone();
                        rows.extend(self.pending_row(&session, time, line, &nick));
                        handled.push(session);
                    }
                    Ingested::Out {
                        session,
                        time,
                        line,
                    } => {
                        let me = identities.entry(session.clone()).or_default();
                        if let Some(echo) = me.echo_of(&line, time) {
                            let nick = me.nick.clone();
                            rows.extend(self.pending_row(&session, time, echo, &nick));
                        }
                        handled.push(session);
                    }
                    Ingested::Flush { done } => flushed.push(done),
                }
            }
            let lost = self.store_rows(rows);
            for session in &handled {
                ingest.done(session);
            }
            for session in lost {
                ingest.lost(&session, 1);
                failed.insert(session);
            }
            for (session, lost) in ingest.ready_gaps() {
                let nick = identities
                    .get(&session)
                    .map(|i| i.nick.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "*".into());
                let line = gap_line(&nick, lost, failed.remove(&session));
                let row = self.pending_row(&session, wall_clock::now().unsigned(), line, &nick);
                if !self.store_rows(row.into_iter().collect()).is_empty() {
                    ingest.lost(&session, lost);
                    failed.insert(session);
                }
            }
            for done in flushed {
                let _ = done.send(());
            }
        }
    }

    /// The rows saying a network was away from IRC, from the newest row its
    /// stream holds (the last thing received before) to `back`, when the
    /// first line of a new connection arrived: one in each configured
    /// channel and one addressed to `*` (where the service's gap rows go). None for a stream that holds
    /// nothing yet (nothing to have been away from).
    fn away_markers(&self, session: &SessionId, back: u64, nick: &str) -> Vec<PendingRow> {
        let Some(route) = self.routes.lock().get(session).cloned() else {
            return Vec::new();
        };
        let since = match self.store(|s| s.newest_time(route.user, &route.network)) {
            Ok(Some(t)) => t,
            Ok(None) => return Vec::new(),
            Err(e) => {
                tracing::warn!(target: "rete::cloud", "network {}: no away marker: {e}", route.network.0);
                return Vec::new();
            }
        };
        let channels = self
            .store(|s| s.networks(route.user))
            .ok()
            .and_then(|all| all.into_iter().find(|n| n.network == route.network))
            .map(|n| n.settings.channels)
            .unwrap_or_default();
        let text = away_text(since, back);
        // `*`: before 001 the connection has no nick yet, and a line to `*`
        // is the service's own, as its gap rows are.
        channels
            .iter()
            .map(String::as_str)
            .chain(["*"])
            .filter_map(|target| {
                let line = format!(":rete-cloud NOTICE {target} :{text}");
                self.pending_row(session, back, line, nick)
            })
            .collect()
    }

    /// A line of `session` as a row to store, or None when the session has
    /// no stream (its network was removed and not yet stopped: the line
    /// has no stream to go to, and is no gap in one).
    fn pending_row(
        &self,
        session: &SessionId,
        time: u64,
        line: String,
        nick: &str,
    ) -> Option<PendingRow> {
        let route = self.routes.lock().get(session).cloned()?;
        Some(PendingRow {
            session: session.clone(),
            buffer: buffer_of(&line, nick),
            msgid: msgid_of(&line),
            route,
            time,
            line,
        })
    }

    /// Stores `rows` in one transaction, then broadcasts each stored row in
    /// order. Returns the sessions of the rows not stored (one entry per
    /// row): all of them when the transaction failed.
    fn store_rows(&self, rows: Vec<PendingRow>) -> Vec<SessionId> {
        if rows.is_empty() {
            return Vec::new();
        }
        let appends: Vec<Append<'_>> = rows
            .iter()
            .map(|r| Append {
                user: r.route.user,
                network: &r.route.network,
                row: NewRow {
                    time: r.time,
                    buffer: &r.buffer,
                    msgid: r.msgid.as_deref(),
                    line: &r.line,
                },
                epoch: Some(r.route.epoch),
            })
            .collect();
        let keep = self.options.keep_rows;
        let seqs = match self.store(|s| s.append_rows(&appends, keep)) {
            Ok(seqs) => seqs,
            Err(e) => {
                tracing::error!(target: "rete::cloud", "{} row(s) were not stored: {e}", rows.len());
                return rows.into_iter().map(|r| r.session).collect();
            }
        };
        drop(appends);
        for (row, seq) in rows.into_iter().zip(seqs) {
            match seq {
                Appended::Stored(seq) => self.broadcast(
                    row.route.user,
                    Live::Row {
                        stream: row.route.stream,
                        seq,
                        time: row.time,
                        line: row.line,
                    },
                ),
                // Removed by `rete-cloud network remove` meanwhile.
                Appended::Gone => {}
                // Another node claimed it: this one says nothing more there
                // (the lease loop closes the connection).
                Appended::Fenced => {
                    if !self.fence.is_fenced(&row.session) {
                        tracing::warn!(
                            target: "rete::cloud",
                            "network {}: another node holds it now; this node's connection is silenced",
                            row.route.network.0
                        );
                        self.fence.fence(&row.session);
                    }
                }
            }
        }
        Vec::new()
    }

    /// Forwards each session's state changes as `network` frames.
    fn watch_states(self: Arc<Self>) {
        let mut events = self.rete.subscribe();
        tokio::spawn(async move {
            loop {
                let ev = match events.recv().await {
                    Ok(ev) => ev,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let Event::State(state) = ev.event else {
                    continue;
                };
                let Some(run) = self.routes.lock().get(&ev.session).cloned() else {
                    continue;
                };
                let Some(handle) = self.session_of(run.user, &run.network) else {
                    continue;
                };
                let (nick, error) = handle
                    .reader()
                    .read(|v| (v.nick().to_owned(), v.last_error().map(str::to_owned)))
                    .await
                    .unwrap_or_default();
                let state = state_of(state);
                self.broadcast(
                    run.user,
                    Live::Network(NetworkUpdate {
                        network: run.network.clone(),
                        state,
                        nick: (state == NetworkState::Connected).then_some(nick),
                        error: (state != NetworkState::Connected)
                            .then_some(error)
                            .flatten(),
                    }),
                );
            }
        });
    }

    /// A network's `sync` lines now: from the engine when this node holds
    /// it, else as its holder last published them.
    pub async fn sync_of(&self, user: UserId, network: &NetworkId) -> Vec<String> {
        match self.session_of(user, network) {
            Some(h) => h
                .reader()
                .read(crate::sync_lines::sync_lines)
                .await
                .unwrap_or_default(),
            None => self
                .store(|s| s.view_of(user, network))
                .ok()
                .flatten()
                .map(|v| v.sync)
                .unwrap_or_default(),
        }
    }

    /// A network's state and nick now, for `hello` (as its holder last
    /// published them when another node holds it).
    pub async fn network_state(
        &self,
        user: UserId,
        network: &NetworkId,
    ) -> (NetworkState, Option<String>) {
        let Some(h) = self.session_of(user, network) else {
            return match self.store(|s| s.view_of(user, network)) {
                Ok(Some(view)) => (view.state, view.nick),
                _ => (NetworkState::Disconnected, None),
            };
        };
        h.reader()
            .read(|v| {
                let s = state_of(v.state());
                (
                    s,
                    (s == NetworkState::Connected).then(|| v.nick().to_owned()),
                )
            })
            .await
            .unwrap_or((NetworkState::Disconnected, None))
    }
}
