//! Injected fault (issue 19): the IRC server killed mid-burst and restarted on the same port.
//!
//! A bot sends a channel an endless burst; the server is killed (SIGKILL) while it flows and
//! started again on the same port. The session reconnects and rejoins; the rows it held,
//! the burst's included, are intact and in order; a read_since cursor and a subscription
//! taken before the kill still work after it; tool calls made all through the outage answer
//! within the request deadline with a result or a contract error; and a second session, on
//! another server, never notices: no state change, and its parked wait answers its own
//! channel's message only.
//!
//! Tools are called through `ToolBox::call` with a real subscription registry
//! (`tests/support/updates_tests_tools.rs`), as a request would call them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context, Result};
use rete_engine::event::ConnState;
use rete_mcp::tools::ToolOutcome;
use serde_json::{json, Value};
use support::bot::echo_bot;
use support::bot::say;
use support::faults::{call_in_time, Caller, EventLog};
use support::live_tests_session::{eventually, session_config, WAIT};
use support::updates_tests_tools::{channels, event_texts, joined, stored, Updating};
use support::{Bot, Inspircd, InspircdConfig, DEFAULT_TIMEOUT};

/// Lines the burst sends between two waits for the server's echo (so the bot's socket
/// never fills while it does not read).
const BURST_CHUNK: usize = 50;

/// Sends `burst <n>` lines to `channel` until the connection fails (the server is killed):
/// a burst that is always mid-flight when the kill lands. Returns how many it sent.
fn burst(mut bot: Bot, channel: &'static str) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut n = 0;
        loop {
            for _ in 0..BURST_CHUNK {
                if bot.privmsg(channel, &format!("burst {n}")).await.is_err() {
                    return n;
                }
                n += 1;
            }
            let last = format!(" {channel} :burst {}", n - 1);
            if bot
                .wait_for(move |l| l.ends_with(&last), DEFAULT_TIMEOUT)
                .await
                .is_err()
            {
                return n;
            }
        }
    })
}

/// Every message read_since returns after `cursor`, following its cursors to the end, and
/// the last cursor.
async fn since_all(
    f: &Updating,
    buffer: &str,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, String)> {
    let mut out = Vec::new();
    let mut cursor = cursor.map(str::to_owned);
    loop {
        let mut args = json!({"buffer": buffer, "limit": 500});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let v = f.ok("read_since", args).await?;
        out.extend(v["messages"].as_array().cloned().unwrap_or_default());
        let next = v["cursor"].as_str().context("cursor")?.to_owned();
        cursor = Some(next.clone());
        if v["truncated"] == json!(false) {
            return Ok((out, next));
        }
    }
}

/// The text of a message object's payload.
fn text_of(m: &Value) -> Option<&str> {
    m["payload"]["text"].as_str()
}

/// The burst numbers among `messages`, in the order given.
fn burst_numbers(messages: &[Value]) -> Vec<usize> {
    messages
        .iter()
        .filter_map(text_of)
        .filter_map(|t| t.strip_prefix("burst ")?.parse().ok())
        .collect()
}

