//! Join replay against a real InspIRCd: lines said in a `+H` channel before we join arrive in
//! a chathistory batch and are stored as history, placed before the live rows.

use anyhow::Result;
use rete_engine::event::ConnState;
use rete_engine::row::{Payload, Row};
use rete_engine::session::ChannelSpec;
use support::bot::say;
use support::live_tests_session::privmsg_text;
use support::live_tests_session::{plain, session_config, spec, Live};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};

const ME: &str = "latecomer";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_replay_is_stored_as_history_before_live_rows() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut alice =
        Bot::connect_with(BotConfig::new(ircd.port(), "alice").caps(&["echo-message"])).await?;
    alice.join("#hist").await?;
    alice.send("MODE #hist +H 10:1d").await?;
    alice
        .wait_for(|l| Msg::parse(l).command == "MODE", DEFAULT_TIMEOUT)
        .await?;
    for text in ["first", "second", "third"] {
        say(&mut alice, "#hist", text).await?;
    }

    let mut config = session_config(ME);
    config.channels = vec![ChannelSpec {
        name: "#hist".into(),
        key: None,
    }];
    let live = Live::start(spec(config, plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#hist").await?;
    live.wait_row("the last replayed line", &id, |r| {
        privmsg_text(r) == Some("third")
    })
    .await?;
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "JOIN" && m.source_nick() == Some(ME)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    say(&mut alice, "#hist", "live one").await?;
    let live_row = live
        .wait_row("the live line", &id, |r| {
            privmsg_text(r) == Some("live one")
        })
        .await?;

    let rows = live.rows(&id).await?;
    let own_join = rows
        .iter()
        .find(|r| &*r.from == ME && matches!(r.payload, Payload::UserJoined { .. }))
        .expect("our own JOIN row");
    assert!(!own_join.history);
    let replayed: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(privmsg_text(r), Some("first" | "second" | "third")))
        .collect();
    assert_eq!(
        replayed.iter().map(|r| privmsg_text(r)).collect::<Vec<_>>(),
        [Some("first"), Some("second"), Some("third")],
        "each replayed line stored once, in order"
    );
    for r in &replayed {
        assert!(r.history, "replayed row not history: {r:?}");
        assert_eq!(&*r.from, "alice");
        assert!(r.msgid.is_some());
        assert!(r.seq > own_join.seq, "replay stored before our join: {r:?}");
    }
    assert!(!live_row.history);
    assert!(live_row.seq > replayed[2].seq);

    // Display order: the replay (older) before our join row, the live line last.
    let display: Vec<u64> = live.display(&id).await?.iter().map(|r| r.seq).collect();
    let pos = |seq: u64| display.iter().position(|s| *s == seq);
    let join_pos = pos(own_join.seq).expect("join row displayed");
    for r in &replayed {
        let p = pos(r.seq).expect("replayed row displayed");
        assert!(p < join_pos, "replayed row after our join: {display:?}");
    }
    assert!(pos(replayed[0].seq) < pos(replayed[1].seq));
    assert!(pos(replayed[1].seq) < pos(replayed[2].seq));
    assert_eq!(pos(live_row.seq), Some(display.len() - 1));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejoin_replay_does_not_duplicate_rows_already_held() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut alice, live) = tokio::try_join!(
        Bot::connect_with(BotConfig::new(port, "alice").caps(&["echo-message"])),
        Live::start(spec(session_config(ME), plain(port)))
    )?;
    alice.join("#hist").await?;
    alice.send("MODE #hist +H 10:1d").await?;
    alice
        .wait_for(|l| Msg::parse(l).command == "MODE", DEFAULT_TIMEOUT)
        .await?;
    live.wait_state(ConnState::Connected).await?;
    let sender = live.handle.sender();
    sender.command(|c| c.join("#hist", None)).await?;
    let id = live.wait_joined("#hist").await?;
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "JOIN" && m.source_nick() == Some(ME)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    for text in ["seen live 1", "seen live 2"] {
        say(&mut alice, "#hist", text).await?;
    }
    live.wait_row("the second live line", &id, |r| {
        privmsg_text(r) == Some("seen live 2")
    })
    .await?;

    // Leave and come back: the server replays both lines, which we already hold.
    sender.command(|c| c.part("#hist", None)).await?;
    live.wait_for("our part", {
        let id = id.clone();
        move |v| (!v.channel(&id)?.joined).then_some(())
    })
    .await?;
    sender.command(|c| c.join("#hist", None)).await?;
    live.wait_joined("#hist").await?;
    // A live marker after the replay: once it is stored, the replay has been handled.
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "JOIN" && m.source_nick() == Some(ME)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    say(&mut alice, "#hist", "marker").await?;
    live.wait_row("the marker", &id, |r| privmsg_text(r) == Some("marker"))
        .await?;

    let rows = live.rows(&id).await?;
    for text in ["seen live 1", "seen live 2"] {
        let copies: Vec<&Row> = rows
            .iter()
            .filter(|r| privmsg_text(r) == Some(text))
            .collect();
        assert_eq!(
            copies.len(),
            1,
            "{text:?} stored {} times: {copies:#?}",
            copies.len()
        );
    }
    Ok(())
}
