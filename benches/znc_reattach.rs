//! Reattaching after 10,000 missed lines across 20 channels, through ZNC and through
//! `rete-cloud` in the same run: the time from asking the session to connect until the last
//! missed row is stored, and how many rows end up missing or stored twice (goal: 0 and 0).
//!
//! Real processes from `tests/support`: InspIRCd 3 (flood limits off) upstream; ZNC 1.8 in
//! front of it with `AutoClearChanBuffer = false`, so every attach replays the whole buffer
//! (ZNC's playback has no resume point); and the release `rete-cloud` service with one user
//! whose network is in the same 20 channels. Each side has its own engine and session.
//!
//! Both sessions attach once (empty), then detach; a bot says the 10,000 lines while both
//! are away. Before either comes back the flood is known to be held: a second ZNC client
//! has seen ZNC relay the last line, and the service's database holds all 10,000 rows.
//! Round 1 attaches ZNC's session, then (ZNC's detached again) the cloud session. Round 2
//! detaches and attaches each again with nothing new: ZNC replays the same 10,000 lines,
//! all already held; the service resumes after the last row the session has.
//! Run: `cargo bench --bench znc_reattach` (or `cargo test --bench znc_reattach`, built
//! quicker with both engines in debug; the service is built and run in release either way).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_test_support as support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use support::cloud::{cli_with, release_binary, transport, MemoryTokens, Service};
use support::live_tests_session::{plain, session_config, spec, Live};
use support::server_scenarios::{wait_on_server, Server, Target, ME};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg, Znc, ZncConfig, DEFAULT_TIMEOUT};

const CHANNELS: usize = 20;
const LINES: usize = 10_000;
const PER_CHANNEL: usize = LINES / CHANNELS;
/// The cloud session's nick (ZNC's is [`ME`]; both are on the same server).
const CLOUD_NICK: &str = "cloudme";

fn channel(i: usize) -> String {
    format!("#c{i}")
}

fn flood_line(i: usize, c: &str) -> String {
    format!("line {i} in {c}")
}

/// Every channel row's text, by channel, with how often it is stored.
async fn stored_texts(live: &Live) -> Result<HashMap<(String, String), usize>> {
    live.read(|v| {
        let mut counts = HashMap::new();
        for b in v.buffers().filter(|b| b.kind() == BufferKind::Channel) {
            for r in b.since(0) {
                if let Payload::Privmsg { text } = &r.payload {
                    *counts
                        .entry((b.name().to_owned(), text.to_string()))
                        .or_insert(0) += 1;
                }
            }
        }
        counts
    })
    .await
}

/// Rows missing and texts stored more than once.
struct Tally {
    rows: usize,
    missing: usize,
    twice: usize,
}

async fn tally(live: &Live) -> Result<Tally> {
    let counts = stored_texts(live).await?;
    let missing = (0..PER_CHANNEL)
        .flat_map(|i| (0..CHANNELS).map(move |c| (i, channel(c))))
        .filter(|(i, c)| !counts.contains_key(&(c.clone(), flood_line(*i, c))))
        .count();
    Ok(Tally {
        rows: counts.values().sum(),
        missing,
        twice: counts.values().filter(|&&n| n > 1).count(),
    })
}

/// Flood rows held in channel buffers (texts starting `line `), and whether one says
/// `marker`.
async fn progress(live: &Live, marker: &str) -> Result<(ConnState, usize, bool)> {
    let marker = marker.to_owned();
    live.read(move |v| {
        let mut count = 0;
        let mut seen = false;
        for b in v.buffers().filter(|b| b.kind() == BufferKind::Channel) {
            for r in b.since(0) {
                if let Payload::Privmsg { text } = &r.payload {
                    count += usize::from(text.starts_with("line "));
                    seen |= **text == *marker;
                }
            }
        }
        (v.state(), count, seen)
    })
    .await
}

