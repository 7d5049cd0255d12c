//! The registry's side of raw and log subscriptions: what a poll must read,
//! what its lines become, and what debug going off removes. The reads
//! themselves are the actor's ([`crate::updates::actor`]); positions and
//! the rate window are [`crate::updates::feed`]'s.

use super::Registry;
use crate::debug::attribution::{log_lines_visible, RawScreen, SessionFacts};
use crate::debug::log::ring::Snapshot;
use crate::debug::raw::ring::{Pos, RawLine};
use crate::read::log::withholds;
use crate::read::raw::withheld;
use crate::read::withheld::Withholder;
use crate::updates::feed::{log_event, raw_event, RawAt};
use rete_engine::ids::SessionId;
use std::sync::Arc;
use std::time::Instant;

/// What one poll reads: each covered session's tap (after this position,
/// None: from its oldest line), and the log ring after this seq (None: not
/// read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PollPlan {
    /// Running sessions some raw subscription covers.
    pub(crate) raw: Vec<(SessionId, Option<Pos>)>,
    /// The log ring, when some log subscription exists.
    pub(crate) log: Option<u64>,
}

/// One session's tap as a poll read it: its secret scan, its lines, and
/// the newest position its ring dropped at capacity.
pub(crate) type TapRead = (Withholder, Vec<RawLine>, Option<Pos>);

/// One planned session's tap as a poll read it.
#[derive(Debug)]
pub(crate) struct TapPoll {
    /// The session.
    pub(crate) session: SessionId,
    /// The position the read began after, as planned (None: the tap's
    /// start).
    pub(crate) after: Option<Pos>,
    /// Its secret scan and lines, or None when the session or its tap did
    /// not answer.
    pub(crate) read: Option<TapRead>,
    /// The session as the read found it, which a scoped subscription's
    /// reach judges its lines by (None when it did not answer).
    pub(crate) facts: Option<SessionFacts>,
}

/// The log ring as a poll read it.
#[derive(Debug)]
pub(crate) struct LogPoll {
    /// The seq the read was planned after.
    pub(crate) planned: u64,
    /// The seq it was read after: the planned one, or the capture's window
    /// start when that is later (no line of this capture is before it).
    pub(crate) after: u64,
    /// What it read.
    pub(crate) snapshot: Snapshot,
}

/// What a poll read.
#[derive(Debug, Default)]
pub(crate) struct PollData {
    /// Per planned session, its tap's read.
    pub(crate) raw: Vec<TapPoll>,
    /// The log read (None: not read).
    pub(crate) log: Option<LogPoll>,
    /// The capture's clear count when the poll began (see
    /// [`crate::debug::Capture::clears`]).
    pub(crate) clears: u64,
}

impl Registry {
    /// True when some subscription has a raw or log filter.
    pub(crate) fn has_debug_subscriptions(&self) -> bool {
        self.subs
            .iter()
            .any(|s| s.filter.raw.is_some() || s.filter.log.is_some())
    }

    /// What the next poll reads, of the `running` sessions: None when no
    /// raw or log subscription exists (nothing is polled then). A tap is
    /// read from the oldest position any covering subscription needs.
    pub(crate) fn poll_plan(&self, running: &[SessionId]) -> Option<PollPlan> {
        if !self.has_debug_subscriptions() {
            return None;
        }
        let mut plan = PollPlan::default();
        for session in running {
            let mut covered = false;
            let mut after: Option<Pos> = None;
            let mut from_start = false;
            for sub in &self.subs {
                let Some(raw) = &sub.filter.raw else { continue };
                if !raw.covers(session) {
                    continue;
                }
                covered = true;
                match sub.feed.raw_at(session) {
                    RawAt::After(p) => after = Some(after.map_or(p, |a| a.min(p))),
                    RawAt::Pending | RawAt::Fresh => from_start = true,
                }
            }
            if covered {
                plan.raw
                    .push((session.clone(), if from_start { None } else { after }));
            }
        }
        let logs: Vec<Option<u64>> = self
            .subs
            .iter()
            .filter(|s| s.filter.log.is_some())
            .map(|s| s.feed.log_after())
            .collect();
        if !logs.is_empty() {
            plan.log = Some(if logs.iter().any(Option::is_none) {
                0
            } else {
                logs.iter().flatten().copied().min().unwrap_or(0)
            });
        }
        Some(plan)
    }

