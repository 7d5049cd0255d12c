//! Issue 37: every credential the session sends is one of its held secrets. Against a real
//! InspIRCd (echo-message on) with a service bot named NickServ that answers every login with
//! `you are now identified with <password>`, and a watcher in #rete; the tools are called
//! through `ToolBox::call` with a debug capture on the raw tap, sending on, and a registry:
//! - the person's `/msg NickServ IDENTIFY acct <pw>`: the echo is withheld from
//!   search_messages, read_since, raw_since, search_raw and both subscriptions (item 1);
//! - send_raw `PRIVMSG #rete,NickServ :IDENTIFY <pw>`: the watcher gets it whole, the echo
//!   copy stored in #rete is masked, the raw lines withheld (item 2);
//! - send_raw `PRIVMSG NickServ :\x02IDENTIFY\x02 <pw>`, answered with the password split by
//!   U+200B: the result, the audit row, the access-log row and the log line are masked, the
//!   echo is withheld (item 3).
//!
//! Nothing any tool returns, no subscription event, no access-log row, no row as the terminal
//! masks it holds a password in any case or as drawn.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use rete_actors::Rete;
use rete_engine::buffer::BufferKind;
use rete_mcp::access_log::{wall_now, AccessLog, CallOutcome};
use rete_mcp::send::{limiter, Sending};
use rete_mcp::tools::args::SentNumbers;
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::debug_tools;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::tool_results::strings;
use support::tool_results::withheld;
use support::{Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio_util::sync::CancellationToken;

const ME: &str = "holder";
const PERSON_PW: &str = "PersonPw-3721";
const COMMA_PW: &str = "CommaPw-5804";
const CODED_PW: &str = "CodedPw-9146";
const PASSWORDS: [&str; 3] = [PERSON_PW, COMMA_PW, CODED_PW];

/// `text` as drawn (the formatting codes and invisible characters this test uses removed),
/// lower-cased.
fn drawn(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '\u{2}' | '\u{F}' | '\u{1D}' | '\u{200B}' | '\u{AD}'))
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Which password `text` holds, in any case or as drawn (never printed: its index only).
fn leak(text: &str) -> Option<usize> {
    let shown = drawn(text);
    PASSWORDS
        .iter()
        .position(|pw| shown.contains(&pw.to_ascii_lowercase()))
}

fn clean(what: &str, v: &Value) -> Result<()> {
    let mut all = vec![v.to_string()];
    strings(v, &mut all);
    for s in all {
        if let Some(i) = leak(&s) {
            bail!("{what} returned password #{i}");
        }
    }
    Ok(())
}

struct Fixture {
    ctx: ToolContext,
    sid: String,
}

impl Fixture {
    /// Calls `tool` as the control surface would: the access log records it.
    async fn call(&self, tool: &str, args: Value) -> Result<Value> {
        let parsed =
            Args::from_request(Some(&args)).map_err(|_| anyhow::anyhow!("not an object"))?;
        let outcome = ToolBox::new().call(tool, &self.ctx, &parsed).await;
        let v = match outcome {
            ToolOutcome::Ok(v) => v,
            other => bail!("{tool} failed: {other:?}"),
        };
        self.ctx.access_log.record_call(
            wall_now(),
            tool,
            Some(&args),
            &SentNumbers::default(),
            CallOutcome::Ok {
                bytes: v.to_string().len(),
            },
        );
        clean(tool, &v)?;
        Ok(v)
    }
}

