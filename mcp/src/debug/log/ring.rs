//! The log ring's state, without the actor: the last 2,000 lines, what
//! eviction dropped, and the secrets learned of each session since the last
//! clear.

use super::line::LogLine;
use rete_redact::SecretSet;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The ring holds at most this many lines; the oldest goes first.
pub(crate) const CAPACITY: usize = 2_000;

/// What a read asks of the ring.
#[derive(Clone, Debug)]
pub(crate) struct ReadRequest {
    /// Lines with a seq above this are wanted (the cursor, or the capture's
    /// start when there is none).
    pub(crate) after: u64,
    /// Every running session by id, with its secrets when they could be
    /// read in time (None: they could not).
    pub(crate) sessions: Vec<(String, Option<SecretSet>)>,
}

/// What the ring answers a read with.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The lines with seq above the request's `after`, ascending.
    pub lines: Vec<Arc<LogLine>>,
    /// The seq of the newest line dropped at capacity since the last clear
    /// (0: none), so "was a line after c evicted" is one comparison.
    pub evicted_through: u64,
    /// The seq of the oldest line held, if any.
    pub oldest: Option<u64>,
    /// Every secret to scan the lines for: each running session's, and each
    /// session's learned since the last clear (ended ones included).
    pub scan: SecretSet,
    /// True when a running session's secrets could not be read and none
    /// were known for it, or when no session is running: the lines cannot
    /// be scanned, so none may be returned.
    pub stalled: bool,
}

/// The ring.
#[derive(Debug, Default)]
pub(crate) struct LogRing {
    lines: VecDeque<Arc<LogLine>>,
    evicted_through: u64,
    /// The secrets learned of each session (by id) since the last clear,
    /// each read added to what was known, so a key since removed still
    /// withholds the lines written while it was set.
    known: HashMap<String, SecretSet>,
    /// The union of `known`, rebuilt when it grows.
    scan: SecretSet,
}

impl LogRing {
    /// An empty ring.
    pub(crate) fn new() -> LogRing {
        LogRing::default()
    }

    /// Appends a line, dropping the oldest at capacity.
    pub(crate) fn push(&mut self, line: Arc<LogLine>) {
        if self.lines.len() == CAPACITY {
            if let Some(old) = self.lines.pop_front() {
                self.evicted_through = old.seq;
            }
        }
        self.lines.push_back(line);
    }

    /// Forgets every line and every secret learned (capture went off).
    /// Lines lost this way are not evictions.
    pub(crate) fn clear(&mut self) {
        *self = LogRing::default();
    }

    /// How many lines are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Learns the sessions' secrets and answers a read.
    pub(crate) fn read(&mut self, request: ReadRequest) -> Snapshot {
        let mut stalled = request.sessions.is_empty();
        for (id, secrets) in request.sessions {
            match secrets {
                Some(set) => self.learn(id, &set),
                None => stalled |= !self.known.contains_key(&id),
            }
        }
        // Lines are in seq order: find the first above `after` by halving.
        let start = self.lines.partition_point(|l| l.seq <= request.after);
        Snapshot {
            lines: self.lines.range(start..).cloned().collect(),
            evicted_through: self.evicted_through,
            oldest: self.lines.front().map(|l| l.seq),
            scan: self.scan.clone(),
            stalled,
        }
    }

    fn learn(&mut self, id: String, set: &SecretSet) {
        let entry = self.known.entry(id).or_default();
        let grown = entry.union(set);
        if grown.len() != entry.len() {
            self.scan = self.scan.union(&grown);
        }
        *entry = grown;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debug::log::level::{Category, Level};
    use rete_engine::clock::UnixMillis;

    fn line(seq: u64) -> Arc<LogLine> {
        Arc::new(LogLine {
            seq,
            time: UnixMillis(0),
            level: Level::Info,
            category: Category::App,
            text: format!("line {seq}").into(),
            kept: None,
        })
    }

    fn ask(ring: &mut LogRing, after: u64) -> Snapshot {
        ring.read(ReadRequest {
            after,
            sessions: vec![("S".into(), Some(SecretSet::empty()))],
        })
    }

    #[test]
    fn holds_the_last_two_thousand_and_remembers_what_it_dropped() {
        let mut ring = LogRing::new();
        for seq in 1..=2_005 {
            ring.push(line(seq));
        }
        assert_eq!(ring.len(), CAPACITY);
        let s = ask(&mut ring, 0);
        assert_eq!(s.oldest, Some(6));
        assert_eq!(s.evicted_through, 5);
        assert_eq!(s.lines.len(), CAPACITY);
        assert_eq!(ask(&mut ring, 2_003).lines.len(), 2);
        ring.clear();
        let s = ask(&mut ring, 0);
        assert_eq!((s.evicted_through, s.oldest, s.lines.len()), (0, None, 0));
    }

    #[test]
    fn stalls_without_sessions_or_with_an_unreadable_unknown_one() {
        let mut ring = LogRing::new();
        ring.push(line(1));
        let none = ring.read(ReadRequest {
            after: 0,
            sessions: vec![],
        });
        assert!(none.stalled);
        let unread = ring.read(ReadRequest {
            after: 0,
            sessions: vec![("A".into(), None)],
        });
        assert!(unread.stalled);
        // Once read, a session's secrets are known, and a later failed read
        // of them no longer stalls.
        let read = ring.read(ReadRequest {
            after: 0,
            sessions: vec![("A".into(), Some(SecretSet::new(["hunter22"])))],
        });
        assert!(!read.stalled);
        let later = ring.read(ReadRequest {
            after: 0,
            sessions: vec![("A".into(), None)],
        });
        assert!(!later.stalled);
        assert!(later.scan.contains_secret("xhunter22"));
    }

    #[test]
    fn ended_sessions_and_removed_secrets_keep_withholding_until_a_clear() {
        let mut ring = LogRing::new();
        ring.read(ReadRequest {
            after: 0,
            sessions: vec![("A".into(), Some(SecretSet::new(["oldkey11"])))],
        });
        let s = ring.read(ReadRequest {
            after: 0,
            sessions: vec![
                ("A".into(), Some(SecretSet::new(["newkey22"]))),
                ("B".into(), Some(SecretSet::empty())),
            ],
        });
        assert!(s.scan.contains_secret("oldkey11") && s.scan.contains_secret("newkey22"));
        // A ended: only B runs now; A's secrets still count.
        let s = ask(&mut ring, 0);
        assert!(s.scan.contains_secret("oldkey11"));
        ring.clear();
        assert!(!ask(&mut ring, 0).scan.contains_secret("oldkey11"));
    }
}
