//! The WebSocket side of the service, kept thin: accept TCP, TLS when a
//! certificate is given (plain only on a loopback address), the WebSocket
//! handshake with a size limit, then hand the socket to `connection::serve`.
//!
//! It lives here rather than in `rete-transports` so that only the service
//! builds the server-side WebSocket and TLS-acceptor code; the client's
//! WebSocket is `rete-transports`', and both carry the frames of
//! `rete-cloud-protocol`.

use crate::connection;
use crate::hub::Hub;
use rete_cloud_protocol::codec::MAX_FRAME_BYTES;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A byte stream, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// A client's WebSocket.
pub type Ws = WebSocketStream<Pin<Box<dyn Io>>>;

/// Messages above this are dropped by the WebSocket layer itself; those
/// between [`MAX_FRAME_BYTES`] and it reach the protocol gate, which answers
/// `frame_too_large` and closes with 1009.
pub const TRANSPORT_LIMIT: usize = 4 * MAX_FRAME_BYTES;

/// A close message with this status.
pub fn close_message(status: u16) -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::from(status),
        reason: "".into(),
    }))
}

/// Why listening could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Plain WebSocket on a non-loopback address.
    #[error("refusing plain ws:// on {0}: it is not a loopback address; give --cert and --key")]
    PlainNotLoopback(SocketAddr),
    /// The certificate or key could not be read.
    #[error("TLS: {0}")]
    Tls(String),
    /// Binding failed.
    #[error("listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

/// The TLS acceptor for a PEM certificate chain and key.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, ListenError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ListenError::Tls(format!("{}: {e}", cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| ListenError::Tls(format!("{}: {e}", key.display())))?;
    let config =
        rustls::ServerConfig::builder_with_provider(rete_transports::tls::crypto_provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| ListenError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| ListenError::Tls(e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// A bound listener.
pub struct Listener {
    tcp: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Listener {
    /// Binds `addr`; without TLS only a loopback address is allowed.
    pub async fn bind(
        addr: SocketAddr,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Result<Self, ListenError> {
        if tls.is_none() && !addr.ip().is_loopback() {
            return Err(ListenError::PlainNotLoopback(addr));
        }
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|e| ListenError::Bind(addr, e))?;
        Ok(Self { tcp, tls })
    }

    /// The address bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// Accepts connections until `shutdown` turns true.
    pub async fn run(self, hub: Arc<Hub>, mut shutdown: watch::Receiver<bool>) {
        let ids = Arc::new(AtomicU64::new(0));
        loop {
            let (tcp, peer) = tokio::select! {
                r = self.tcp.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(target: "rete::cloud", "accept: {e}");
                        continue;
                    }
                },
                _ = shutdown.changed() => return,
            };
            let (hub, tls, stop) = (hub.clone(), self.tls.clone(), shutdown.clone());
            let id = ids.fetch_add(1, Ordering::Relaxed) + 1;
            tokio::spawn(async move {
                match open(tcp, tls).await {
                    Ok(ws) => connection::serve(hub, ws, id, stop).await,
                    Err(e) => {
                        tracing::info!(target: "rete::cloud", "{peer}: handshake failed: {e}")
                    }
                }
            });
        }
    }
}

async fn open(tcp: TcpStream, tls: Option<tokio_rustls::TlsAcceptor>) -> Result<Ws, String> {
    let _ = tcp.set_nodelay(true);
    let io: Pin<Box<dyn Io>> = match tls {
        Some(acceptor) => Box::pin(acceptor.accept(tcp).await.map_err(|e| e.to_string())?),
        None => Box::pin(tcp),
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(TRANSPORT_LIMIT))
        .max_frame_size(Some(TRANSPORT_LIMIT));
    tokio_tungstenite::accept_async_with_config(io, Some(config))
        .await
        .map_err(|e| e.to_string())
}
