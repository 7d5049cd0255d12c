//! TLS against a real InspIRCd with a self-signed certificate: a pinned fingerprint connects,
//! a wrong one is refused (and retried).

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use rete_engine::event::{ConnState, Event};
use rete_transports::ConnectConfig;
use sha2::{Digest, Sha256};
use support::live_tests_session::{is_status, session_config, spec, Live};
use support::{Inspircd, InspircdConfig};

fn tls_to(port: u16, fingerprint: &str) -> ConnectConfig {
    ConnectConfig {
        host: "127.0.0.1".to_owned(),
        port,
        tls: true,
        tls_fingerprint: Some(fingerprint.to_owned()),
        client_cert: None,
        connect_timeout: Duration::from_secs(5),
    }
}

fn sha256_hex(der: &[u8]) -> String {
    Sha256::digest(der).iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_fingerprint_connects_over_tls() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().tls()).await?;
    let port = ircd.tls_port().context("no TLS port")?;
    let fingerprint = sha256_hex(ircd.tls_cert().context("no TLS cert")?);
    let live = Live::start(spec(session_config("secure"), tls_to(port, &fingerprint))).await?;
    live.wait_state(ConnState::Connected).await?;
    let expected = format!("over TLS (server certificate SHA-256 {fingerprint})");
    live.wait_server_row("the TLS connect status", move |r| is_status(r, &expected))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upper_case_colon_fingerprint_also_connects() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().tls()).await?;
    let port = ircd.tls_port().context("no TLS port")?;
    let hex = sha256_hex(ircd.tls_cert().context("no TLS cert")?).to_ascii_uppercase();
    let pairs: Vec<&str> = (0..hex.len() / 2).map(|i| &hex[2 * i..2 * i + 2]).collect();
    let live = Live::start(spec(
        session_config("colons"),
        tls_to(port, &pairs.join(":")),
    ))
    .await?;
    live.wait_state(ConnState::Connected).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_fingerprint_is_refused_and_retried() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().tls()).await?;
    let port = ircd.tls_port().context("no TLS port")?;
    let wrong = "00".repeat(32);
    let live = Live::start(spec(session_config("doubter"), tls_to(port, &wrong))).await?;
    live.wait_for("two refused attempts", |v| {
        let refused = v
            .buffer(v.server_buffer())?
            .since(0)
            .filter(|r| is_status(r, "server certificate refused"))
            .count();
        (refused >= 2).then_some(())
    })
    .await?;
    live.wait_events("the reconnecting state", |e| {
        e.contains(&Event::State(ConnState::Reconnecting))
    })
    .await?;
    let states = live.states();
    assert!(!states.contains(&ConnState::Connected), "{states:?}");
    let connected_rows = live
        .server_rows()
        .await?
        .iter()
        .filter(|r| is_status(r, "Connected to"))
        .count();
    assert_eq!(
        connected_rows, 0,
        "a refused certificate counted as connected"
    );
    Ok(())
}
