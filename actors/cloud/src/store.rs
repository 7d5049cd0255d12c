//! What the service keeps: users and their token chains (hashes only),
//! networks with their settings, each network's rows with consecutive
//! sequence numbers, and each chain's recently acknowledged send ids (so a
//! send resent after a restart still goes to IRC once). A trait, so a server database can follow the SQLite
//! default ([`crate::sqlite::SqliteStore`]).
//!
//! Every query about networks or rows takes the [`UserId`] a connection was
//! bound to at authentication, so no call can name another user's network.

use rete_cloud_protocol::config::SaslMechanism;
use rete_cloud_protocol::frame::{NetworkId, RequestId, StreamId};
use rete_cloud_protocol::replay::StoreExtent;
use rete_cloud_protocol::token_chain::{Standing, TokenChain, TokenHash};
use rete_cloud_protocol::Secret;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;

#[cfg(test)]
pub(crate) mod suite;

/// A user's key in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UserId(pub i64);

/// A token chain's key in the store (one per client device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChainId(pub i64);

/// A network's settings: where to connect and who to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkSettings {
    /// Display name.
    pub name: String,
    /// IRC server host.
    pub host: String,
    /// IRC server port.
    pub port: u16,
    /// TLS to the IRC server.
    pub tls: bool,
    /// Nick.
    pub nick: String,
    /// Username (ident).
    pub username: String,
    /// Realname.
    pub realname: String,
    /// Channels kept joined.
    pub channels: Vec<String>,
    /// SASL mechanism, if any.
    pub sasl_mechanism: Option<SaslMechanism>,
    /// SASL account.
    pub sasl_username: Option<String>,
    /// SASL password (the store is the only place it is kept).
    pub sasl_password: Option<Secret>,
    /// Server password.
    pub server_password: Option<Secret>,
}

/// A user as `user list` shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserSummary {
    /// The name.
    pub name: String,
    /// How many networks they have.
    pub networks: u64,
    /// Whether a token of theirs can still authenticate (some chain of
    /// theirs is not revoked).
    pub has_token: bool,
}

/// A network as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkRecord {
    /// Its id within the user's account.
    pub network: NetworkId,
    /// Its stream's id (changes when the numbering restarts).
    pub stream: StreamId,
    /// The engine session id (a UUID) it runs as.
    pub session: String,
    /// Its settings.
    pub settings: NetworkSettings,
}

/// A token chain found by one of its hashes.
#[derive(Clone, Debug)]
pub struct FoundChain {
    /// The chain's key.
    pub chain: ChainId,
    /// Its user.
    pub user: UserId,
    /// The user's name.
    pub user_name: String,
    /// The chain itself.
    pub tokens: TokenChain,
    /// When its current token became current (wall-clock ms), for rotation.
    pub current_since_ms: u64,
    /// How many times it was saved: a save names the version it read, and
    /// is refused (`Conflict`) when another save came first, on any node.
    pub version: u64,
}

/// One stored row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRow {
    /// Its sequence number in the stream.
    pub seq: u64,
    /// When the service received it (Unix ms).
    pub time: u64,
    /// The IRC line.
    pub line: String,
}

/// A row to append: the line and what `fetch` finds it by.
#[derive(Clone, Debug)]
pub struct NewRow<'a> {
    /// When received (Unix ms).
    pub time: u64,
    /// The buffer it belongs to, case-folded (`*` for the server buffer).
    pub buffer: &'a str,
    /// Its IRCv3 msgid, if tagged.
    pub msgid: Option<&'a str>,
    /// The line.
    pub line: &'a str,
}

/// A row to append to a user's network's stream.
#[derive(Clone, Debug)]
pub struct Append<'a> {
    /// Whose.
    pub user: UserId,
    /// Which network's stream.
    pub network: &'a NetworkId,
    /// The row.
    pub row: NewRow<'a>,
    /// The lease epoch the appending node holds the network with: the row
    /// is stored only while the network's epoch is still this one (the
    /// fencing token). None appends unconditionally, for a single writer
    /// that holds no lease (the admin's tools, tests, benchmarks).
    pub epoch: Option<u64>,
}

