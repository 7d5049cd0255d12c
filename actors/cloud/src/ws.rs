//! The WebSocket side of the service, kept thin: accept TCP, TLS when a
//! certificate is given (plain only on a loopback address), the WebSocket
//! handshake with a size limit, then hand the socket to `connection::serve`.
//!
//! It lives here rather than in `rete-transports` so that only the service
//! builds the server-side WebSocket and TLS-acceptor code; the client's
//! WebSocket is `rete-transports`', and both carry the frames of
//! `rete-cloud-protocol`.

use crate::admission::{AddressKey, LogThrottle, Seat};
use crate::connection;
use crate::hub::Hub;
use rete_cloud_protocol::codec::MAX_FRAME_BYTES;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
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
    ///
    /// Each connection takes a [`Seat`] in the hub's budget at accept (or is
    /// closed at once), and must have authenticated by the gate's auth
    /// timeout counted from the accept, its TLS and WebSocket handshakes
    /// included. An accept that fails for want of a resource (file
    /// descriptors, memory) is retried after a growing pause rather than at
    /// once, so a full descriptor table cannot spin the loop; accept errors
    /// and refusals are logged at most once per [`LOG_EVERY_MS`], counted.
    pub async fn run(self, hub: Arc<Hub>, mut shutdown: watch::Receiver<bool>) {
        let ids = Arc::new(AtomicU64::new(0));
        let auth_timeout =
            Duration::from_millis(connection::server_config(&hub.options).auth_timeout_ms);
        let mut pause = AcceptPause::default();
        let mut accept_errors = LogThrottle::new(LOG_EVERY_MS);
        let mut refusals = LogThrottle::new(LOG_EVERY_MS);
        loop {
            let (tcp, peer) = tokio::select! {
                r = self.tcp.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        if let Some(n) = accept_errors.note(hub.uptime_ms()) {
                            tracing::warn!(target: "rete::cloud", "accept failed {n} time(s) lately, last: {e}");
                        }
                        if let Some(wait) = pause.after_error(&e) {
                            tokio::select! {
                                _ = tokio::time::sleep(wait) => {}
                                _ = shutdown.changed() => return,
                            }
                        }
                        continue;
                    }
                },
                _ = shutdown.changed() => return,
            };
            pause.reset();
            let accepted = Instant::now();
            let seat = match Seat::admit(&hub.admission, hub.uptime_ms(), AddressKey::of(peer.ip()))
            {
                Ok(seat) => seat,
                Err(refusal) => {
                    if let Some(n) = refusals.note(hub.uptime_ms()) {
                        tracing::warn!(
                            target: "rete::cloud",
                            "refused {n} connection(s) lately, last from {}: {}",
                            peer.ip(),
                            refusal.as_str()
                        );
                    }
                    drop(tcp);
                    continue;
                }
            };
            let (hub, tls, stop) = (hub.clone(), self.tls.clone(), shutdown.clone());
            let id = ids.fetch_add(1, Ordering::Relaxed) + 1;
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::from_std(accepted + auth_timeout);
                match tokio::time::timeout_at(deadline, open(tcp, tls)).await {
                    Ok(Ok(ws)) => connection::serve(hub, ws, id, stop, accepted, seat).await,
                    Ok(Err(e)) => {
                        tracing::debug!(target: "rete::cloud", "{peer}: handshake failed: {e}")
                    }
                    Err(_) => {
                        tracing::debug!(target: "rete::cloud", "{peer}: no handshake before the auth timeout")
                    }
                }
            });
        }
    }
}

/// Accept errors and refusals are logged at most this often.
pub const LOG_EVERY_MS: u64 = 10_000;

/// The pause after a failed accept: none for an error of one connection
/// (it was reset before we took it), growing from [`AcceptPause::FIRST`] to
/// [`AcceptPause::MOST`] while the process lacks a resource, since retrying
/// at once would only fail again, as fast as the loop can spin.
#[derive(Debug, Default)]
struct AcceptPause {
    next: Option<Duration>,
}

impl AcceptPause {
    const FIRST: Duration = Duration::from_millis(10);
    const MOST: Duration = Duration::from_secs(1);

    fn after_error(&mut self, e: &std::io::Error) -> Option<Duration> {
        let lacks_resource = matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if !lacks_resource {
            return None;
        }
        let wait = self.next.unwrap_or(Self::FIRST);
        self.next = Some((wait * 2).min(Self::MOST));
        Some(wait)
    }

    fn reset(&mut self) {
        self.next = None;
    }
}

/// Each connection's read buffer, allocated up front. Tungstenite's default
/// (128 KiB) suits a few busy sockets; a client's frames are small and its
/// requests few, and the service holds many idle clients
/// (`benches/cloud_memory.rs`: 177 KiB per attached client with the default).
const READ_BUFFER_BYTES: usize = 8 * 1024;

async fn open(tcp: TcpStream, tls: Option<tokio_rustls::TlsAcceptor>) -> Result<Ws, String> {
    let _ = tcp.set_nodelay(true);
    let io: Pin<Box<dyn Io>> = match tls {
        Some(acceptor) => Box::pin(acceptor.accept(tcp).await.map_err(|e| e.to_string())?),
        None => Box::pin(tcp),
    };
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(TRANSPORT_LIMIT))
        .max_frame_size(Some(TRANSPORT_LIMIT));
    tokio_tungstenite::accept_async_with_config(io, Some(config))
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accept_short_of_a_resource_waits_longer_each_time_up_to_a_second() {
        let mut pause = AcceptPause::default();
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let waits: Vec<u64> = (0..9)
            .map(|_| pause.after_error(&emfile).unwrap().as_millis() as u64)
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1_000, 1_000]);
        let aborted = std::io::Error::from_raw_os_error(libc::ECONNABORTED);
        assert_eq!(pause.after_error(&aborted), None, "one connection's error");
        pause.reset();
        assert_eq!(pause.after_error(&emfile), Some(AcceptPause::FIRST));
    }
}
