//! The live-update tools (subscribe, unsubscribe, list_subscriptions, read_updates,
//! wait_for_updates) called through `ToolBox::call` with a REAL subscription registry
//! (`rete_mcp::updates::Updates::start`) on an injectable clock, for `tests/updates_*.rs`.
//!
//! Waits run as spawned calls with their own child cancellation token, so a test can park
//! one, cancel it (as a listener does when a client goes away) and watch the registry's
//! statistics free its place.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use rete_mcp::updates::actor::Stats;
use rete_mcp::updates::{ShiftedClock, Updates};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::live_tests_session::{eventually, plain, spec, WAIT};

/// The contract's deadline for one tool call.
const CALL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(25);

/// An engine (sessions are added by the test), a running registry on a shifted clock, and
/// the context every tool call runs with.
pub struct Updating {
    /// The engine.
    pub rete: Arc<Rete>,
    /// The registry's clock: advance it for idle expiry and the inbox's one-hour limit.
    pub clock: Arc<ShiftedClock>,
    /// The context tool calls run in (its `updates` is the registry above).
    pub ctx: ToolContext,
}

impl Drop for Updating {
    fn drop(&mut self) {
        self.ctx.updates.stop();
    }
}

/// A wait_for_updates (or any call) running in its own task, cancellable like a request.
pub struct Running {
    /// Cancelling it is what the listener does when the request is given up.
    pub cancel: CancellationToken,
    /// The call's outcome.
    pub task: JoinHandle<ToolOutcome>,
    /// When the call was started.
    pub started: Instant,
}

impl Updating {
    /// An engine with no session and a started registry.
    pub async fn start() -> Result<Updating> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let clock = Arc::new(ShiftedClock::new());
        let sessions = rete_actors::ReadOnlySessions::new(rete.clone());
        let updates = Updates::start(sessions.clone(), clock.clone())
            .await
            .map_err(anyhow::Error::msg)?;
        Ok(Updating {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::everything(),
                principal: rete_mcp::tools::Principal::Full,
                sessions,
                send: None,
                cancel: CancellationToken::new(),
                settings: Settings::default(),
                access_log: Arc::new(AccessLog::new()),
                updates,
                capture: rete_mcp::debug::Capture::off(),
            },
            rete,
            clock,
        })
    }

    /// Adds a session connecting to the test server on `port`.
    pub async fn add(&self, config: SessionConfig, port: u16) -> Result<SessionHandle> {
        Ok(self.rete.add_session(spec(config, plain(port))).await?)
    }

    /// One tool call.
    pub async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let Ok(parsed) = Args::from_request(Some(&args)) else {
            return ToolOutcome::Error("test bug: arguments are not an object".into());
        };
        // The listener ends a call at the contract's deadline; here a call
        // still out then fails the test, naming itself, instead of hanging it.
        let tools = ToolBox::new();
        match tokio::time::timeout(CALL_DEADLINE, tools.call(tool, &self.ctx, &parsed)).await {
            Ok(outcome) => outcome,
            Err(_) => ToolOutcome::Error(format!(
                "test: {tool}({args}) did not answer within {CALL_DEADLINE:?}"
            )),
        }
    }

    /// A successful result, checked against the budget.
    pub async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Ok(v) => {
                let size = encode(&v).len();
                if size > BUDGET {
                    bail!("{tool}({args}) answered {size} bytes");
                }
                Ok(v)
            }
            other => bail!("{tool}({args}) failed: {other:?}"),
        }
    }

    /// A tool error's text.
    pub async fn err(&self, tool: &str, args: Value) -> Result<String> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("{tool}({args}) did not fail: {other:?}"),
        }
    }

    /// Starts a call in its own task under a fresh child of the context's token.
    pub fn spawn(&self, tool: &str, args: Value) -> Running {
        let cancel = self.ctx.cancel.child_token();
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.clone();
        let tool = tool.to_owned();
        let task = tokio::spawn(async move {
            let Ok(args) = Args::from_request(Some(&args)) else {
                return ToolOutcome::Error("test bug: arguments are not an object".into());
            };
            ToolBox::new().call(&tool, &ctx, &args).await
        });
        Running {
            cancel,
            task,
            started: Instant::now(),
        }
    }

    /// The registry's statistics now.
    pub async fn stats(&self) -> Result<Stats> {
        self.ctx
            .updates
            .stats()
            .await
            .map_err(|e| anyhow::anyhow!("stats: {e}"))
    }

    /// Waits until exactly `n` waits are parked in the registry.
    pub async fn waits_parked(&self, n: usize) -> Result<()> {
        eventually(&format!("{n} parked waits"), WAIT, || async {
            (self.stats().await.ok()?.waits == n).then_some(())
        })
        .await
    }

    /// Subscribes and returns the id, without waiting for anything.
    pub async fn subscribe(&self, args: Value) -> Result<String> {
        let v = self.ok("subscribe", args).await?;
        Ok(v["subscription"]["id"]
            .as_str()
            .context("subscription id")?
            .to_owned())
    }

    /// Subscribes, then waits until the registry has read the new subscription's starting
    /// point in every running session: a message landing before that counts as history, by
    /// contract, so a test sends nothing it expects delivered until then.
    pub async fn subscribe_settled(&self, args: Value) -> Result<String> {
        let id = self.subscribe(args).await?;
        eventually("the starting points read", WAIT, || async {
            (self.stats().await.ok()?.starting == 0).then_some(())
        })
        .await?;
        Ok(id)
    }

    /// The one entry `v["updates"]` holds for subscription `id`, if any.
    pub fn entry<'a>(v: &'a Value, id: &str) -> Option<&'a Value> {
        v["updates"]
            .as_array()?
            .iter()
            .find(|e| e["subscription"] == json!(id))
    }

    /// Drains subscription `id` in full mode with wait_for_updates until an event whose text
    /// is `marker` arrives; returns every event drained, oldest first.
    pub async fn drain_until(&self, id: &str, marker: &str) -> Result<Vec<Value>> {
        let deadline = Instant::now() + WAIT;
        let mut events = Vec::new();
        while Instant::now() < deadline {
            let v = self
                .ok(
                    "wait_for_updates",
                    json!({"id": id, "detail": "full", "limit": 500, "timeout": 5}),
                )
                .await?;
            if let Some(e) = Self::entry(&v, id) {
                events.extend(e["events"].as_array().cloned().unwrap_or_default());
            }
            if events.iter().any(|e| event_text(e) == Some(marker)) {
                return Ok(events);
            }
        }
        bail!("no event {marker:?} within {WAIT:?}; drained: {events:#?}")
    }
}

