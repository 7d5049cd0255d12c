//! send_raw called through `ToolBox::call` against real sessions on a real InspIRCd (and
//! ngircd, which offers no message-tags), with raw-socket bots reading what arrives: the
//! line rule's every error, the burst limit under 16 concurrent calls, the audit row, the log
//! line, the raw tap and the result masked for PASS, OPER, AUTHENTICATE and a service login,
//! a raw-out hook's veto, `session not connected`, and the person's approval (control.approve):
//! allowed, denied, unanswered and withdrawn when the call gives up.

// Test helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context as _, Result};
use rete_actors::{Direction, RawObserver, RawOutHook, Rete, ReteOptions, SessionHandle, Verdict};
use rete_engine::event::ConnState;
use rete_engine::flood::FloodConfig;
use rete_engine::ids::SessionId;
use rete_engine::session::SessionConfig;
use rete_engine::state_dump::Section;
use rete_mcp::access_log::AccessLog;
use rete_mcp::send::approval::{ApprovalEvent, Approvals, Ending, Prompt, APPROVAL_WAIT};
use rete_mcp::send::{limiter, Sending};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::{Bot, Inspircd, InspircdConfig, Msg, Ngircd, NgircdConfig, DEFAULT_TIMEOUT};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// One InspIRCd for every test in this file.
static IRCD: OnceCell<Inspircd> = OnceCell::const_new();

/// The operator a test's bot logs in as to KILL a session.
const OPER_NAME: &str = "sendoper";
const OPER_PW: &str = "sendoper-pw";

