//! rete-cloud as several nodes on one PostgreSQL (issue 34), measured in one run: how long
//! a killed node's networks stay off IRC, how late a row reaches a client of another node,
//! and what an idle network costs a node beside ZNC.
//!
//! Real processes from `tests/support`: InspIRCd 3 upstream, a PostgreSQL cluster of the
//! bench's own (durable defaults), three release `rete-cloud` nodes, ZNC 1.8.
//!
//! - Takeover: `NETWORKS` networks (env `CLOUD_NODES_NETWORKS`, 300 by default), each in a
//!   channel of its own, shared by the three nodes; `KILLS` times (env `CLOUD_NODES_KILLS`)
//!   a random node is killed with SIGKILL while bob says a counted line every 20 ms in turn
//!   in every channel, then started again. A kill's takeover is the time from the kill until
//!   every network it held has joined again (seen by a watcher in every channel). Throughout,
//!   a bot samples the server's own user count (LUSERS) every 100 ms: it must never exceed
//!   the networks plus the bots, or some network was on IRC twice. (The node killed is one
//!   that holds networks: a node started again takes its share back in steps.) At the end every stream
//!   is read back: each counted line stored at most once, numbering without holes, and every
//!   line said while its network was held (from its JOIN to its QUIT, 200 ms inside either
//!   end) stored.
//! - Latency: a client attached to one node; bob's lines in channels of networks the other
//!   nodes hold; the time from bob's write to the client's frame, 200 samples.
//! - Memory: a fourth node on a database of its own with one idle network, then `MEMORY_NETWORKS`;
//!   ZNC with one and `MEMORY_NETWORKS` networks; per network: the difference over the added ones.
//!
//! A run that breaks an invariant (a network counted twice, a line stored twice or lost
//! while held, a hole in a stream's numbering, a takeover past 10 s) fails after printing.
//!
//! Run: `cargo bench --bench cloud_nodes`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rete_test_support as support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use support::cloud::{add_network, cli_with, release_binary, Service};
use support::{Bot, Inspircd, InspircdConfig, Msg, Postgres, PostgresConfig, Znc, ZncConfig};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

const NODES: usize = 3;
const BOTS: u64 = 3;
const LATENCY_SAMPLES: usize = 200;
const MEMORY_NETWORKS: usize = 50;
/// The takeover goal (issue 34): from a node's death to its networks' JOIN.
const TAKEOVER_GOAL: Duration = Duration::from_secs(10);
/// How far inside a held interval a line must be said to count as said while held.
const EDGE: Duration = Duration::from_millis(200);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn nick(i: usize) -> String {
    format!("nd{i}")
}

fn channel(i: usize) -> String {
    format!("#c{i}")
}

fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

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

/// What the watcher saw, each line with when it arrived.
type Seen = Arc<Mutex<Vec<(Instant, String)>>>;

/// A bot in every channel, recording every line with its arrival time until `stop`.
async fn watcher(port: u16, networks: usize, stop: Arc<AtomicBool>) -> Result<Seen> {
    let mut bot = Bot::connect(port, "watcher").await?;
    for i in 0..networks {
        bot.send(&format!("JOIN {}", channel(i))).await?;
    }
    let seen: Seen = Arc::default();
    let out = seen.clone();
    tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            match bot.wait_for(|_| true, Duration::from_millis(200)).await {
                Ok(line) => out.lock().unwrap().push((Instant::now(), line)),
                Err(e) if e.to_string().contains("connection closed") => {
                    eprintln!("the watcher's connection closed: {e:#}");
                    break;
                }
                Err(_) => {}
            }
        }
    });
    Ok(seen)
}