/// The session's state as list_sessions reports it.
async fn state_of(f: &Updating, session: &str) -> Result<String> {
    let v = f.ok("list_sessions", json!({})).await?;
    let s = v["sessions"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == json!(session)))
        .context("the session is listed")?;
    Ok(s["state"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_burst_and_restarted() -> Result<()> {
    let (mut killed, calm) = tokio::try_join!(
        Inspircd::start(InspircdConfig::new()),
        Inspircd::start(InspircdConfig::new())
    )?;
    let f = Arc::new(Updating::start().await?);

    let mut config = session_config("outage");
    config.channels = channels(&["#burst"]);
    let hit = f.add(config, killed.port()).await?;
    let mut config = session_config("bystander");
    config.channels = channels(&["#calm"]);
    let other = f.add(config, calm.port()).await?;
    let (hit_id, other_id) = (hit.id().as_str().to_owned(), other.id().as_str().to_owned());
    let (mut burster, mut calmbot) = tokio::try_join!(
        echo_bot(killed.port(), "burster"),
        echo_bot(calm.port(), "calmbot")
    )?;
    burster.join("#burst").await?;
    calmbot.join("#calm").await?;
    let (burst_buf, calm_buf) = tokio::try_join!(joined(&hit, "#burst"), joined(&other, "#calm"))?;
    let other_events = EventLog::start(&f.rete, other.id().clone());

    // Before: a cursor after three messages, and a subscription on each channel.
    for text in ["before 1", "before 2", "before 3"] {
        say(&mut burster, "#burst", text).await?;
    }
    stored(&hit, "#burst", "before 3").await?;
    let first = f
        .ok("read_since", json!({"buffer": burst_buf, "limit": 500}))
        .await?;
    let cursor_before = first["cursor"].as_str().context("cursor")?.to_owned();
    let sub_burst = f.subscribe_settled(json!({"buffers": [burst_buf]})).await?;
    let sub_calm = f.subscribe_settled(json!({"buffers": [calm_buf]})).await?;
    // The other session's wait parks now and must answer only its own channel's message.
    let calm_wait = f.spawn(
        "wait_for_updates",
        json!({"id": sub_calm, "detail": "full", "timeout": 20}),
    );
    f.waits_parked(1).await?;

    // Tool calls in flight all through the outage.
    let caller = Caller::start(
        f.clone(),
        vec![
            ("list_sessions", json!({})),
            ("list_buffers", json!({"session": hit_id})),
            (
                "read_since",
                json!({"buffer": burst_buf, "cursor": cursor_before, "limit": 20}),
            ),
            ("read_messages", json!({"buffer": burst_buf, "limit": 20})),
            ("list_members", json!({"buffer": burst_buf})),
            (
                "search_messages",
                json!({"query": "burst", "sessions": [hit_id], "limit": 5}),
            ),
            ("read_updates", json!({"id": sub_burst, "peek": true})),
            (
                "wait_for_updates",
                json!({"id": sub_burst, "peek": true, "timeout": 1}),
            ),
        ],
    );

    // The burst, and the kill while it flows.
    let sender = burst(burster, "#burst");
    stored(&hit, "#burst", "burst 300").await?;
    killed.stop();
    let sent = sender.await?;
    eventually("the session to notice the outage", WAIT, || async {
        let state = state_of(&f, &hit_id).await.ok()?;
        (state == "reconnecting" || state == "connecting").then_some(())
    })
    .await?;
    // Calls made while the server is down answer too.
    for (tool, args) in [
        ("list_buffers", json!({"session": hit_id})),
        (
            "read_since",
            json!({"buffer": burst_buf, "cursor": cursor_before, "limit": 500}),
        ),
        ("read_updates", json!({"id": sub_burst, "peek": true})),
    ] {
        let a = call_in_time(&f, tool, args).await?;
        assert!(
            matches!(a.outcome, ToolOutcome::Ok(_)),
            "{a:?} while the server is down"
        );
    }

    killed.restart().await?;
    let burst_again = joined(&hit, "#burst").await?;
    assert_eq!(
        burst_again, burst_buf,
        "the channel's buffer id changed across the reconnect"
    );
    let mut burster = echo_bot(killed.port(), "burster").await?;
    burster.join("#burst").await?;
    say(&mut burster, "#burst", "after the restart").await?;
    stored(&hit, "#burst", "after the restart").await?;
    let answers = caller.finish().await?;
    assert!(
        answers.len() >= 8,
        "only {} calls were made through the outage",
        answers.len()
    );

    // The cursor taken before the kill reads everything after it, in order: the burst as far
    // as it got (each line once, none skipped), then the message after the restart.
    let (after, _) = since_all(&f, &burst_buf, Some(&cursor_before)).await?;
    let numbers = burst_numbers(&after);
    assert!(
        numbers.len() > 300,
        "{} burst lines after the cursor",
        numbers.len()
    );
    assert!(numbers.len() <= sent, "more burst lines than were sent");
    assert_eq!(
        numbers,
        (0..numbers.len()).collect::<Vec<_>>(),
        "the burst's rows are not whole and in order"
    );
    let texts: Vec<&str> = after.iter().filter_map(text_of).collect();
    assert!(texts.iter().all(|t| !t.starts_with("before ")), "{texts:?}");
    assert_eq!(texts.last(), Some(&"after the restart"), "{texts:?}");
    let seqs: Vec<u64> = after.iter().filter_map(|m| m["seq"].as_u64()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs not increasing: {seqs:?}"
    );
    // The rows from before the cursor are still held, as they were, ahead of the rest.
    let (held, _) = since_all(&f, &burst_buf, None).await?;
    let first = first["messages"].as_array().context("messages")?;
    assert_eq!(
        &held[..first.len()],
        &first[..],
        "rows held before the kill changed"
    );
    assert_eq!(held.len(), first.len() + after.len());

    // The subscription made before the kill still collects: the message after the restart
    // reaches its inbox.
    let drained = f.drain_until(&sub_burst, "after the restart").await?;
    assert!(!event_texts(&drained).is_empty());

    // The other session never noticed: its wait is still parked, then answers its own
    // channel's message, and its state never changed.
    assert!(
        !calm_wait.task.is_finished(),
        "the other session's wait ended during the outage"
    );
    say(&mut calmbot, "#calm", "calm after").await?;
    let outcome = tokio::time::timeout(support::faults::ANSWER_DEADLINE, calm_wait.task).await??;
    let ToolOutcome::Ok(v) = outcome else {
        panic!("the other session's wait answered {outcome:?}");
    };
    let entry = Updating::entry(&v, &sub_calm).context("the calm subscription's entry")?;
    let calm_texts: HashSet<String> = event_texts(entry["events"].as_array().context("events")?)
        .into_iter()
        .collect();
    assert_eq!(calm_texts, HashSet::from(["calm after".to_owned()]));
    assert_eq!(
        other_events.disturbances(),
        vec![],
        "the other session noticed"
    );
    assert_eq!(state_of(&f, &other_id).await?, "connected");
    let other_state = other.reader().read(|v| v.state()).await?;
    assert_eq!(other_state, ConnState::Connected);
    Ok(())
}