async fn ircd() -> &'static Inspircd {
    IRCD.get_or_init(|| async {
        let config = InspircdConfig::new()
            .extra(r#"<class name="sendclass" commands="*" privs="*" usermodes="*" chanmodes="*">"#)
            .extra(r#"<type name="SendOper" classes="sendclass">"#)
            .extra(&format!(
                r#"<oper name="{OPER_NAME}" password="{OPER_PW}" host="*@*" type="SendOper">"#
            ));
        Inspircd::start(config).await.expect("inspircd starts")
    })
    .await
}

/// Every log line this process wrote, for the audit's log line.
fn log_lines() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter("info")
            .with_writer(move || Sink(sink.clone()))
            .with_ansi(false)
            .try_init();
        buf
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged() -> String {
    String::from_utf8_lossy(&log_lines().lock().unwrap()).into_owned()
}

/// Every outgoing line the raw tap saw.
#[derive(Default)]
struct Tap(Mutex<Vec<String>>);

impl RawObserver for Tap {
    fn on_raw(&self, _: &SessionId, direction: Direction, line: &str) {
        if direction == Direction::Out {
            self.0.lock().unwrap().push(line.to_owned());
        }
    }
}

/// Vetoes any line holding VETO-ME, as a script's bind RAW_OUT might.
struct Veto;

impl RawOutHook for Veto {
    fn on_raw_out(&self, _: &SessionId, line: &str) -> Verdict {
        if line.contains("VETO-ME") {
            Verdict::Veto
        } else {
            Verdict::Allow
        }
    }
}

/// An engine with one session connected to `port`, and a context with sending on.
struct Fixture {
    ctx: ToolContext,
    session: SessionHandle,
    tap: Arc<Tap>,
}

impl Fixture {
    async fn start(nick: &str, port: u16) -> Result<Fixture> {
        Fixture::start_with(nick, port, None).await
    }

    /// A session whose flood throttler paces by `flood`.
    async fn paced(nick: &str, port: u16, flood: FloodConfig) -> Result<Fixture> {
        let mut config = session_config(nick);
        config.flood = flood;
        Fixture::start_config(config, port, None).await
    }

    /// With control.approve on: every line waits in `approvals`.
    async fn approving(nick: &str, port: u16, approvals: &Approvals) -> Result<Fixture> {
        approvals.set_on(true);
        Fixture::start_with(nick, port, Some(approvals.clone())).await
    }

    async fn start_with(nick: &str, port: u16, approval: Option<Approvals>) -> Result<Fixture> {
        Fixture::start_config(session_config(nick), port, approval).await
    }

    async fn start_config(
        config: SessionConfig,
        port: u16,
        approval: Option<Approvals>,
    ) -> Result<Fixture> {
        log_lines();
        let rete = Arc::new(
            Rete::start(ReteOptions {
                raw_out_hook: Some(Arc::new(Veto)),
            })
            .await?,
        );
        let tap = Arc::new(Tap::default());
        rete.set_raw_observer(Some(tap.clone()));
        let session = rete.add_session(spec(config, plain(port))).await?;
        let limiter = limiter::start().await.map_err(anyhow::Error::msg)?;
        let f = Fixture {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::everything(),
                principal: rete_mcp::tools::Principal::Full,
                sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
                send: Some(Sending {
                    sessions: rete_actors::SendingSessions::new(rete),
                    limiter,
                    approval,
                }),
                cancel: CancellationToken::new(),
                settings: Settings {
                    debug: false,
                    send: true,
                },
                access_log: Arc::new(AccessLog::new()),
                updates: rete_mcp::updates::Updates::unstarted(),
                capture: rete_mcp::debug::Capture::off(),
            },
            session,
            tap,
        };
        f.wait_state(ConnState::Connected).await?;
        Ok(f)
    }

    fn sid(&self) -> String {
        self.session.id().as_str().to_owned()
    }

    async fn send(&self, line: &str) -> ToolOutcome {
        let args = json!({"session": self.sid(), "line": line});
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call("send_raw", &self.ctx, &args).await
    }

    async fn sent(&self, line: &str) -> Result<Value> {
        match self.send(line).await {
            ToolOutcome::Ok(v) => Ok(v),
            other => bail!("send_raw({line:?}) failed: {other:?}"),
        }
    }

    async fn refused(&self, line: &str) -> Result<String> {
        match self.send(line).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("send_raw({line:?}) was not refused: {other:?}"),
        }
    }

    async fn wait_state(&self, want: ConnState) -> Result<()> {
        let reader = self.session.reader();
        eventually(&format!("state {want:?}"), WAIT, || {
            let reader = reader.clone();
            async move {
                let state = reader.read(|v| v.state()).await.ok()?;
                (state == want).then_some(())
            }
        })
        .await
    }

    /// The server buffer's rows, as text.
    async fn server_rows(&self) -> Result<Vec<String>> {
        Ok(self
            .session
            .reader()
            .read(|v| {
                let server = v.server_buffer();
                v.buffer(server)
                    .map(|b| {
                        b.display()
                            .map(|r| {
                                let mut t = String::new();
                                r.payload.for_each_text(|x| t.push_str(x));
                                t
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .await?)
    }
}

/// Sends `n` lines at once (so the throttler's pacing cannot let the burst refill between
/// them) and counts those sent; every other one must be the burst's refusal.
async fn sent_at_once(f: &Arc<Fixture>, n: usize, text: &str) -> Result<usize> {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let f = f.clone();
            let line = format!("PRIVMSG burstwatch :{text} {i}");
            tokio::spawn(async move { f.send(&line).await })
        })
        .collect();
    let mut ok = 0;
    for call in calls {
        match call.await? {
            ToolOutcome::Ok(_) => ok += 1,
            ToolOutcome::Error(e) if e == "too many sends: at most 5 at once" => {}
            other => bail!("unexpected {other:?}"),
        }
    }
    Ok(ok)
}

#[tokio::test]
async fn a_line_is_sent_recorded_and_answered_once_written() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "sendwatch").await?;
    let f = Fixture::start("sender1", ircd.port()).await?;
    let got = f.sent("PRIVMSG sendwatch :hello from an agent").await?;
    assert_eq!(
        got,
        json!({"line": "PRIVMSG sendwatch :hello from an agent", "sent": true, "session": f.sid()})
    );
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG" && m.param(1) == "hello from an agent"
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    // Answered once written: the audit row is already there.
    let rows = f.server_rows().await?;
    assert!(
        rows.iter()
            .any(|r| r == "AI access sent: PRIVMSG sendwatch :hello from an agent"),
        "{rows:#?}"
    );
    // Formatting codes and invisible characters cannot dress up their own record.
    f.sent("PRIVMSG sendwatch :\u{3}4red\u{3} \u{202E}txet")
        .await?;
    let rows = f.server_rows().await?;
    assert!(
        rows.iter()
            .any(|r| r == "AI access sent: PRIVMSG sendwatch :red \\u{202E}txet"),
        "{rows:#?}"
    );
    eventually("the log line", WAIT, || async {
        logged()
            .contains("AI access sent a line on test: PRIVMSG sendwatch :hello from an agent")
            .then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn credentials_are_sent_whole_and_shown_masked_everywhere() -> Result<()> {
    let ircd = ircd().await;
    let f = Fixture::start("sender2", ircd.port()).await?;
    let cases = [
        ("PASS hunter2zz", "PASS :********"),
        ("OPER admin hunter3zz", "OPER admin ********"),
        ("AUTHENTICATE PLAIN", "AUTHENTICATE ********"),
        (
            "PRIVMSG NickServ :IDENTIFY hunter4zz",
            "PRIVMSG NickServ :IDENTIFY ********",
        ),
        (
            "@label=x PRIVMSG NickServ :IDENTIFY hunter5zz",
            "PRIVMSG NickServ :IDENTIFY ********",
        ),
    ];
    for (line, shown) in cases {
        let got = f.sent(line).await?;
        assert_eq!(got["line"], shown, "{line}");
        let rows = f.server_rows().await?;
        assert!(
            rows.iter()
                .any(|r| r == &format!("AI access sent: {shown}")),
            "{line}: {rows:#?}"
        );
    }
    let rows = f.server_rows().await?;
    let tapped = f.tap.0.lock().unwrap().clone();
    let log = logged();
    for secret in ["hunter2zz", "hunter3zz", "hunter4zz", "hunter5zz"] {
        assert!(
            !rows.iter().any(|r| r.contains(secret)),
            "{secret} in {rows:#?}"
        );
        assert!(
            !tapped.iter().any(|r| r.contains(secret)),
            "{secret} in {tapped:#?}"
        );
        assert!(!log.contains(secret), "{secret} in the log");
    }
    // The mechanism line too: every AUTHENTICATE an agent sends is masked in the raw tap.
    assert!(
        tapped.iter().any(|l| l == "AUTHENTICATE ********"),
        "{tapped:#?}"
    );
    assert!(
        !tapped.iter().any(|l| l == "AUTHENTICATE PLAIN"),
        "{tapped:#?}"
    );
    Ok(())
}

#[tokio::test]
async fn the_line_rule_refuses_with_the_contracts_words_and_sends_nothing() -> Result<()> {
    let ircd = ircd().await;
    let f = Fixture::start("sender3", ircd.port()).await?;
    let long = format!("PRIVMSG #x :{}", "a".repeat(499));
    let long_tags = format!("@a={} PING x", "b".repeat(4093));
    let cases: [(&str, &str); 7] = [
        (
            "PING a\r\nQUIT",
            "invalid arguments: line contains a line break or NUL",
        ),
        (
            "PING a\u{2028}",
            "invalid arguments: line contains a line break or NUL",
        ),
        (
            "PING \0",
            "invalid arguments: line contains a line break or NUL",
        ),
        ("   ", "invalid arguments: line is empty"),
        (&long, "invalid arguments: line is longer than 510 bytes"),
        (
            &long_tags,
            "invalid arguments: message tags are longer than 4094 bytes",
        ),
        (
            "@a=b ",
            "invalid arguments: message tags are not followed by a message",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(f.refused(line).await?, want, "{line:?}");
    }
    let args = json!({"session": "00000000-0000-4000-8000-000000000000", "line": "PING x"});
    let args = Args::from_request(Some(&args)).expect("object");
    assert_eq!(
        ToolBox::new().call("send_raw", &f.ctx, &args).await,
        ToolOutcome::Error("unknown session".into())
    );
    let args = Args::from_request(Some(&json!({"session": f.sid()}))).expect("object");
    assert!(matches!(
        ToolBox::new().call("send_raw", &f.ctx, &args).await,
        ToolOutcome::Error(e) if e.starts_with("invalid arguments")
    ));
    // Refused lines took nothing from the burst: six at once still send five.
    assert_eq!(sent_at_once(&Arc::new(f), 6, "after refusals").await?, 5);
    Ok(())
}

#[tokio::test]
async fn a_vetoed_line_is_not_sent_and_leaves_no_row() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "vetowatch").await?;
    let f = Fixture::start("sender4", ircd.port()).await?;
    assert_eq!(
        f.refused("PRIVMSG vetowatch :VETO-ME").await?,
        "line not sent: a script blocked it or the connection could not take it"
    );
    // The veto took no place in the burst: six at once still send five.
    let f = Arc::new(f);
    assert_eq!(sent_at_once(&f, 6, "after the veto").await?, 5);
    // A marker from another bot ends what the watcher reads: the vetoed line is not in it.
    let mut marker = Bot::connect(ircd.port(), "vetomark").await?;
    marker.privmsg("vetowatch", "marker").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker", DEFAULT_TIMEOUT)
        .await?;
    assert!(!seen.iter().any(|l| l.contains("VETO-ME")), "{seen:#?}");
    let rows = f.server_rows().await?;
    assert!(!rows.iter().any(|r| r.contains("VETO-ME")), "{rows:#?}");
    eventually("the veto's log line", WAIT, || async {
        logged()
            .contains("AI access line on test was not sent: PRIVMSG vetowatch :VETO-ME")
            .then_some(())
    })
    .await?;
    Ok(())
}

/// Waits for `bot` to read a PRIVMSG whose text is `text`.
async fn bot_reads(bot: &mut Bot, text: &str) -> Result<()> {
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG" && m.param(1) == text
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}

/// How many rows of the server buffer are exactly `row`.
async fn rows_equal(f: &Fixture, row: &str) -> Result<usize> {
    Ok(f.server_rows().await?.iter().filter(|r| *r == row).count())
}

/// The window between the writer writing an agent's line and the actor taking its report:
/// the report is held back, an operator KILLs the session, so the close reaches the actor
/// first. The line reached the server, so it is answered sent and has its row, once.
#[tokio::test]
async fn a_line_on_the_socket_is_sent_and_recorded_when_the_close_beats_its_report() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "reportwatch").await?;
    let f = Arc::new(Fixture::start("reporter1", ircd.port()).await?);
    let held = f.session.hold_agent_reports_for_test();
    let call = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG reportwatch :before the kill").await })
    };
    bot_reads(&mut bot, "before the kill").await?;
    let mut oper = Bot::connect(ircd.port(), "reportoper").await?;
    oper.send(&format!("OPER {OPER_NAME} {OPER_PW}")).await?;
    oper.wait_for(|l| Msg::parse(l).command == "381", DEFAULT_TIMEOUT)
        .await?;
    oper.send("KILL reporter1 :closed before the report")
        .await?;
    // Answered at the close, while the report is still held.
    let got = call.await?;
    drop(held);
    assert_eq!(
        got,
        ToolOutcome::Ok(json!({
            "line": "PRIVMSG reportwatch :before the kill", "sent": true, "session": f.sid()
        }))
    );
    assert_eq!(
        rows_equal(&f, "AI access sent: PRIVMSG reportwatch :before the kill").await?,
        1
    );
    Ok(())
}

