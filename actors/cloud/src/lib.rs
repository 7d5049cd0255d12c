//! `rete-cloud`, the service: each user's IRC networks held as supervised
//! sessions of the engine, their rows stored with consecutive sequence
//! numbers, and ReteCloud clients attached over WebSocket (the protocol is
//! the `rete-cloud-protocol` crate, written down in its `PROTOCOL.md`).
//!
//! The binary (`src/main.rs`) is the command line: `serve` and the admin
//! subcommands, on top of this library. Only this crate depends on SQLite,
//! PostgreSQL, the WebSocket server, clap and tracing-subscriber; the
//! protocol's service side comes from `rete-cloud-protocol`'s `service`
//! feature.
//!
//! # Layout
//! - [`store`]: the [`CloudStore`](store::CloudStore) trait; [`sqlite`] its
//!   default implementation, [`postgres`] the same on PostgreSQL;
//!   [`location`] which of them `--db` names; [`copy`] a whole store into
//!   another (`migrate`, a PostgreSQL store's backup).
//! - [`hub`]: the shared state: the store, the engine, per-user broadcast;
//!   the writer that stores each received line, then broadcasts it.
//! - `connection`: one client connection behind the protocol's gate,
//!   bound to one user after `auth`.
//! - [`ws`]: listen, TLS, WebSocket handshake, size limit, close codes.
//! - [`admission`]: the connection budget (unauthenticated connections per
//!   address and in all, clients per user, failed authentications per
//!   address) and the log throttle, I/O-free.
//! - `ingest`: the bounded queue from the raw tap to the writer, and the
//!   gap a full queue leaves; `echo`: our own messages stored when the
//!   server does not echo them.
//! - [`ownership`]: one owner per network: lease arithmetic and the fence
//!   that silences a node past its lease.
//! - [`serve_lock`]: one `serve` per SQLite file.
//! - `sends`: a client's lines on their way to IRC, each acknowledged once
//!   written, a repeat of its id sharing the first one's outcome.
//! - `sync_lines`, `buffer_of`, [`tokens`]: small helpers.
#![deny(missing_docs)]

pub mod admission;
mod buffer_of;
mod connection;
pub mod copy;
mod echo;
pub mod hub;
mod ingest;
pub mod location;
pub mod ownership;
pub mod postgres;
mod sends;
pub mod serve_lock;
pub mod sqlite;
pub mod store;
mod sync_lines;
pub mod tokens;
pub mod ws;
