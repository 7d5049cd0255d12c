//! Approval, beyond the contract (opt-in, `control.approve`): while it is on,
//! every send_raw line that passed the line rule, the session check and the
//! rate limits waits here for the person's answer, at most
//! [`APPROVAL_WAIT`], before it is handed to the session.
//!
//! The wait sits in the request, not in the engine or the raw-out hook: the
//! hook runs on the session actor's task and must never block, and the
//! engine stays free of I/O and time it does not own. A request that gives
//! up while its line waits (the client gone, the 25-second answer deadline,
//! the server stopping) drops the wait, and dropping it withdraws the prompt.
//! The wait (20 s) ends well before the answer deadline (25 s after the
//! request arrived), so an unanswered line is always answered with the veto
//! text rather than a 504.
//!
//! Reading and answering is the host's part (reterm's prompt row, keys and
//! `/control allow|deny`): it sees the prompts through [`Approvals`], which
//! it owns and hands to each control server it starts.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

/// How long a line waits for the person's answer.
pub const APPROVAL_WAIT: Duration = Duration::from_secs(20);

/// Events a slow observer may miss before it is told it lagged.
const EVENT_BACKLOG: usize = 64;

/// One line waiting for the person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// Unique while the [`Approvals`] lives; answers name it.
    pub id: u64,
    /// The session's name, display-escaped.
    pub session: String,
    /// The scoped grant that sent the line, display-escaped; None for the
    /// full token.
    pub grant: Option<String>,
    /// The line exactly as its audit row would show it: masked, then
    /// display-escaped. The real line is never here.
    pub line: String,
}

/// How a line stopped waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The person allowed it: it is handed to the session.
    Allowed,
    /// The person denied it: not sent.
    Denied,
    /// No answer within the wait: not sent.
    Unanswered,
    /// Its request gave up first (client gone, deadline, server stopped).
    Withdrawn,
}

/// What observers are told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalEvent {
    /// A line began waiting; `waiting` counts it.
    Asked {
        /// The line.
        prompt: Prompt,
        /// Lines waiting now.
        waiting: usize,
    },
    /// A line stopped waiting.
    Ended {
        /// The line.
        prompt: Prompt,
        /// Why.
        ending: Ending,
        /// Lines still waiting.
        waiting: usize,
    },
}

/// The person's answers, and the switch. Cheap to clone; every clone is the
/// same queue.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

struct Inner {
    on: AtomicBool,
    wait: Duration,
    state: Mutex<State>,
    events: broadcast::Sender<ApprovalEvent>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Oldest first.
    waiting: VecDeque<Waiting>,
}

struct Waiting {
    prompt: Prompt,
    answer: oneshot::Sender<bool>,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals::new()
    }
}

impl fmt::Debug for Approvals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approvals")
            .field("on", &self.is_on())
            .field("waiting", &self.inner.state.lock().waiting.len())
            .finish()
    }
}

impl Approvals {
    /// Approval switched off, lines waiting [`APPROVAL_WAIT`] once it is on.
    pub fn new() -> Approvals {
        Approvals::with_wait(APPROVAL_WAIT)
    }

    /// The same with another wait. For tests only, so an unanswered line
    /// does not take 20 seconds; a host uses [`Approvals::new`].
    #[doc(hidden)]
    pub fn with_wait(wait: Duration) -> Approvals {
        Approvals {
            inner: Arc::new(Inner {
                on: AtomicBool::new(false),
                wait,
                state: Mutex::new(State::default()),
                events: broadcast::channel(EVENT_BACKLOG).0,
            }),
        }
    }

    /// Switches approval; the listener reads it once per request, so it
    /// takes effect on the next one. Lines already waiting keep waiting.
    pub fn set_on(&self, on: bool) {
        self.inner.on.store(on, Ordering::Relaxed);
    }

    /// Whether approval is on.
    pub(crate) fn is_on(&self) -> bool {
        self.inner.on.load(Ordering::Relaxed)
    }

    /// How long a line waits.
    pub fn wait(&self) -> Duration {
        self.inner.wait
    }

