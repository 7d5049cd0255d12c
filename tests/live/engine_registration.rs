//! Registration against a real InspIRCd through the embedding facade: connection states,
//! capability negotiation, ISUPPORT, nick fallback and the server password.

use std::collections::BTreeSet;

use anyhow::Result;
use rete_engine::casemap::CaseMapping;
use rete_engine::event::{ConnState, Event};
use rete_engine::row::Payload;
use support::inspircd::NETWORK_NAME;
use support::live_tests_session::{is_status, plain, session_config, spec, Live};
use support::{Bot, Inspircd, InspircdConfig};

/// What InspIRCd 3.15 offers (without services) that the engine wants: all of it must be
/// enabled, and nothing else.
const OFFERED_AND_WANTED: &[&str] = &[
    "account-notify",
    "account-tag",
    "away-notify",
    "batch",
    "cap-notify",
    "chghost",
    "echo-message",
    "extended-join",
    "invite-notify",
    "labeled-response",
    "message-tags",
    "multi-prefix",
    "server-time",
    "setname",
    "userhost-in-names",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_with_the_offered_caps_and_reads_isupport() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let live = Live::start(spec(session_config("reggie"), plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_events("the Registered event", |e| e.contains(&Event::Registered))
        .await?;

    let states = live.states();
    assert_eq!(
        states.first(),
        Some(&ConnState::Connecting),
        "states: {states:?}"
    );
    let connecting = states.iter().position(|s| *s == ConnState::Connecting);
    let connected = states.iter().position(|s| *s == ConnState::Connected);
    assert!(connecting < connected, "states: {states:?}");

    let (enabled, available, pending, network, raw_casemapping, casemapping, nick) = live
        .read(|v| {
            let caps = v.capabilities();
            (
                caps.enabled.clone(),
                caps.available.keys().cloned().collect::<BTreeSet<_>>(),
                caps.pending.clone(),
                v.network().to_owned(),
                v.isupport().raw.get("CASEMAPPING").cloned(),
                v.isupport().casemapping,
                v.nick().to_owned(),
            )
        })
        .await?;
    let expected: BTreeSet<String> = OFFERED_AND_WANTED.iter().map(|c| (*c).into()).collect();
    assert_eq!(enabled, expected);
    assert!(
        enabled.is_subset(&available),
        "enabled {enabled:?} not all offered {available:?}"
    );
    assert!(!available.contains("sasl"), "sasl offered without services");
    assert!(pending.is_empty(), "unanswered CAP REQ: {pending:?}");
    assert_eq!(network, NETWORK_NAME);
    assert_eq!(raw_casemapping.as_deref(), Some("rfc1459"));
    assert_eq!(casemapping, CaseMapping::Rfc1459);
    assert_eq!(nick, "reggie");

    // The welcome is kept in the server buffer.
    live.wait_server_row(
        "the 001 welcome",
        |r| matches!(&r.payload, Payload::ServerReply { command, .. } if &**command == "001"),
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ascii_casemapping_is_read_from_isupport() -> Result<()> {
    let ircd =
        Inspircd::start(InspircdConfig::new().extra(r#"<options casemapping="ascii">"#)).await?;
    let live = Live::start(spec(session_config("folder"), plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;
    let (raw, mapping) = live
        .read(|v| {
            (
                v.isupport().raw.get("CASEMAPPING").cloned(),
                v.isupport().casemapping,
            )
        })
        .await?;
    assert_eq!(raw.as_deref(), Some("ascii"));
    // Not the engine's default (rfc1459): the server's token was applied.
    assert_eq!(mapping, CaseMapping::Ascii);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nick_in_use_falls_back_to_an_underscore() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let _holder = Bot::connect(ircd.port(), "taken").await?;
    let live = Live::start(spec(session_config("taken"), plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;

    assert_eq!(live.read(|v| v.nick().to_owned()).await?, "taken_");
    live.wait_server_row("the nick fallback status", |r| {
        is_status(r, "Nick taken is not available; trying taken_")
    })
    .await?;
    Ok(())
}

/// An observer that follows our nick through events must learn the fallback nick: the
/// configured one was never ours on this connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_nick_is_announced_as_own_nick() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let _holder = Bot::connect(ircd.port(), "occupied").await?;
    let live = Live::start(spec(session_config("occupied"), plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;
    // OwnNick, if sent, comes before Registered.
    live.wait_events("the Registered event", |e| e.contains(&Event::Registered))
        .await?;
    let own_nicks: Vec<Event> = live
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::OwnNick(_)))
        .collect();
    assert_eq!(own_nicks, [Event::OwnNick("occupied_".into())]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_right_server_password_registers() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().password("open-sesame")).await?;
    let mut config = session_config("insider");
    config.password = Some("open-sesame".into());
    let live = Live::start(spec(config, plain(ircd.port()))).await?;
    live.wait_state(ConnState::Connected).await?;
    assert_eq!(live.read(|v| v.nick().to_owned()).await?, "insider");
    Ok(())
}

/// A wrong password fails the same way every time, and retrying every few seconds gets an
/// address banned: the session stays disconnected and says how to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_server_password_is_refused_and_not_retried() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().password("open-sesame")).await?;
    let mut config = session_config("guesser");
    config.password = Some("wrong-pass-7431".into());
    let live = Live::start(spec(config, plain(ircd.port()))).await?;

    let error = live
        .wait_server_row("the server's ERROR", |r| {
            matches!(r.payload, Payload::ServerError { .. })
        })
        .await?;
    let Payload::ServerError { text } = &error.payload else {
        unreachable!()
    };
    assert!(text.contains("Access denied by configuration"), "{text}");

    live.wait_server_row("the not-reconnecting status", |r| {
        is_status(r, "Not reconnecting") && is_status(r, "/connect test")
    })
    .await?;
    live.wait_events("the disconnected state", |e| {
        e.last() == Some(&Event::State(ConnState::Disconnected))
    })
    .await?;
    // A retry always passes through Reconnecting first (the session actor sets it when it
    // schedules one), so its absence shows none was scheduled.
    assert!(
        !live.states().contains(&ConnState::Reconnecting),
        "retried after a refused password: {:?}",
        live.states()
    );
    assert!(!live.events().contains(&Event::Registered));
    assert!(live.read(|v| v.registration_refused().is_some()).await?);
    // Secrets stay out of the buffers.
    let rows = live.server_rows().await?;
    assert!(
        rows.iter()
            .all(|r| !support::live_tests_session::text(r).contains("wrong-pass-7431")),
        "password shown in the server buffer"
    );
    Ok(())
}
