//! Several `rete-cloud` nodes on one PostgreSQL (a cluster of the test's
//! own) and one InspIRCd: each network is held by one node, a killed node's
//! networks are connected again by another within seconds, and a node cut
//! off from its database leaves IRC before another may claim its networks.
//! The IRC server's own user count (LUSERS), sampled throughout, says it
//! never saw two connections for one network.

use crate::ws_client::{says, Client};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::cloud::{add_network, binary, cli, Service, WAIT};
use support::pause_proxy::PauseProxy;
use support::{Bot, Inspircd, InspircdConfig, Postgres, PostgresConfig};

/// The takeover goal: from a node's death to its networks' JOIN on IRC.
const TAKEOVER_LIMIT: Duration = Duration::from_secs(10);

/// InspIRCd, a PostgreSQL database, user alice with `networks` networks
/// (`n0`…, nicks `tk0`…, each in #rete), and bob in #rete.
struct Setup {
    ircd: Inspircd,
    pg: Postgres,
    url: String,
    bob: Bot,
    nicks: Vec<String>,
    /// Alice's token.
    token: String,
}

impl Setup {
    async fn start(networks: usize) -> Result<Setup> {
        let (ircd, pg) = tokio::try_join!(
            Inspircd::start(InspircdConfig::new()),
            Postgres::start(PostgresConfig::new())
        )?;
        let mut pg = pg;
        let url = pg.create_database()?;
        let db = Path::new(&url);
        let token = cli(db, &["user", "add", "alice"])?;
        let server = format!("127.0.0.1:{}", ircd.port());
        let mut nicks = Vec::new();
        for i in 0..networks {
            let nick = format!("tk{i}");
            let name = format!("n{i}");
            add_network(&binary(), db, &name, &server, &nick, "#rete")?;
            nicks.push(nick);
        }
        let mut bob = Bot::connect(ircd.port(), "bob").await?;
        bob.join("#rete").await?;
        Ok(Setup {
            ircd,
            pg,
            url,
            bob,
            nicks,
            token,
        })
    }

    fn db(&self) -> &Path {
        Path::new(&self.url)
    }

    /// Each network's holding node, as `network list` says.
    fn holders(&self) -> Result<BTreeMap<String, String>> {
        let listed = cli(self.db(), &["network", "list", "alice"])?;
        let mut holders = BTreeMap::new();
        for line in listed.lines() {
            let name = line.split(' ').next().unwrap_or_default();
            let node = line.rsplit("node=").next().unwrap_or_default();
            holders.insert(name.to_owned(), node.to_owned());
        }
        Ok(holders)
    }

    /// Waits until every network is held by a node and joined on IRC.
    async fn all_joined(&mut self) -> Result<()> {
        let mut waiting: BTreeSet<String> = self.nicks.iter().cloned().collect();
        while !waiting.is_empty() {
            let line = self
                .bob
                .wait_for(|l| l.contains(" JOIN "), Duration::from_secs(30))
                .await?;
            if let Some(nick) = line.strip_prefix(':').and_then(|l| l.split('!').next()) {
                waiting.remove(nick);
            }
        }
        Ok(())
    }
}

/// A node: `rete-cloud serve --node NAME` on `url`.
async fn node(url: &str, name: &str) -> Result<Service> {
    Service::start(Path::new(url), &["--node", name]).await
}

