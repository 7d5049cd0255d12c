//! The Rete IRC engine: deterministic state machines with no I/O.
//!
//! The engine opens no sockets, spawns no tasks and never reads the OS clock:
//! the host feeds it lines and time ([`clock::Now`]) and drains what it wants
//! sent, what changed and when to call back. That keeps every protocol rule
//! testable with plain step tables, and lets any runtime drive it.
//!
//! A host embedding the engine starts with `rete-actors`' `Rete` facade, which runs each session
//! here behind actors and sockets; from this crate it uses the types that facade takes and hands
//! out: [`session::SessionConfig`], the read-only [`view::SessionView`], the sending interface
//! [`session::Commands`], and the [`event`], [`buffer`], [`row`] and [`ids`] types they speak in.
//! The rest (the tokenizer, the pacing, the protocol state) is the engine's own, public for the
//! project's hosts, tests and benchmarks.
//!
//! # Layout
//! - [`line`](mod@line): the IRC line tokenizer and serializer (IRCv3 tags).
//! - [`session`]: one network's state machine: registration, CAP, SASL,
//!   channels, members, messages, batches and history; its sending interface
//!   is [`session::Commands`].
//! - [`view`]: the read-only interface, [`view::SessionView`].
//! - [`state_dump`]: the session's state as named sections (engine_state).
//! - [`buffer`], [`row`]: stored conversations and their rows.
//! - [`mention`]: what counts as a mention of the person's nick (reterm's
//!   highlight and the control surface's mention events).
//! - [`members`], [`isupport`], [`casemap`], [`cap`], [`sasl`]: protocol state.
//! - [`flood`], [`who_queue`]: pacing of what the engine sends.
//! - [`ids`], [`clock`], [`event`], [`timefmt`]: identifiers, time, change
//!   notifications, timestamps.
#![deny(missing_docs)]

pub mod buffer;
pub mod cap;
pub mod casemap;
pub mod channel_modes;
pub mod clock;
pub mod event;
pub mod flood;
pub mod ids;
pub mod isupport;
pub mod lag;
pub mod line;
pub mod members;
pub mod mention;
pub mod row;
pub mod sasl;
pub mod session;
pub mod state_dump;
pub mod timefmt;
pub mod view;
pub mod who_queue;
