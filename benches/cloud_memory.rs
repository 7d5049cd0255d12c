//! rete-cloud's memory beside ZNC's, in one run (issue 32): the resident set per idle
//! network and per attached client, before and after a flood of 2,000 connections that
//! never log in, and while 50 networks receive 10,000 lines a second between them.
//!
//! Real processes from `tests/support`: InspIRCd 3 (flood limits off) upstream; ZNC 1.8
//! with one network per channel (its default 500-line buffers); the release `rete-cloud`
//! with one user and one network per channel (its defaults: every row stored, the engine's
//! buffers bounded). Memory is `VmRSS` from `/proc`. Per network: the difference between
//! one network and fifty, over 49. Per client: fifty clients logged in (ZNC: IRC clients
//! of its first network; the service: WebSocket clients past `auth` and `ready`), over 50.
//!
//! Run: `cargo bench --bench cloud_memory`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_test_support as support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use support::cloud::{add_network, cli_with, release_binary, Service};
use support::{Bot, Inspircd, InspircdConfig, Msg, Znc, ZncConfig, DEFAULT_TIMEOUT};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

const NETWORKS: usize = 50;
const CLIENTS: usize = 50;
const FLOOD_CONNECTIONS: usize = 2_000;
/// How long the flood's connections are held open.
const FLOOD_HOLD: Duration = Duration::from_secs(5);
/// How long after a burst ends memory is read again.
const SETTLE: Duration = Duration::from_secs(5);
/// Lines a second, all channels together, and for how long.
const RATE: usize = 10_000;
const RATE_SECONDS: u64 = 20;

fn channel(i: usize) -> String {
    format!("#c{i}")
}

/// The resident set of `pid`, in KiB.
fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn kib_each(total: i64, n: usize) -> String {
    format!("{:.0} KiB", total as f64 / n as f64)
}

/// Raises the open-file limit to its ceiling: the flood holds 2,000 sockets.
fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Waits until `watch` saw nicks `nicks(i)`, for each i in `range`, join.
async fn joined(
    watch: &mut Bot,
    nicks: &dyn Fn(usize) -> String,
    range: std::ops::Range<usize>,
) -> Result<()> {
    let want: HashSet<String> = range.map(nicks).collect();
    let mut seen = HashSet::new();
    while seen.len() < want.len() {
        let l = watch
            .wait_for(|l| Msg::parse(l).command == "JOIN", DEFAULT_TIMEOUT * 4)
            .await?;
        if let Some(n) = Msg::parse(&l).source_nick() {
            if want.contains(n) {
                seen.insert(n.to_owned());
            }
        }
    }
    Ok(())
}

/// An IRC client of ZNC's first network, registered.
async fn znc_client(port: u16, login: &str, i: usize) -> Result<BufReader<TcpStream>> {
    let mut s = BufReader::new(TcpStream::connect(("127.0.0.1", port)).await?);
    s.get_mut()
        .write_all(format!("PASS {login}\r\nNICK zc{i}\r\nUSER zc{i} 0 * :zc\r\n").as_bytes())
        .await?;
    let mut line = String::new();
    let deadline = Instant::now() + DEFAULT_TIMEOUT;
    loop {
        line.clear();
        let n = tokio::time::timeout_at(deadline.into(), s.read_line(&mut line)).await??;
        if n == 0 {
            bail!("ZNC closed client {i}");
        }
        if line.contains(" 001 ") {
            return Ok(s);
        }
    }
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

/// A WebSocket client of the service, past `ready`.
async fn cloud_client(addr: &str, token: &str) -> Result<Ws> {
    let tcp = TcpStream::connect(addr).await?;
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp).await?;
    let auth =
        serde_json::json!({"type":"auth","version":1,"token":token,"client":"bench/1","resume":[]});
    ws.send(Message::text(auth.to_string())).await?;
    let deadline = Instant::now() + DEFAULT_TIMEOUT;
    loop {
        let msg = tokio::time::timeout_at(deadline.into(), ws.next())
            .await?
            .context("closed before ready")??;
        if let Message::Text(t) = msg {
            if t.as_str().contains("\"type\":\"ready\"") {
                return Ok(ws);
            }
        }
    }
}

/// Opens up to `FLOOD_CONNECTIONS` plain TCP connections that send nothing, holds them,
/// closes them; returns (before, while held, after settling) for `pid`.
async fn flood(pid: u32, addr: &str) -> Result<(u64, u64, u64)> {
    let before = rss_kib(pid)?;
    let mut held = Vec::new();
    for _ in 0..FLOOD_CONNECTIONS {
        if let Ok(s) = TcpStream::connect(addr).await {
            held.push(s);
        }
    }
    tokio::time::sleep(FLOOD_HOLD).await;
    let during = rss_kib(pid)?;
    drop(held);
    tokio::time::sleep(SETTLE).await;
    Ok((before, during, rss_kib(pid)?))
}