/// What became of one appended row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Stored with this sequence number.
    Stored(u64),
    /// The user has no such network (removed meanwhile): skipped.
    Gone,
    /// The network was claimed since the append's epoch: skipped, as is
    /// everything a node that lost a network tries to write to it.
    Fenced,
}

/// A service node: its name (`serve --node`, shown to the admin) and this
/// run's id. A node started again is a new holder: the leases of its
/// previous run expire before anyone, itself included, claims them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The name.
    pub name: String,
    /// This run's id (a UUID).
    pub instance: String,
}

/// A network a node holds: what to run, and the epoch its appends carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Whose.
    pub user: UserId,
    /// The network.
    pub record: NetworkRecord,
    /// The lease's epoch (one more than the network's previous one).
    pub epoch: u64,
}

/// A client's line waiting in the outbox for the node that holds its
/// network (the client is attached to another node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Its outbox id.
    pub id: i64,
    /// Whose.
    pub user: UserId,
    /// Which network.
    pub network: NetworkId,
    /// The sending client's token chain, and the send's id in it.
    pub chain: ChainId,
    /// The send's id.
    pub request: RequestId,
    /// The IRC line.
    pub line: String,
}

/// How a line in the outbox ended, as the holding node writes it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// Written to IRC; its id stored as sent.
    Sent,
    /// Its id was sent before.
    Duplicate,
    /// The network was not connected: nothing was queued.
    NotConnected,
    /// Not written, and it never will be.
    NotSent,
}

impl SendOutcome {
    /// Its name in the store.
    pub fn name(self) -> &'static str {
        match self {
            SendOutcome::Sent => "sent",
            SendOutcome::Duplicate => "duplicate",
            SendOutcome::NotConnected => "not_connected",
            SendOutcome::NotSent => "not_sent",
        }
    }

    /// The outcome a name stands for.
    pub fn from_name(name: &str) -> Option<SendOutcome> {
        [
            SendOutcome::Sent,
            SendOutcome::Duplicate,
            SendOutcome::NotConnected,
            SendOutcome::NotSent,
        ]
        .into_iter()
        .find(|o| o.name() == name)
    }
}

/// A held network as its node last published it, for clients of the other
/// nodes: its connection state, nick and `sync` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkView {
    /// Its IRC connection's state.
    pub state: rete_cloud_protocol::frame::NetworkState,
    /// Its nick, when connected.
    pub nick: Option<String>,
    /// Its `sync` lines (see `sync_lines`).
    pub sync: Vec<String>,
}

/// A network's lease as the admin sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseView {
    /// The holding node's name (None: nobody holds it).
    pub node: Option<String>,
    /// The epoch of the latest claim.
    pub epoch: u64,
}

/// Where a backlog read ends (exclusive).
#[derive(Clone, Copy, Debug)]
pub enum BacklogEnd {
    /// The newest rows.
    Newest,
    /// Before this sequence number.
    Seq(u64),
    /// Before this time.
    Time(u64),
}

/// A store failure. The message is for the service's log: it never holds a
/// token, a password or a row's text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The name is taken.
    #[error("{0} exists already")]
    Exists(String),
    /// No such user or network.
    #[error("{0} is unknown")]
    Unknown(String),
    /// Another save of the same thing came first (another connection, on
    /// this node or another): read it again and redo the change.
    #[error("{0} changed meanwhile")]
    Conflict(String),
    /// The database failed.
    #[error("store: {0}")]
    Backend(String),
}