/// The same window closed by the actor failing: the report went to the dead actor's
/// mailbox, and the restarted actor still answers the line sent and writes its row.
#[tokio::test]
async fn a_line_on_the_socket_is_sent_and_recorded_when_the_actor_dies_before_its_report(
) -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "crashwatch").await?;
    let f = Arc::new(Fixture::start("reporter2", ircd.port()).await?);
    let held = f.session.hold_agent_reports_for_test();
    let call = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG crashwatch :before the crash").await })
    };
    bot_reads(&mut bot, "before the crash").await?;
    f.session.crash_for_test();
    let got = call.await?;
    drop(held);
    assert_eq!(
        got,
        ToolOutcome::Ok(json!({
            "line": "PRIVMSG crashwatch :before the crash", "sent": true, "session": f.sid()
        }))
    );
    assert_eq!(f.session.restarts(), 1);
    assert_eq!(
        rows_equal(&f, "AI access sent: PRIVMSG crashwatch :before the crash").await?,
        1
    );
    Ok(())
}

/// `/disconnect` sends what the person queued at once, before the QUIT, but an agent's line
/// keeps its pace: still queued when the person disconnects, it is answered `line not sent`,
/// never written, and has no row.
#[tokio::test]
async fn an_agent_line_still_queued_when_the_person_disconnects_is_not_sent() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "quitwatch").await?;
    // Nothing queued leaves on its own while the test runs.
    let slow = FloodConfig {
        burst: 5,
        interval_ms: 600_000,
    };
    let f = Arc::new(Fixture::paced("quitter1", ircd.port(), slow).await?);
    let queued = || {
        let reader = f.session.reader();
        async move {
            reader
                .read(|v| {
                    v.state_index()
                        .into_iter()
                        .find(|e| e.section == Section::Flood)
                        .map(|e| e.count)
                })
                .await
                .ok()
                .flatten()
        }
    };
    // The person's lines take every token left; the last waits.
    for i in 0..6 {
        f.session
            .sender()
            .command(move |c| c.privmsg("quitwatch", &format!("person {i}")))
            .await?;
    }
    let before = queued().await.context("the flood section")?;
    assert!(before >= 1, "{before} queued");
    let call = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG quitwatch :agent, paced").await })
    };
    eventually("the agent's line queued", WAIT, || async {
        (queued().await? == before + 1).then_some(())
    })
    .await?;
    f.session.sender().disconnect(Some("bye".into()));
    assert_eq!(
        call.await?,
        ToolOutcome::Error(
            "line not sent: a script blocked it or the connection could not take it".into()
        )
    );
    // The person's lines went before the QUIT; the agent's did not. A marker sent once
    // the session is gone comes after all of them.
    f.wait_state(ConnState::Disconnected).await?;
    let mut marker = Bot::connect(ircd.port(), "quitmark").await?;
    marker.privmsg("quitwatch", "marker").await?;
    let seen = bot
        .collect_until(|l| l.ends_with(" :marker"), DEFAULT_TIMEOUT)
        .await?;
    assert!(seen.iter().any(|l| l.ends_with(":person 5")), "{seen:#?}");
    assert!(
        !seen.iter().any(|l| l.contains("agent, paced")),
        "{seen:#?}"
    );
    assert_eq!(
        rows_equal(&f, "AI access sent: PRIVMSG quitwatch :agent, paced").await?,
        0
    );
    eventually("the log line", WAIT, || async {
        logged()
            .contains("AI access line on test was not sent: PRIVMSG quitwatch :agent, paced")
            .then_some(())
    })
    .await?;
    Ok(())
}

