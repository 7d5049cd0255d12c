//! engine_state (debug tier) called through `ToolBox::call` against a real session on a real
//! InspIRCd: the index, every section's presence, unknown names and argument errors, the
//! budget (a section larger than it is omitted), unavailable sections, a topic quoting the
//! channel key withholding the answer (and Rete's log naming the section, never the key), and
//! the WHO queue while one of the engine's WHOs is on the wire (the server frozen with SIGSTOP
//! so the WHO stays unanswered).

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::flood::FloodConfig;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_engine::timefmt::parse_server_time;
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::{Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio_util::sync::CancellationToken;

const ME: &str = "stater";

/// Every section name, in the contract's order.
const ALL: [&str; 19] = [
    "connection",
    "registration",
    "sasl",
    "capabilities",
    "isupport",
    "channels",
    "queries",
    "buffers",
    "silentQueries",
    "whox",
    "chathistory",
    "batches",
    "reconnect",
    "flood",
    "config",
    "markread",
    "silence",
    "whois",
    "scripts",
];

/// The sections the engine does not fill.
const UNFILLED: [&str; 5] = ["silentQueries", "markread", "silence", "whois", "scripts"];

/// One engine with one session, and a debug-on context the tools run in.
struct Fixture {
    ctx: ToolContext,
    session: SessionHandle,
}

impl Fixture {
    async fn start(config: SessionConfig, port: u16) -> Result<Fixture> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let session = rete.add_session(spec(config, plain(port))).await?;
        let capture = rete_mcp::debug::Capture::off();
        capture.switch(true);
        Ok(Fixture {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::everything(),
                principal: rete_mcp::tools::Principal::Full,
                sessions: rete_actors::ReadOnlySessions::new(rete),
                send: None,
                cancel: CancellationToken::new(),
                settings: Settings {
                    debug: true,
                    send: false,
                },
                access_log: Arc::new(AccessLog::new()),
                updates: rete_mcp::updates::Updates::unstarted(),
                capture,
            },
            session,
        })
    }

    fn sid(&self) -> String {
        self.session.id().as_str().to_owned()
    }

    async fn call_with(&self, settings: Settings, args: Value) -> ToolOutcome {
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        let mut ctx = self.ctx.clone();
        ctx.settings = settings;
        ToolBox::new().call("engine_state", &ctx, &args).await
    }

    async fn call(&self, args: Value) -> ToolOutcome {
        self.call_with(self.ctx.settings, args).await
    }

    /// A successful result, checked against the budget and the encoding.
    async fn ok(&self, args: Value) -> Result<Value> {
        match self.call(args.clone()).await {
            ToolOutcome::Ok(v) => {
                let size = encode(&v).len();
                if size > BUDGET {
                    bail!("engine_state({args}) answered {size} bytes");
                }
                if v["untrusted"] != json!(true) {
                    bail!("engine_state({args}) is not marked untrusted: {v}");
                }
                Ok(v)
            }
            other => bail!("engine_state({args}) failed: {other:?}"),
        }
    }

    async fn err(&self, args: Value) -> Result<String> {
        match self.call(args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("engine_state({args}) did not fail: {other:?}"),
        }
    }

    /// The sections asked for.
    async fn sections(&self, names: &[&str]) -> Result<Value> {
        self.ok(json!({"session": self.sid(), "sections": names}))
            .await
    }

    /// One section.
    async fn section(&self, name: &str) -> Result<Value> {
        let v = self.sections(&[name]).await?;
        v["sections"]
            .get(name)
            .cloned()
            .with_context(|| format!("{name} missing from {v}"))
    }

    /// The index entry of `name`.
    async fn index_entry(&self, name: &str) -> Result<Value> {
        let v = self.ok(json!({"session": self.sid()})).await?;
        v["index"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["section"] == json!(name)))
            .cloned()
            .with_context(|| format!("{name} missing from {v}"))
    }

    async fn wait_connected(&self) -> Result<()> {
        let reader = self.session.reader();
        eventually("connected", WAIT, || {
            let reader = reader.clone();
            async move {
                let state = reader.read(|v| v.state()).await.ok()?;
                (state == ConnState::Connected).then_some(())
            }
        })
        .await
    }

    /// Waits until the session is in `n` channels and knows each one's topic.
    async fn wait_joined_with_topics(&self, n: usize) -> Result<()> {
        let reader = self.session.reader();
        eventually(&format!("{n} channels with topics"), WAIT, || {
            let reader = reader.clone();
            async move {
                let known = reader
                    .read(|v| {
                        v.buffers()
                            .filter(|b| b.kind() == BufferKind::Channel)
                            .filter_map(|b| v.channel(b.id()))
                            .filter(|c| c.joined && c.topic.is_some())
                            .count()
                    })
                    .await
                    .ok()?;
                (known == n).then_some(())
            }
        })
        .await
    }

    /// Waits until the engine's WHO queue is empty with `n` channels joined.
    async fn wait_who_idle(&self, n: u64) -> Result<()> {
        let last = Mutex::new(Value::Null);
        let idle = eventually("the WHO queue idle", WAIT, || async {
            let v = self
                .sections(&["whox", "channels", "flood", "connection"])
                .await
                .ok()?;
            let whox = &v["sections"]["whox"];
            let idle = whox["silentWhoInFlight"].is_null()
                && whox["silentWhoQueued"] == json!([])
                && v["sections"]["channels"]["joined"] == json!(n);
            *last.lock().unwrap_or_else(|p| p.into_inner()) = v.clone();
            idle.then_some(())
        })
        .await;
        let last = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        idle.with_context(|| format!("whox last read: {last}"))
    }
}