/// The service's store.
pub trait CloudStore: Send {
    /// Adds a user with its first token chain.
    fn add_user(
        &mut self,
        name: &str,
        chain: &TokenChain,
        now_ms: u64,
    ) -> Result<UserId, StoreError>;
    /// The user with this name.
    fn user_by_name(&self, name: &str) -> Result<Option<UserId>, StoreError>;
    /// Every user, by name.
    fn users(&self) -> Result<Vec<UserSummary>, StoreError>;
    /// Gives a user a new token chain and revokes every chain they had, all
    /// at once: the old tokens' next `auth` is refused `token_revoked`.
    fn replace_chain(
        &mut self,
        user: UserId,
        chain: &TokenChain,
        now_ms: u64,
    ) -> Result<(), StoreError>;
    /// Removes a user and everything of theirs (networks, rows, tokens),
    /// all at once.
    fn remove_user(&mut self, user: UserId) -> Result<(), StoreError>;
    /// Writes a consistent copy of the whole store to `to`, a path that
    /// must not exist yet, while the store stays in use.
    fn backup(&self, to: &std::path::Path) -> Result<(), StoreError>;
    /// The chain one of whose tokens hashes to `hash`.
    fn chain_by_hash(&self, hash: &TokenHash) -> Result<Option<FoundChain>, StoreError>;
    /// Saves a chain (after any change), `current_since_ms` when its
    /// current token was set, if it is still at `version` (as read):
    /// compare-and-swap, so two nodes rotating one chain at once cannot
    /// lose either's change (the second gets `Conflict`).
    fn save_chain(
        &mut self,
        chain: ChainId,
        tokens: &TokenChain,
        current_since_ms: u64,
        version: u64,
    ) -> Result<(), StoreError>;
    /// Adds a network to a user's account.
    fn add_network(
        &mut self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<NetworkRecord, StoreError>;
    /// Removes a network from a user's account: its settings, its rows and
    /// its numbering, all at once (`Unknown` when the user has no such
    /// network, and then nothing changes). Its stream id is retired, never
    /// given to a network added later, so a client's resume point from the
    /// removed stream can never match a new one.
    fn remove_network(&mut self, user: UserId, network: &NetworkId) -> Result<(), StoreError>;
    /// Replaces a user's network's settings.
    fn save_settings(
        &mut self,
        user: UserId,
        network: &NetworkId,
        settings: &NetworkSettings,
    ) -> Result<(), StoreError>;
    /// A user's networks.
    fn networks(&self, user: UserId) -> Result<Vec<NetworkRecord>, StoreError>;
    /// Every user's networks (at start, to connect them).
    fn all_networks(&self) -> Result<Vec<(UserId, NetworkRecord)>, StoreError>;
    /// Appends a row to a user's network's stream and returns its sequence
    /// number: one more than the last one given out. Then evicts rows so at
    /// most `keep` remain.
    fn append_row(
        &mut self,
        user: UserId,
        network: &NetworkId,
        row: NewRow<'_>,
        keep: u64,
    ) -> Result<u64, StoreError> {
        let rows = [Append {
            user,
            network,
            row,
            epoch: None,
        }];
        match self.append_rows(&rows, keep)?.pop() {
            Some(Appended::Stored(seq)) => Ok(seq),
            _ => Err(StoreError::Unknown(format!("network {}", network.0))),
        }
    }
    /// Appends rows in order, each to its stream as [`CloudStore::append_row`]
    /// does, in one transaction: all of them are stored or none is (the
    /// error). Each answer says what became of its row.
    fn append_rows(&mut self, rows: &[Append<'_>], keep: u64) -> Result<Vec<Appended>, StoreError>;
    /// Claims up to `max` networks no live node holds (never held, given
    /// up, or past their lease), for `node`: each gets the next epoch and a
    /// lease of `lease_ms`. PostgreSQL times leases by its own clock, which
    /// every node shares. SQLite has one `serve` per file (its lock), so
    /// every network not held by this run is free there.
    fn claim_networks(
        &mut self,
        node: &Node,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<Held>, StoreError>;
    /// Extends every lease `node` still holds to `lease_ms` from now, in
    /// one statement, and answers those it holds, each with its epoch: a
    /// network missing was claimed by another node or removed. It also
    /// marks the node alive for as long (see [`CloudStore::lease_census`]).
    fn renew_leases(
        &mut self,
        node: &Node,
        lease_ms: u64,
    ) -> Result<Vec<(UserId, NetworkId, u64)>, StoreError>;
    /// Gives up every lease of `node` (a clean stop), and its place among
    /// the live nodes: others claim them at once instead of after the lease.
    fn release_leases(&mut self, node: &Node) -> Result<(), StoreError>;
    /// Gives up `node`'s lease of one network (moved to a node with fewer),
    /// if it still holds it.
    fn release_lease(
        &mut self,
        node: &Node,
        user: UserId,
        network: &NetworkId,
    ) -> Result<(), StoreError>;
    /// How many other nodes than `node` are alive (renewed within a lease),
    /// and how many networks there are: a node claims no more than its
    /// share. (SQLite: no other node, by its one `serve` per file.)
    fn lease_census(&self, node: &Node) -> Result<(u64, u64), StoreError>;
    /// Whether other nodes may use this database at once (PostgreSQL):
    /// then a node that cannot renew its leases in time stops speaking for
    /// its networks, since another may claim them.
    fn shared(&self) -> bool;
    /// Puts a client's line for `network` in the outbox, for the node that
    /// holds it, and answers its outbox id. A line of the same `chain` and
    /// `request` still waiting there is the same line: its id is answered.
    fn queue_send(
        &mut self,
        user: UserId,
        network: &NetworkId,
        chain: ChainId,
        request: &RequestId,
        line: &str,
    ) -> Result<i64, StoreError>;
    /// Takes the waiting lines of every network `node` holds, each once per
    /// epoch: a line taken under an epoch that has since ended (its taker
    /// lost the network) is offered again to the new holder.
    fn take_sends(&mut self, node: &Node) -> Result<Vec<Outgoing>, StoreError>;
    /// Writes a taken line's outcome back.
    fn finish_send(&mut self, id: i64, outcome: SendOutcome) -> Result<(), StoreError>;
    /// A line's outcome once written back (None: still waiting), and then
    /// forgets it; a line nobody took yet is ended `NotSent` when
    /// `give_up`, so it is never sent after its sender was told it was not.
    fn send_outcome(&mut self, id: i64, give_up: bool) -> Result<Option<SendOutcome>, StoreError>;
    /// Publishes how a network this node holds looks now, for the clients
    /// of other nodes. A database no other node uses keeps nothing (its one
    /// node holds every network and answers from its engine).
    fn publish_view(
        &mut self,
        _user: UserId,
        _network: &NetworkId,
        _view: &NetworkView,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    /// A network's view as its holder last published it.
    fn view_of(
        &self,
        _user: UserId,
        _network: &NetworkId,
    ) -> Result<Option<NetworkView>, StoreError> {
        Ok(None)
    }
    /// Who holds a user's network, for the admin.
    fn lease_of(&self, user: UserId, network: &NetworkId) -> Result<LeaseView, StoreError>;
    /// When the newest row of a stream was received (None: no row held).
    fn newest_time(&self, user: UserId, network: &NetworkId) -> Result<Option<u64>, StoreError>;
    /// The rows held of a stream.
    fn extent(&self, user: UserId, network: &NetworkId) -> Result<StoreExtent, StoreError>;
    /// Rows `range` (those still held), oldest first.
    fn rows(
        &self,
        user: UserId,
        network: &NetworkId,
        range: RangeInclusive<u64>,
    ) -> Result<Vec<StoredRow>, StoreError>;
    /// Up to `limit` rows of one buffer before `end`, newest first.
    fn backlog(
        &self,
        user: UserId,
        network: &NetworkId,
        buffer: &str,
        end: BacklogEnd,
        limit: u32,
    ) -> Result<Vec<StoredRow>, StoreError>;
    /// The sequence number of the row with this msgid.
    fn seq_of_msgid(
        &self,
        user: UserId,
        network: &NetworkId,
        msgid: &str,
    ) -> Result<Option<u64>, StoreError>;
    /// Drops every row of a stream older than `before` (the oldest held
    /// becomes `before`); an operator's pruning.
    fn evict_before(
        &mut self,
        user: UserId,
        network: &NetworkId,
        before: u64,
    ) -> Result<(), StoreError>;
    /// Records that the send `id` of a client of `chain` went to IRC and
    /// was acknowledged at `at_ms` (wall clock), then forgets that chain's
    /// ids recorded at or before `alive_after_ms` and all but its newest
    /// `keep`: the bounds of the in-memory `SentIds`, so the store never
    /// holds more than the service would remember anyway.
    fn record_sent_id(
        &mut self,
        chain: ChainId,
        id: &RequestId,
        at_ms: u64,
        alive_after_ms: u64,
        keep: usize,
    ) -> Result<(), StoreError>;
    /// The chain's acknowledged send ids recorded after `alive_after_ms`,
    /// the newest `limit` of them, oldest first, each with its time.
    fn sent_ids(
        &self,
        chain: ChainId,
        alive_after_ms: u64,
        limit: usize,
    ) -> Result<Vec<(u64, RequestId)>, StoreError>;
    /// Gives every item of the store to `sink`, in [`StoreItem`]'s order,
    /// all as of one moment (one read transaction) while the store stays in
    /// use. What only running nodes use (leases, the outbox, which nodes
    /// are alive) is not an item: a copy starts with nobody holding
    /// anything.
    fn export(&self, sink: &mut ItemSink<'_>) -> Result<(), StoreError>;
    /// Fills this store, which must hold no user yet, with the items
    /// `export` gives its sink, in one transaction: when anything fails,
    /// nothing was written.
    fn import(
        &mut self,
        export: &mut dyn FnMut(&mut ItemSink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
}

/// How a token's standing is kept: a name, and a time for a grace period.
pub(crate) fn standing_columns(s: Standing) -> (&'static str, Option<i64>) {
    match s {
        Standing::Current => ("current", None),
        Standing::Pending => ("pending", None),
        Standing::Grace { until_ms } => ("grace", Some(until_ms as i64)),
        Standing::Retired => ("retired", None),
        Standing::Abandoned => ("abandoned", None),
    }
}

/// The standing kept as [`standing_columns`] wrote it (None: not one of ours).
pub(crate) fn standing_from(name: &str, until: Option<i64>) -> Option<Standing> {
    Some(match name {
        "current" => Standing::Current,
        "pending" => Standing::Pending,
        "grace" => Standing::Grace {
            until_ms: until? as u64,
        },
        "retired" => Standing::Retired,
        "abandoned" => Standing::Abandoned,
        _ => return None,
    })
}

/// A stream id for a network's fresh numbering: its name and a random
/// epoch, so a resume point from an older numbering of the same name can
/// never match (each backend also retires removed ids, so a name added
/// again never draws one).
pub(crate) fn fresh_stream_id(network: &NetworkId) -> String {
    let epoch: u32 = rand::random();
    let stream = format!("{}.{epoch:x}", network.0);
    if stream.len() > 64 {
        format!("n.{epoch:x}")
    } else {
        stream
    }
}

/// One item of a whole store, as [`CloudStore::export`] gives them: every
/// user before their chains and networks, every chain before its sent ids,
/// every network before its rows. Ids are the source's, so an import keeps
/// each chain's sent ids and each network's stream, session and numbering.
#[derive(Clone, Debug)]
pub enum StoreItem {
    /// A user.
    User {
        /// Its key.
        id: UserId,
        /// Its name.
        name: String,
    },
    /// A token chain (revoked or not: the chain says).
    Chain {
        /// Its key.
        id: ChainId,
        /// Its user.
        user: UserId,
        /// The chain.
        tokens: TokenChain,
        /// When its current token became current (wall-clock ms).
        current_since_ms: u64,
    },
    /// An acknowledged send id of a chain.
    SentId {
        /// The chain.
        chain: ChainId,
        /// Its place in the chain's numbering.
        n: u64,
        /// The id.
        id: RequestId,
        /// When it was acknowledged (wall-clock ms).
        at_ms: u64,
    },
    /// A network, its stream's last number given out and its lease's
    /// epoch (copied, so epochs never go back; nobody holds it in a copy).
    Network {
        /// Its user.
        user: UserId,
        /// The network.
        record: NetworkRecord,
        /// The stream's last sequence number given out.
        latest: u64,
        /// The epoch of its latest claim.
        epoch: u64,
    },
    /// A stream id a removed network had, never to be given out again.
    RetiredStream {
        /// Its user.
        user: UserId,
        /// The stream id.
        stream: StreamId,
    },
    /// A row still held.
    Row {
        /// Its user.
        user: UserId,
        /// Its network.
        network: NetworkId,
        /// Its buffer (case-folded) and msgid, as appended.
        buffer: String,
        /// Its IRCv3 msgid, if tagged.
        msgid: Option<String>,
        /// The row.
        row: StoredRow,
    },
}

/// Where an export sends each item; an error stops the export.
pub type ItemSink<'a> = dyn FnMut(StoreItem) -> Result<(), StoreError> + 'a;
