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
//!
//! # Running it
//! The README lists the commands; what they promise is here.
//!
//! **Databases.** `--db` is a SQLite file (created when missing) or a
//! `postgresql://` URL whose tables the service creates; every subcommand
//! works on both. The PostgreSQL connection is not encrypted: keep the
//! database on loopback or a private network. `migrate` copies a whole
//! database into one holding no user yet, in one transaction (stop the
//! service first); `backup` of PostgreSQL writes a SQLite file.
//!
//! **Several nodes** (PostgreSQL, `--node NAME`): each network is held by
//! one node at a time through a lease renewed every second ([`ownership`]).
//! When a node dies another connects its networks within seconds, and each
//! channel gets a row saying how long it was away; a node that cannot
//! reach the database leaves IRC, unsaid, before its lease could end, so
//! the IRC server never sees a network twice. A client may attach to any
//! node: rows arrive through the database's notifications, sends through
//! its outbox (taken by the holder within 30 s, acknowledged once written),
//! and each holder publishes its networks' state every two seconds. A node
//! joining later takes its share: the others QUIT the excess ("Moving to
//! another server") and it connects them.
//!
//! **Admin while serving.** The service looks in the database every
//! `--admin-poll-ms`, connects networks added, QUITs networks removed (and
//! tells attached clients), and reconnects a network whose server, TLS,
//! nick or channels `network set` changed. A bad name, nick, channel or
//! server is refused with a failing exit status and nothing changed.
//!
//! **Exposed to the internet.** A connection must authenticate within the
//! auth timeout of its accept; connections not yet authenticated are capped
//! per address (an IPv6 /64 is one) and in all, attached clients per user;
//! an address whose tokens keep failing is refused for a while
//! ([`admission`]). Out of descriptors it waits rather than spins; trouble
//! is logged at most every ten seconds, never with a token. One `serve` per
//! SQLite file ([`serve_lock`]). SIGTERM stops it as Ctrl-C does: clients
//! are told `shutting_down`, each network quits IRC, every line received is
//! stored, and it exits 0.
//!
//! **Durability.** Rows are written in batches, one transaction each (WAL,
//! `synchronous = NORMAL` on SQLite); a row a client was sent is committed.
//! A full ingest queue (`--ingest-queue`) drops a network's lines until it
//! drains and stores one row saying how many. A `send_ack` means the line
//! was written to IRC, so after a crash a client resends what was not
//! acknowledged, and each line reaches IRC once (`sends`). A network back on
//! IRC after an absence gets a row per channel saying from when to when
//! lines were not received.
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
