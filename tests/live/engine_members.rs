//! Channels and their members against a real InspIRCd (and Atheme for accounts): joins on
//! connect, NAMES with prefixes and hostmasks, the engine's own WHOX, away-notify,
//! account-notify, MODE, NICK, PART, KICK, QUIT and the topic.

use std::time::Duration;

use anyhow::Result;
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use rete_engine::session::ChannelSpec;
use rete_engine::view::MemberView;
use support::live_tests_session::{plain, session_config, spec, Live};
use support::{Atheme, Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};

fn channel(name: &str) -> ChannelSpec {
    ChannelSpec {
        name: name.to_owned(),
        key: None,
    }
}

fn nicks(members: &[MemberView]) -> Vec<&str> {
    members.iter().map(|m| m.nick.as_str()).collect()
}

/// Sends `line` and waits until the server relays it back to the bot (a command the bot sees
/// itself do: MODE, TOPIC, NICK, KICK...), so the next step happens after it.
async fn act(bot: &mut Bot, line: &str, echo_command: &str) -> Result<()> {
    bot.send(line).await?;
    let command = echo_command.to_owned();
    bot.wait_for(move |l| Msg::parse(l).command == command, DEFAULT_TIMEOUT)
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_follow_names_whox_modes_and_membership_changes() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut alice, mut bob, mut carol) = tokio::try_join!(
        Bot::connect(port, "alice"),
        Bot::connect(port, "bob"),
        Bot::connect(port, "carol"),
    )?;
    // alice creates the channel (and so gets +o); the topic is set before we come.
    alice.join("#rete").await?;
    bob.join("#rete").await?;
    carol.join("#rete").await?;
    act(&mut alice, "TOPIC #rete :before you came", "TOPIC").await?;
    // bob is away before we join: only WHO can tell us.
    bob.send("AWAY :gone fishing").await?;
    bob.wait_for(|l| Msg::parse(l).command == "306", DEFAULT_TIMEOUT)
        .await?;

    let mut config = session_config("watcher");
    config.channels = vec![channel("#rete")];
    let live = Live::start(spec(config, plain(port))).await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#rete").await?;

    // The topic from 332 on join.
    let (topic, setter) = live
        .wait_for("the topic from 332", {
            let id = id.clone();
            move |v| {
                let c = v.channel(&id)?;
                Some((c.topic.clone()?, c.topic_set_by.clone()))
            }
        })
        .await?;
    assert_eq!(topic, "before you came");
    assert_eq!(setter.as_deref(), Some("alice"));

    // bob's away flag can only come from the engine's own WHO(X).
    live.wait_member("bob away from WHOX", &id, |m| m.nick == "bob" && m.away)
        .await?;
    let members = live.members(&id).await?;
    assert_eq!(nicks(&members), ["alice", "bob", "carol", "watcher"]);
    let alice_m = &members[0];
    assert_eq!(alice_m.modes, "o");
    assert_eq!(alice_m.user.as_deref(), Some("alice"));
    assert_eq!(alice_m.host.as_deref(), Some("127.0.0.1"));
    assert!(!alice_m.away);
    assert_eq!(alice_m.account, None, "no services, no accounts");
    assert_eq!(members[1].modes, "");
    assert_eq!(members[3].modes, "");
    assert_eq!(members[3].user.as_deref(), Some("watcher"));

    // +v from the op.
    act(&mut alice, "MODE #rete +v bob", "MODE").await?;
    live.wait_member("bob voiced", &id, |m| m.nick == "bob" && m.modes == "v")
        .await?;
    live.wait_row("the MODE row", &id, |r| {
        r.from.as_str() == "alice"
            && matches!(&r.payload, Payload::ModeChanged { modes } if &**modes == "+v bob")
    })
    .await?;

    // away-notify, both ways.
    alice.send("AWAY :brb").await?;
    bob.send("AWAY").await?;
    live.wait_members("alice away and bob back via away-notify", &id, |ms| {
        ms.iter().any(|m| m.nick == "alice" && m.away)
            && ms.iter().any(|m| m.nick == "bob" && !m.away)
    })
    .await?;

    // A live topic change.
    act(&mut alice, "TOPIC #rete :now with you", "TOPIC").await?;
    live.wait_for("the new topic", {
        let id = id.clone();
        move |v| (v.channel(&id)?.topic.as_deref() == Some("now with you")).then_some(())
    })
    .await?;
    live.wait_row("the topic row", &id, |r| {
        r.from.as_str() == "alice"
            && matches!(&r.payload, Payload::TopicChanged { topic } if &**topic == "now with you")
    })
    .await?;

    // NICK keeps the member's modes under the new nick.
    act(&mut bob, "NICK bobby", "NICK").await?;
    let bobby = live
        .wait_members("bob renamed to bobby", &id, |ms| {
            ms.iter().any(|m| m.nick == "bobby") && !ms.iter().any(|m| m.nick == "bob")
        })
        .await?;
    assert_eq!(
        bobby
            .iter()
            .find(|m| m.nick == "bobby")
            .map(|m| m.modes.as_str()),
        Some("v")
    );
    live.wait_row("the NICK row", &id, |r| {
        r.from.as_str() == "bob"
            && matches!(&r.payload, Payload::NickChanged { new_nick } if &**new_nick == "bobby")
    })
    .await?;

    // KICK, PART and QUIT each remove a member.
    act(&mut alice, "KICK #rete bobby :out you go", "KICK").await?;
    live.wait_members("bobby kicked", &id, |ms| {
        !ms.iter().any(|m| m.nick == "bobby")
    })
    .await?;
    live.wait_row("the KICK row", &id, |r| {
        matches!(&r.payload, Payload::UserKicked { victim, reason }
            if &**victim == "bobby" && reason.as_deref() == Some("out you go"))
    })
    .await?;

    act(&mut carol, "PART #rete :later", "PART").await?;
    live.wait_members("carol parted", &id, |ms| {
        !ms.iter().any(|m| m.nick == "carol")
    })
    .await?;
    live.wait_row("the PART row", &id, |r| {
        r.from.as_str() == "carol"
            && matches!(&r.payload, Payload::UserParted { reason } if reason.as_deref() == Some("later"))
    })
    .await?;

    alice.quit().await;
    let left = live
        .wait_members("alice quit", &id, |ms| {
            !ms.iter().any(|m| m.nick == "alice")
        })
        .await?;
    assert_eq!(nicks(&left), ["watcher"]);
    live.wait_row("the QUIT row", &id, |r| {
        r.from.as_str() == "alice" && matches!(r.payload, Payload::UserQuit { .. })
    })
    .await?;
    Ok(())
}

