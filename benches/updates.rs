//! Live updates, measured end to end on loopback.
//!
//! 1. Latency (criterion): a line written to the session's IRC socket after
//!    a quiet spell, to the answer of a `wait_for_updates` request parked on
//!    the control server, read off the client's socket. Target: median under
//!    2 ms.
//! 2. Flood (a load test, printed): 10,000 lines/s across 20 channels for a
//!    few seconds, once with no subscription and once with 16. The session
//!    must keep up (the last line is stored soon after it is written, and
//!    collection catches up too), and the session's CPU per line with 16
//!    subscriptions must stay within 2x of the run with none. The engine
//!    (its session actor and connection task) runs on a thread of its own,
//!    whose CPU clock measures exactly what the IRC connection pays —
//!    batches are closures run in that actor, so they are counted. The
//!    process CPU (the registry's matching, the scripted server, the
//!    control server) is printed beside it.
//!
//! The IRC server is a scripted one in this process (a real TCP socket; it
//! welcomes the session, joins it to 20 channels, then writes what the
//! benchmark says), so the time a line is written is known exactly.
//! The control server refuses to run as root: run this with
//! `scripts/bench-control updates`, which runs it as `nobody` when started
//! as root.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/loopback.rs"]
mod loopback;

use criterion::Criterion;
use rete_actors::{Rete, ReteOptions};
use rete_engine::event::Event;
use rete_mcp::access_log::AccessLog;
use rete_mcp::server::{ControlServer, ServerSettings};
use rete_mcp::tools::Args;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

const NICK: &str = "mriron";
const CHANNELS: usize = 20;
const FLOOD_RATE: u64 = 10_000;
const FLOOD_SECONDS: u64 = 3;

/// The engine, the control server, and the IRC server's side of the socket.
struct Rig {
    rete: Arc<Rete>,
    server: ControlServer,
    irc: OwnedWriteHalf,
    rows: Arc<AtomicU64>,
    /// The CPU clock of the thread the engine runs on.
    engine_clock: libc::clockid_t,
}

async fn add_session(rete: &Rete, irc_port: u16) {
    let config = loopback::config("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c00", "bench", NICK);
    rete.add_session(loopback::session_spec(config, irc_port))
        .await
        .expect("session");
}

