//! Raw and log subscriptions called through `ToolBox::call` against a real session on a real
//! InspIRCd, with a debug `Capture` attached to the engine's raw tap and the log ring's layer
//! installed, and a registry reading that capture: raw and log events delivered within the
//! poll interval in the contract's shapes, the filters, a secret-bearing raw line and log line
//! withheld and counted, suppressed past 200 a minute, stalled with no session running, and
//! debug off pausing them (`paused`, pending raw events moved into `dropped`, no event ending
//! a wait) while message events stay, a reconnected session's new tap read from its start, and
//! each starting at its ring's end when subscribe answers: a line right after it delivered, a
//! flood right after it wholly delivered or counted, a ring that overtakes it evicted.

// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rete_actors::{Direction, Rete, ReteOptions, SessionHandle};
use rete_engine::session::SessionConfig;
use rete_mcp::debug::Capture;
use rete_mcp::tools::{Args, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::debug_tools;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::updates_tests_tools::{channels, joined};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, DEFAULT_TIMEOUT};

const SERVER_PASSWORD: &str = "srvpass-sub-4321";

/// An engine, a switched-on capture on its raw tap, and a registry reading that capture.
struct Fixture {
    rete: Arc<Rete>,
    capture: Capture,
    ctx: ToolContext,
}

impl Fixture {
    async fn start() -> Result<Fixture> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let capture = debug_tools::capture(&rete, true).await?;
        let updates = debug_tools::updates(&rete, &capture).await?;
        let ctx = debug_tools::debug_context(&rete, capture.clone(), updates);
        Ok(Fixture { rete, capture, ctx })
    }

    async fn add(&self, config: SessionConfig, port: u16) -> Result<SessionHandle> {
        Ok(self.rete.add_session(spec(config, plain(port))).await?)
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call(tool, &self.ctx, &args).await
    }

    async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Ok(v) => Ok(v),
            other => bail!("{tool}({args}) failed: {other:?}"),
        }
    }

    async fn err(&self, tool: &str, args: Value) -> Result<String> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("{tool}({args}) did not fail: {other:?}"),
        }
    }

    async fn subscribe(&self, args: Value) -> Result<(String, Value)> {
        let v = self.ok("subscribe", args).await?;
        let id = v["subscription"]["id"].as_str().context("id")?.to_owned();
        Ok((id, v["subscription"]["filters"].clone()))
    }

    /// One wait_for_updates in full mode on `id`: its entry (None when it timed out).
    async fn wait_full(&self, id: &str, timeout: u64) -> Result<Option<Value>> {
        let v = self
            .ok(
                "wait_for_updates",
                json!({"id": id, "detail": "full", "limit": 500, "timeout": timeout}),
            )
            .await?;
        if v.get("timed_out").is_some() {
            return Ok(None);
        }
        Ok(v["updates"].as_array().and_then(|u| u.first()).cloned())
    }

    /// Reads `id` in full mode until `done` holds for everything read so far: the events and
    /// the summed counters, each read once.
    async fn drain_until(
        &self,
        id: &str,
        mut done: impl FnMut(&Drained) -> bool,
    ) -> Result<Drained> {
        let mut got = Drained::default();
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done(&got) {
            if tokio::time::Instant::now() > deadline {
                bail!("not drained in time: {got:?}");
            }
            if let Some(entry) = self.wait_full(id, 2).await? {
                got.add(&entry);
            }
        }
        Ok(got)
    }
}

/// What reads of one subscription returned, summed.
#[derive(Debug, Default)]
struct Drained {
    events: Vec<Value>,
    withheld: u64,
    suppressed: u64,
    dropped: u64,
    evicted: bool,
}

impl Drained {
    fn add(&mut self, entry: &Value) {
        self.events
            .extend(entry["events"].as_array().cloned().unwrap_or_default());
        for (key, n) in [
            ("withheld", &mut self.withheld),
            ("suppressed", &mut self.suppressed),
            ("dropped", &mut self.dropped),
        ] {
            *n += entry[key].as_u64().unwrap_or(0);
        }
        self.evicted |= entry["evicted"] == json!(true);
    }

    /// Every line accounted for: delivered, or counted in suppressed, withheld or dropped.
    fn accounted(&self) -> u64 {
        self.events.len() as u64 + self.suppressed + self.withheld + self.dropped
    }

