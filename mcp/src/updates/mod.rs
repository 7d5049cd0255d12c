//! Live updates: subscriptions, their inboxes, and the waits on them.
//!
//! An agent subscribes to what it wants to notice (a mention, a query, one
//! person), Rete collects only matching live messages into that
//! subscription's inbox, and the agent drains it with read_updates or blocks
//! on it with wait_for_updates. Nothing is pushed.
//!
//! The pieces, outside in:
//! - [`Updates`] (`handle.rs`): what tools call. Every call is an
//!   ask-message to the registry actor; a wait parks its reply port there and
//!   is cancelled with the request.
//! - the registry actor (`actor.rs`): owns the state below, pumps session
//!   events while any subscription exists, runs one collection batch per
//!   session at a time, and never awaits inside `handle`.
//! - `batch`: the closure one collection batch runs inside the session
//!   actor, and what it brings back.
//! - sans-IO state: `filter` (arguments → a normalised filter, and matching
//!   a row; the nick-boundary rule is the engine's
//!   [`rete_engine::mention`]), `collector` (a session's
//!   pending changes and batch timing), `inbox` (caps and counters),
//!   `render` (digest and full reads under the budget), `registry`
//!   (subscriptions, limits, starting points, live versus history, idle
//!   expiry), all fed the time by `clock`, which tests can move.

#[doc(hidden)] // For the project's tests and benches.
pub mod actor;
pub(crate) mod batch;
pub(crate) mod clock;
pub(crate) mod collector;
pub(crate) mod feed;
pub(crate) mod filter;
pub(crate) mod handle;
pub(crate) mod inbox;
pub(crate) mod poll;
pub(crate) mod registry;
pub(crate) mod render;

#[doc(hidden)] // For the project's tests and benches.
pub use clock::ShiftedClock;
pub use clock::SystemClock;
pub use handle::Updates;

use crate::grant::Principal;
use crate::read::reach::Reach;
use rete_engine::ids::BufferId;
use rete_engine::row::CompactString;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most this many subscriptions exist at once, across all clients.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 16;

/// A subscription no subscribe, read_updates or wait_for_updates touched for
/// this long is removed.
pub(crate) const IDLE_EXPIRY: Duration = Duration::from_secs(900);

/// How often the registry sweeps for idle subscriptions while it runs.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// At most this many wait_for_updates are parked at once.
pub(crate) const MAX_WAITS: usize = 2;

/// At most this many of the [`MAX_SUBSCRIPTIONS`] belong to one scoped
/// grant.
pub(crate) const MAX_GRANT_SUBSCRIPTIONS: usize = 4;

/// At most this many belong to grants together, so grants never take the
/// last places from the person's full token.
pub(crate) const MAX_GRANTS_SUBSCRIPTIONS: usize = 12;

/// At most this many of the [`MAX_WAITS`] are parked for grants together:
/// one place is always the full token's.
pub(crate) const MAX_GRANTS_WAITS: usize = 1;

/// Who a subscription belongs to. Only its owner lists, reads, waits on or
/// removes it; to anyone else its id is unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The full token.
    #[default]
    Full,
    /// One scoped grant, by its token's digest.
    Grant(Arc<str>),
}

impl Owner {
    /// The owner a request from `principal` acts as.
    pub(crate) fn of(principal: &Principal) -> Owner {
        match principal {
            Principal::Full => Owner::Full,
            Principal::Grant(g) => Owner::Grant(g.key.clone()),
        }
    }
}

/// A new subscription's owner and what it may collect: the reach of the
/// request that made it, kept for its whole life.
#[derive(Clone, Debug, Default)]
pub(crate) struct Holder {
    /// Who it belongs to.
    pub(crate) owner: Owner,
    /// What it may collect.
    pub(crate) reach: Reach,
}

impl Holder {
    /// The holder for a request's context.
    pub(crate) fn of(ctx: &crate::tools::ToolContext) -> Holder {
        Holder {
            owner: Owner::of(&ctx.principal),
            reach: ctx.reach.clone(),
        }
    }
}

/// A subscription's id: `sub_` and 12 lower-case hexadecimal digits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubId(String);

impl SubId {
    /// An id from 48 random bits.
    pub(crate) fn from_bits(bits: u64) -> SubId {
        SubId(format!("sub_{:012x}", bits & 0xffff_ffff_ffff))
    }

    /// The id a client sent, when it is well-formed. A malformed id names no
    /// subscription, so callers answer it as `unknown subscription`.
    pub(crate) fn parse(s: &str) -> Option<SubId> {
        let hex = s.strip_prefix("sub_")?;
        let ok = hex.len() == 12 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        ok.then(|| SubId(s.to_owned()))
    }

    /// The id as sent on the wire.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SubId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an event is: a message in a buffer, or (debug tier) a raw line or
/// a log line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Source {
    /// A message in this buffer.
    Message(BufferId),
    /// A raw line of a session's tap.
    Raw,
    /// One of Rete's own log lines.
    Log,
}

/// One collected event, shared by every inbox it went into.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    /// What it is, and for a message the buffer it is in.
    pub(crate) source: Source,
    /// The buffer's name when it was collected ("" when none is known, and
    /// for raw and log events).
    pub(crate) buffer_name: String,
    /// The sender nick as stored (the message object's `from`).
    pub(crate) from: CompactString,
    /// True when it mentioned the session's nick when it was matched.
    pub(crate) mention: bool,
    /// When it was collected, for the inbox's one-hour limit.
    pub(crate) collected: Instant,
    /// The full-mode event object:
    /// `{"buffer","message":{…message object…},"type":"message"}`,
    /// `{"line":{…raw line…},"session","type":"raw"}` or
    /// `{"line":{…log line…},"type":"log"}`.
    pub(crate) json: Value,
    /// `json`'s encoded size in bytes, for the inbox's byte cap and the budget.
    pub(crate) size: usize,
}
