//! A digest entry: per buffer, how many events, how many mentions, who
//! spoke, and the buffer's counters.
//!
//! Buffers are listed in the order they first appeared, events and counters
//! interleaved as they arrived. When the budget cuts an entry it summarises
//! the longest prefix of that order that fits; the rest stays pending.

use super::{digits, Page, TRUNCATED_FLAG};
use crate::read::result::encoded_len;
use crate::updates::inbox::{BufferCounters, Inbox};
use crate::updates::{Event, Source, SubId};
use rete_engine::ids::BufferId;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A digest row names at most this many senders.
const MAX_SENDERS: usize = 10;

/// Places `id`'s digest entry on the page. Returns false when not even its
/// first buffer fits (nothing is removed and its counters stay).
pub(super) fn place(id: &SubId, inbox: &mut Inbox, page: &mut Page, peek: bool) -> bool {
    let room = page.room();
    let base = encoded_len(&Value::Object(frame(id, inbox)));
    let (value, len, reported, events) = {
        let units = units(inbox);
        let Some((summary, truncated)) = fit(inbox, &units, base, room) else {
            return false;
        };
        let len = summary.len + if truncated { TRUNCATED_FLAG } else { 0 };
        let reported: Vec<BufferId> = summary
            .rows
            .iter()
            .filter(|r| r.counters.is_some())
            .map(|r| r.buffer.clone())
            .collect();
        let events = summary.events;
        (
            summary.into_value(id, inbox, truncated),
            len,
            reported,
            events,
        )
    };
    page.push(value, len);
    if !peek {
        inbox.drain_front(events);
        for buffer in &reported {
            inbox.reset_counters(buffer);
        }
        inbox.reset_dropped();
        inbox.reset_debug();
    }
    true
}

/// One step of a digest: an event, or a buffer's counters at the point the
/// buffer first got one.
#[derive(Clone, Copy)]
enum Unit<'a> {
    Event(&'a Arc<Event>),
    Counters(&'a BufferId, &'a BufferCounters),
}

/// The inbox's events and counters merged in arrival order.
fn units(inbox: &Inbox) -> Vec<Unit<'_>> {
    let counters = inbox.counters_in_order();
    let mut pending = counters.into_iter().peekable();
    let mut out = Vec::with_capacity(inbox.pending() + pending.len());
    for (seq, event) in (inbox.head_seq()..).zip(inbox.events()) {
        while let Some((buffer, c)) = pending.next_if(|(_, c)| c.first <= seq) {
            out.push(Unit::Counters(buffer, c));
        }
        out.push(Unit::Event(event));
    }
    out.extend(pending.map(|(buffer, c)| Unit::Counters(buffer, c)));
    out
}

/// The summary to send and whether the budget cut it, or None when not
/// even one step fits. Sizes only grow as steps are added, so the walk
/// stops at the first step over `room`.
fn fit<'a>(
    inbox: &'a Inbox,
    units: &[Unit<'a>],
    base: usize,
    room: usize,
) -> Option<(Summary<'a>, bool)> {
    let mut summary = Summary::new(base);
    // The longest prefix that still fits with the entry's own truncated flag.
    let mut cut = 0;
    for (i, unit) in units.iter().enumerate() {
        summary.add(inbox, *unit);
        if summary.len > room {
            break;
        }
        if summary.len + TRUNCATED_FLAG <= room {
            cut = i + 1;
        }
    }
    let whole = summary.steps == units.len() && summary.len <= room;
    if whole {
        return Some((summary, false));
    }
    if cut == 0 {
        return None;
    }
    let mut prefix = Summary::new(base);
    for unit in &units[..cut] {
        prefix.add(inbox, *unit);
    }
    Some((prefix, true))
}

/// A digest entry being built, with its encoded size kept current.
struct Summary<'a> {
    rows: Vec<Row<'a>>,
    index: HashMap<&'a BufferId, usize>,
    /// The entry's encoded size, without a truncated flag.
    len: usize,
    /// Events summarised: the front of the inbox a non-peek read removes.
    events: usize,
    /// Units added.
    steps: usize,
    /// Raw and log events summarised.
    raw: u64,
    log: u64,
}