/// The text of a message event's payload (privmsg, notice, action).
pub fn event_text(event: &Value) -> Option<&str> {
    event["message"]["payload"]["text"].as_str()
}

/// The texts of message events, in order.
pub fn event_texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(event_text)
        .map(str::to_owned)
        .collect()
}

/// Channel specs for a session config.
pub fn channels(names: &[&str]) -> Vec<ChannelSpec> {
    names
        .iter()
        .map(|n| ChannelSpec {
            name: (*n).to_owned(),
            key: None,
        })
        .collect()
}

/// Waits until `session` is connected and a member of `channel` (so the server delivers the
/// channel's messages to it); returns the channel's buffer id as the tools spell it.
pub async fn joined(session: &SessionHandle, channel: &str) -> Result<String> {
    let reader = session.reader();
    let channel = channel.to_owned();
    eventually(&format!("membership of {channel}"), WAIT, || {
        let reader = reader.clone();
        let channel = channel.clone();
        async move {
            reader
                .read(move |v| {
                    if v.state() != ConnState::Connected {
                        return None;
                    }
                    let id = v.find_buffer(BufferKind::Channel, &channel)?;
                    let me = v.nick();
                    let members = v.members(id)?;
                    members
                        .iter()
                        .any(|m| m.nick == me)
                        .then(|| id.as_str().to_owned())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await
}

/// Waits until `session` stores a row whose text is `text` in the buffer named `name`; so
/// the session has handled it (the registry may not have collected it yet).
pub async fn stored(session: &SessionHandle, name: &str, text: &str) -> Result<()> {
    let reader = session.reader();
    let (name, text) = (name.to_owned(), text.to_owned());
    eventually(&format!("{text:?} stored in {name}"), WAIT, || {
        let reader = reader.clone();
        let (name, text) = (name.clone(), text.clone());
        async move {
            reader
                .read(move |v| {
                    let found = v.buffers().any(|b| {
                        b.name().eq_ignore_ascii_case(&name)
                            && b.since(0).any(|r| {
                                let mut hit = false;
                                r.payload.for_each_text(|t| hit = hit || t == text);
                                hit
                            })
                    });
                    found.then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await
}
