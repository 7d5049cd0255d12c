//! Proves the integration-test harness: real InspIRCd (and Atheme) start, link, and behave as
//! the later client tests rely on.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use base64::Engine as _;
use support::tls::TestCert;
use support::{Atheme, Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};

/// The caps the client engine wants and InspIRCd 3.15 offers (see support/lib.rs).
const EXPECTED_CAPS: &[&str] = &[
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

/// Runs the `CAP LS 302` exchange on an unregistered bot and returns the offered caps
/// (`name` or `name=value`), joined over continuation lines.
async fn cap_ls(bot: &mut Bot) -> Result<Vec<String>> {
    bot.send("CAP LS 302").await?;
    let mut caps = Vec::new();
    loop {
        let line = bot
            .wait_for(
                |l| {
                    let m = Msg::parse(l);
                    m.command == "CAP" && m.param(1) == "LS"
                },
                DEFAULT_TIMEOUT,
            )
            .await?;
        let m = Msg::parse(&line);
        let more = m.param(2) == "*";
        let list = if more { m.param(3) } else { m.param(2) };
        caps.extend(list.split_whitespace().map(str::to_owned));
        if !more {
            return Ok(caps);
        }
    }
}

fn cap_names(caps: &[String]) -> Vec<&str> {
    caps.iter()
        .map(|c| c.split('=').next().unwrap_or(c))
        .collect()
}

#[tokio::test]
async fn two_bots_exchange_a_channel_message() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let (mut alice, mut bob) = tokio::try_join!(
        Bot::connect(ircd.port(), "alice"),
        Bot::connect(ircd.port(), "bob")
    )?;
    alice.join("#rete").await?;
    bob.join("#rete").await?;
    alice.privmsg("#rete", "hello from alice").await?;
    let line = bob
        .wait_for(|l| Msg::parse(l).command == "PRIVMSG", DEFAULT_TIMEOUT)
        .await?;
    let m = Msg::parse(&line);
    assert_eq!(m.source_nick(), Some("alice"));
    assert_eq!(m.params, ["#rete", "hello from alice"]);
    Ok(())
}

#[tokio::test]
async fn cap_ls_offers_the_ircv3_caps() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bot = Bot::raw(ircd.port()).await?;
    let caps = cap_ls(&mut bot).await?;
    println!("CAP LS 302: {}", caps.join(" "));
    let names = cap_names(&caps);
    let missing: Vec<_> = EXPECTED_CAPS
        .iter()
        .filter(|c| !names.contains(c))
        .collect();
    assert!(missing.is_empty(), "missing caps {missing:?} in {caps:?}");
    // Without services linked InspIRCd must not offer SASL.
    assert!(!names.contains(&"sasl"), "sasl offered without services");
    Ok(())
}

