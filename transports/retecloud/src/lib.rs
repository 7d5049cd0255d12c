//! ReteCloud: the frame protocol between a client and the `rete-cloud`
//! service, and its I/O-free core.
//!
//! The protocol is written down in the crate's `PROTOCOL.md`; this
//! crate is its implementation without any I/O: no tokio, no socket, no
//! clock. It depends on no runtime, so the compiler holds it to that. The state machines are fed frames and time (milliseconds as
//! arguments) and answer with frames to send and actions for their host, so
//! the WebSocket transport and the service are thin loops around them.
//!
//! # Layout
//! - [`frame`]: the frame types ([`ClientFrame`], [`ServerFrame`]), closed.
//! - [`config`]: a network's settings in `config_update` and `config`.
//! - [`secret`]: [`Token`], [`Secret`] and [`IrcLine`], whose `Debug` shows
//!   no secret.
//! - [`error_code`]: the stable [`ErrorCode`]s.
//! - [`codec`]: text message ⇄ frame, the size limit, a code for every bad input.
//! - `allowance`: the request token bucket the service enforces and the
//!   client keeps under.
//! - [`client`]: the client's side of a connection ([`CloudClient`]): auth,
//!   resume, heartbeat, reconnect decision, token stored before it is acknowledged.
//! - [`cursor`]: a reader's place in a stream of consecutive rows.
//!
//! With the `service` feature (only the `rete-cloud` service enables it, so
//! a client does not compile the service's side):
//! - `replay`: the replay planner (resume point → rows to send) and the
//!   per-stream feed that merges replay with live rows.
//! - `server`: the service's side of a connection (`ServerConnection`):
//!   the gate for bad input (auth first, error codes, fatal or not), heartbeats,
//!   the rotation in flight; `SentIds`, send de-duplication across connections.
//! - `token_chain`: the service's token chain (hashes only, rotation,
//!   grace, reuse revokes).

#![deny(missing_docs)]

mod allowance;
pub mod client;
pub mod codec;
pub mod config;
pub mod cursor;
pub mod error_code;
pub mod frame;
#[cfg(feature = "service")]
pub mod replay;
pub mod secret;
#[cfg(feature = "service")]
pub mod server;
#[cfg(feature = "service")]
pub mod token_chain;

pub use client::{Action, CloudClient};
pub use codec::{
    decode_client, decode_server, encode_client, encode_server, FrameError, MAX_FRAME_BYTES,
};
pub use error_code::ErrorCode;
pub use frame::{ClientFrame, ServerFrame};
pub use secret::{IrcLine, Secret, Token};
#[cfg(feature = "service")]
pub use server::{SentIds, ServerAction, ServerConnection};

/// The protocol version this implementation speaks.
pub const PROTOCOL_VERSION: u32 = 1;
