//! A `list_sessions` call through the whole control server (peer check,
//! strict head, gate, route, JSON-RPC, the tool, the budget) beside a bare
//! hyper server answering a fixed 200, both on loopback, one request per
//! connection, measured side by side in one run.
//!
//! Target: the control server within 1.5x of the bare hyper server one
//! request at a time; with 8 clients at once (the contract's connection
//! limit), each opening its next connection as soon as it has read an
//! answer, within 1.2x of its throughput, and within 1.1x of its median at
//! one client. After criterion's groups, a side-by-side table measures both
//! servers at 1, 4 and 8 clients in interleaved rounds (requests per second,
//! median, and connections closed unanswered, which must be 0).
//!
//! `CONTROL_ERAS=1` instead measures the same `list_sessions` call in the
//! 2026-07-28 era (its `_meta` envelope and the headers mirroring the body)
//! beside the handshake era, on the one server, in interleaved rounds at 1
//! and 8 clients: target, the 2026-07-28 round trip within 1.1x of the
//! handshake era's. `scripts/bench-control eras` runs it so.
//!
//! `CONTROL_PROFILE=control` (or `hyper`) instead serves a fixed number of
//! requests from 8 clients and exits, for a profiler such as callgrind:
//! `scripts/bench-control callgrind control` runs it so.
//!
//! The control server refuses to run as root, so run this as an ordinary
//! user: `scripts/bench-control` builds it and runs it as `nobody` when
//! started as root.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, Criterion, Throughput};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rete_actors::{Rete, ReteOptions, SessionSpec};
use rete_engine::ids::SessionId;
use rete_engine::session::SessionConfig;
use rete_mcp::access_log::AccessLog;
use rete_mcp::server::{ControlServer, ServerSettings};
use rete_transports::{Backoff, ConnectConfig};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#;

/// Sends one request on a fresh connection, reads the answer up to its
/// Content-Length, then resets the connection. None when the connection was
/// closed before the answer was complete (closed unanswered).
///
/// The reset (SO_LINGER 0) keeps thousands of benchmark connections from
/// piling up in TIME_WAIT: they would fill the kernel's socket table, which
/// the control server's peer check reads on every connection, and measure
/// that pile-up rather than the server.
async fn round_trip(addr: SocketAddr, request: &[u8]) -> Option<usize> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    if stream.write_all(request).await.is_err() {
        return None;
    }
    let mut answer = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => n,
        };
        answer.extend_from_slice(&buf[..n]);
        if response_complete(&answer) {
            break;
        }
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    stream.set_zero_linger().expect("linger");
    Some(answer.len())
}

/// `total` requests from `clients` clients at once, each sending its next
/// request on a fresh connection as soon as it has read the last answer.
/// Returns every answered request's latency and the count closed unanswered.
async fn from_clients(
    addr: SocketAddr,
    request: &Arc<[u8]>,
    clients: usize,
    total: u64,
) -> (Vec<Duration>, usize) {
    let tasks: Vec<_> = (0..clients as u64)
        .map(|i| {
            let request = request.clone();
            // Share `total` out; the first clients take the remainder.
            let mine = total / clients as u64 + u64::from(i < total % clients as u64);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(mine as usize);
                let mut unanswered = 0;
                for _ in 0..mine {
                    let sent = Instant::now();
                    match round_trip(addr, &request).await {
                        Some(_) => latencies.push(sent.elapsed()),
                        None => unanswered += 1,
                    }
                }
                (latencies, unanswered)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total as usize);
    let mut unanswered = 0;
    for task in tasks {
        let (mine, lost) = task.await.expect("client");
        latencies.extend(mine);
        unanswered += lost;
    }
    (latencies, unanswered)
}

/// True once the head and Content-Length bytes of body have arrived.
fn response_complete(answer: &[u8]) -> bool {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    answer.len() >= end + 4 + length
}

fn request(port: u16, token: &str) -> Vec<u8> {
    request_with(port, token, "", BODY)
}

/// The list_sessions call of the 2026-07-28 era: the envelope in `_meta`.
const MODERN_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}"#;
/// Its headers, mirroring the body.
const MODERN_HEADERS: &str =
    "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: list_sessions\r\n";