/// A call that gives up after its line was handed over leaves the line's fate to the AI
/// access log: here the line is still queued when the call is cancelled, and the person's
/// disconnect then answers it not sent, which the log records in a row of its own.
#[tokio::test]
async fn a_line_whose_call_gave_up_has_its_fate_logged_when_known() -> Result<()> {
    let ircd = ircd().await;
    let slow = FloodConfig {
        burst: 5,
        interval_ms: 600_000,
    };
    let f = Arc::new(Fixture::paced("quitter2", ircd.port(), slow).await?);
    let queued = || {
        let reader = f.session.reader();
        async move {
            reader
                .read(|v| {
                    v.state_index()
                        .into_iter()
                        .find(|e| e.section == Section::Flood)
                        .map(|e| e.count)
                })
                .await
                .ok()
                .flatten()
        }
    };
    for i in 0..6 {
        f.session
            .sender()
            .command(move |c| c.privmsg("nobody", &format!("person {i}")))
            .await?;
    }
    let before = queued().await.context("the flood section")?;
    let cancel = CancellationToken::new();
    let ctx = ToolContext {
        cancel: cancel.clone(),
        ..f.ctx.clone()
    };
    let sid = f.sid();
    let call = tokio::spawn(async move {
        let args = json!({"session": sid, "line": "PRIVMSG nobody :given up on"});
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call("send_raw", &ctx, &args).await
    });
    eventually("the agent's line queued", WAIT, || async {
        (queued().await? == before + 1).then_some(())
    })
    .await?;
    cancel.cancel();
    assert_eq!(call.await?, ToolOutcome::Cancelled);
    let ours = || {
        f.ctx
            .access_log
            .rows()
            .into_iter()
            .filter(|r| r.contains("given up on"))
            .collect::<Vec<_>>()
    };
    assert!(ours().is_empty(), "{:?}", ours());
    f.session.sender().disconnect(None);
    let rows = eventually("the line's row", WAIT, || async {
        let rows = ours();
        (!rows.is_empty()).then_some(rows)
    })
    .await?;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].ends_with(&format!(
            " send_raw(line=\"PRIVMSG nobody :given up on\", session=\"{}\") → line not sent: \
             a script blocked it or the connection could not take it, after its request was \
             cancelled",
            f.sid()
        )),
        "{rows:?}"
    );
    Ok(())
}

