//! Sends across nodes: a client's line for a network another node holds
//! goes through the store's outbox. This node queues it and waits for the
//! outcome the holding node writes back; the holding node takes the lines
//! of its networks (woken by a notice, and at every look in case one was
//! lost), relays each as its own client's line (the same once-per-id rule,
//! the same acknowledgement once written) and writes the outcome back.
//!
//! A line taken by a node that then lost the network is offered to the next
//! holder (`take_sends` takes once per epoch); a line nobody took within
//! [`TAKE_WAIT`] is ended `NotSent` in the store before its sender hears
//! so, so it is never sent after the client was told it was not.

use super::Hub;
use crate::sends::{Outcome, Relay, Waiting};
use crate::store::{ChainId, Outgoing, SendOutcome, StoreError, UserId};
use futures_util::FutureExt;
use rete_cloud_protocol::frame::{NetworkId, RequestId};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a line may wait in the outbox for the holding node to take it
/// (a takeover included) before its sender is told it was not sent.
const TAKE_WAIT: Duration = Duration::from_secs(30);

/// How often a waiting sender asks the store, in case a notice was lost.
const ASK_EVERY: Duration = Duration::from_secs(1);

fn outcome_of(o: SendOutcome) -> Outcome {
    match o {
        SendOutcome::Sent => Outcome::Sent,
        SendOutcome::Duplicate => Outcome::AlreadySent,
        SendOutcome::NotConnected => Outcome::NotConnected,
        SendOutcome::NotSent => Outcome::NotSent,
    }
}

fn stored_as(o: Outcome) -> SendOutcome {
    match o {
        Outcome::Sent => SendOutcome::Sent,
        Outcome::AlreadySent => SendOutcome::Duplicate,
        Outcome::NotConnected => SendOutcome::NotConnected,
        Outcome::NotSent => SendOutcome::NotSent,
    }
}

impl Hub {
    /// [`Hub::relay`] for a network another node holds.
    pub(crate) fn relay_elsewhere(
        self: &Arc<Self>,
        chain: ChainId,
        id: &RequestId,
        user: UserId,
        network: &NetworkId,
        line: String,
    ) -> Result<Relay, StoreError> {
        let mut in_flight = self.in_flight.lock();
        if let Some(waiting) = in_flight.get(chain, id) {
            return Ok(Relay::Joined(waiting));
        }
        if self.was_sent(chain, id)? {
            return Ok(Relay::AlreadySent);
        }
        let outbox = self.store(|s| s.queue_send(user, network, chain, id, &line))?;
        let woken = Arc::new(Notify::new());
        self.remote_waits.lock().insert(outbox, woken.clone());
        let hub = Arc::clone(self);
        let sent_id = id.clone();
        let task = tokio::spawn(async move {
            let queued = Instant::now();
            let outcome = loop {
                let _ = tokio::time::timeout(ASK_EVERY, woken.notified()).await;
                let give_up = queued.elapsed() > TAKE_WAIT;
                match hub.store(|s| s.send_outcome(outbox, give_up)) {
                    Ok(Some(o)) => break outcome_of(o),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(target: "rete::cloud", "waiting for a line sent through another node: {e}")
                    }
                }
            };
            hub.remote_waits.lock().remove(&outbox);
            if matches!(outcome, Outcome::Sent | Outcome::AlreadySent) {
                // Stored as sent by the holding node; remembered here too.
                hub.remember_sent(chain, &sent_id);
            }
            hub.in_flight.lock().remove(chain, &sent_id);
            outcome
        });
        let waiting: Waiting = task.map(|r| r.unwrap_or(Outcome::NotSent)).boxed().shared();
        in_flight.insert(chain, id.clone(), waiting.clone());
        Ok(Relay::Started(waiting))
    }

    /// Outbox line `id` has its outcome: its sender, if here, reads it now.
    pub(super) fn send_done(&self, id: i64) {
        if let Some(woken) = self.remote_waits.lock().get(&id) {
            woken.notify_one();
        }
    }

    /// Takes the outbox's lines for the networks this node holds and relays
    /// each; its outcome is written back once known.
    pub(super) fn take_remote_sends(self: &Arc<Self>) {
        let taken = match self.store(|s| s.take_sends(&self.node)) {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(target: "rete::cloud", "taking lines sent through other nodes: {e}");
                return;
            }
        };
        for Outgoing {
            id,
            user,
            network,
            chain,
            request,
            line,
        } in taken
        {
            let relayed = match self.session_of(user, &network) {
                None => Err(SendOutcome::NotConnected),
                Some(session) => match self.relay(chain, &request, &session, line) {
                    Ok(Relay::AlreadySent) => Err(SendOutcome::Duplicate),
                    Ok(Relay::Joined(w) | Relay::Started(w)) => Ok(w),
                    // Nothing was queued.
                    Err(_) => Err(SendOutcome::NotSent),
                },
            };
            let hub = Arc::clone(self);
            tokio::spawn(async move {
                let outcome = match relayed {
                    Ok(waiting) => stored_as(waiting.await),
                    Err(outcome) => outcome,
                };
                if let Err(e) = hub.store(|s| s.finish_send(id, outcome)) {
                    tracing::warn!(target: "rete::cloud", "a line sent for another node: its outcome was not written back: {e}");
                }
            });
        }
    }
}
