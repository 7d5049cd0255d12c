//! The release read tools (list_buffers, list_members, read_messages, read_since) called
//! directly through `ToolBox::call` against a real session on a real InspIRCd: ordering, every
//! paging flag, cursor misuse, budget cuts with long lines, rows history inserts mid-buffer,
//! eviction at capacity, argument errors and integer clamping.
//!
//! A row larger than the whole 60,000-byte budget cannot be sent over IRC; the page functions
//! are tested with small budgets in their own unit tests (`mcp/src/tools/*`).
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::event::ConnState;
use rete_engine::ids::SessionId;
use rete_engine::session::SessionConfig;
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::bot::echo_bot;
use support::bot::sees_join;
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::tool_results::cursor_of;
use support::updates_tests_tools::channels;
use support::{Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio_util::sync::CancellationToken;

const ME: &str = "reader";

/// One engine with one session, and the context the tools run in.
struct Fixture {
    ctx: ToolContext,
    session: SessionHandle,
}

impl Fixture {
    /// Starts an engine and adds `config`, connecting to `port` (0: never connects).
    async fn start(config: SessionConfig, port: u16) -> Result<Fixture> {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
        let mut s = spec(config, plain(port.max(1)));
        s.autoconnect = port != 0;
        let session = rete.add_session(s).await?;
        Ok(Fixture {
            ctx: ToolContext {
                reach: rete_mcp::tools::Reach::everything(),
                principal: rete_mcp::tools::Principal::Full,
                sessions: rete_actors::ReadOnlySessions::new(rete),
                send: None,
                cancel: CancellationToken::new(),
                settings: Settings::default(),
                access_log: Arc::new(AccessLog::new()),
                updates: rete_mcp::updates::Updates::unstarted(),
                capture: rete_mcp::debug::Capture::off(),
            },
            session,
        })
    }

    fn sid(&self) -> String {
        self.session.id().as_str().to_owned()
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let args = Args::from_request(Some(&args)).expect("arguments are an object");
        ToolBox::new().call(tool, &self.ctx, &args).await
    }

    /// A successful result, checked against the budget.
    async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Ok(v) => {
                let size = encode(&v).len();
                if size > BUDGET {
                    bail!("{tool}({args}) answered {size} bytes");
                }
                Ok(v)
            }
            other => bail!("{tool}({args}) failed: {other:?}"),
        }
    }

    /// A tool error's text.
    async fn err(&self, tool: &str, args: Value) -> Result<String> {
        match self.call(tool, args.clone()).await {
            ToolOutcome::Error(text) => Ok(text),
            other => bail!("{tool}({args}) did not fail: {other:?}"),
        }
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

    /// The id of the buffer list_buffers names `name`, once listed.
    async fn buffer_id(&self, name: &str) -> Result<String> {
        let name = name.to_owned();
        eventually(&format!("buffer {name}"), WAIT, || {
            let name = name.clone();
            async move {
                let v = self
                    .ok("list_buffers", json!({"session": self.sid()}))
                    .await
                    .ok()?;
                v["buffers"]
                    .as_array()?
                    .iter()
                    .find(|b| {
                        b["name"]
                            .as_str()
                            .is_some_and(|n| n.eq_ignore_ascii_case(&name))
                    })
                    .and_then(|b| b["id"].as_str().map(str::to_owned))
            }
        })
        .await
    }

    /// Waits until read_since over `buffer` from the start returns a privmsg with `text`.
    async fn wait_text(&self, buffer: &str, text: &str) -> Result<()> {
        eventually(&format!("message {text:?}"), WAIT, || async {
            let all = self.since_all(buffer, None).await.ok()?;
            all.iter()
                .any(|m| privmsg_text(m) == Some(text))
                .then_some(())
        })
        .await
    }

    /// Every message read_since returns after `cursor`, following its cursors to the end.
    async fn since_all(&self, buffer: &str, cursor: Option<String>) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut cursor = cursor;
        loop {
            let mut args = json!({"buffer": buffer, "limit": 500});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let v = self.ok("read_since", args).await?;
            out.extend(v["messages"].as_array().cloned().unwrap_or_default());
            cursor = Some(v["cursor"].as_str().context("cursor")?.to_owned());
            if v["truncated"] == json!(false) {
                return Ok(out);
            }
        }
    }
}

fn privmsg_text(m: &Value) -> Option<&str> {
    (m["kind"] == json!("privmsg"))
        .then(|| m["payload"]["text"].as_str())
        .flatten()
}

fn seqs(v: &Value) -> Vec<u64> {
    v["messages"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["seq"].as_u64()).collect())
        .unwrap_or_default()
}

