//! Scoped grants (issue 33, under way): extra bearer tokens that give an
//! agent less than the one full token does — some networks, some channels,
//! queries only when granted, and a tier (read, debug or send).
//!
//! What is here so far is the model, with no I/O: what a grant covers
//! ([`scope`]), the `/control grant add` arguments that describe one
//! ([`spec`]), and the record a host keeps for it, which holds the token's
//! SHA-256 and never the token ([`record`]). Nothing serves a grant yet:
//! the gate accepts only the full token until every tool and subscription
//! answers through a scope.

pub mod record;
pub mod scope;
pub mod spec;

pub use record::{GrantRecord, Presented};
pub use scope::{BufferRef, Scope};
pub use spec::{GrantSpec, SpecError, Tier};
