//! Recovery against a real InspIRCd: reconnecting after the server goes away, and the
//! supervisor restarting a crashed session actor with its buffers intact.

use std::time::Duration;

use anyhow::Result;
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use rete_engine::session::ChannelSpec;
use rete_transports::Backoff;
use support::live_tests_session::privmsg_text;
use support::live_tests_session::{
    bot_sees_member, is_status, plain, session_config, spec, states_in, Live,
};
use support::{Bot, Inspircd, InspircdConfig};

const ME: &str = "phoenix";

async fn session_in(port: u16, channel: &str) -> Result<Live> {
    let mut config = session_config(ME);
    config.channels = vec![ChannelSpec {
        name: channel.into(),
        key: None,
    }];
    Live::start(spec(config, plain(port))).await
}

/// Waits until `bot` knows we are in `channel` (our JOIN, or NAMES when we were first).
async fn sees_us_join(bot: &mut Bot, channel: &str) -> Result<()> {
    bot_sees_member(bot, ME, channel).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_server_is_reconnected_and_channels_rejoined() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut alice, live) =
        tokio::try_join!(Bot::connect(port, "alice"), session_in(port, "#rete"))?;
    alice.join("#rete").await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#rete").await?;
    sees_us_join(&mut alice, "#rete").await?;
    alice.privmsg("#rete", "before the outage").await?;
    let before = live
        .wait_row("the message before the outage", &id, |r| {
            privmsg_text(r) == Some("before the outage")
        })
        .await?;

    ircd.stop();
    live.wait_state(ConnState::Reconnecting).await?;
    live.wait_server_row("the disconnect status", |r| is_status(r, "Disconnected"))
        .await?;
    let members = live.members(&id).await?;
    assert!(
        members.is_empty(),
        "members kept while disconnected: {members:?}"
    );

    ircd.restart().await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_joined("#rete").await?;
    let rows = live.rows(&id).await?;
    assert_eq!(rows.iter().find(|r| r.seq == before.seq), Some(&before));
    let joins = rows
        .iter()
        .filter(|r| &*r.from == ME && matches!(r.payload, Payload::UserJoined { .. }))
        .count();
    assert_eq!(joins, 2, "one JOIN row per connection");
    live.wait_events("connected again after reconnecting", |e| {
        let states = states_in(e);
        let last_reconnecting = states.iter().rposition(|s| *s == ConnState::Reconnecting);
        let last_connected = states.iter().rposition(|s| *s == ConnState::Connected);
        last_reconnecting.is_some() && last_reconnecting < last_connected
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_session_is_restarted_with_its_rows() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let (mut alice, live) =
        tokio::try_join!(Bot::connect(port, "alice"), session_in(port, "#rete"))?;
    alice.join("#rete").await?;
    live.wait_state(ConnState::Connected).await?;
    let id = live.wait_joined("#rete").await?;
    sees_us_join(&mut alice, "#rete").await?;
    for text in ["one", "two", "three"] {
        alice.privmsg("#rete", text).await?;
    }
    live.wait_row("the last message before the crash", &id, |r| {
        privmsg_text(r) == Some("three")
    })
    .await?;
    let before = live.rows(&id).await?;
    assert_eq!(live.handle.restarts(), 0);

    live.handle.crash_for_test();
    support::live_tests_session::eventually(
        "the supervisor to restart the session",
        support::live_tests_session::WAIT,
        || async { (live.handle.restarts() == 1).then_some(()) },
    )
    .await?;
    live.wait_state(ConnState::Connected).await?;
    let id_after = live.wait_joined("#rete").await?;
    assert_eq!(id_after, id, "the channel buffer changed its id");
    sees_us_join(&mut alice, "#rete").await?;

    alice.privmsg("#rete", "after the crash").await?;
    let after = live
        .wait_row("a message after the crash", &id, |r| {
            privmsg_text(r) == Some("after the crash")
        })
        .await?;
    let rows = live.rows(&id).await?;
    assert_eq!(
        &rows[..before.len()],
        &before[..],
        "rows held before the crash changed"
    );
    let newest_before = before.last().map_or(0, |r| r.seq);
    assert!(after.seq > newest_before);
    assert!(rows[before.len()..].iter().all(|r| r.seq > newest_before));
    assert_eq!(live.handle.restarts(), 1);
    live.wait_server_row("the restart status", |r| {
        is_status(r, "the session restarted")
    })
    .await?;
    Ok(())
}

/// A server that drops the session soon after each registration is not retried at the
/// first delay every time: the delays keep growing until a connection stays up
/// `HEALTHY_AFTER` (reconnecting at once, forever, is how an address gets banned).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dropping_us_soon_after_registration_is_retried_ever_later() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let base = Duration::from_secs(2);
    let mut spec = spec(session_config(ME), plain(ircd.port()));
    spec.reconnect = Backoff::new(base, Duration::from_secs(60));
    let live = Live::start(spec).await?;
    let mut delays = Vec::new();
    for _ in 0..3 {
        live.wait_state(ConnState::Connected).await?;
        ircd.stop();
        let delay = live.wait_retry_in().await?;
        delays.push(delay);
        ircd.restart().await?;
    }
    // Delay n lies in [base * 2^n / 2, base * 2^n]: the third is at least 2 * base, where
    // starting over at each registration keeps every delay at most base.
    assert!(delays[2] >= 2 * base, "delays: {delays:?}");
    Ok(())
}
