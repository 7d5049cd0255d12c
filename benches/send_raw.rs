//! send_raw's round trip beside list_sessions', in one run: a call through `ToolBox::call`
//! until the line is read off a bot's socket on a real InspIRCd, median over 100 calls
//! inside the caps (a fresh limiter every 5 calls, so the burst never refuses), with the
//! session's flood throttler off so what is measured is our own cost beyond its delay.
//! list_sessions' `ToolBox::call` on the same session is measured in the same loop.
//!
//! Run: `cargo bench --bench send_raw`.

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_test_support as support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use rete_actors::{Rete, ReteOptions};
use rete_engine::event::ConnState;
use rete_engine::flood::FloodConfig;
use rete_mcp::access_log::AccessLog;
use rete_mcp::send::{limiter, Sending};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::json;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::{Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio_util::sync::CancellationToken;

const CALLS: usize = 100;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let ircd = Inspircd::start(InspircdConfig::new()).await?;
        let mut bot = Bot::connect(ircd.port(), "benchbot").await?;
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let mut config = session_config("sender");
        config.flood = FloodConfig {
            burst: 5,
            interval_ms: 0,
        };
        let session = rete.add_session(spec(config, plain(ircd.port()))).await?;
        let reader = session.reader();
        eventually("connected", WAIT, || {
            let reader = reader.clone();
            async move {
                (reader.read(|v| v.state()).await.ok()? == ConnState::Connected).then_some(())
            }
        })
        .await?;
        let mut ctx = ToolContext {
            reach: rete_mcp::tools::Reach::everything(),
            principal: rete_mcp::tools::Principal::Full,
            sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
            send: None,
            cancel: CancellationToken::new(),
            settings: Settings {
                debug: false,
                send: true,
            },
            access_log: Arc::new(AccessLog::new()),
            updates: rete_mcp::updates::Updates::unstarted(),
            capture: rete_mcp::debug::Capture::off(),
        };
        let tools = ToolBox::new();
        let sid = session.id().as_str().to_owned();
        let list = Args::from_request(Some(&json!({}))).unwrap();
        let (mut send_rtt, mut list_rtt) = (Vec::new(), Vec::new());
        for n in 0..CALLS {
            if n % 5 == 0 {
                ctx.send = Some(Sending {
                    sessions: rete_actors::SendingSessions::new(rete.clone()),
                    limiter: limiter::start().await.map_err(anyhow::Error::msg)?,
                    approval: None,
                });
            }
            let text = format!("rtt {n}");
            let args = Args::from_request(Some(
                &json!({"session": sid, "line": format!("PRIVMSG benchbot :{text}")}),
            ))
            .unwrap();
            let start = Instant::now();
            let outcome = tools.call("send_raw", &ctx, &args).await;
            assert!(matches!(outcome, ToolOutcome::Ok(_)), "{outcome:?}");
            bot.wait_for(|l| Msg::parse(l).param(1) == text, DEFAULT_TIMEOUT)
                .await?;
            send_rtt.push(start.elapsed());
            let start = Instant::now();
            let outcome = tools.call("list_sessions", &ctx, &list).await;
            assert!(matches!(outcome, ToolOutcome::Ok(_)));
            list_rtt.push(start.elapsed());
        }
        let (s, l) = (median(send_rtt), median(list_rtt));
        println!(
            "send_raw round trip (call → line read by the bot), median of {CALLS}: {:.3} ms; \
             list_sessions call, same run: {:.3} ms; ratio {:.1}x",
            s.as_secs_f64() * 1e3,
            l.as_secs_f64() * 1e3,
            s.as_secs_f64() / l.as_secs_f64()
        );
        rete.shutdown(Duration::from_secs(1)).await;
        anyhow::Ok(())
    })?;
    Ok(())
}
