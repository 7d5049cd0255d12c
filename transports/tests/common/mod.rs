//! Shared pieces for the socket tests: throwaway certificates and a one-connection TLS server on 127.0.0.1.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rete_transports::ConnectConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A certificate with its private key.
pub struct Identity {
    pub cert: CertificateDer<'static>,
    pub key_pkcs8_der: Vec<u8>,
    pub pem: String,
}

impl Identity {
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_pkcs8_der.clone()))
    }

    pub fn sha256_hex(&self) -> String {
        Sha256::digest(self.cert.as_ref())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// A self-signed server certificate for "localhost" and 127.0.0.1, as a small IRC server would have.
pub fn self_signed_server() -> Identity {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    Identity {
        pem: format!("{}{}", ck.cert.pem(), ck.signing_key.serialize_pem()),
        cert: ck.cert.der().clone(),
        key_pkcs8_der: ck.signing_key.serialize_der(),
    }
}

/// A self-signed server certificate that says it is an authority's (CA:TRUE), as `openssl req -x509` makes.
pub fn self_signed_ca_server() -> Identity {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    Identity {
        pem: format!("{}{}", cert.pem(), key.serialize_pem()),
        cert: cert.der().clone(),
        key_pkcs8_der: key.serialize_der(),
    }
}

/// A client CA and a client certificate it issued, as used for CertFP / SASL EXTERNAL.
pub fn client_ca_and_cert() -> (CertificateDer<'static>, Identity) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["rete-client".to_owned()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    let client = Identity {
        pem: format!("{}{}", cert.pem(), key.serialize_pem()),
        cert: cert.der().clone(),
        key_pkcs8_der: key.serialize_der(),
    };
    (ca_cert.der().clone(), client)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    rete_transports::tls::crypto_provider()
}

/// TLS server configuration; with `client_ca`, a client certificate issued by it is required.
pub fn server_config(
    server: &Identity,
    client_ca: Option<&CertificateDer<'static>>,
) -> ServerConfig {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(vec![server.cert.clone()], server.key())
        .unwrap()
}

/// Listens on 127.0.0.1 and completes a TLS handshake with the first client; the handshake's result is returned
/// by the join handle (an error when the client aborts it).
pub async fn spawn_tls_server(
    config: ServerConfig,
) -> (
    u16,
    tokio::task::JoinHandle<std::io::Result<TlsStream<TcpStream>>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let handle = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        acceptor.accept(tcp).await
    });
    (port, handle)
}

/// A config for 127.0.0.1:`port` with a generous timeout; tests adjust the rest.
pub fn config(host: &str, port: u16, tls: bool) -> ConnectConfig {
    ConnectConfig {
        host: host.to_owned(),
        port,
        tls,
        tls_fingerprint: None,
        client_cert: None,
        connect_timeout: Duration::from_secs(10),
    }
}