fn texts(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(privmsg_text)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Says each line in `channel`, 20 at a time, waiting for the server's echo of the last of
/// each 20 (the bot reads only while it waits, so this keeps its socket from filling).
async fn say_all(bot: &mut Bot, channel: &str, lines: &[String]) -> Result<()> {
    for chunk in lines.chunks(20) {
        for l in chunk {
            bot.privmsg(channel, l).await?;
        }
        if let Some(last) = chunk.last() {
            let suffix = format!(" {channel} :{last}");
            bot.wait_for(move |l| l.ends_with(&suffix), DEFAULT_TIMEOUT)
                .await?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffers_and_members_in_order_with_paging() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut zed, mut amy, mut bo) = tokio::try_join!(
        Bot::connect(port, "Zed"),
        Bot::connect(port, "amy"),
        Bot::connect(port, "Bo"),
    )?;
    // zed creates both channels, so zed holds +o in them.
    zed.join("#beta").await?;
    zed.join("#alpha").await?;
    amy.join("#alpha").await?;
    bo.join("#alpha").await?;
    amy.send("AWAY :lunch").await?;
    amy.wait_for(|l| Msg::parse(l).command == "306", DEFAULT_TIMEOUT)
        .await?;

    let mut config = session_config(ME);
    config.channels = channels(&["#beta", "#alpha"]);
    let f = Fixture::start(config, port).await?;
    f.wait_connected().await?;
    let alpha = f.buffer_id("#alpha").await?;
    sees_join(&mut zed, ME, "#alpha").await?;
    // A query buffer, opened by a private message to us.
    zed.privmsg(ME, "psst").await?;
    let query = f.buffer_id("Zed").await?;

    // list_buffers: server, then channels in the order joined, then queries.
    let v = f.ok("list_buffers", json!({"session": f.sid()})).await?;
    let listed = v["buffers"].as_array().context("buffers")?;
    let field = |i: usize, key: &str| listed[i][key].as_str().unwrap_or_default().to_lowercase();
    let kinds: Vec<String> = (0..listed.len()).map(|i| field(i, "kind")).collect();
    assert_eq!(kinds, ["server", "channel", "channel", "query"]);
    assert_eq!(field(0, "name"), "test");
    let mut chans = [field(1, "name"), field(2, "name")];
    chans.sort();
    assert_eq!(chans, ["#alpha", "#beta"]);
    assert_eq!(field(3, "name"), "zed");
    assert_eq!(v["buffers"][3]["id"], json!(query));
    assert_eq!(v["untrusted"], json!(true));
    assert!(v.get("truncated").is_none() && v.get("next_cursor").is_none());

    // list_members: sorted by nick ignoring case, with modes, away and hostmasks.
    let v = f.ok("list_members", json!({"buffer": alpha})).await?;
    let members = v["members"].as_array().cloned().unwrap_or_default();
    let nicks: Vec<&str> = members.iter().filter_map(|m| m["nick"].as_str()).collect();
    assert_eq!(nicks, ["amy", "Bo", ME, "Zed"]);
    assert_eq!(v["truncated"], json!(false));
    assert!(v.get("next_cursor").is_none());
    assert_eq!(v["untrusted"], json!(true));
    let zed_row = &members[3];
    assert_eq!(zed_row["modes"], json!("o"));
    assert_eq!(zed_row["away"], json!(false));
    assert!(
        zed_row["host"].is_string() && zed_row["user"].is_string(),
        "{zed_row}"
    );
    assert_eq!(members[1]["modes"], json!(""));
    // amy went away before we joined: the engine learns it from its WHO.
    eventually("amy away", WAIT, || async {
        let v = f.ok("list_members", json!({"buffer": alpha})).await.ok()?;
        (v["members"][0]["away"] == json!(true)).then_some(())
    })
    .await?;

    // limit 1 pages one member at a time; next_cursor exactly when truncated.
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"buffer": alpha, "limit": 1});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let v = f.ok("list_members", args).await?;
        assert_eq!(v["members"].as_array().map(Vec::len), Some(1), "{v}");
        walked.push(
            v["members"][0]["nick"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        assert_eq!(
            v.get("next_cursor").is_some(),
            v["truncated"] == json!(true)
        );
        match v.get("next_cursor") {
            Some(c) => cursor = c.as_str().map(str::to_owned),
            None => break,
        }
    }
    assert_eq!(walked, ["amy", "Bo", ME, "Zed"]);
    // -5 clamps to 1; 1e3 is an integer; a huge limit clamps to the maximum.
    let v = f
        .ok("list_members", json!({"buffer": alpha, "limit": -5}))
        .await?;
    assert_eq!(v["members"].as_array().map(Vec::len), Some(1));
    let big: Value = serde_json::from_str(&format!(r#"{{"buffer":"{alpha}","limit":1e3}}"#))?;
    assert_eq!(
        f.ok("list_members", big).await?["members"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    let huge: Value = serde_json::from_str(&format!(
        r#"{{"buffer":"{alpha}","limit":99999999999999999999999}}"#
    ))?;
    assert_eq!(f.ok("list_members", huge).await?["truncated"], json!(false));
    assert_eq!(
        f.err("list_members", json!({"buffer": alpha, "limit": 1.5}))
            .await?,
        "invalid arguments: limit must be an integer"
    );

    // Buffers that are not channels have no members.
    for b in [&query, &f.buffer_id("test").await?] {
        let v = f.ok("list_members", json!({"buffer": b})).await?;
        assert_eq!(
            encode(&v),
            r#"{"members":[],"truncated":false,"untrusted":true}"#
        );
    }
    drop((amy, bo));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_messages_pages_back_and_around_an_id() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#read"]);
    let (mut alice, f) = tokio::try_join!(echo_bot(port, "alice"), Fixture::start(config, port))?;
    f.wait_connected().await?;
    let id = f.buffer_id("#read").await?;
    alice.join("#read").await?;
    let lines: Vec<String> = (0..30).map(|i| format!("line {i:02}")).collect();
    say_all(&mut alice, "#read", &lines).await?;
    f.wait_text(&id, "line 29").await?;

    // The newest page, oldest first, then back to the oldest with `before`.
    let v = f
        .ok("read_messages", json!({"buffer": id, "limit": 10}))
        .await?;
    assert_eq!(texts(&v), lines[20..].to_vec());
    assert_eq!(v["truncated"], json!(true));
    assert_eq!(v["reached_oldest"], json!(false));
    let cov = &v["coverage"];
    assert!(
        cov["oldest"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') && t.len() == 20),
        "{cov}"
    );
    assert!(cov["oldest"].as_str() <= cov["newest"].as_str());
    for m in v["messages"].as_array().context("messages")? {
        assert_eq!(m["untrusted"], json!(true));
        assert_eq!(m["from"], json!("alice"));
        assert_eq!(m["payload"]["caseName"], json!("privmsg"));
    }
    let mut pages = vec![v.clone()];
    let mut page = v;
    while page["truncated"] == json!(true) {
        page = f
            .ok(
                "read_messages",
                json!({"buffer": id, "limit": 10, "before": cursor_of(&page, "next_cursor")}),
            )
            .await?;
        pages.push(page.clone());
    }
    let last = pages.last().context("a page")?;
    assert_eq!(last["reached_oldest"], json!(true));
    assert!(last.get("next_cursor").is_none());
    let mut every: Vec<u64> = pages.iter().rev().flat_map(seqs).collect();
    let count = every.len();
    every.dedup();
    assert_eq!(every.len(), count, "no row twice");
    let held = f.since_all(&id, None).await?;
    assert_eq!(every.len(), held.len(), "every held row once");

    // around an id: limit/2 older, the message, the rest newer.
    let anchor = held
        .iter()
        .find(|m| privmsg_text(m) == Some("line 15"))
        .context("line 15")?;
    let msgid = anchor["id"].as_str().context("msgid")?.to_owned();
    let v = f
        .ok(
            "read_messages",
            json!({"buffer": id, "around": msgid, "limit": 5}),
        )
        .await?;
    assert_eq!(
        texts(&v),
        ["line 13", "line 14", "line 15", "line 16", "line 17"]
    );
    assert_eq!(v["truncated"], json!(true));
    let older = f
        .ok(
            "read_messages",
            json!({"buffer": id, "before": cursor_of(&v, "next_cursor"), "limit": 2}),
        )
        .await?;
    assert_eq!(texts(&older), ["line 11", "line 12"]);
    // `before` is checked with `around`, then ignored.
    assert_eq!(
        f.err(
            "read_messages",
            json!({"buffer": id, "around": msgid, "before": "junk"})
        )
        .await?,
        "invalid cursor"
    );
    let with_before = f
        .ok(
            "read_messages",
            json!({"buffer": id, "around": msgid, "limit": 5, "before": cursor_of(&older, "next_cursor")}),
        )
        .await?;
    assert_eq!(texts(&with_before), texts(&v));
    // An id not held: an empty page, no cursor.
    let v = f
        .ok(
            "read_messages",
            json!({"buffer": id, "around": "no-such-id"}),
        )
        .await?;
    assert_eq!(
        encode(&v),
        r#"{"coverage":{},"messages":[],"reached_oldest":false,"truncated":false}"#
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_cuts_with_long_lines_resume_without_loss() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#long"]);
    let (mut alice, f) = tokio::try_join!(echo_bot(port, "alice"), Fixture::start(config, port))?;
    f.wait_connected().await?;
    let id = f.buffer_id("#long").await?;
    alice.join("#long").await?;
    // 200 rows of about 500 bytes each: about 100 kB, past the 60,000-byte budget.
    let lines: Vec<String> = (0..200)
        .map(|i| format!("{i:03} {}", "x".repeat(396)))
        .collect();
    say_all(&mut alice, "#long", &lines).await?;
    f.wait_text(&id, &lines[199]).await?;

    // read_since: the budget cuts the first page; the next resumes at the cut.
    let first = f
        .ok("read_since", json!({"buffer": id, "limit": 500}))
        .await?;
    assert_eq!(first["truncated"], json!(true));
    assert_eq!(first["evicted"], json!(false));
    let n = seqs(&first).len();
    assert!(n > 50 && n < 200, "{n} rows on a 60,000-byte page");
    let size = encode(&first).len();
    assert!(size > BUDGET - 1500, "a cut page is nearly full: {size}");
    let second = f
        .ok(
            "read_since",
            json!({"buffer": id, "limit": 500, "cursor": cursor_of(&first, "cursor")}),
        )
        .await?;
    assert_eq!(
        seqs(&second).first().copied(),
        seqs(&first).last().map(|s| s + 1)
    );
    let all: Vec<String> = f
        .since_all(&id, None)
        .await?
        .iter()
        .filter_map(privmsg_text)
        .map(str::to_owned)
        .collect();
    assert_eq!(all, lines);

    // read_messages: the cut keeps the newest rows and next_cursor reads on below them.
    let v = f
        .ok("read_messages", json!({"buffer": id, "limit": 500}))
        .await?;
    assert_eq!(v["truncated"], json!(true));
    let got = texts(&v);
    assert_eq!(got.last(), lines.last());
    assert!(got.len() < 200);
    let below = f
        .ok(
            "read_messages",
            json!({"buffer": id, "limit": 3, "before": cursor_of(&v, "next_cursor")}),
        )
        .await?;
    let first_shown = lines
        .iter()
        .position(|l| Some(l) == got.first())
        .context("shown")?;
    assert_eq!(texts(&below), lines[first_shown - 3..first_shown].to_vec());
    // around with a cut: the anchor stays, the farthest rows go first.
    let msgid = f
        .since_all(&id, None)
        .await?
        .iter()
        .find(|m| privmsg_text(m) == Some(lines[100].as_str()))
        .and_then(|m| m["id"].as_str().map(str::to_owned))
        .context("msgid of line 100")?;
    let v = f
        .ok(
            "read_messages",
            json!({"buffer": id, "around": msgid, "limit": 200}),
        )
        .await?;
    let got = texts(&v);
    let at = got
        .iter()
        .position(|t| *t == lines[100])
        .context("anchor kept")?;
    let (older, newer) = (at, got.len() - at - 1);
    assert!(older.abs_diff(newer) <= 1, "{older} older, {newer} newer");
    assert!(got.len() < 200);
    assert_eq!(v["truncated"], json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_are_bound_to_their_tool_session_and_buffer() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#one", "#two"]);
    let (mut alice, f) = tokio::try_join!(echo_bot(port, "alice"), Fixture::start(config, port))?;
    f.wait_connected().await?;
    let one = f.buffer_id("#one").await?;
    let two = f.buffer_id("#two").await?;
    alice.join("#one").await?;
    let lines: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
    say_all(&mut alice, "#one", &lines).await?;
    f.wait_text(&one, "m4").await?;

    let since = cursor_of(
        &f.ok("read_since", json!({"buffer": one, "limit": 1}))
            .await?,
        "cursor",
    );
    let before = cursor_of(
        &f.ok("read_messages", json!({"buffer": one, "limit": 1}))
            .await?,
        "next_cursor",
    );
    let members = cursor_of(
        &f.ok("list_members", json!({"buffer": one, "limit": 1}))
            .await?,
        "next_cursor",
    );
    assert!(!since.is_empty() && !before.is_empty() && !members.is_empty());
    // Each works where it was minted.
    f.ok("read_since", json!({"buffer": one, "cursor": since}))
        .await?;
    f.ok("read_messages", json!({"buffer": one, "before": before}))
        .await?;
    f.ok("list_members", json!({"buffer": one, "cursor": members}))
        .await?;

    let mut tampered = since.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered)?;
    let long = "A".repeat(513);
    let cases = [
        (
            "read_since",
            "cursor",
            before.clone(),
            &one,
            "another tool's",
        ),
        (
            "read_since",
            "cursor",
            members.clone(),
            &one,
            "another tool's",
        ),
        (
            "read_messages",
            "before",
            since.clone(),
            &one,
            "another tool's",
        ),
        (
            "list_members",
            "cursor",
            since.clone(),
            &one,
            "another tool's",
        ),
        (
            "read_since",
            "cursor",
            since.clone(),
            &two,
            "another buffer's",
        ),
        (
            "read_messages",
            "before",
            before.clone(),
            &two,
            "another buffer's",
        ),
        (
            "list_members",
            "cursor",
            members.clone(),
            &two,
            "another buffer's",
        ),
        ("read_since", "cursor", tampered.clone(), &one, "tampered"),
        ("read_since", "cursor", long.clone(), &one, "over 512 bytes"),
        (
            "read_messages",
            "before",
            long.clone(),
            &one,
            "over 512 bytes",
        ),
        (
            "list_members",
            "cursor",
            "%%%".to_owned(),
            &one,
            "not base64",
        ),
    ];
    for (tool, arg, cursor, buffer, what) in cases {
        let mut args = json!({"buffer": buffer});
        args[arg] = json!(cursor);
        assert_eq!(
            f.err(tool, args).await?,
            "invalid cursor",
            "{tool} with {what} cursor"
        );
    }
    assert_eq!(
        f.err("list_buffers", json!({"session": f.sid(), "cursor": since}))
            .await?,
        "invalid cursor"
    );

    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_since_returns_history_inserted_mid_buffer_after_an_older_cursor() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut alice, f) = tokio::try_join!(
        echo_bot(port, "alice"),
        Fixture::start(session_config(ME), port)
    )?;
    alice.join("#hist").await?;
    alice.send("MODE #hist +H 50:1d").await?;
    alice
        .wait_for(|l| Msg::parse(l).command == "MODE", DEFAULT_TIMEOUT)
        .await?;
    f.wait_connected().await?;
    let sender = f.session.sender();
    sender.command(|c| c.join("#hist", None)).await?;
    let id = f.buffer_id("#hist").await?;
    sees_join(&mut alice, ME, "#hist").await?;
    say_all(&mut alice, "#hist", &["before we left".to_owned()]).await?;
    f.wait_text(&id, "before we left").await?;
    let cursor = cursor_of(
        &f.ok("read_since", json!({"buffer": id, "limit": 500}))
            .await?,
        "cursor",
    );

    // We leave; alice talks; we come back and the server replays what we missed.
    sender.command(|c| c.part("#hist", None)).await?;
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PART" && m.source_nick() == Some(ME)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    let missed: Vec<String> = (0..3).map(|i| format!("while you were out {i}")).collect();
    say_all(&mut alice, "#hist", &missed).await?;
    sender.command(|c| c.join("#hist", None)).await?;
    sees_join(&mut alice, ME, "#hist").await?;
    say_all(&mut alice, "#hist", &["marker".to_owned()]).await?;
    f.wait_text(&id, "marker").await?;

    let after = f.since_all(&id, Some(cursor)).await?;
    let got: Vec<&str> = after.iter().filter_map(privmsg_text).collect();
    assert_eq!(
        got,
        [
            missed[0].as_str(),
            missed[1].as_str(),
            missed[2].as_str(),
            "marker"
        ],
        "{after:#?}"
    );
    let seq_order: Vec<u64> = after.iter().filter_map(|m| m["seq"].as_u64()).collect();
    assert!(
        seq_order.windows(2).all(|w| w[0] < w[1]),
        "arrival order: {seq_order:?}"
    );
    // In display order the replayed lines sit before our rejoin, i.e. mid-buffer.
    let page = f
        .ok("read_messages", json!({"buffer": id, "limit": 500}))
        .await?;
    let shown = page["messages"].as_array().context("messages")?;
    let rejoin = shown
        .iter()
        .rposition(|m| m["kind"] == json!("join") && m["from"] == json!(ME))
        .context("our rejoin")?;
    let replayed = shown
        .iter()
        .position(|m| privmsg_text(m) == Some(missed[0].as_str()))
        .context("replayed")?;
    let brief: Vec<String> = shown
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {} {}",
                m["seq"], m["time"], m["kind"], m["from"], m["payload"]
            )
        })
        .collect();
    assert!(
        replayed < rejoin,
        "replayed row displayed after our rejoin: {brief:#?}"
    );
    let replayed_seq = shown[replayed]["seq"].as_u64().context("seq")?;
    let rejoin_seq = shown[rejoin]["seq"].as_u64().context("seq")?;
    assert!(replayed_seq > rejoin_seq, "yet it arrived after the rejoin");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_at_capacity_is_reported_to_a_cursor_behind_it() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#small"]);
    config.buffer_capacity = 5;
    let (mut alice, f) = tokio::try_join!(echo_bot(port, "alice"), Fixture::start(config, port))?;
    f.wait_connected().await?;
    let id = f.buffer_id("#small").await?;
    alice.join("#small").await?;
    say_all(&mut alice, "#small", &["first".to_owned()]).await?;
    f.wait_text(&id, "first").await?;
    let v = f.ok("read_since", json!({"buffer": id})).await?;
    assert_eq!(v["evicted"], json!(false));
    let cursor = cursor_of(&v, "cursor");
    let caught_up = f
        .ok("read_since", json!({"buffer": id, "cursor": cursor}))
        .await?;
    assert_eq!(caught_up["evicted"], json!(false));
    assert_eq!(caught_up["messages"], json!([]));
    assert_eq!(caught_up["truncated"], json!(false));
    assert_eq!(
        cursor_of(&caught_up, "cursor"),
        cursor,
        "an empty read keeps its place"
    );

    let lines: Vec<String> = (0..10).map(|i| format!("flood {i}")).collect();
    say_all(&mut alice, "#small", &lines).await?;
    f.wait_text(&id, "flood 9").await?;
    let v = f
        .ok("read_since", json!({"buffer": id, "cursor": cursor}))
        .await?;
    assert_eq!(v["evicted"], json!(true));
    assert_eq!(texts(&v), lines[5..].to_vec());
    let v = f.ok("read_since", json!({"buffer": id})).await?;
    assert_eq!(v["evicted"], json!(false), "never evicted without a cursor");
    assert_eq!(seqs(&v).len(), 5);
    let next = f
        .ok(
            "read_since",
            json!({"buffer": id, "cursor": cursor_of(&v, "cursor")}),
        )
        .await?;
    assert_eq!(next["evicted"], json!(false));
    let v = f
        .ok("read_messages", json!({"buffer": id, "limit": 500}))
        .await?;
    assert_eq!(texts(&v), lines[5..].to_vec());
    assert_eq!(v["reached_oldest"], json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argument_errors_and_unknown_ids() -> Result<()> {
    // No server: a session that never connects still has its server buffer.
    let f = Fixture::start(session_config(ME), 0).await?;
    let server = f.buffer_id("test").await?;
    let sid = f.sid();
    let unknown_session = SessionId::parse(&uuid_like())?.as_str().to_owned();

    for tool in ["list_members", "read_messages", "read_since"] {
        assert_eq!(
            f.err(tool, json!({})).await?,
            "invalid arguments: missing buffer"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": null})).await?,
            "invalid arguments: missing buffer"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": 7})).await?,
            "invalid arguments: buffer must be a string"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": server, "limit": "5"})).await?,
            "invalid arguments: limit must be an integer"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": server, "limit": 2.5})).await?,
            "invalid arguments: limit must be an integer"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": server, "zzz": null})).await?,
            "invalid arguments: unknown argument \"zzz\""
        );
        assert_eq!(
            f.err(tool, json!({"buffer": "nope"})).await?,
            "unknown buffer"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": sid})).await?,
            "unknown buffer",
            "a session id is not a buffer id"
        );
        assert_eq!(
            f.err(tool, json!({"buffer": server.to_lowercase()}))
                .await?,
            "unknown buffer",
            "ids match exactly"
        );
        // Type errors come before the lookup.
        assert_eq!(
            f.err(tool, json!({"buffer": "nope", "limit": true}))
                .await?,
            "invalid arguments: limit must be an integer"
        );
        // Null optional arguments are absent.
        f.ok(tool, json!({"buffer": server, "limit": null})).await?;
    }
    assert_eq!(
        f.err("read_since", json!({"buffer": server, "cursor": 1}))
            .await?,
        "invalid arguments: cursor must be a string"
    );
    assert_eq!(
        f.err("read_messages", json!({"buffer": server, "before": []}))
            .await?,
        "invalid arguments: before must be a string"
    );
    assert_eq!(
        f.err("read_messages", json!({"buffer": server, "around": 3}))
            .await?,
        "invalid arguments: around must be a string"
    );
    assert_eq!(
        f.err("read_since", json!({"buffer": server, "before": "x"}))
            .await?,
        "invalid arguments: unknown argument \"before\""
    );
    assert_eq!(
        f.err("list_buffers", json!({})).await?,
        "invalid arguments: missing session"
    );
    assert_eq!(
        f.err("list_buffers", json!({"session": sid, "limit": 1}))
            .await?,
        "invalid arguments: unknown argument \"limit\""
    );
    assert_eq!(
        f.err("list_buffers", json!({"session": unknown_session}))
            .await?,
        "unknown session"
    );
    assert_eq!(
        f.err("list_buffers", json!({"session": server})).await?,
        "unknown session"
    );
    assert_eq!(
        f.err("list_buffers", json!({"session": sid, "cursor": "abc"}))
            .await?,
        "invalid cursor"
    );

    // Integer clamping on the message tools: 1e3 and a huge limit clamp to 500, -5 to 1.
    let v = f
        .ok("read_since", json!({"buffer": server, "limit": -5}))
        .await?;
    assert!(seqs(&v).len() <= 1);
    let huge: Value = serde_json::from_str(&format!(r#"{{"buffer":"{server}","limit":1e30}}"#))?;
    f.ok("read_messages", huge).await?;
    let thousand: Value = serde_json::from_str(&format!(r#"{{"buffer":"{server}","limit":1e3}}"#))?;
    f.ok("read_since", thousand).await?;

    // A cancelled request answers Cancelled.
    let cancelled = ToolContext {
        cancel: CancellationToken::new(),
        ..f.ctx.clone()
    };
    cancelled.cancel.cancel();
    let args = Args::from_request(Some(&json!({"buffer": server})))
        .map_err(|_| anyhow::anyhow!("object"))?;
    for tool in ["list_members", "read_messages", "read_since"] {
        assert_eq!(
            ToolBox::new().call(tool, &cancelled, &args).await,
            ToolOutcome::Cancelled
        );
    }
    Ok(())
}

/// A well-formed session id no session has.
fn uuid_like() -> String {
    "00000000-0000-4000-8000-00000000abcd".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_tools_are_listed() -> Result<()> {
    let names: Vec<String> = ToolBox::new()
        .list(&Settings::default())
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        names,
        [
            "list_sessions",
            "list_buffers",
            "list_members",
            "read_messages",
            "read_since",
            "search_messages",
            "find_user",
            "subscribe",
            "unsubscribe",
            "list_subscriptions",
            "read_updates",
            "wait_for_updates"
        ]
    );
    let list = ToolBox::new().list(&Settings::default());
    let rm = list
        .iter()
        .find(|d| d["name"] == json!("read_messages"))
        .context("read_messages listed")?;
    assert_eq!(
        rm["inputSchema"]["properties"]["limit"]["default"],
        json!(50)
    );
    assert_eq!(rm["inputSchema"]["additionalProperties"], json!(false));
    assert_eq!(rm["inputSchema"]["required"], json!(["buffer"]));
    assert_eq!(rm["annotations"], json!({"readOnlyHint": true}));
    let lm = list
        .iter()
        .find(|d| d["name"] == json!("list_members"))
        .context("list_members listed")?;
    assert_eq!(
        lm["inputSchema"]["properties"]["limit"]["default"],
        json!(200)
    );
    Ok(())
}

/// list_sessions reads a row straight from a free engine; a session whose
/// engine is busy when it looks (its actor in the middle of an input) is read
/// in its actor instead, once the input is done: still listed, with the same
/// row, never left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sessions_reads_a_busy_engine_in_its_actor() -> Result<()> {
    let f = Fixture::start(session_config("busy"), 0).await?;
    let free = f.ok("list_sessions", json!({})).await?;
    assert_eq!(free["sessions"][0]["id"], json!(f.sid()), "{free}");
    assert_eq!(free["sessions"][0]["nick"], json!("busy"), "{free}");

    // Polled once while this thread holds the engine: the row cannot be
    // read here (a blocking lock would hang this test), so it is queued in
    // the actor, which waits for the engine too.
    let held = f.session.hold_engine_for_test();
    let mut call = std::pin::pin!(f.ok("list_sessions", json!({})));
    let first = tokio::time::timeout(std::time::Duration::ZERO, &mut call).await;
    assert!(first.is_err(), "answered with the engine held: {first:?}");
    drop(held);
    let busy = call.await?;
    assert_eq!(busy, free);
    Ok(())
}

/// A request whose reach is a grant's scope (issue 33; nothing hands a
/// request one yet): sessions, buffers and messages out of it are absent
/// from the read tools, search and find_user, and their ids answer as
/// unknown ones do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_reach_sees_only_its_session_and_buffers() -> Result<()> {
    use rete_mcp::grant::Scope;
    use rete_mcp::tools::Reach;

    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut zed = Bot::connect(port, "Zed").await?;
    zed.join("#rust-beginners").await?;
    zed.join("#other").await?;
    let mut config = session_config(ME);
    config.channels = channels(&["#rust-beginners", "#other"]);
    let f = Fixture::start(config, port).await?;
    f.wait_connected().await?;
    let rust = f.buffer_id("#rust-beginners").await?;
    let other = f.buffer_id("#other").await?;
    sees_join(&mut zed, ME, "#rust-beginners").await?;
    sees_join(&mut zed, ME, "#other").await?;
    zed.privmsg("#rust-beginners", "marker-rust").await?;
    zed.privmsg("#other", "marker-other").await?;
    zed.privmsg(ME, "psst marker-query").await?;
    let query = f.buffer_id("Zed").await?;
    // Every marker is held before the scoped calls look for them.
    eventually("markers held", WAIT, || async {
        let v = f
            .ok("search_messages", json!({"query": "marker"}))
            .await
            .ok()?;
        let text = v.to_string();
        ["marker-rust", "marker-other", "marker-query"]
            .iter()
            .all(|m| text.contains(m))
            .then_some(())
    })
    .await?;
    let full = f.ok("list_buffers", json!({"session": f.sid()})).await?;
    let server = full["buffers"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let network = f.session.reader().read(|v| v.name().to_owned()).await?;

    let scoped = |scope: Scope| Fixture {
        ctx: ToolContext {
            reach: Reach::within(scope),
            ..f.ctx.clone()
        },
        session: f.session.clone(),
    };
    let rust_only = scoped(Scope {
        networks: vec![network.to_uppercase()],
        buffers: vec!["#RUST*".into()],
        queries: false,
    });
    let listed = rust_only
        .ok("list_buffers", json!({"session": f.sid()}))
        .await?;
    let names: Vec<&str> = listed["buffers"]
        .as_array()
        .context("buffers")?
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["#rust-beginners"], "{listed}");
    let found = rust_only
        .ok("search_messages", json!({"query": "marker"}))
        .await?
        .to_string();
    assert!(found.contains("marker-rust"), "{found}");
    for absent in [
        "marker-other",
        "marker-query",
        other.as_str(),
        query.as_str(),
        "#other",
    ] {
        assert!(!found.contains(absent), "{absent} in {found}");
    }
    assert_eq!(
        rust_only
            .err(
                "search_messages",
                json!({"query": "marker", "buffers": [other]})
            )
            .await?,
        "unknown buffer"
    );
    let zed_seen = rust_only
        .ok("find_user", json!({"nick": "zed"}))
        .await?
        .to_string();
    assert!(zed_seen.contains("#rust-beginners"), "{zed_seen}");
    assert!(!zed_seen.contains("#other"), "{zed_seen}");
    let sessions = rust_only.ok("list_sessions", json!({})).await?;
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(1),
        "{sessions}"
    );
    rust_only
        .ok("read_messages", json!({"buffer": rust}))
        .await?;
    for hidden in [&other, &query, &server] {
        for tool in ["read_messages", "read_since", "list_members"] {
            assert_eq!(
                rust_only.err(tool, json!({"buffer": hidden})).await?,
                "unknown buffer",
                "{tool} on {hidden}"
            );
        }
    }

    // Queries granted: the query too, but still not the server buffer.
    let with_queries = scoped(Scope {
        networks: vec![],
        buffers: vec!["#rust*".into()],
        queries: true,
    });
    with_queries
        .ok("read_messages", json!({"buffer": query}))
        .await?;
    assert_eq!(
        with_queries
            .err("read_messages", json!({"buffer": server}))
            .await?,
        "unknown buffer"
    );

    // Another network only: this session is unknown everywhere.
    let elsewhere = scoped(Scope {
        networks: vec!["elsewhere".into()],
        buffers: vec![],
        queries: true,
    });
    let none = elsewhere.ok("list_sessions", json!({})).await?;
    assert_eq!(none["sessions"], json!([]), "{none}");
    assert_eq!(
        elsewhere
            .err("list_buffers", json!({"session": f.sid()}))
            .await?,
        "unknown session"
    );
    assert_eq!(
        elsewhere
            .err("read_messages", json!({"buffer": rust}))
            .await?,
        "unknown buffer"
    );
    assert_eq!(
        elsewhere
            .err(
                "search_messages",
                json!({"query": "marker", "sessions": [f.sid()]})
            )
            .await?,
        "unknown session"
    );
    let nothing = elsewhere
        .ok("search_messages", json!({"query": "marker"}))
        .await?
        .to_string();
    assert!(!nothing.contains("marker"), "{nothing}");
    Ok(())
}
