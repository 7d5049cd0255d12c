//! SASL PLAIN against a real InspIRCd linked to Atheme: the right password logs in, a wrong
//! one fails with the server's reason and the session still registers.

use anyhow::{Context, Result};
use rete_engine::event::ConnState;
use rete_engine::row::Payload;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::SaslSettings;
use support::live_tests_session::{is_status, plain, session_config, spec, text, Live};
use support::{Atheme, Inspircd, InspircdConfig};

const ACCOUNT: &str = "saslie";
const PASSWORD: &str = "correct-horse-1";

/// A server with services and the account registered.
async fn services() -> Result<(Inspircd, Atheme)> {
    let ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    atheme
        .register_account(ACCOUNT, PASSWORD)
        .await
        .with_context(|| atheme.log())?;
    Ok((ircd, atheme))
}

async fn session_with_password(port: u16, password: &str) -> Result<Live> {
    let mut config = session_config(ACCOUNT);
    config.sasl = Some(SaslSettings {
        mechanism: Mechanism::Plain,
        credentials: Credentials {
            authcid: ACCOUNT.into(),
            password: password.into(),
            authzid: None,
        },
    });
    Live::start(spec(config, plain(port))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_plain_logs_in_with_the_right_password() -> Result<()> {
    let (ircd, _atheme) = services().await?;
    let live = session_with_password(ircd.port(), PASSWORD).await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_server_row("the SASL success status", |r| {
        is_status(r, "SASL authentication succeeded")
    })
    .await?;
    let logged_in = live
        .wait_server_row(
            "900 RPL_LOGGEDIN",
            |r| matches!(&r.payload, Payload::ServerReply { command, .. } if &**command == "900"),
        )
        .await?;
    assert!(text(&logged_in).contains(ACCOUNT), "{logged_in:?}");
    let sasl = live.read(|v| v.state_json()["sasl"].clone()).await?;
    assert_eq!(sasl["account"], ACCOUNT, "{sasl}");
    assert_eq!(sasl["outcome"]["state"], "succeeded", "{sasl}");
    // The password appears nowhere in the state or the server buffer.
    let state = live.read(|v| v.state_json().to_string()).await?;
    assert!(!state.contains(PASSWORD));
    assert!(live
        .server_rows()
        .await?
        .iter()
        .all(|r| !text(r).contains(PASSWORD)));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_sasl_password_fails_but_still_registers() -> Result<()> {
    let (ircd, _atheme) = services().await?;
    let live = session_with_password(ircd.port(), "not-the-password").await?;
    live.wait_state(ConnState::Connected).await?;
    let failed = live
        .wait_server_row("the SASL failure status", |r| {
            is_status(r, "SASL authentication failed")
        })
        .await?;
    // The server's 904 text is "SASL authentication failed": said once.
    assert_eq!(text(&failed), "SASL authentication failed", "{failed:?}");
    let sasl = live.read(|v| v.state_json()["sasl"].clone()).await?;
    assert_eq!(sasl["account"], serde_json::Value::Null, "{sasl}");
    assert_eq!(sasl["outcome"]["state"], "failed", "{sasl}");

    live.handle
        .sender()
        .command(|c| c.join("#after", None))
        .await?;
    live.wait_joined("#after").await?;
    Ok(())
}
