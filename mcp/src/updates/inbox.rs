//! One subscription's inbox: the events waiting to be read, the caps that
//! bound them, and the counters a read reports once.
//!
//! An inbox is plain state: the registry feeds it and [`super::render`]
//! reads it. Time is passed in, so the caps are testable without a clock.

use super::{Event, Source};
use rete_engine::ids::BufferId;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An inbox holds at most this many events; past it the oldest go first, so
/// an agent that stops reading costs a bounded amount of memory.
pub(crate) const MAX_EVENTS: usize = 500;

/// An inbox holds at most this many bytes of events (the sum of
/// [`Event::size`]), so long messages cannot slip past the event cap.
pub(crate) const MAX_BYTES: usize = 262_144;

/// Events older than this are dropped: an update an hour old is history, and
/// read_since still finds it while the buffer holds it.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(3600);

/// What one buffer had that is reported as a count, not as events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BufferCounters {
    /// The buffer's latest name, so a digest row can name a buffer that has
    /// counters but no event.
    pub(super) name: String,
    /// History rows counted and never delivered.
    pub(super) backfilled: u64,
    /// Messages not delivered because they held a secret.
    pub(super) withheld: u64,
    /// Part of the buffer could not be told live from history.
    pub(super) evicted: bool,
    /// The arrival number of the next event when this buffer first got a
    /// counter: it places the buffer among the events for a digest's order.
    pub(super) first: u64,
    /// Creation order among counters, to list them as they first appeared.
    order: u64,
}

/// The counters of a subscription's raw and log lines (the debug tier),
/// reported once by the read that removes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DebugCounters {
    /// Raw or log lines withheld as secrets.
    pub(crate) withheld: u64,
    /// A line the subscription would have read was dropped at a ring's
    /// capacity.
    pub(crate) evicted: bool,
    /// Raw or log events past 200 in a rolling minute, not stored.
    pub(crate) suppressed: u64,
}

impl DebugCounters {
    /// True when every counter is 0 or false.
    pub(crate) fn is_empty(&self) -> bool {
        self.withheld == 0 && !self.evicted && self.suppressed == 0
    }
}

/// The events and counters one subscription has not read yet.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    events: VecDeque<Arc<Event>>,
    /// Sum of the held events' sizes.
    bytes: usize,
    /// Arrival number the next pushed event gets; the front event's is
    /// `next_seq - events.len()` because events only leave from the front.
    next_seq: u64,
    dropped: u64,
    counters: HashMap<BufferId, BufferCounters>,
    next_order: u64,
    debug: DebugCounters,
    /// The last log read could not be scanned: a state, not a counter, so
    /// no read resets it; the next log read that can scan does.
    stalled: bool,
}

impl Inbox {
    /// An empty inbox.
    pub(crate) fn new() -> Inbox {
        Inbox::default()
    }

    /// Appends an event, then enforces the caps oldest first, so the newest
    /// updates survive a flood; every event dropped is counted in `dropped`.
    pub(crate) fn push(&mut self, event: Arc<Event>, now: Instant) {
        self.bytes = self.bytes.saturating_add(event.size);
        self.events.push_back(event);
        self.next_seq += 1;
        while self.over_cap(now) {
            self.drop_front();
        }
    }

    /// Drops events older than [`MAX_AGE`]; called before every read so a
    /// quiet inbox ages out too, not only one that receives events.
    pub(crate) fn expire(&mut self, now: Instant) {
        while self.front_too_old(now) {
            self.drop_front();
        }
    }

    /// Counts history rows of a buffer that were not delivered.
    pub(crate) fn add_backfilled(&mut self, buffer: &BufferId, name: &str, n: u64) {
        if n > 0 {
            self.update(buffer, name, |c| {
                c.backfilled = c.backfilled.saturating_add(n)
            });
        }
    }

    /// Counts messages of a buffer withheld because they held a secret.
    pub(crate) fn add_withheld(&mut self, buffer: &BufferId, name: &str, n: u64) {
        if n > 0 {
            self.update(buffer, name, |c| c.withheld = c.withheld.saturating_add(n));
        }
    }

    /// Records that part of a buffer could not be told live from history.
    pub(crate) fn mark_evicted(&mut self, buffer: &BufferId, name: &str) {
        self.update(buffer, name, |c| c.evicted = true);
    }

    /// The raw and log counters, to add to.
    pub(crate) fn debug_mut(&mut self) -> &mut DebugCounters {
        &mut self.debug
    }

    /// The raw and log counters not yet reported.
    pub(crate) fn debug(&self) -> &DebugCounters {
        &self.debug
    }