    fn texts(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                e["line"]["line"]
                    .as_str()
                    .or(e["line"]["text"].as_str())
                    .map(str::to_owned)
            })
            .collect()
    }

    fn has(&self, needle: &str) -> bool {
        self.texts().iter().any(|t| t.contains(needle))
    }
}

/// Sends probes until one reaches `id`: its starting point is taken, so lines from now on are
/// delivered.
async fn until_started(f: &Fixture, id: &str, mut probe: impl AsyncProbe) -> Result<Drained> {
    let mut got = Drained::default();
    for i in 0..20 {
        probe.send(i).await?;
        if let Some(entry) = f.wait_full(id, 2).await? {
            got.add(&entry);
            if !got.events.is_empty() {
                return Ok(got);
            }
        }
    }
    bail!("no event reached {id}")
}

trait AsyncProbe {
    async fn send(&mut self, i: usize) -> Result<()>;
}

struct BotProbe<'a>(&'a mut Bot, &'a str);

impl AsyncProbe for BotProbe<'_> {
    async fn send(&mut self, i: usize) -> Result<()> {
        self.0.privmsg(self.1, &format!("probe {i}")).await
    }
}

struct LogProbe;

impl AsyncProbe for LogProbe {
    async fn send(&mut self, i: usize) -> Result<()> {
        tracing::warn!(target: "rete::network", "log probe {i}");
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_subscriptions_deliver_filter_withhold_suppress_and_pause() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().password(SERVER_PASSWORD)).await?;
    let f = Fixture::start().await?;
    let mut config = session_config("subme");
    config.password = Some(SERVER_PASSWORD.to_owned());
    config.channels = channels(&["#sub"]);
    let session = f.add(config, ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    joined(&session, "#sub").await?;
    let mut bot =
        Bot::connect_with(BotConfig::new(ircd.port(), "subbot").password(SERVER_PASSWORD)).await?;
    bot.join("#sub").await?;

    // Normalised filters; a raw-only subscription and a message one side by side.
    let (raw_in, filters) = f
        .subscribe(
            json!({"raw": {"commands": ["privmsg", " ", "PRIVMSG"], "direction": "in",
                                  "sessions": [sid.to_lowercase()]}}),
        )
        .await?;
    assert_eq!(
        filters,
        json!({"raw": {"commands": ["PRIVMSG"], "direction": "in", "sessions": [sid]}})
    );
    let (raw_out, _) = f
        .subscribe(json!({"raw": {"direction": "out", "commands": ["PONG"]}}))
        .await?;
    let (messages, _) = f.subscribe(json!({"sessions": [sid]})).await?;

    until_started(&f, &raw_in, BotProbe(&mut bot, "#sub")).await?;
    // Delivered within the poll interval, in the contract's shape.
    bot.privmsg("#sub", "hello raw").await?;
    let got = f.drain_until(&raw_in, |d| d.has("hello raw")).await?;
    let event = got
        .events
        .iter()
        .find(|e| {
            e["line"]["line"]
                .as_str()
                .is_some_and(|l| l.contains("hello raw"))
        })
        .context("the event")?;
    assert_eq!(event["type"], "raw", "{event}");
    assert_eq!(event["session"], json!(sid), "{event}");
    let line = event["line"].as_object().context("line")?;
    let mut keys: Vec<&str> = line.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["dir", "line", "seq", "time", "untrusted"], "{event}");
    assert_eq!(line["dir"], "in");
    assert_eq!(line["untrusted"], true);
    assert!(
        got.events.iter().all(|e| e["line"]["dir"] == "in"
            && e["line"]["line"]
                .as_str()
                .is_some_and(|l| l.contains(" PRIVMSG "))),
        "{:?}",
        got.texts()
    );

    // A line holding the session's secret is withheld and counted, never delivered.
    bot.privmsg("#sub", &format!("the password is {SERVER_PASSWORD}"))
        .await?;
    bot.privmsg("#sub", "after the secret").await?;
    let got = f
        .drain_until(&raw_in, |d| d.has("after the secret"))
        .await?;
    assert_eq!(got.withheld, 1, "{got:?}");
    assert!(!got.has(SERVER_PASSWORD), "{got:?}");

