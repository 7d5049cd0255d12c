//! I/O that carries IRC lines for the Rete engine: TCP or TLS connections split into a line reader and a line
//! writer, plus the backoff that paces reconnects. The engine itself never touches sockets; the session actor
//! owns the reconnect loop and uses these pieces.
//!
//! A host embedding the engine starts with `rete-actors`' `Rete` facade and needs from this crate only
//! what a session is given: its [`Transport`] ([`ConnectConfig`] for IRC, [`CloudConfig`] and a
//! [`CloudTokenStore`] for ReteCloud) and its reconnect [`Backoff`]. Connecting and the ReteCloud
//! protocol's state machines are the session actor's, public for its use and for tests.
//!
//! # Layout
//! - [`connect`](mod@connect): resolve, TCP connect, optional TLS, split into [`LineReader`] / [`LineWriter`].
//! - [`tls`]: trust (system roots or a pinned SHA-256 fingerprint), client certificates, [`TlsInfo`].
//! - [`lines`]: the IRC line codec (CRLF / LF / CR endings, Latin-1 fallback, overlong lines dropped) and the
//!   reader and writer halves.
//! - [`transport`]: which wire a session speaks over ([`Transport`], [`TransportKind`]).
//! - [`websocket`]: the ReteCloud client's WebSocket (TCP, TLS as above, one frame per text message), its
//!   settings ([`CloudConfig`]) and the token store the host provides ([`CloudTokenStore`]).
//! - [`backoff`]: exponential reconnect delays with jitter.
//!
//! The ReteCloud frame protocol and its I/O-free state machines are the `rete-cloud-protocol` crate
//! (`transports/retecloud/`); [`websocket`] carries its frames.
#![deny(missing_docs)]

pub mod backoff;
pub mod connect;
pub mod lines;
pub mod tls;
pub mod transport;
pub mod websocket;

pub use backoff::{Backoff, HEALTHY_AFTER};
pub use connect::{connect, ConnectConfig, ConnectError, Connection};
pub use lines::{LineReader, LineWriter, MAX_LINE_LEN};
pub use tls::{parse_fingerprint, TlsInfo};
pub use transport::{Transport, TransportKind};
pub use websocket::{
    CloudConfig, CloudResumeStore, CloudTokenStore, ResumeStoreError, TokenStoreError, TokenStored,
};