    /// Every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ApprovalEvent> {
        self.inner.events.subscribe()
    }

    /// The lines waiting, oldest first.
    pub fn waiting(&self) -> Vec<Prompt> {
        let state = self.inner.state.lock();
        state.waiting.iter().map(|w| w.prompt.clone()).collect()
    }

    /// The oldest line waiting, and how many wait (it included).
    pub fn oldest(&self) -> Option<(Prompt, usize)> {
        let state = self.inner.state.lock();
        let first = state.waiting.front()?;
        Some((first.prompt.clone(), state.waiting.len()))
    }

    /// Answers the line `id`, if it still waits; returns it.
    pub fn answer(&self, id: u64, allow: bool) -> Option<Prompt> {
        self.take(|w| w.prompt.id == id, allow)
    }

    /// Answers the oldest line waiting; returns it.
    pub fn answer_oldest(&self, allow: bool) -> Option<Prompt> {
        self.take(|_| true, allow)
    }

    fn take(&self, which: impl Fn(&Waiting) -> bool, allow: bool) -> Option<Prompt> {
        let mut state = self.inner.state.lock();
        let at = state.waiting.iter().position(which)?;
        let taken = state.waiting.remove(at)?;
        let waiting = state.waiting.len();
        // A request that gave up this instant cannot take the answer; its
        // line is not sent either way.
        let _ = taken.answer.send(allow);
        let ending = if allow {
            Ending::Allowed
        } else {
            Ending::Denied
        };
        let _ = self.inner.events.send(ApprovalEvent::Ended {
            prompt: taken.prompt.clone(),
            ending,
            waiting,
        });
        Some(taken.prompt)
    }

    /// Removes `id` if it still waits, telling observers why.
    fn end(&self, id: u64, ending: Ending) -> bool {
        let mut state = self.inner.state.lock();
        let Some(at) = state.waiting.iter().position(|w| w.prompt.id == id) else {
            return false;
        };
        let Some(gone) = state.waiting.remove(at) else {
            return false;
        };
        let waiting = state.waiting.len();
        let _ = self.inner.events.send(ApprovalEvent::Ended {
            prompt: gone.prompt,
            ending,
            waiting,
        });
        true
    }

    /// Asks the person about one line on `session` (its name) from `grant`
    /// (None: the full token), shown as `line` (already masked and
    /// display-escaped); waits for the answer, at most the wait. Dropping
    /// the future withdraws the prompt.
    pub(crate) async fn ask(&self, session: &str, grant: Option<&str>, line: &str) -> Ending {
        let (answer, mut answered) = oneshot::channel();
        let id = {
            let mut state = self.inner.state.lock();
            state.next_id += 1;
            let prompt = Prompt {
                id: state.next_id,
                session: rete_redact::display_escape(session).into_owned(),
                grant: grant.map(|g| rete_redact::display_escape(g).into_owned()),
                line: line.to_owned(),
            };
            state.waiting.push_back(Waiting {
                prompt: prompt.clone(),
                answer,
            });
            let waiting = state.waiting.len();
            let _ = self
                .inner
                .events
                .send(ApprovalEvent::Asked { prompt, waiting });
            state.next_id
        };
        // Dropped before the match ends (the request gave up): withdrawn.
        // Once answered or timed out the line is no longer waiting, so the
        // guard's drop then changes nothing.
        let _withdraw = Withdraw {
            approvals: self,
            id,
        };
        let ending = match tokio::time::timeout(self.inner.wait, &mut answered).await {
            Ok(Ok(true)) => Ending::Allowed,
            Ok(Ok(false)) | Ok(Err(_)) => Ending::Denied,
            Err(_) if self.end(id, Ending::Unanswered) => Ending::Unanswered,
            // Answered as time ran out: the answer counts.
            Err(_) => match answered.try_recv() {
                Ok(true) => Ending::Allowed,
                _ => Ending::Denied,
            },
        };
        ending
    }
}

/// Withdraws a prompt whose wait was dropped before it ended.
struct Withdraw<'a> {
    approvals: &'a Approvals,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.approvals.end(self.id, Ending::Withdrawn);
    }
}

/// What became of a line that needed the person's approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Allowed: hand it to the session.
    Go,
    /// Denied or unanswered: the contract's veto answer.
    NotSent,
    /// The request gave up while the line waited.
    Cancelled,
}