/// Identifies `bot` to NickServ and waits until services confirm it.
async fn identify(bot: &mut Bot, password: &str) -> Result<()> {
    bot.privmsg("NickServ", &format!("IDENTIFY {password}"))
        .await?;
    bot.wait_for(|l| Msg::parse(l).command == "900", Duration::from_secs(10))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_come_from_whox_and_account_notify() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    tokio::try_join!(
        atheme.register_account("early", "early-pass-1"),
        atheme.register_account("late", "late-pass-2"),
    )?;
    let port = ircd.port();
    let (mut early, mut late) =
        tokio::try_join!(Bot::connect(port, "early"), Bot::connect(port, "late"))?;
    // `early` is logged in and in the channel before we join: its account can only come
    // from WHOX (NAMES has no accounts and we see no JOIN of it).
    identify(&mut early, "early-pass-1").await?;
    early.join("#acct").await?;
    late.join("#acct").await?;

    let mut config = session_config("auditor");
    config.channels = vec![channel("#acct")];
    let live = Live::start(spec(config, plain(port))).await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#acct").await?;
    live.wait_member("early's account from WHOX", &id, |m| {
        m.nick == "early" && m.account.as_deref() == Some("early")
    })
    .await?;
    let members = live.members(&id).await?;
    let late_m = members.iter().find(|m| m.nick == "late");
    assert_eq!(late_m.map(|m| m.account.clone()), Some(None));

    // `late` logs in while we watch: account-notify tells us.
    identify(&mut late, "late-pass-2").await?;
    live.wait_member("late's account from account-notify", &id, |m| {
        m.nick == "late" && m.account.as_deref() == Some("late")
    })
    .await?;
    Ok(())
}
