//! One read_updates / wait_for_updates answer: digest or full entries for
//! the subscriptions with something to report, under the 60,000-byte budget.
//!
//! Every size is counted as the page is built — from each event's
//! precomputed `size` and small frames measured once — so a page costs
//! O(events) however many events are offered, never a re-encode per event.
//! The page always reserves room for its top-level `"truncated":true`, like
//! [`crate::read::result::RowBudget`], so it never overshoots.

mod digest;
mod full;

use super::inbox::Inbox;
use super::SubId;
use crate::read::result::{encoded_len, BUDGET};
use serde_json::{Map, Value};

/// How much of each inbox a read returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Per-buffer counts and senders: cheap to read, and the default.
    Digest,
    /// The events themselves, at most `limit` per subscription (the caller
    /// has clamped it to 1…500).
    Full {
        /// Events per subscription.
        limit: usize,
    },
}

/// One subscription a read covers.
#[derive(Debug)]
pub(crate) struct Target<'a> {
    /// Its id, as the entry names it.
    pub(crate) id: &'a SubId,
    /// Its inbox, which a non-peek read drains.
    pub(crate) inbox: &'a mut Inbox,
}

/// Reads the targets (in creation order) into one result object:
/// `{"updates":[…],"truncated"?:true,"untrusted":true}`. The caller adds
/// `timed_out`. Unless `peek`, what is returned is removed and the counters
/// reported are reset, so each is reported once.
pub(crate) fn read(targets: &mut [Target<'_>], detail: Detail, peek: bool) -> Value {
    read_measured(targets, detail, peek).0
}

/// [`read`], also returning the size the page counted for itself (with the
/// top-level truncated flag always reserved), so tests can hold the
/// bookkeeping to the real encoding.
fn read_measured(targets: &mut [Target<'_>], detail: Detail, peek: bool) -> (Value, usize) {
    let mut page = Page::new();
    for target in targets.iter_mut() {
        if !target.inbox.has_report() {
            continue;
        }
        let placed = match detail {
            Detail::Digest => digest::place(target.id, target.inbox, &mut page, peek),
            Detail::Full { limit } => full::place(target.id, target.inbox, limit, &mut page, peek),
        };
        if !placed {
            // Left out whole: say so, and keep trying smaller later entries.
            page.truncated = true;
        }
    }
    let used = page.used;
    (page.finish(), used)
}

/// `,"truncated":true` — what the flag adds to an object that has other keys.
const TRUNCATED_FLAG: usize = 17;

/// The result being built: its entries and the bytes they take.
struct Page {
    entries: Vec<Value>,
    /// Encoded size so far, counting the top-level truncated flag.
    used: usize,
    truncated: bool,
}

impl Page {
    fn new() -> Page {
        Page {
            entries: Vec::new(),
            used: frame(),
            truncated: false,
        }
    }

    /// The bytes the next entry may take, after its separating comma.
    fn room(&self) -> usize {
        BUDGET.saturating_sub(self.used + usize::from(!self.entries.is_empty()))
    }

    /// Adds an entry whose encoded size is `len` (at most [`Page::room`]).
    fn push(&mut self, entry: Value, len: usize) {
        self.used += usize::from(!self.entries.is_empty()) + len;
        self.entries.push(entry);
    }

    fn finish(self) -> Value {
        let mut out = Map::new();
        if self.truncated {
            out.insert("truncated".into(), Value::Bool(true));
        }
        out.insert("untrusted".into(), Value::Bool(true));
        out.insert("updates".into(), Value::Array(self.entries));
        Value::Object(out)
    }
}

/// The empty page as if it were cut: what every page reserves.
fn frame() -> usize {
    let mut out = Map::new();
    out.insert("truncated".into(), Value::Bool(true));
    out.insert("untrusted".into(), Value::Bool(true));
    out.insert("updates".into(), Value::Array(Vec::new()));
    encoded_len(&Value::Object(out))
}

/// The bytes an entry may take when it is alone on a page: the test for an
/// event no page could ever hold.
fn alone_room() -> usize {
    BUDGET.saturating_sub(frame())
}

/// Decimal digits of `n`, to follow a count's encoded size as it grows.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests;
