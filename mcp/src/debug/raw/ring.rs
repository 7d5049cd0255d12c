//! One process's raw taps as plain state: a bounded ring of lines per
//! session, each line numbered by its tap and its place in it.
//!
//! A tap is one connection's lines: a session that starts a new connection
//! attempt (after it has lines) starts a new tap, whose sequence begins at 1
//! again. Tap numbers come from one process-wide counter, so a later tap
//! always sorts after an earlier one, of this capture or of any before it: a
//! position (tap, seq) is strictly increasing in arrival order within a
//! session, and a reader holding an old position reads a new tap from its
//! start.
//!
//! Clearing (capture switched off) drops every line but keeps each session's
//! counters, so the lines lost are a gap in the sequence that is neither
//! evicted nor withheld. Eviction drops the oldest line at capacity, so the
//! evicted lines are always a prefix and "was a line after p evicted" is one
//! comparison.

use rete_actors::Direction;
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Lines kept per session.
pub(crate) const CAPACITY: usize = 5_000;

/// A line longer than this many bytes is stored cut, ending `…[+N bytes]`.
pub(crate) const MAX_LINE_BYTES: usize = 2_048;

/// Where a line sits in its session's tap: which tap, and its place in it.
/// Ordered by tap, then seq: arrival order within a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// The tap (one connection's lines while captured); process-wide
    /// increasing. 0 is before every tap.
    pub(crate) tap: u64,
    /// The line's number in its tap, from 1.
    pub(crate) seq: u64,
}

/// One captured line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLine {
    /// Its position.
    pub(crate) pos: Pos,
    /// When it was seen.
    pub(crate) time: UnixMillis,
    /// In or out.
    pub(crate) dir: Direction,
    /// The line as stored (masked at the source); a cut line ends with
    /// `…[+N bytes]`.
    pub(crate) text: Arc<str>,
    /// For a cut line, how many bytes of the original were kept (the start
    /// of `text`); None when the line was stored whole.
    pub(crate) kept: Option<usize>,
}

impl RawLine {
    /// The part of a cut line that was kept (without the marker).
    pub(crate) fn kept_part(&self) -> Option<&str> {
        self.kept.and_then(|k| self.text.get(..k))
    }
}

/// `line` as stored: whole when it fits in [`MAX_LINE_BYTES`], else its
/// first bytes (up to a character boundary) and `…[+N bytes]`, N being the
/// bytes dropped; with how many bytes were kept when it was cut.
#[cfg(test)]
pub(crate) fn stored(line: &str) -> (Arc<str>, Option<usize>) {
    stored_from(&line[..cut_point(line)], line.len())
}

/// How many bytes of `line` are kept: all of it, or at most
/// [`MAX_LINE_BYTES`] ending on a character boundary.
pub(crate) fn cut_point(line: &str) -> usize {
    if line.len() <= MAX_LINE_BYTES {
        return line.len();
    }
    let mut kept = MAX_LINE_BYTES;
    while !line.is_char_boundary(kept) {
        kept -= 1;
    }
    kept
}

/// A line as stored from the part kept (see [`cut_point`]) of a line of
/// `original_len` bytes.
pub(crate) fn stored_from(kept: &str, original_len: usize) -> (Arc<str>, Option<usize>) {
    if kept.len() >= original_len {
        return (Arc::from(kept), None);
    }
    let text = format!("{kept}…[+{} bytes]", original_len - kept.len());
    (Arc::from(text), Some(kept.len()))
}

/// The next tap number in this process.
fn next_tap() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One session's tap.
#[derive(Debug)]
struct SessionRing {
    /// The current tap.
    tap: u64,
    /// The seq the next line gets in it.
    next_seq: u64,
    lines: VecDeque<RawLine>,
    /// The newest position dropped at capacity since the last clear.
    dropped_through: Option<Pos>,
}

impl SessionRing {
    fn new() -> SessionRing {
        SessionRing {
            tap: next_tap(),
            next_seq: 1,
            lines: VecDeque::new(),
            dropped_through: None,
        }
    }

    fn take_pos(&mut self) -> Pos {
        let pos = Pos {
            tap: self.tap,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        pos
    }
}

/// The lines a read may cover, copied out of a ring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Lines after the position asked for, ascending, at most the limit.
    pub lines: Vec<RawLine>,
    /// True when more lines follow the window.
    pub more: bool,
    /// True when a line after the position asked for was dropped at
    /// capacity (only when a position was given).
    pub(crate) evicted: bool,
    /// The newest position dropped at capacity since the ring was last
    /// cleared: a reader at any position before it lost a line it would
    /// have read, in this tap or an earlier one.
    pub(crate) dropped_through: Option<Pos>,
}