    /// Sets whether the last log read could not be scanned.
    pub(crate) fn set_stalled(&mut self, stalled: bool) {
        self.stalled = stalled;
    }

    /// True while the last log read could not be scanned.
    pub(crate) fn stalled(&self) -> bool {
        self.stalled
    }

    /// Removes every raw and log event (control.debug went off), counting
    /// each in `dropped`; message events stay, in order. Returns how many
    /// were removed.
    pub(crate) fn drop_debug_events(&mut self) -> usize {
        let before = self.events.len();
        let mut kept = VecDeque::with_capacity(before);
        for event in self.events.drain(..) {
            if matches!(event.source, Source::Message(_)) {
                kept.push_back(event);
            } else {
                self.bytes = self.bytes.saturating_sub(event.size);
            }
        }
        let removed = before - kept.len();
        self.events = kept;
        // Arrival numbers stay consistent: the front's is next_seq - len.
        self.dropped = self.dropped.saturating_add(removed as u64);
        removed
    }

    /// How many events are held (list_subscriptions' `pending`).
    pub(crate) fn pending(&self) -> usize {
        self.events.len()
    }

    /// Events dropped at a cap since the last read that reported them.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// True when an event is held: what ends a wait_for_updates.
    pub(crate) fn has_event(&self) -> bool {
        !self.events.is_empty()
    }

    /// True when a read would list this subscription: an event or any
    /// nonzero counter.
    pub(crate) fn has_report(&self) -> bool {
        self.has_event()
            || self.dropped > 0
            || !self.counters.is_empty()
            || !self.debug.is_empty()
            || self.stalled
    }

    /// The held events, oldest first.
    pub(super) fn events(&self) -> &VecDeque<Arc<Event>> {
        &self.events
    }

    /// The arrival number of the oldest held event.
    pub(super) fn head_seq(&self) -> u64 {
        self.next_seq - self.events.len() as u64
    }

    /// The buffers with counters, in the order they first got one.
    pub(super) fn counters_in_order(&self) -> Vec<(&BufferId, &BufferCounters)> {
        let mut list: Vec<_> = self.counters.iter().collect();
        list.sort_unstable_by_key(|(_, c)| c.order);
        list
    }

    /// One buffer's counters, if it has any.
    pub(super) fn counters_of(&self, buffer: &BufferId) -> Option<&BufferCounters> {
        self.counters.get(buffer)
    }

    /// Removes the `n` oldest events: a read delivered, summarised or
    /// skipped them.
    pub(super) fn drain_front(&mut self, n: usize) {
        for event in self.events.drain(..n.min(self.events.len())) {
            self.bytes = self.bytes.saturating_sub(event.size);
        }
    }

    /// Forgets `dropped` once a read reported it.
    pub(super) fn reset_dropped(&mut self) {
        self.dropped = 0;
    }

    /// Forgets one buffer's counters once a read reported them.
    pub(super) fn reset_counters(&mut self, buffer: &BufferId) {
        self.counters.remove(buffer);
    }

    /// Forgets every buffer's counters once a read reported their sums.
    pub(super) fn reset_all_counters(&mut self) {
        self.counters.clear();
    }

    /// Forgets the raw and log counters once a read reported them.
    pub(super) fn reset_debug(&mut self) {
        self.debug = DebugCounters::default();
    }

    /// Applies `change` to a buffer's counters, creating them (placed after
    /// everything already held) when the buffer had none.
    fn update(&mut self, buffer: &BufferId, name: &str, change: impl FnOnce(&mut BufferCounters)) {
        if let Some(c) = self.counters.get_mut(buffer) {
            change(c);
            if c.name != name {
                name.clone_into(&mut c.name);
            }
            return;
        }
        let mut c = BufferCounters {
            name: name.to_owned(),
            backfilled: 0,
            withheld: 0,
            evicted: false,
            first: self.next_seq,
            order: self.next_order,
        };
        change(&mut c);
        self.next_order += 1;
        self.counters.insert(buffer.clone(), c);
    }

    fn over_cap(&self, now: Instant) -> bool {
        self.events.len() > MAX_EVENTS || self.bytes > MAX_BYTES || self.front_too_old(now)
    }

    fn front_too_old(&self, now: Instant) -> bool {
        self.events
            .front()
            .is_some_and(|e| now.saturating_duration_since(e.collected) > MAX_AGE)
    }

    fn drop_front(&mut self) {
        if let Some(event) = self.events.pop_front() {
            self.bytes = self.bytes.saturating_sub(event.size);
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
