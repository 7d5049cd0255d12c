//! TLS client setup: trust (system roots or a pinned fingerprint), client certificates, and what was negotiated.
//!
//! Many IRC networks use ordinary CA-signed certificates, but plenty of small servers are self-signed; for those the
//! user pins the certificate's SHA-256 fingerprint, which is stronger than any CA check for that one server.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

use crate::connect::{ConnectConfig, ConnectError};

/// What a TLS handshake settled on, for display and for the user to pin the certificate later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsInfo {
    /// SHA-256 of the server's leaf certificate DER, lower hex without separators.
    pub peer_fingerprint_sha256: String,
    /// Negotiated protocol version, e.g. "TLSv1_3".
    pub protocol: String,
    /// Negotiated cipher suite, e.g. "TLS13_AES_256_GCM_SHA384".
    pub cipher: String,
}

impl TlsInfo {
    /// Reads what was negotiated from a finished handshake.
    pub(crate) fn from_connection(conn: &rustls::ClientConnection) -> Self {
        let peer_fingerprint_sha256 = conn
            .peer_certificates()
            .and_then(|certs| certs.first())
            .map(|leaf| to_hex(&Sha256::digest(leaf.as_ref())))
            .unwrap_or_default();
        let protocol = conn
            .protocol_version()
            .map(|v| v.as_str().map_or_else(|| format!("{v:?}"), str::to_owned))
            .unwrap_or_default();
        let cipher = conn
            .negotiated_cipher_suite()
            .map(|s| {
                let suite = s.suite();
                suite
                    .as_str()
                    .map_or_else(|| format!("{suite:?}"), str::to_owned)
            })
            .unwrap_or_default();
        Self {
            peer_fingerprint_sha256,
            protocol,
            cipher,
        }
    }
}

/// The rustls crypto provider every Rete TLS connection uses (clients here, the rete-cloud service's listener),
/// passed in explicitly so no process-wide default provider has to be installed.
///
/// It is rustls' *ring* provider, chosen in this one place. rustls 0.23.48 deprecates it because *ring* has no
/// post-quantum key exchange; aws-lc-rs, the provider that has one, is a large C build that every build of
/// every crate here would pay for, and IRC servers negotiate the classical groups *ring* offers. Moving is a
/// change to this function alone.
#[allow(deprecated)]
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the rustls client configuration for `cfg`, with [`crypto_provider`].
pub(crate) async fn client_config(cfg: &ConnectConfig) -> Result<ClientConfig, ConnectError> {
    let provider = crypto_provider();
    let algorithms = provider.signature_verification_algorithms;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConnectError::Tls(e.to_string()))?;
    let builder = match &cfg.tls_fingerprint {
        Some(pin) => {
            let verifier = PinnedCertVerifier {
                fingerprint: parse_fingerprint(pin)?,
                algorithms,
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
        }
        None => builder.with_root_certificates(system_roots().await?),
    };
    match &cfg.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some(path) => {
            let (chain, key) = load_client_cert(path).await?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| ConnectError::ClientCert(format!("{}: {e}", path.display())))
        }
    }
}

/// The name rustls checks the certificate against and sends as SNI (only DNS names are sent as SNI).
///
/// With a pinned fingerprint the name is not checked, so a host string that is neither a DNS name nor an IP
/// address falls back to the peer's IP rather than failing.
pub(crate) fn server_name(
    cfg: &ConnectConfig,
    peer: std::net::SocketAddr,
) -> Result<ServerName<'static>, ConnectError> {
    match ServerName::try_from(cfg.host.clone()) {
        Ok(name) => Ok(name),
        Err(_) if cfg.tls_fingerprint.is_some() => Ok(ServerName::from(peer.ip())),
        Err(e) => Err(ConnectError::Tls(format!(
            "{:?} is not a valid server name: {e}",
            cfg.host
        ))),
    }
}

/// Sorts a failed handshake into a certificate problem (the user must act on trust) or any other TLS failure.
pub(crate) fn handshake_error(err: io::Error) -> ConnectError {
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(cert_err)) => {
            ConnectError::Certificate(describe_certificate_error(cert_err))
        }
        Some(tls_err) => ConnectError::Tls(tls_err.to_string()),
        None => ConnectError::Tls(err.to_string()),
    }
}