/// Starts the engine and the session on a thread of their own; returns the
/// engine and that thread's CPU clock.
fn start_engine_thread(irc_port: u16) -> (Arc<Rete>, libc::clockid_t) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("engine runtime");
        rt.block_on(async move {
            let rete = Arc::new(Rete::start(ReteOptions::default()).await.expect("rete"));
            add_session(&rete, irc_port).await;
            let mut clock: libc::clockid_t = 0;
            // SAFETY: pthread_self is always valid; the id is written into `clock`.
            let ok = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
            assert_eq!(ok, 0, "pthread_getcpuclockid");
            tx.send((rete, clock)).expect("send");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("the engine thread started")
}

/// CPU time a clock from `pthread_getcpuclockid` has counted.
fn thread_cpu(clock: libc::clockid_t) -> Duration {
    // SAFETY: clock_gettime only writes the struct it is given.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(clock, &mut ts);
        ts
    };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

async fn start() -> Rig {
    let irc_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let irc_port = irc_listener.local_addr().expect("addr").port();
    let (rete, engine_clock) = start_engine_thread(irc_port);
    let rows = Arc::new(AtomicU64::new(0));
    let mut events = rete.subscribe();
    let counted = rows.clone();
    tokio::spawn(async move {
        while let Ok(ev) = events.recv().await {
            if matches!(ev.event, Event::Row { .. }) {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let irc = welcome(irc_listener).await;
    let secrets =
        std::env::temp_dir().join(format!("rete-bench-updates-{}.json", std::process::id()));
    let settings = ServerSettings {
        port: free_port(),
        debug: false,
        send: false,
        tokens: Arc::new(reterm::secrets::SecretsFile { path: secrets }),
        grants: Default::default(),
    };
    let server = ControlServer::start(rete.clone(), settings, Arc::new(AccessLog::new()))
        .await
        .expect(
            "the control server starts (run as a non-root user: scripts/bench-control updates)",
        );
    let rig = Rig {
        rete,
        server,
        irc,
        rows,
        engine_clock,
    };
    // Every channel buffer exists before anything is measured.
    let session = rig.rete.sessions().remove(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while session
        .reader()
        .read(|v| v.buffers().count())
        .await
        .unwrap_or(0)
        < CHANNELS + 1
    {
        assert!(Instant::now() < deadline, "the session did not join");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    rig
}

/// Accepts the session, welcomes it once it has sent USER, joins it to the
/// channels, and keeps draining what it sends.
async fn welcome(listener: TcpListener) -> OwnedWriteHalf {
    let mut write = loopback::accept_registration(listener).await;
    let mut hello = format!(":irc.bench 001 {NICK} :Welcome\r\n");
    for c in 0..CHANNELS {
        hello.push_str(&format!(":{NICK}!u@bench JOIN #c{c}\r\n"));
    }
    write.write_all(hello.as_bytes()).await.expect("welcome");
    write
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn call(port: u16, token: &str, name: &str, arguments: serde_json::Value) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one whole answer (the server closes after it).
async fn answer(mut stream: TcpStream) -> String {
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

fn latency(c: &mut Criterion, rt: &Runtime, rig: &mut Rig) {
    let port = rig.server.port();
    let token = rig.server.token().expose().to_owned();
    let subscribed = rt.block_on(async {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let (mut stream, request) = (
            stream,
            call(port, &token, "subscribe", json!({"mentions": true})),
        );
        stream.write_all(&request).await.expect("write");
        answer(stream).await
    });
    assert!(subscribed.contains("sub_"), "{subscribed}");
    let wait = call(port, &token, "wait_for_updates", json!({"timeout": 20}));
    let updates = rig.server.updates().clone();
    let mut n = 0u64;
    c.bench_function("updates/irc_line_to_wait_answer", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // A quiet spell: the session's collector is idle again.
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let mut stream = TcpStream::connect(("127.0.0.1", port))
                        .await
                        .expect("connect");
                    stream.write_all(&wait).await.expect("write");
                    while updates.stats().await.expect("stats").waits == 0 {
                        tokio::task::yield_now().await;
                    }
                    n += 1;
                    let line = format!(":alice!u@bench PRIVMSG #c0 :{NICK}: ping {n}\r\n");
                    let start = Instant::now();
                    rig.irc.write_all(line.as_bytes()).await.expect("irc write");
                    let text = answer(stream).await;
                    total += start.elapsed();
                    assert!(text.contains(r#"\"mentions\":1"#), "{text}");
                }
                total
            })
        })
    });
}

/// Process CPU time (user + system) so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct FloodRun {
    /// The whole process's CPU per line.
    cpu_per_line: Duration,
    /// The engine thread's CPU per line: what the IRC connection pays.
    engine_per_line: Duration,
    /// From the last line written to the session storing it.
    stored_lag: Duration,
    /// From the last line written to collection being idle again.
    collected_lag: Duration,
    /// Batches read, rows they brought back, and ranges given up as evicted.
    batches: u64,
    rows: u64,
    evicted_ranges: u64,
}

/// Writes the flood in 1 ms ticks and measures what it cost.
async fn flood(rig: &mut Rig, tick: &mut u64) -> FloodRun {
    let lines = FLOOD_RATE * FLOOD_SECONDS;
    let per_tick = FLOOD_RATE / 1000;
    let rows_before = rig.rows.load(Ordering::Relaxed);
    let before = rig.server.updates().stats().await.expect("stats");
    let cpu_before = cpu_time();
    let engine_before = thread_cpu(rig.engine_clock);
    let mut interval = tokio::time::interval(Duration::from_millis(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    for t in 0..lines / per_tick {
        interval.tick().await;
        let mut chunk = String::new();
        for i in 0..per_tick {
            *tick += 1;
            let c = (t * per_tick + i) as usize % CHANNELS;
            let text = if *tick % 50 == 0 {
                format!("{NICK}: look at this {tick}")
            } else {
                format!("line {tick} of the flood, nothing to see here")
            };
            chunk.push_str(&format!(
                ":user{}!u@bench PRIVMSG #c{c} :{text}\r\n",
                *tick % 7
            ));
        }
        rig.irc
            .write_all(chunk.as_bytes())
            .await
            .expect("irc write");
    }
    let written = Instant::now();
    while rig.rows.load(Ordering::Relaxed) < rows_before + lines {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let stored_lag = written.elapsed();
    // Collection has caught up when no session is reading or pausing.
    let mut after = rig.server.updates().stats().await.expect("stats");
    while after.busy_sessions > 0 {
        tokio::time::sleep(Duration::from_micros(200)).await;
        after = rig.server.updates().stats().await.expect("stats");
    }
    let collected_lag = written.elapsed();
    let cpu = cpu_time() - cpu_before;
    let engine = thread_cpu(rig.engine_clock) - engine_before;
    FloodRun {
        cpu_per_line: cpu / lines as u32,
        engine_per_line: engine / lines as u32,
        stored_lag,
        collected_lag,
        batches: after.batches - before.batches,
        rows: after.rows - before.rows,
        evicted_ranges: after.evicted_ranges - before.evicted_ranges,
    }
}

async fn subscribe_sixteen(rig: &Rig) {
    let filters = [
        json!({"mentions": true}),
        json!({"from": ["user3"]}),
        json!({"match": "nothing to see"}),
        json!({"kinds": ["privmsg", "notice", "action", "join"]}),
    ];
    for i in 0..16 {
        let args = Args::from_request(Some(&filters[i % filters.len()])).expect("object");
        let filter = rete_mcp::tools::subscribe::parse(&args).expect("filter");
        rig.server
            .updates()
            .subscribe(filter, &CancellationToken::new())
            .await
            .expect("asked")
            .expect("room");
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn flood_load_test(rt: &Runtime, rig: &mut Rig) {
    let mut tick = 0;
    let mut none = Vec::new();
    let mut sixteen = Vec::new();
    let show = |label: &str, run: &FloodRun| {
        println!(
            "flood, {label}: engine {:>5.2} µs CPU per line (process {:>5.2} µs); last line stored {:>4.1} ms and collection idle {:>4.1} ms after it was written; {} batches read {} rows, {} ranges evicted",
            run.engine_per_line.as_secs_f64() * 1e6,
            run.cpu_per_line.as_secs_f64() * 1e6,
            run.stored_lag.as_secs_f64() * 1e3,
            run.collected_lag.as_secs_f64() * 1e3,
            run.batches,
            run.rows,
            run.evicted_ranges
        );
    };
    rt.block_on(async {
        // Unsubscribe everything the latency bench left.
        let listed = rig
            .server
            .updates()
            .list(&CancellationToken::new())
            .await
            .expect("list");
        for l in listed {
            let _ = rig
                .server
                .updates()
                .unsubscribe(l.id, &CancellationToken::new())
                .await;
        }
        for _ in 0..3 {
            let run = flood(rig, &mut tick).await;
            show("no subscription", &run);
            none.push(run);
        }
        subscribe_sixteen(rig).await;
        for _ in 0..3 {
            let run = flood(rig, &mut tick).await;
            show("16 subscriptions", &run);
            sixteen.push(run);
        }
    });
    let med =
        |runs: &[FloodRun], f: fn(&FloodRun) -> Duration| median(runs.iter().map(f).collect());
    let (a, b) = (
        med(&none, |r| r.engine_per_line),
        med(&sixteen, |r| r.engine_per_line),
    );
    let (pa, pb) = (
        med(&none, |r| r.cpu_per_line),
        med(&sixteen, |r| r.cpu_per_line),
    );
    println!(
        "flood at {FLOOD_RATE} lines/s over {CHANNELS} channels, median per line: engine {:.2} µs with none, {:.2} µs with 16 subscriptions: {:.2}x (target within 2x); whole process {:.2} vs {:.2} µs: {:.2}x",
        a.as_secs_f64() * 1e6,
        b.as_secs_f64() * 1e6,
        b.as_secs_f64() / a.as_secs_f64(),
        pa.as_secs_f64() * 1e6,
        pb.as_secs_f64() * 1e6,
        pb.as_secs_f64() / pa.as_secs_f64()
    );
}

fn main() {
    let rt = Runtime::new().expect("runtime");
    let mut rig = rt.block_on(start());
    let mut criterion = Criterion::default().configure_from_args();
    latency(&mut criterion, &rt, &mut rig);
    criterion.final_summary();
    flood_load_test(&rt, &mut rig);
    rt.block_on(rig.server.stop());
}
