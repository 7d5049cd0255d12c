//! Opening a connection to an IRC server: resolve, TCP connect, optional TLS, then split into line halves.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::lines::{LineReader, LineWriter};
use crate::tls::{self, TlsInfo};

/// Where and how to connect; one per server entry of the user's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectConfig {
    /// Host name or IP address of the server.
    pub host: String,
    /// TCP port (6697 is the usual TLS port, 6667 plain).
    pub port: u16,
    /// Whether to speak TLS on the connection.
    pub tls: bool,
    /// Accept a server certificate (e.g. self-signed) whose SHA-256 fingerprint of the leaf DER matches, instead of
    /// verifying it against the system roots. Hex, case-insensitive, colons allowed ("AB:CD:..." or "abcd...").
    pub tls_fingerprint: Option<String>,
    /// PEM file holding a client certificate chain and its private key (for SASL EXTERNAL / CertFP).
    pub client_cert: Option<PathBuf>,
    /// Limit for the whole of resolving, connecting and the TLS handshake, so a dead server cannot stall a session.
    pub connect_timeout: Duration,
}

/// Why a connection could not be opened; `Display` is a one-line reason fit to show the user.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The host name did not resolve to any address.
    #[error("cannot resolve server address: {0}")]
    Resolve(io::Error),
    /// Resolving, connecting and handshaking together took longer than `connect_timeout`.
    #[error("connection timed out")]
    Timeout,
    /// The TCP connection failed (refused, unreachable, reset).
    #[error("connection failed: {0}")]
    Io(io::Error),
    /// TLS setup (a malformed fingerprint, no system roots) or the handshake failed for a reason other than the
    /// server's certificate.
    #[error("TLS error: {0}")]
    Tls(String),
    /// The server's certificate is not trusted (unknown issuer, wrong name, expired, fingerprint mismatch); kept
    /// apart from `Tls` because the user, not a retry, has to fix it.
    #[error("server certificate refused: {0}")]
    Certificate(String),
    /// The client certificate file could not be read or used.
    #[error("client certificate unusable: {0}")]
    ClientCert(String),
}

/// An open connection, already split so one task can read while another writes.
#[derive(Debug)]
pub struct Connection {
    /// Incoming lines.
    pub reader: LineReader,
    /// Outgoing lines.
    pub writer: LineWriter,
    /// The address actually connected to (one of those the host resolved to).
    pub peer: SocketAddr,
    /// What the TLS handshake negotiated; `None` on a plain connection.
    pub tls: Option<TlsInfo>,
}

/// Opens a connection as `cfg` says, within `cfg.connect_timeout`.
pub async fn connect(cfg: &ConnectConfig) -> Result<Connection, ConnectError> {
    tokio::time::timeout(cfg.connect_timeout, connect_unbounded(cfg))
        .await
        .map_err(|_| ConnectError::Timeout)?
}

async fn connect_unbounded(cfg: &ConnectConfig) -> Result<Connection, ConnectError> {
    // Build the TLS configuration first: a bad pin or client certificate should fail before any traffic.
    let tls_config = if cfg.tls {
        Some(Arc::new(tls::client_config(cfg).await?))
    } else {
        None
    };
    let tcp = connect_tcp(&cfg.host, cfg.port).await?;
    let peer = tcp.peer_addr().map_err(ConnectError::Io)?;
    // IRC is chatty with small lines; do not hold them back waiting for more data.
    tcp.set_nodelay(true).map_err(ConnectError::Io)?;

    let Some(tls_config) = tls_config else {
        let (read, write) = tcp.into_split();
        tracing::debug!(%peer, "connected (plain TCP)");
        return Ok(Connection {
            reader: LineReader::new(read),
            writer: LineWriter::new(write),
            peer,
            tls: None,
        });
    };
    let name = tls::server_name(cfg, peer)?;
    let stream = TlsConnector::from(tls_config)
        .connect(name, tcp)
        .await
        .map_err(tls::handshake_error)?;
    let info = TlsInfo::from_connection(stream.get_ref().1);
    tracing::debug!(%peer, protocol = %info.protocol, cipher = %info.cipher, "connected (TLS)");
    let (read, write) = tokio::io::split(stream);
    Ok(Connection {
        reader: LineReader::new(read),
        writer: LineWriter::new(write),
        peer,
        tls: Some(info),
    })
}

/// Tries each resolved address in turn (e.g. IPv6 then IPv4) and returns the first that accepts.
pub(crate) async fn connect_tcp(host: &str, port: u16) -> Result<TcpStream, ConnectError> {
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| ConnectError::Resolve(io::Error::new(e.kind(), format!("{host}: {e}"))))?;
    let mut last_error = None;
    for addr in addrs {
        tracing::debug!(%addr, "connecting");
        match TcpStream::connect(addr).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last_error = Some(io::Error::new(e.kind(), format!("{addr}: {e}"))),
        }
    }
    Err(match last_error {
        Some(e) => ConnectError::Io(e),
        None => ConnectError::Resolve(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} has no addresses"),
        )),
    })
}
