//! The ReteCloud client's wire: a WebSocket (tokio-tungstenite) over TCP,
//! with TLS by rustls exactly as for IRC (the system's roots, or a pinned
//! SHA-256 certificate fingerprint), carrying one frame per text message.
//!
//! This is the I/O half of the client; the protocol itself is
//! [`CloudClient`](rete_cloud_protocol::CloudClient), which never touches a
//! socket. `ws://` is refused unless the host is a loopback address: the
//! first frame carries the bearer token.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::connect::{connect_tcp, ConnectConfig, ConnectError};
use crate::tls::{self, TlsInfo};
use rete_cloud_protocol::codec::MAX_FRAME_BYTES;
use rete_cloud_protocol::frame::ResumePoint;
use rete_cloud_protocol::Token;

/// Messages above this are dropped by the WebSocket layer itself; those
/// between [`MAX_FRAME_BYTES`] and it reach the codec, which refuses them
/// with `frame_too_large` (the client then closes and resumes).
pub const TRANSPORT_LIMIT: usize = 4 * MAX_FRAME_BYTES;

/// Where the session's token lives: the host's secrets file. The client
/// reads it before each connection and writes a rotated one **before** the
/// rotation is acknowledged (see `PROTOCOL.md`, 9).
pub trait CloudTokenStore: Send + Sync + 'static {
    /// The stored token, or None when none was ever set. Read before every
    /// connection: another session of the same account may have stored a
    /// later one.
    fn load(&self) -> Result<Option<Token>, TokenStoreError>;
    /// Replaces the stored token with `token`, generation `generation` of
    /// its chain, durably (0600, atomically), and returns once it is on
    /// disk; unless the store holds a later generation already, stored by
    /// another session of the same account, which then stays
    /// ([`TokenStored::LaterKept`]). The same token and generation stored
    /// again (a store repeated after its first outcome was lost) is
    /// `Written`: the token is the stored one. A token set by hand has no
    /// generation: any rotated one replaces it.
    fn store(&self, token: &Token, generation: u64) -> Result<TokenStored, TokenStoreError>;
}

/// What [`CloudTokenStore::store`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStored {
    /// The token is the stored one now.
    Written,
    /// Nothing was written: the store holds a later generation.
    LaterKept,
}

/// Why the token could not be read or written; its text never holds the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenStoreError(pub String);

/// Where a ReteCloud session keeps its resume points between runs of the
/// host, so a restarted client replays exactly the rows it missed instead
/// of only the newest. Read once, when the session first connects; written
/// as rows arrive (at most every few seconds) and when a connection ends.
/// A point written late only means rows shown again after a restart;
/// none is ever written ahead of the rows the session took.
pub trait CloudResumeStore: Send + Sync + 'static {
    /// The points stored (empty when none were).
    fn load(&self) -> Result<Vec<ResumePoint>, ResumeStoreError>;
    /// Replaces the stored points with `points`.
    fn store(&self, points: &[ResumePoint]) -> Result<(), ResumeStoreError>;
}

/// Why resume points could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ResumeStoreError(pub String);

/// A ReteCloud session's transport settings.
#[derive(Clone)]
pub struct CloudConfig {
    /// The service's WebSocket URL (`wss://host[:port][/path]`, or `ws://`
    /// to a loopback address).
    pub url: String,
    /// The service's id of the network this session shows.
    pub network: String,
    /// Accept a service certificate whose SHA-256 fingerprint matches
    /// instead of verifying it against the system roots (as for IRC).
    pub tls_fingerprint: Option<String>,
    /// Limit for connecting, TLS and the WebSocket handshake together.
    pub connect_timeout: Duration,
    /// Where the token is read from and a rotated one written to.
    pub token_store: Arc<dyn CloudTokenStore>,
    /// Where resume points outlive the process; `None`: in memory only,
    /// so a restarted host starts live with the recent rows of each channel.
    pub resume_store: Option<Arc<dyn CloudResumeStore>>,
}

impl fmt::Debug for CloudConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudConfig")
            .field("url", &self.url)
            .field("network", &self.network)
            .field("tls_fingerprint", &self.tls_fingerprint)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CloudConfig {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.network == other.network
            && self.tls_fingerprint == other.tls_fingerprint
            && self.connect_timeout == other.connect_timeout
            && Arc::ptr_eq(&self.token_store, &other.token_store)
            && match (&self.resume_store, &other.resume_store) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
    }
}

impl Eq for CloudConfig {}

/// A service URL, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudUrl {
    /// `wss://`.
    pub tls: bool,
    /// The host name or IP address (without brackets).
    pub host: String,
    /// The port (443 or 80 when the URL gives none).
    pub port: u16,
    /// The path, `/` at least.
    pub path: String,
}

/// Checks a service URL: `wss://` or `ws://`, a host, an optional port and
/// path, and nothing else: no user, no query, no fragment (a URL is written
/// to logs, so it must carry no credential). `ws://` only to a loopback host.
pub fn parse_url(url: &str) -> Result<CloudUrl, String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("wss://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("ws://") {
        (false, r)
    } else {
        return Err("the URL must start with wss:// (or ws:// to a loopback address)".into());
    };
    if rest.contains(['?', '#']) {
        return Err("the URL must have no query or fragment".into());
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("the URL must name no user: the token goes in the secrets file".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err("the URL's IPv6 address has no closing ]".into());
        };
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    let port = match port {
        None => {
            if tls {
                443
            } else {
                80
            }
        }
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| "the URL's port is not a number from 1 to 65535".to_owned())?,
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !tls && !loopback {
        return Err(format!(
            "ws:// is allowed only to a loopback address ({host} is not one): use wss://"
        ));
    }
    Ok(CloudUrl {
        tls,
        host: host.to_owned(),
        port,
        path: path.to_owned(),
    })
}

