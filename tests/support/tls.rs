//! A throw-away self-signed certificate for the TLS listener, and the rustls client setup that
//! trusts exactly that certificate (so TLS tests exercise real verification, not a bypass).

use std::sync::Arc;

use anyhow::{Context, Result};
use rustls::pki_types::CertificateDer;

/// A self-signed certificate valid for `127.0.0.1` and `localhost`.
pub struct TestCert {
    /// PEM of the certificate, for the server.
    pub cert_pem: String,
    /// PEM of the private key, for the server.
    pub key_pem: String,
    /// DER of the certificate, for a client's trust store.
    pub cert_der: CertificateDer<'static>,
}

impl TestCert {
    /// Generates a fresh key pair and certificate (in memory; nothing touches the network).
    pub fn generate() -> Result<Self> {
        let certified = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
        ])
        .context("generating the test certificate")?;
        Ok(Self {
            cert_pem: certified.cert.pem(),
            key_pem: certified.signing_key.serialize_pem(),
            cert_der: certified.cert.der().clone(),
        })
    }
}

/// A rustls client configuration whose only trust anchor is `cert`.
pub fn client_config(cert: &CertificateDer<'static>) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(cert.clone())
        .context("adding the test certificate as a trust anchor")?;
    let provider = rete_transports::tls::crypto_provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choosing TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