    // The out-direction subscription sees only PONGs we send (answering the probe below).
    let taps = f.capture.raw().context("attached")?;
    taps.observer()
        .on_raw(session.id(), Direction::Out, "PONG :subprobe");
    taps.observer()
        .on_raw(session.id(), Direction::In, "PONG :not-this-one");
    let got = f.drain_until(&raw_out, |d| d.has("subprobe")).await?;
    assert!(
        got.texts()
            .iter()
            .all(|t| t.starts_with("PONG") && !t.contains("not-this-one")),
        "{got:?}"
    );

    // Past 200 in a minute, the rest are counted in suppressed. The probes and messages above
    // count toward the same minute.
    let flood = 250;
    for i in 0..flood {
        taps.observer().on_raw(
            session.id(),
            Direction::In,
            &format!(":x PRIVMSG #sub :flood {i}"),
        );
    }
    let got = f
        .drain_until(&raw_in, |d| {
            d.events.iter().filter(|e| is_flood(e)).count() as u64 + d.suppressed >= flood
        })
        .await?;
    let delivered = got.events.iter().filter(|e| is_flood(e)).count() as u64;
    assert!(got.suppressed > 0 && delivered < 200, "{delivered} {got:?}");
    assert_eq!(delivered + got.suppressed, flood, "{got:?}");

    // The digest counts raw events per subscription, beside its (empty) buffers.
    bot.privmsg("#sub", "for the digest").await?;
    let digest = eventually("a digest with raw", WAIT, || async {
        let v = f
            .ok("read_updates", json!({"id": messages, "peek": true}))
            .await
            .ok()?;
        v["updates"].as_array()?.first().cloned()
    })
    .await?;
    assert!(
        digest.get("raw").is_none(),
        "a message subscription: {digest}"
    );

    // Debug off: pending raw events move into dropped at the next read or list; the
    // subscriptions stay, active and paused; message events stay. (raw_in has used its
    // minute, so raw_out holds the pending event.)
    taps.observer()
        .on_raw(session.id(), Direction::Out, "PONG :pending at debug off");
    eventually("a raw event pending", WAIT, || async {
        let v = f
            .ok("read_updates", json!({"id": raw_out, "peek": true}))
            .await
            .ok()?;
        let entry = v["updates"].as_array()?.first()?.clone();
        (entry["raw"].as_u64()? > 0 && entry["buffers"] == json!([])).then_some(())
    })
    .await?;
    f.capture.switch(false);
    let mut off = f.ctx.clone();
    off.settings.debug = false;
    let call_off = |tool: &'static str, args: Value| {
        let off = off.clone();
        async move {
            let args = Args::from_request(Some(&args)).expect("object");
            ToolBox::new().call(tool, &off, &args).await
        }
    };
    let ToolOutcome::Ok(list) = call_off("list_subscriptions", json!({})).await else {
        bail!("list_subscriptions failed");
    };
    let subs = list["subscriptions"].as_array().context("list")?;
    let entry = |id: &str| subs.iter().find(|s| s["id"] == json!(id)).cloned();
    let listed = entry(&raw_out).context("raw_out listed")?;
    assert_eq!(listed["paused"], "debug off", "{listed}");
    assert_eq!(listed["state"], "active", "{listed}");
    assert_eq!(listed["pending"], 0, "{listed}");
    assert!(listed["dropped"].as_u64() >= Some(1), "{listed}");
    let message_entry = entry(&messages).context("messages listed")?;
    assert!(message_entry.get("paused").is_none(), "{message_entry}");
    assert!(
        message_entry["pending"].as_u64() > Some(0),
        "{message_entry}"
    );
    // No raw event is read or ends a wait while debug is off.
    taps.observer()
        .on_raw(session.id(), Direction::Out, "PONG :while debug is off");
    let ToolOutcome::Ok(waited) = call_off(
        "wait_for_updates",
        json!({"id": raw_out, "detail": "full", "timeout": 2}),
    )
    .await
    else {
        bail!("wait failed");
    };
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert_eq!(
        call_off("subscribe", json!({"raw": {}})).await,
        ToolOutcome::Error("debug tools are disabled".into())
    );
    assert_eq!(
        f.err("subscribe", json!({"raw": {"direction": "sideways"}}))
            .await?,
        "invalid direction: expected \"in\" or \"out\""
    );
    Ok(())
}