fn main() -> Result<()> {
    raise_nofile();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let channels: Vec<String> = (0..NETWORKS).map(channel).collect();
    let names: Vec<&str> = channels.iter().map(String::as_str).collect();
    let bin = release_binary()?;
    let server = Inspircd::start(InspircdConfig::new()).await?;
    let ircd = server.port();
    let mut watch = Bot::connect(ircd, "watch").await?;
    for c in &channels {
        watch.join(c).await?;
    }

    // ZNC: one network, then fifty.
    let znc_one = Znc::start(
        ZncConfig::new(ircd, "z")
            .channels(&names[..1])
            .network_per_channel(),
    )
    .await?;
    joined(&mut watch, &|i| format!("z{i}"), 0..1).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let znc_rss_one = rss_kib(znc_one.pid().context("ZNC pid")?)?;
    drop(znc_one);
    let znc = Znc::start(
        ZncConfig::new(ircd, "z")
            .channels(&names)
            .network_per_channel(),
    )
    .await?;
    let znc_pid = znc.pid().context("ZNC pid")?;
    joined(&mut watch, &|i| format!("z{i}"), 0..NETWORKS).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let znc_rss_all = rss_kib(znc_pid)?;

    // The service: one network, then forty-nine more added while it runs.
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("cloud.db");
    let token = cli_with(&bin, &db, &["user", "add", "alice"])?;
    let upstream = format!("127.0.0.1:{ircd}");
    let add = |i: usize| -> Result<String> {
        let net = format!("n{i}");
        let nick = format!("s{i}");
        let chan = channel(i);
        add_network(&bin, &db, &net, &upstream, &nick, &chan)
    };
    add(0)?;
    let clients = CLIENTS.to_string();
    let service = Service::start_with(
        &bin,
        &db,
        &["--admin-poll-ms", "200", "--max-clients-per-user", &clients],
    )
    .await?;
    let cloud_pid = service.child.pid();
    joined(&mut watch, &|i| format!("s{i}"), 0..1).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cloud_rss_one = rss_kib(cloud_pid)?;
    for i in 1..NETWORKS {
        add(i)?;
    }
    joined(&mut watch, &|i| format!("s{i}"), 1..NETWORKS).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cloud_rss_all = rss_kib(cloud_pid)?;

    // Fifty clients each.
    let before = rss_kib(znc_pid)?;
    let mut zc = Vec::new();
    for i in 0..CLIENTS {
        zc.push(znc_client(znc.port(), &znc.login(), i).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let znc_clients = rss_kib(znc_pid)? as i64 - before as i64;
    drop(zc);
    let before = rss_kib(cloud_pid)?;
    let mut cc = Vec::new();
    for _ in 0..CLIENTS {
        cc.push(cloud_client(&service.addr, &token).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cloud_clients = rss_kib(cloud_pid)? as i64 - before as i64;
    drop(cc);
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Connections that never log in.
    let znc_flood = flood(znc_pid, &format!("127.0.0.1:{}", znc.port())).await?;
    let cloud_flood = flood(cloud_pid, &service.addr).await?;

    // 10,000 lines a second across the fifty channels, sampled each second.
    let mut speaker = Bot::connect(ircd, "speaker").await?;
    for c in &channels {
        speaker.join(c).await?;
    }
    let (mut znc_peak, mut cloud_peak) = (0, 0);
    let start = Instant::now();
    let mut sent = 0usize;
    let tick = Duration::from_millis(10);
    let per_tick = RATE / 100;
    let mut next_sample = start + Duration::from_secs(1);
    while start.elapsed() < Duration::from_secs(RATE_SECONDS) {
        for _ in 0..per_tick {
            let line = format!(
                "PRIVMSG {} :rate line {sent} with some words to make it look like chat",
                channels[sent % NETWORKS]
            );
            speaker.send(&line).await?;
            sent += 1;
        }
        if Instant::now() >= next_sample {
            znc_peak = znc_peak.max(rss_kib(znc_pid)?);
            cloud_peak = cloud_peak.max(rss_kib(cloud_pid)?);
            next_sample += Duration::from_secs(1);
        }
        tokio::time::sleep_until((start + tick * (sent / per_tick) as u32).into()).await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    tokio::time::sleep(SETTLE).await;
    let (znc_after, cloud_after) = (rss_kib(znc_pid)?, rss_kib(cloud_pid)?);
    let stored = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("SELECT count(*) FROM rows")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();

    println!("rete-cloud beside ZNC, one run ({NETWORKS} networks, one channel each)");
    println!(
        "  idle, one network:          rete-cloud {:>10}   ZNC {:>10}",
        mib(cloud_rss_one),
        mib(znc_rss_one)
    );
    println!(
        "  idle, {NETWORKS} networks:         rete-cloud {:>10}   ZNC {:>10}",
        mib(cloud_rss_all),
        mib(znc_rss_all)
    );
    println!(
        "  per idle network:           rete-cloud {:>10}   ZNC {:>10}",
        kib_each(cloud_rss_all as i64 - cloud_rss_one as i64, NETWORKS - 1),
        kib_each(znc_rss_all as i64 - znc_rss_one as i64, NETWORKS - 1)
    );
    println!(
        "  per attached client:        rete-cloud {:>10}   ZNC {:>10}",
        kib_each(cloud_clients, CLIENTS),
        kib_each(znc_clients, CLIENTS)
    );
    for (who, (b, d, a)) in [("rete-cloud", cloud_flood), ("ZNC", znc_flood)] {
        println!(
            "  {FLOOD_CONNECTIONS} connections never logging in, {who}: before {}, held {}, {} s after {}",
            mib(b),
            mib(d),
            SETTLE.as_secs(),
            mib(a)
        );
    }
    println!(
        "  {sent} lines in {elapsed:.1} s ({:.0}/s): peak rete-cloud {}, ZNC {}; {} s after: rete-cloud {}, ZNC {}",
        sent as f64 / elapsed,
        mib(cloud_peak),
        mib(znc_peak),
        SETTLE.as_secs(),
        mib(cloud_after),
        mib(znc_after)
    );
    if !stored.is_empty() {
        println!("  rows the service holds: {}", stored.trim());
    }
    Ok(())
}
