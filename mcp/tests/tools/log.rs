//! read_log called through `ToolBox::call` with the log ring's layer installed in this process
//! and a switched-on `Capture`, against real sessions on a real InspIRCd (and Atheme for SASL):
//! the project's own connect, registration and SASL lines, every filter, every error string,
//! the 2,048-byte cut, JSON masking and the one-line note, a line holding a session secret
//! withheld and counted (also after its session ended), stalled with no session running, the
//! capture window (nothing from before it, cleared when it ends) and eviction at 2,000 lines.
//! A property test feeds generated lines holding a secret through the masking, the cut and
//! read_log's pages, and checks that none comes out.

// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context, Result};
use proptest::prelude::*;
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::clock::UnixMillis;
use rete_engine::event::ConnState;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{SaslSettings, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::log::line::Draft;
use rete_mcp::debug::log::ring::Snapshot;
use rete_mcp::debug::log::{Category, Level};
use rete_mcp::debug::Capture;
use rete_mcp::tools::read_log::{self, Query};
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use rete_redact::SecretSet;
use serde_json::{json, Map, Value};
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::ports::free_port;
use support::{Atheme, Inspircd, InspircdConfig};
use tokio_util::sync::CancellationToken;

/// The layer goes into this process's global subscriber once; the tests take turns, since the
/// ring is the process's (nextest runs each test in a process of its own anyway).
fn serial() -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    static LAYER: OnceLock<()> = OnceLock::new();
    LAYER.get_or_init(|| {
        tracing::subscriber::set_global_default(rete_mcp::debug::log::subscriber())
            .expect("no other global subscriber in this test binary");
    });
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// An engine, a debug-on tool context with its own capture, and the sessions added to it.
struct Fixture {
    rete: Arc<Rete>,
    ctx: ToolContext,
}

impl Fixture {
    async fn start() -> Result<Fixture> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let capture = Capture::off();
        capture.switch(true);
        Ok(Fixture {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::everything(),
                principal: rete_mcp::tools::Principal::Full,
                sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
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
            rete,
        })
    }

    /// Adds a session connecting to `port` (0: one that never connects).
    async fn add(&self, config: SessionConfig, port: u16) -> Result<SessionHandle> {
        let mut s = spec(config, plain(port.max(1)));
        s.autoconnect = port != 0;
        Ok(self.rete.add_session(s).await?)
    }

    async fn call(&self, args: Value) -> ToolOutcome {
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call("read_log", &self.ctx, &args).await
    }

    async fn ok(&self, args: Value) -> Result<Value> {
        match self.call(args.clone()).await {
            ToolOutcome::Ok(v) => {
                let size = encode(&v).len();
                if size > BUDGET {
                    bail!("read_log({args}) answered {size} bytes");
                }
                Ok(v)
            }
            other => bail!("read_log({args}) failed: {other:?}"),
        }
    }

    async fn err(&self, args: Value) -> Result<String> {
        match self.call(args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("read_log({args}) did not fail: {other:?}"),
        }
    }

    /// Every line from the start of the window (or `cursor`), following cursors to the end;
    /// and the withheld count over all the pages.
    async fn all(&self, filters: Value, cursor: Option<String>) -> Result<(Vec<Value>, u64)> {
        let mut lines = Vec::new();
        let mut withheld = 0;
        let mut cursor = cursor;
        loop {
            let mut args = filters.clone();
            args["limit"] = json!(2000);
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let v = self.ok(args).await?;
            if v.get("stalled").is_some() {
                bail!("stalled: {v}");
            }
            lines.extend(v["lines"].as_array().cloned().unwrap_or_default());
            withheld += v["withheld"].as_u64().unwrap_or(0);
            cursor = Some(v["cursor"].as_str().context("cursor")?.to_owned());
            if v["truncated"] == json!(false) {
                return Ok((lines, withheld));
            }
        }
    }

    /// Waits until a read from the window's start returns a line whose text contains `what`.
    async fn wait_line(&self, what: &str) -> Result<Value> {
        eventually(&format!("a log line with {what:?}"), WAIT, || async {
            let (lines, _) = self.all(json!({}), None).await.ok()?;
            lines.into_iter().find(|l| text(l).contains(what))
        })
        .await
    }

    async fn wait_connected(&self, session: &SessionHandle) -> Result<()> {
        let reader = session.reader();
        eventually("connected", WAIT, || {
            let reader = reader.clone();
            async move {
                let state = reader.read(|v| v.state()).await.ok()?;
                (state == ConnState::Connected).then_some(())
            }
        })
        .await
    }
}

