//! Messages against a real InspIRCd: channel and private rows with server-time and msgid,
//! our own messages through echo-message, `/me`, the CTCP VERSION answer, and that text from
//! IRC never makes the session send anything.

use anyhow::{Context, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::event::{ConnState, Event};
use rete_engine::row::{Kind, Payload, Row};
use rete_engine::session::ChannelSpec;
use rete_engine::timefmt::iso_millis;
use support::live_tests_session::privmsg_text;
use support::live_tests_session::{bot_sees_member, plain, session_config, spec, Live};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};

/// The session's nick in these tests.
const ME: &str = "listener";

/// Starts a server, a bot `alice` (with echo-message and server-time, so it sees each of its
/// messages as the server relays it) and our session, both in `#rete`.
async fn setup() -> Result<(Inspircd, Bot, Live, rete_engine::ids::BufferId)> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = vec![ChannelSpec {
        name: "#rete".into(),
        key: None,
    }];
    let alice_cfg =
        BotConfig::new(port, "alice").caps(&["echo-message", "server-time", "message-tags"]);
    let (mut alice, live) = tokio::try_join!(
        Bot::connect_with(alice_cfg),
        Live::start(spec(config, plain(port)))
    )?;
    alice.join("#rete").await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#rete").await?;
    // Both sides are ready once alice knows we are in the channel.
    bot_sees_member(&mut alice, ME, "#rete").await?;
    Ok((ircd, alice, live, id))
}

/// Sends a PRIVMSG from the bot and returns the server's copy of it (echo-message).
async fn say(bot: &mut Bot, target: &str, text: &str) -> Result<String> {
    bot.privmsg(target, text).await?;
    let (target, text) = (target.to_owned(), text.to_owned());
    let nick = bot.nick().to_owned();
    bot.wait_for(
        move |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG"
                && m.source_nick() == Some(nick.as_str())
                && m.params == [target.as_str(), text.as_str()]
        },
        DEFAULT_TIMEOUT,
    )
    .await
}