    /// Turns a poll's lines into events: each subscription takes the lines
    /// past its position that pass its filter and the screen (withheld ones
    /// counted), up to its rate (the rest counted in suppressed). A read
    /// that began past a subscription's position (planned before that
    /// subscription was made, with its start read earlier) is not its: it
    /// is left for the next poll, planned from its position.
    pub(crate) fn apply_poll(&mut self, data: &PollData, now: Instant) {
        for sub in self.subs.iter_mut() {
            if let Some(raw) = sub.filter.raw.clone() {
                let mut read_any = false;
                for tap in &data.raw {
                    let session = &tap.session;
                    if !raw.covers(session) || !sub.feed.raw_read_covers(session, tap.after) {
                        continue;
                    }
                    let Some((withhold, lines, dropped_through)) = &tap.read else {
                        sub.feed.keep_pending(session);
                        continue;
                    };
                    read_any = true;
                    let take = sub.feed.take_raw(session, lines, *dropped_through);
                    let debug = sub.inbox.debug_mut();
                    debug.evicted |= take.evicted;
                    let mut new = Vec::new();
                    // A scoped subscription sees the lines attributed to
                    // what it covers; the rest are counted withheld.
                    let screen = match &tap.facts {
                        Some(facts) => RawScreen::for_session(&sub.reach, facts.clone()),
                        None => RawScreen::everything(),
                    };
                    for line in take.lines.iter().filter(|l| raw.matches(l)) {
                        if !screen.raw(line) || withheld(withhold, line) {
                            sub.inbox.debug_mut().withheld += 1;
                        } else {
                            new.push(line);
                        }
                    }
                    for line in new {
                        if sub.feed.admit(now) {
                            sub.inbox.push(Arc::new(raw_event(session, line, now)), now);
                        } else {
                            sub.inbox.debug_mut().suppressed += 1;
                        }
                    }
                }
                if read_any {
                    sub.feed.raw_read_done();
                }
            }
            if let (Some(log), Some(read)) = (sub.filter.log.clone(), &data.log) {
                if sub.feed.log_after().is_some_and(|a| a < read.planned) {
                    continue;
                }
                let (after, snapshot) = (&read.after, &read.snapshot);
                if snapshot.stalled {
                    sub.inbox.set_stalled(true);
                    continue;
                }
                sub.inbox.set_stalled(false);
                if sub
                    .feed
                    .log_after()
                    .is_some_and(|a| snapshot.evicted_through > a)
                {
                    sub.inbox.debug_mut().evicted = true;
                }
                let through = snapshot.lines.last().map_or(*after, |l| l.seq.max(*after));
                let lines = sub.feed.take_log(&snapshot.lines, through).to_vec();
                // Rete's own log lines name no session or buffer: only a
                // reach covering every conversation may read them.
                let beyond_reach = !log_lines_visible(&sub.reach);
                for line in lines.iter().filter(|l| log.matches(l)) {
                    if beyond_reach || withholds(&snapshot.scan, line) {
                        sub.inbox.debug_mut().withheld += 1;
                    } else if sub.feed.admit(now) {
                        sub.inbox.push(Arc::new(log_event(line, now)), now);
                    } else {
                        sub.inbox.debug_mut().suppressed += 1;
                    }
                }
            }
        }
    }

    /// control.debug is off: every raw and log event still held is removed
    /// into dropped, and every position goes back to pending (the rings were
    /// cleared). Message events stay. Cheap when there is nothing to do, so
    /// every read and list calls it.
    pub(crate) fn debug_off(&mut self) {
        for sub in self.subs.iter_mut() {
            if sub.filter.raw.is_none() && sub.filter.log.is_none() {
                continue;
            }
            sub.inbox.drop_debug_events();
            sub.inbox.set_stalled(false);
            sub.feed.reset();
        }
    }
}