/// Issue 37: a raw subscription starts at the tap's end when subscribe answers, so the first
/// line after it is delivered, and every line of a flood right after it is delivered or
/// counted; a ring that overtakes it says evicted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_subscription_accounts_for_every_line_from_subscribe_on() -> Result<()> {
    const FLOOD: u64 = 1_000;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Fixture::start().await?;
    let mut config = session_config("countme");
    config.channels = channels(&["#count"]);
    let session = f.add(config, ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    joined(&session, "#count").await?;
    let mut bot =
        Bot::connect_with(BotConfig::new(ircd.port(), "countbot").caps(&["echo-message"])).await?;
    bot.join("#count").await?;
    let filter = json!({"raw": {"sessions": [sid], "commands": ["PRIVMSG"], "direction": "in"}});

    // One line right after subscribe answered: delivered, with no probe to start it first.
    let (single, _) = f.subscribe(filter.clone()).await?;
    bot.privmsg("#count", "the first line").await?;
    let got = f.drain_until(&single, |d| d.has("the first line")).await?;
    assert_eq!(got.texts().len(), 1, "{got:?}");
    f.ok("unsubscribe", json!({"id": single})).await?;

    // A flood right after subscribe: every line delivered or counted, the first 200 in order.
    let (id, _) = f.subscribe(filter).await?;
    let texts: Vec<String> = (0..FLOOD).map(|i| format!("flood {i}")).collect();
    for chunk in texts.chunks(200) {
        for text in chunk {
            bot.privmsg("#count", text).await?;
        }
        let last = format!("#count :{}", chunk[chunk.len() - 1]);
        bot.wait_for(move |l| l.ends_with(&last), DEFAULT_TIMEOUT)
            .await?;
    }
    let got = f.drain_until(&id, |d| d.accounted() >= FLOOD).await?;
    assert_eq!(got.accounted(), FLOOD, "{got:?}");
    let delivered: Vec<String> = got
        .texts()
        .iter()
        .filter_map(|t| t.split(" :").last().map(str::to_owned))
        .collect();
    assert_eq!(delivered, texts[..200], "the first 200, in order");
    assert_eq!(
        got.suppressed,
        FLOOD - 200,
        "every line past the cap: {got:?}"
    );
    assert_eq!((got.withheld, got.dropped), (0, 0), "{got:?}");
    assert!(!got.evicted, "{got:?}");
    f.ok("unsubscribe", json!({"id": id})).await?;

    // A burst the tap cannot hold between two polls: the subscription hears it was overtaken.
    // Three rings' worth, so the ring overtakes it even if a poll runs during the burst.
    let (overtaken, _) = f.subscribe(json!({"raw": {"sessions": [sid]}})).await?;
    let taps = f.capture.raw().context("attached")?;
    for i in 0..3 * 5_000 + 1 {
        taps.observer().on_raw(
            session.id(),
            Direction::In,
            &format!(":x PRIVMSG #count :burst {i}"),
        );
    }
    f.drain_until(&overtaken, |d| d.evicted).await?;
    Ok(())
}

