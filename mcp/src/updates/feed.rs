//! Raw and log subscriptions without I/O: where each one stands in the raw
//! taps and the log ring, what a poll must read, and how a poll's lines
//! become events.
//!
//! Neither ring has a change signal, so the registry actor polls them once
//! a second while a raw or log subscription exists (see [`super::actor`]),
//! reading only the taps and ring some subscription covers. Everything
//! here is fed what a poll read and the time.
//!
//! Starting points. A subscription's position in a ring is read when it is
//! made, before subscribe answers ([`Starts`]): the end of each covered
//! session's tap, and the log ring's end. Lines already there are history;
//! every line after is delivered or counted. A position that could not be
//! read then (the tap did not answer, the log read was stalled, no covered
//! session was running) is taken by the first poll that can read it, and
//! lines until that poll are history. A session that appears later, or a
//! new tap after a reconnect (its positions sort after every position of
//! the old tap), is read from its start. When control.debug goes off the
//! rings are cleared, so every position goes back to pending.

use super::{Event, Source};
use crate::debug::log::line::LogLine;
use crate::debug::raw::ring::{Pos, RawLine};
use crate::read::log::line_object;
use crate::read::raw::line_json;
use crate::read::result::encoded_len;
use rete_engine::ids::SessionId;
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// At most this many raw or log events are stored per subscription in any
/// rolling [`RATE_WINDOW`]; past it they are counted in `suppressed`.
pub(crate) const MAX_PER_WINDOW: usize = 200;

/// The rolling window of [`MAX_PER_WINDOW`].
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(60);

/// How often the rings are polled, at most.
pub(crate) const POLL_EVERY: Duration = Duration::from_secs(1);

/// Where a subscription stands in one session's raw tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawAt {
    /// Not read yet: the next poll that reads the tap takes its end.
    Pending,
    /// The tap was empty when read: every line in it is new.
    Fresh,
    /// Lines after this position are new.
    After(Pos),
}

/// Where a new subscription starts in the rings, read when it is made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Starts {
    /// Each running session its raw filter covers, with the end of its tap,
    /// or None when the tap did not answer. Empty (no such session, or no
    /// raw filter): the raw positions are still to be taken.
    pub(crate) raw: Vec<(SessionId, Option<Pos>)>,
    /// The log ring's end; None when it was not read (no log filter) or the
    /// read could not scan.
    pub(crate) log: Option<u64>,
    /// The capture's clear count when the reads began (see
    /// [`crate::debug::Capture::clears`]): positions read before a clear
    /// are of lines since cleared.
    pub(crate) clears: u64,
}

/// One subscription's standing in the rings, and its rate window.
#[derive(Debug, Default)]
pub(crate) struct Feed {
    /// True until a poll read some session's tap for it.
    raw_pending: bool,
    /// Per session read so far; a session not here appeared later and is
    /// read from its start.
    raw: HashMap<SessionId, RawAt>,
    /// The log ring: None until a log read that could scan took its end.
    log_after: Option<u64>,
    /// When each raw or log event stored in the last [`RATE_WINDOW`] was.
    stored: VecDeque<Instant>,
}

impl Feed {
    /// A feed whose starting points are all still to be taken.
    #[cfg(test)]
    pub(crate) fn new() -> Feed {
        Feed {
            raw_pending: true,
            ..Feed::default()
        }
    }

    /// A feed starting where `starts` says: each session read after its
    /// tap's end (pending where the tap did not answer), the log ring after
    /// its end. With no session's end read, every raw position is pending.
    pub(crate) fn starting(starts: &Starts) -> Feed {
        let raw = starts
            .raw
            .iter()
            .map(|(session, end)| (session.clone(), end.map_or(RawAt::Pending, RawAt::After)))
            .collect();
        Feed {
            raw_pending: starts.raw.is_empty(),
            raw,
            log_after: starts.log,
            stored: VecDeque::new(),
        }
    }

    /// The capture was cleared (debug off): every position is pending again.
    pub(crate) fn reset(&mut self) {
        self.raw_pending = true;
        self.raw.clear();
        self.log_after = None;
    }

    /// Where this subscription stands in `session`'s tap.
    pub(crate) fn raw_at(&self, session: &SessionId) -> RawAt {
        match self.raw.get(session) {
            Some(at) => *at,
            None if self.raw_pending => RawAt::Pending,
            None => RawAt::Fresh,
        }
    }

    /// The log ring position lines must be after; None: still pending.
    pub(crate) fn log_after(&self) -> Option<u64> {
        self.log_after
    }

