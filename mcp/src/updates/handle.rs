//! [`Updates`]: how tools (and an embedding host) talk to the registry.
//!
//! Every call is an ask-message carrying the request's cancellation: when
//! the request is given up, the caller stops waiting at once, and a wait
//! also tells the registry, which frees its place.

use super::actor::{ReadSpec, RegistryActor, RegistryArgs, RegistryMsg, Stats, WaitAnswer};
use super::clock::Clock;
use super::filter::Filter;
use super::registry::{Full, Listed, Subscribed, Unknown};
use super::{Holder, Owner, SubId};
use crate::debug::Capture;
use parking_lot::RwLock;
use ractor::{Actor, ActorRef, RpcReplyPort};
use rete_actors::ReadOnlySessions;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Why a call to the registry did not get its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Asked {
    /// The request was cancelled first.
    #[error("cancelled")]
    Cancelled,
    /// The registry is not running (stopped, or being restarted).
    #[error("the subscription registry is not running")]
    Gone,
}

/// A handle on the subscription registry; cheap to clone.
#[derive(Clone, Default)]
pub struct Updates {
    /// The registry actor now serving, replaced when its supervisor restarts it.
    actor: Arc<RwLock<Option<ActorRef<RegistryMsg>>>>,
    next_wait: Arc<AtomicU64>,
}

impl Updates {
    /// A handle with no registry behind it yet; every call answers
    /// `Asked::Gone` until one is set.
    pub fn unstarted() -> Updates {
        Updates::default()
    }

    /// Starts a registry of its own (not under the control server's
    /// supervisor), for an embedding host or a test, with no debug capture
    /// (raw and log subscriptions stay paused). Stop it with
    /// [`Updates::stop`].
    pub async fn start(
        sessions: ReadOnlySessions,
        clock: Arc<dyn Clock>,
    ) -> Result<Updates, String> {
        Updates::start_with_capture(sessions, clock, Capture::off()).await
    }

    /// [`Updates::start`], with raw and log subscriptions reading `capture`.
    pub async fn start_with_capture(
        sessions: ReadOnlySessions,
        clock: Arc<dyn Clock>,
        capture: Capture,
    ) -> Result<Updates, String> {
        let updates = Updates::unstarted();
        let args = RegistryArgs {
            sessions,
            clock,
            capture,
            grants: None,
        };
        let (actor, _) = Actor::spawn(None, RegistryActor, args)
            .await
            .map_err(|e| e.to_string())?;
        updates.set(Some(actor));
        Ok(updates)
    }

    /// Stops the registry this handle serves: every subscription is removed.
    pub fn stop(&self) {
        if let Some(actor) = self.actor.write().take() {
            actor.stop(None);
        }
    }

    /// Points the handle at a (re)started registry, or at none.
    pub(crate) fn set(&self, actor: Option<ActorRef<RegistryMsg>>) {
        *self.actor.write() = actor;
    }

    /// The registry actor serving now.
    pub(crate) fn actor(&self) -> Option<ActorRef<RegistryMsg>> {
        self.actor.read().clone()
    }

    /// subscribe, as the full token (an embedding host's own
    /// subscriptions): the new subscription, or the 16-subscription refusal.
    pub async fn subscribe(
        &self,
        filter: Filter,
        cancel: &CancellationToken,
    ) -> Result<Result<Subscribed, Full>, Asked> {
        self.subscribe_as(filter, Holder::default(), cancel).await
    }

    /// unsubscribe, as the full token.
    pub async fn unsubscribe(
        &self,
        id: SubId,
        cancel: &CancellationToken,
    ) -> Result<Result<(), Unknown>, Asked> {
        self.unsubscribe_as(Owner::Full, id, cancel).await
    }

    /// The full token's subscriptions, oldest first.
    pub async fn list(&self, cancel: &CancellationToken) -> Result<Vec<Listed>, Asked> {
        self.list_as(Owner::Full, cancel).await
    }

