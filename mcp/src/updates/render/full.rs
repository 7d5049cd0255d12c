//! A full entry: the events themselves, oldest first, with the
//! subscription's counters summed over its buffers.

use super::{alone_room, digits, Page};
use crate::read::result::encoded_len;
use crate::updates::inbox::Inbox;
use crate::updates::SubId;
use serde_json::{Map, Value};

/// `,"skipped":` — what a skipped count adds before its digits.
const SKIPPED_KEY: usize = 11;

/// Places `id`'s full entry on the page. Returns false when it is left out:
/// its frame does not fit, or none of its events fits (nothing is removed
/// and its counters stay for the next read).
pub(super) fn place(
    id: &SubId,
    inbox: &mut Inbox,
    limit: usize,
    page: &mut Page,
    peek: bool,
) -> bool {
    let limit = limit.clamp(1, crate::updates::inbox::MAX_EVENTS);
    let room = page.room();
    let mut entry = frame(id, inbox);
    // Measured with "truncated":false, the longer of the two values.
    entry.insert("truncated".into(), Value::Bool(false));
    let base = encoded_len(&Value::Object(entry.clone()));
    if base > room {
        return false;
    }
    let walk = walk(inbox, limit, base, room);
    if walk.walked == 0 && inbox.has_event() {
        return false;
    }
    let pending_after = inbox.pending() - walk.walked;
    let truncated = pending_after > 0 || (peek && walk.skipped > 0);
    let len = base - usize::from(truncated) + walk.events_len + skipped_len(walk.skipped);
    entry.insert("truncated".into(), Value::Bool(truncated));
    if walk.skipped > 0 {
        entry.insert("skipped".into(), Value::from(walk.skipped));
    }
    entry.insert("events".into(), Value::Array(walk.events));
    page.push(Value::Object(entry), len);
    if !peek {
        inbox.drain_front(walk.walked);
        inbox.reset_all_counters();
        inbox.reset_dropped();
        inbox.reset_debug();
    }
    true
}

/// What a walk over the inbox took for this page.
struct Walk {
    /// The events delivered, oldest first.
    events: Vec<Value>,
    /// Their encoded size inside the list, commas included.
    events_len: usize,
    /// Events stepped over because no page could hold one alone.
    skipped: u64,
    /// How many events from the front were delivered or skipped: what a
    /// non-peek read removes.
    walked: usize,
}

/// Takes events from the front while they fit in `room` next to an entry
/// frame of `base` bytes and `limit` is not reached, skipping (and
/// counting) any too large for a page of its own.
fn walk(inbox: &Inbox, limit: usize, base: usize, room: usize) -> Walk {
    let alone = alone_room();
    let mut w = Walk {
        events: Vec::new(),
        events_len: 0,
        skipped: 0,
        walked: 0,
    };
    for event in inbox.events() {
        if w.events.len() >= limit {
            break;
        }
        let fixed = base + w.events_len;
        if base.saturating_add(event.size) > alone {
            // The skipped count itself must fit, or the entry would grow
            // past what it was measured at.
            if fixed + skipped_len(w.skipped + 1) > room {
                break;
            }
            w.skipped += 1;
        } else {
            let comma = usize::from(!w.events.is_empty());
            if fixed + skipped_len(w.skipped) + comma + event.size > room {
                break;
            }
            w.events_len += comma + event.size;
            w.events.push(event.json.clone());
        }
        w.walked += 1;
    }
    w
}

/// The entry's keys other than events, truncated and skipped: the id and
/// the counters, each omitted when 0 or false.
fn frame(id: &SubId, inbox: &Inbox) -> Map<String, Value> {
    let (mut backfilled, mut withheld, mut evicted) = (0u64, 0u64, false);
    for (_, c) in inbox.counters_in_order() {
        backfilled = backfilled.saturating_add(c.backfilled);
        withheld = withheld.saturating_add(c.withheld);
        evicted |= c.evicted;
    }
    let debug = inbox.debug();
    withheld = withheld.saturating_add(debug.withheld);
    evicted |= debug.evicted;
    let mut entry = Map::new();
    entry.insert("subscription".into(), Value::from(id.as_str()));
    entry.insert("events".into(), Value::Array(Vec::new()));
    let counts = [
        ("backfilled", backfilled),
        ("withheld", withheld),
        ("dropped", inbox.dropped()),
        ("suppressed", debug.suppressed),
    ];
    for (key, n) in counts {
        if n > 0 {
            entry.insert(key.into(), Value::from(n));
        }
    }
    if evicted {
        entry.insert("evicted".into(), Value::Bool(true));
    }
    if inbox.stalled() {
        entry.insert("stalled".into(), Value::Bool(true));
    }
    entry
}

/// What a skipped count of `n` adds to an entry (nothing when 0).
fn skipped_len(n: u64) -> usize {
    if n == 0 {
        0
    } else {
        SKIPPED_KEY + digits(n)
    }
}
