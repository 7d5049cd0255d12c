//! A `list_sessions` call through the whole control server (peer check,
//! strict head, gate, route, JSON-RPC, the tool, the budget) beside a bare
//! hyper server answering a fixed 200, both on loopback, one request per
//! connection, measured side by side in one run.
//!
//! Target: the control server within 1.5x of the bare hyper server.
//!
//! The control server refuses to run as root, so run this as an ordinary
//! user: `scripts/bench-control` builds it and runs it as `nobody` when
//! started as root.

use criterion::{criterion_group, criterion_main, Criterion};
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
/// Content-Length, then resets the connection.
///
/// The reset (SO_LINGER 0) keeps thousands of benchmark connections from
/// piling up in TIME_WAIT: they would fill the kernel's socket table, which
/// the control server's peer check reads on every connection, and measure
/// that pile-up rather than the server.
async fn round_trip(addr: SocketAddr, request: &[u8]) -> usize {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.expect("read");
        answer.extend_from_slice(&buf[..n]);
        if n == 0 || response_complete(&answer) {
            break;
        }
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    stream.set_zero_linger().expect("linger");
    answer.len()
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
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{BODY}",
        BODY.len()
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
            connect: ConnectConfig {
                host: "127.0.0.1".into(),
                port: 9,
                tls: false,
                tls_fingerprint: None,
                client_cert: None,
                connect_timeout: Duration::from_secs(1),
            },
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
        secrets,
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

fn control_vs_hyper(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let (server, control_addr) = rt.block_on(start_control());
    let hyper_addr = rt.block_on(start_bare_hyper());
    let control_request = request(control_addr.port(), server.token().expose());
    let hyper_request = request(hyper_addr.port(), "unused");

    let mut group = c.benchmark_group("loopback_round_trip");
    group.bench_function("list_sessions_through_the_gate", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    round_trip(control_addr, &control_request).await;
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("bare_hyper_fixed_200", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    round_trip(hyper_addr, &hyper_request).await;
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    rt.block_on(server.stop());
}

criterion_group!(benches, control_vs_hyper);
criterion_main!(benches);
