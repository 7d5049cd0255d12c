//! Injected fault (issue 19): a session actor made to fail, first by returning an error
//! (`crash_for_test`), then by panicking with the engine locked (`panic_for_test`); ractor
//! takes both down the same supervised path, and both are shown.
//!
//! Each time, the root supervisor restarts the actor; the session's buffers and a read_since
//! cursor taken before survive; a wait_for_updates parked on the session's channel and the
//! read tools called all through the restart answer within the request deadline; and a
//! second session in the same engine, in the same channel, never notices.
//!
//! One InspIRCd for the whole binary: the two faults run in turn in one test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use rete_actors::SessionHandle;
use rete_mcp::tools::ToolOutcome;
use serde_json::{json, Value};
use support::bot::say;
use support::faults::{Answered, Caller, EventLog, ANSWER_DEADLINE};
use support::live_tests_session::{eventually, session_config, WAIT};
use support::updates_tests_tools::{channels, event_texts, joined, stored, Updating};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg};

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The actor's handler returns an error.
    Error,
    /// The actor's handler panics while it holds the engine's lock.
    Panic,
}

impl Fault {
    fn inject(self, session: &SessionHandle) {
        match self {
            Fault::Error => session.crash_for_test(),
            Fault::Panic => session.panic_for_test(),
        }
    }
}

