//! What a session is told to do: the network to register with and the channels to join.

use crate::buffer::DEFAULT_CAPACITY;
use crate::flood::FloodConfig;
use crate::ids::SessionId;
use crate::sasl::{Credentials, Mechanism};
use crate::who_queue::DEFAULT_POLL_INTERVAL_MS;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The default for [`SessionConfig::max_query_buffers`]: far more private
/// conversations than a person holds, few enough that a flood of private
/// messages from new nicks cannot multiply buffers (each holds up to
/// `buffer_capacity` rows).
pub const DEFAULT_MAX_QUERY_BUFFERS: usize = 500;

/// A channel to join on connect, with its key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelSpec {
    /// The channel name.
    pub name: String,
    /// The channel key; never serialized or printed.
    #[serde(skip)]
    pub key: Option<String>,
}

impl fmt::Debug for ChannelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelSpec")
            .field("name", &self.name)
            .field("key", &self.key.as_ref().map(|_| "********"))
            .finish()
    }
}

/// SASL settings for a session.
#[derive(Clone, Debug)]
pub struct SaslSettings {
    /// The mechanism to use.
    pub mechanism: Mechanism,
    /// The credentials (EXTERNAL uses only the optional authzid).
    pub credentials: Credentials,
}

/// A session's configuration.
#[derive(Clone, Serialize)]
pub struct SessionConfig {
    /// The configuration id, which is also the session id.
    pub id: SessionId,
    /// The user's name for this network.
    pub name: String,
    /// The nick to register with.
    pub nick: String,
    /// The user (ident) name.
    pub username: String,
    /// The realname (gecos).
    pub realname: String,
    /// The server password (PASS); never serialized or printed.
    #[serde(skip)]
    pub password: Option<String>,
    /// SASL settings; never serialized (they hold a password).
    #[serde(skip)]
    pub sasl: Option<SaslSettings>,
    /// Channels to join once registered.
    pub channels: Vec<ChannelSpec>,
    /// Rows each buffer keeps before evicting the oldest.
    pub buffer_capacity: usize,
    /// Query buffers that private messages from others may open. Past it, a
    /// message from a nick without a query is stored in the server buffer
    /// instead (under its sender, nothing lost), with one status line saying
    /// so; buffers are never closed behind a reader's back. Queries the person
    /// opens by sending are not limited.
    pub max_query_buffers: usize,
    /// Outgoing line pacing.
    pub flood: FloodConfig,
    /// How often joined channels are polled with WHO, in milliseconds.
    pub who_poll_interval_ms: u64,
    /// How many messages to ask for with CHATHISTORY LATEST on join.
    pub chathistory_limit: u32,
    /// The answer to a CTCP VERSION request.
    pub version_reply: String,
    /// Bridged: the session's lines come through a service that holds the
    /// IRC connection (ReteCloud), which registers, answers the protocol
    /// (PING, CTCP), joins, polls WHO, paces and echoes our messages. The
    /// engine then sends only what a person or an agent asks for, unpaced
    /// and without a local echo, and learns its registration from the lines
    /// the service relays (its `sync` starts with 001).
    pub bridged: bool,
}

impl SessionConfig {
    /// A configuration with the defaults for everything but identity.
    pub fn new(id: SessionId, name: &str, nick: &str) -> SessionConfig {
        SessionConfig {
            id,
            name: name.to_owned(),
            nick: nick.to_owned(),
            username: nick.to_owned(),
            realname: nick.to_owned(),
            password: None,
            sasl: None,
            channels: Vec::new(),
            buffer_capacity: DEFAULT_CAPACITY,
            max_query_buffers: DEFAULT_MAX_QUERY_BUFFERS,
            flood: FloodConfig::default(),
            who_poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
            chathistory_limit: 50,
            version_reply: format!("Rete {}", env!("CARGO_PKG_VERSION")),
            bridged: false,
        }
    }
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("nick", &self.nick)
            .field("password", &self.password.as_ref().map(|_| "********"))
            .field("sasl", &self.sasl.as_ref().map(|s| s.mechanism))
            .field("channels", &self.channels)
            .field("bridged", &self.bridged)
            .finish_non_exhaustive()
    }
}