/// Connects the session and returns how long it took until `rows` more flood rows were
/// stored and until a live line said after the attach (so after the playback) arrived.
/// A measurement, not a test: it polls the session every 2 ms.
async fn attach(live: &Live, flood: &mut Bot, rows: usize) -> Result<(Option<Duration>, Duration)> {
    let marker = format!("marker {}", rand::random::<u64>());
    let (_, before, _) = progress(live, &marker).await?;
    let start = Instant::now();
    live.handle.sender().connect();
    let mut all_stored = None;
    let mut marker_sent = false;
    loop {
        let (state, count, seen) = progress(live, &marker).await?;
        if all_stored.is_none() && rows > 0 && count >= before + rows {
            all_stored = Some(start.elapsed());
        }
        if seen {
            return Ok((all_stored, start.elapsed()));
        }
        if state == ConnState::Connected && !marker_sent {
            // ZNC sends its playback as it attaches us, before relaying anything new; the
            // service streams the missed rows, in order, before anything newer.
            flood.privmsg(&channel(CHANNELS - 1), &marker).await?;
            marker_sent = true;
        }
        if start.elapsed() > Duration::from_secs(120) {
            bail!("not done after 120 s: {count} flood rows, connected: {state:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn detach(live: &Live) -> Result<()> {
    live.handle.sender().disconnect(None);
    live.wait_state(ConnState::Disconnected).await
}

fn sql_count(db: &Path, query: &str) -> Result<usize> {
    let out = Command::new("sqlite3").arg(db).arg(query).output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse().unwrap_or(0))
}

/// utime + stime of `pid`, in seconds (from `/proc/<pid>/stat`).
fn cpu_seconds(pid: u32) -> Result<f64> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    let ticks: f64 = String::from_utf8(out.stdout)?.trim().parse()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (in parentheses, may hold spaces) start at field
    // 3; utime is field 14, stime field 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| -> Result<f64> {
        Ok(f.get(i)
            .ok_or_else(|| anyhow::anyhow!("short stat"))?
            .parse()?)
    };
    Ok((field(11)? + field(12)?) / ticks)
}

/// One side's figures.
struct Side {
    empty: Duration,
    all: Option<Duration>,
    marker: Duration,
    first: Tally,
    again: Duration,
    second: Tally,
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let channels: Vec<String> = (0..CHANNELS).map(channel).collect();
    let names: Vec<&str> = channels.iter().map(String::as_str).collect();
    let bin = release_binary()?;
    let server = Inspircd::start(InspircdConfig::new()).await?;
    let ircd = server.port();
    let znc = Znc::start(
        ZncConfig::new(ircd, ME)
            .channels(&names)
            .auto_clear_chan_buffer(false)
            .buffer_size(PER_CHANNEL as u32 * 2),
    )
    .await?;
    let target = Target {
        server: Server::Inspircd(server),
        password: String::new(),
        znc: Some(znc),
    };
    wait_on_server(&target, ME).await?;
    let znc = target.znc.as_ref().map_or(0, Znc::port);
    let login = target.znc.as_ref().map(Znc::login).unwrap_or_default();
    let mut flood = Bot::connect(ircd, "flood").await?;
    for c in &channels {
        flood.join(c).await?;
    }

    // The service: one user, one network in the 20 channels; ready once it joined them all.
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("cloud.db");
    let token = cli_with(&bin, &db, &["user", "add", "alice"])?;
    let addr = format!("127.0.0.1:{ircd}");
    let mut add = vec![
        "network", "add", "alice", "local", "--server", &addr, "--nick", CLOUD_NICK,
    ];
    for c in &names {
        add.extend(["--channel", c]);
    }
    cli_with(&bin, &db, &add)?;
    let service = Service::start_with(&bin, &db, &[]).await?;
    let mut joined = HashSet::new();
    while joined.len() < CHANNELS {
        let l = flood
            .wait_for(
                |l| l.starts_with(&format!(":{CLOUD_NICK}!")) && l.contains(" JOIN "),
                DEFAULT_TIMEOUT * 2,
            )
            .await?;
        joined.insert(Msg::parse(&l).param(0).to_owned());
    }

    // ZNC's session and the cloud session, each in its own engine, attached once (empty).
    let mut config = session_config(ME);
    config.password = Some(login.clone());
    let mut zspec = spec(config, plain(znc));
    zspec.autoconnect = false;
    let zlive = Live::start(zspec).await?;
    let (_, zempty) = attach(&zlive, &mut flood, 0).await?;
    detach(&zlive).await?;
    let mut cspec = spec(session_config(CLOUD_NICK), plain(ircd));
    cspec.transport = transport(&service.url(), MemoryTokens::holding(&token));
    cspec.autoconnect = false;
    let clive = Live::start(cspec).await?;
    let (_, cempty) = attach(&clive, &mut flood, 0).await?;
    detach(&clive).await?;

