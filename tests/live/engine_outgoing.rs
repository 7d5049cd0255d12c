//! The outgoing path against a real InspIRCd: a raw-out hook that vetoes lines, and the flood
//! throttle keeping a burst of messages complete and in order.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use rete_actors::{Direction, RawObserver, RawOutHook, ReteOptions, Verdict};
use rete_engine::event::ConnState;
use rete_engine::flood::FloodConfig;
use rete_engine::ids::SessionId;
use rete_engine::row::Payload;
use support::live_tests_session::{bot_sees_member, is_status, plain, session_config, spec, Live};
use support::updates_tests_tools::channels;
use support::{Bot, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};

const ME: &str = "speaker";

/// Vetoes every line to `#blocked` and remembers every line it saw.
#[derive(Default)]
struct BlockChannel {
    seen: Mutex<Vec<String>>,
}

impl RawOutHook for BlockChannel {
    fn on_raw_out(&self, _session: &SessionId, line: &str) -> Verdict {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line.to_owned());
        if line.starts_with("PRIVMSG #blocked") {
            Verdict::Veto
        } else {
            Verdict::Allow
        }
    }
}

/// Waits until `bot` knows we are in `channel` (our JOIN, or NAMES when we were first).
async fn sees_us_join(bot: &mut Bot, channel: &str) -> Result<()> {
    bot_sees_member(bot, ME, channel).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_out_hook_vetoes_lines() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let hook = Arc::new(BlockChannel::default());
    let mut config = session_config(ME);
    config.channels = channels(&["#blocked", "#open"]);
    let options = ReteOptions {
        raw_out_hook: Some(hook.clone()),
    };
    let mut bot = Bot::connect(port, "listener").await?;
    bot.join("#blocked").await?;
    bot.join("#open").await?;
    let live = Live::start_with(options, spec(config, plain(port))).await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_joined("#blocked").await?;
    let open = live.wait_joined("#open").await?;
    sees_us_join(&mut bot, "#blocked").await?;
    sees_us_join(&mut bot, "#open").await?;

    let sender = live.handle.sender();
    sender
        .command(|c| c.privmsg("#blocked", "should never leave"))
        .await?;
    sender
        .command(|c| c.privmsg("#open", "fine to send"))
        .await?;

    // Lines on one connection arrive in order: once the second is in, the first had its chance.
    let got = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PRIVMSG" && m.source_nick() == Some(ME)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    assert_eq!(Msg::parse(&got).params, ["#open", "fine to send"]);
    assert!(
        !bot.lines().iter().any(|l| l.contains("should never leave")),
        "a vetoed line reached the server"
    );
    live.wait_server_row("the veto note", |r| {
        is_status(r, "vetoed by a raw-out hook")
    })
    .await?;
    live.wait_row(
        "our message in #open",
        &open,
        |r| matches!(&r.payload, Payload::Privmsg { text } if &**text == "fine to send"),
    )
    .await?;

    let seen = hook.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(
        seen.iter()
            .any(|l| l == "PRIVMSG #blocked :should never leave"),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|l| l.starts_with("NICK ")), "{seen:#?}");
    // Nothing was sent to #blocked, so the server echoed nothing back into its buffer.
    let blocked = live.channel_id("#blocked").await?;
    let rows = live.rows(&blocked).await?;
    assert!(
        !rows
            .iter()
            .any(|r| &*r.from == ME && matches!(r.payload, Payload::Privmsg { .. })),
        "{rows:#?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_messages_arrives_complete_and_in_order() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#flood"]);
    // A short refill keeps the test quick; the burst of 5 still forces queueing.
    config.flood = FloodConfig {
        burst: 5,
        interval_ms: 100,
    };
    let (mut bot, live) = tokio::try_join!(
        Bot::connect(port, "counter"),
        Live::start(spec(config, plain(port)))
    )?;
    bot.join("#flood").await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#flood").await?;
    sees_us_join(&mut bot, "#flood").await?;

    let sender = live.handle.sender();
    for i in 1..=12 {
        sender
            .command(move |c| c.privmsg("#flood", &format!("line {i}")))
            .await?;
    }
    let got = bot
        .collect_until(
            |l| {
                let m = Msg::parse(l);
                m.source_nick() == Some(ME) && m.param(1) == "line 12"
            },
            Duration::from_secs(10),
        )
        .await?;
    let texts: Vec<String> = got
        .iter()
        .map(|l| Msg::parse(l))
        .filter(|m| m.command == "PRIVMSG" && m.source_nick() == Some(ME))
        .map(|m| m.param(1).to_owned())
        .collect();
    let expected: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
    assert_eq!(texts, expected);

    // Our buffer holds the echoes once each, in the same order.
    live.wait_row(
        "the echo of line 12",
        &id,
        |r| matches!(&r.payload, Payload::Privmsg { text } if &**text == "line 12"),
    )
    .await?;
    let stored: Vec<String> = live
        .rows(&id)
        .await?
        .into_iter()
        .filter(|r| &*r.from == ME)
        .filter_map(|r| match r.payload {
            Payload::Privmsg { text } => Some(text.into()),
            _ => None,
        })
        .collect();
    assert_eq!(stored, expected);
    Ok(())
}

