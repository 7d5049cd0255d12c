//! Reattaching to ZNC with 10,000 buffered lines across 20 channels: the time from asking
//! the session to connect until the last replayed row is stored, and how many rows end up
//! stored twice (goal: 0).
//!
//! Real processes from `tests/support`: InspIRCd 3 (flood limits off) upstream, ZNC 1.8 in
//! front of it with `AutoClearChanBuffer = false`, so every attach replays the whole buffer.
//! Round 1 attaches after 10,000 lines were said while detached; round 2 detaches and
//! attaches again with nothing new, so ZNC replays the same 10,000 lines, all already held.
//! A second ZNC client stays attached while the session is away, so the flood is known to be
//! in ZNC's buffer (it has relayed the last line) before the session comes back.
//! Run: `cargo bench --bench znc_reattach`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use support::live_tests_session::{plain, session_config, spec, Live};
use support::server_scenarios::{wait_on_server, Server, Target, ME};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg, Znc, ZncConfig, DEFAULT_TIMEOUT};

const CHANNELS: usize = 20;
const LINES: usize = 10_000;
const PER_CHANNEL: usize = LINES / CHANNELS;

fn channel(i: usize) -> String {
    format!("#c{i}")
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

/// Privmsg rows held in channel buffers, and whether one says `marker`.
async fn progress(live: &Live, marker: &str) -> Result<(ConnState, usize, bool)> {
    let marker = marker.to_owned();
    live.read(move |v| {
        let mut count = 0;
        let mut seen = false;
        for b in v.buffers().filter(|b| b.kind() == BufferKind::Channel) {
            for r in b.since(0) {
                if let Payload::Privmsg { text } = &r.payload {
                    count += 1;
                    seen |= **text == *marker;
                }
            }
        }
        (v.state(), count, seen)
    })
    .await
}

/// Connects the session and returns how long it took until `rows` more channel rows were
/// stored and until a live line said after the attach (so after ZNC's playback) arrived.
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
            // ZNC sends its playback as it attaches us, before relaying anything new.
            flood.privmsg(&channel(CHANNELS - 1), &marker).await?;
            marker_sent = true;
        }
        if start.elapsed() > Duration::from_secs(120) {
            bail!("not done after 120 s: {count} rows, connected: {state:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn detach(live: &Live) -> Result<()> {
    live.handle.sender().disconnect(None);
    live.wait_state(ConnState::Disconnected).await
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
    let server = Inspircd::start(InspircdConfig::new()).await?;
    let znc = Znc::start(
        ZncConfig::new(server.port(), ME)
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
    let mut flood = Bot::connect(target.server.port(), "flood").await?;
    for c in &channels {
        flood.join(c).await?;
    }

    let mut config = session_config(ME);
    config.password = Some(login.clone());
    let mut sspec = spec(config, plain(znc));
    sspec.autoconnect = false;
    let live = Live::start(sspec).await?;
    let (_, first) = attach(&live, &mut flood, 0).await?;
    detach(&live).await?;

    // The flood, said while the session is away; a watcher on ZNC sees the last line relayed.
    let mut watcher = Bot::connect_with(BotConfig::new(znc, "watcher").password(&login)).await?;
    let said = Instant::now();
    for i in 0..PER_CHANNEL {
        for c in &channels {
            flood.privmsg(c, &format!("line {i} in {c}")).await?;
        }
    }
    let last = format!("line {} in {}", PER_CHANNEL - 1, channel(CHANNELS - 1));
    watcher
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PRIVMSG" && m.param(1) == last
            },
            DEFAULT_TIMEOUT * 12,
        )
        .await?;
    println!(
        "flood of {LINES} lines across {CHANNELS} channels in ZNC's buffer after {:.0} ms",
        said.elapsed().as_secs_f64() * 1000.0
    );
    watcher.quit().await;

    let (all, marker) = attach(&live, &mut flood, LINES).await?;
    let all = all.map_or_else(
        || "never".to_owned(),
        |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0),
    );
    let twice =
        |counts: &HashMap<(String, String), usize>| counts.values().filter(|&&n| n > 1).count();
    let counts = stored_texts(&live).await?;
    println!(
        "round 1 (10,000 new lines replayed): last replayed row stored after {all}, a line said after the attach after {:.0} ms; rows stored: {}, stored twice: {}",
        marker.as_secs_f64() * 1000.0,
        counts.values().sum::<usize>(),
        twice(&counts)
    );
    detach(&live).await?;
    let (_, again) = attach(&live, &mut flood, 0).await?;
    let counts = stored_texts(&live).await?;
    println!(
        "round 2 (the same 10,000 lines replayed again, all held): a line said after the attach stored after {:.0} ms; rows stored: {}, stored twice: {}",
        again.as_secs_f64() * 1000.0,
        counts.values().sum::<usize>(),
        twice(&counts)
    );
    println!(
        "(an empty attach took {:.0} ms)",
        first.as_secs_f64() * 1000.0
    );
    live.rete.shutdown(Duration::from_secs(1)).await;
    Ok(())
}