    // The flood, said while both are away; a watcher on ZNC sees the last line relayed, and
    // the service's database holds every line.
    let mut watcher = Bot::connect_with(BotConfig::new(znc, "watcher").password(&login)).await?;
    let said = Instant::now();
    for i in 0..PER_CHANNEL {
        for c in &channels {
            flood.privmsg(c, &flood_line(i, c)).await?;
        }
    }
    let last = flood_line(PER_CHANNEL - 1, &channel(CHANNELS - 1));
    watcher
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PRIVMSG" && m.param(1) == last
            },
            DEFAULT_TIMEOUT * 12,
        )
        .await?;
    let in_znc = said.elapsed();
    watcher.quit().await;
    let query = "SELECT count(*) FROM rows WHERE line LIKE '%PRIVMSG #c% :line %';";
    let deadline = Instant::now() + Duration::from_secs(120);
    let in_cloud = loop {
        let n = sql_count(&db, query)?;
        if n >= LINES {
            break said.elapsed();
        }
        if Instant::now() > deadline {
            bail!("the service stored {n} of {LINES} lines in 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "flood of {LINES} lines across {CHANNELS} channels held by ZNC after {}, stored by rete-cloud after {}",
        ms(in_znc),
        ms(in_cloud)
    );

    let mut sides = Vec::new();
    let mut cloud_cpu = 0.0;
    for live in [&zlive, &clive] {
        let cpu = cpu_seconds(service.child.pid())?;
        let (all, marker) = attach(live, &mut flood, LINES).await?;
        cloud_cpu = cpu_seconds(service.child.pid())? - cpu;
        let first = tally(live).await?;
        detach(live).await?;
        sides.push((all, marker, first));
    }
    let mut agains = Vec::new();
    for live in [&zlive, &clive] {
        let (_, again) = attach(live, &mut flood, 0).await?;
        let second = tally(live).await?;
        detach(live).await?;
        agains.push((again, second));
    }
    let mut figures = sides.into_iter().zip(agains).zip([zempty, cempty]).map(
        |(((all, marker, first), (again, second)), empty)| Side {
            empty,
            all,
            marker,
            first,
            again,
            second,
        },
    );
    let (Some(z), Some(c)) = (figures.next(), figures.next()) else {
        bail!("two sides measured");
    };
    report(&z, &c);
    println!(
        "rete-cloud's own CPU time during its round 1 (connect to the marker): {:.0} ms",
        cloud_cpu * 1000.0
    );
    zlive.rete.shutdown(Duration::from_secs(1)).await;
    clive.rete.shutdown(Duration::from_secs(1)).await;
    drop(service);
    Ok(())
}

fn report(z: &Side, c: &Side) {
    let all = |s: &Side| s.all.map_or_else(|| "never".to_owned(), ms);
    let ratio = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
        (Some(a), Some(b)) if b.as_nanos() > 0 => {
            format!("{:.1}x", a.as_secs_f64() / b.as_secs_f64())
        }
        _ => "-".to_owned(),
    };
    println!(
        "{:<58} {:>12} {:>12} {:>10}",
        "", "ZNC", "rete-cloud", "ZNC/cloud"
    );
    let row = |name: &str, a: String, b: String, r: String| {
        println!("{name:<58} {a:>12} {b:>12} {r:>10}");
    };
    row(
        "round 1: connect() to the last missed row stored",
        all(z),
        all(c),
        ratio(z.all, c.all),
    );
    row(
        "round 1: a line said after the attach stored",
        ms(z.marker),
        ms(c.marker),
        ratio(Some(z.marker), Some(c.marker)),
    );
    row(
        "round 1: flood rows missing",
        z.first.missing.to_string(),
        c.first.missing.to_string(),
        String::new(),
    );
    row(
        "round 1: texts stored twice",
        z.first.twice.to_string(),
        c.first.twice.to_string(),
        String::new(),
    );
    row(
        "round 1: channel rows held",
        z.first.rows.to_string(),
        c.first.rows.to_string(),
        String::new(),
    );
    row(
        "round 2 (nothing new): a line said after the attach stored",
        ms(z.again),
        ms(c.again),
        ratio(Some(z.again), Some(c.again)),
    );
    row(
        "round 2: flood rows missing",
        z.second.missing.to_string(),
        c.second.missing.to_string(),
        String::new(),
    );
    row(
        "round 2: texts stored twice",
        z.second.twice.to_string(),
        c.second.twice.to_string(),
        String::new(),
    );
    row(
        "round 2: channel rows held",
        z.second.rows.to_string(),
        c.second.rows.to_string(),
        String::new(),
    );
    row(
        "an empty attach (before the flood)",
        ms(z.empty),
        ms(c.empty),
        ratio(Some(z.empty), Some(c.empty)),
    );
}