/// Records what the raw tap hands over, and wakes whoever waits for a line.
#[derive(Default)]
struct RawSeen {
    lines: Mutex<Vec<(Direction, String)>>,
    arrived: tokio::sync::Notify,
}

impl RawObserver for RawSeen {
    fn on_raw(&self, _: &SessionId, direction: Direction, line: &str) {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((direction, line.to_owned()));
        self.arrived.notify_waiters();
    }
}

impl RawSeen {
    fn lines(&self) -> Vec<(Direction, String)> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits until a line `wanted` accepts has been handed over.
    async fn wait_for(&self, wanted: impl Fn(Direction, &str) -> bool) -> Result<()> {
        tokio::time::timeout(DEFAULT_TIMEOUT, async {
            loop {
                let arrived = self.arrived.notified();
                if self.lines().iter().any(|(d, l)| wanted(*d, l)) {
                    return;
                }
                arrived.await;
            }
        })
        .await
        .map_err(|_| anyhow::anyhow!("the tap never handed over the line: {:#?}", self.lines()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_tap_sees_lines_in_and_out_masked_and_nothing_once_cleared() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut config = session_config(ME);
    config.channels = channels(&["#tap"]);
    let mut bot = Bot::connect(port, "tapbot").await?;
    bot.join("#tap").await?;
    let seen = Arc::new(RawSeen::default());
    let rete = rete_actors::Rete::start(ReteOptions::default()).await?;
    rete.set_raw_observer(Some(seen.clone()));
    let handle = rete.add_session(spec(config, plain(port))).await?;
    sees_us_join(&mut bot, "#tap").await?;

    let sender = handle.sender();
    sender
        .command(|c| c.privmsg("NickServ", "IDENTIFY hunter2-tap"))
        .await?;
    sender.command(|c| c.privmsg("#tap", "tapped")).await?;
    bot.wait_for(|l| l.contains("PRIVMSG #tap :tapped"), DEFAULT_TIMEOUT)
        .await?;
    let lines = seen.lines();
    let has = |d: Direction, f: &dyn Fn(&str) -> bool| lines.iter().any(|(x, l)| *x == d && f(l));
    assert!(
        has(Direction::Out, &|l| l.starts_with("NICK ")),
        "{lines:#?}"
    );
    assert!(has(Direction::In, &|l| l.contains(" 001 ")), "{lines:#?}");
    assert!(
        has(Direction::Out, &|l| l == "PRIVMSG #tap tapped"),
        "{lines:#?}"
    );
    assert!(
        has(Direction::Out, &|l| l
            .starts_with("PRIVMSG NickServ :IDENTIFY ")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|(_, l)| l.contains("hunter2-tap")),
        "a secret reached the tap unmasked: {lines:#?}"
    );

    // Cleared: the next lines are not handed over. A line the session is
    // handing over while the slot is cleared may still arrive (raw_tap's
    // module doc), so first wait for the echo of `tapped`, the last line in
    // flight.
    seen.wait_for(|d, l| d == Direction::In && l.contains("PRIVMSG #tap :tapped"))
        .await?;
    rete.set_raw_observer(None);
    let before = seen.lines().len();
    sender.command(|c| c.privmsg("#tap", "untapped")).await?;
    bot.wait_for(|l| l.contains("PRIVMSG #tap :untapped"), DEFAULT_TIMEOUT)
        .await?;
    assert_eq!(seen.lines().len(), before, "{:#?}", seen.lines());
    Ok(())
}
