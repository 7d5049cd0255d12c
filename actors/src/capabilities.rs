//! The two ways a component other than the embedder may reach the engine,
//! as types: [`ReadOnlySessions`] can only read, [`SendingSessions`] can also
//! make sessions act. Neither can add or remove a session or stop the
//! engine, and neither gives the [`Rete`] back, so code holding one cannot
//! do more than its type says (the control surface's tools hold the first;
//! the second is handed out only while sending is switched on).

use crate::rete::{Rete, SessionReader, SessionSender};
use crate::session_actor::SessionEvent;
use rete_engine::ids::SessionId;
use std::sync::Arc;
use tokio::sync::broadcast;

/// The running sessions as readers: their ids, their [`SessionReader`]s and
/// their events.
#[derive(Clone)]
pub struct ReadOnlySessions {
    rete: Arc<Rete>,
}

impl ReadOnlySessions {
    /// A read-only view of `rete`'s sessions.
    pub fn new(rete: Arc<Rete>) -> ReadOnlySessions {
        ReadOnlySessions { rete }
    }

    /// Every running session's reader, in the order the sessions were added.
    pub fn sessions(&self) -> Vec<SessionReader> {
        self.rete
            .sessions()
            .into_iter()
            .map(|s| s.reader())
            .collect()
    }

    /// Every session's events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.rete.subscribe()
    }
}

/// The capability to make a session act (send lines, connect, disconnect).
#[derive(Clone)]
pub struct SendingSessions {
    rete: Arc<Rete>,
}

impl SendingSessions {
    /// The sending capability over `rete`'s sessions.
    pub fn new(rete: Arc<Rete>) -> SendingSessions {
        SendingSessions { rete }
    }

    /// The sender of the running session whose id is spelled exactly `id`.
    pub fn sender_by_str(&self, id: &str) -> Option<SessionSender> {
        self.rete
            .sessions()
            .into_iter()
            .find(|s| s.id().as_str() == id)
            .map(|s| s.sender())
    }

    /// The sender of the running session with this id, if there is one.
    pub fn sender(&self, id: &SessionId) -> Option<SessionSender> {
        self.rete
            .sessions()
            .into_iter()
            .find(|s| s.id() == id)
            .map(|s| s.sender())
    }
}
