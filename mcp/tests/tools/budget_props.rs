//! A property of every read tool against a real InspIRCd: for any number of buffers and rows,
//! every result is at most 60,000 bytes and never `internal error`.
//!
//! Each case starts a fresh session in its own channel, and up to 600 bots (one query buffer
//! each: where search_messages' count_only once built a 93,684-byte result) join it and say
//! their rows there and to us; then every release tool is called over the whole session:
//! list_sessions,
//! list_buffers (walked page by page), list_members, read_messages, read_since,
//! search_messages (matches and count_only, over every buffer id and over the session) and
//! find_user. One server and one runtime serve every case.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use proptest::prelude::*;
use rete_actors::{Rete, ReteOptions};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::session::ChannelSpec;
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::args::Args;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{eventually, plain, session_config, spec};
use support::{Bot, BotConfig, Inspircd, InspircdConfig};
use tokio_util::sync::CancellationToken;

/// How long a case may take to join its channels and receive its rows.
const WAIT: Duration = Duration::from_secs(60);

/// What one case builds: a channel and `queries` query buffers, `rows` rows from each
/// bot in the channel and in its query, each row's text `text_len` bytes (plus a prefix).
#[derive(Clone, Debug)]
struct World {
    queries: usize,
    rows: usize,
    text_len: usize,
}

fn worlds() -> impl Strategy<Value = World> {
    // Few buffers, and hundreds (where count_only broke), each with a few rows of any length.
    let queries = prop_oneof![1..=12usize, 250..=600usize, 520..=600usize];
    (queries, 1..=3usize, 0..=400usize).prop_map(|(queries, rows, text_len)| World {
        queries,
        rows,
        text_len,
    })
}

/// The server and the runtime every case shares.
struct Shared {
    runtime: tokio::runtime::Runtime,
    ircd: Inspircd,
}

fn shared() -> &'static Shared {
    static SHARED: std::sync::OnceLock<Shared> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let ircd = runtime
            .block_on(Inspircd::start(InspircdConfig::new()))
            .expect("InspIRCd starts");
        Shared { runtime, ircd }
    })
}