#[tokio::test]
async fn sixteen_concurrent_calls_send_exactly_five() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "burstwatch").await?;
    let f = Arc::new(Fixture::start("sender5", ircd.port()).await?);
    let calls: Vec<_> = (0..16)
        .map(|n| {
            let f = f.clone();
            tokio::spawn(async move { f.send(&format!("PRIVMSG burstwatch :burst {n}")).await })
        })
        .collect();
    let mut ok = 0;
    let mut refused = 0;
    for call in calls {
        match call.await? {
            ToolOutcome::Ok(_) => ok += 1,
            ToolOutcome::Error(e) if e == "too many sends: at most 5 at once" => refused += 1,
            other => bail!("unexpected {other:?}"),
        }
    }
    assert_eq!((ok, refused), (5, 11));
    // A marker from the bot's own side ends the count: exactly five reached it.
    let mut marker = Bot::connect(ircd.port(), "burstmark").await?;
    marker.privmsg("burstwatch", "marker").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker", DEFAULT_TIMEOUT)
        .await?;
    let burst = seen
        .iter()
        .filter(|l| Msg::parse(l).param(1).starts_with("burst "))
        .count();
    assert_eq!(burst, 5, "{seen:#?}");
    Ok(())
}

#[tokio::test]
async fn a_session_that_is_not_connected_sends_nothing() -> Result<()> {
    let ircd = ircd().await;
    let f = Fixture::start("sender6", ircd.port()).await?;
    f.session.sender().disconnect(None);
    f.wait_state(ConnState::Disconnected).await?;
    assert_eq!(f.refused("PING :gone").await?, "session not connected");
    Ok(())
}

#[tokio::test]
async fn tags_need_the_message_tags_capability() -> Result<()> {
    // ngircd offers no message-tags.
    let ngircd = Ngircd::start(NgircdConfig::new()).await?;
    let f = Fixture::start("sender7", ngircd.port()).await?;
    assert_eq!(
        f.refused("@label=1 PING :x").await?,
        "invalid arguments: message tags need the message-tags capability"
    );
    // On InspIRCd, which negotiates it, the same line goes.
    let ircd = ircd().await;
    let g = Fixture::start("sender8", ircd.port()).await?;
    g.sent("@label=1 PING :x").await?;
    Ok(())
}

/// The next prompt shown, skipping other events.
async fn next_prompt(
    events: &mut tokio::sync::broadcast::Receiver<ApprovalEvent>,
) -> Result<Prompt> {
    let wait = async {
        loop {
            if let ApprovalEvent::Asked { prompt, .. } = events.recv().await? {
                return Ok::<_, anyhow::Error>(prompt);
            }
        }
    };
    tokio::time::timeout(WAIT, wait).await?
}

/// The next line that stopped waiting, and why.
async fn next_ending(
    events: &mut tokio::sync::broadcast::Receiver<ApprovalEvent>,
) -> Result<(Prompt, Ending, usize)> {
    let wait = async {
        loop {
            if let ApprovalEvent::Ended {
                prompt,
                ending,
                waiting,
            } = events.recv().await?
            {
                return Ok::<_, anyhow::Error>((prompt, ending, waiting));
            }
        }
    };
    tokio::time::timeout(WAIT, wait).await?
}

const NOT_SENT: &str = "line not sent: a script blocked it or the connection could not take it";