/// The highest user count LUSERS gave while sampling.
async fn user_counter(port: u16, stop: Arc<AtomicBool>) -> Result<Arc<AtomicU64>> {
    let mut bot = Bot::connect(port, "counter").await?;
    let highest = Arc::new(AtomicU64::new(0));
    let h = highest.clone();
    tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            if bot.send("LUSERS").await.is_err() {
                break;
            }
            if let Ok(line) = bot
                .wait_for(|l| l.contains(" 251 "), Duration::from_secs(5))
                .await
            {
                let words: Vec<&str> = line.split(' ').collect();
                let after = |w: &str| {
                    words
                        .iter()
                        .position(|x| x.trim_start_matches(':') == w)
                        .and_then(|i| words.get(i + 1))
                        .and_then(|n| n.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                h.fetch_max(after("are") + after("and"), Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    Ok(highest)
}

/// Which node (by name) holds each network, from `network list`.
fn holders(bin: &Path, db: &Path) -> Result<HashMap<usize, String>> {
    let listed = cli_with(bin, db, &["network", "list", "alice"])?;
    Ok(listed
        .lines()
        .filter_map(|l| {
            let i = l.split(' ').next()?.strip_prefix('n')?.parse().ok()?;
            Some((i, l.rsplit("node=").next()?.to_owned()))
        })
        .collect())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn client(addr: &str, token: &str) -> Result<Ws> {
    let tcp = TcpStream::connect(addr).await?;
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp).await?;
    let auth =
        serde_json::json!({"type":"auth","version":1,"token":token,"client":"bench/1","resume":[]});
    ws.send(Message::text(auth.to_string())).await?;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(15), ws.next())
            .await?
            .context("closed before ready")??;
        if let Message::Text(t) = msg {
            if t.as_str().contains("\"type\":\"ready\"") {
                return Ok(ws);
            }
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    raise_nofile();
    let networks = env("CLOUD_NODES_NETWORKS", 300);
    let kills = env("CLOUD_NODES_KILLS", 20);
    let bin = release_binary()?;
    let (ircd, pg) = tokio::try_join!(
        Inspircd::start(InspircdConfig::new()),
        Postgres::start(PostgresConfig::new().durable())
    )?;
    let mut pg = pg;
    let url = pg.create_database()?;
    let db = Path::new(&url);
    let token = cli_with(&bin, db, &["user", "add", "alice"])?;
    let server = format!("127.0.0.1:{}", ircd.port());
    for i in 0..networks {
        let (name, nick, chan) = (format!("n{i}"), nick(i), channel(i));
        add_network(&bin, db, &name, &server, &nick, &chan)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let seen = watcher(ircd.port(), networks, stop.clone()).await?;
    let highest = user_counter(ircd.port(), stop.clone()).await?;
    let mut bob = Bot::connect(ircd.port(), "bob").await?;
    // In every channel: they are +n, no messages from outside.
    for i in 0..networks {
        bob.send(&format!("JOIN {}", channel(i))).await?;
    }
    let names: Vec<String> = (0..NODES).map(|n| format!("node{n}")).collect();
    let mut nodes = Vec::new();
    for name in &names {
        nodes.push(Service::start_with(&bin, db, &["--node", name]).await?);
    }
    let all_joined = |since: Instant, which: &HashSet<usize>| {
        let seen = seen.lock().unwrap();
        which.iter().all(|i| {
            let prefix = format!(":{}!", nick(*i));
            seen.iter()
                .any(|(at, l)| *at >= since && l.starts_with(&prefix) && l.contains(" JOIN "))
        })
    };
    let start = Instant::now() - Duration::from_secs(1);
    let everyone: HashSet<usize> = (0..networks).collect();
    while !all_joined(start, &everyone) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("{networks} networks on IRC");

    // Latency: a client of node0, rows of networks node1 and node2 hold.
    let held = holders(&bin, db)?;
    let far: Vec<usize> = (0..networks)
        .filter(|i| held.get(i).map(String::as_str) != Some("node0"))
        .collect();
    let mut ws = client(&nodes[0].addr, &token).await?;
    let mut latencies = Vec::new();
    for k in 0..LATENCY_SAMPLES {
        let i = far[k % far.len()];
        let text = format!("latency {k}");
        let said = Instant::now();
        bob.privmsg(&channel(i), &text).await?;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
                .await?
                .context("closed")??;
            if let Message::Text(t) = msg {
                if t.as_str().contains(&format!(":{text}\"")) {
                    latencies.push(said.elapsed());
                    break;
                }
            }
        }
    }
    drop(ws);
    latencies.sort();

    // Takeover: kills during counted traffic.
    let talking = Arc::new(AtomicBool::new(true));
    let said: Arc<Mutex<Vec<(Instant, usize, u64)>>> = Arc::default();
    let (t, s) = (talking.clone(), said.clone());
    let talker = tokio::spawn(async move {
        let mut k = 0u64;
        while t.load(Ordering::SeqCst) {
            let i = (k as usize) % networks;
            bob.privmsg(&channel(i), &format!("count {k}")).await?;
            s.lock().unwrap().push((Instant::now(), i, k));
            k += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        anyhow::Ok(())
    });
    let mut takeovers = Vec::new();
    for kill in 0..kills {
        // A random node among those holding networks (a node started
        // again takes its share back in steps).
        let held = holders(&bin, db)?;
        let holding: Vec<usize> = (0..NODES)
            .filter(|n| held.values().any(|h| *h == names[*n]))
            .collect();
        let victim = holding[rand::random_range(0..holding.len())];
        let of_victim: HashSet<usize> = held
            .iter()
            .filter(|(_, n)| **n == names[victim])
            .map(|(i, _)| *i)
            .collect();
        let killed = Instant::now();
        nodes[victim].child.kill();
        while !all_joined(killed, &of_victim) {
            if killed.elapsed() > Duration::from_secs(60) {
                bail!(
                    "kill {kill}: {} networks not back within 60 s",
                    of_victim.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = killed.elapsed();
        eprintln!(
            "kill {kill}: {} of {}'s networks back in {took:?}",
            of_victim.len(),
            names[victim]
        );
        takeovers.push(took);
        nodes[victim] = Service::start_with(&bin, db, &["--node", &names[victim]]).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    talking.store(false, Ordering::SeqCst);
    talker.await??;
    // Let the last rows be stored.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    takeovers.sort();

    // Every stream read back.
    let database = url.rsplit('/').next().unwrap_or_default().to_owned();
    let stored = pg.psql(
        &database,
        "SELECT network, substring(line from ' :count ([0-9]+)$') FROM rows WHERE line ~ ' :count [0-9]+$'",
    )?;
    let mut counts: HashMap<(usize, u64), u32> = HashMap::new();
    for l in stored.lines() {
        let (net, k) = l.split_once('|').context("row")?;
        let i: usize = net.trim_start_matches('n').parse()?;
        *counts.entry((i, k.parse()?)).or_default() += 1;
    }
    let doubled = counts.values().filter(|n| **n > 1).count();
    let holes = pg.psql(
        &database,
        "SELECT count(*) FROM (SELECT network FROM rows GROUP BY network HAVING count(*) <> max(seq) - min(seq) + 1) t",
    )?;
    // Held intervals per network: from a JOIN to the next QUIT, as the watcher saw them.
    let seen = seen.lock().unwrap().clone();
    let mut intervals: BTreeMap<usize, Vec<(Instant, Instant)>> = BTreeMap::new();
    let mut open: HashMap<usize, Instant> = HashMap::new();
    for (at, line) in &seen {
        let m = Msg::parse(line);
        let Some(i) = m
            .source_nick()
            .and_then(|n| n.strip_prefix("nd"))
            .and_then(|n| n.trim_end_matches('_').parse::<usize>().ok())
        else {
            continue;
        };
        match m.command {
            "JOIN" => {
                open.insert(i, *at);
            }
            "QUIT" => {
                if let Some(from) = open.remove(&i) {
                    intervals.entry(i).or_default().push((from, *at));
                }
            }
            _ => {}
        }
    }
    let end = Instant::now();
    for (i, from) in open {
        intervals.entry(i).or_default().push((from, end));
    }
    let said = said.lock().unwrap().clone();
    let mut lost_while_held = 0;
    for (at, i, k) in &said {
        let held_then = intervals
            .get(i)
            .is_some_and(|v| v.iter().any(|(a, b)| *at > *a + EDGE && *at + EDGE < *b));
        if held_then && !counts.contains_key(&(*i, *k)) {
            lost_while_held += 1;
        }
    }
    let lost_while_away = said
        .iter()
        .filter(|(_, i, k)| !counts.contains_key(&(*i, *k)))
        .count()
        - lost_while_held;

    // Memory: one node on a database of its own, one idle network then MEMORY_NETWORKS; ZNC beside.
    let mem_url = pg.create_database()?;
    let mem_db = Path::new(&mem_url);
    cli_with(&bin, mem_db, &["user", "add", "alice"])?;
    let add = |i: usize| {
        let (name, nick, chan) = (format!("m{i}"), format!("mem{i}"), channel(10_000 + i));
        add_network(&bin, mem_db, &name, &server, &nick, &chan)
    };
    add(0)?;
    let mem_node = Service::start_with(&bin, mem_db, &["--node", "memory"]).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let one = rss_kib(mem_node.child.pid())?;
    for i in 1..MEMORY_NETWORKS {
        add(i)?;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let many = rss_kib(mem_node.child.pid())?;
    let per_network = (many as f64 - one as f64) / (MEMORY_NETWORKS - 1) as f64;
    let chans: Vec<String> = (0..MEMORY_NETWORKS).map(|i| channel(20_000 + i)).collect();
    let chan_refs: Vec<&str> = chans.iter().map(String::as_str).collect();
    let znc_one = Znc::start(
        ZncConfig::new(ircd.port(), "zn")
            .channels(&chan_refs[..1])
            .network_per_channel(),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let znc_one_kib = rss_kib(znc_one.pid().context("znc")?)?;
    drop(znc_one);
    let znc = Znc::start(
        ZncConfig::new(ircd.port(), "zm")
            .channels(&chan_refs)
            .network_per_channel(),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let znc_many_kib = rss_kib(znc.pid().context("znc")?)?;
    let znc_per_network = (znc_many_kib as f64 - znc_one_kib as f64) / (MEMORY_NETWORKS - 1) as f64;

    println!("{NODES} nodes, {networks} networks, {kills} kills of a random node (SIGKILL):");
    println!(
        "  takeover (kill to every network joined again): median {:?}, worst {:?}",
        percentile(&takeovers, 0.5),
        takeovers.last().copied().unwrap_or_default()
    );
    println!(
        "  the server's user count at most {} (networks + {BOTS} bots = {})",
        highest.load(Ordering::SeqCst),
        networks as u64 + BOTS
    );
    println!(
        "  {} counted lines said: {} stored twice, {} lost while their network was held, {} said while it was away; streams with a hole in their numbering: {holes}",
        said.len(),
        doubled,
        lost_while_held,
        lost_while_away
    );
    println!(
        "row latency, IRC to a client of another node: median {:?}, p95 {:?} ({LATENCY_SAMPLES} rows)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.95)
    );
    println!(
        "idle network: a node {:.0} KiB each, ZNC {:.0} KiB each ({:.2}x), over {MEMORY_NETWORKS} networks",
        per_network / 1.0,
        znc_per_network,
        per_network / znc_per_network
    );
    drop(nodes);
    drop(mem_node);
    // The invariants, not only the figures: a run that breaks one fails.
    let users = highest.load(Ordering::SeqCst);
    let worst = takeovers.last().copied().unwrap_or_default();
    let broken: Vec<String> = [
        (
            users > networks as u64 + BOTS,
            format!("the server counted {users} users"),
        ),
        (doubled > 0, format!("{doubled} lines stored twice")),
        (
            lost_while_held > 0,
            format!("{lost_while_held} lines lost while held"),
        ),
        (holes != "0", format!("{holes} streams with a hole")),
        (worst > TAKEOVER_GOAL, format!("a takeover took {worst:?}")),
    ]
    .into_iter()
    .filter(|(broken, _)| *broken)
    .map(|(_, what)| what)
    .collect();
    if !broken.is_empty() {
        bail!("cloud_nodes: {}", broken.join("; "));
    }
    Ok(())
}