fn text(line: &Value) -> &str {
    line["text"].as_str().unwrap_or_default()
}

fn texts(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_and_registration_lines_and_every_filter() -> Result<()> {
    let _turn = serial().lock().await;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let f = Fixture::start().await?;
    let session = f.add(session_config("logger"), port).await?;
    f.wait_connected(&session).await?;
    let registered = f.wait_line("registered as logger").await?;
    let (lines, _) = f.all(json!({}), None).await?;
    let shown = texts(&lines);
    let first = |needle: &str| shown.iter().position(|t| t.contains(needle));
    let connecting = first(&format!("connecting to 127.0.0.1:{port}")).context("connecting")?;
    let connected = first(&format!("connected to 127.0.0.1:{port}")).context("connected")?;
    let cap_ls = first("registration step cap_ls").context("cap_ls")?;
    let welcome = first("registration step await_welcome").context("await_welcome")?;
    let done = first("registered as logger").context("registered")?;
    assert!(connecting < connected && connected < cap_ls && cap_ls < welcome && welcome < done);
    let line = &lines[connecting];
    assert_eq!(line["category"], json!("network"));
    assert_eq!(line["level"], json!("info"));
    assert_eq!(line["untrusted"], json!(true));
    let id = session.id().as_str();
    assert!(
        text(line).contains(&format!("\"session\":\"{id}\"")),
        "{line}"
    );
    assert_eq!(registered["category"], json!("network"));
    // Sequence numbers ascend; times are whole seconds.
    let seqs: Vec<u64> = lines.iter().filter_map(|l| l["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(line["time"]
        .as_str()
        .is_some_and(|t| t.len() == 20 && t.ends_with('Z')));

    // Supervision: a crashed session actor is restarted, and says so with its delay.
    session.crash_for_test();
    let restarted = f.wait_line("session actor restarted").await?;
    assert_eq!(restarted["category"], json!("app"));
    let (lines, _) = f.all(json!({"categories": ["app"]}), None).await?;
    let shown = texts(&lines);
    assert!(
        shown
            .iter()
            .any(|t| t.starts_with("session actor stopped; restarting")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|t| t.starts_with("session actor restarts in ")),
        "{shown:?}"
    );
    // A connection refused: the reconnect delay is logged.
    let refused = f.add(session_config("refused"), free_port()?).await?;
    let lost = f.wait_line("reconnecting in").await?;
    assert_eq!(
        (&lost["category"], &lost["level"]),
        (&json!("network"), &json!("warning"))
    );
    assert!(text(&lost).contains(refused.id().as_str()), "{lost}");

    // Lines of every level and a few categories, from this test.
    tracing::debug!(target: "rete::perf", "probe debug perf");
    tracing::info!(target: "rete::app", rete_level = "scripts", "probe scripts app");
    tracing::info!(target: "rete::auth", rete_level = "notice", "probe notice auth");
    tracing::warn!(target: "rete::network", "probe warning network");
    tracing::error!(target: "rete::app", "probe error app");
    tracing::error!(target: "rete::app", rete_level = "fault", "probe FAULT app");
    tracing::info!(target: "reterm::app::transcript", "probe info db");
    tracing::trace!(target: "rete::app", "probe trace is never captured");
    tracing::info!(target: "hyper::proto", "probe foreign info is not captured");
    tracing::warn!(target: "hyper::proto", "probe foreign warning");
    f.wait_line("probe foreign warning").await?;
    let f = &f;
    let probes = |filters: Value| async move {
        let (lines, _) = f.all(filters, None).await?;
        Ok::<Vec<String>, anyhow::Error>(
            lines
                .iter()
                .map(|l| {
                    format!(
                        "{} {} {}",
                        l["level"].as_str().unwrap_or(""),
                        l["category"].as_str().unwrap_or(""),
                        text(l)
                    )
                })
                .filter(|t| t.contains("probe"))
                .collect(),
        )
    };
    assert_eq!(
        probes(json!({})).await?,
        [
            "debug perf probe debug perf",
            "scripts app probe scripts app",
            "notice auth probe notice auth",
            "warning network probe warning network",
            "error app probe error app",
            "fault app probe FAULT app",
            "info db probe info db",
            "warning app probe foreign warning",
        ]
    );
    assert_eq!(
        probes(json!({"min_level": "notice", "categories": ["app", "auth"]})).await?,
        [
            "notice auth probe notice auth",
            "error app probe error app",
            "fault app probe FAULT app",
            "warning app probe foreign warning",
        ]
    );
    assert_eq!(
        probes(json!({"contains": "PROBE fault", "categories": []})).await?,
        ["fault app probe FAULT app"]
    );
    assert_eq!(
        probes(json!({"min_level": "fault"})).await?,
        ["fault app probe FAULT app"]
    );
    // The limit counts matching lines; truncated says more follow.
    let v = f.ok(json!({"contains": "probe", "limit": 2})).await?;
    assert_eq!(v["lines"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["truncated"], json!(true));
    let rest = f
        .ok(json!({"contains": "probe", "cursor": v["cursor"], "limit": 0}))
        .await?;
    assert_eq!(
        texts(rest["lines"].as_array().context("lines")?),
        ["probe notice auth"]
    );
    // A read past the end keeps its place.
    let (_, _) = f.all(json!({}), None).await?;
    let end = f.ok(json!({"limit": 2000, "min_level": "fault"})).await?;
    let again = f
        .ok(json!({"cursor": end["cursor"], "contains": "probe"}))
        .await?;
    assert_eq!(encode(&again["lines"]), "[]");
    assert_eq!(again["evicted"], json!(false));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_string() -> Result<()> {
    let _turn = serial().lock().await;
    let mut f = Fixture::start().await?;
    let session = f.add(session_config("errs"), 0).await?;
    assert_eq!(
        f.err(json!({"min_level": "loud"})).await?,
        "invalid arguments: unknown level: \"loud\""
    );
    assert_eq!(
        f.err(json!({"min_level": "Warning"})).await?,
        "invalid arguments: unknown level: \"Warning\""
    );
    assert_eq!(
        f.err(json!({"categories": ["network", "irc\n"]})).await?,
        "invalid arguments: unknown category: \"irc\\n\""
    );
    let long = format!("{}é", "c".repeat(63));
    assert_eq!(
        f.err(json!({ "categories": [long] })).await?,
        format!(
            "invalid arguments: unknown category: \"{}\"",
            "c".repeat(63)
        )
    );
    assert_eq!(
        f.err(json!({"min_level": 3})).await?,
        "invalid arguments: min_level must be a string"
    );
    assert_eq!(
        f.err(json!({"categories": "app"})).await?,
        "invalid arguments: categories must be an array of strings"
    );
    assert_eq!(
        f.err(json!({"contains": ["x"]})).await?,
        "invalid arguments: contains must be a string"
    );
    assert_eq!(
        f.err(json!({"limit": 1.5})).await?,
        "invalid arguments: limit must be an integer"
    );
    assert_eq!(
        f.err(json!({"session": null})).await?,
        "invalid arguments: unknown argument \"session\""
    );
    // A cursor of another kind: read_since's, for this session's server buffer.
    let buffer = session
        .reader()
        .read(|v| v.server_buffer().as_str().to_owned())
        .await?;
    let args = Args::from_request(Some(&json!({"buffer": buffer}))).expect("object");
    let ToolOutcome::Ok(since) = ToolBox::new().call("read_since", &f.ctx, &args).await else {
        bail!("read_since failed");
    };
    assert_eq!(
        f.err(json!({"cursor": since["cursor"]})).await?,
        "invalid cursor"
    );
    assert_eq!(
        f.err(json!({"cursor": "not-a-cursor"})).await?,
        "invalid cursor"
    );
    assert_eq!(
        f.err(json!({"cursor": "A".repeat(600)})).await?,
        "invalid cursor"
    );
    let own = f.ok(json!({})).await?;
    let mut bytes = own["cursor"].as_str().context("cursor")?.to_owned();
    bytes.replace_range(0..1, if bytes.starts_with('A') { "B" } else { "A" });
    assert_eq!(f.err(json!({"cursor": bytes})).await?, "invalid cursor");
    // Debug off refuses before any argument is looked at.
    f.ctx.settings.debug = false;
    assert_eq!(
        f.err(json!({"min_level": "loud"})).await?,
        "debug tools are disabled"
    );
    Ok(())
}

const SERVER_PASSWORD: &str = "srv-pass-7731";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_withheld_masked_and_cut_safely_and_no_session_stalls() -> Result<()> {
    let _turn = serial().lock().await;
    let ircd = Inspircd::start(InspircdConfig::new().password(SERVER_PASSWORD)).await?;
    let f = Fixture::start().await?;
    let mut config = session_config("keeper");
    config.password = Some(SERVER_PASSWORD.into());
    let session = f.add(config, ircd.port()).await?;
    f.wait_connected(&session).await?;
    f.wait_line("registered as keeper").await?;

    tracing::info!(target: "rete::app", "leak one: the password is {SERVER_PASSWORD}");
    tracing::warn!(target: "rete::app", note = SERVER_PASSWORD, "leak two in a field");
    tracing::info!(target: "rete::app", password = "field-secret-1", user = "bob", "masked field");
    tracing::info!(target: "rete::app", r#"frame {{"authToken": "tok-123456", "n": 1}} sent"#);
    tracing::info!(target: "rete::app", r#"reply lacks "password" here"#);
    let long = format!("long {}", "z".repeat(3000));
    tracing::info!(target: "rete::app", "{long}");
    // Cut after the secret's first 5 bytes: what is kept ends inside it.
    let inside = format!("{}{SERVER_PASSWORD} tail", "q".repeat(2048 - 5));
    tracing::info!(target: "rete::app", "{inside}");
    tracing::info!(target: "rete::app", "marker after the probes");
    f.wait_line("marker after the probes").await?;

    let (lines, withheld) = f.all(json!({}), None).await?;
    let all = encode(&Value::Array(lines.clone()));
    assert!(!all.contains(SERVER_PASSWORD), "a secret came out");
    assert!(!all.contains("srv-p"), "the cut kept a secret's start");
    assert_eq!(
        withheld, 3,
        "two lines hold the password, one is cut inside it"
    );
    assert!(!all.contains("field-secret-1") && !all.contains("tok-123456"));
    let shown = texts(&lines);
    assert!(
        shown.contains(&r#"masked field {"password":"********","user":"bob"}"#),
        "{shown:?}"
    );
    assert!(
        shown.contains(&r#"frame {"authToken": "********", "n": 1} sent"#),
        "{shown:?}"
    );
    assert!(shown.contains(&"(withheld: names a secret field that could not be masked, 27 bytes)"));
    let cut = shown
        .iter()
        .find(|t| t.starts_with("long "))
        .context("the long line")?;
    assert_eq!(cut.len(), 2048 + "…[+957 bytes]".len());
    assert!(cut.ends_with("z…[+957 bytes]"));
    // The contains filter is never tried on a withheld line: it is counted all the same.
    let (_, counted) = f
        .all(json!({"contains": "no line says this"}), None)
        .await?;
    assert_eq!(counted, 3);

    // The session ends (its secrets were read above); with no session running, a read stalls
    // and keeps its cursor.
    let before = f.ok(json!({"limit": 1})).await?;
    f.rete.remove_session(session.id()).await?;
    let stalled = f.ok(json!({"cursor": before["cursor"]})).await?;
    assert_eq!(stalled["stalled"], json!(true));
    assert_eq!(encode(&stalled["lines"]), "[]");
    assert_eq!(stalled["cursor"], before["cursor"]);
    let fresh = f.ok(json!({})).await?;
    assert_eq!(fresh["stalled"], json!(true));
    assert_eq!(encode(&fresh["lines"]), "[]");
    // Another session runs: lines are read again, and the ended session's password still
    // withholds its lines.
    let _other = f.add(session_config("other"), 0).await?;
    let (lines, withheld) = f.all(json!({}), None).await?;
    assert_eq!(withheld, 3);
    assert!(!encode(&Value::Array(lines)).contains(SERVER_PASSWORD));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capture_window_and_eviction_at_two_thousand() -> Result<()> {
    let _turn = serial().lock().await;
    let f = Fixture::start().await?;
    let _idle = f.add(session_config("idle"), 0).await?;
    f.ctx.capture.switch(false);
    tracing::warn!(target: "rete::app", "said while capture was off");
    f.ctx.capture.switch(true);
    tracing::warn!(target: "rete::app", "first of the window");
    f.wait_line("first of the window").await?;
    let (lines, _) = f.all(json!({}), None).await?;
    assert!(!texts(&lines).iter().any(|t| t.contains("capture was off")));

    // Fill past capacity: the first read (no cursor) starts at the oldest line held and never
    // says evicted.
    for i in 0..2_100 {
        tracing::info!(target: "rete::perf", n = i, "fill");
    }
    f.wait_line("\"n\":2099").await?;
    let first = f.ok(json!({"limit": 10})).await?;
    assert_eq!(first["evicted"], json!(false));
    let page = first["lines"].as_array().context("lines")?;
    assert_eq!(page.len(), 10);
    assert!(!texts(page)
        .iter()
        .any(|t| t.contains("first of the window")));
    let (held, _) = f.all(json!({}), None).await?;
    assert_eq!(held.len(), 2_000);
    let oldest = held[0]["seq"].as_u64().context("seq")?;
    let newest = held[1_999]["seq"].as_u64().context("seq")?;
    assert_eq!(newest - oldest, 1_999);
    // A cursor behind lines the ring then dropped reads evicted, from the oldest held.
    for i in 0..50 {
        tracing::info!(target: "rete::perf", n = i, "more");
    }
    f.wait_line("more {\"n\":49}").await?;
    let behind = f.ok(json!({"cursor": first["cursor"], "limit": 5})).await?;
    assert_eq!(behind["evicted"], json!(true));
    let resumed = behind["lines"][0]["seq"].as_u64().context("seq")?;
    assert_eq!(resumed, oldest + 50);
    let ahead = f
        .ok(json!({"cursor": behind["cursor"], "limit": 5}))
        .await?;
    assert_eq!(ahead["evicted"], json!(false));

    // Capture off clears the ring: nothing comes back, and after switching on again neither
    // the old lines nor an eviction for them; the old cursor reads across the gap silently.
    f.ctx.capture.switch(false);
    let off = f.ok(json!({})).await?;
    assert_eq!(encode(&off["lines"]), "[]");
    f.ctx.capture.switch(true);
    tracing::warn!(target: "rete::app", "after the clear");
    f.wait_line("after the clear").await?;
    let (lines, _) = f.all(json!({}), None).await?;
    assert_eq!(texts(&lines), ["after the clear"]);
    let across = f.ok(json!({"cursor": ahead["cursor"]})).await?;
    assert_eq!(across["evicted"], json!(false));
    assert_eq!(
        texts(across["lines"].as_array().context("lines")?),
        ["after the clear"]
    );
    assert!(across.get("withheld").is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_captures_share_the_ring_each_from_its_own_start() -> Result<()> {
    let _turn = serial().lock().await;
    let a = Fixture::start().await?;
    let _session = a.add(session_config("two"), 0).await?;
    tracing::warn!(target: "rete::app", "seen by the first only");
    a.wait_line("seen by the first only").await?;
    // A second server's capture in the same process: the same ring, its own window.
    let mut ctx = a.ctx.clone();
    ctx.capture = Capture::off();
    ctx.capture.switch(true);
    let b = Fixture {
        rete: a.rete.clone(),
        ctx,
    };
    tracing::warn!(target: "rete::app", "seen by both");
    b.wait_line("seen by both").await?;
    let (lines, _) = b.all(json!({}), None).await?;
    assert_eq!(texts(&lines), ["seen by both"]);
    a.wait_line("seen by both").await?;
    // The first switching off clears nothing while the second is on.
    a.ctx.capture.switch(false);
    let (lines, _) = b.all(json!({}), None).await?;
    assert_eq!(texts(&lines), ["seen by both"]);
    // The last one off clears the ring: on again, it starts empty.
    b.ctx.capture.switch(false);
    b.ctx.capture.switch(true);
    a.ctx.capture.switch(true);
    tracing::warn!(target: "rete::app", "after both were off");
    a.wait_line("after both were off").await?;
    for f in [&a, &b] {
        let (lines, _) = f.all(json!({}), None).await?;
        assert_eq!(texts(&lines), ["after both were off"]);
    }
    Ok(())
}

const ACCOUNT: &str = "logsasl";
const PASSWORD: &str = "battery-staple-9";

fn sasl_config(nick: &str, password: &str) -> SessionConfig {
    let mut config = session_config(nick);
    config.sasl = Some(SaslSettings {
        mechanism: Mechanism::Plain,
        credentials: Credentials {
            authcid: ACCOUNT.into(),
            password: password.into(),
            authzid: None,
        },
    });
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sasl_outcome_is_logged_without_the_password() -> Result<()> {
    let _turn = serial().lock().await;
    let ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    atheme
        .register_account(ACCOUNT, PASSWORD)
        .await
        .with_context(|| atheme.log())?;
    let f = Fixture::start().await?;
    let good = f.add(sasl_config(ACCOUNT, PASSWORD), ircd.port()).await?;
    let bad = f
        .add(sasl_config("wrongpw", "not-the-password"), ircd.port())
        .await?;
    f.wait_connected(&good).await?;
    f.wait_connected(&bad).await?;
    let ok = f.wait_line("SASL PLAIN succeeded").await?;
    assert_eq!(ok["category"], json!("auth"));
    assert_eq!(ok["level"], json!("notice"));
    assert!(
        text(&ok).contains(&format!("\"account\":\"{ACCOUNT}\"")),
        "{ok}"
    );
    assert!(text(&ok).contains(good.id().as_str()));
    let failed = f.wait_line("SASL PLAIN failed").await?;
    assert_eq!(failed["category"], json!("auth"));
    assert_eq!(failed["level"], json!("warning"));
    assert!(text(&failed).contains(bad.id().as_str()));
    let (lines, withheld) = f.all(json!({"categories": ["auth"]}), None).await?;
    let started = texts(&lines)
        .iter()
        .filter(|t| t.starts_with("SASL PLAIN started"))
        .count();
    assert_eq!(started, 2);
    let all = encode(&Value::Array(f.all(json!({}), None).await?.0));
    assert!(!all.contains(PASSWORD) && !all.contains("not-the-password"));
    assert_eq!(withheld, 0, "no line said a password, so none was withheld");
    Ok(())
}

/// A line the property test logs: text around the secret (or not), long enough at times to be
/// cut anywhere, including inside the secret.
fn arb_line() -> impl Strategy<Value = (String, bool, String, usize)> {
    (
        "[ -~]{0,40}",
        any::<bool>(),
        "[ -~]{0,40}",
        prop_oneof![Just(0usize), 1_990usize..2_060],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_line_holding_a_secret_comes_out(
        secret in "[a-zA-Z0-9]{4,24}",
        specs in proptest::collection::vec(arb_line(), 1..40),
        in_field in any::<bool>(),
        limit in 1usize..50,
    ) {
        let mut lines = Vec::new();
        for (i, (before, with_secret, after, pad)) in specs.iter().enumerate() {
            let mut message = format!("{}{before}", "p".repeat(*pad));
            let mut fields = Map::new();
            if *with_secret {
                if in_field {
                    fields.insert("value".into(), json!(format!("{before}{secret}{after}")));
                } else {
                    message.push_str(&secret);
                }
            }
            message.push_str(after);
            let draft = Draft::new(UnixMillis(0), Level::Info, Category::App, &message, fields);
            lines.push(Arc::new(draft.numbered(i as u64 + 1)));
        }
        let snapshot = Snapshot {
            oldest: Some(1),
            lines,
            evicted_through: 0,
            scan: SecretSet::new([secret.as_str()]),
            stalled: false,
        };
        let mut after = None;
        let mut pages = 0;
        loop {
            let v = read_log::page(&snapshot, after, 0, &Query::default(), limit, BUDGET);
            let out = encode(&v["lines"]);
            prop_assert!(!out.contains(&secret), "{out}");
            for line in v["lines"].as_array().into_iter().flatten() {
                let t = text(line);
                if let Some((kept, _)) = t.rsplit_once("…[+") {
                    let s = secret.as_bytes();
                    prop_assert!(
                        !(4..=s.len()).any(|n| kept.as_bytes().ends_with(&s[..n])),
                        "cut inside the secret: {t}"
                    );
                }
            }
            let next = read_log::binding().open_seq(v["cursor"].as_str().unwrap_or_default());
            prop_assert!(next.is_ok());
            after = next.ok();
            pages += 1;
            if v["truncated"] == json!(false) || pages > 100 {
                break;
            }
        }
        prop_assert_eq!(after, Some(specs.len() as u64));
    }
}