#[test]
fn a_line_waits_twenty_seconds_for_the_person() {
    assert_eq!(APPROVAL_WAIT, std::time::Duration::from_secs(20));
}

#[tokio::test]
async fn an_allowed_line_is_sent_and_recorded() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "apprwatch").await?;
    let approvals = Approvals::with_wait(WAIT);
    let mut events = approvals.subscribe();
    let f = Arc::new(Fixture::approving("approver1", ircd.port(), &approvals).await?);
    let call = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG apprwatch :\u{202E}line-let-through").await })
    };
    let prompt = next_prompt(&mut events).await?;
    // Named by the session, shown as the audit row shows it.
    assert_eq!(prompt.session, "test");
    assert_eq!(prompt.line, "PRIVMSG apprwatch :\\u{202E}line-let-through");
    // Nothing is sent before the answer: the audit row is not there yet.
    assert!(!f
        .server_rows()
        .await?
        .iter()
        .any(|r| r.contains("line-let-through")));
    assert_eq!(approvals.answer(prompt.id, true), Some(prompt));
    match call.await? {
        ToolOutcome::Ok(v) => assert_eq!(v["sent"], true, "{v}"),
        other => bail!("allowed line: {other:?}"),
    }
    bot.wait_for(
        |l| Msg::parse(l).param(1) == "\u{202E}line-let-through",
        DEFAULT_TIMEOUT,
    )
    .await?;
    let rows = f.server_rows().await?;
    assert!(
        rows.iter()
            .any(|r| r == "AI access sent: PRIVMSG apprwatch :\\u{202E}line-let-through"),
        "{rows:#?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_denied_line_is_not_sent_and_leaves_no_row_only_the_log_line() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "denywatch").await?;
    let approvals = Approvals::with_wait(WAIT);
    let mut events = approvals.subscribe();
    let f = Arc::new(Fixture::approving("approver2", ircd.port(), &approvals).await?);
    // Two wait at once; answered in order, oldest first.
    let first = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG denywatch :denied line").await })
    };
    let asked = next_prompt(&mut events).await?;
    let second = {
        let f = f.clone();
        tokio::spawn(async move { f.send("PRIVMSG NickServ :IDENTIFY hunter7zz").await })
    };
    let masked = next_prompt(&mut events).await?;
    // The prompt never holds the secret.
    assert_eq!(masked.line, "PRIVMSG NickServ :IDENTIFY ********");
    assert_eq!(
        approvals.oldest().map(|(p, n)| (p.id, n)),
        Some((asked.id, 2))
    );
    assert_eq!(approvals.answer_oldest(false).map(|p| p.id), Some(asked.id));
    assert_eq!(
        approvals.answer_oldest(false).map(|p| p.id),
        Some(masked.id)
    );
    for call in [first, second] {
        assert_eq!(call.await?, ToolOutcome::Error(NOT_SENT.into()));
    }
    // A marker from another bot ends what the watcher reads: the denied line is not in it.
    let mut marker = Bot::connect(ircd.port(), "denymark").await?;
    marker.privmsg("denywatch", "marker").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker", DEFAULT_TIMEOUT)
        .await?;
    assert!(!seen.iter().any(|l| l.contains("denied line")), "{seen:#?}");
    let rows = f.server_rows().await?;
    assert!(
        !rows
            .iter()
            .any(|r| r.contains("denied line") || r.contains("IDENTIFY")),
        "{rows:#?}"
    );
    eventually("the denial's log line", WAIT, || async {
        logged()
            .contains("AI access line on test was not sent: PRIVMSG denywatch :denied line")
            .then_some(())
    })
    .await?;
    assert!(!logged().contains("hunter7zz"), "the secret in the log");
    // Denied lines gave their places back: five go at once again.
    approvals.set_on(false);
    let g = Arc::new(Fixture {
        ctx: ToolContext {
            send: f.ctx.send.clone().map(|s| Sending {
                approval: None,
                ..s
            }),
            ..f.ctx.clone()
        },
        session: f.session.clone(),
        tap: f.tap.clone(),
    });
    assert_eq!(sent_at_once(&g, 6, "after denials").await?, 5);
    Ok(())
}