fn channels(names: &[String], key: Option<&str>) -> Vec<ChannelSpec> {
    names
        .iter()
        .map(|n| ChannelSpec {
            name: n.clone(),
            key: key.map(str::to_owned),
        })
        .collect()
}

/// Sends TOPIC for each channel, then waits for the server's echo of the last.
async fn set_topics(bot: &mut Bot, topics: &[(String, String)]) -> Result<()> {
    for (channel, topic) in topics {
        bot.send(&format!("TOPIC {channel} :{topic}")).await?;
    }
    if let Some((channel, _)) = topics.last() {
        let channel = channel.clone();
        bot.wait_for(
            move |l| {
                let m = Msg::parse(l);
                m.command == "TOPIC" && m.param(0).eq_ignore_ascii_case(&channel)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    }
    Ok(())
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_every_section_and_every_refusal() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut config = session_config(ME);
    config.channels = channels(&["#alpha".into(), "#beta".into()], None);
    let f = Fixture::start(config, ircd.port()).await?;
    f.wait_connected().await?;
    f.wait_who_idle(2).await?;

    // The index: the fourteen filled sections, in order, each a count and a one-line summary.
    for args in [
        json!({"session": f.sid()}),
        json!({"session": f.sid(), "sections": []}),
        json!({"session": f.sid(), "sections": null}),
    ] {
        let v = f.ok(args).await?;
        let index = v["index"].as_array().context("index")?;
        let listed: Vec<&str> = index.iter().filter_map(|e| e["section"].as_str()).collect();
        let filled: Vec<&str> = ALL.into_iter().filter(|s| !UNFILLED.contains(s)).collect();
        assert_eq!(listed, filled);
        for e in index {
            assert!(e["count"].is_u64(), "{e}");
            let summary = e["summary"].as_str().context("summary")?;
            assert!(!summary.is_empty() && !summary.contains('\n'), "{e}");
            assert_eq!(e.as_object().map(|o| o.len()), Some(3), "{e}");
        }
        assert!(v.get("truncated").is_none(), "{v}");
        assert_eq!(v.as_object().map(|o| o.len()), Some(2), "{v}");
    }
    let channels = f.index_entry("channels").await?;
    assert_eq!(channels["count"], json!(2));
    assert_eq!(
        channels["summary"],
        json!("2 channels joined: #alpha, #beta")
    );
    assert_eq!(f.index_entry("buffers").await?["count"], json!(3));
    assert_eq!(f.index_entry("config").await?["count"], json!(2));
    let connection = f.index_entry("connection").await?;
    let summary = connection["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("connected as {ME} to irc.test")),
        "{connection}"
    );
    let whox = f.index_entry("whox").await?;
    assert_eq!(whox["count"], json!(0));
    assert_eq!(whox["summary"], json!("no WHO in flight, 0 queued"));

    // Every section at once: the fourteen present, the five unavailable, one instant.
    let v = f.sections(&ALL).await?;
    let present: Vec<&String> = v["sections"]
        .as_object()
        .context("sections")?
        .keys()
        .collect();
    let mut filled: Vec<&str> = ALL.into_iter().filter(|s| !UNFILLED.contains(s)).collect();
    filled.sort_unstable();
    assert_eq!(present, filled);
    assert_eq!(names(&v["unavailable"]), UNFILLED);
    assert!(
        v.get("omitted").is_none() && v.get("truncated").is_none(),
        "{v}"
    );
    let core = v["taken_at"]["core"].as_str().context("core")?;
    assert_eq!(v["taken_at"]["store"], json!(core));
    assert!(parse_server_time(core).is_some(), "{core}");
    let s = &v["sections"];
    assert_eq!(s["connection"]["state"], json!("connected"));
    assert_eq!(s["connection"]["nick"], json!(ME));
    assert_eq!(s["registration"]["step"], json!("registered"));
    assert_eq!(s["sasl"]["configured"], json!(false));
    assert!(
        names(&s["capabilities"]["enabled"]).contains(&"server-time".to_owned()),
        "{}",
        s["capabilities"]
    );
    assert_eq!(s["isupport"]["network"], json!("ReteTest"));
    assert_eq!(s["isupport"]["whox"], json!(true));
    assert_eq!(s["channels"]["joined"], json!(2));
    assert_eq!(s["queries"]["queries"], json!([]));
    assert_eq!(s["buffers"]["buffers"].as_array().map(Vec::len), Some(3));
    assert_eq!(s["whox"]["silentWhoQueued"], json!([]));
    assert!(s["batches"].is_array(), "{}", s["batches"]);
    assert_eq!(s["reconnect"]["registrationRefused"], Value::Null);
    assert!(s["flood"]["burst"].is_u64(), "{}", s["flood"]);
    assert_eq!(s["config"]["nick"], json!(ME));
    assert_eq!(s["config"]["hasPassword"], json!(false));
    // Each alone is the same section (the state did not move in between).
    assert_eq!(f.section("config").await?, s["config"]);
    // Only unfilled ones: no sections, all unavailable.
    let v = f.sections(&["scripts", "whois", "scripts"]).await?;
    assert_eq!(v["sections"], json!({}));
    assert_eq!(names(&v["unavailable"]), ["scripts", "whois"]);

    // Unknown names, matched exactly, the first one named (cut to 64 bytes, escaped).
    let sid = f.sid();
    let refused = [
        (
            json!({"session": sid, "sections": ["nope"]}),
            r#"unknown section: "nope""#.to_owned(),
        ),
        (
            json!({"session": sid, "sections": ["whox", "Whox", "x"]}),
            r#"unknown section: "Whox""#.to_owned(),
        ),
        (
            json!({"session": sid, "sections": [" whox"]}),
            r#"unknown section: " whox""#.to_owned(),
        ),
        (
            json!({"session": sid, "sections": [""]}),
            r#"unknown section: """#.to_owned(),
        ),
        (
            json!({"session": sid, "sections": ["say \"hi\""]}),
            r#"unknown section: "say \"hi\"""#.to_owned(),
        ),
        (
            json!({"session": sid, "sections": ["z".repeat(100)]}),
            format!("unknown section: \"{}\"", "z".repeat(64)),
        ),
        (
            json!({"sections": ["whox"]}),
            "invalid arguments: missing session".to_owned(),
        ),
        (
            json!({"session": null}),
            "invalid arguments: missing session".to_owned(),
        ),
        (
            json!({"session": 7}),
            "invalid arguments: session must be a string".to_owned(),
        ),
        (
            json!({"session": sid, "sections": "whox"}),
            "invalid arguments: sections must be an array of strings".to_owned(),
        ),
        (
            json!({"session": sid, "sections": ["whox", 1]}),
            "invalid arguments: sections must be an array of strings".to_owned(),
        ),
        (
            json!({"session": sid, "section": ["whox"]}),
            r#"invalid arguments: unknown argument "section""#.to_owned(),
        ),
        (
            json!({"session": "00000000-0000-4000-8000-000000000000"}),
            "unknown session".to_owned(),
        ),
        (
            json!({"session": sid.to_lowercase(), "sections": ["whox"]}),
            "unknown session".to_owned(),
        ),
    ];
    for (args, want) in refused {
        assert_eq!(f.err(args.clone()).await?, want, "{args}");
    }

    // Debug off: refused before any argument is looked at.
    let off = Settings::default();
    for args in [json!({"session": f.sid()}), json!({"bogus": 1})] {
        assert_eq!(
            f.call_with(off, args).await,
            ToolOutcome::Error("debug tools are disabled".into())
        );
    }
    Ok(())
}

/// A `tracing` writer into a shared buffer, to read what Rete logged.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

impl Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_quoting_the_channel_key_withholds_the_answer() -> Result<()> {
    const KEY: &str = "chankey-Wm63x";
    let log = LogBuffer::default();
    let writer = log.clone();
    // The tool's future is polled on this thread (the test body's block_on), so a
    // thread-default subscriber sees its warning.
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut op = Bot::connect(ircd.port(), "keeper").await?;
    op.join("#keyed").await?;
    op.send(&format!("MODE #keyed +k {KEY}")).await?;
    set_topics(
        &mut op,
        &[("#keyed".into(), format!("the key is {KEY}, keep it"))],
    )
    .await?;

    let mut config = session_config(ME);
    config.channels = channels(&["#keyed".into()], Some(KEY));
    let f = Fixture::start(config, ircd.port()).await?;
    f.wait_connected().await?;
    f.wait_joined_with_topics(1).await?;

    // The section holding the topic, alone or beside others: withheld whole.
    for names in [
        vec!["channels"],
        vec!["connection", "channels"],
        vec!["channels", "scripts"],
    ] {
        let args = json!({"session": f.sid(), "sections": names});
        assert_eq!(f.err(args).await?, "withheld: secret detected", "{names:?}");
    }
    // Sections that do not quote it are answered, without the key: config only says a key
    // is set.
    let v = f.sections(&["config", "connection", "whox"]).await?;
    assert!(!encode(&v).contains(KEY), "{v}");
    assert_eq!(
        v["sections"]["config"]["channels"],
        json!([{"hasKey": true, "name": "#keyed"}])
    );
    let index = f.ok(json!({"session": f.sid()})).await?;
    assert!(!encode(&index).contains(KEY), "{index}");

    // Rete's log names the section, never the value.
    let logged = log.text();
    assert!(
        logged.contains("engine_state withheld: section channels contains a session secret"),
        "{logged}"
    );
    assert!(!logged.contains(KEY), "{logged}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_section_larger_than_the_budget_is_omitted() -> Result<()> {
    const CHANNELS: usize = 150;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut op = Bot::connect(ircd.port(), "topicbot").await?;
    let chans: Vec<String> = (0..CHANNELS).map(|i| format!("#big{i:03}")).collect();
    let mut topics = Vec::new();
    for (i, name) in chans.iter().enumerate() {
        op.join(name).await?;
        topics.push((name.clone(), format!("{i:03} {}", "t".repeat(290))));
    }
    set_topics(&mut op, &topics).await?;

    let mut config = session_config(ME);
    config.channels = channels(&chans, None);
    // No pacing, so 150 JOINs go at once.
    config.flood = FloodConfig {
        burst: 5,
        interval_ms: 0,
    };
    let f = Fixture::start(config, ircd.port()).await?;
    f.wait_connected().await?;
    f.wait_joined_with_topics(CHANNELS).await?;

    // channels alone is larger than the whole budget: omitted, the others kept.
    let v = f
        .sections(&["channels", "connection", "scripts", "whox"])
        .await?;
    assert_eq!(names(&v["omitted"]), ["channels"]);
    assert_eq!(v["truncated"], json!(true));
    assert_eq!(names(&v["unavailable"]), ["scripts"]);
    let kept: Vec<&String> = v["sections"]
        .as_object()
        .context("sections")?
        .keys()
        .collect();
    assert_eq!(kept, ["connection", "whox"]);
    assert!(encode(&v).len() <= BUDGET);
    // Asked for alone it is still omitted; the index still counts it.
    let v = f.sections(&["channels"]).await?;
    assert_eq!(v["sections"], json!({}));
    assert_eq!(names(&v["omitted"]), ["channels"]);
    let entry = f.index_entry("channels").await?;
    assert_eq!(entry["count"], json!(CHANNELS));
    // The buffers section fits and lists every channel buffer.
    let buffers = f.section("buffers").await?;
    assert_eq!(
        buffers["buffers"].as_array().map(Vec::len),
        Some(CHANNELS + 1)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_who_queue_while_a_who_is_in_flight() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut config = session_config(ME);
    let joined: Vec<String> = ["#q1", "#q2", "#q3"].map(String::from).to_vec();
    config.channels = channels(&joined, None);
    // The periodic WHO poll comes round every 3 s, so one comes while the server is frozen;
    // unpaced, so its three WHOs are answered well before the next (paced at one line per
    // 2 s, three WHOs every 3 s would keep the queue busy for good).
    config.who_poll_interval_ms = 3_000;
    config.flood = FloodConfig {
        burst: 5,
        interval_ms: 0,
    };
    let f = Fixture::start(config, ircd.port()).await?;
    f.wait_connected().await?;
    f.wait_who_idle(3).await?;

    // Frozen, the server reads nothing: the poll's first WHO stays on the wire, the others
    // wait behind it.
    ircd.pause()?;
    let seen = eventually("a WHO in flight with two queued", WAIT, || async {
        let v = f.sections(&["whox"]).await.ok()?;
        let whox = &v["sections"]["whox"];
        let waiting = whox["silentWhoInFlight"].is_string()
            && whox["silentWhoQueued"].as_array().map(Vec::len) == Some(2);
        waiting.then_some(v)
    })
    .await;
    let index = f.index_entry("whox").await;
    ircd.resume()?;
    let v = seen?;
    let whox = &v["sections"]["whox"];
    let in_flight = whox["silentWhoInFlight"].as_str().context("in flight")?;
    let mut all: Vec<String> = names(&whox["silentWhoQueued"]);
    all.push(in_flight.to_owned());
    all.sort();
    assert_eq!(all, joined, "{whox}");
    // It times out 45 s after it was sent, which was at or before the snapshot.
    let taken = parse_server_time(v["taken_at"]["core"].as_str().context("taken_at")?)
        .context("taken_at is ISO-8601")?;
    let deadline = parse_server_time(whox["silentWhoDeadline"].as_str().context("deadline")?)
        .context("the deadline is ISO-8601")?;
    let ahead = deadline.0 - taken.0;
    assert!(
        (40_000..=46_000).contains(&ahead),
        "deadline {ahead} ms ahead: {whox}"
    );
    // The index counts the three unanswered and names the channel on the wire.
    let index = index?;
    assert_eq!(index["count"], json!(3));
    let summary = index["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("WHO {in_flight} in flight (times out ")),
        "{index}"
    );
    assert!(summary.ends_with(", 2 queued"), "{index}");

    // Thawed, the server answers and the queue drains.
    f.wait_who_idle(3).await?;
    Ok(())
}
