//! A property of the raw debug tools: no generated raw line holding a session secret comes
//! out of raw_since or search_raw, whatever its shape, length or filters.
//!
//! Each case is a real session (never connected: its secrets are its configured server
//! password and channel key) in a real engine, with a debug `Capture` attached to the engine's
//! raw tap and switched on. The lines are handed to the tap's observer directly, unmasked, so
//! the way-out screen alone must stop them: the secret scan, the raw-line tripwire, and the
//! cut inside a secret (lines long enough to be cut at 2,048 bytes, with the secret placed
//! around the cut). Every line is either returned or counted in withheld, exactly once.

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use proptest::prelude::*;
use rete_actors::{Direction, Rete, ReteOptions};
use rete_engine::session::ChannelSpec;
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::raw::RawTaps;
use rete_mcp::debug::Capture;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{plain, session_config, spec};
use tokio_util::sync::CancellationToken;

/// One generated line: which way, a command-ish head, text around the secret (or none).
#[derive(Clone, Debug)]
struct Gen {
    out: bool,
    head: &'static str,
    before: usize,
    secret: Option<bool>,
    after: usize,
}

/// What one case feeds: its two secrets, its lines, and how it reads them back.
#[derive(Clone, Debug)]
struct Case {
    password: String,
    key: String,
    lines: Vec<Gen>,
    limit: i64,
    needle_from: usize,
    needle_len: usize,
}

const HEADS: &[&str] = &[
    "",
    "PASS ",
    "pass :",
    "OPER admin ",
    "OPER ",
    "AUTHENTICATE ",
    "authenticate PLAIN",
    "JOIN #c ",
    "@time=x :srv 324 me #c +k ",
    ":a!u@h PRIVMSG #c :",
    "PRIVMSG NickServ :IDENTIFY ",
    "NOTICE #c :",
];

fn gens() -> impl Strategy<Value = Gen> {
    // Lengths around the 2,048-byte cut, so a secret lands across it.
    let len = prop_oneof![0..40usize, 2000..2060usize];
    (
        any::<bool>(),
        prop::sample::select(HEADS),
        len,
        prop::option::of(any::<bool>()),
        0..30usize,
    )
        .prop_map(|(out, head, before, secret, after)| Gen {
            out,
            head,
            before,
            secret,
            after,
        })
}

fn cases() -> impl Strategy<Value = Case> {
    (
        "[A-Za-z0-9]{4,24}",
        "[a-z0-9]{4,16}",
        prop::collection::vec(gens(), 1..40),
        prop_oneof![Just(2000i64), 1..50i64],
        0..24usize,
        1..8usize,
    )
        .prop_map(
            |(password, key, lines, limit, needle_from, needle_len)| Case {
                password,
                key,
                lines,
                limit,
                needle_from,
                needle_len,
            },
        )
}

