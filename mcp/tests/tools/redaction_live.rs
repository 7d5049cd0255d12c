//! The way-out scan against a real InspIRCd (with a server password) and Atheme (SASL PLAIN):
//! a session holding a server password, a SASL password and a channel key is told those values
//! by other users, in its channel and in a query; every release read tool is called through
//! `ToolBox::call` and none returns them, each withheld row is counted, and ordinary rows still
//! come back. A 3-byte channel key is not scanned for.

use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{ChannelSpec, SaslSettings};
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{eventually, plain, session_config, spec, WAIT};
use support::tool_results::withheld;
use support::{Atheme, Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio_util::sync::CancellationToken;

const ME: &str = "reader";
const ACCOUNT: &str = "readeracct";
const SERVER_PW: &str = "srvPass-7731";
const SASL_PW: &str = "saslPw-4420x";
/// Nick-shaped, so a user can be named after it too.
const KEY: &str = "Kz9keyval";
/// Under 4 bytes: not scanned for.
const SHORT_KEY: &str = "k3y";
const KEYED: &str = "#keyed";
const SHORT: &str = "#short";
/// A user whose nick holds the channel key.
const KEY_NICK: &str = "xKz9keyval";

const SECRETS: [&str; 3] = [SERVER_PW, SASL_PW, KEY];

/// The ordinary lines said among the secret ones; all of them must come back.
const ORDINARY: [&str; 3] = ["ordinary one", "ordinary two", "ordinary three"];

/// What the keeper says, in order: ordinary lines interleaved with the three secrets and a line
/// that merely contains one. The last line is the marker the test waits for.
fn script() -> Vec<String> {
    vec![
        ORDINARY[0].to_owned(),
        format!("the server password is {SERVER_PW}"),
        SASL_PW.to_owned(),
        ORDINARY[1].to_owned(),
        format!("join with key={KEY}!"),
        format!("pre{SASL_PW}post"),
        ORDINARY[2].to_owned(),
        "done".to_owned(),
    ]
}

/// How many of [`script`]'s lines hold a secret.
const SECRET_LINES: u64 = 4;

struct Fixture {
    ctx: ToolContext,
    session: SessionHandle,
    _ircd: Inspircd,
    _atheme: Atheme,
    _keeper: Bot,
    _keynick: Bot,
}

impl Fixture {
    fn sid(&self) -> String {
        self.session.id().as_str().to_owned()
    }

    async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        let Ok(parsed) = Args::from_request(Some(&args)) else {
            bail!("arguments are not an object");
        };
        match ToolBox::new().call(tool, &self.ctx, &parsed).await {
            ToolOutcome::Ok(v) => {
                let size = encode(&v).len();
                ensure!(size <= BUDGET, "{tool}({args}) answered {size} bytes");
                Ok(v)
            }
            other => bail!("{tool}({args}) failed: {other:?}"),
        }
    }

    /// The id list_buffers gives the buffer named `name`.
    async fn buffer_id(&self, name: &str) -> Result<String> {
        let v = self
            .ok("list_buffers", json!({"session": self.sid()}))
            .await?;
        v["buffers"]
            .as_array()
            .and_then(|a| {
                a.iter().find(|b| {
                    b["name"]
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
            })
            .and_then(|b| b["id"].as_str().map(str::to_owned))
            .with_context(|| format!("no buffer {name} in {v}"))
    }
}

/// Fails when `v`, encoded, holds any of the session's (scanned) secrets.
fn assert_clean(what: &str, v: &Value) -> Result<()> {
    let text = encode(v);
    for s in SECRETS {
        // The value itself is never printed: only which of the three leaked.
        let which = SECRETS.iter().position(|x| *x == s).unwrap_or(0);
        ensure!(!text.contains(s), "{what} returned secret #{which}");
    }
    ensure!(
        !text.contains(KEY_NICK),
        "{what} returned the key-named user"
    );
    Ok(())
}

fn privmsg_texts(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m.get("message").unwrap_or(m))
                .filter(|m| m["kind"] == json!("privmsg"))
                .filter_map(|m| m["payload"]["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Registers `account` with `password` through a bot that knows the server password (the
/// harness's `Atheme::register_account` connects without one, which this server refuses).
async fn register(port: u16, account: &str, password: &str) -> Result<()> {
    let mut bot = Bot::connect_with(BotConfig::new(port, account).password(SERVER_PW)).await?;
    bot.privmsg(
        "NickServ",
        &format!("REGISTER {password} {account}@rete.example"),
    )
    .await?;
    let reply = bot
        .wait_for(
            |l| Msg::parse(l).source_nick() == Some("NickServ"),
            DEFAULT_TIMEOUT,
        )
        .await?;
    ensure!(
        reply.contains("is now registered"),
        "NickServ refused to register {account}"
    );
    bot.quit().await;
    Ok(())
}

/// Joins `channel` with `key` and waits for the end of NAMES.
async fn join_keyed(bot: &mut Bot, channel: &str, key: &str) -> Result<()> {
    bot.send(&format!("JOIN {channel} {key}")).await?;
    let channel = channel.to_owned();
    bot.wait_for(
        move |l| {
            let m = Msg::parse(l);
            m.command == "366" && m.param(1).eq_ignore_ascii_case(&channel)
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}

/// Says `line` to `target` and waits until the server has handled it (a PING round trip).
async fn say(bot: &mut Bot, target: &str, lines: &[String]) -> Result<()> {
    for l in lines {
        bot.privmsg(target, l).await?;
    }
    bot.send("PING :said").await?;
    bot.wait_for(|l| Msg::parse(l).command == "PONG", DEFAULT_TIMEOUT)
        .await?;
    Ok(())
}

/// A server with a password and services; a keeper bot opped in #keyed (+k KEY) and #short
/// (+k SHORT_KEY); a session with the server password, SASL PLAIN and both keys, joined to
/// both; then the keeper's script said in both channels and in a query, and a user named after
/// the key in #keyed.
async fn setup() -> Result<Fixture> {
    let ircd = Inspircd::start(InspircdConfig::new().password(SERVER_PW).services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    register(ircd.port(), ACCOUNT, SASL_PW)
        .await
        .with_context(|| atheme.log())?;

    let mut keeper =
        Bot::connect_with(BotConfig::new(ircd.port(), "keeper").password(SERVER_PW)).await?;
    keeper.join(KEYED).await?;
    keeper.join(SHORT).await?;
    keeper.send(&format!("MODE {KEYED} +k {KEY}")).await?;
    keeper.send(&format!("MODE {SHORT} +k {SHORT_KEY}")).await?;
    keeper
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "MODE" && m.param(0).eq_ignore_ascii_case(SHORT)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;

    let mut config = session_config(ME);
    config.password = Some(SERVER_PW.to_owned());
    config.sasl = Some(SaslSettings {
        mechanism: Mechanism::Plain,
        credentials: Credentials {
            authcid: ACCOUNT.into(),
            password: SASL_PW.into(),
            authzid: None,
        },
    });
    config.channels = vec![
        ChannelSpec {
            name: KEYED.to_owned(),
            key: Some(KEY.to_owned()),
        },
        ChannelSpec {
            name: SHORT.to_owned(),
            key: Some(SHORT_KEY.to_owned()),
        },
    ];
    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let session = rete.add_session(spec(config, plain(ircd.port()))).await?;
    let reader = session.reader();
    eventually("joined both keyed channels with SASL done", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let me = v.nick().to_owned();
                    let joined = |name: &str| {
                        v.find_buffer(BufferKind::Channel, name)
                            .and_then(|id| v.members(id))
                            .is_some_and(|ms| ms.iter().any(|m| m.nick == me))
                    };
                    let sasl_done = v.state_json()["sasl"]["account"] == json!(ACCOUNT);
                    (v.state() == ConnState::Connected
                        && joined(KEYED)
                        && joined(SHORT)
                        && sasl_done)
                        .then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await
    .with_context(|| atheme.log())?;

    let lines = script();
    say(&mut keeper, KEYED, &lines).await?;
    say(&mut keeper, ME, &lines).await?;
    say(
        &mut keeper,
        SHORT,
        &[format!("the short key is {SHORT_KEY}"), "done".to_owned()],
    )
    .await?;
    let mut keynick =
        Bot::connect_with(BotConfig::new(ircd.port(), KEY_NICK).password(SERVER_PW)).await?;
    join_keyed(&mut keynick, KEYED, KEY).await?;

    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings::default(),
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture: rete_mcp::debug::Capture::off(),
    };
    let fixture = Fixture {
        ctx,
        session,
        _ircd: ircd,
        _atheme: atheme,
        _keeper: keeper,
        _keynick: keynick,
    };
    // Everything has arrived once the engine holds the key-named member and the last "done".
    let reader = fixture.session.reader();
    eventually("every line and member", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let done = |kind: BufferKind, name: &str| {
                        v.find_buffer(kind, name)
                            .and_then(|id| v.buffer(id))
                            .and_then(|b| b.since(0).last())
                            .is_some_and(|r| {
                                matches!(&r.payload, rete_engine::row::Payload::Privmsg { text } if &**text == "done")
                            })
                    };
                    let member = v
                        .find_buffer(BufferKind::Channel, KEYED)
                        .and_then(|id| v.members(id))
                        .is_some_and(|ms| ms.iter().any(|m| m.nick == KEY_NICK));
                    (member
                        && done(BufferKind::Query, "keeper")
                        && done(BufferKind::Channel, SHORT))
                    .then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;
    Ok(fixture)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_tool_returns_a_session_secret() -> Result<()> {
    let f = setup().await?;
    let chan = f.buffer_id(KEYED).await?;
    let query = f.buffer_id("keeper").await?;
    let short = f.buffer_id(SHORT).await?;
    let server = {
        let v = f.ok("list_buffers", json!({"session": f.sid()})).await?;
        assert_clean("list_buffers", &v)?;
        v["buffers"]
            .as_array()
            .and_then(|a| a.iter().find(|b| b["kind"] == json!("server")))
            .and_then(|b| b["id"].as_str().map(str::to_owned))
            .with_context(|| format!("no server buffer in {v}"))?
    };

    // list_members: the keeper and we are listed, the key-named user is withheld.
    let v = f
        .ok("list_members", json!({"buffer": chan, "limit": 200}))
        .await?;
    assert_clean("list_members", &v)?;
    ensure!(withheld(&v) >= 1, "list_members withheld nothing: {v}");
    let nicks: Vec<&str> = v["members"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["nick"].as_str()).collect())
        .unwrap_or_default();
    ensure!(
        nicks.contains(&"keeper") && nicks.contains(&ME),
        "members {nicks:?}"
    );

    for (name, id) in [("channel", &chan), ("query", &query)] {
        // read_messages: the newest page.
        let v = f
            .ok("read_messages", json!({"buffer": id, "limit": 500}))
            .await?;
        assert_clean(&format!("read_messages({name})"), &v)?;
        ensure!(
            withheld(&v) >= SECRET_LINES,
            "read_messages({name}) withheld {}: {v}",
            withheld(&v)
        );
        let texts = privmsg_texts(&v, "messages");
        for o in ORDINARY.iter().chain(&["done"]) {
            ensure!(
                texts.iter().any(|t| t == o),
                "read_messages({name}) lost {o:?}: {texts:?}"
            );
        }

        // read_since from the start.
        let v = f
            .ok("read_since", json!({"buffer": id, "limit": 500}))
            .await?;
        assert_clean(&format!("read_since({name})"), &v)?;
        ensure!(
            withheld(&v) >= SECRET_LINES,
            "read_since({name}) withheld {}: {v}",
            withheld(&v)
        );
        let texts = privmsg_texts(&v, "messages");
        ensure!(
            texts == [ORDINARY[0], ORDINARY[1], ORDINARY[2], "done"],
            "read_since({name}) returned {texts:?}"
        );
    }

    // The server buffer (PASS, AUTHENTICATE, 900 …) leaks none either.
    let v = f
        .ok("read_since", json!({"buffer": server, "limit": 500}))
        .await?;
    assert_clean("read_since(server)", &v)?;
    let v = f
        .ok("read_messages", json!({"buffer": server, "limit": 500}))
        .await?;
    assert_clean("read_messages(server)", &v)?;

    // search_messages: everything (with context rows), walked to the end.
    let mut args = json!({"query": "", "limit": 500, "context": 3});
    let (mut found, mut withheld_sum) = (Vec::new(), 0u64);
    for _ in 0..100 {
        let v = f.ok("search_messages", args.clone()).await?;
        assert_clean("search_messages(\"\")", &v)?;
        withheld_sum += withheld(&v);
        found.extend(privmsg_texts(&v, "matches"));
        match v.get("next_cursor").and_then(Value::as_str) {
            Some(c) => args["cursor"] = json!(c),
            None => break,
        }
    }
    ensure!(
        withheld_sum >= 2 * SECRET_LINES,
        "search_messages withheld {withheld_sum}"
    );
    for o in ORDINARY {
        ensure!(
            found.iter().filter(|t| *t == o).count() >= 2,
            "search lost {o:?}: {found:?}"
        );
    }
    // search_messages for each secret itself: nothing comes back, the hits are withheld.
    for s in SECRETS {
        let v = f
            .ok("search_messages", json!({"query": s, "context": 2}))
            .await?;
        assert_clean("search_messages(secret)", &v)?;
        ensure!(
            v["matches"].as_array().map_or(0, Vec::len) == 0,
            "a search for a secret matched"
        );
        ensure!(withheld(&v) >= 1, "a search for a secret withheld nothing");
    }

    // find_user: the speaker is found; the key-named user's appearance carries no secret.
    let v = f.ok("find_user", json!({"nick": "keeper"})).await?;
    assert_clean("find_user(keeper)", &v)?;
    ensure!(
        v["appearances"].as_array().map_or(0, Vec::len) >= 2,
        "find_user(keeper): {v}"
    );
    // The user whose nick holds the key is withheld from find_user as from
    // list_members: its appearance is left out.
    let v = f.ok("find_user", json!({"mask": "x*!*@*"})).await?;
    assert_clean("find_user(x*)", &v)?;
    ensure!(
        v["appearances"].as_array().is_some_and(Vec::is_empty),
        "find_user(x*) returned the key-named member: {v}"
    );

    // The 3-byte key is not scanned for: its row comes back.
    let v = f
        .ok("read_since", json!({"buffer": short, "limit": 500}))
        .await?;
    let texts = privmsg_texts(&v, "messages");
    ensure!(
        texts
            .iter()
            .any(|t| *t == format!("the short key is {SHORT_KEY}")),
        "the 3-byte key's row was not returned: {v}"
    );
    ensure!(withheld(&v) == 0, "a 3-byte key withheld rows: {v}");
    Ok(())
}