#[tokio::test]
async fn an_unanswered_line_is_not_sent_once_the_wait_ends() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "latewatch").await?;
    // A short wait, so the test does not take 20 s; the production value is asserted above.
    let approvals = Approvals::with_wait(std::time::Duration::from_millis(300));
    let mut events = approvals.subscribe();
    let f = Fixture::approving("approver3", ircd.port(), &approvals).await?;
    assert_eq!(
        f.refused("PRIVMSG latewatch :unanswered line").await?,
        NOT_SENT
    );
    let (prompt, ending, waiting) = next_ending(&mut events).await?;
    assert_eq!(
        (prompt.line.as_str(), ending, waiting),
        ("PRIVMSG latewatch :unanswered line", Ending::Unanswered, 0)
    );
    // Answering it now changes nothing.
    assert_eq!(approvals.answer(prompt.id, true), None);
    let mut marker = Bot::connect(ircd.port(), "latemark").await?;
    marker.privmsg("latewatch", "marker").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker", DEFAULT_TIMEOUT)
        .await?;
    assert!(!seen.iter().any(|l| l.contains("unanswered")), "{seen:#?}");
    let rows = f.server_rows().await?;
    assert!(!rows.iter().any(|r| r.contains("unanswered")), "{rows:#?}");
    eventually("the log line", WAIT, || async {
        logged()
            .contains("AI access line on test was not sent: PRIVMSG latewatch :unanswered line")
            .then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_call_that_gives_up_while_waiting_withdraws_its_prompt() -> Result<()> {
    let ircd = ircd().await;
    let approvals = Approvals::with_wait(WAIT);
    let mut events = approvals.subscribe();
    let f = Fixture::approving("approver4", ircd.port(), &approvals).await?;
    let cancel = CancellationToken::new();
    let ctx = ToolContext {
        cancel: cancel.clone(),
        ..f.ctx.clone()
    };
    let call = tokio::spawn(async move {
        let args = json!({"session": f.sid(), "line": "PRIVMSG nobody :withdrawn line"});
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        let got = ToolBox::new().call("send_raw", &ctx, &args).await;
        (got, f)
    });
    let prompt = next_prompt(&mut events).await?;
    assert_eq!(approvals.waiting(), vec![prompt.clone()]);
    cancel.cancel();
    let (got, f) = call.await?;
    assert_eq!(got, ToolOutcome::Cancelled);
    let (ended, ending, waiting) = next_ending(&mut events).await?;
    assert_eq!(
        (ended, ending, waiting),
        (prompt.clone(), Ending::Withdrawn, 0)
    );
    assert!(approvals.waiting().is_empty());
    assert_eq!(
        approvals.answer(prompt.id, true),
        None,
        "nothing left to allow"
    );
    let rows = f.server_rows().await?;
    assert!(
        !rows.iter().any(|r| r.contains("withdrawn line")),
        "{rows:#?}"
    );
    Ok(())
}

impl Fixture {
    /// This fixture's context as a send-tier grant named `name` with `scope`.
    fn granted(&self, name: &str, scope: rete_mcp::grant::Scope) -> Fixture {
        Fixture {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::within(scope.clone()),
                principal: rete_mcp::tools::Principal::Grant(rete_mcp::grant::Granted::new(
                    name,
                    scope,
                    rete_mcp::grant::Tier::Send,
                    name,
                )),
                ..self.ctx.clone()
            },
            session: self.session.clone(),
            tap: self.tap.clone(),
        }
    }

    async fn network(&self) -> Result<String> {
        Ok(self.session.reader().read(|v| v.name().to_owned()).await?)
    }
}

fn scope(networks: &[&str], buffers: &[&str], queries: bool) -> rete_mcp::grant::Scope {
    rete_mcp::grant::Scope {
        networks: networks.iter().map(|s| s.to_string()).collect(),
        buffers: buffers.iter().map(|s| s.to_string()).collect(),
        queries,
    }
}

/// A grant sends PRIVMSG, NOTICE and TAGMSG to targets in its reach and nothing else; every
/// refusal sends nothing; a session out of its reach is `unknown session` before the line is
/// looked at; the full token is unchanged.
#[tokio::test]
async fn a_grant_sends_only_messages_to_targets_in_its_reach() -> Result<()> {
    use rete_mcp::send::grant_rule::{COMMAND_NOT_ALLOWED, TARGET_OUT_OF_REACH};
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "grantwatch").await?;
    bot.join("#grant-in").await?;
    bot.join("#grant-out").await?;
    let f = Fixture::start("grantsender", ircd.port()).await?;
    // The full token joins both (a grant may not).
    f.sent("JOIN #grant-in,#grant-out").await?;
    support::bot::sees_join(&mut bot, "grantsender", "#grant-out").await?;
    let network = f.network().await?;
    let g = f.granted("agent", scope(&[&network], &["#grant-in*"], false));
    for line in [
        "JOIN #grant-in",
        "PART #grant-in",
        "QUIT :marker-quit",
        "NICK marker-nick",
        "MODE #grant-in +o grantwatch",
        "TOPIC #grant-in :marker-topic",
        "PING :marker-ping",
        "@label=1 KICK #grant-in grantwatch",
    ] {
        assert_eq!(g.refused(line).await?, COMMAND_NOT_ALLOWED, "{line}");
    }
    for line in [
        "PRIVMSG #grant-out :marker-out",
        "NOTICE #grant-in,#grant-out :marker-both",
        "PRIVMSG grantwatch :marker-query",
        "PRIVMSG #no-such-channel :marker-absent",
        "PRIVMSG $* :marker-mask",
    ] {
        assert_eq!(g.refused(line).await?, TARGET_OUT_OF_REACH, "{line}");
    }
    // In reach: sent, recorded as the full token's lines are, seen by the bot.
    let got = g.sent("PRIVMSG #grant-in :marker-in").await?;
    assert_eq!(
        got,
        json!({"line": "PRIVMSG #grant-in :marker-in", "sent": true, "session": f.sid()})
    );
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker-in", DEFAULT_TIMEOUT)
        .await?;
    let rows = f.server_rows().await?;
    assert!(
        rows.iter()
            .any(|r| r == "AI access sent: [agent] PRIVMSG #grant-in :marker-in"),
        "{rows:#?}"
    );
    // Nothing refused reached the connection or the bot.
    let written = f.tap.0.lock().unwrap().clone();
    for l in written.iter().chain(&seen) {
        assert!(
            !l.contains("marker-") || l.contains("marker-in"),
            "a refused line went out: {l}"
        );
    }
    // With queries on, a nick is in reach.
    let chatty = f.granted("chatty", scope(&[], &["#grant-in*"], true));
    chatty.sent("PRIVMSG grantwatch :marker-query-ok").await?;
    bot.wait_for(
        |l| Msg::parse(l).param(1) == "marker-query-ok",
        DEFAULT_TIMEOUT,
    )
    .await?;
    // Another network's grant: the session is absent, whatever the line.
    let elsewhere = f.granted("elsewhere", scope(&["no-such-net"], &[], true));
    for line in [" ", "JOIN #grant-in", "PRIVMSG #grant-in :x"] {
        assert_eq!(
            elsewhere.refused(line).await?,
            "unknown session",
            "{line:?}"
        );
    }
    // The full token is unchanged: any command, the line rule's own words.
    assert_eq!(f.refused(" ").await?, "invalid arguments: line is empty");
    f.sent("PART #grant-out").await?;
    Ok(())
}

