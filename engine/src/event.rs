//! Change notifications the engine emits for observers (frontends, the control surface).

use crate::ids::BufferId;
use serde::{Deserialize, Serialize};

/// A session's connection state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnState {
    /// Opening the connection or registering.
    Connecting,
    /// Registered with the server.
    Connected,
    /// Lost the connection; waiting to try again.
    Reconnecting,
    /// Not connected and not trying.
    #[default]
    Disconnected,
}

impl ConnState {
    /// The state's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnState::Connecting => "connecting",
            ConnState::Connected => "connected",
            ConnState::Reconnecting => "reconnecting",
            ConnState::Disconnected => "disconnected",
        }
    }
}

/// Something observable changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// The connection state changed.
    State(ConnState),
    /// Registration finished; the session is usable.
    Registered,
    /// Our own nick changed.
    OwnNick(String),
    /// A buffer was created.
    BufferOpened(BufferId),
    /// A row was stored.
    Row {
        /// The buffer it went into.
        buffer: BufferId,
        /// Its seq.
        seq: u64,
    },
    /// A channel's member list or a member's details changed.
    Members(BufferId),
    /// A channel's topic changed.
    Topic(BufferId),
}
