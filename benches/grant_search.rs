//! `search_messages` over 100,000 rows in 10 channels through the whole
//! control server, once with the full token and once with a scoped grant
//! whose scope covers the same channels (`buffers=#c*`, queries off), in
//! interleaved rounds of one run, so the machine's noise falls on both.
//!
//! Target: the scoped search within 1.05x of the full token's (issue 33):
//! what a grant adds is the gate's look-up of its token among the grants
//! and one glob match per buffer.
//!
//! The rows come from a fake IRC server on loopback that welcomes the
//! session and sends them. The control server refuses to run as root: run
//! this as an ordinary user, `scripts/bench-control grant_search` (which
//! runs it as `nobody` when started as root).
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/loopback.rs"]
mod loopback;

use rete_actors::{Rete, ReteOptions};
use rete_mcp::access_log::AccessLog;
use rete_mcp::grant::{GrantRecord, GrantSpec, Grants};
use rete_mcp::server::{ControlServer, ServerSettings};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

const NICK: &str = "mriron";
const CHANNELS: usize = 10;
const ROWS: usize = 100_000;
/// In 20 rows, all among the oldest, so every row is walked.
const NEEDLE: &str = "Kumquat";
const ROUNDS: usize = 200;

/// Welcomes the session, joins it to the channels and sends the rows.
async fn serve_rows(listener: TcpListener) {
    let mut write = loopback::accept_registration(listener).await;
    let mut out = format!(":irc.bench 001 {NICK} :Welcome\r\n");
    for c in 0..CHANNELS {
        out.push_str(&format!(":{NICK}!u@bench JOIN #c{c}\r\n"));
    }
    for i in 0..ROWS {
        let text = if i < 20 {
            format!("the {NEEDLE} number {i}")
        } else {
            format!("message number {i} with some ordinary chat text about the build")
        };
        out.push_str(&format!(
            ":nick{}!u@h PRIVMSG #c{} :{text}\r\n",
            i % 50,
            i % CHANNELS
        ));
    }
    write.write_all(out.as_bytes()).await.expect("rows");
    std::future::pending::<()>().await;
}

async fn post(port: u16, token: &str, arguments: serde_json::Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_messages", "arguments": arguments}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let irc = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let irc_port = irc.local_addr().expect("addr").port();
    tokio::spawn(serve_rows(irc));
    let rete = Arc::new(Rete::start(ReteOptions::default()).await.expect("rete"));
    let mut config = loopback::config("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c01", "bench", NICK);
    config.buffer_capacity = ROWS;
    rete.add_session(loopback::session_spec(config, irc_port))
        .await
        .expect("session");
    let session = rete.sessions().remove(0).reader();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let held = session
            .read(|v| v.buffers().map(|b| b.len()).sum::<usize>())
            .await
            .unwrap_or(0);
        if held >= ROWS {
            break;
        }
        assert!(Instant::now() < deadline, "only {held} rows arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let grants = Grants::default();
    let spec = GrantSpec::parse(&["bench", "networks=bench", "buffers=#c*", "expires=never"])
        .expect("spec");
    let (record, grant_token) = GrantRecord::issue(spec, 0);
    grants.add(record).expect("grant");
    let home = std::env::var_os("HOME").expect("HOME");
    let secrets = std::path::Path::new(&home).join(format!(
        "rete-bench-grant-search-{}.json",
        std::process::id()
    ));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let settings = ServerSettings {
        port,
        debug: false,
        send: false,
        tokens: Arc::new(reterm::secrets::SecretsFile {
            path: secrets.clone(),
        }),
        grants,
    };
    let server = ControlServer::start(rete.clone(), settings, Arc::new(AccessLog::new()))
        .await
        .expect("the control server starts (run as a non-root user: scripts/bench-control)");
    let full_token = server.token().expose().to_owned();

    for (what, arguments) in [
        ("substring, a page", json!({"query": NEEDLE})),
        ("count_only", json!({"query": NEEDLE, "count_only": true})),
    ] {
        // Both find the same 20 rows (the full token's coverage lists the
        // server buffer too).
        let full = post(port, &full_token, arguments.clone()).await;
        let scoped = post(port, grant_token.expose(), arguments.clone()).await;
        for answer in [&full, &scoped] {
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(!answer.contains("isError\":true"), "{answer}");
        }
        let (mut f, mut s) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Alternate which goes first, so neither always meets a warm cache.
            let order = if round % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for full_first in order {
                let token = if full_first {
                    full_token.as_str()
                } else {
                    grant_token.expose()
                };
                let start = Instant::now();
                let answer = post(port, token, arguments.clone()).await;
                let took = start.elapsed();
                assert!(answer.starts_with("HTTP/1.1 200"));
                if full_first {
                    f.push(took)
                } else {
                    s.push(took)
                }
            }
        }
        let (f, s) = (median(f), median(s));
        println!(
            "search_messages {what} over {ROWS} rows: full token {:.2} ms, scoped grant {:.2} ms, ratio {:.3}",
            f.as_secs_f64() * 1e3,
            s.as_secs_f64() * 1e3,
            s.as_secs_f64() / f.as_secs_f64()
        );
    }
    server.stop().await;
    let _ = std::fs::remove_file(&secrets);
    let _ = std::fs::remove_file(secrets.with_extension("json.lock"));
}