    /// True when one more raw or log event may be stored at `now`; counts
    /// it in the window when so.
    pub(crate) fn admit(&mut self, now: Instant) -> bool {
        while self
            .stored
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= RATE_WINDOW)
        {
            self.stored.pop_front();
        }
        if self.stored.len() >= MAX_PER_WINDOW {
            return false;
        }
        self.stored.push_back(now);
        true
    }

    /// Takes the lines of `session`'s tap this subscription has not seen,
    /// oldest first, and moves its position to the newest line read. The
    /// answer says whether a line it would have read was dropped at the
    /// tap's capacity: `dropped_through`, the newest position the ring
    /// dropped, is after this subscription's (in its tap, or in a later
    /// one after a reconnect, which a sequence gap alone would not show).
    pub(crate) fn take_raw<'a>(
        &mut self,
        session: &SessionId,
        lines: &'a [RawLine],
        dropped_through: Option<Pos>,
    ) -> RawTake<'a> {
        let at = self.raw_at(session);
        let newest = lines.last().map(|l| l.pos);
        let (new, evicted): (&[RawLine], bool) = match at {
            RawAt::Pending => (&[], false),
            RawAt::Fresh => (lines, false),
            RawAt::After(pos) => {
                let first = lines.partition_point(|l| l.pos <= pos);
                (&lines[first..], dropped_through.is_some_and(|d| d > pos))
            }
        };
        let next = match (newest, at) {
            (Some(p), RawAt::After(old)) => RawAt::After(old.max(p)),
            (Some(p), _) => RawAt::After(p),
            (None, RawAt::Pending) => RawAt::Fresh,
            (None, other) => other,
        };
        self.raw.insert(session.clone(), next);
        RawTake {
            lines: new,
            evicted,
        }
    }

    /// True when a read of `session`'s tap that began after `after` (None:
    /// at its start) covers every line this subscription has not seen: it
    /// began at or before this subscription's position. A pending or fresh
    /// position needs the tap from its start.
    pub(crate) fn raw_read_covers(&self, session: &SessionId, after: Option<Pos>) -> bool {
        match (after, self.raw_at(session)) {
            (None, _) => true,
            (Some(read), RawAt::After(at)) => read <= at,
            (Some(_), RawAt::Pending | RawAt::Fresh) => false,
        }
    }

    /// A poll could not read `session`'s tap: while this subscription's
    /// starting points are still to be taken, that session's stays pending
    /// too (lines until the poll that can read it are history).
    pub(crate) fn keep_pending(&mut self, session: &SessionId) {
        if self.raw_pending {
            self.raw.entry(session.clone()).or_insert(RawAt::Pending);
        }
    }

    /// A poll read the raw taps: positions taken from now on are final,
    /// and a session first seen later is read from its start.
    pub(crate) fn raw_read_done(&mut self) {
        self.raw_pending = false;
    }

    /// Takes the log lines this subscription has not seen (a log read that
    /// could scan, of lines after some position at or before this one's),
    /// and moves its position to `through`, the newest seq the read
    /// covered. A pending subscription takes `through` as its start.
    pub(crate) fn take_log<'a>(
        &mut self,
        lines: &'a [std::sync::Arc<LogLine>],
        through: u64,
    ) -> &'a [std::sync::Arc<LogLine>] {
        let taken = match self.log_after {
            None => &lines[lines.len()..],
            Some(after) => &lines[lines.partition_point(|l| l.seq <= after)..],
        };
        self.log_after = Some(self.log_after.map_or(through, |a| a.max(through)));
        taken
    }
}

/// What [`Feed::take_raw`] took.
pub(crate) struct RawTake<'a> {
    /// The new lines, oldest first.
    pub(crate) lines: &'a [RawLine],
    /// A line between the old position and these was dropped at capacity.
    pub(crate) evicted: bool,
}

/// The event for a raw line of `session`.
pub(crate) fn raw_event(session: &SessionId, line: &RawLine, now: Instant) -> Event {
    let json = json!({"line": line_json(line), "session": session.as_str(), "type": "raw"});
    debug_event(Source::Raw, json, now)
}

/// The event for a log line.
pub(crate) fn log_event(line: &LogLine, now: Instant) -> Event {
    let json = json!({"line": line_object(line), "type": "log"});
    debug_event(Source::Log, json, now)
}

fn debug_event(source: Source, json: serde_json::Value, now: Instant) -> Event {
    Event {
        source,
        buffer_name: String::new(),
        from: "".into(),
        mention: false,
        collected: now,
        size: encoded_len(&json),
        json,
    }
}

#[cfg(test)]
mod tests;