/// The IRC server's count of its users, sampled every 50 ms by a bot of
/// its own until dropped; the highest count seen.
struct UserCount {
    highest: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl UserCount {
    async fn start(port: u16) -> Result<UserCount> {
        let mut counter = Bot::connect(port, "counter").await?;
        let highest = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (highest.clone(), stop.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::SeqCst) {
                counter.send("LUSERS").await?;
                let line = counter.wait_for(|l| l.contains(" 251 "), WAIT).await?;
                h.fetch_max(users_in(&line)?, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        });
        Ok(UserCount {
            highest,
            stop,
            task,
        })
    }

    /// The highest count seen so far (the sampler goes on).
    fn highest(&self) -> u64 {
        self.highest.load(Ordering::SeqCst)
    }

    async fn finish(self) -> Result<u64> {
        self.stop.store(true, Ordering::SeqCst);
        let highest = self.highest.clone();
        self.task.await??;
        Ok(highest.load(Ordering::SeqCst))
    }
}

/// Users in a 251 line: `There are X users and Y invisible on Z servers`.
fn users_in(line: &str) -> Result<u64> {
    let words: Vec<&str> = line.split(' ').collect();
    let after = |word: &str| -> Result<u64> {
        let i = words
            .iter()
            .position(|w| *w == word || w.ends_with(&format!(":{word}")))
            .with_context(|| format!("no {word:?} in {line}"))?;
        Ok(words.get(i + 1).context("short")?.parse()?)
    };
    Ok(after("are")? + after("and")?)
}

/// The nick a JOIN or QUIT line is from.
fn from(line: &str) -> &str {
    line.strip_prefix(':')
        .and_then(|l| l.split('!').next())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_networks_are_taken_over_within_seconds_and_never_doubled() -> Result<()> {
    let mut s = Setup::start(6).await?;
    let count = UserCount::start(s.ircd.port()).await?;
    // Both nodes up before the networks are claimed: they share them.
    let (one, two) = tokio::try_join!(node(&s.url, "one"), node(&s.url, "two"))?;
    let mut one = one;
    s.all_joined().await?;
    let holders = s.holders()?;
    let of_one: Vec<String> = holders
        .iter()
        .filter(|(_, node)| *node == "one")
        .map(|(name, _)| name.replace('n', "tk"))
        .collect();
    assert!(
        holders.values().all(|n| n == "one" || n == "two"),
        "{holders:?}"
    );
    assert!(
        !of_one.is_empty() && of_one.len() < 6,
        "each node holds a share: {holders:?}"
    );
    // A client of node two gets every network's rows live, those node one
    // holds included.
    // Its hello and sync show every network as its holder published it
    // (every two seconds): connected, with its nick and channel.
    let deadline = Instant::now() + WAIT;
    let (mut client, hello, frames) = loop {
        let (client, hello, frames) = Client::attach(&two.addr, &s.token, json!([])).await?;
        let networks = hello["networks"].as_array().cloned().unwrap_or_default();
        let connected = networks
            .iter()
            .filter(|n| n["state"] == "connected" && n["nick"].is_string())
            .count();
        let synced: BTreeSet<String> = frames
            .iter()
            .filter(|f| f["type"] == "sync")
            .filter(|f| f["lines"].to_string().contains(" JOIN #rete"))
            .map(|f| f["stream"].as_str().unwrap_or_default().to_owned())
            .collect();
        if networks.len() == 6 && connected == 6 && synced.len() == 6 {
            break (client, hello, frames);
        }
        if Instant::now() > deadline {
            bail!("not every network shown connected and synced: {hello} {frames:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!frames.is_empty(), "{hello}");
    // Bob counts on while node one dies.
    for i in 0..10 {
        s.bob.privmsg("#rete", &format!("count {i}")).await?;
    }
    let mut seen = BTreeSet::new();
    let said = Instant::now();
    while seen.len() < 6 {
        let frame = client.recv().await?;
        if says(&frame, "count 9") {
            seen.insert(frame["stream"].as_str().unwrap_or_default().to_owned());
        }
    }
    eprintln!(
        "the last count reached node two's client from all six streams in {:?}",
        said.elapsed()
    );
    // Its sends reach a network node one holds, through the outbox: once,
    // acknowledged once written; the same id again is a duplicate.
    let far = of_one[0].replace("tk", "n");
    let send =
        json!({"type":"send","id":"far-1","network":far,"line":"PRIVMSG #rete :across nodes"});
    let sent_at = Instant::now();
    client.send(send.clone()).await?;
    let ack = client
        .until(|f| f["type"] == "send_ack" || f["type"] == "error")
        .await?;
    let ack = ack.last().cloned().unwrap_or_default();
    assert_eq!(ack["type"], "send_ack", "{ack}");
    assert_ne!(ack["duplicate"], true, "{ack}");
    eprintln!(
        "a send through the outbox was acknowledged in {:?}",
        sent_at.elapsed()
    );
    let heard = s
        .bob
        .wait_for(|l| l.ends_with(" PRIVMSG #rete :across nodes"), WAIT)
        .await?;
    assert_eq!(from(&heard), of_one[0], "sent by the network that holds it");
    client.send(send).await?;
    let again = client.until(|f| f["type"] == "send_ack").await?;
    assert_eq!(
        again.last().map(|f| f["duplicate"].clone()),
        Some(json!(true))
    );
    let killed = Instant::now();
    one.child.kill();
    let mut back = BTreeMap::new();
    while back.len() < of_one.len() {
        let line = s
            .bob
            .wait_for(|l| l.contains(" JOIN "), TAKEOVER_LIMIT * 2)
            .await?;
        if of_one.iter().any(|n| n == from(&line)) {
            back.insert(from(&line).to_owned(), killed.elapsed());
        }
    }
    for i in 10..20 {
        s.bob.privmsg("#rete", &format!("count {i}")).await?;
    }
    let across = s
        .bob
        .lines()
        .iter()
        .filter(|l| l.ends_with(" PRIVMSG #rete :across nodes"))
        .count();
    assert_eq!(across, 1, "the line reached IRC once");
    let worst = back.values().max().copied().unwrap_or_default();
    eprintln!("takeover after kill -9: {back:?}");
    assert!(worst <= TAKEOVER_LIMIT, "took {worst:?}: {back:?}");
    assert!(
        s.holders()?.values().all(|n| n == "two"),
        "{:?}",
        s.holders()?
    );

    // The last count reached every stream; a taken-over stream marks the
    // time away and holds each count once, numbered without a hole.
    let database = s.url.rsplit('/').next().unwrap_or_default().to_owned();
    let rows_like = |net: &str, pattern: &str| -> Result<String> {
        s.pg.psql(
            &database,
            &format!("SELECT count(*) FROM rows WHERE network = '{net}' AND line LIKE '{pattern}'"),
        )
    };
    let deadline = Instant::now() + WAIT;
    while (0..6).any(|i| rows_like(&format!("n{i}"), "%:count 19").ok().as_deref() != Some("1")) {
        if Instant::now() > deadline {
            bail!("count 19 not stored on every network");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for i in 0..6 {
        let net = format!("n{i}");
        let numbering = s.pg.psql(
            &database,
            &format!("SELECT count(*) = max(seq) - min(seq) + 1 FROM rows WHERE network = '{net}'"),
        )?;
        assert_eq!(numbering, "t", "{net}: consecutive numbers");
        let mut missing = Vec::new();
        for c in 0..20 {
            match rows_like(&net, &format!("%:count {c}"))?.as_str() {
                "1" => {}
                "0" => missing.push(c),
                n => bail!("{net}: count {c} stored {n} times"),
            }
        }
        if of_one.contains(&format!("tk{i}")) {
            // Said while nobody held it: lost, and the away rows say so.
            assert_eq!(
                rows_like(&net, "%was away from IRC%")?,
                "2",
                "{net}: #rete and * marked"
            );
            assert!(
                missing.windows(2).all(|w| w[1] == w[0] + 1),
                "{net}: one hole, the time away: {missing:?}"
            );
        } else {
            assert!(
                missing.is_empty(),
                "{net}: held throughout, lost {missing:?}"
            );
        }
    }
    let highest = count.finish().await?;
    // The networks, bob and the counter.
    assert!(highest <= 8, "the server saw {highest} users at once");
    drop(two);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_its_database_leaves_irc_before_another_node_joins() -> Result<()> {
    let mut s = Setup::start(3).await?;
    let count = UserCount::start(s.ircd.port()).await?;
    let proxy = PauseProxy::start(format!("127.0.0.1:{}", s.pg.port()).parse()?).await?;
    let through_proxy = s.url.replace(
        &format!(":{}/", s.pg.port()),
        &format!(":{}/", proxy.port()),
    );
    let mut one = node(&through_proxy, "one").await?;
    s.all_joined().await?;
    let two = node(&s.url, "two").await?;
    assert!(s.holders()?.values().all(|n| n == "one"));

    let frozen = Instant::now();
    proxy.pause();
    // Each network: node one's connection ends (no QUIT of ours), then
    // node two's joins.
    let mut left = BTreeMap::new();
    let mut joined = BTreeMap::new();
    while joined.len() < 3 {
        let line = s
            .bob
            .wait_for(
                |l| l.contains(" QUIT ") || l.contains(" JOIN "),
                Duration::from_secs(20),
            )
            .await?;
        let nick = from(&line).to_owned();
        if line.contains(" QUIT ") {
            assert!(
                !line.contains("Leaving") && !line.contains("Reconnecting"),
                "node one said nothing: {line}"
            );
            left.insert(nick, frozen.elapsed());
        } else {
            let gone = left.get(&nick).copied();
            assert!(
                gone.is_some(),
                "{nick} joined again before its old connection left"
            );
            joined.insert(nick, frozen.elapsed());
        }
    }
    eprintln!("cut off: left IRC at {left:?}, joined again at {joined:?}");
    assert!(s.holders()?.values().all(|n| n == "two"));
    assert!(
        count.highest() <= 5,
        "the server saw {} users",
        count.highest()
    );

    // Back in touch: node one finds it holds nothing, and stays off IRC.
    proxy.resume();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(one.child.is_running(), "{}", one.child.output_text());
    assert!(s.holders()?.values().all(|n| n == "two"));
    let highest = count.finish().await?;
    assert!(highest <= 5, "the server saw {highest} users at once");
    drop(two);
    Ok(())
}

/// A node frozen (SIGSTOP) past its lease cannot close its sockets: the new
/// holder connects beside the old connection under the alternate nick
/// (the server counts both for that while), and the old node, once it runs
/// again, finds its lease gone and closes its connections without sending
/// a line; the new holder then takes the nick back. The overlap is
/// reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_node_says_nothing_when_it_wakes_and_leaves() -> Result<()> {
    let mut s = Setup::start(2).await?;
    let one = node(&s.url, "one").await?;
    s.all_joined().await?;
    let two = node(&s.url, "two").await?;
    assert!(s.holders()?.values().all(|n| n == "one"));
    one.child.pause()?;
    let frozen = Instant::now();
    // Node two takes both over beside the frozen connections: alternate nicks.
    let mut joined = BTreeMap::new();
    while joined.len() < 2 {
        let line = s
            .bob
            .wait_for(|l| l.contains(" JOIN "), Duration::from_secs(20))
            .await?;
        joined.insert(from(&line).to_owned(), frozen.elapsed());
    }
    assert!(
        joined
            .keys()
            .all(|n| n.starts_with("tk") && n.ends_with('_')),
        "{joined:?}"
    );
    assert!(s.holders()?.values().all(|n| n == "two"));
    let woke = Instant::now();
    one.child.resume()?;
    // The old connections end, and none of them says anything first; the
    // new holder takes each nick back once its old connection left. (One
    // loop: the QUITs and NICKs interleave in any order.)
    let mut left = BTreeMap::new();
    let mut back = BTreeSet::new();
    while left.len() < 2 || back.len() < 2 {
        let line = s
            .bob
            .wait_for(|l| l.contains(" QUIT ") || l.contains(" NICK "), WAIT)
            .await?;
        if line.contains(" QUIT ") {
            let nick = from(&line).to_owned();
            assert!(s.nicks.contains(&nick), "{line}");
            assert!(
                !line.contains("Leaving") && !line.contains("Reconnecting"),
                "no QUIT of ours: {line}"
            );
            left.insert(nick, woke.elapsed());
        } else {
            let to = line
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .trim_start_matches(':');
            assert!(s.nicks.iter().any(|n| n == to), "{line}");
            assert!(
                left.contains_key(to),
                "{to} taken back before it was free: {line}"
            );
            back.insert(to.to_owned());
        }
    }
    let said: Vec<&String> = s
        .bob
        .lines()
        .iter()
        .filter(|l| s.nicks.iter().any(|n| l.starts_with(&format!(":{n}!"))))
        .filter(|l| !l.contains(" JOIN ") && !l.contains(" QUIT "))
        .collect();
    assert!(said.is_empty(), "the old connections said: {said:?}");
    let overlap = joined.values().min().copied().unwrap_or_default();
    eprintln!(
        "frozen node: the new holder joined {joined:?} after the freeze; the old connections left {left:?} after the wake (overlap: from {overlap:?} after the freeze until the wake)"
    );
    drop(two);
    Ok(())
}

/// A node that joins later takes its share: the node holding every
/// network moves the excess to it, each network a QUIT and a JOIN apart,
/// never on IRC twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_joins_later_takes_its_share() -> Result<()> {
    let mut s = Setup::start(6).await?;
    let count = UserCount::start(s.ircd.port()).await?;
    let one = node(&s.url, "one").await?;
    s.all_joined().await?;
    assert!(s.holders()?.values().all(|n| n == "one"));
    let two = node(&s.url, "two").await?;
    let deadline = Instant::now() + WAIT;
    loop {
        let holders = s.holders()?;
        let of_two = holders.values().filter(|n| *n == "two").count();
        let of_one = holders.values().filter(|n| *n == "one").count();
        if of_two == 3 && of_one == 3 {
            break;
        }
        if Instant::now() > deadline {
            bail!("not shared: {holders:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Three moved: each QUIT (saying why) and joined again.
    let mut moved = BTreeSet::new();
    while moved.len() < 3 {
        let line = s.bob.wait_for(|l| l.contains(" QUIT "), WAIT).await?;
        assert!(line.ends_with(" :Moving to another server"), "{line}");
        moved.insert(from(&line).to_owned());
    }
    let mut back = BTreeSet::new();
    while back.len() < 3 {
        let line = s.bob.wait_for(|l| l.contains(" JOIN "), WAIT).await?;
        if moved.contains(from(&line)) {
            back.insert(from(&line).to_owned());
        }
    }
    let highest = count.finish().await?;
    assert!(highest <= 8, "the server saw {highest} users at once");
    drop((one, two));
    Ok(())
}
