//! The raw buffer behind `/raw`: each session's recent lines in and out, as
//! the engine's raw tap hands them (already masked with
//! `rete_redact::mask_line`). Kept in reterm's memory only: never an engine
//! buffer (so `list_buffers` never lists it) and never a transcript.

use rete_actors::{Direction, RawObserver};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Lines kept per session; the oldest go first. More than irssi's rawlog
/// (200) and WeeChat's raw buffer (256) keep, and a quarter of what it was:
/// every line of a flood passes through here, and 2,000 a network were a
/// megabyte of an idle reterm's memory.
pub const RAW_KEEP: usize = 500;

/// One raw line and which way it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLine {
    /// In from the server or out to it.
    pub direction: Direction,
    /// The line without CR LF, masked at the source.
    pub text: String,
    /// When reterm saw it (wall clock).
    pub time: UnixMillis,
}

impl RawLine {
    /// `<< line` for a line received, `>> line` for one sent.
    pub fn marked(&self) -> String {
        let mark = match self.direction {
            Direction::In => "<<",
            Direction::Out => ">>",
        };
        format!("{mark} {}", self.text)
    }
}

/// One session's raw lines, at most `cap`, oldest first.
#[derive(Debug)]
pub struct RawRing {
    cap: usize,
    lines: VecDeque<RawLine>,
    /// Lines dropped because the ring was full.
    dropped: u64,
}

impl RawRing {
    /// An empty ring holding at most `cap` lines.
    pub fn new(cap: usize) -> RawRing {
        RawRing {
            cap,
            lines: VecDeque::with_capacity(cap.min(64)),
            dropped: 0,
        }
    }

    /// Adds a line, dropping the oldest when full.
    pub fn push(&mut self, direction: Direction, text: &str) {
        if self.cap == 0 {
            self.dropped += 1;
            return;
        }
        if self.lines.len() == self.cap {
            self.lines.pop_front();
            self.dropped += 1;
        }
        self.lines.push_back(RawLine {
            direction,
            text: text.to_owned(),
            time: rete_actors::wall_clock::now(),
        });
    }

    /// The last `n` lines, oldest first.
    pub fn last(&self, n: usize) -> Vec<RawLine> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines.iter().skip(skip).cloned().collect()
    }

    /// How many lines it holds.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// How many older lines were dropped to stay within the cap.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Every session's ring; the observer reterm sets at start-up.
///
/// The session actor calls `on_raw` on its own task: it takes a short lock
/// and appends one line to a bounded ring, so it never waits on reterm's
/// loop or on I/O.
#[derive(Debug)]
pub struct RawRings {
    cap: usize,
    by_session: Mutex<HashMap<SessionId, RawRing>>,
    /// Woken after each line, so a shown raw buffer is redrawn as lines
    /// come (a permit is kept while nobody waits: one wake, not one per line).
    arrived: tokio::sync::Notify,
}

impl Default for RawRings {
    fn default() -> RawRings {
        RawRings::new(RAW_KEEP)
    }
}

impl RawRings {
    /// Rings of at most `cap` lines each.
    pub fn new(cap: usize) -> RawRings {
        RawRings {
            cap,
            by_session: Mutex::new(HashMap::new()),
            arrived: tokio::sync::Notify::new(),
        }
    }

    /// Returns once a line arrived since the last wait returned.
    pub async fn wait(&self) {
        self.arrived.notified().await;
    }

    /// The last `n` lines of `session` (oldest first) and how many were
    /// dropped before them.
    pub fn last(&self, session: &SessionId, n: usize) -> (Vec<RawLine>, u64) {
        let rings = self.by_session.lock().unwrap_or_else(|e| e.into_inner());
        match rings.get(session) {
            Some(ring) => (ring.last(n), ring.dropped()),
            None => (Vec::new(), 0),
        }
    }
}

impl RawObserver for RawRings {
    fn on_raw(&self, session: &SessionId, direction: Direction, line: &str) {
        {
            let mut rings = self.by_session.lock().unwrap_or_else(|e| e.into_inner());
            rings
                .entry(session.clone())
                .or_insert_with(|| RawRing::new(self.cap))
                .push(direction, line);
        }
        self.arrived.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> SessionId {
        SessionId::parse(&format!("6f1c2a0e-9a4b-4c53-8d2e-1b7f0c9e4a{n:02x}")).unwrap()
    }

    #[test]
    fn ring_keeps_the_newest_lines_in_order_within_its_cap() {
        let mut ring = RawRing::new(3);
        for i in 0..5 {
            ring.push(Direction::In, &format!("line {i}"));
        }
        assert_eq!(ring.len(), 3);
        assert_eq!(ring.dropped(), 2);
        let texts: Vec<String> = ring.last(10).into_iter().map(|l| l.text).collect();
        assert_eq!(texts, ["line 2", "line 3", "line 4"]);
        let last_two: Vec<String> = ring.last(2).into_iter().map(|l| l.text).collect();
        assert_eq!(last_two, ["line 3", "line 4"]);
    }

    #[test]
    fn lines_are_marked_by_direction() {
        let mut ring = RawRing::new(4);
        ring.push(Direction::Out, "NICK rt");
        ring.push(Direction::In, ":srv 001 rt :Welcome");
        let marked: Vec<String> = ring.last(4).iter().map(RawLine::marked).collect();
        assert_eq!(marked, [">> NICK rt", "<< :srv 001 rt :Welcome"]);
    }

    #[test]
    fn rings_are_per_session_and_keep_the_masking_the_tap_applied() {
        let rings = RawRings::new(RAW_KEEP);
        // What the tap hands over: `mask_line` of what went out.
        let masked = rete_redact::mask_line("PRIVMSG NickServ :IDENTIFY hunter2");
        assert!(!masked.contains("hunter2"), "{masked}");
        rings.on_raw(&id(1), Direction::Out, &masked);
        rings.on_raw(&id(2), Direction::In, ":srv 001 other :Welcome");
        let (one, dropped) = rings.last(&id(1), 10);
        assert_eq!(dropped, 0);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].text, masked);
        assert!(one[0].text.contains("********"), "{}", one[0].text);
        let (two, _) = rings.last(&id(2), 10);
        assert_eq!(two[0].text, ":srv 001 other :Welcome");
        assert!(rings.last(&id(3), 10).0.is_empty());
    }

    #[tokio::test]
    async fn wait_returns_once_a_line_arrived() {
        let rings = std::sync::Arc::new(RawRings::new(4));
        let waiting = tokio::spawn({
            let rings = rings.clone();
            async move { rings.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "woke without a line");
        rings.on_raw(&id(1), Direction::In, "PING :x");
        waiting.await.unwrap();
        // Lines that came while nobody waited leave one wake, not one each.
        rings.on_raw(&id(1), Direction::In, "a");
        rings.on_raw(&id(1), Direction::In, "b");
        rings.wait().await;
        let again = tokio::time::timeout(std::time::Duration::ZERO, rings.wait()).await;
        assert!(again.is_err(), "a second wake was stored");
    }

    #[test]
    fn the_default_cap_is_raw_keep() {
        let rings = RawRings::default();
        for i in 0..RAW_KEEP + 5 {
            rings.on_raw(&id(1), Direction::In, &format!("{i}"));
        }
        let (all, dropped) = rings.last(&id(1), usize::MAX);
        assert_eq!(all.len(), RAW_KEEP);
        assert_eq!(dropped, 5);
        assert_eq!(all[0].text, "5");
    }
}
