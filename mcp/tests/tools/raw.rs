//! The raw debug tools (raw_since, search_raw) called through `ToolBox::call` against real
//! sessions on a real InspIRCd, with a debug `Capture` attached to the engine's raw tap and
//! switched on: result shapes, every error string, masking at the source and the way-out
//! screen, a long line cut at 2,048 bytes, the capture window (nothing from before it, cleared
//! when it ends), cursors across a session actor restart and a reconnect, and eviction at
//! 5,000 lines.

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rete_actors::{Direction, Rete, ReteOptions, SessionHandle};
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::debug::Capture;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::bot::sees_join;
use support::debug_tools;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::tool_results::cursor_of;
use support::{Bot, BotConfig, Inspircd, InspircdConfig, DEFAULT_TIMEOUT};

const SERVER_PASSWORD: &str = "srvpass-1234";
const CHANNEL_KEY: &str = "chankey-9999";
const OPER_PASSWORD: &str = "operpass-5678";
const RAW_PASSWORD: &str = "hunter2-raw";

/// One engine, its sessions, and a debug capture on its raw tap.
struct Fixture {
    rete: Arc<Rete>,
    capture: Capture,
    ctx: ToolContext,
}

impl Fixture {
    /// An engine with no session yet and a capture that is off.
    async fn start() -> Result<Fixture> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let capture = debug_tools::capture(&rete, false).await?;
        let ctx = debug_tools::debug_context(
            &rete,
            capture.clone(),
            rete_mcp::updates::Updates::unstarted(),
        );
        Ok(Fixture { rete, capture, ctx })
    }

    /// Adds `config`, connecting to `port` (0: never connects).
    async fn add(&self, config: SessionConfig, port: u16) -> Result<SessionHandle> {
        let mut s = spec(config, plain(port.max(1)));
        s.autoconnect = port != 0;
        Ok(self.rete.add_session(s).await?)
    }

    async fn call_with(&self, ctx: &ToolContext, tool: &str, args: Value) -> ToolOutcome {
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call(tool, ctx, &args).await
    }

    /// A successful result, checked against the budget.
    async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call_with(&self.ctx, tool, args.clone()).await {
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
    async fn err(&self, tool: &str, args: Value) -> Result<String> {
        match self.call_with(&self.ctx, tool, args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("{tool}({args}) did not fail: {other:?}"),
        }
    }

    /// Waits until a session's buffers hold a message with `text` (so its line was read).
    async fn wait_message(&self, text: &str) -> Result<()> {
        eventually(&format!("the message {text:?}"), WAIT, || async {
            let v = self
                .ok(
                    "search_messages",
                    json!({"query": text, "count_only": true}),
                )
                .await
                .ok()?;
            let counts = v["counts"].as_object()?;
            counts.values().any(|n| n.as_u64() > Some(0)).then_some(())
        })
        .await
    }

    /// Every line raw_since returns after `cursor`, following its cursors to the end.
    async fn walk(&self, session: &str, cursor: Option<String>) -> Result<Walk> {
        let mut walk = Walk {
            cursor: cursor.clone(),
            ..Walk::default()
        };
        loop {
            let mut args = json!({"session": session, "limit": 2000});
            if let Some(c) = &walk.cursor {
                args["cursor"] = json!(c);
            }
            let v = self.ok("raw_since", args).await?;
            check_raw_since_shape(&v)?;
            walk.pages.push(v.clone());
            walk.lines
                .extend(v["lines"].as_array().cloned().unwrap_or_default());
            walk.withheld += v.get("withheld").and_then(Value::as_u64).unwrap_or(0);
            walk.cursor = Some(v["cursor"].as_str().context("cursor")?.to_owned());
            if v["truncated"] == json!(false) {
                return Ok(walk);
            }
        }
    }

    /// Waits until a walk after `cursor` holds a line satisfying `wanted`, and returns it.
    async fn wait_line(
        &self,
        session: &str,
        cursor: Option<String>,
        what: &str,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Walk> {
        eventually(what, WAIT, || async {
            let walk = self.walk(session, cursor.clone()).await.ok()?;
            walk.lines.iter().any(&wanted).then_some(walk)
        })
        .await
    }
}

/// What a walk of raw_since pages returned.
#[derive(Clone, Debug, Default)]
struct Walk {
    lines: Vec<Value>,
    withheld: u64,
    cursor: Option<String>,
    pages: Vec<Value>,
}

impl Walk {
    fn texts(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| l["line"].as_str())
            .collect()
    }
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn line_of(l: &Value) -> &str {
    l["line"].as_str().unwrap_or_default()
}

/// Checks one raw line object against the contract's shape.
fn check_line_shape(l: &Value) -> Result<()> {
    let want: BTreeSet<&str> = ["dir", "line", "seq", "time", "untrusted"].into();
    if keys(l) != want {
        bail!("raw line {l} has keys {:?}", keys(l));
    }
    if !matches!(l["dir"].as_str(), Some("in" | "out")) || l["untrusted"] != json!(true) {
        bail!("raw line {l}: bad dir or untrusted");
    }
    let time = l["time"].as_str().unwrap_or_default();
    let ok = time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T';
    if !ok || l["seq"].as_u64().is_none() {
        bail!("raw line {l}: bad time or seq");
    }
    Ok(())
}

fn check_raw_since_shape(v: &Value) -> Result<()> {
    let allowed: BTreeSet<&str> = [
        "cursor",
        "evicted",
        "lines",
        "truncated",
        "withheld",
        "skipped",
    ]
    .into();
    let k = keys(v);
    if !k.is_subset(&allowed)
        || !["cursor", "evicted", "lines", "truncated"]
            .iter()
            .all(|x| k.contains(x))
    {
        bail!("raw_since result has keys {k:?}");
    }
    for l in v["lines"].as_array().context("lines")? {
        check_line_shape(l)?;
    }
    Ok(())
}

fn channels(list: &[(&str, Option<&str>)]) -> Vec<ChannelSpec> {
    list.iter()
        .map(|(n, k)| ChannelSpec {
            name: (*n).to_owned(),
            key: k.map(str::to_owned),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shapes_errors_and_masking_at_the_source_and_on_the_way_out() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().password(SERVER_PASSWORD)).await?;
    let f = Fixture::start().await?;
    f.capture.switch(true);
    let mut config = session_config("rawme");
    config.password = Some(SERVER_PASSWORD.to_owned());
    config.channels = channels(&[("#keyed", Some(CHANNEL_KEY)), ("#open", None)]);
    let session = f.add(config, ircd.port()).await?;
    let other = f.add(session_config("idle"), 0).await?;
    let sid = session.id().as_str().to_owned();

    // Registration from the first line: PASS masked at the source, the JOIN carrying the
    // configured channel key withheld by the session's secret scan.
    let walk = f
        .wait_line(&sid, None, "our JOIN of #open echoed", |l| {
            line_of(l).contains("JOIN") && line_of(l).contains("#open") && l["dir"] == "in"
        })
        .await?;
    let texts = walk.texts();
    assert_eq!(walk.lines[0]["seq"], json!(1), "{texts:?}");
    assert!(texts.contains(&"PASS :********"), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.starts_with("CAP LS 302")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains(" 001 rawme ")), "{texts:?}");
    assert!(walk.withheld >= 1, "the JOIN with the key: {texts:?}");
    let seqs: Vec<u64> = walk
        .lines
        .iter()
        .filter_map(|l| l["seq"].as_u64())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // /oper is masked at the source; a /quote PASS too (the tap masks every line by its
    // shape); a PASS that reaches the tap unmasked is caught by the tripwire and counted.
    let cursor = walk.cursor.clone();
    session
        .sender()
        .command(|c| c.oper("admin", OPER_PASSWORD))
        .await?;
    session
        .sender()
        .command(|c| c.quote(&format!("PASS {RAW_PASSWORD}")))
        .await?;
    let walk = f
        .wait_line(&sid, cursor.clone(), "the server's answer to PASS", |l| {
            line_of(l).contains(" 462 ")
        })
        .await?;
    let texts = walk.texts();
    assert!(texts.contains(&"OPER admin ********"), "{texts:?}");
    assert!(texts.contains(&"PASS :********"), "{texts:?}");
    let cursor = walk.cursor.clone();
    let taps = f.capture.raw().context("attached")?;
    taps.observer().on_raw(
        session.id(),
        Direction::Out,
        &format!("PASS {RAW_PASSWORD}"),
    );
    taps.observer().on_raw(
        session.id(),
        Direction::Out,
        &format!("AUTHENTICATE {RAW_PASSWORD}"),
    );
    taps.observer()
        .on_raw(session.id(), Direction::Out, "PRIVMSG #open :PASS it on");
    let v = f
        .ok("raw_since", json!({"session": sid, "cursor": cursor}))
        .await?;
    check_raw_since_shape(&v)?;
    assert_eq!(v["withheld"], json!(2), "{v}");
    let texts: Vec<&str> = v["lines"].as_array().unwrap().iter().map(line_of).collect();
    assert_eq!(texts, ["PRIVMSG #open :PASS it on"]);

    // No secret leaves through either tool, whatever is asked.
    let all = f.walk(&sid, None).await?;
    let hits = f
        .ok("search_raw", json!({"session": sid, "limit": 2000}))
        .await?;
    let dump = format!("{} {}", encode(&json!(all.pages)), encode(&hits));
    for secret in [SERVER_PASSWORD, CHANNEL_KEY, OPER_PASSWORD, RAW_PASSWORD] {
        assert!(!dump.contains(secret), "{secret} left through a raw tool");
    }
    for needle in [CHANNEL_KEY, "chankey"] {
        let v = f
            .ok("search_raw", json!({"session": sid, "contains": needle}))
            .await?;
        assert_eq!(v["lines"], json!([]), "{v}");
        assert!(v["withheld"].as_u64() >= Some(1), "{v}");
    }

    // search_raw's shapes.
    let v = f
        .ok(
            "search_raw",
            json!({"session": sid, "commands": [" 001 ", "", "join"], "direction": "in"}),
        )
        .await?;
    let allowed: BTreeSet<&str> = [
        "lines",
        "count",
        "truncated",
        "next_cursor",
        "coverage",
        "withheld",
        "skipped",
        "evicted",
    ]
    .into();
    assert!(keys(&v).is_subset(&allowed), "{v}");
    assert_eq!(v["truncated"], json!(false));
    let found: Vec<&str> = v["lines"].as_array().unwrap().iter().map(line_of).collect();
    assert!(found.iter().any(|t| t.contains(" 001 rawme ")), "{found:?}");
    assert!(
        found
            .iter()
            .all(|t| t.contains(" 001 ") || t.contains(" JOIN ")),
        "{found:?}"
    );
    assert_eq!(keys(&v["coverage"]), ["newest", "oldest"].into());
    for l in v["lines"].as_array().unwrap() {
        check_line_shape(l)?;
        assert_eq!(l["dir"], json!("in"));
    }
    let counted = f
        .ok(
            "search_raw",
            json!({"session": sid, "commands": ["JOIN", "001"], "direction": "in", "count_only": true}),
        )
        .await?;
    assert_eq!(counted["count"], json!(found.len()), "{counted}");
    assert_eq!(counted["truncated"], json!(false));
    assert!(counted.get("lines").is_none() && counted.get("next_cursor").is_none());
    let paged = f
        .ok(
            "search_raw",
            json!({"session": sid, "commands": ["001", "JOIN"], "direction": "in", "limit": 1}),
        )
        .await?;
    assert_eq!(paged["truncated"], json!(true));
    let next = cursor_of(&paged, "next_cursor");
    let rest = f
        .ok(
            "search_raw",
            json!({"session": sid, "commands": ["join", "001"], "direction": "in", "cursor": next, "limit": 2000}),
        )
        .await?;
    assert_eq!(
        rest["lines"].as_array().unwrap().len() + 1,
        found.len(),
        "the cursor resumes after the first match, whatever the order of commands"
    );
    let blanks = f
        .ok("search_raw", json!({"session": sid, "commands": [" ", ""]}))
        .await?;
    assert_eq!(blanks["lines"], json!([]));

    // Every error, in the contract's words.
    let since = f.ok("raw_since", json!({"session": sid})).await?;
    let since_cursor = cursor_of(&since, "cursor");
    let search_cursor = next;
    let oid = other.id().as_str().to_owned();
    let other_cursor = cursor_of(&f.ok("raw_since", json!({"session": oid})).await?, "cursor");
    let cases: Vec<(&str, Value, String)> = vec![
        (
            "raw_since",
            json!({}),
            "invalid arguments: missing session".into(),
        ),
        (
            "raw_since",
            json!({"session": null}),
            "invalid arguments: missing session".into(),
        ),
        (
            "raw_since",
            json!({"session": 7}),
            "invalid arguments: session must be a string".into(),
        ),
        (
            "raw_since",
            json!({"session": "nope"}),
            "unknown session".into(),
        ),
        (
            "raw_since",
            json!({"session": "0A0B0C0D-1111-4222-8333-444455556666"}),
            "unknown session".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "bogus": null}),
            "invalid arguments: unknown argument \"bogus\"".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "limit": "5"}),
            "invalid arguments: limit must be an integer".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "limit": 2.5}),
            "invalid arguments: limit must be an integer".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "cursor": 5}),
            "invalid arguments: cursor must be a string".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "cursor": "garbage"}),
            "invalid cursor".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "cursor": "A".repeat(600)}),
            "invalid cursor".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "cursor": search_cursor}),
            "invalid cursor".into(),
        ),
        (
            "raw_since",
            json!({"session": sid, "cursor": other_cursor}),
            "invalid cursor".into(),
        ),
        (
            "raw_since",
            json!({"session": oid, "cursor": since_cursor}),
            "invalid cursor".into(),
        ),
        (
            "search_raw",
            json!({"commands": []}),
            "invalid arguments: missing session".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "direction": "sideways"}),
            "invalid direction: expected \"in\" or \"out\"".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "direction": "IN"}),
            "invalid direction: expected \"in\" or \"out\"".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "direction": 1}),
            "invalid arguments: direction must be a string".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "commands": "354"}),
            "invalid arguments: commands must be an array of strings".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "commands": [354]}),
            "invalid arguments: commands must be an array of strings".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "contains": ["x"]}),
            "invalid arguments: contains must be a string".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "count_only": "yes"}),
            "invalid arguments: count_only must be a boolean".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "limit": "x"}),
            "invalid arguments: limit must be an integer".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "query": "x"}),
            "invalid arguments: unknown argument \"query\"".into(),
        ),
        (
            "search_raw",
            json!({"session": "nope"}),
            "unknown session".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "cursor": since_cursor}),
            "invalid cursor".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "commands": ["PRIVMSG"], "cursor": search_cursor}),
            "invalid cursor".into(),
        ),
        (
            "search_raw",
            json!({"session": sid, "direction": "out", "commands": ["001", "JOIN"], "cursor": search_cursor}),
            "invalid cursor".into(),
        ),
    ];
    for (tool, args, want) in cases {
        assert_eq!(f.err(tool, args.clone()).await?, want, "{tool}({args})");
    }
    // Limits clamp rather than refuse.
    for limit in [json!(0), json!(-5), json!(1e30), json!(1e3)] {
        f.ok("raw_since", json!({"session": sid, "limit": limit}))
            .await?;
        f.ok("search_raw", json!({"session": sid, "limit": limit}))
            .await?;
    }
    // While control.debug is off both are refused before any argument is looked at.
    let mut off = f.ctx.clone();
    off.settings.debug = false;
    for tool in ["raw_since", "search_raw"] {
        let got = f.call_with(&off, tool, json!({"bogus": 1})).await;
        assert_eq!(got, ToolOutcome::Error("debug tools are disabled".into()));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capture_window_and_a_long_line_cut() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Fixture::start().await?;
    let mut config = session_config("winme");
    config.channels = channels(&[("#win", None)]);
    // The bot is in the channel first, so it sees our JOIN.
    let mut bot = Bot::connect_with(
        BotConfig::new(ircd.port(), "winbot").caps(&["message-tags", "echo-message"]),
    )
    .await?;
    bot.join("#win").await?;
    let session = f.add(config, ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    sees_join(&mut bot, "winme", "#win").await?;
    bot.privmsg("#win", "before capture").await?;
    bot.wait_for(|l| l.ends_with("#win :before capture"), DEFAULT_TIMEOUT)
        .await?;
    f.wait_message("before capture").await?;

    // Nothing from before capture began: not registration, not the message.
    f.capture.switch(true);
    let pad = "x".repeat(3000);
    bot.send(&format!("@+rete/pad={pad} PRIVMSG #win :long one"))
        .await?;
    let walk = f
        .wait_line(&sid, None, "the long line", |l| {
            line_of(l).contains("+rete/pad=")
        })
        .await?;
    let texts = walk.texts();
    assert!(
        texts
            .iter()
            .all(|t| !t.contains("before capture") && !t.contains(" 001 ")),
        "{texts:?}"
    );
    let long = texts
        .iter()
        .find(|t| t.contains("+rete/pad="))
        .context("long line")?;
    let (kept, marker) = long.split_at(2048);
    let dropped: usize = marker
        .strip_prefix("…[+")
        .and_then(|m| m.strip_suffix(" bytes]"))
        .context("the cut's marker")?
        .parse()?;
    assert!(
        kept.starts_with('@') && !long.contains("long one"),
        "{long}"
    );
    assert!(dropped > 1000 && dropped < 2000, "{dropped}");
    let hits = f
        .ok(
            "search_raw",
            json!({"session": sid, "contains": "+RETE/PAD="}),
        )
        .await?;
    assert_eq!(hits["lines"].as_array().map(Vec::len), Some(1), "{hits}");
    // Cut inside its tags, the stored line has no command left to match.
    let hits = f
        .ok(
            "search_raw",
            json!({"session": sid, "contains": "+rete/pad=", "commands": ["PRIVMSG"]}),
        )
        .await?;
    assert_eq!(hits["lines"], json!([]), "{hits}");

    // Switching off clears every ring: a silent gap, neither evicted nor withheld.
    let before = walk.cursor.clone();
    let last_seq = walk
        .lines
        .last()
        .and_then(|l| l["seq"].as_u64())
        .unwrap_or(0);
    f.capture.switch(false);
    let empty = f.walk(&sid, None).await?;
    assert!(empty.lines.is_empty(), "{:?}", empty.texts());
    bot.privmsg("#win", "while off").await?;
    bot.wait_for(|l| l.ends_with("#win :while off"), DEFAULT_TIMEOUT)
        .await?;
    f.wait_message("while off").await?;
    f.capture.switch(true);
    bot.privmsg("#win", "after on").await?;
    let walk = f
        .wait_line(&sid, before, "the line after capture came back", |l| {
            line_of(l).ends_with("#win :after on")
        })
        .await?;
    let texts = walk.texts();
    assert!(texts.iter().all(|t| !t.contains("while off")), "{texts:?}");
    assert_eq!(walk.withheld, 0);
    assert!(walk.pages.iter().all(|p| p["evicted"] == json!(false)));
    let first = walk.lines[0]["seq"].as_u64().context("seq")?;
    assert!(first > last_seq, "the sequence goes on past the gap");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_across_an_actor_restart_and_a_reconnect() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Fixture::start().await?;
    f.capture.switch(true);
    let session = f.add(session_config("tapme"), ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    let registered = |l: &Value| line_of(l).contains(" 001 tapme ");
    let first = f.wait_line(&sid, None, "registration", registered).await?;

    // A restarted session actor reconnects: its lines are a new tap, read from its start by
    // the old cursor, and the lines from before are still held.
    session.crash_for_test();
    let second = f
        .wait_line(
            &sid,
            first.cursor.clone(),
            "registration after the restart",
            registered,
        )
        .await?;
    let starts: Vec<&Value> = second
        .lines
        .iter()
        .filter(|l| l["seq"] == json!(1))
        .collect();
    assert_eq!(starts.len(), 1, "{:?}", second.texts());
    assert!(
        line_of(starts[0]).starts_with("CAP LS 302"),
        "{:?}",
        second.texts()
    );
    assert!(second.pages.iter().all(|p| p["evicted"] == json!(false)));
    let held = f.walk(&sid, None).await?;
    assert_eq!(held.lines.iter().filter(|l| registered(l)).count(), 2);
    one_tap_per_page(&held, 2)?;

    // So does a reconnect after the server went away.
    ircd.restart().await?;
    let third = f
        .wait_line(
            &sid,
            second.cursor.clone(),
            "registration after the reconnect",
            registered,
        )
        .await?;
    let starts: Vec<&Value> = third
        .lines
        .iter()
        .filter(|l| l["seq"] == json!(1))
        .collect();
    assert_eq!(starts.len(), 1, "{:?}", third.texts());
    assert!(line_of(starts[0]).starts_with("CAP LS 302"));
    let held = f.walk(&sid, None).await?;
    assert_eq!(held.lines.iter().filter(|l| registered(l)).count(), 3);
    one_tap_per_page(&held, 3)?;
    Ok(())
}

/// Checks that a walk from no cursor over `taps` taps gave one tap per page: each page's seqs
/// ascending (so no number repeats), every page but the last truncated where the next tap
/// begins, and each later page starting that tap at seq 1.
fn one_tap_per_page(walk: &Walk, taps: usize) -> Result<()> {
    let seqs: Vec<Vec<u64>> = walk
        .pages
        .iter()
        .map(|p| {
            let lines = p["lines"].as_array().cloned().unwrap_or_default();
            lines.iter().filter_map(|l| l["seq"].as_u64()).collect()
        })
        .collect();
    if walk.pages.len() != taps {
        bail!("{taps} taps in {} pages: {seqs:?}", walk.pages.len());
    }
    for (i, page) in seqs.iter().enumerate() {
        if !page.windows(2).all(|w| w[0] < w[1]) {
            bail!("page {i} is not one tap, ascending: {seqs:?}");
        }
        if i > 0 && page.first() != Some(&1) {
            bail!("page {i} does not start its tap: {seqs:?}");
        }
        if i + 1 < taps && walk.pages[i]["truncated"] != json!(true) {
            bail!("page {i} ends a tap untruncated: {seqs:?}");
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tap_keeps_the_newest_5000_lines() -> Result<()> {
    const SENT: usize = 5_200;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let f = Fixture::start().await?;
    f.capture.switch(true);
    let mut config = session_config("fullme");
    config.channels = channels(&[("#flood", None)]);
    let mut bot =
        Bot::connect_with(BotConfig::new(ircd.port(), "floodbot").caps(&["echo-message"])).await?;
    bot.join("#flood").await?;
    let session = f.add(config, ircd.port()).await?;
    let sid = session.id().as_str().to_owned();
    sees_join(&mut bot, "fullme", "#flood").await?;
    let start = f
        .wait_line(&sid, None, "our JOIN", |l| {
            line_of(l).contains("JOIN #flood")
        })
        .await?;
    let cursor = start.cursor.clone().context("cursor")?;
    let first = f
        .ok("search_raw", json!({"session": sid, "limit": 1}))
        .await?;
    let search_cursor = cursor_of(&first, "next_cursor");

    for chunk in (0..SENT).collect::<Vec<_>>().chunks(200) {
        for i in chunk {
            bot.privmsg("#flood", &format!("flood {i}")).await?;
        }
        let last = format!("#flood :flood {}", chunk[chunk.len() - 1]);
        bot.wait_for(move |l| l.ends_with(&last), DEFAULT_TIMEOUT)
            .await?;
    }
    let last = format!("#flood :flood {}", SENT - 1);
    let count_last = json!({"session": sid, "contains": last, "count_only": true});
    eventually("the last flood line in the tap", WAIT, || async {
        let v = f.ok("search_raw", count_last.clone()).await.ok()?;
        (v["count"] == json!(1)).then_some(())
    })
    .await?;

    // Lines after the old cursor were dropped at capacity: evicted, on both tools.
    let v = f
        .ok("raw_since", json!({"session": sid, "cursor": cursor}))
        .await?;
    assert_eq!(v["evicted"], json!(true));
    let v = f
        .ok(
            "search_raw",
            json!({"session": sid, "cursor": search_cursor, "count_only": true}),
        )
        .await?;
    assert_eq!(v["evicted"], json!(true));
    // A first read without a cursor never reports it, and the tap holds exactly 5,000.
    let all = f.walk(&sid, None).await?;
    assert_eq!(all.pages[0]["evicted"], json!(false));
    assert_eq!(all.lines.len() as u64 + all.withheld, 5_000);
    let texts = all.texts();
    assert!(
        texts.last().is_some_and(|t| t.ends_with(&last))
            || texts.iter().any(|t| t.ends_with(&last))
    );
    assert!(
        !texts.iter().any(|t| t.ends_with("#flood :flood 0")),
        "the oldest went first"
    );
    let v = f
        .ok(
            "search_raw",
            json!({"session": sid, "commands": ["PRIVMSG"], "count_only": true}),
        )
        .await?;
    let privmsgs = v["count"].as_u64().context("count")?;
    assert!(privmsgs <= 5_000 && privmsgs > 4_900, "{v}");
    assert!(v.get("evicted").is_none(), "no cursor, no eviction: {v}");
    Ok(())
}