    /// subscribe: the new subscription, held by `holder`, or the
    /// 16-subscription refusal (4 for one grant).
    pub(crate) async fn subscribe_as(
        &self,
        filter: Filter,
        holder: Holder,
        cancel: &CancellationToken,
    ) -> Result<Result<Subscribed, Full>, Asked> {
        self.ask(cancel, |reply| {
            RegistryMsg::Subscribe(filter, holder, reply)
        })
        .await
    }

    /// unsubscribe: only `owner`'s subscription.
    pub(crate) async fn unsubscribe_as(
        &self,
        owner: Owner,
        id: SubId,
        cancel: &CancellationToken,
    ) -> Result<Result<(), Unknown>, Asked> {
        self.ask(cancel, |reply| RegistryMsg::Unsubscribe(owner, id, reply))
            .await
    }

    /// Every one of `owner`'s subscriptions, oldest first.
    pub(crate) async fn list_as(
        &self,
        owner: Owner,
        cancel: &CancellationToken,
    ) -> Result<Vec<Listed>, Asked> {
        self.ask(cancel, |reply| RegistryMsg::List(owner, reply))
            .await
    }

    /// read_updates.
    pub async fn read(
        &self,
        spec: ReadSpec,
        cancel: &CancellationToken,
    ) -> Result<Result<Value, Unknown>, Asked> {
        self.ask(cancel, |reply| RegistryMsg::Read(spec, reply))
            .await
    }

    /// wait_for_updates. `on_parked` runs once the registry has parked the
    /// wait (not when it refuses it or answers at once). Cancelling `cancel`
    /// ends the wait at once and frees its place in the registry.
    pub(crate) async fn wait(
        &self,
        spec: ReadSpec,
        timeout: Duration,
        cancel: &CancellationToken,
        on_parked: impl FnOnce(),
    ) -> Result<WaitAnswer, Asked> {
        let wait = self.next_wait.fetch_add(1, Ordering::Relaxed);
        let actor = self.actor().ok_or(Asked::Gone)?;
        // Whatever ends this call early (cancellation, or the future being
        // dropped), the registry hears of it and frees the place.
        let _release = Release {
            actor: actor.clone(),
            wait,
        };
        let (parked_tx, mut parked) = oneshot::channel();
        let (reply, mut answer) = oneshot::channel();
        actor
            .cast(RegistryMsg::Wait {
                wait,
                spec,
                timeout,
                parked: parked_tx,
                reply: reply.into(),
            })
            .map_err(|_| Asked::Gone)?;
        let mut on_parked = Some(on_parked);
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Asked::Cancelled),
                // Ahead of the answer, so "waiting" is seen before the end.
                was = &mut parked, if on_parked.is_some() => {
                    let run = on_parked.take();
                    if let (Ok(()), Some(f)) = (was, run) {
                        f();
                    }
                }
                a = &mut answer => return a.map_err(|_| Asked::Gone),
            }
        }
    }

    /// Collection statistics (batches read, rows read, live subscriptions
    /// and waits), for tests and benchmarks.
    pub async fn stats(&self) -> Result<Stats, Asked> {
        self.ask(&CancellationToken::new(), RegistryMsg::Stats)
            .await
    }

    async fn ask<T: Send + 'static>(
        &self,
        cancel: &CancellationToken,
        build: impl FnOnce(RpcReplyPort<T>) -> RegistryMsg,
    ) -> Result<T, Asked> {
        let actor = self.actor().ok_or(Asked::Gone)?;
        let (tx, rx) = oneshot::channel();
        actor.cast(build(tx.into())).map_err(|_| Asked::Gone)?;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(Asked::Cancelled),
            answer = rx => answer.map_err(|_| Asked::Gone),
        }
    }
}

/// Tells the registry a wait is over from the caller's side. After the
/// registry answered, the message finds nothing parked and does nothing.
struct Release {
    actor: ActorRef<RegistryMsg>,
    wait: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        let _ = self.actor.cast(RegistryMsg::CancelWait(self.wait));
    }
}
