//! The service's shared state: the store, the engine holding every user's
//! networks as supervised IRC sessions, and one broadcast channel per user.
//!
//! Rows come from the engine's raw tap (the debug slot, which hands lines
//! unmasked: the service must keep the IRC lines verbatim, since clients run
//! their own engine on them). One writer thread stores each received line
//! with the next sequence number of its stream and only then broadcasts it
//! to that user's attached connections: the replay planner's rule (a row is
//! stored before it is broadcast), so a connection that misses a broadcast
//! finds the row in the store.

use super::buffer_of::{buffer_of, msgid_of, own_nick_change};
use super::store::{
    ChainId, CloudStore, NetworkRecord, NetworkSettings, NewRow, StoreError, UserId,
};
use crate::raw_tap::{Direction, RawCapture};
use crate::{Rete, ReteOptions, SessionHandle, SessionSpec};
use parking_lot::Mutex;
use rete_engine::clock::UnixMillis;
use rete_engine::event::{ConnState, Event};
use rete_engine::ids::SessionId;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{ChannelSpec, SaslSettings, SessionConfig};
use rete_transports::retecloud::config::SaslMechanism;
use rete_transports::retecloud::frame::{Config, NetworkId, NetworkState, NetworkUpdate, StreamId};
use rete_transports::retecloud::server::{SentIds, SENT_IDS_CAPACITY, SENT_ID_TTL_MS};
use rete_transports::{Backoff, ConnectConfig, Transport};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// How many live frames a slow connection may fall behind before it reads
/// from the store instead (nothing is lost: the store holds every row).
const LIVE_BACKLOG: usize = 4096;

/// The service's settings.
#[derive(Clone, Copy, Debug)]
pub struct HubOptions {
    /// Rows kept per stream; older ones are evicted.
    pub keep_rows: u64,
    /// Grace period of a replaced token.
    pub grace_ms: u64,
    /// A connection whose current token is older than this gets a new one.
    pub rotate_after_ms: u64,
    /// Heartbeat interval announced in `hello`.
    pub heartbeat_ms: u64,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            keep_rows: 1_000_000,
            grace_ms: 300_000,
            rotate_after_ms: 86_400_000,
            heartbeat_ms: 30_000,
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
}

/// The shared state (see the module doc).
pub struct Hub {
    store: Mutex<Box<dyn CloudStore>>,
    rete: Rete,
    routes: Mutex<HashMap<SessionId, Route>>,
    handles: Mutex<HashMap<(UserId, NetworkId), SessionHandle>>,
    live: Mutex<HashMap<UserId, broadcast::Sender<Live>>>,
    sent: Mutex<HashMap<ChainId, SentIds>>,
    /// The options.
    pub options: HubOptions,
}

/// Hands received lines to the writer thread; never blocks the session.
struct Ingest {
    tx: std::sync::mpsc::Sender<(SessionId, u64, String)>,
}

impl RawCapture for Ingest {
    fn on_line(&self, session: &SessionId, time: UnixMillis, direction: Direction, line: &str) {
        if direction == Direction::In {
            let _ = self
                .tx
                .send((session.clone(), time.0.max(0) as u64, line.to_owned()));
        }
    }

    fn on_connecting(&self, _session: &SessionId) {}
}

fn state_of(s: ConnState) -> NetworkState {
    match s {
        ConnState::Connected => NetworkState::Connected,
        ConnState::Connecting => NetworkState::Connecting,
        ConnState::Reconnecting => NetworkState::Reconnecting,
        ConnState::Disconnected => NetworkState::Disconnected,
    }
}

/// The engine configuration of a stored network.
fn session_spec(record: &NetworkRecord) -> Result<SessionSpec, StoreError> {
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
    config.sasl = s.sasl_mechanism.map(|m| SaslSettings {
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
    });
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
    /// Starts the engine and connects every stored network.
    pub async fn start(
        store: Box<dyn CloudStore>,
        options: HubOptions,
    ) -> Result<Arc<Hub>, String> {
        let rete = Rete::start(ReteOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let networks = store.all_networks().map_err(|e| e.to_string())?;
        let hub = Arc::new(Hub {
            store: Mutex::new(store),
            rete,
            routes: Mutex::new(HashMap::new()),
            handles: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            sent: Mutex::new(HashMap::new()),
            options,
        });
        let (tx, rx) = std::sync::mpsc::channel();
        hub.rete.debug_raw_slot().set(Some(Arc::new(Ingest { tx })));
        let writer = hub.clone();
        std::thread::Builder::new()
            .name("rete-cloud-writer".into())
            .spawn(move || writer.write_rows(&rx))
            .map_err(|e| e.to_string())?;
        hub.clone().watch_states();
        for (user, record) in networks {
            let spec = session_spec(&record).map_err(|e| e.to_string())?;
            hub.routes.lock().insert(
                spec.config.id.clone(),
                Route {
                    user,
                    network: record.network.clone(),
                    stream: record.stream.clone(),
                },
            );
            let handle = hub
                .rete
                .add_session(spec)
                .await
                .map_err(|e| e.to_string())?;
            hub.handles
                .lock()
                .insert((user, record.network.clone()), handle);
        }
        Ok(hub)
    }

    /// Runs `f` on the store.
    pub fn store<R>(&self, f: impl FnOnce(&mut dyn CloudStore) -> R) -> R {
        f(self.store.lock().as_mut())
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

    /// Whether `id` was acknowledged on this chain; records it when `record`.
    pub fn sent_ids<R>(&self, chain: ChainId, f: impl FnOnce(&mut SentIds) -> R) -> R {
        let mut all = self.sent.lock();
        f(all
            .entry(chain)
            .or_insert_with(|| SentIds::new(SENT_ID_TTL_MS, SENT_IDS_CAPACITY)))
    }

    /// Saves a network's new settings (the nick applies now when connected).
    pub fn save_settings(
        &self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<(), StoreError> {
        self.store(|s| s.save_settings(user, network, settings))
    }

    /// Stops every session, sending QUIT.
    pub async fn shutdown(&self) {
        self.rete.shutdown(Duration::from_secs(2)).await;
    }

    /// The writer thread: store, then broadcast, one line at a time in the
    /// order the sessions received them.
    fn write_rows(&self, rx: &std::sync::mpsc::Receiver<(SessionId, u64, String)>) {
        let mut own_nicks: HashMap<SessionId, String> = HashMap::new();
        while let Ok((session, time, line)) = rx.recv() {
            let Some(run) = self.routes.lock().get(&session).cloned() else {
                continue;
            };
            let nick = own_nicks.entry(session.clone()).or_default();
            if let Some(n) = own_nick_change(&line, nick) {
                *nick = n;
            }
            let buffer = buffer_of(&line, nick);
            let msgid = msgid_of(&line);
            let row = NewRow {
                time,
                buffer: &buffer,
                msgid: msgid.as_deref(),
                line: &line,
            };
            let keep = self.options.keep_rows;
            match self.store(|s| s.append_row(run.user, &run.network, row, keep)) {
                Ok(seq) => self.broadcast(
                    run.user,
                    Live::Row {
                        stream: run.stream.clone(),
                        seq,
                        time,
                        line,
                    },
                ),
                Err(e) => tracing::error!(target: "rete::cloud", "a row was not stored: {e}"),
            }
        }
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

    /// A network's state and nick now, for `hello`.
    pub async fn network_state(
        &self,
        user: UserId,
        network: &NetworkId,
    ) -> (NetworkState, Option<String>) {
        let Some(h) = self.session_of(user, network) else {
            return (NetworkState::Disconnected, None);
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