fn texts(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["payload"]["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

struct World {
    f: Arc<Updating>,
    bot: Bot,
    hit: SessionHandle,
    bystander: SessionHandle,
    buffer: String,
    bystander_buffer: String,
    sub: String,
    bystander_events: EventLog,
}

/// One fault, `round` being its number (1, 2, …) and so the restarts expected after it.
async fn round(w: &mut World, fault: Fault, round: u32) -> Result<()> {
    // Where the round is, for the output of a run that fails or is ended.
    let started = Instant::now();
    let step = |what: &str| {
        eprintln!(
            "round {round} ({fault:?}): {what} at {:?}",
            started.elapsed()
        )
    };
    let f = w.f.clone();
    let before: Vec<String> = (1..=3).map(|i| format!("before {round}.{i}")).collect();
    for text in &before {
        say(&mut w.bot, "#crash", text).await?;
    }
    stored(&w.hit, "#crash", &before[2]).await?;
    stored(&w.bystander, "#crash", &before[2]).await?;
    let page = f
        .ok("read_since", json!({"buffer": w.buffer, "limit": 500}))
        .await?;
    let cursor = page["cursor"].as_str().context("cursor")?.to_owned();
    let held_before = f
        .ok("read_messages", json!({"buffer": w.buffer, "limit": 500}))
        .await?;

    step("said and read before the fault");
    // Empty the inbox up to the last line said, then park a wait on it.
    f.drain_until(&w.sub, &before[2]).await?;
    let wait = f.spawn(
        "wait_for_updates",
        json!({"id": w.sub, "detail": "full", "timeout": 20}),
    );
    f.waits_parked(1).await?;
    let hit_id = w.hit.id().as_str().to_owned();
    let caller = Caller::start(
        f.clone(),
        vec![
            (
                "read_since",
                json!({"buffer": w.buffer, "cursor": cursor, "limit": 50}),
            ),
            ("read_messages", json!({"buffer": w.buffer, "limit": 10})),
            ("list_buffers", json!({"session": hit_id})),
            ("list_members", json!({"buffer": w.buffer})),
            ("list_sessions", json!({})),
            (
                "search_messages",
                json!({"query": "before", "sessions": [hit_id], "limit": 5}),
            ),
        ],
    );

    // list_sessions on its own too, so some of its calls land while no actor runs.
    let lister = Caller::start(f.clone(), vec![("list_sessions", json!({}))]);

    step("wait parked; injecting");
    fault.inject(&w.hit);
    eventually(
        &format!("restart {round} after {fault:?}"),
        WAIT,
        || async { (w.hit.restarts() == round).then_some(()) },
    )
    .await?;
    step("restarted");
    let again = joined(&w.hit, "#crash").await?;
    assert_eq!(
        again, w.buffer,
        "the channel's buffer id changed across the restart"
    );
    // The restarted actor's new connection joins again (the old one was closed with it).
    w.bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "JOIN"
                    && m.source_nick() == Some("crashme")
                    && m.param(0).eq_ignore_ascii_case("#crash")
            },
            WAIT,
        )
        .await?;
    let after = format!("after {round}");
    say(&mut w.bot, "#crash", &after).await?;
    stored(&w.hit, "#crash", &after).await?;
    step("said after; finishing the callers");
    let mut answers = caller.finish().await?;
    answers.extend(lister.finish().await?);

    step("callers done");
    // The wait parked before the fault answered, with a result, in time.
    let outcome = tokio::time::timeout(ANSWER_DEADLINE, wait.task)
        .await
        .context("the parked wait did not answer in time")??;
    let ToolOutcome::Ok(woken) = outcome else {
        panic!("the parked wait answered {outcome:?}");
    };
    let woken_texts = Updating::entry(&woken, &w.sub)
        .and_then(|e| e["events"].as_array())
        .map(|e| event_texts(e))
        .unwrap_or_default();
    // Every read through the restart answered with a result: the session's ids are stable
    // across restarts, so none is ever `unknown`.
    let refused: Vec<&Answered> = answers
        .iter()
        .filter(|a| !matches!(a.outcome, ToolOutcome::Ok(_)))
        .collect();
    let mut kinds: Vec<String> = refused
        .iter()
        .map(|a| format!("{} → {:?}", a.call, a.outcome))
        .collect();
    kinds.sort();
    kinds.dedup();
    assert!(
        refused.is_empty(),
        "{} of {} reads through the {fault:?} restart did not answer with a result: {kinds:#?}",
        refused.len(),
        answers.len()
    );

    // And list_sessions never left the restarting session out.
    let unlisted = answers
        .iter()
        .filter(|a| a.call.starts_with("list_sessions"))
        .filter(|a| match &a.outcome {
            ToolOutcome::Ok(v) => !v["sessions"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["id"] == json!(hit_id))),
            _ => true,
        })
        .count();
    assert_eq!(
        unlisted, 0,
        "list_sessions left the session out through the {fault:?} restart"
    );

    // The cursor from before reads on: what came after it, none of what came before.
    let since = f
        .ok(
            "read_since",
            json!({"buffer": w.buffer, "cursor": cursor, "limit": 500}),
        )
        .await?;
    let since_texts = texts(&since["messages"]);
    assert!(since_texts.contains(&after), "{since_texts:?}");
    assert!(
        since_texts.iter().all(|t| !t.starts_with("before ")),
        "{since_texts:?}"
    );
    // And the rows held before are held as they were.
    let held_after = f
        .ok("read_messages", json!({"buffer": w.buffer, "limit": 500}))
        .await?;
    let (old, new) = (
        held_before["messages"].as_array().context("messages")?,
        held_after["messages"].as_array().context("messages")?,
    );
    assert_eq!(
        &new[..old.len()],
        &old[..],
        "rows held before the {fault:?} changed"
    );
    // The subscription collects what came after: the wait took it, or it is still pending.
    if !woken_texts.contains(&after) {
        let drained = f
            .drain_until(&w.sub, &after)
            .await
            .with_context(|| format!("the parked wait answered {woken}"))?;
        assert!(!drained.is_empty());
    }

    // The bystander never noticed, and heard every line.
    stored(&w.bystander, "#crash", &after).await?;
    assert_eq!(
        w.bystander_events.disturbances(),
        vec![],
        "the bystander noticed the {fault:?}"
    );
    assert_eq!(w.bystander.restarts(), 0);
    let heard = f
        .ok(
            "read_since",
            json!({"buffer": w.bystander_buffer, "limit": 500}),
        )
        .await?;
    let heard = texts(&heard["messages"]);
    for text in before.iter().chain([&after]) {
        assert!(
            heard.contains(text),
            "the bystander missed {text}: {heard:?}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_panicking_session_actor_is_restarted_unnoticed() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Arc::new(Updating::start().await?);
    let mut config = session_config("crashme");
    config.channels = channels(&["#crash"]);
    let hit = f.add(config, ircd.port()).await?;
    let mut config = session_config("bystander");
    config.channels = channels(&["#crash"]);
    let bystander = f.add(config, ircd.port()).await?;
    let mut bot =
        Bot::connect_with(BotConfig::new(ircd.port(), "crashbot").caps(&["echo-message"])).await?;
    bot.join("#crash").await?;
    let (buffer, bystander_buffer) =
        tokio::try_join!(joined(&hit, "#crash"), joined(&bystander, "#crash"))?;
    // The bot knows both sessions are in: each joined before it (its NAMES lists them) or
    // after (it saw the JOIN), in either order.
    for nick in ["crashme", "bystander"] {
        let joined_line = |l: &str| {
            let m = Msg::parse(l);
            let listed = m.command == "353"
                && m.param(3)
                    .split(' ')
                    .any(|e| e.trim_start_matches(['@', '+']) == nick);
            listed || (m.command == "JOIN" && m.source_nick() == Some(nick))
        };
        if !bot.lines().iter().any(|l| joined_line(l)) {
            bot.wait_for(joined_line, WAIT).await?;
        }
    }
    let bystander_events = EventLog::start(&f.rete, bystander.id().clone());
    let sub = f.subscribe_settled(json!({"buffers": [buffer]})).await?;
    let mut world = World {
        f,
        bot,
        hit,
        bystander,
        buffer,
        bystander_buffer,
        sub,
        bystander_events,
    };
    round(&mut world, Fault::Error, 1).await?;
    round(&mut world, Fault::Panic, 2).await?;
    Ok(())
}
