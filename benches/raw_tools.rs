//! The raw debug tools through `ToolBox::call` (argument checks, the session actor's read of
//! the secrets, the tap actor's copy, the screen and the JSON) over a full 5,000-line tap of
//! one session, filled through the capture's observer with a realistic mix of lines.
//!
//! Targets: raw_since of 2,000 lines from a full 5,000-line tap under 2 ms; search_raw over a
//! full tap under 5 ms.
//! Run: `cargo bench --bench raw_tools -- --warm-up-time 1 --measurement-time 3`

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use rete_actors::{Direction, ReadOnlySessions, Rete, ReteOptions, SessionSpec};
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::raw::RawTaps;
use rete_mcp::debug::Capture;
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use rete_transports::{Backoff, ConnectConfig};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const LINES: usize = 5_000;

fn line(i: usize) -> (Direction, String) {
    match i % 5 {
        0 => (
            Direction::In,
            format!("@time=2026-09-30T12:00:00.000Z;msgid=m{i} :nick{}!user@host.example.org PRIVMSG #bench :message number {i} with some ordinary chat text", i % 50),
        ),
        1 => (
            Direction::In,
            format!(":irc.example.net 354 rete 7 #bench user{i} host{i}.example.org nick{i} H@ 0 :Real Name"),
        ),
        2 => (Direction::Out, format!("PRIVMSG #bench :our own line {i}")),
        3 => (Direction::In, format!(":irc.example.net 315 rete #bench :End of /WHO list. {i}")),
        _ => (Direction::Out, format!("PING rete-lag-{i}")),
    }
}

async fn fixture() -> (Arc<Rete>, ToolContext, String) {
    let rete = Rete::start(ReteOptions::default()).await.expect("engine");
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid");
    let mut config = SessionConfig::new(id.clone(), "bench", "rete");
    // Secrets to scan for, as a real session has.
    config.password = Some("server-password-1".into());
    config.channels = vec![ChannelSpec {
        name: "#bench".into(),
        key: Some("channel-key-2".into()),
    }];
    let session = rete
        .add_session(SessionSpec {
            config,
            transport: rete_transports::Transport::Irc(ConnectConfig {
                host: "127.0.0.1".into(),
                port: 1,
                tls: false,
                tls_fingerprint: None,
                client_cert: None,
                connect_timeout: Duration::from_secs(1),
            }),
            autoconnect: false,
            reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
        })
        .await
        .expect("session");
    let taps = RawTaps::start(rete.debug_raw_slot()).await.expect("tap");
    let capture = Capture::with_raw_tap(taps);
    capture.switch(true);
    let observer = capture.raw().expect("attached").observer();
    for i in 0..LINES + 500 {
        let (dir, text) = line(i);
        observer.on_raw(session.id(), dir, &text);
    }
    let rete = Arc::new(rete);
    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: ReadOnlySessions::new(rete.clone()),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings {
            debug: true,
            send: false,
        },
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture,
    };
    (rete, ctx, id.as_str().to_owned())
}

async fn call(toolbox: &ToolBox, ctx: &ToolContext, tool: &str, args: &Value) -> Value {
    let args = Args::from_request(Some(args)).expect("an object");
    match toolbox.call(tool, ctx, &args).await {
        ToolOutcome::Ok(v) => v,
        other => panic!("{tool}: {other:?}"),
    }
}

fn raw_tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (_rete, ctx, sid) = runtime.block_on(fixture());
    let toolbox = ToolBox::new();
    let since = json!({"session": sid, "limit": 2000});
    let search = json!({"session": sid, "commands": ["354", "315"], "contains": "example"});
    let count = json!({"session": sid, "count_only": true, "contains": "nick7"});
    let v = runtime.block_on(call(&toolbox, &ctx, "raw_since", &since));
    eprintln!(
        "raw_since limit 2000 of {LINES}: {} lines fit the budget",
        v["lines"].as_array().map_or(0, Vec::len)
    );
    let v = runtime.block_on(call(&toolbox, &ctx, "search_raw", &search));
    eprintln!(
        "search_raw 354/315 over {LINES}: {} matches on the page, truncated {}",
        v["lines"].as_array().map_or(0, Vec::len),
        v["truncated"]
    );
    let mut group = c.benchmark_group("raw_tools");
    group.bench_function("raw_since_2000_of_5000", |b| {
        b.iter(|| runtime.block_on(call(&toolbox, &ctx, "raw_since", &since)))
    });
    group.bench_function("search_raw_commands_contains_over_5000", |b| {
        b.iter(|| runtime.block_on(call(&toolbox, &ctx, "search_raw", &search)))
    });
    group.bench_function("search_raw_count_only_over_5000", |b| {
        b.iter(|| runtime.block_on(call(&toolbox, &ctx, "search_raw", &count)))
    });
    group.finish();
}

criterion_group!(benches, raw_tools);
criterion_main!(benches);
