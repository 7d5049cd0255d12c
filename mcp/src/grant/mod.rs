//! Scoped grants (issue 33): extra bearer tokens that give an agent less
//! than the one full token does — some networks, some channels, queries only
//! when granted, and a tier (read, debug or send).
//!
//! The model has no I/O: what a grant covers ([`scope`]), the
//! `/control grant add` arguments that describe one ([`spec`]), the record a
//! host keeps for it, which holds the token's SHA-256 and never the token
//! ([`record`]), and the shared list the gate recognises tokens in
//! ([`grants`]). What a recognised grant may then see is decided in one
//! place, `read/reach.rs`; what it may send, in `send/grant_rule.rs`.

pub mod grants;
pub mod record;
pub mod scope;
pub mod spec;

pub use grants::{Granted, Grants, NameTaken, Principal};
pub use record::{GrantRecord, Presented};
pub use scope::{BufferRef, Scope};
pub use spec::{GrantSpec, SpecError, Tier};

/// The wall clock in Unix milliseconds, as grants' times are kept.
pub(crate) fn now_ms() -> i64 {
    rete_actors::wall_clock::now().0
}
