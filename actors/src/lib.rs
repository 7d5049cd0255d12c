//! The Rete actor tree: supervised `ractor` actors around the engine.
//!
//! # Layout
//! - [`rete`]: the facade a host embeds ([`Rete`], [`SessionHandle`],
//!   [`SessionReader`], [`SessionSender`]).
//! - `supervisor`: the root supervisor; restarts a failed session actor with
//!   backoff, its engine state intact.
//! - `session_actor`: one actor per session; feeds the engine and drains it.
//! - `connection`: the connection task, the only code that touches a socket.
//! - [`hook`]: the raw-out hook an embedder registers.
//!
//! Actors never block or await long inside `handle`: connecting, reading and
//! writing happen in the connection task, which talks to its actor by message.
#![deny(missing_docs)]

mod connection;
pub mod hook;
pub mod rete;
mod session_actor;
mod supervisor;

pub use hook::{RawOutHook, Verdict};
pub use rete::{
    Rete, ReteError, ReteOptions, SessionHandle, SessionReader, SessionSender, SessionSpec,
};
pub use session_actor::SessionEvent;
