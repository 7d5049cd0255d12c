//! Pieces the injected-fault tests (`tests/faults_*.rs`) share: tool calls kept running
//! through a fault, each judged against the contract (a result, or one of the contract's
//! error strings; never `internal error`, never past the request's 25-second deadline), and a
//! recorder of one session's events, to show that a session a fault did not touch never
//! noticed it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Result};
use rete_actors::Rete;
use rete_engine::event::Event;
use rete_engine::ids::SessionId;
use rete_mcp::tools::ToolOutcome;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::updates_tests_tools::Updating;

/// The request's answer deadline: no call may take longer to answer.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(25);

/// The error texts a read may answer with while its session is down or restarting: each
/// is a contract string for that situation.
const CONTRACT_ERRORS: &[&str] = &["unknown session", "unknown buffer", "unknown subscription"];

/// One call's outcome and how long it took.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The tool and its arguments.
    pub call: String,
    /// What it answered.
    pub outcome: ToolOutcome,
    /// How long it took.
    pub took: Duration,
}

impl Answered {
    /// Whether the answer is one the contract allows: a result, or a contract error.
    pub fn is_contractual(&self) -> bool {
        match &self.outcome {
            ToolOutcome::Ok(_) | ToolOutcome::Encoded(_) => true,
            ToolOutcome::Error(text) => CONTRACT_ERRORS.contains(&text.as_str()),
            // "search stopped: time budget exceeded", with its partial result.
            ToolOutcome::Stopped(_) => true,
            ToolOutcome::Cancelled => false,
        }
    }
}

/// Calls `tool` under the answer deadline; a call that does not answer in time is an error.
pub async fn call_in_time(f: &Updating, tool: &str, args: Value) -> Result<Answered> {
    let started = Instant::now();
    match tokio::time::timeout(ANSWER_DEADLINE, f.call(tool, args.clone())).await {
        Ok(outcome) => Ok(Answered {
            call: format!("{tool}({args})"),
            outcome,
            took: started.elapsed(),
        }),
        Err(_) => bail!("{tool}({args}) did not answer within {ANSWER_DEADLINE:?}"),
    }
}

/// A task calling each of `calls` in turn, round and round, until told to stop; it returns
/// every answer. It keeps calls in flight across a fault, whenever the fault lands.
pub struct Caller {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<Vec<Answered>>>,
}

impl Caller {
    /// Starts calling. `calls` are (tool, arguments) pairs.
    pub fn start(f: Arc<Updating>, calls: Vec<(&'static str, Value)>) -> Caller {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut answers = Vec::new();
            loop {
                for (tool, args) in &calls {
                    answers.push(call_in_time(&f, tool, args.clone()).await?);
                }
                if *stopped.borrow_and_update() {
                    return Ok(answers);
                }
            }
        });
        Caller { stop, task }
    }

    /// Stops after the round in flight and returns every answer, each checked against the
    /// contract.
    pub async fn finish(self) -> Result<Vec<Answered>> {
        let _ = self.stop.send(true);
        let answers = self.task.await??;
        let bad: Vec<&Answered> = answers.iter().filter(|a| !a.is_contractual()).collect();
        if !bad.is_empty() {
            bail!(
                "{} of {} calls answered outside the contract: {bad:#?}",
                bad.len(),
                answers.len()
            );
        }
        Ok(answers)
    }
}

/// Every event one session emits from now on.
pub struct EventLog {
    events: Arc<Mutex<Vec<Event>>>,
}

impl EventLog {
    /// Records `session`'s events on `rete` from now on.
    pub fn start(rete: &Rete, session: SessionId) -> EventLog {
        let mut rx = rete.subscribe();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(e) if e.session == session => {
                        sink.lock().unwrap_or_else(|p| p.into_inner()).push(e.event)
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        EventLog { events }
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The events that say the session noticed trouble: a connection state change or a new
    /// registration.
    pub fn disturbances(&self) -> Vec<Event> {
        self.events()
            .into_iter()
            .filter(|e| matches!(e, Event::State(_) | Event::Registered))
            .collect()
    }
}
