//! SASL EXTERNAL end to end against real InspIRCd 3 and Atheme: the engine presents a client
//! certificate on a TLS listener that asks for one, InspIRCd passes its SHA-256 fingerprint
//! to services, and Atheme logs the session into the account that fingerprint was added to
//! with NickServ `CERT ADD`.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use rete_engine::event::ConnState;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_transports::ConnectConfig;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use support::atheme::Atheme;
use support::ports::free_port;
use support::sasl_tests_session::{
    await_sasl_verdict, sasl_config, start_session, Snapshot, VERDICT,
};
use support::tls::TestCert;
use support::{Inspircd, InspircdConfig};

/// The services account the certificate belongs to.
const ACCOUNT: &str = "certowner";
/// The account's password (only the registering bot uses it).
const ACCOUNT_PASSWORD: &str = "cert-owner-pw-5531";
/// The engine's nick: deliberately not the account name, so the login comes from the cert.
const NICK: &str = "extclient";

/// Lower-case hex SHA-256 of a certificate's DER: how InspIRCd (`hash="sha256"`) names it.
fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A client certificate as the engine loads it: one PEM file with the certificate and key.
struct ClientCert {
    pem_path: PathBuf,
    fingerprint: String,
}

impl ClientCert {
    fn generate(dir: &TempDir, name: &str) -> Result<Self> {
        let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()])
            .context("generating the client certificate")?;
        let pem_path = dir.path().join(format!("{name}.pem"));
        fs::write(
            &pem_path,
            format!(
                "{}{}",
                certified.cert.pem(),
                certified.signing_key.serialize_pem()
            ),
        )?;
        Ok(Self {
            pem_path,
            fingerprint: fingerprint(certified.cert.der()),
        })
    }
}

/// InspIRCd with a TLS listener that requests client certificates, linked to Atheme with
/// EXTERNAL and NickServ CERT.
struct CertNetwork {
    /// Holds the server's certificate files and the client PEMs; removed on drop.
    dir: TempDir,
    ircd: Inspircd,
    atheme: Atheme,
    tls_port: u16,
    server_fingerprint: String,
}

impl CertNetwork {
    async fn start() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("rete-sasl-external-")
            .tempdir()?;
        let server_cert = TestCert::generate()?;
        let cert_path = dir.path().join("server-cert.pem");
        let key_path = dir.path().join("server-key.pem");
        fs::write(&cert_path, &server_cert.cert_pem)?;
        fs::write(&key_path, &server_cert.key_pem)?;
        let tls_port = free_port()?;
        // The harness's own TLS profile does not request client certificates, so this one
        // is added instead of `.tls()`: GnuTLS asks for a certificate, sslinfo records its
        // SHA-256 fingerprint, and m_sasl hands that to Atheme for EXTERNAL.
        let config = InspircdConfig::new()
            .services()
            .extra(r#"<module name="ssl_gnutls">"#)
            .extra(r#"<module name="sslinfo">"#)
            .extra(&format!(
                r#"<sslprofile name="CertClients" provider="gnutls" certfile="{}" keyfile="{}" requestclientcert="yes" hash="sha256">"#,
                cert_path.display(),
                key_path.display()
            ))
            .extra(&format!(
                r#"<bind address="127.0.0.1" port="{tls_port}" type="clients" sslprofile="CertClients">"#
            ));
        let ircd = Inspircd::start(config).await?;
        let atheme = Atheme::start_with_modules(&ircd, &["nickserv/cert", "saslserv/external"])
            .await
            .with_context(|| ircd.log())?;
        Ok(Self {
            dir,
            ircd,
            atheme,
            tls_port,
            server_fingerprint: fingerprint(&server_cert.cert_der),
        })
    }

    /// A TLS connection that pins the server's certificate and presents `client`.
    fn connect_with(&self, client: &ClientCert) -> ConnectConfig {
        ConnectConfig {
            host: "127.0.0.1".to_owned(),
            port: self.tls_port,
            tls: true,
            tls_fingerprint: Some(self.server_fingerprint.clone()),
            client_cert: Some(client.pem_path.clone()),
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// Runs an EXTERNAL session presenting `client` until it is registered with a verdict.
    async fn login_with(&self, client: &ClientCert) -> Result<Snapshot> {
        let config = sasl_config(NICK, Mechanism::External, Credentials::default())?;
        let (rete, session) = start_session(config, self.connect_with(client)).await?;
        let snap = await_sasl_verdict(&session, || {
            format!("{}\n{}", self.ircd.log(), self.atheme.log())
        })
        .await;
        rete.shutdown(Duration::from_secs(2)).await;
        snap
    }
}

#[tokio::test]
async fn external_logs_in_with_a_registered_client_certificate() -> Result<()> {
    let net = CertNetwork::start().await?;
    let client = ClientCert::generate(&net.dir, "rete-external-client")?;
    net.atheme
        .register_with_cert(ACCOUNT, ACCOUNT_PASSWORD, &client.fingerprint)
        .await?;

    let snap = net.login_with(&client).await?;

    assert_eq!(
        snap.statuses_with(VERDICT),
        ["SASL authentication succeeded"],
        "{snap:#?}"
    );
    assert_eq!(snap.state, ConnState::Connected);
    assert_eq!(snap.sasl_outcome(), "succeeded");
    assert_eq!(snap.sasl_account(), Some(ACCOUNT));
    let logged_in = snap.replies_to("900");
    assert!(
        logged_in.iter().any(|t| t.contains(ACCOUNT)),
        "no 900 naming {ACCOUNT}: {:?}",
        snap.replies
    );
    let offered = snap.state_json["caps"]["available"]["sasl"]
        .as_str()
        .unwrap_or("");
    assert!(
        offered.split(',').any(|m| m == "EXTERNAL"),
        "Atheme did not announce EXTERNAL: sasl={offered:?}"
    );
    // The session was told the TLS link it is on.
    assert!(
        snap.has_status("Connected to 127.0.0.1:")
            && snap.statuses.iter().any(|s| s.contains("over TLS")),
        "{:?}",
        snap.statuses
    );
    Ok(())
}

#[tokio::test]
async fn external_with_an_unknown_certificate_fails_and_still_registers() -> Result<()> {
    let net = CertNetwork::start().await?;
    let owner = ClientCert::generate(&net.dir, "rete-owner-client")?;
    net.atheme
        .register_with_cert(ACCOUNT, ACCOUNT_PASSWORD, &owner.fingerprint)
        .await?;
    let stranger = ClientCert::generate(&net.dir, "rete-stranger-client")?;

    let snap = net.login_with(&stranger).await?;

    let verdicts = snap.statuses_with(VERDICT);
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert!(
        verdicts[0].starts_with("SASL authentication failed"),
        "{verdicts:?}"
    );
    assert_eq!(snap.state, ConnState::Connected);
    assert_eq!(snap.sasl_outcome(), "failed");
    assert_eq!(snap.sasl_account(), None);
    Ok(())
}