#[tokio::test]
async fn chanhistory_replays_to_a_late_joiner_in_a_batch() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let alice_cfg = BotConfig::new(ircd.port(), "alice").caps(&["echo-message"]);
    let bob_cfg =
        BotConfig::new(ircd.port(), "bob").caps(&["batch", "server-time", "message-tags"]);
    let (mut alice, mut bob) =
        tokio::try_join!(Bot::connect_with(alice_cfg), Bot::connect_with(bob_cfg))?;
    assert_eq!(bob.acked_caps(), ["batch", "server-time", "message-tags"]);
    alice.join("#hist").await?;
    alice.send("MODE #hist +H 10:1d").await?;
    alice
        .wait_for(|l| Msg::parse(l).command == "MODE", DEFAULT_TIMEOUT)
        .await?;
    for text in ["first", "second"] {
        alice.privmsg("#hist", text).await?;
        // echo-message: the server has stored the line once it echoes it back.
        alice
            .wait_for(|l| l.ends_with(&format!(":{text}")), DEFAULT_TIMEOUT)
            .await?;
    }

    bob.join("#hist").await?;
    let replay = bob
        .collect_until(
            |l| {
                let m = Msg::parse(l);
                m.command == "BATCH" && m.param(0).starts_with('-')
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    let open = replay
        .iter()
        .map(|l| Msg::parse(l))
        .find(|m| m.command == "BATCH")
        .context("no BATCH start")?;
    let reference = open
        .param(0)
        .strip_prefix('+')
        .context("batch start without +")?;
    assert_eq!(open.param(1), "chathistory");
    assert_eq!(open.param(2), "#hist");
    let messages: Vec<_> = replay
        .iter()
        .map(|l| Msg::parse(l))
        .filter(|m| m.command == "PRIVMSG")
        .collect();
    assert_eq!(messages.len(), 2, "replay: {replay:#?}");
    for (m, text) in messages.iter().zip(["first", "second"]) {
        assert_eq!(m.params, ["#hist", text]);
        assert_eq!(m.source_nick(), Some("alice"));
        assert_eq!(m.tag("batch"), Some(reference));
        let time = m.tag("time").context("replayed line without time tag")?;
        ensure!(
            time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "server-time tag not RFC 3339 UTC with milliseconds: {time}"
        );
        ensure!(m.tag("msgid").is_some(), "replayed line without msgid");
    }
    Ok(())
}

#[tokio::test]
async fn restart_comes_back_on_the_same_port() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let mut bot = Bot::connect(port, "survivor").await?;

    ircd.stop();
    assert!(!ircd.is_running());
    bot.wait_closed(DEFAULT_TIMEOUT).await?;
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err(),
        "port {port} still accepts connections while stopped"
    );

    ircd.restart().await?;
    assert_eq!(ircd.port(), port);
    assert!(ircd.is_running());
    Bot::connect(port, "survivor").await?;
    Ok(())
}

#[tokio::test]
async fn atheme_account_authenticates_with_sasl_plain() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    atheme
        .register_account("saslie", "correct-horse")
        .await
        .with_context(|| atheme.log())?;

    let port = ircd.port();
    let authenticate = |password: &'static str| async move {
        let mut bot = Bot::raw(port).await?;
        let caps = cap_ls(&mut bot).await?;
        let sasl = caps
            .iter()
            .find(|c| c.starts_with("sasl"))
            .context("sasl not offered with services linked")?;
        ensure!(sasl.contains("PLAIN"), "no PLAIN mechanism in {sasl}");
        bot.send("CAP REQ :sasl").await?;
        bot.wait_for(|l| l.contains(" ACK :sasl"), DEFAULT_TIMEOUT)
            .await?;
        bot.send("AUTHENTICATE PLAIN").await?;
        bot.wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "AUTHENTICATE" && m.param(0) == "+"
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("saslie\0saslie\0{password}"));
        bot.send(&format!("AUTHENTICATE {token}")).await?;
        let outcome = bot
            .wait_for(
                |l| matches!(Msg::parse(l).command, "903" | "904"),
                DEFAULT_TIMEOUT,
            )
            .await?;
        anyhow::Ok((bot, outcome))
    };
    let ((mut good, good_outcome), (_bad, bad_outcome)) =
        tokio::try_join!(authenticate("correct-horse"), authenticate("wrong"))?;

    assert_eq!(Msg::parse(&good_outcome).command, "903", "{good_outcome}");
    assert_eq!(Msg::parse(&bad_outcome).command, "904", "{bad_outcome}");
    let logged_in = good
        .lines()
        .iter()
        .map(|l| Msg::parse(l))
        .find(|m| m.command == "900")
        .context("no 900 RPL_LOGGEDIN")?;
    assert_eq!(logged_in.param(2), "saslie");

    good.send("CAP END").await?;
    good.send("NICK saslie").await?;
    good.send("USER saslie 0 * :sasl test").await?;
    good.wait_for(|l| Msg::parse(l).command == "001", Duration::from_secs(10))
        .await?;
    Ok(())
}

