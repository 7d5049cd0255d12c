//! The rate limiter actor: send_raw's per-session limits (`RateCaps`),
//! held in one place so concurrent calls see one count. It lives under the
//! control supervisor, beside the subscription registry, so its counts are
//! gone whenever the server stops, the token is regenerated or the port
//! moves.
//!
//! Each session has two sets of limits (`Budget`): the full token's, and
//! one that every scoped grant sending on it shares. Shared, so that
//! handing out more grants never lets agents together send more to a
//! network than one could; apart from the full token's, so that no grant
//! can spend the person's own budget.

use super::caps::{CapRefused, RateCaps};
use parking_lot::RwLock;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Whose limits a line counts against: a session, and whether a grant
/// (any grant) or the full token sends it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Budget {
    /// The session id.
    pub(crate) session: String,
    /// True for every scoped grant's lines, false for the full token's.
    pub(crate) grants: bool,
}

/// Messages the limiter handles.
pub(crate) enum LimiterMsg {
    /// Take a place for one line against a budget. MUST reply.
    Reserve {
        /// Whose limits.
        budget: Budget,
        /// The verdict.
        reply: RpcReplyPort<Result<(), CapRefused>>,
    },
    /// The reserved line was sent.
    Commit {
        /// Whose limits.
        budget: Budget,
    },
    /// The reserved line was not sent.
    Release {
        /// Whose limits.
        budget: Budget,
    },
}

/// The limiter actor.
pub(crate) struct LimiterActor;

impl Actor for LimiterActor {
    type Msg = LimiterMsg;
    type State = HashMap<Budget, RateCaps>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(HashMap::new())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let now = Instant::now();
        match msg {
            LimiterMsg::Reserve { budget, reply } => {
                // Forget budgets with nothing held, so ids cannot pile up.
                state.retain(|_, caps| !caps.idle(now));
                let caps = state.entry(budget).or_insert_with(|| RateCaps::new(now));
                let _ = reply.send(caps.reserve(now));
            }
            LimiterMsg::Commit { budget } => {
                if let Some(caps) = state.get_mut(&budget) {
                    caps.commit(now);
                }
            }
            LimiterMsg::Release { budget } => {
                if let Some(caps) = state.get_mut(&budget) {
                    caps.release();
                }
            }
        }
        Ok(())
    }
}

/// Why a reservation could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reserve {
    /// A limit refuses the line.
    Refused(CapRefused),
    /// The limiter is not running (the server is stopping).
    Gone,
}

/// A handle on the limiter now serving; cheap to clone.
#[derive(Clone, Default)]
pub struct Limiter {
    actor: Arc<RwLock<Option<ActorRef<LimiterMsg>>>>,
}

impl Limiter {
    /// A handle with no limiter behind it yet (every reservation: Gone).
    pub(crate) fn unstarted() -> Limiter {
        Limiter::default()
    }

    /// The limiter actor serving now.
    #[cfg(test)]
    pub(crate) fn actor(&self) -> Option<ActorRef<LimiterMsg>> {
        self.actor.read().clone()
    }

    /// Points the handle at a (re)started limiter, or at none.
    pub(crate) fn set(&self, actor: Option<ActorRef<LimiterMsg>>) {
        *self.actor.write() = actor;
    }

    /// Takes a place for one line on `session`, sent by a grant (any: they
    /// share one budget) or by the full token; the guard gives it back
    /// unless [`Reservation::sent`] is called.
    pub(crate) async fn reserve(
        &self,
        session: &str,
        by_grant: bool,
    ) -> Result<Reservation, Reserve> {
        let actor = self.actor.read().clone().ok_or(Reserve::Gone)?;
        let budget = Budget {
            session: session.to_owned(),
            grants: by_grant,
        };
        let verdict = ractor::call!(actor, |reply| LimiterMsg::Reserve {
            budget: budget.clone(),
            reply
        })
        .map_err(|_| Reserve::Gone)?;
        verdict.map_err(Reserve::Refused)?;
        Ok(Reservation {
            actor: Some(actor),
            budget,
        })
    }
}

/// A place held for one line. Dropped without [`sent`](Self::sent) — the
/// line was refused, vetoed, or its request gave up before handing it over
/// — it is released.
pub(crate) struct Reservation {
    actor: Option<ActorRef<LimiterMsg>>,
    budget: Budget,
}

impl Reservation {
    /// The line was sent: it counts.
    pub(crate) fn sent(mut self) {
        if let Some(actor) = self.actor.take() {
            let budget = std::mem::take(&mut self.budget);
            let _ = actor.cast(LimiterMsg::Commit { budget });
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            let budget = std::mem::take(&mut self.budget);
            let _ = actor.cast(LimiterMsg::Release { budget });
        }
    }
}

/// Starts a limiter of its own (not under the control supervisor), for a
/// test or an embedding host.
pub async fn start() -> Result<Limiter, String> {
    let limiter = Limiter::unstarted();
    let (actor, _) = Actor::spawn(None, LimiterActor, ())
        .await
        .map_err(|e| e.to_string())?;
    limiter.set(Some(actor));
    Ok(limiter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn concurrent_reservations_never_pass_the_burst() {
        let limiter = start().await.unwrap();
        let calls = (0..16).map(|_| {
            let l = limiter.clone();
            tokio::spawn(async move { l.reserve("S", false).await })
        });
        let mut held = Vec::new();
        let mut refused = 0;
        for call in calls {
            match call.await.unwrap() {
                Ok(r) => held.push(r),
                Err(Reserve::Refused(CapRefused::Burst)) => refused += 1,
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!((held.len(), refused), (5, 11));
        // Released places come back; sent ones do not.
        let first = held.pop().unwrap();
        drop(first);
        for r in held {
            r.sent();
        }
        let again = limiter.reserve("S", false).await;
        assert!(again.is_ok());
        assert!(matches!(
            limiter.reserve("S", false).await,
            Err(Reserve::Refused(CapRefused::Burst))
        ));
        // Another session has its own limits.
        assert!(limiter.reserve("T", false).await.is_ok());
    }

    #[tokio::test]
    async fn grants_share_one_budget_apart_from_the_full_tokens() {
        let limiter = start().await.unwrap();
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(limiter.reserve("S", true).await.unwrap());
        }
        // Five lines from grants spend the burst for every grant.
        assert!(matches!(
            limiter.reserve("S", true).await,
            Err(Reserve::Refused(CapRefused::Burst))
        ));
        // The full token's budget is untouched.
        for _ in 0..5 {
            held.push(limiter.reserve("S", false).await.unwrap());
        }
        assert!(limiter.reserve("S", false).await.is_err());
        // The grants' budget is per session too.
        assert!(limiter.reserve("T", true).await.is_ok());
    }
}