fn request_with(port: u16, token: &str, extra_headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {extra_headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn start_control() -> (ControlServer, SocketAddr) {
    let rete = Arc::new(Rete::start(ReteOptions::default()).await.expect("rete"));
    for i in 0..3 {
        let id =
            SessionId::parse(&format!("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c{i:02}")).expect("id");
        rete.add_session(SessionSpec {
            config: SessionConfig::new(id, &format!("net{i}"), "rete"),
            transport: rete_transports::Transport::Irc(ConnectConfig {
                host: "127.0.0.1".into(),
                port: 9,
                tls: false,
                tls_fingerprint: None,
                client_cert: None,
                connect_timeout: Duration::from_secs(1),
            }),
            autoconnect: false,
            reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(1)),
        })
        .await
        .expect("session");
    }
    let port = free_port();
    let secrets =
        std::env::temp_dir().join(format!("rete-bench-secrets-{}.json", std::process::id()));
    let settings = ServerSettings {
        port,
        debug: false,
        send: false,
        tokens: Arc::new(reterm::secrets::SecretsFile { path: secrets }),
        grants: Default::default(),
    };
    let server = ControlServer::start(rete, settings, Arc::new(AccessLog::new()))
        .await
        .expect("the control server starts (run as a non-root user: scripts/bench-control)");
    (server, SocketAddr::from(([127, 0, 0, 1], port)))
}

async fn start_bare_hyper() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Both servers, started once, and the request each is sent.
struct Peers {
    rt: Runtime,
    server: ControlServer,
    control: (SocketAddr, Arc<[u8]>),
    hyper: (SocketAddr, Arc<[u8]>),
}

impl Peers {
    fn start() -> Peers {
        let rt = Runtime::new().expect("runtime");
        let (server, control_addr) = rt.block_on(start_control());
        let hyper_addr = rt.block_on(start_bare_hyper());
        let control_request = request(control_addr.port(), server.token().expose()).into();
        let hyper_request = request(hyper_addr.port(), "unused").into();
        Peers {
            rt,
            server,
            control: (control_addr, control_request),
            hyper: (hyper_addr, hyper_request),
        }
    }

    fn stop(self) {
        self.rt.block_on(self.server.stop());
    }
}

fn control_vs_hyper(c: &mut Criterion) {
    let peers = Peers::start();
    let rt = &peers.rt;
    let mut group = c.benchmark_group("loopback_round_trip");
    for (name, (addr, request)) in [
        ("list_sessions_through_the_gate", &peers.control),
        ("bare_hyper_fixed_200", &peers.hyper),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        round_trip(*addr, request).await.expect("answered");
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();

    // The same requests from as many clients at once as there are slots;
    // criterion's time per iteration is the inverse of the throughput.
    let mut group = c.benchmark_group("eight_clients_at_once");
    group.throughput(Throughput::Elements(1));
    for (name, (addr, request)) in [
        ("list_sessions_through_the_gate", &peers.control),
        ("bare_hyper_fixed_200", &peers.hyper),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    let (_, unanswered) = from_clients(*addr, request, SLOTS, iters).await;
                    assert_eq!(unanswered, 0, "connections closed unanswered");
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
    peers.stop();
}

/// The connection limit the contract sets.
const SLOTS: usize = 8;
/// Rounds of the side-by-side table; each measures both servers in turn.
const ROUNDS: usize = 7;
/// Requests per server, round and client count.
const PER_RUN: u64 = 3_000;

/// One server at one client count over the rounds.
#[derive(Default)]
struct Runs {
    throughputs: Vec<f64>,
    latencies: Vec<Duration>,
    /// The process's CPU time (user and system, every thread: servers and
    /// clients) per answered request, one entry per round.
    cpu_per_request: Vec<Duration>,
    unanswered: usize,
}

impl Runs {
    fn record(
        &mut self,
        elapsed: Duration,
        cpu: Duration,
        latencies: Vec<Duration>,
        unanswered: usize,
    ) {
        let answered = latencies.len().max(1) as u32;
        self.throughputs
            .push(latencies.len() as f64 / elapsed.as_secs_f64());
        self.cpu_per_request.push(cpu / answered);
        self.latencies.extend(latencies);
        self.unanswered += unanswered;
    }

    /// The median round's requests per second.
    fn throughput(&mut self) -> f64 {
        self.throughputs.sort_by(f64::total_cmp);
        self.throughputs[self.throughputs.len() / 2]
    }

    /// The median round's CPU time per request.
    fn cpu(&mut self) -> Duration {
        self.cpu_per_request.sort();
        self.cpu_per_request[self.cpu_per_request.len() / 2]
    }

    /// The median request's latency over every round.
    fn median(&mut self) -> Duration {
        self.latencies.sort();
        self.latencies[self.latencies.len() / 2]
    }
}

/// The CPU time this process has used so far, user and system, all threads.
fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Both servers at 1, 4 and 8 clients, in interleaved rounds so that a
/// change in the machine's load falls on both, printed as a table.
fn side_by_side() {
    let peers = Peers::start();
    let counts = [1, 4, SLOTS];
    let mut control: Vec<Runs> = counts.iter().map(|_| Runs::default()).collect();
    let mut hyper: Vec<Runs> = counts.iter().map(|_| Runs::default()).collect();
    peers.rt.block_on(async {
        // Warm both up.
        from_clients(peers.control.0, &peers.control.1, SLOTS, 1_000).await;
        from_clients(peers.hyper.0, &peers.hyper.1, SLOTS, 1_000).await;
        for _ in 0..ROUNDS {
            for (i, &clients) in counts.iter().enumerate() {
                for ((addr, request), runs) in [
                    (&peers.control, &mut control[i]),
                    (&peers.hyper, &mut hyper[i]),
                ] {
                    let (start, cpu) = (Instant::now(), process_cpu());
                    let (latencies, unanswered) =
                        from_clients(*addr, request, clients, PER_RUN).await;
                    runs.record(start.elapsed(), process_cpu() - cpu, latencies, unanswered);
                }
            }
        }
    });
    println!(
        "\nside by side, {ROUNDS} interleaved rounds of {PER_RUN} requests per server \
         (median round's req/s and CPU per request; median latency over all rounds; \
         CPU is the whole process's, clients included):"
    );
    println!("| clients | control server | bare hyper | throughput, hyper ÷ control | median, control ÷ hyper | CPU per request, control ÷ hyper | closed unanswered (control) |");
    println!("|---|---|---|---|---|---|---|");
    for (i, clients) in counts.iter().enumerate() {
        let (c, h) = (&mut control[i], &mut hyper[i]);
        let (ct, ht, cm, hm, cc, hc) = (
            c.throughput(),
            h.throughput(),
            c.median(),
            h.median(),
            c.cpu(),
            h.cpu(),
        );
        println!(
            "| {clients} | {ct:.0} req/s, median {} µs, CPU {} µs | {ht:.0} req/s, median {} µs, CPU {} µs | {:.2}x | {:.2}x | {:.2}x | {} of {} |",
            cm.as_micros(),
            cc.as_micros(),
            hm.as_micros(),
            hc.as_micros(),
            ht / ct,
            cm.as_secs_f64() / hm.as_secs_f64(),
            cc.as_secs_f64() / hc.as_secs_f64(),
            c.unanswered,
            ROUNDS as u64 * PER_RUN,
        );
    }
    peers.stop();
}

/// `CONTROL_ERAS=1`: the handshake era's list_sessions call (with the
/// MCP-Protocol-Version a 2025-11-25 client sends) beside the 2026-07-28
/// era's, on one server, in interleaved rounds at 1 and 8 clients.
fn eras() {
    let rt = Runtime::new().expect("runtime");
    let (server, addr) = rt.block_on(start_control());
    let token = server.token().expose();
    let handshake: Arc<[u8]> = request_with(
        addr.port(),
        token,
        "MCP-Protocol-Version: 2025-11-25\r\n",
        BODY,
    )
    .into();
    let modern: Arc<[u8]> = request_with(addr.port(), token, MODERN_HEADERS, MODERN_BODY).into();
    let counts = [1, SLOTS];
    let mut old: Vec<Runs> = counts.iter().map(|_| Runs::default()).collect();
    let mut new: Vec<Runs> = counts.iter().map(|_| Runs::default()).collect();
    rt.block_on(async {
        from_clients(addr, &handshake, SLOTS, 1_000).await;
        from_clients(addr, &modern, SLOTS, 1_000).await;
        for round in 0..ROUNDS {
            for (i, &clients) in counts.iter().enumerate() {
                // Alternate which era goes first, so neither always meets a
                // machine the other has just warmed or loaded.
                let mut order = [(&handshake, &mut old[i]), (&modern, &mut new[i])];
                if round % 2 == 1 {
                    order.reverse();
                }
                for (request, runs) in order {
                    let (start, cpu) = (Instant::now(), process_cpu());
                    let (latencies, unanswered) =
                        from_clients(addr, request, clients, PER_RUN).await;
                    runs.record(start.elapsed(), process_cpu() - cpu, latencies, unanswered);
                }
            }
        }
    });
    println!(
        "\nlist_sessions by era, {ROUNDS} interleaved rounds of {PER_RUN} requests per era \
         (median round's req/s and CPU per request; median latency over all rounds):"
    );
    println!("| clients | handshake era (2025-11-25) | 2026-07-28 era | median, 2026-07-28 ÷ handshake | throughput, handshake ÷ 2026-07-28 | CPU per request, 2026-07-28 ÷ handshake | closed unanswered |");
    println!("|---|---|---|---|---|---|---|");
    for (i, clients) in counts.iter().enumerate() {
        let (o, n) = (&mut old[i], &mut new[i]);
        let (ot, nt, om, nm, oc, nc) = (
            o.throughput(),
            n.throughput(),
            o.median(),
            n.median(),
            o.cpu(),
            n.cpu(),
        );
        println!(
            "| {clients} | {ot:.0} req/s, median {} µs, CPU {} µs | {nt:.0} req/s, median {} µs, CPU {} µs | {:.2}x | {:.2}x | {:.2}x | {} |",
            om.as_micros(),
            oc.as_micros(),
            nm.as_micros(),
            nc.as_micros(),
            nm.as_secs_f64() / om.as_secs_f64(),
            ot / nt,
            nc.as_secs_f64() / oc.as_secs_f64(),
            o.unanswered + n.unanswered,
        );
    }
    rt.block_on(server.stop());
}

/// `CONTROL_PROFILE=control|hyper`: a fixed load on one server from 8
/// clients, nothing else, so that a profiler's counts divide by a known
/// number of requests.
fn profile(which: &str) {
    const WARM_UP: u64 = 200;
    const REQUESTS: u64 = 2_000;
    let peers = Peers::start();
    let (addr, request) = match which {
        "control" => &peers.control,
        "hyper" => &peers.hyper,
        other => panic!("CONTROL_PROFILE is control or hyper, not {other:?}"),
    };
    peers.rt.block_on(async {
        from_clients(*addr, request, SLOTS, WARM_UP).await;
        let (_, unanswered) = from_clients(*addr, request, SLOTS, REQUESTS).await;
        assert_eq!(unanswered, 0, "connections closed unanswered");
    });
    println!("{REQUESTS} requests from {SLOTS} clients to the {which} server (after {WARM_UP} to warm up)");
    peers.stop();
}

criterion_group!(benches, control_vs_hyper);

fn main() {
    if let Ok(which) = std::env::var("CONTROL_PROFILE") {
        return profile(&which);
    }
    if std::env::var_os("CONTROL_ERAS").is_some() {
        return eras();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    side_by_side();
}
