//! `rete-cloud`, the service: each user's IRC networks held as supervised
//! sessions of the engine, their rows stored with consecutive sequence
//! numbers, and ReteCloud clients attached over WebSocket (the protocol is
//! `rete-transports`' `retecloud/PROTOCOL.md`).
//!
//! # Layout
//! - [`store`]: the [`CloudStore`](store::CloudStore) trait; [`sqlite`] its
//!   default implementation.
//! - [`hub`]: the shared state: the store, the engine, per-user broadcast;
//!   the writer that stores each received line, then broadcasts it.
//! - `connection`: one client connection behind the protocol's gate,
//!   bound to one user after `auth`.
//! - [`ws`]: listen, TLS, WebSocket handshake, size limit, close codes.
//! - `ingest`: the bounded queue from the raw tap to the writer, and the
//!   gap a full queue leaves; `echo`: our own messages stored when the
//!   server does not echo them.
//! - `sync_lines`, `buffer_of`, [`tokens`]: small helpers.

mod buffer_of;
mod connection;
mod echo;
pub mod hub;
mod ingest;
pub mod sqlite;
pub mod store;
mod sync_lines;
pub mod tokens;
pub mod ws;