impl<'a> Summary<'a> {
    fn new(base: usize) -> Summary<'a> {
        Summary {
            rows: Vec::new(),
            index: HashMap::new(),
            len: base,
            events: 0,
            steps: 0,
            raw: 0,
            log: 0,
        }
    }

    fn add(&mut self, inbox: &'a Inbox, unit: Unit<'a>) {
        self.steps += 1;
        match unit {
            Unit::Event(event) => {
                match &event.source {
                    Source::Message(buffer) => {
                        let counters = inbox.counters_of(buffer);
                        let at = self.row(buffer, &event.buffer_name, counters);
                        let row = &mut self.rows[at];
                        let before = row.len();
                        row.count(event);
                        self.len += row.len() - before;
                    }
                    Source::Raw => self.len += count_growth(&mut self.raw),
                    Source::Log => self.len += count_growth(&mut self.log),
                }
                self.events += 1;
            }
            Unit::Counters(buffer, counters) => {
                self.row(buffer, &counters.name, Some(counters));
            }
        }
    }

    /// The index of `buffer`'s row, adding it (and its size) when new.
    fn row(
        &mut self,
        buffer: &'a BufferId,
        name: &'a str,
        counters: Option<&'a BufferCounters>,
    ) -> usize {
        if let Some(&at) = self.index.get(buffer) {
            return at;
        }
        let row = Row::new(buffer, name, counters);
        self.len += usize::from(!self.rows.is_empty()) + row.len();
        self.index.insert(buffer, self.rows.len());
        self.rows.push(row);
        self.rows.len() - 1
    }

    fn into_value(self, id: &SubId, inbox: &Inbox, truncated: bool) -> Value {
        let mut entry = frame(id, inbox);
        let rows = self.rows.iter().map(Row::to_value).collect();
        entry.insert("buffers".into(), Value::Array(rows));
        for (key, n) in [("raw", self.raw), ("log", self.log)] {
            if n > 0 {
                entry.insert(key.into(), Value::from(n));
            }
        }
        if truncated {
            entry.insert("truncated".into(), Value::Bool(true));
        }
        Value::Object(entry)
    }
}

/// What one more raw or log event adds to the entry: `,"raw":1` (7 bytes
/// and a digit) for the first, a digit when the count gains one.
fn count_growth(n: &mut u64) -> usize {
    let before = if *n == 0 { 0 } else { 7 + digits(*n) };
    *n += 1;
    7 + digits(*n) - before
}

/// The entry with no buffers and no raw or log counts: its id, dropped,
/// and the raw and log counters (each omitted when 0 or false).
fn frame(id: &SubId, inbox: &Inbox) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("subscription".into(), Value::from(id.as_str()));
    entry.insert("buffers".into(), Value::Array(Vec::new()));
    if inbox.dropped() > 0 {
        entry.insert("dropped".into(), Value::from(inbox.dropped()));
    }
    let debug = inbox.debug();
    for (key, n) in [
        ("suppressed", debug.suppressed),
        ("withheld", debug.withheld),
    ] {
        if n > 0 {
            entry.insert(key.into(), Value::from(n));
        }
    }
    if debug.evicted {
        entry.insert("evicted".into(), Value::Bool(true));
    }
    if inbox.stalled() {
        entry.insert("stalled".into(), Value::Bool(true));
    }
    entry
}

/// One buffer's line in a digest.
struct Row<'a> {
    buffer: &'a BufferId,
    /// The name the buffer had where it first appears in this summary (a
    /// buffer's id comes from its folded name, so only its case can differ).
    name: &'a str,
    counters: Option<&'a BufferCounters>,
    new: u64,
    mentions: u64,
    /// Distinct senders as first spelled, and lower-cased to compare.
    from: Vec<Value>,
    seen: Vec<String>,
    /// Encoded size of `from`'s items and their commas.
    from_len: usize,
    /// Encoded size of the row with no events and no senders.
    base: usize,
}

impl<'a> Row<'a> {
    fn new(buffer: &'a BufferId, name: &'a str, counters: Option<&'a BufferCounters>) -> Row<'a> {
        let mut row = Row {
            buffer,
            name,
            counters,
            new: 0,
            mentions: 0,
            from: Vec::new(),
            seen: Vec::new(),
            from_len: 0,
            base: 0,
        };
        row.base = encoded_len(&row.to_value());
        row
    }

    /// The row's encoded size: the empty row, plus what each count's extra
    /// digits and each sender add.
    fn len(&self) -> usize {
        self.base + digits(self.new) - 1 + digits(self.mentions) - 1 + self.from_len
    }

    fn count(&mut self, event: &Event) {
        self.new += 1;
        if event.mention {
            self.mentions += 1;
        }
        if self.from.len() >= MAX_SENDERS || event.from.is_empty() {
            return;
        }
        let lower = event.from.as_str().to_lowercase();
        if self.seen.contains(&lower) {
            return;
        }
        let sender = Value::from(&*event.from);
        self.from_len += usize::from(!self.from.is_empty()) + encoded_len(&sender);
        self.from.push(sender);
        self.seen.push(lower);
    }

    fn to_value(&self) -> Value {
        let mut row = Map::new();
        row.insert("buffer".into(), Value::from(self.buffer.as_str()));
        row.insert("name".into(), Value::from(self.name));
        row.insert("new".into(), Value::from(self.new));
        row.insert("mentions".into(), Value::from(self.mentions));
        row.insert("from".into(), Value::Array(self.from.clone()));
        if let Some(c) = self.counters {
            if c.backfilled > 0 {
                row.insert("backfilled".into(), Value::from(c.backfilled));
            }
            if c.withheld > 0 {
                row.insert("withheld".into(), Value::from(c.withheld));
            }
            if c.evicted {
                row.insert("evicted".into(), Value::Bool(true));
            }
        }
        Value::Object(row)
    }
}
