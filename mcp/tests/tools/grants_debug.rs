//! The debug tier for a scoped grant (issue 33), through `ToolBox::call` against a real
//! InspIRCd with the capture on: raw_since and search_raw return only the raw lines whose
//! every target the grant reaches and count the rest in `withheld`; read_log withholds every
//! line from a grant narrower than everything; engine_state answers only a grant covering the
//! session whole; a session out of reach is `unknown session`. Markers planted in an
//! out-of-scope channel, a query and Rete's log never reach a grant's answer.

// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rete_actors::{Rete, ReteOptions};
use rete_mcp::grant::{Granted, Scope, Tier};
use rete_mcp::tools::engine_state::NOT_WHOLE_SESSION;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Principal, Reach, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::bot::sees_join;
use support::debug_tools;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::updates_tests_tools::channels;
use support::{Bot, Inspircd, InspircdConfig};

const ME: &str = "grantme";

/// `ctx` as a debug-tier grant named `name` with `scope` sees it.
fn granted(ctx: &ToolContext, name: &str, scope: Scope) -> ToolContext {
    ToolContext {
        reach: Reach::within(scope.clone()),
        principal: Principal::Grant(Granted::new(name, scope, Tier::Debug, name)),
        ..ctx.clone()
    }
}

fn scope(networks: &[&str], buffers: &[&str], queries: bool) -> Scope {
    Scope {
        networks: networks.iter().map(|s| s.to_string()).collect(),
        buffers: buffers.iter().map(|s| s.to_string()).collect(),
        queries,
    }
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutcome {
    let args = Args::from_request(Some(&args)).expect("arguments are an object");
    ToolBox::new().call(tool, ctx, &args).await
}

async fn ok(ctx: &ToolContext, tool: &str, args: Value) -> Result<Value> {
    match call(ctx, tool, args.clone()).await {
        ToolOutcome::Ok(v) if encode(&v).len() <= BUDGET => Ok(v),
        other => bail!("{tool}({args}) failed: {other:?}"),
    }
}

async fn err(ctx: &ToolContext, tool: &str, args: Value) -> Result<String> {
    match call(ctx, tool, args.clone()).await {
        ToolOutcome::Error(text) => Ok(text),
        other => bail!("{tool}({args}) did not fail: {other:?}"),
    }
}

/// Every raw line and the withheld total of a raw_since walk from the start.
async fn walk(ctx: &ToolContext, session: &str) -> Result<(Vec<String>, u64)> {
    let (mut lines, mut withheld, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let mut args = json!({"session": session, "limit": 2000});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let v = ok(ctx, "raw_since", args).await?;
        for l in v["lines"].as_array().context("lines")? {
            lines.push(l["line"].as_str().context("line")?.to_owned());
        }
        withheld += v.get("withheld").and_then(Value::as_u64).unwrap_or(0);
        cursor = Some(v["cursor"].as_str().context("cursor")?.to_owned());
        if v["truncated"] == json!(false) {
            return Ok((lines, withheld));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_reads_only_the_debug_lines_in_its_reach() -> Result<()> {
    // Rete's log layer, so read_log has lines (each test runs in a process of its own).
    let _ = tracing::subscriber::set_global_default(rete_mcp::debug::log::subscriber());
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let capture = debug_tools::capture(&rete, true).await?;
    let full = debug_tools::debug_context(
        &rete,
        capture.clone(),
        rete_mcp::updates::Updates::unstarted(),
    );
    let mut zed = Bot::connect(port, "Zed").await?;
    zed.join("#rust-beginners").await?;
    zed.join("#other").await?;
    let mut config = session_config(ME);
    config.channels = channels(&["#rust-beginners", "#other"]);
    let session = rete.add_session(spec(config, plain(port))).await?;
    let sid = session.id().as_str().to_owned();
    sees_join(&mut zed, ME, "#rust-beginners").await?;
    sees_join(&mut zed, ME, "#other").await?;
    zed.privmsg("#rust-beginners", "marker-rust").await?;
    zed.privmsg("#other", "marker-other").await?;
    zed.privmsg(ME, "psst marker-query").await?;
    tracing::info!(target: "rete::app", "grant test marker-log");
    let markers = ["marker-rust", "marker-other", "marker-query"];
    // The full token sees every marker first.
    let (all, all_withheld) = eventually("every marker in the tap", WAIT, || async {
        let (lines, withheld) = walk(&full, &sid).await.ok()?;
        markers
            .iter()
            .all(|m| lines.iter().any(|l| l.contains(m)))
            .then_some((lines, withheld))
    })
    .await?;
    let network = session.reader().read(|v| v.name().to_owned()).await?;

    // Channels matching #rust*, no queries.
    let rust_only = granted(
        &full,
        "rusty",
        scope(&[&network.to_uppercase()], &["#RUST*"], false),
    );
    let (lines, withheld) = walk(&rust_only, &sid).await?;
    assert!(
        lines.iter().any(|l| l.contains("marker-rust")),
        "{lines:#?}"
    );
    for l in &lines {
        assert!(
            l.contains("#rust-beginners"),
            "not attributable to #rust*: {l}"
        );
        for hidden in ["marker-other", "marker-query", "#other"] {
            assert!(!l.contains(hidden), "{hidden} in {l}");
        }
    }
    assert!(lines.len() < all.len(), "{lines:#?}");
    // Every line the full token covered is covered here: returned or counted.
    assert!(
        lines.len() as u64 + withheld >= all.len() as u64 + all_withheld,
        "{} + {withheld} < {} + {all_withheld}",
        lines.len(),
        all.len()
    );
    assert!(withheld >= 2, "the two out-of-scope markers at least");

    // search_raw: the out-of-scope markers are neither returned nor countable by text.
    let found = ok(
        &rust_only,
        "search_raw",
        json!({"session": sid, "contains": "marker"}),
    )
    .await?;
    let text = encode(&found);
    assert!(text.contains("marker-rust"), "{text}");
    assert!(
        !text.contains("marker-other") && !text.contains("marker-query"),
        "{text}"
    );
    let counted = |contains: &'static str| {
        let ctx = rust_only.clone();
        let sid = sid.clone();
        async move {
            ok(
                &ctx,
                "search_raw",
                json!({"session": sid, "contains": contains, "count_only": true}),
            )
            .await
        }
    };
    let full_count = ok(
        &full,
        "search_raw",
        json!({"session": sid, "contains": "marker-other", "count_only": true}),
    )
    .await?;
    assert_eq!(full_count["count"], json!(1), "{full_count}");
    // The same withheld count whatever the text asked for (retried only if a line, a PING
    // say, arrived between the two calls).
    eventually(
        "withheld counts that say nothing of the text",
        WAIT,
        || async {
            let other = counted("marker-other").await.ok()?;
            let nothing = counted("no line holds this").await.ok()?;
            assert_eq!(other["count"], json!(0), "{other}");
            assert!(other["withheld"].as_u64() >= Some(2), "{other}");
            (other["withheld"] == nothing["withheld"]).then_some(())
        },
    )
    .await?;

    // With queries on, the query's marker is seen; #other's still is not.
    let with_queries = granted(&full, "chatty", scope(&[], &["#rust*"], true));
    let (lines, _) = walk(&with_queries, &sid).await?;
    assert!(
        lines.iter().any(|l| l.contains("marker-query")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("marker-other")),
        "{lines:#?}"
    );

    // A grant covering the session whole sees what the full token sees.
    let whole = granted(&full, "whole", scope(&[&network], &[], true));
    let (lines, _) = walk(&whole, &sid).await?;
    assert!(markers.iter().all(|m| lines.iter().any(|l| l.contains(m))));

    // Another network's grant: the session is absent.
    let elsewhere = granted(&full, "elsewhere", scope(&["no-such-net"], &[], true));
    for tool in ["raw_since", "search_raw", "engine_state"] {
        assert_eq!(
            err(&elsewhere, tool, json!({"session": sid})).await?,
            "unknown session",
            "{tool}"
        );
    }

    // engine_state: only for the session whole.
    assert_eq!(
        err(&rust_only, "engine_state", json!({"session": sid})).await?,
        NOT_WHOLE_SESSION
    );
    assert_eq!(
        err(
            &with_queries,
            "engine_state",
            json!({"session": sid, "sections": ["channels"]})
        )
        .await?,
        NOT_WHOLE_SESSION
    );
    let index = ok(&whole, "engine_state", json!({"session": sid})).await?;
    assert!(
        !index["index"].as_array().context("index")?.is_empty(),
        "{index}"
    );
    let channels = ok(
        &whole,
        "engine_state",
        json!({"session": sid, "sections": ["channels"]}),
    )
    .await?;
    assert!(encode(&channels).contains("#other"), "{channels}");

    // read_log: every line withheld from a narrower grant; a grant over everything reads it.
    let log = eventually("the log marker", WAIT, || async {
        let v = ok(&full, "read_log", json!({"contains": "marker-log"}))
            .await
            .ok()?;
        (!v["lines"].as_array()?.is_empty()).then_some(v)
    })
    .await?;
    assert!(encode(&log).contains("grant test marker-log"), "{log}");
    for narrow in [&rust_only, &whole, &with_queries] {
        let v = ok(narrow, "read_log", json!({})).await?;
        assert_eq!(v["lines"], json!([]), "{v}");
        assert!(v["withheld"].as_u64() >= Some(1), "{v}");
        assert!(!encode(&v).contains("marker"), "{v}");
    }
    let everything = granted(&full, "all", scope(&[], &[], true));
    let v = ok(&everything, "read_log", json!({"contains": "marker-log"})).await?;
    assert!(encode(&v).contains("grant test marker-log"), "{v}");
    Ok(())
}
