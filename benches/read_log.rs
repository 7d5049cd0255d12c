//! The log ring: read_log over a full ring of 2,000 lines, and what the layer costs per event.
//!
//! - `read_log/*`: the whole tool call through `ToolBox::call` (the secrets read from a running
//!   session, the ring actor's snapshot, the scan, the filters and the page), with the ring full
//!   of 2,000 lines logged through the layer. `all_2000` returns what fits the 60,000-byte
//!   budget; `contains_scan_2000` and `min_level_scan_2000` look at all 2,000 lines and return a
//!   few. `page_only_*` is the page alone over a snapshot (no actor round trip).
//! - `layer/*`: one `tracing::info!` with two fields under a subscriber holding only the log
//!   layer, with capture off (the one atomic load) and on (rendered, masked, cut, numbered and
//!   cast to the ring); beside it the same event with no subscriber at all and under a bare
//!   registry, so the off figure reads as the layer's own cost.
//!
//! Target: read_log of 2,000 lines under 3 ms.
//! Run: `cargo bench --bench read_log -- --warm-up-time 1 --measurement-time 3`

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use rete_actors::{Rete, ReteOptions, SessionSpec};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::log::line::Draft;
use rete_mcp::debug::log::ring::Snapshot;
use rete_mcp::debug::log::{Category, Level};
use rete_mcp::debug::Capture;
use rete_mcp::tools::read_log::{self, Query};
use rete_mcp::tools::result::BUDGET;
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use rete_redact::SecretSet;
use rete_transports::{Backoff, ConnectConfig};
use serde_json::{json, Map, Value};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const LINES: u64 = 2_000;

fn event(i: u64) {
    match i % 4 {
        0 => {
            tracing::info!(target: "rete::network", session = "6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d", tls = false, "connecting to irc.example.net:6667")
        }
        1 => {
            tracing::info!(target: "rete::network", session = "6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d", step = "cap_req", "registration step cap_req")
        }
        2 => {
            tracing::warn!(target: "rete::network", session = "6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d", delay_ms = 4_000u64, "connection lost (connection reset by peer); reconnecting in 4000 ms")
        }
        _ => {
            tracing::info!(target: "rete::auth", session = "6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d", rete_level = "notice", account = "alice", "SASL PLAIN succeeded")
        }
    }
}

fn context(rete: Arc<Rete>, capture: Capture) -> ToolContext {
    ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings {
            debug: true,
            send: false,
        },
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture,
    }
}

fn snapshot() -> Snapshot {
    let lines = (1..=LINES)
        .map(|seq| {
            let mut fields = Map::new();
            fields.insert(
                "session".into(),
                json!("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d"),
            );
            fields.insert("n".into(), json!(seq));
            let level = if seq % 4 == 2 {
                Level::Warning
            } else {
                Level::Info
            };
            let d = Draft::new(
                UnixMillis(1_790_769_600_000),
                level,
                Category::Network,
                "registration step cap_req",
                fields,
            );
            Arc::new(d.numbered(seq))
        })
        .collect();
    Snapshot {
        oldest: Some(1),
        lines,
        evicted_through: 0,
        scan: SecretSet::new(["hunter22-password", "channel-key-1", "srv-pass-7731"]),
        stalled: false,
    }
}

fn read_log(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _in_runtime = rt.enter();
    tracing::subscriber::set_global_default(rete_mcp::debug::log::subscriber())
        .expect("the only subscriber");
    let rete = Arc::new(
        rt.block_on(Rete::start(ReteOptions::default()))
            .expect("engine"),
    );
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid");
    let mut config = SessionConfig::new(id, "bench", "rete");
    config.password = Some("srv-pass-7731".into());
    config.channels = vec![ChannelSpec {
        name: "#k".into(),
        key: Some("channel-key-1".into()),
    }];
    rt.block_on(rete.add_session(SessionSpec {
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
    }))
    .expect("session");
    let capture = Capture::off();
    capture.switch(true);
    let ctx = context(rete, capture.clone());
    let tools = ToolBox::new();
    let call = |args: Value| {
        let args = Args::from_request(Some(&args)).expect("object");
        match rt.block_on(tools.call("read_log", &ctx, &args)) {
            ToolOutcome::Ok(v) => v,
            other => panic!("read_log failed: {other:?}"),
        }
    };
    // Fill the ring: 2,000 lines plus a marker, and wait for the last.
    for i in 0..LINES - 1 {
        event(i);
    }
    tracing::error!(target: "rete::app", "the last line");
    loop {
        let v = call(json!({"contains": "the last line"}));
        if v["lines"].as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
    }
    let all = call(json!({"limit": 2000}));
    eprintln!(
        "read_log limit 2000: {} of {} lines fit the budget",
        all["lines"].as_array().map_or(0, Vec::len),
        LINES
    );

    let mut group = c.benchmark_group("read_log");
    group.bench_function("all_2000", |b| {
        b.iter(|| black_box(call(json!({"limit": 2000}))))
    });
    group.bench_function("contains_scan_2000", |b| {
        b.iter(|| black_box(call(json!({"limit": 2000, "contains": "SASL plain"}))))
    });
    group.bench_function("min_level_scan_2000", |b| {
        b.iter(|| black_box(call(json!({"limit": 2000, "min_level": "error"}))))
    });
    let snap = snapshot();
    let everything = Query::default();
    group.bench_function("page_only_all_2000", |b| {
        b.iter(|| black_box(read_log::page(&snap, None, 0, &everything, 2000, BUDGET)))
    });
    group.finish();

    let mut group = c.benchmark_group("layer");
    group.bench_function("event_no_subscriber", |b| {
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            b.iter(|| event(black_box(0)))
        })
    });
    group.bench_function("event_bare_registry", |b| {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            b.iter(|| event(black_box(0)))
        })
    });
    capture.switch(false);
    group.bench_function("event_capture_off", |b| b.iter(|| event(black_box(0))));
    capture.switch(true);
    group.bench_function("event_capture_on", |b| b.iter(|| event(black_box(0))));
    capture.switch(false);
    group.finish();
}

criterion_group!(benches, read_log);
criterion_main!(benches);