fn text_of(g: &Gen, case: &Case) -> String {
    let secret = match g.secret {
        None => "",
        Some(true) => case.password.as_str(),
        Some(false) => case.key.as_str(),
    };
    format!(
        "{}{}{}{}",
        g.head,
        "w".repeat(g.before),
        secret,
        " z".repeat(g.after)
    )
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Result<Value> {
    let parsed = Args::from_request(Some(&args)).map_err(|_| anyhow::anyhow!("not an object"))?;
    match ToolBox::new().call(tool, ctx, &parsed).await {
        ToolOutcome::Ok(v) => {
            let len = encode(&v).len();
            if len > BUDGET {
                bail!("{tool} {args}: {len} bytes");
            }
            Ok(v)
        }
        other => bail!("{tool} {args}: {other:?}"),
    }
}

/// Fails when a returned line shows a secret, a credential's shape, or a cut inside a secret.
fn check_lines(v: &Value, secrets: &[&str]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for l in v["lines"].as_array().context("lines")? {
        let text = l["line"].as_str().context("line")?;
        for s in secrets {
            if text.contains(s) {
                bail!("a secret came out: {text:?}");
            }
            let kept = text
                .rfind("…[+")
                .filter(|_| text.ends_with(" bytes]"))
                .map(|i| &text[..i]);
            if let Some(kept) = kept {
                if (4..=s.len()).any(|n| kept.ends_with(&s[..n])) {
                    bail!("a line cut inside a secret came out: {text:?}");
                }
            }
        }
        if rete_redact::is_credential_shaped(text) {
            bail!("a credential-shaped line came out: {text:?}");
        }
        out.push(text.to_owned());
    }
    Ok(out)
}

async fn run_case(case: &Case) -> Result<()> {
    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let taps = RawTaps::start(rete.debug_raw_slot())
        .await
        .map_err(anyhow::Error::msg)?;
    let capture = Capture::with_raw_tap(taps);
    capture.switch(true);
    let mut config = session_config("propme");
    config.password = Some(case.password.clone());
    config.channels = vec![ChannelSpec {
        name: "#c".into(),
        key: Some(case.key.clone()),
    }];
    let mut s = spec(config, plain(1));
    s.autoconnect = false;
    let session = rete.add_session(s).await?;
    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings {
            debug: true,
            send: false,
        },
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture: capture.clone(),
    };
    let observer = capture.raw().context("attached")?.observer();
    for g in &case.lines {
        let dir = if g.out { Direction::Out } else { Direction::In };
        observer.on_raw(session.id(), dir, &text_of(g, case));
    }
    let sid = session.id().as_str();
    let secrets = [case.password.as_str(), case.key.as_str()];

    // raw_since, walked to the end: every line returned or withheld, once.
    let (mut returned, mut withheld, mut cursor) = (0u64, 0u64, None::<String>);
    loop {
        let mut args = json!({"session": sid, "limit": case.limit});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let v = call(&ctx, "raw_since", args).await?;
        returned += check_lines(&v, &secrets)?.len() as u64;
        withheld += v.get("withheld").and_then(Value::as_u64).unwrap_or(0);
        cursor = Some(v["cursor"].as_str().context("cursor")?.to_owned());
        if v["truncated"] == json!(false) {
            break;
        }
    }
    if returned + withheld != case.lines.len() as u64 {
        bail!(
            "{returned} returned + {withheld} withheld of {} lines",
            case.lines.len()
        );
    }

    // search_raw, looking for part of a secret, for any command and either direction.
    let secret = if case.needle_from % 2 == 0 {
        &case.password
    } else {
        &case.key
    };
    let from = case.needle_from.min(secret.len() - 1);
    let needle = &secret[from..(from + case.needle_len).min(secret.len())];
    for args in [
        json!({"session": sid, "contains": needle, "limit": case.limit}),
        json!({"session": sid, "commands": ["PASS", "OPER", "AUTHENTICATE", "JOIN", "324", "PRIVMSG"], "limit": case.limit}),
        json!({"session": sid, "direction": "out", "limit": case.limit}),
    ] {
        let mut args = args;
        let mut pages = 0;
        loop {
            let v = call(&ctx, "search_raw", args.clone()).await?;
            check_lines(&v, &secrets)?;
            pages += 1;
            match v.get("next_cursor") {
                Some(c) if pages <= case.lines.len() + 1 => args["cursor"] = c.clone(),
                Some(_) => bail!("search_raw did not finish paging: {args}"),
                None => break,
            }
        }
    }
    let v = call(
        &ctx,
        "search_raw",
        json!({"session": sid, "count_only": true}),
    )
    .await?;
    let count = v["count"].as_u64().context("count")?;
    if count != returned {
        bail!("count_only {count}, raw_since returned {returned}");
    }
    drop(ctx);
    drop(capture);
    rete.shutdown(std::time::Duration::from_secs(1)).await;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_line_holding_a_secret_leaves_through_raw_since_or_search_raw(case in cases()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let result = runtime.block_on(run_case(&case));
        prop_assert!(result.is_ok(), "{:?}", result.err());
    }
}