/// Every session's tap.
#[derive(Debug)]
pub(crate) struct Rings {
    sessions: HashMap<SessionId, SessionRing>,
    capacity: usize,
}

impl Default for Rings {
    fn default() -> Rings {
        Rings::new(CAPACITY)
    }
}

impl Rings {
    /// Rings of `capacity` lines per session.
    pub(crate) fn new(capacity: usize) -> Rings {
        Rings {
            sessions: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    fn ring(&mut self, session: &SessionId) -> &mut SessionRing {
        if !self.sessions.contains_key(session) {
            self.sessions.insert(session.clone(), SessionRing::new());
        }
        // Inserted just above when it was missing.
        self.sessions
            .get_mut(session)
            .unwrap_or_else(|| unreachable!())
    }

    /// `session` starts a connection attempt: once its current tap has
    /// lines, the next line starts a new tap.
    pub(crate) fn connecting(&mut self, session: &SessionId) {
        let ring = self.ring(session);
        if ring.next_seq > 1 {
            ring.tap = next_tap();
            ring.next_seq = 1;
        }
    }

    /// Appends a line (already masked and cut, see [`stored`]), dropping the
    /// oldest at capacity.
    pub(crate) fn push(
        &mut self,
        session: &SessionId,
        time: UnixMillis,
        dir: Direction,
        text: Arc<str>,
        kept: Option<usize>,
    ) {
        let capacity = self.capacity;
        let ring = self.ring(session);
        let pos = ring.take_pos();
        if ring.lines.len() >= capacity {
            if let Some(old) = ring.lines.pop_front() {
                ring.dropped_through = Some(old.pos);
            }
        }
        ring.lines.push_back(RawLine {
            pos,
            time,
            dir,
            text,
            kept,
        });
    }

    /// `count` lines of `session` that were lost before they reached the
    /// ring: they take their positions and count as dropped at capacity.
    pub(crate) fn lost(&mut self, session: &SessionId, count: u64) {
        if count == 0 {
            return;
        }
        let ring = self.ring(session);
        ring.next_seq += count;
        let newest = Pos {
            tap: ring.tap,
            seq: ring.next_seq - 1,
        };
        ring.dropped_through = Some(newest);
    }

    /// Drops every line; counters stay, so the loss is a plain gap.
    pub(crate) fn clear(&mut self) {
        for ring in self.sessions.values_mut() {
            ring.lines.clear();
            ring.lines.shrink_to_fit();
            ring.dropped_through = None;
        }
    }

    /// Up to `limit` lines of `session` after `after` (None: from the oldest
    /// held).
    pub(crate) fn window(&self, session: &SessionId, after: Option<Pos>, limit: usize) -> Window {
        let Some(ring) = self.sessions.get(session) else {
            return Window::default();
        };
        let start = after.map_or(0, |a| ring.lines.partition_point(|l| l.pos <= a));
        let rest = ring.lines.len() - start;
        Window {
            lines: ring.lines.range(start..).take(limit).cloned().collect(),
            more: rest > limit,
            evicted: after.is_some_and(|a| ring.dropped_through.is_some_and(|d| d > a)),
            dropped_through: ring.dropped_through,
        }
    }

    /// The position of the newest line `session`'s tap has numbered (held,
    /// evicted or lost), or, when it has none, the start of every tap: every
    /// line after it is one the tap had not seen yet.
    pub(crate) fn end(&self, session: &SessionId) -> Pos {
        self.sessions
            .get(session)
            .map_or(Pos::default(), |ring| Pos {
                tap: ring.tap,
                seq: ring.next_seq - 1,
            })
    }

    /// How many lines `session`'s ring holds.
    #[cfg(test)]
    pub(crate) fn len(&self, session: &SessionId) -> usize {
        self.sessions.get(session).map_or(0, |r| r.lines.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid() -> SessionId {
        SessionId::parse("00000000-0000-4000-8000-000000000001").unwrap()
    }

    fn push(r: &mut Rings, text: &str) {
        let (t, k) = stored(text);
        r.push(&sid(), UnixMillis(0), Direction::In, t, k);
    }

    fn texts(w: &Window) -> Vec<&str> {
        w.lines.iter().map(|l| &*l.text).collect()
    }

    #[test]
    fn long_lines_are_cut_with_the_bytes_dropped() {
        let (t, k) = stored(&"a".repeat(2048));
        assert_eq!((t.len(), k), (2048, None));
        let (t, k) = stored(&"b".repeat(3000));
        assert_eq!(k, Some(2048));
        assert_eq!(&t[2048..], "…[+952 bytes]");
        // A cut never splits a character: é is two bytes, the 2,048th
        // byte falls inside one.
        let line = format!("{}{}", "x", "é".repeat(1500));
        let (t, k) = stored(&line);
        assert_eq!(k, Some(2047));
        assert!(t.ends_with(&format!("…[+{} bytes]", line.len() - 2047)));
    }

    #[test]
    fn reads_follow_positions_and_eviction_is_reported_behind_a_cursor() {
        let mut r = Rings::new(3);
        for i in 0..3 {
            push(&mut r, &format!("l{i}"));
        }
        let w = r.window(&sid(), None, 2);
        assert_eq!(texts(&w), ["l0", "l1"]);
        assert!(w.more && !w.evicted);
        let cursor = w.lines[1].pos;
        push(&mut r, "l3");
        let w = r.window(&sid(), Some(cursor), 10);
        assert_eq!(texts(&w), ["l2", "l3"]);
        assert!(!w.evicted, "only l0 was dropped, before the cursor");
        push(&mut r, "l4");
        push(&mut r, "l5");
        let w = r.window(&sid(), Some(cursor), 10);
        assert!(w.evicted, "l2 was dropped after the cursor");
        assert_eq!(texts(&w), ["l3", "l4", "l5"]);
        assert!(
            !r.window(&sid(), None, 10).evicted,
            "never without a cursor"
        );
    }

    #[test]
    fn a_reconnect_starts_a_new_tap_read_from_its_start() {
        let mut r = Rings::default();
        push(&mut r, "a1");
        push(&mut r, "a2");
        let old = r.window(&sid(), None, 10).lines[1].pos;
        r.connecting(&sid());
        r.connecting(&sid()); // an attempt with no lines burns no tap
        push(&mut r, "b1");
        let w = r.window(&sid(), Some(old), 10);
        assert_eq!(texts(&w), ["b1"]);
        assert_eq!(w.lines[0].pos.seq, 1);
        assert!(w.lines[0].pos.tap > old.tap);
    }

    #[test]
    fn clearing_leaves_a_plain_gap() {
        let mut r = Rings::new(2);
        for i in 0..4 {
            push(&mut r, &format!("l{i}"));
        }
        let cursor = Pos {
            tap: r.window(&sid(), None, 1).lines[0].pos.tap,
            seq: 1,
        };
        r.clear();
        assert_eq!(r.len(&sid()), 0);
        push(&mut r, "after");
        let w = r.window(&sid(), Some(cursor), 10);
        assert_eq!(texts(&w), ["after"]);
        assert_eq!(w.lines[0].pos.seq, 5, "the sequence goes on past the gap");
        assert!(!w.evicted, "a clear is neither evicted nor withheld");
    }

    #[test]
    fn the_end_is_after_every_line_numbered_and_before_every_later_one() {
        let mut r = Rings::new(2);
        assert_eq!(r.end(&sid()), Pos::default());
        for i in 0..3 {
            push(&mut r, &format!("l{i}"));
        }
        r.lost(&sid(), 2);
        let end = r.end(&sid());
        assert_eq!(end.seq, 5, "evicted and lost lines are numbered too");
        push(&mut r, "after");
        assert_eq!(texts(&r.window(&sid(), Some(end), 10)), ["after"]);
        r.connecting(&sid());
        let end = r.end(&sid());
        push(&mut r, "new tap");
        assert_eq!(texts(&r.window(&sid(), Some(end), 10)), ["new tap"]);
    }

    #[test]
    fn lost_lines_count_as_dropped() {
        let mut r = Rings::default();
        push(&mut r, "a");
        let cursor = r.window(&sid(), None, 1).lines[0].pos;
        r.lost(&sid(), 3);
        push(&mut r, "b");
        let w = r.window(&sid(), Some(cursor), 10);
        assert!(w.evicted);
        assert_eq!(w.lines[0].pos.seq, 5);
    }
}
