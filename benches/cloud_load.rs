//! One `rete-cloud` service holding 200 IRC connections to InspIRCd (one user, 200
//! networks, each its own connection with its own channel) under a bot load of 1,000
//! lines/s spread over them: memory per connection and CPU per 1,000 lines/s.
//!
//! Real processes: InspIRCd 3 from `tests/support` (its one connect class allows 100,000
//! connections per IP, no flood limits), the release `rete-cloud` binary, and a raw-socket
//! bot in every channel that sends the load.
//!
//! - RSS per connection: the service's VmRSS with the 200 networks connected and joined,
//!   minus its VmRSS with the same user and no network, divided by 200 (both after a
//!   settling pause; read again after the load, when every network holds its rows).
//! - CPU: utime + stime of the service (from `/proc/<pid>/stat`) from the load's first line
//!   until its last line is stored, divided by the load's duration: CPU seconds per second
//!   of 1,000 lines/s. The same over an idle spell of equal length is printed beside it.
//!
//! Run: `cargo bench --bench cloud_load` (env `CLOUD_LOAD_NETWORKS`, `CLOUD_LOAD_RATE`,
//! `CLOUD_LOAD_SECONDS` change the shape).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_test_support as support;

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::cloud::{add_network, cli_with, release_binary};
use support::process::ManagedChild;
use support::{Bot, Inspircd, InspircdConfig};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn serve(bin: &Path, db: &Path) -> Result<ManagedChild> {
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .arg("--db")
        .arg(db)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    let mut child = ManagedChild::spawn("rete-cloud", cmd)?;
    child
        .wait_line(0, Duration::from_secs(30), |l| {
            l.contains("rete-cloud listening on ")
        })
        .await?;
    Ok(child)
}

/// VmRSS of `pid` in bytes.
fn rss(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kb * 1024)
}

fn clock_ticks() -> Result<f64> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// utime + stime of `pid`, in seconds.
fn cpu_seconds(pid: u32, ticks: f64) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').context("bad stat")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime field 15.
    let utime: f64 = f[11].parse()?;
    let stime: f64 = f[12].parse()?;
    Ok((utime + stime) / ticks)
}

fn sql_count(db: &Path, query: &str) -> Result<u64> {
    let out = Command::new("sqlite3").arg(db).arg(query).output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse().unwrap_or(0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let networks = env_or("CLOUD_LOAD_NETWORKS", 200) as usize;
    let rate = env_or("CLOUD_LOAD_RATE", 1_000);
    let seconds = env_or("CLOUD_LOAD_SECONDS", 30);
    let bin = release_binary()?;
    let ticks = clock_ticks()?;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let server = format!("127.0.0.1:{}", ircd.port());
    let dir = tempfile::tempdir()?;

    // The baseline: the same service, one user, no network.
    let empty = dir.path().join("empty.db");
    cli_with(&bin, &empty, &["user", "add", "alice"])?;
    let mut base = serve(&bin, &empty).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_0 = rss(base.pid())?;
    base.kill();

    let db = dir.path().join("cloud.db");
    cli_with(&bin, &db, &["user", "add", "alice"])?;
    for i in 0..networks {
        let (net, nick, chan) = (format!("n{i}"), format!("u{i}"), format!("#c{i}"));
        add_network(&bin, &db, &net, &server, &nick, &chan)?;
    }
    let mut bot = Bot::connect(ircd.port(), "loadbot").await?;
    for i in 0..networks {
        bot.join(&format!("#c{i}")).await?;
    }
    let started = Instant::now();
    let service = serve(&bin, &db).await?;
    let pid = service.pid();
    let mut joined = 0;
    while joined < networks {
        bot.wait_for(
            |l| l.starts_with(":u") && l.contains(" JOIN "),
            Duration::from_secs(120),
        )
        .await?;
        joined += 1;
    }
    let connect_time = started.elapsed();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_n = rss(pid)?;

    // Idle CPU with every connection up, over as long as the load will run.
    let idle_from = cpu_seconds(pid, ticks)?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let idle = cpu_seconds(pid, ticks)? - idle_from;

    // The load: `rate` lines a second, round-robin over the channels, in 10 ms steps.
    let total = rate * seconds;
    let per_step = (rate / 100).max(1);
    let cpu_from = cpu_seconds(pid, ticks)?;
    let load_start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut sent = 0u64;
    while sent < total {
        tick.tick().await;
        for _ in 0..per_step.min(total - sent) {
            let chan = format!("#c{}", sent as usize % networks);
            bot.privmsg(&chan, &format!("load {sent}")).await?;
            sent += 1;
        }
    }
    let load_time = load_start.elapsed();
    // Until the service has stored every line.
    let deadline = Instant::now() + Duration::from_secs(120);
    let stored = loop {
        let n = sql_count(
            &db,
            "SELECT count(*) FROM rows WHERE line LIKE '%PRIVMSG #c% :load %';",
        )?;
        if n >= total || Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let drained = load_start.elapsed();
    let cpu = cpu_seconds(pid, ticks)? - cpu_from;
    let rss_after = rss(pid)?;
    let gaps = sql_count(
        &db,
        "SELECT count(*) FROM rows WHERE line LIKE ':rete-cloud NOTICE %lost %';",
    )?;

    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let per = |b: u64| (b.saturating_sub(rss_0)) as f64 / networks as f64 / 1024.0;
    println!(
        "cloud_load: {networks} networks on one InspIRCd, one user, {rate} lines/s for {seconds} s"
    );
    println!(
        "  all {networks} connected and joined in {:.1} s",
        connect_time.as_secs_f64()
    );
    println!(
        "  RSS: {:.1} MiB with no network, {:.1} MiB with {networks} joined: {:.1} KiB per connection; after the load {:.1} MiB ({:.1} KiB per connection)",
        mib(rss_0),
        mib(rss_n),
        per(rss_n),
        mib(rss_after),
        per(rss_after)
    );
    println!(
        "  load: {sent} lines sent in {:.2} s; {stored} stored, the last {:.2} s after the first; gap rows: {gaps}",
        load_time.as_secs_f64(),
        drained.as_secs_f64()
    );
    let load_s = load_time.as_secs_f64();
    println!(
        "  CPU: {:.3} s per second under load = {:.3} CPU s/s per 1,000 lines/s; idle with {networks} connections {:.3} s/s",
        cpu / load_s,
        cpu / load_s * 1_000.0 / rate as f64,
        idle / seconds as f64
    );
    if stored < total {
        bail!("only {stored} of {total} lines stored");
    }
    bot.quit().await;
    Ok(())
}