/// rustls prints some certificate errors as bare enum names; say what they mean and what the user can do.
fn describe_certificate_error(err: &rustls::CertificateError) -> String {
    match err {
        rustls::CertificateError::UnknownIssuer => {
            "it is not signed by an authority the system trusts (if the server is self-signed, pin its SHA-256 \
             fingerprint with tls_fingerprint)"
                .to_owned()
        }
        // webpki's name for a certificate that says it is an authority's, sent as the server's own: what
        // `openssl req -x509` makes by default, so a self-signed server's usual certificate.
        rustls::CertificateError::Other(other) if other.to_string() == "CaUsedAsEndEntity" => {
            "it is an authority's certificate used as the server's own, as a self-signed certificate often is (if \
             you trust this server, pin its SHA-256 fingerprint with tls_fingerprint)"
                .to_owned()
        }
        rustls::CertificateError::Other(other) => other.to_string(),
        other => other.to_string(),
    }
}

/// Loads the system's trust anchors off the async threads (it reads many files).
async fn system_roots() -> Result<RootCertStore, ConnectError> {
    let loaded = tokio::task::spawn_blocking(rustls_native_certs::load_native_certs)
        .await
        .map_err(|e| ConnectError::Tls(format!("loading system root certificates: {e}")))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        let why = loaded
            .errors
            .first()
            .map_or_else(|| "none found".to_owned(), ToString::to_string);
        return Err(ConnectError::Tls(format!(
            "no system root certificates could be loaded ({why}); set a TLS fingerprint to trust a server"
        )));
    }
    Ok(roots)
}

/// Reads a PEM file holding the client's certificate chain and its private key.
async fn load_client_cert(
    path: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ConnectError> {
    let fail = |why: &dyn std::fmt::Display| {
        ConnectError::ClientCert(format!("{}: {why}", path.display()))
    };
    let pem = tokio::fs::read(path).await.map_err(|e| fail(&e))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))?;
    if chain.is_empty() {
        return Err(fail(&"no certificate found"));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        pem::Error::NoItemsFound => fail(&"no private key found"),
        other => fail(&other),
    })?;
    Ok((chain, key))
}

/// Parses a SHA-256 fingerprint as users copy it: hex in any case, optionally with colons (or spaces) between bytes.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32], ConnectError> {
    let invalid = || {
        ConnectError::Tls(format!(
            "TLS fingerprint {text:?} is not a SHA-256 fingerprint (64 hex digits, colons allowed)"
        ))
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b':' | b' '))
        .map(|b| {
            char::from(b)
                .to_digit(16)
                .and_then(|d| u8::try_from(d).ok())
        })
        .collect::<Option<_>>()
        .ok_or_else(invalid)?;
    if digits.len() != 64 {
        return Err(invalid());
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = pair[0] << 4 | pair[1];
    }
    Ok(out)
}

fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Trusts exactly one leaf certificate, identified by its SHA-256 fingerprint.
///
/// The name and the chain are not checked (the pin is the trust decision), but handshake signatures still are, so
/// the server must hold the pinned certificate's private key.
#[derive(Debug)]
struct PinnedCertVerifier {
    fingerprint: [u8; 32],
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedCertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let actual = Sha256::digest(end_entity.as_ref());
        if actual.as_slice() == self.fingerprint {
            return Ok(ServerCertVerified::assertion());
        }
        let why = FingerprintMismatch {
            actual: to_hex(&actual),
        };
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Other(rustls::OtherError(Arc::new(why))),
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Why a pinned certificate was refused; names the fingerprint seen so the user can compare it with the pin.
#[derive(Debug)]
struct FingerprintMismatch {
    actual: String,
}

impl std::fmt::Display for FingerprintMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "server certificate SHA-256 fingerprint {} does not match the pinned one",
            self.actual
        )
    }
}

impl std::error::Error for FingerprintMismatch {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_parses_with_colons_and_any_case() {
        let plain = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let colons = "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff";
        let a = parse_fingerprint(plain).ok();
        assert_eq!(a, parse_fingerprint(colons).ok());
        assert_eq!(a.map(|b| to_hex(&b)), Some(plain.to_lowercase()));
    }

    #[test]
    fn fingerprint_rejects_wrong_length_and_non_hex() {
        assert!(parse_fingerprint("abcd").is_err());
        assert!(parse_fingerprint(&"g".repeat(64)).is_err());
        assert!(parse_fingerprint(&"a".repeat(66)).is_err());
        assert!(parse_fingerprint("").is_err());
    }
}