/// Waits until the bot receives a line from us satisfying `pred`.
async fn bot_receives(bot: &mut Bot, pred: impl Fn(&Msg<'_>) -> bool) -> Result<String> {
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.source_nick() == Some(ME) && pred(&m)
        },
        DEFAULT_TIMEOUT,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_and_private_messages_become_rows() -> Result<()> {
    let (_ircd, mut alice, live, id) = setup().await?;

    let echoed = say(&mut alice, "#rete", "hello channel").await?;
    let sent = Msg::parse(&echoed);
    let row = live
        .wait_row("alice's channel message", &id, |r| {
            privmsg_text(r) == Some("hello channel")
        })
        .await?;
    assert_eq!(row.kind(), Kind::Privmsg);
    assert_eq!(&*row.from, "alice");
    assert!(!row.history);
    let msgid = sent.tag("msgid").context("the server sent no msgid")?;
    assert_eq!(row.msgid.as_deref(), Some(msgid));
    let time = sent.tag("time").context("the server sent no time")?;
    assert_eq!(
        iso_millis(row.time),
        time,
        "row time is not the server time"
    );

    say(&mut alice, ME, "psst, private").await?;
    let query = live
        .wait_for("alice's query buffer", |v| {
            v.find_buffer(BufferKind::Query, "alice").cloned()
        })
        .await?;
    let row = live
        .wait_row("alice's private message", &query, |r| {
            privmsg_text(r) == Some("psst, private")
        })
        .await?;
    assert_eq!(&*row.from, "alice");
    let opened = Event::BufferOpened(query.clone());
    live.wait_events("the query's BufferOpened event", |e| e.contains(&opened))
        .await?;
    let name = live
        .read(move |v| v.buffer(&query).map(|b| b.name().to_owned()))
        .await?;
    assert_eq!(name.as_deref(), Some("alice"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_messages_and_actions_are_sent_and_stored_once() -> Result<()> {
    let (_ircd, mut alice, live, id) = setup().await?;
    let sender = live.handle.sender();

    sender
        .command(|c| c.privmsg("#rete", "hi from rete"))
        .await?;
    let got = bot_receives(&mut alice, |m| m.command == "PRIVMSG").await?;
    assert_eq!(Msg::parse(&got).params, ["#rete", "hi from rete"]);

    sender.command(|c| c.action("#rete", "waves")).await?;
    let got = bot_receives(&mut alice, |m| m.command == "PRIVMSG").await?;
    assert_eq!(Msg::parse(&got).params, ["#rete", "\u{1}ACTION waves\u{1}"]);

    // A message alice sends after receiving ours reaches us after the server's echo of ours,
    // so once it is stored, every copy of ours that will ever come is stored too.
    say(&mut alice, "#rete", "marker").await?;
    live.wait_row("alice's marker", &id, |r| privmsg_text(r) == Some("marker"))
        .await?;
    let rows = live.rows(&id).await?;
    let ours: Vec<&Row> = rows.iter().filter(|r| &*r.from == ME).collect();
    let mine_said: Vec<&Row> = ours
        .iter()
        .copied()
        .filter(|r| privmsg_text(r) == Some("hi from rete"))
        .collect();
    assert_eq!(
        mine_said.len(),
        1,
        "our message stored {} times",
        mine_said.len()
    );
    assert!(
        mine_said[0].msgid.is_some(),
        "the echo-message copy carries a msgid"
    );
    let actions: Vec<&Row> = ours
        .iter()
        .copied()
        .filter(|r| matches!(&r.payload, Payload::Action { text } if &**text == "waves"))
        .collect();
    assert_eq!(
        actions.len(),
        1,
        "our action stored {} times",
        actions.len()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctcp_version_is_answered_with_a_notice() -> Result<()> {
    let (_ircd, mut alice, live, _id) = setup().await?;
    alice.privmsg(ME, "\u{1}VERSION\u{1}").await?;
    let reply = bot_receives(&mut alice, |m| m.command == "NOTICE").await?;
    let m = Msg::parse(&reply);
    assert_eq!(m.param(0), "alice");
    let body = m.param(1);
    assert!(
        body.starts_with("\u{1}VERSION Rete ") && body.ends_with('\u{1}'),
        "{body:?}"
    );
    // The request itself is stored as a CTCP row, in the server buffer: it is the protocol's,
    // not a conversation, so it opens no query.
    let server = live.read(|v| v.server_buffer().clone()).await?;
    live.wait_row("the CTCP row", &server, |r| {
        matches!(&r.payload, Payload::Ctcp { command, reply: false, .. } if &**command == "VERSION")
    })
    .await?;
    let query = live
        .read(|v| v.find_buffer(BufferKind::Query, "alice").cloned())
        .await?;
    assert_eq!(query, None, "a CTCP request opened a query");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_from_irc_never_makes_the_session_send() -> Result<()> {
    let (ircd, mut alice, live, id) = setup().await?;
    // A second bot sits in #evil: a JOIN of ours there would show up to it.
    let mut guard = Bot::connect(ircd.port(), "guard").await?;
    guard.join("#evil").await?;

    let payloads = [
        "PRIVMSG x :QUIT",
        "JOIN #evil",
        "QUIT :bye",
        "/join #evil",
        "\u{1}JOIN #evil\u{1}",
    ];
    for p in payloads {
        say(&mut alice, "#rete", p).await?;
        say(&mut alice, ME, p).await?;
    }
    // Every payload has been through the engine once the last private one is stored.
    let query = live
        .wait_for("alice's query buffer", |v| {
            v.find_buffer(BufferKind::Query, "alice").cloned()
        })
        .await?;
    live.wait_for("every payload stored twice", {
        let (id, query) = (id.clone(), query.clone());
        move |v| {
            let chan = v
                .buffer(&id)?
                .since(0)
                .filter(|r| &*r.from == "alice")
                .count();
            // The CTCP one is kept in the server buffer, the others in the query.
            let private = v.buffer(&query)?.since(0).count();
            let ctcp = v
                .buffer(v.server_buffer())?
                .since(0)
                .filter(|r| &*r.from == "alice")
                .count();
            (chan >= payloads.len() && private + ctcp >= payloads.len()).then_some(())
        }
    })
    .await?;

    // A barrier of our own: anything the payloads made us send would reach alice before it.
    live.handle
        .sender()
        .command(|c| c.privmsg("alice", "barrier"))
        .await?;
    bot_receives(&mut alice, |m| {
        m.command == "PRIVMSG" && m.param(1) == "barrier"
    })
    .await?;
    let from_us: Vec<&String> = alice
        .lines()
        .iter()
        .filter(|l| Msg::parse(l).source_nick() == Some(ME))
        .collect();
    let unexpected: Vec<&&String> = from_us
        .iter()
        .filter(|l| {
            let m = Msg::parse(l);
            // Our own JOIN of #rete (seen in setup) and the barrier are all we sent.
            !(m.command == "JOIN" && m.param(0) == "#rete"
                || m.command == "PRIVMSG" && m.param(1) == "barrier")
        })
        .collect();
    assert!(unexpected.is_empty(), "the session sent {unexpected:#?}");

    // guard in #evil never saw us; we are still connected and only in #rete.
    guard.privmsg("#evil", "still alone?").await?;
    guard.send("NAMES #evil").await?;
    let names = guard
        .wait_for(|l| Msg::parse(l).command == "353", DEFAULT_TIMEOUT)
        .await?;
    assert!(!names.contains(ME), "we joined #evil: {names}");
    assert!(
        !guard
            .lines()
            .iter()
            .any(|l| Msg::parse(l).source_nick() == Some(ME)),
        "guard heard from us"
    );
    let (state, evil) = live
        .read(|v| {
            (
                v.state(),
                v.find_buffer(BufferKind::Channel, "#evil").is_some(),
            )
        })
        .await?;
    assert_eq!(state, ConnState::Connected);
    assert!(!evil, "a #evil buffer was opened");
    live.wait_joined("#rete").await?;
    Ok(())
}