/// The service bot answers the next login it gets with `reply`; returns the text it got.
async fn answer_login(nickserv: &mut Bot, reply: &str) -> Result<String> {
    let got = nickserv
        .wait_for(|l| Msg::parse(l).command == "PRIVMSG", DEFAULT_TIMEOUT)
        .await?;
    nickserv.send(&format!("NOTICE {ME} :{reply}")).await?;
    Ok(Msg::parse(&got).param(1).to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_credential_sent_is_held_and_never_comes_back() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut nickserv = Bot::connect(ircd.port(), "NickServ").await?;
    let mut watcher = Bot::connect(ircd.port(), "watcher").await?;
    watcher.join("#rete").await?;

    let rete = Arc::new(Rete::start(Default::default()).await?);
    let capture = debug_tools::capture(&rete, true).await?;
    let updates = debug_tools::updates(&rete, &capture).await?;
    let mut config = session_config(ME);
    config.channels = vec![rete_engine::session::ChannelSpec {
        name: "#rete".into(),
        key: None,
    }];
    let session = rete.add_session(spec(config, plain(ircd.port()))).await?;
    let reader = session.reader();
    eventually("joined #rete", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let id = v.find_buffer(BufferKind::Channel, "#rete")?;
                    let me = v.nick().to_owned();
                    v.members(id)?.iter().any(|m| m.nick == me).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;
    let f = Fixture {
        ctx: ToolContext {
            reach: rete_mcp::tools::Reach::everything(),
            principal: rete_mcp::tools::Principal::Full,
            sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
            send: Some(Sending {
                sessions: rete_actors::SendingSessions::new(rete.clone()),
                limiter: limiter::start().await.map_err(anyhow::Error::msg)?,
                approval: None,
            }),
            cancel: CancellationToken::new(),
            settings: Settings {
                debug: true,
                send: true,
            },
            access_log: Arc::new(AccessLog::new()),
            updates,
            capture,
        },
        sid: session.id().as_str().to_owned(),
    };

    // Both subscriptions, started (a probe reached the raw one) before anything is sent.
    let messages = f.call("subscribe", json!({"sessions": [f.sid]})).await?["subscription"]["id"]
        .as_str()
        .context("id")?
        .to_owned();
    let raw = f.call("subscribe", json!({"raw": {}})).await?["subscription"]["id"]
        .as_str()
        .context("id")?
        .to_owned();
    let mut events: Vec<Value> = Vec::new();
    let mut sub_withheld = 0u64;
    let mut read_subs = |v: &Value, events: &mut Vec<Value>| {
        for entry in v["updates"].as_array().into_iter().flatten() {
            sub_withheld += withheld(entry);
            events.extend(entry["events"].as_array().cloned().unwrap_or_default());
        }
    };
    for i in 0.. {
        watcher.privmsg("#rete", &format!("probe {i}")).await?;
        let v = f
            .call(
                "wait_for_updates",
                json!({"id": raw, "detail": "full", "limit": 500, "timeout": 1}),
            )
            .await?;
        let started = v["updates"].as_array().is_some_and(|u| {
            u.iter()
                .any(|e| e["events"].as_array().is_some_and(|x| !x.is_empty()))
        });
        read_subs(&v, &mut events);
        if started {
            break;
        }
        ensure!(i < 30, "the raw subscription never started");
    }

    // Item 1: the person's own login, echoed back by the service.
    session
        .sender()
        .command(|c| c.privmsg("NickServ", &format!("IDENTIFY acct {PERSON_PW}")))
        .await?;
    let got = answer_login(
        &mut nickserv,
        &format!("you are now identified with {PERSON_PW}"),
    )
    .await?;
    ensure!(
        got == format!("IDENTIFY acct {PERSON_PW}"),
        "NickServ got {got:?}"
    );

    // Item 2: a login to a comma-separated list reaches both, and the channel's copy is
    // masked on our side.
    let v = f
        .call(
            "send_raw",
            json!({"session": f.sid, "line": format!("PRIVMSG #rete,NickServ :IDENTIFY {COMMA_PW}")}),
        )
        .await?;
    ensure!(
        v["line"] == "PRIVMSG #rete,NickServ :IDENTIFY ********",
        "{v}"
    );
    let heard = watcher
        .wait_for(|l| l.contains("IDENTIFY"), DEFAULT_TIMEOUT)
        .await?;
    ensure!(
        heard.ends_with(&format!(":IDENTIFY {COMMA_PW}")),
        "the channel got it cut"
    );
    answer_login(
        &mut nickserv,
        &format!("you are now identified with {COMMA_PW}"),
    )
    .await?;

    // Item 3: the verb inside bold codes; the echo splits the password with U+200B.
    let coded = format!("PRIVMSG NickServ :\u{2}IDENTIFY\u{2} {CODED_PW}");
    let v = f
        .call("send_raw", json!({"session": f.sid, "line": coded}))
        .await?;
    ensure!(
        v["line"] == "PRIVMSG NickServ :\u{2}IDENTIFY\u{2} ********",
        "{v}"
    );
    let split = CODED_PW.replacen('-', "\u{200B}-", 1);
    answer_login(
        &mut nickserv,
        &format!("you are now identified with {split}"),
    )
    .await?;
    watcher.privmsg("#rete", "done").await?;

    // Everything has arrived once "done" is stored and the three notices are.
    eventually("the service's answers and the marker", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let id = v.find_buffer(BufferKind::Channel, "#rete")?;
                    let done = v.buffer(id)?.since(0).any(|r| {
                        matches!(&r.payload, rete_engine::row::Payload::Privmsg { text } if &**text == "done")
                    });
                    let answers = v
                        .buffers()
                        .flat_map(|b| b.since(0))
                        .filter(|r| {
                            matches!(&r.payload, rete_engine::row::Payload::Notice { text } if text.contains("identified with"))
                        })
                        .count();
                    (done && answers == 3).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;

    // The stored rows: the channel's echo copy masked; the terminal's masking (the engine's
    // list) leaves no password in any row; the audit rows masked.
    let (rows, terminal) = reader
        .read(|v| {
            let mut rows = Vec::new();
            let mut terminal = Vec::new();
            for b in v.buffers() {
                for r in b.since(0) {
                    let mut text = String::new();
                    r.payload.for_each_text(|t| text.push_str(t));
                    terminal.push(v.secrets().mask(&text).into_owned());
                    rows.push((b.name().to_owned(), r.from.to_string(), text));
                }
            }
            (rows, terminal)
        })
        .await?;
    ensure!(
        rows.iter()
            .any(|(b, from, t)| b == "#rete" && from == ME && t == "IDENTIFY ********"),
        "the echo copy in #rete is not stored masked"
    );
    for (b, _, t) in &rows {
        if b == "#rete" || t.starts_with("AI access sent") {
            ensure!(leak(t).is_none(), "a row of {b} holds a password");
        }
    }
    ensure!(
        rows.iter()
            .any(|(_, _, t)| t == "AI access sent: PRIVMSG NickServ :IDENTIFY ********"),
        "no masked audit row for the coded line"
    );
    for t in &terminal {
        ensure!(leak(t).is_none(), "the terminal would show a password");
    }

    // Every read tool: nothing returned holds a password; the echoes are withheld.
    let v = f
        .call(
            "search_messages",
            json!({"query": "identified with", "limit": 500}),
        )
        .await?;
    ensure!(
        v["matches"].as_array().is_some_and(Vec::is_empty) && withheld(&v) >= 3,
        "search_messages: {v}"
    );
    let v = f
        .call(
            "search_messages",
            json!({"query": "", "limit": 500, "context": 3}),
        )
        .await?;
    ensure!(
        withheld(&v) >= 3,
        "search_messages(\"\") withheld {}",
        withheld(&v)
    );
    let buffers = f.call("list_buffers", json!({"session": f.sid})).await?;
    for b in buffers["buffers"].as_array().into_iter().flatten() {
        let id = b["id"].as_str().context("buffer id")?;
        f.call("read_since", json!({"buffer": id, "limit": 500}))
            .await?;
        f.call("read_messages", json!({"buffer": id, "limit": 500}))
            .await?;
    }
    let v = f
        .call("raw_since", json!({"session": f.sid, "limit": 2000}))
        .await?;
    ensure!(withheld(&v) >= 4, "raw_since withheld {}", withheld(&v));
    let v = f
        .call(
            "search_raw",
            json!({"session": f.sid, "contains": "identified with", "limit": 2000}),
        )
        .await?;
    ensure!(
        v["lines"].as_array().is_some_and(Vec::is_empty) && withheld(&v) >= 3,
        "search_raw: {v}"
    );
    f.call("engine_state", json!({"session": f.sid})).await?;

    // Both subscriptions, drained to the marker: no event holds a password, and the
    // echoes were withheld.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        for id in [&messages, &raw] {
            let v = f
                .call(
                    "wait_for_updates",
                    json!({"id": id, "detail": "full", "limit": 500, "timeout": 1}),
                )
                .await?;
            read_subs(&v, &mut events);
        }
        let marked = events
            .iter()
            .filter(|e| {
                e.to_string().contains(":done") || e["message"]["payload"]["text"] == "done"
            })
            .count();
        if marked >= 2 {
            break;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the marker never reached both"
        );
    }
    ensure!(
        sub_withheld >= 6,
        "the subscriptions withheld {sub_withheld}"
    );

    // The access log: every row, the send_raw lines masked.
    let log = f.ctx.access_log.rows();
    ensure!(
        log.iter().filter(|r| r.contains("send_raw")).count() == 2,
        "{}",
        log.len()
    );
    for row in &log {
        ensure!(leak(row).is_none(), "an access-log row holds a password");
    }
    rete.shutdown(std::time::Duration::from_secs(2)).await;
    Ok(())
}