/// Checks one outcome: within the budget, and never the internal error.
fn check(tool: &str, args: &Value, outcome: &ToolOutcome) -> Result<Option<Value>> {
    match outcome {
        ToolOutcome::Ok(v) | ToolOutcome::Stopped(v) => {
            let len = encode(v).len();
            if len > BUDGET {
                bail!("{tool} {args}: {len} bytes");
            }
            Ok(Some(v.clone()))
        }
        ToolOutcome::Encoded(text) => {
            let len = text.len();
            if len > BUDGET {
                bail!("{tool} {args}: {len} bytes");
            }
            Ok(Some(text.decode()?))
        }
        ToolOutcome::Error(text) if text == "internal error" => {
            bail!("{tool} {args}: internal error")
        }
        ToolOutcome::Error(_) => Ok(None),
        ToolOutcome::Cancelled => bail!("{tool} {args}: cancelled"),
    }
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Result<Option<Value>> {
    let parsed = Args::from_request(Some(&args)).map_err(|_| anyhow::anyhow!("not an object"))?;
    let outcome = ToolBox::new().call(tool, ctx, &parsed).await;
    check(tool, &args, &outcome)
}

async fn run_case(case: usize, world: &World) -> Result<()> {
    let port = shared().ircd.port();
    let me = format!("me{case}");
    let channel = format!("#p{case}");

    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let mut config = session_config(&me);
    config.channels = vec![ChannelSpec {
        name: channel.clone(),
        key: None,
    }];
    // Every case's queries must open buffers: the engine's default cap on
    // query buffers others can open (500) is below the largest case.
    config.max_query_buffers = 1_000;
    let session = rete.add_session(spec(config, plain(port))).await?;
    let reader = session.reader();
    let name = channel.clone();
    eventually("the channel joined", WAIT, || {
        let reader = reader.clone();
        let name = name.clone();
        async move {
            reader
                .read(move |v| {
                    let joined = v.find_buffer(BufferKind::Channel, &name).is_some();
                    (v.state() == ConnState::Connected && joined).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;

    // One bot per query buffer, all at once (registration waits on the server's 1 Hz
    // timer): each joins the channel and says its rows there and to us.
    let text = "r".repeat(world.text_len);
    let mut bots = tokio::task::JoinSet::new();
    for i in 0..world.queries {
        let (me, channel, text, rows) = (me.clone(), channel.clone(), text.clone(), world.rows);
        bots.spawn(async move {
            let mut bot = Bot::connect_with(BotConfig::new(port, &format!("q{case}n{i}"))).await?;
            bot.join(&channel).await?;
            for r in 0..rows {
                bot.privmsg(&channel, &format!("{r} {text}")).await?;
                bot.privmsg(&me, &format!("{r} {text}")).await?;
            }
            anyhow::Ok(bot)
        });
    }
    let mut alive = Vec::new();
    while let Some(bot) = bots.join_next().await {
        alive.push(bot??);
    }
    let (queries, rows) = (world.queries, world.rows);
    eventually("every row to arrive", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(move |v| {
                    let full = v
                        .buffers()
                        .filter(|b| b.kind() == BufferKind::Query)
                        .filter(|b| b.since(0).count() >= rows)
                        .count();
                    (full == queries).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;

    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings::default(),
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture: rete_mcp::debug::Capture::off(),
    };
    let sid = session.id().as_str().to_owned();
    call(&ctx, "list_sessions", json!({})).await?;

    // Every buffer id, through list_buffers' pages.
    let mut ids: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({ "session": sid });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = call(&ctx, "list_buffers", args)
            .await?
            .context("list_buffers answered an error")?;
        for b in page["buffers"].as_array().into_iter().flatten() {
            ids.extend(b["id"].as_str().map(str::to_owned));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    // The server buffer, the channel and every query.
    if ids.len() != world.queries + 2 {
        bail!("listed {} buffers, want {}", ids.len(), world.queries + 2);
    }

    for id in ids.iter().take(3).chain(ids.last()) {
        call(&ctx, "list_members", json!({"buffer": id, "limit": 2000})).await?;
        call(&ctx, "read_messages", json!({"buffer": id, "limit": 500})).await?;
        call(&ctx, "read_since", json!({"buffer": id, "limit": 500})).await?;
    }
    for args in [
        json!({"query": "", "buffers": ids, "count_only": true}),
        json!({"query": "", "sessions": [sid], "count_only": true}),
        json!({"query": "", "count_only": true, "kinds": ["join"]}),
        json!({"query": "", "buffers": ids, "limit": 500}),
        json!({"query": "r", "context": 10, "limit": 500}),
        json!({"query": "(r)\\1", "match": "regex", "buffers": ids, "count_only": true}),
    ] {
        let shown = args.to_string();
        let page = call(&ctx, "search_messages", args)
            .await?
            .with_context(|| format!("search_messages {shown} answered an error"))?;
        if page.get("counts").is_some() && page.get("stopped").is_none() {
            // A few thousand rows are far from the copy bound and the counts alone fit the
            // budget: every searched buffer has its count, and nothing is cut.
            let counted = page["counts"].as_object().map_or(0, |c| c.len());
            if counted != ids.len() || page["truncated"] != json!(false) {
                bail!(
                    "{shown}: {counted} counts for {} buffers, truncated {}",
                    ids.len(),
                    page["truncated"]
                );
            }
        }
    }
    call(&ctx, "find_user", json!({"nick": me})).await?;
    call(&ctx, "find_user", json!({"mask": "*"})).await?;

    rete.shutdown(Duration::from_secs(2)).await;
    drop(alive);
    Ok(())
}

proptest! {
    // Each case costs a session and hundreds of bots on a real server: a few cases, and a
    // failure is reported as found (shrinking would rebuild the world hundreds of times).
    #![proptest_config(ProptestConfig { cases: 6, max_shrink_iters: 0, ..ProptestConfig::default() })]

    #[test]
    fn every_tool_result_fits_the_budget_and_is_never_an_internal_error(world in worlds()) {
        static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let started = std::time::Instant::now();
        let result = shared().runtime.block_on(run_case(case, &world));
        eprintln!("case {case} {world:?}: {:?}", started.elapsed());
        prop_assert!(result.is_ok(), "{world:?}: {:#}", result.unwrap_err());
    }
}
