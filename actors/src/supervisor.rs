//! The root supervisor: it starts one session actor per session and restarts
//! a session actor that fails, after a backoff, with the same engine state.
//!
//! ractor's default stops a supervisor when a child dies; this one overrides
//! `handle_supervisor_evt` to restart the child instead.

use crate::session_actor::{SessionActor, SessionMsg, SessionRef, SessionShared};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use rete_engine::ids::SessionId;
use rete_transports::Backoff;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a restarted session actor must run before a failure counts as
/// new rather than as the same crash loop: its restart delays then start again
/// from the shortest, so one crash a day does not wait as long as the tenth of
/// a loop did.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// A reference to the root supervisor.
pub type RootRef = ActorRef<RootMsg>;

/// Messages the root supervisor handles.
pub enum RootMsg {
    /// Start a session actor. MUST reply with the actor or why it could not start.
    Add {
        /// The session's engine and settings.
        shared: Arc<SessionShared>,
        /// The reply.
        reply: RpcReplyPort<Result<(), String>>,
    },
    /// Stop a session for good. MUST reply whether it existed.
    Remove {
        /// Which session.
        id: SessionId,
        /// The reply.
        reply: RpcReplyPort<bool>,
    },
    /// Restart a failed session actor (sent to itself after the backoff).
    Restart(SessionId),
}

/// The root supervisor.
pub struct RootSupervisor;

struct Child {
    shared: Arc<SessionShared>,
    actor: Option<SessionRef>,
    restarts: Restarts,
}

impl Child {
    fn new(shared: Arc<SessionShared>, actor: SessionRef, now: Instant) -> Child {
        Child {
            shared,
            actor: Some(actor),
            restarts: Restarts::new(now),
        }
    }
}

/// A child's restart delays: they grow while it keeps failing, and start over
/// from the shortest once an actor of it has run [`STABLE_AFTER`].
struct Restarts {
    backoff: Backoff,
    /// When its current actor started.
    started: Instant,
}

impl Restarts {
    fn new(now: Instant) -> Restarts {
        Restarts {
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(30)),
            started: now,
        }
    }

    /// A new actor of the child started at `now`.
    fn started(&mut self, now: Instant) {
        self.started = now;
    }

    /// The delay before the next restart, after a failure at `now`.
    fn delay_after_failure(&mut self, now: Instant) -> Duration {
        if now.saturating_duration_since(self.started) >= STABLE_AFTER {
            self.backoff.reset();
        }
        self.backoff.next_delay(&mut rand::rng())
    }
}

/// The supervisor's state: its children in the order they were added.
pub struct RootState {
    children: Vec<Child>,
}

impl RootState {
    fn by_id(&mut self, id: &SessionId) -> Option<&mut Child> {
        self.children.iter_mut().find(|c| &c.shared.id == id)
    }
}

async fn spawn_child(
    myself: &ActorRef<RootMsg>,
    shared: &Arc<SessionShared>,
) -> Result<SessionRef, ActorProcessingErr> {
    let (actor, _) =
        Actor::spawn_linked(None, SessionActor, shared.clone(), myself.get_cell()).await?;
    shared.set_actor(Some(actor.clone()));
    Ok(actor)
}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(RootState {
            children: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RootMsg::Add { shared, reply } => {
                if state.by_id(&shared.id).is_some() {
                    let _ = reply.send(Err("a session with this id exists already".into()));
                    return Ok(());
                }
                // Spawning is quick: the actor's pre_start only schedules work.
                let result = spawn_child(&myself, &shared).await;
                match result {
                    Ok(actor) => {
                        state
                            .children
                            .push(Child::new(shared, actor, Instant::now()));
                        let _ = reply.send(Ok(()));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e.to_string()));
                    }
                }
            }
            RootMsg::Remove { id, reply } => {
                let Some(pos) = state.children.iter().position(|c| c.shared.id == id) else {
                    let _ = reply.send(false);
                    return Ok(());
                };
                let child = state.children.remove(pos);
                child.shared.retire();
                if let Some(actor) = child.actor {
                    let _ = actor.cast(SessionMsg::Disconnect { reason: None });
                    // Unlink first so the stop is not taken for a failure.
                    actor.unlink(myself.get_cell());
                    actor.stop(Some("removed".into()));
                }
                let _ = reply.send(true);
            }
            RootMsg::Restart(id) => {
                let Some(child) = state.by_id(&id) else {
                    return Ok(());
                };
                if child.actor.is_some() {
                    return Ok(());
                }
                let shared = child.shared.clone();
                shared
                    .restarts
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match spawn_child(&myself, &shared).await {
                    Ok(actor) => {
                        if let Some(child) = state.by_id(&id) {
                            child.actor = Some(actor);
                            child.restarts.started(Instant::now());
                        }
                        tracing::info!(target: "rete::app", session = %id, "session actor restarted");
                    }
                    Err(e) => {
                        tracing::warn!(target: "rete::app", session = %id, error = %e, "session actor restart failed");
                        schedule_restart(&myself, state, &id);
                    }
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match &event {
            SupervisionEvent::ActorFailed(cell, err) => (cell.clone(), err.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (
                cell.clone(),
                reason.clone().unwrap_or_else(|| "stopped".into()),
            ),
            _ => return Ok(()),
        };
        let Some(child) = state.children.iter_mut().find(|c| {
            c.actor
                .as_ref()
                .is_some_and(|a| a.get_id() == cell.get_id())
        }) else {
            return Ok(());
        };
        child.actor = None;
        child.shared.set_actor(None);
        let id = child.shared.id.clone();
        tracing::warn!(target: "rete::app", session = %id, reason = %why, "session actor stopped; restarting");
        schedule_restart(&myself, state, &id);
        Ok(())
    }
}

fn schedule_restart(myself: &ActorRef<RootMsg>, state: &mut RootState, id: &SessionId) {
    let Some(child) = state.by_id(id) else {
        return;
    };
    let delay = child.restarts.delay_after_failure(Instant::now());
    tracing::info!(
        target: "rete::app",
        session = %id,
        delay_ms = delay.as_millis() as u64,
        "session actor restarts in {} ms",
        delay.as_millis()
    );
    let id = id.clone();
    myself.send_after(delay, move || RootMsg::Restart(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_in_a_crash_loop_and_start_over_after_a_stable_run() {
        let t0 = Instant::now();
        let mut r = Restarts::new(t0);
        // Ten failures, each a moment after its restart: a crash loop.
        let mut at = t0;
        let mut last = Duration::ZERO;
        for _ in 0..10 {
            at += Duration::from_millis(10);
            last = r.delay_after_failure(at);
            at += last;
            r.started(at);
        }
        assert!(
            last >= Duration::from_secs(15),
            "the loop backed off: {last:?}"
        );
        // The last restart then ran for a minute before failing: a new
        // failure, restarted as soon as the first.
        let delay = r.delay_after_failure(at + STABLE_AFTER);
        assert!(
            delay <= Duration::from_millis(100),
            "started over: {delay:?}"
        );
    }
}