#[tokio::test]
async fn server_password_is_enforced() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().password("open-sesame")).await?;
    let port = ircd.port();
    let refused = |password: Option<&'static str>, nick: &'static str| async move {
        let mut bot = Bot::raw(port).await?;
        if let Some(password) = password {
            bot.send(&format!("PASS {password}")).await?;
        }
        bot.send(&format!("NICK {nick}")).await?;
        bot.send(&format!("USER {nick} 0 * :no entry")).await?;
        bot.wait_closed(Duration::from_secs(10)).await?;
        anyhow::Ok(bot)
    };
    let (good, wrong, missing) = tokio::try_join!(
        Bot::connect_with(BotConfig::new(port, "insider").password("open-sesame")),
        refused(Some("guess"), "guesser"),
        refused(None, "forgetful"),
    )?;
    assert_eq!(good.nick(), "insider");
    for bot in [wrong, missing] {
        let lines = bot.lines();
        assert!(
            !lines.iter().any(|l| Msg::parse(l).command == "001"),
            "registered without the right password: {lines:#?}"
        );
        // InspIRCd 3 sends no 464: a client whose PASS matches no connect class is closed.
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("ERROR") && l.contains("Access denied by configuration")),
            "no access-denied error: {lines:#?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn tls_listener_serves_a_trusting_client_only() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().tls()).await?;
    let tls_port = ircd.tls_port().context("no TLS port")?;
    let cert = ircd.tls_cert().context("no TLS cert")?;

    let bot = Bot::connect_with(BotConfig::new(tls_port, "secure").tls(cert)).await?;
    assert_eq!(bot.nick(), "secure");

    let stranger = TestCert::generate()?;
    let untrusted =
        Bot::connect_with(BotConfig::new(tls_port, "trusting").tls(&stranger.cert_der)).await;
    assert!(untrusted.is_err(), "TLS accepted an untrusted certificate");
    Ok(())
}

#[test]
fn msg_splits_tags_source_command_and_params() {
    let m = Msg::parse("@time=2024-01-01T00:00:00.000Z;batch=1 :a!b@c PRIVMSG #x :hi there");
    assert_eq!(m.tag("time"), Some("2024-01-01T00:00:00.000Z"));
    assert_eq!(m.tag("batch"), Some("1"));
    assert_eq!(m.tag("msgid"), None);
    assert_eq!(m.source_nick(), Some("a"));
    assert_eq!(m.command, "PRIVMSG");
    assert_eq!(m.params, ["#x", "hi there"]);

    let m = Msg::parse("PING :token");
    assert_eq!((m.source, m.command, m.param(0)), (None, "PING", "token"));
    let m = Msg::parse(":irc.test BATCH :-1");
    assert_eq!(m.params, ["-1"]);
}

#[tokio::test]
async fn atheme_relinks_after_an_ircd_restart() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let mut atheme = Atheme::start(&ircd).await?;
    ircd.restart().await?;
    atheme.wait_linked().await.with_context(|| ircd.log())?;
    let mut bot = Bot::raw(ircd.port()).await?;
    let caps = cap_ls(&mut bot).await?;
    assert!(
        cap_names(&caps).contains(&"sasl"),
        "sasl not offered after relink: {caps:?}"
    );
    Ok(())
}

#[tokio::test]
async fn raw_io_log_records_client_lines() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().raw_io_log()).await?;
    let mut bot = Bot::connect(ircd.port(), "chatty").await?;
    bot.send("PING :marker-4711").await?;
    bot.wait_for(|l| l.contains("marker-4711"), DEFAULT_TIMEOUT)
        .await?;
    let log = ircd.log();
    assert!(log.contains("PING :marker-4711"), "{log}");
    Ok(())
}

#[tokio::test]
async fn a_broken_config_fails_fast_with_the_server_output() -> Result<()> {
    let started = std::time::Instant::now();
    let result =
        Inspircd::start(InspircdConfig::new().extra(r#"<module name="no_such_module">"#)).await;
    let Err(error) = result else {
        anyhow::bail!("InspIRCd started with a missing module");
    };
    let message = format!("{error:#}");
    assert!(message.contains("no_such_module"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5));
    Ok(())
}