/// send_raw's approval step: asks, and on a denial or no answer logs the
/// line as a vetoed one is logged (`shown` is the masked, display-escaped
/// line; nothing is recorded in the server buffer).
pub(crate) async fn gate(
    approvals: &Approvals,
    session_name: &str,
    grant: Option<&str>,
    shown: &str,
    cancel: &CancellationToken,
) -> Gate {
    let ending = tokio::select! {
        biased;
        _ = cancel.cancelled() => Ending::Withdrawn,
        ending = approvals.ask(session_name, grant, shown) => ending,
    };
    if ending == Ending::Allowed {
        return Gate::Go;
    }
    tracing::info!(
        target: "rete::network",
        "AI access line on {session_name} was not sent: {shown}"
    );
    if ending == Ending::Withdrawn {
        Gate::Cancelled
    } else {
        Gate::NotSent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_production_wait_is_twenty_seconds() {
        assert_eq!(APPROVAL_WAIT, Duration::from_secs(20));
        assert_eq!(Approvals::new().wait(), APPROVAL_WAIT);
        assert!(!Approvals::new().is_on(), "off by default");
    }

    /// Waits until `n` lines wait.
    async fn until_waiting(
        a: &Approvals,
        events: &mut broadcast::Receiver<ApprovalEvent>,
        n: usize,
    ) {
        while a.waiting().len() < n {
            events.recv().await.unwrap();
        }
    }

    #[tokio::test]
    async fn answers_go_to_the_oldest_first_and_by_id() {
        let a = Approvals::with_wait(Duration::from_secs(30));
        let mut events = a.subscribe();
        let asks: Vec<_> = (0..3)
            .map(|i| {
                let a = a.clone();
                tokio::spawn(async move {
                    let grant = (i == 1).then_some("bot\u{1b}");
                    a.ask("net\u{1b}", grant, &format!("PING :{i}")).await
                })
            })
            .collect();
        until_waiting(&a, &mut events, 3).await;
        let (oldest, count) = a.oldest().unwrap();
        assert_eq!(count, 3);
        assert_eq!(oldest.session, "net\\u{1B}", "the name is display-escaped");
        let grants: Vec<_> = a.waiting().into_iter().map(|p| p.grant).collect();
        assert_eq!(
            grants.iter().flatten().collect::<Vec<_>>(),
            ["bot\\u{1B}"],
            "a grant's line names it, display-escaped"
        );
        assert_eq!(grants.iter().filter(|g| g.is_none()).count(), 2);
        let lines: Vec<_> = a.waiting().into_iter().map(|p| p.line).collect();
        let first = lines[0].clone();
        assert_eq!(a.answer_oldest(false).unwrap().line, first);
        // By id: the third, whatever is oldest now.
        let third = a.waiting()[1].clone();
        assert_eq!(a.answer(third.id, true), Some(third.clone()));
        assert_eq!(a.answer(third.id, true), None, "answered once");
        assert!(a.answer_oldest(true).is_some());
        assert_eq!(a.answer_oldest(true), None);
        let mut endings = Vec::new();
        for ask in asks {
            endings.push(ask.await.unwrap());
        }
        assert_eq!(endings.iter().filter(|e| **e == Ending::Denied).count(), 1);
        assert_eq!(endings.iter().filter(|e| **e == Ending::Allowed).count(), 2);
    }

    #[tokio::test]
    async fn an_unanswered_line_ends_after_the_wait_and_a_dropped_one_is_withdrawn() {
        let a = Approvals::with_wait(Duration::from_millis(50));
        let mut events = a.subscribe();
        assert_eq!(a.ask("net", None, "PING :late").await, Ending::Unanswered);
        assert!(a.waiting().is_empty());
        assert!(matches!(
            events.recv().await.unwrap(),
            ApprovalEvent::Asked { waiting: 1, .. }
        ));
        assert!(matches!(
            events.recv().await.unwrap(),
            ApprovalEvent::Ended {
                ending: Ending::Unanswered,
                waiting: 0,
                ..
            }
        ));
        let cancel = CancellationToken::new();
        let long = Approvals::with_wait(Duration::from_secs(30));
        let mut events = long.subscribe();
        let asking = {
            let long = long.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move { gate(&long, "net", None, "PING :gone", &cancel).await })
        };
        until_waiting(&long, &mut events, 1).await;
        cancel.cancel();
        assert_eq!(asking.await.unwrap(), Gate::Cancelled);
        assert!(long.waiting().is_empty());
        assert!(matches!(
            events.recv().await.unwrap(),
            ApprovalEvent::Ended {
                ending: Ending::Withdrawn,
                waiting: 0,
                ..
            }
        ));
    }
}