/// Grants' lines count against one budget of their own on a session: two grants sending at
/// once get five lines between them, and the full token still gets its five.
#[tokio::test]
async fn grants_share_rate_limits_apart_from_the_full_tokens() -> Result<()> {
    let ircd = ircd().await;
    let _bot = Bot::connect(ircd.port(), "grantburst").await?;
    let f = Arc::new(Fixture::start("grantsender2", ircd.port()).await?);
    let network = f.network().await?;
    let whole = scope(&[&network], &[], true);
    let senders = [
        f.clone(),
        Arc::new(f.granted("agent", whole.clone())),
        Arc::new(f.granted("other", whole)),
    ];
    let calls: Vec<_> = (0..24)
        .map(|n| {
            let who = senders[n % 3].clone();
            tokio::spawn(async move {
                (
                    n % 3,
                    who.send(&format!("PRIVMSG grantburst :burst {n}")).await,
                )
            })
        })
        .collect();
    let mut ok = [0, 0, 0];
    for call in calls {
        match call.await? {
            (who, ToolOutcome::Ok(_)) => ok[who] += 1,
            (_, ToolOutcome::Error(e)) if e == "too many sends: at most 5 at once" => {}
            other => bail!("unexpected {other:?}"),
        }
    }
    assert_eq!(ok[0], 5, "five for the full token: {ok:?}");
    assert_eq!(ok[1] + ok[2], 5, "five for the grants together: {ok:?}");
    Ok(())
}

/// With control.approve on, a grant's line waits for the person like any other, and the
/// prompt names the grant.
#[tokio::test]
async fn a_grants_line_waits_for_the_person_and_names_the_grant() -> Result<()> {
    let ircd = ircd().await;
    let mut bot = Bot::connect(ircd.port(), "grantappr").await?;
    let approvals = Approvals::with_wait(WAIT);
    let mut events = approvals.subscribe();
    let f = Fixture::approving("grantapprover", ircd.port(), &approvals).await?;
    let network = f.network().await?;
    let g = Arc::new(f.granted("agent\u{1b}", scope(&[&network], &[], true)));
    let call = {
        let g = g.clone();
        tokio::spawn(async move { g.send("PRIVMSG grantappr :granted-line").await })
    };
    let prompt = next_prompt(&mut events).await?;
    assert_eq!(prompt.grant.as_deref(), Some("agent\\u{1B}"));
    assert_eq!(prompt.line, "PRIVMSG grantappr :granted-line");
    approvals.answer(prompt.id, true).context("answered")?;
    match call.await? {
        ToolOutcome::Ok(v) => assert_eq!(v["sent"], true, "{v}"),
        other => bail!("allowed line: {other:?}"),
    }
    bot.wait_for(
        |l| Msg::parse(l).param(1) == "granted-line",
        DEFAULT_TIMEOUT,
    )
    .await?;
    // The full token's prompt names no grant.
    let call = {
        let f = Arc::new(f);
        tokio::spawn(async move { f.send("PRIVMSG grantappr :full-line").await })
    };
    let prompt = next_prompt(&mut events).await?;
    assert_eq!(prompt.grant, None);
    approvals.answer(prompt.id, false).context("answered")?;
    assert!(matches!(call.await?, ToolOutcome::Error(_)));
    Ok(())
}