/// A byte stream, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

type Ws = WebSocketStream<Pin<Box<dyn Io>>>;

/// An open WebSocket to the service, split so one task reads while another writes.
pub struct CloudConnection {
    /// Incoming text messages.
    pub reader: CloudReader,
    /// Outgoing text messages.
    pub writer: CloudWriter,
    /// The address connected to.
    pub peer: SocketAddr,
    /// What TLS negotiated; None on `ws://`.
    pub tls: Option<TlsInfo>,
}

impl fmt::Debug for CloudConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudConnection")
            .field("peer", &self.peer)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// What the reader got.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A text message: one frame for the codec.
    Text(String),
    /// A binary message, which the protocol refuses.
    Binary,
}

/// The reading half.
pub struct CloudReader(SplitStream<Ws>);

impl CloudReader {
    /// The next text or binary message; None once the WebSocket closed.
    /// WebSocket pings and pongs are handled below this (the protocol's
    /// heartbeat is its own frames).
    pub async fn next(&mut self) -> Result<Option<Incoming>, String> {
        loop {
            match self.0.next().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(Message::Text(t))) => {
                    return Ok(Some(Incoming::Text(t.as_str().to_owned())))
                }
                Some(Ok(Message::Binary(_))) => return Ok(Some(Incoming::Binary)),
                Some(Ok(Message::Close(_))) => return Ok(None),
                Some(Ok(_)) => {}
            }
        }
    }
}

/// The writing half.
pub struct CloudWriter(SplitSink<Ws, Message>);

impl CloudWriter {
    /// Sends one text message (a frame).
    pub async fn send_text(&mut self, text: String) -> Result<(), String> {
        self.0
            .send(Message::text(text))
            .await
            .map_err(|e| e.to_string())
    }

    /// Closes the WebSocket (a normal close).
    pub async fn close(&mut self) {
        let _ = self.0.close().await;
    }
}

/// Opens the WebSocket `cfg` names, within `cfg.connect_timeout`.
pub async fn open(cfg: &CloudConfig) -> Result<CloudConnection, ConnectError> {
    let url = parse_url(&cfg.url).map_err(ConnectError::Tls)?;
    tokio::time::timeout(cfg.connect_timeout, open_unbounded(cfg, &url))
        .await
        .map_err(|_| ConnectError::Timeout)?
}

async fn open_unbounded(
    cfg: &CloudConfig,
    url: &CloudUrl,
) -> Result<CloudConnection, ConnectError> {
    let irc_like = ConnectConfig {
        host: url.host.clone(),
        port: url.port,
        tls: url.tls,
        tls_fingerprint: cfg.tls_fingerprint.clone(),
        client_cert: None,
        connect_timeout: cfg.connect_timeout,
    };
    let tls_config = if url.tls {
        Some(Arc::new(tls::client_config(&irc_like).await?))
    } else {
        None
    };
    let tcp = connect_tcp(&url.host, url.port).await?;
    let peer = tcp.peer_addr().map_err(ConnectError::Io)?;
    tcp.set_nodelay(true).map_err(ConnectError::Io)?;
    let (io, info): (Pin<Box<dyn Io>>, _) = match tls_config {
        None => (Box::pin(tcp), None),
        Some(config) => {
            let name = tls::server_name(&irc_like, peer)?;
            let stream = TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(tls::handshake_error)?;
            let info = TlsInfo::from_connection(stream.get_ref().1);
            (Box::pin(stream), Some(info))
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(TRANSPORT_LIMIT))
        .max_frame_size(Some(TRANSPORT_LIMIT));
    let (ws, _) = tokio_tungstenite::client_async_with_config(cfg.url.as_str(), io, Some(config))
        .await
        .map_err(|e| {
            ConnectError::Io(std::io::Error::other(format!("WebSocket handshake: {e}")))
        })?;
    let (sink, stream) = ws.split();
    Ok(CloudConnection {
        reader: CloudReader(stream),
        writer: CloudWriter(sink),
        peer,
        tls: info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_strictly() {
        let u = parse_url("wss://cloud.example.net/rete").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (true, "cloud.example.net", 443, "/rete")
        );
        let u = parse_url("ws://127.0.0.1:8080").unwrap();
        assert_eq!((u.tls, u.port, u.path.as_str()), (false, 8080, "/"));
        assert_eq!(parse_url("ws://[::1]:9/").unwrap().host, "::1");
        assert!(parse_url("ws://localhost:9/").is_ok());
        for (bad, why) in [
            ("ws://cloud.example.net/", "loopback"),
            ("https://cloud.example.net/", "wss://"),
            ("wss://user@cloud.example.net/", "no user"),
            ("wss://cloud.example.net/?token=x", "no query"),
            ("wss://cloud.example.net:0/", "port"),
            ("wss://cloud.example.net:http/", "port"),
            ("wss:///", "no host"),
        ] {
            let e = parse_url(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(
                !e.contains("token=x"),
                "the error quotes no part of a query"
            );
        }
    }
}