fn is_flood(e: &Value) -> bool {
    e["line"]["line"]
        .as_str()
        .is_some_and(|l| l.contains(":flood "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_subscriptions_stall_deliver_filter_and_withhold() -> Result<()> {
    tracing::subscriber::set_global_default(rete_mcp::debug::log::subscriber())
        .expect("no other global subscriber in this test binary");
    let ircd = Inspircd::start(InspircdConfig::new().password(SERVER_PASSWORD)).await?;
    let f = Fixture::start().await?;

    // With no session running there is nothing to scan against: stalled.
    let (warnings, filters) = f
        .subscribe(json!({"log": {"min_level": "warning"}}))
        .await?;
    assert_eq!(filters, json!({"log": {}}));
    let stalled = eventually("stalled", WAIT, || async {
        let v = f
            .ok("read_updates", json!({"id": warnings, "peek": true}))
            .await
            .ok()?;
        let entry = v["updates"].as_array()?.first()?.clone();
        (entry["stalled"] == json!(true)).then_some(entry)
    })
    .await?;
    assert!(stalled.get("log").is_none(), "{stalled}");

    let mut config = session_config("logsub");
    config.password = Some(SERVER_PASSWORD.to_owned());
    let _session = f.add(config, ircd.port()).await?;
    let (auth_errors, filters) = f
        .subscribe(json!({"log": {"min_level": "error", "categories": ["auth", "auth"]}}))
        .await?;
    assert_eq!(
        filters,
        json!({"log": {"categories": ["auth"], "min_level": "error"}})
    );
    // With a session running its start was read when subscribe answered: the next line is
    // delivered, with no probe first. (The first one's was not, with nothing to scan against:
    // it is taken by the first poll that can scan.)
    tracing::error!(target: "rete::auth", "right after subscribe");
    let got = f
        .drain_until(&auth_errors, |d| d.has("right after subscribe"))
        .await?;
    assert_eq!(got.texts().len(), 1, "{got:?}");
    until_started(&f, &warnings, LogProbe).await?;

    tracing::warn!(target: "rete::network", "a warning for the subscription");
    tracing::info!(target: "rete::network", "an info line below the level");
    tracing::warn!(target: "rete::network", "leaked {SERVER_PASSWORD} here");
    tracing::error!(target: "rete::auth", "an auth error");
    tracing::warn!(target: "rete::network", "the last warning");
    let got = f
        .drain_until(&warnings, |d| d.has("the last warning"))
        .await?;
    let event = got
        .events
        .iter()
        .find(|e| {
            e["line"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("a warning for"))
        })
        .context("the warning")?;
    assert_eq!(event["type"], "log", "{event}");
    assert!(event.get("session").is_none(), "{event}");
    let line = event["line"].as_object().context("line")?;
    let mut keys: Vec<&str> = line.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["category", "level", "seq", "text", "time", "untrusted"],
        "{event}"
    );
    assert_eq!(line["level"], "warning");
    assert_eq!(line["category"], "network");
    assert!(got.has("an auth error"), "{got:?}");
    assert!(!got.has("below the level"), "{got:?}");
    assert!(!got.has(SERVER_PASSWORD), "{got:?}");
    assert_eq!(got.withheld, 1, "{got:?}");

    let got = f
        .drain_until(&auth_errors, |d| d.has("an auth error"))
        .await?;
    assert!(
        got.events
            .iter()
            .all(|e| e["line"]["category"] == "auth" && e["line"]["level"] == "error"),
        "{got:?}"
    );
    // A subscription with only log matches no messages: nothing but log events arrived.
    assert!(got.events.iter().all(|e| e["type"] == "log"), "{got:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_subscription_reads_a_reconnected_sessions_new_tap_from_its_start() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Fixture::start().await?;
    let mut config = session_config("recsub");
    config.channels = channels(&["#rec"]);
    let session = f.add(config, ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    joined(&session, "#rec").await?;
    let mut bot = Bot::connect_with(BotConfig::new(ircd.port(), "recbot")).await?;
    bot.join("#rec").await?;
    let (id, _) = f.subscribe(json!({"raw": {"sessions": [sid]}})).await?;
    let before = until_started(&f, &id, BotProbe(&mut bot, "#rec")).await?;
    let last_seq = |d: &Drained| d.events.last().and_then(|e| e["line"]["seq"].as_u64());
    let old = last_seq(&before).context("a seq")?;
    assert!(old > 1, "{:?}", before.texts());

    // The server goes away and comes back: the session reconnects, and its lines are a new tap,
    // numbered from 1 again, which the subscription reads from its start (not from the old
    // tap's position, which would skip every line up to seq `old`).
    ircd.restart().await?;
    let registered = |d: &Drained| d.has(" 001 recsub ");
    let after = f.drain_until(&id, registered).await?;
    let seqs: Vec<u64> = after
        .events
        .iter()
        .filter_map(|e| e["line"]["seq"].as_u64())
        .collect();
    let start = seqs
        .iter()
        .position(|&s| s == 1)
        .with_context(|| format!("no seq 1 after the reconnect: {seqs:?}"))?;
    let first = &after.events[start]["line"];
    assert_eq!(first["dir"], "out", "{first}");
    assert!(
        first["line"]
            .as_str()
            .is_some_and(|l| l.starts_with("CAP LS 302")),
        "{first}"
    );
    // From there on the new tap is delivered whole and in order, registration included.
    let new_tap = &seqs[start..];
    assert!(new_tap.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(after.dropped, 0, "{after:?}");
    assert!(after.events.iter().all(|e| e["session"] == json!(sid)));
    Ok(())
}
