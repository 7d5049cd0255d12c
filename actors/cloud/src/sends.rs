//! Sends on their way to IRC.
//!
//! A client's `send` is acknowledged once its line is on the IRC socket
//! (PROTOCOL.md §7), and before that its id is stored as sent. The line may
//! wait seconds behind the network's flood throttler first, and meanwhile
//! the client may lose its connection and send the line again, with the
//! same id, on another one. That repeat must wait for the same line, never
//! queue a second: so the wait belongs to the hub, not to a connection. One
//! task per line waits for the writer, records the id, and leaves the
//! table; every connection asking for that id while it waits shares its
//! outcome.

use futures_util::future::{BoxFuture, FutureExt, Shared};
use rete_actors::{AgentLineError, SessionSender};
use rete_cloud_protocol::frame::RequestId;
use std::collections::HashMap;

use crate::store::ChainId;

/// How a line handed to the network's connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Written to the IRC socket; its id is stored as sent.
    Sent,
    /// Its id had been sent before (found so by the node holding the
    /// network, for a line that went through the outbox).
    AlreadySent,
    /// The network was not connected: nothing was queued.
    NotConnected,
    /// Queued, then dropped unwritten: the connection to IRC ended first.
    NotSent,
}

/// One line's outcome, which several connections can wait for.
pub type Waiting = Shared<BoxFuture<'static, Outcome>>;

/// What a `send` found.
pub enum Relay {
    /// Its id was acknowledged before (this run, or before a restart).
    AlreadySent,
    /// The same id is on its way already: this is a repeat of it.
    Joined(Waiting),
    /// The line was handed to the network's connection now.
    Started(Waiting),
}

/// The lines on their way, by the chain and id that sent them.
#[derive(Default)]
pub struct InFlight(HashMap<(ChainId, RequestId), Waiting>);

impl InFlight {
    /// The line `id` of `chain`, if it is on its way.
    pub fn get(&self, chain: ChainId, id: &RequestId) -> Option<Waiting> {
        self.0.get(&(chain, id.clone())).cloned()
    }

    /// Notes a line now on its way.
    pub fn insert(&mut self, chain: ChainId, id: RequestId, waiting: Waiting) {
        self.0.insert((chain, id), waiting);
    }

    /// The line has its outcome.
    pub fn remove(&mut self, chain: ChainId, id: &RequestId) {
        self.0.remove(&(chain, id.clone()));
    }
}

/// Hands `line` to the session's connection and waits until it is written;
/// `written` runs first when it was (the hub stores the id there), before
/// anyone waiting hears [`Outcome::Sent`]. Spawned, so the line and its
/// record go on when every connection waiting for it is gone.
pub fn start(
    sender: &SessionSender,
    line: String,
    written: impl FnOnce(Outcome) + Send + 'static,
) -> Waiting {
    // Queued here, in the order the connection read the sends.
    let answer = sender.relayed_line(line);
    let task = tokio::spawn(async move {
        let outcome = match answer.await {
            Ok(()) => Outcome::Sent,
            Err(AgentLineError::NotConnected) => Outcome::NotConnected,
            Err(AgentLineError::NotSent) => Outcome::NotSent,
        };
        written(outcome);
        outcome
    });
    // A task that panicked did not write its line as far as anyone knows.
    task.map(|r| r.unwrap_or(Outcome::NotSent)).boxed().shared()
}
