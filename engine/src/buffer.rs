//! A buffer: the rows of one conversation (server, channel or query).
//!
//! Rows are stored in arrival order, so the row with ingest sequence `s` sits
//! at index `s - first_seq`: lookups by seq are O(1) and eviction drops the
//! front. A second index (`display_index.rs`) keeps the display order,
//! because history can arrive late and belong in the middle. Live rows always
//! go at the end of the display order, whatever their time says (a local-time
//! row and a server-time row need not agree); history rows are placed by time. At an
//! equal time, rows fetched from before everything held (a batch of older
//! rows, see [`NewRow::older_batch`]) go first, since they are older than
//! every row held when they were asked for. Evicting by arrival keeps the
//! evicted seqs a prefix, so "were rows evicted after seq `c`?" is one
//! comparison.

use crate::clock::UnixMillis;
use crate::ids::BufferId;
use crate::row::{Payload, Row};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};

mod display_index;
use display_index::{DisplayIndex, PLAIN_RANK};

/// The default number of rows a buffer holds before it evicts the oldest.
pub const DEFAULT_CAPACITY: usize = 50_000;

/// How far apart in time a history row and a held row with the same msgid
/// may be and still count as one message.
const DUPLICATE_WINDOW_MS: i64 = 60_000;

/// How far apart in time a replayed row without a msgid and a held row with
/// the same sender, kind and text may be and still count as one message:
/// under a second, since replays keep the time but may cut it to seconds.
const SAME_SECOND_MS: i64 = 1_000;

/// A replay under way in this buffer: a history batch, or a run of history
/// rows with no live row between them. Its rows without a msgid may repeat
/// rows stored before it began (a bouncer that keeps its buffer replays
/// everything again on every attach); each held row is matched once, so a
/// line said twice in one second and replayed twice is kept twice, and rows
/// of the replay itself are never taken for repeats of each other.
#[derive(Clone, Debug, Default)]
struct Replay {
    /// The seq the replay's first row got: only rows below it are matched.
    first_seq: u64,
    /// Held rows already matched by a row of this replay.
    matched: HashSet<u64>,
}

/// What a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferKind {
    /// The session's server buffer.
    Server,
    /// A channel.
    Channel,
    /// A private conversation with one nick.
    Query,
}

impl BufferKind {
    /// The kind's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            BufferKind::Server => "server",
            BufferKind::Channel => "channel",
            BufferKind::Query => "query",
        }
    }
}

/// A row about to be stored (the buffer assigns its seq).
#[derive(Clone, Debug)]
pub struct NewRow {
    /// See [`Row::time`].
    pub time: UnixMillis,
    /// True when the time came from the server (server-time tag).
    pub server_time: bool,
    /// See [`Row::msgid`].
    pub msgid: Option<CompactString>,
    /// See [`Row::from`].
    pub from: CompactString,
    /// True when the line arrived as history: inside a history batch, or as
    /// a replay outside one (older than our arrival on the connection).
    pub in_history_batch: bool,
    /// See [`Row::payload`].
    pub payload: Payload,
    /// For a history row fetched from before every row held (a fetch of
    /// older rows): the number of its batch, counted up from 1 by the
    /// session, so a later fetch (further back) has a higher number. At an
    /// equal time such a row sorts before every row held when its batch
    /// began: rows of no such batch, and those of lower numbers. None for
    /// every other row (placed by time, then by arrival).
    pub older_batch: Option<u64>,
}

/// Where a row sorts among rows of the same display time: lower first.
/// A row of a batch of older rows ranks below the rows of every earlier
/// such batch and below every other row (see [`NewRow::older_batch`]).
fn rank(history: bool, older_batch: Option<u64>) -> u64 {
    match older_batch {
        Some(n) if history => PLAIN_RANK - n,
        _ => PLAIN_RANK,
    }
}

/// The outcome of [`Buffer::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Stored with this seq.
    Stored {
        /// The new row's seq.
        seq: u64,
        /// True when it was stored as history.
        history: bool,
    },
    /// Dropped: a row with the same msgid is already held, or, for a replayed
    /// row without a msgid, a row with the same time (to the second), sender,
    /// kind and text that was stored before the replay began.
    Duplicate,
}

/// Makes room in a full `queue` for one more entry, doubling as a `Vec`
/// would but never past `capacity`: a buffer of 50,000 rows then holds
/// 50,000 slots, not the 65,536 doubling reaches (a third more, each the
/// size of a row).
fn grow_within<T>(queue: &mut VecDeque<T>, capacity: usize) {
    if queue.len() == queue.capacity() {
        let target = queue
            .capacity()
            .saturating_mul(2)
            .max(8)
            .min(capacity.max(1));
        queue.reserve_exact(target.saturating_sub(queue.len()).max(1));
    }
}

/// One buffer's rows and identity.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Buffer {
    id: BufferId,
    name: String,
    kind: BufferKind,
    capacity: usize,
    /// Rows in arrival order; `rows[i].seq == first_seq + i`.
    #[serde(skip)]
    rows: VecDeque<Row>,
    /// Display order by (sort time, rank, seq). A live row's sort time is
    /// its time raised to the newest sort time, so it lands last; a history
    /// row's sort time is its own time. The rank (see [`rank`]) puts fetched
    /// older rows before the rows held when they were fetched.
    #[serde(skip)]
    display: DisplayIndex,
    /// The seq the next row gets. Starts at 1, so 0 can mean "before everything".
    next_seq: u64,
    /// Every seq at or below this was evicted (0 when none was).
    evicted_through: u64,
    /// The newest server time seen on a live row; older server times are history.
    newest_server_time: Option<UnixMillis>,
    /// The replay under way, if any (see [`Replay`]).
    #[serde(skip)]
    replay: Option<Replay>,
}

impl Buffer {
    /// An empty buffer holding at most `capacity` rows (at least 1).
    pub fn new(id: BufferId, name: String, kind: BufferKind, capacity: usize) -> Buffer {
        Buffer {
            id,
            name,
            kind,
            capacity: capacity.max(1),
            rows: VecDeque::new(),
            display: DisplayIndex::default(),
            next_seq: 1,
            evicted_through: 0,
            newest_server_time: None,
            replay: None,
        }
    }

    /// The buffer's id.
    pub fn id(&self) -> &BufferId {
        &self.id
    }

    /// The buffer's display name (channel or nick as last seen).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the buffer holds.
    pub fn kind(&self) -> BufferKind {
        self.kind
    }

    /// Renames the buffer (a query partner changed nick); the id stays.
    pub fn rename(&mut self, name: &str) {
        self.name = name.to_owned();
    }

    /// Stores a row, evicting the oldest arrival when full.
    ///
    /// A row is history when it came in a history batch, or carries a server
    /// time older than the newest live server time: such rows are placed by
    /// time, possibly mid-buffer, yet still take the next seq. A history row
    /// whose msgid is already held is dropped as a duplicate (chat history and
    /// a join replay can overlap); one without a msgid is dropped when it
    /// repeats a row held before the replay began (see `Replay` in this file).
    pub fn push(&mut self, new: NewRow) -> Pushed {
        let history = new.in_history_batch
            || (new.server_time && self.newest_server_time.is_some_and(|n| new.time < n));
        if history {
            // Placed by its own time and checked against the rows near that
            // time: both need the sorted keys.
            self.display.sort_keys(&self.rows, self.capacity);
            match &new.msgid {
                Some(id) => {
                    if self.holds_msgid_near(id, new.time) {
                        return Pushed::Duplicate;
                    }
                }
                None => {
                    if self.repeats_row_before_replay(&new) {
                        return Pushed::Duplicate;
                    }
                }
            }
        } else {
            self.replay = None;
            if new.server_time {
                self.newest_server_time = Some(new.time);
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let row = Row {
            seq,
            time: new.time,
            msgid: new.msgid,
            from: new.from,
            history,
            payload: new.payload,
        };
        let newest = self.display.last_sort_time().unwrap_or(i64::MIN);
        let sort_time = if history {
            row.time.0
        } else {
            row.time.0.max(newest)
        };
        let key = (sort_time, rank(history, new.older_batch), seq);
        // Make room first, so neither index ever holds more than `capacity`.
        while self.rows.len() >= self.capacity {
            self.evict_front();
        }
        grow_within(&mut self.rows, self.capacity);
        self.display
            .insert(key, row.time.0, &self.rows, self.capacity);
        self.rows.push_back(row);
        Pushed::Stored { seq, history }
    }

    fn evict_front(&mut self) {
        let Some(row) = self.rows.pop_front() else {
            return;
        };
        self.evicted_through = row.seq;
        self.display.remove(row.seq, row.time.0);
    }

    /// True when a row with this msgid is held near this time: a history
    /// copy of a row already held (chat history, a join replay and what we
    /// saw live can overlap). The copy's time can differ from the original's:
    /// InspIRCd replays history with the time cut to whole seconds, so the
    /// search covers a window around it rather than the exact time.
    fn holds_msgid_near(&self, msgid: &str, time: UnixMillis) -> bool {
        let from = time.0.saturating_sub(DUPLICATE_WINDOW_MS);
        let to = time.0.saturating_add(DUPLICATE_WINDOW_MS);
        let Some(keys) = self.display.sorted() else {
            return false;
        };
        let start = keys.partition_point(|&(t, _, _)| t < from);
        keys.range(start..)
            .take_while(|&&(t, _, _)| t <= to)
            .filter_map(|&(_, _, s)| self.get(s))
            .any(|r| r.msgid.as_deref() == Some(msgid))
    }

    /// True when `new` (a replayed row without a msgid) repeats a row stored
    /// before the current replay began and not matched by it yet; that row
    /// is then marked matched. Starts a replay when none is under way.
    fn repeats_row_before_replay(&mut self, new: &NewRow) -> bool {
        let next_seq = self.next_seq;
        let replay = self.replay.get_or_insert_with(|| Replay {
            first_seq: next_seq,
            matched: HashSet::new(),
        });
        let from = new.time.0.saturating_sub(SAME_SECOND_MS);
        let to = new.time.0.saturating_add(DUPLICATE_WINDOW_MS);
        let Some(keys) = self.display.sorted() else {
            return false;
        };
        let start = keys.partition_point(|&(t, _, _)| t <= from);
        let first = self.rows.front().map_or(next_seq, |r| r.seq);
        let found = keys
            .range(start..)
            .take_while(|&&(t, _, _)| t <= to)
            .map(|&(_, _, seq)| seq)
            .filter(|seq| *seq < replay.first_seq && !replay.matched.contains(seq))
            .find(|&seq| {
                let row = usize::try_from(seq - first)
                    .ok()
                    .and_then(|i| self.rows.get(i));
                row.is_some_and(|r| {
                    (r.time.0 - new.time.0).abs() < SAME_SECOND_MS
                        && r.from == new.from
                        && r.payload == new.payload
                })
            });
        match found {
            Some(seq) => {
                replay.matched.insert(seq);
                true
            }
            None => false,
        }
    }

    /// The replay under way is over (its batch closed, or the link did): the
    /// next replayed row starts a new one, matched against all held rows.
    pub fn end_replay(&mut self) {
        self.replay = None;
    }

    /// The row with this seq, if still held.
    pub fn get(&self, seq: u64) -> Option<&Row> {
        let first = self.rows.front()?.seq;
        let idx = seq.checked_sub(first)?;
        self.rows.get(usize::try_from(idx).ok()?)
    }

    /// Rows with seq above `after`, in arrival (seq) order.
    pub fn since(&self, after: u64) -> impl DoubleEndedIterator<Item = &Row> + ExactSizeIterator {
        let first = self.rows.front().map_or(self.next_seq, |r| r.seq);
        let skip = after.saturating_add(1).saturating_sub(first);
        let skip = usize::try_from(skip)
            .unwrap_or(usize::MAX)
            .min(self.rows.len());
        self.rows.range(skip..)
    }

    /// Rows in display order (by time, then rank, then seq; see the module
    /// docs), oldest first.
    pub fn display(&self) -> impl DoubleEndedIterator<Item = &Row> {
        // Every display entry names a held row (see `evict_front`), so the
        // filter never drops one; it only keeps this total.
        self.display.seqs().filter_map(move |s| self.get(s))
    }

    /// Seqs in display order, oldest first.
    pub fn display_seqs(&self) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + '_ {
        self.display.seqs()
    }

    /// The display position of the row with this seq, if held.
    pub fn display_position(&self, seq: u64) -> Option<usize> {
        self.get(seq)?;
        self.display.position(seq)
    }

    /// The seq of the held row with this msgid, newest first.
    pub fn find_msgid(&self, msgid: &str) -> Option<u64> {
        self.rows
            .iter()
            .rev()
            .find(|r| r.msgid.as_deref() == Some(msgid))
            .map(|r| r.seq)
    }

    /// True when some row with a seq above `after` was evicted, so a reader
    /// positioned at `after` has a gap it cannot fill.
    pub fn evicted_after(&self, after: u64) -> bool {
        self.evicted_through > after
    }

    /// The highest seq evicted so far (0 when none).
    pub fn evicted_through(&self) -> u64 {
        self.evicted_through
    }

    /// The seq of the newest arrival (0 when nothing ever arrived).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Rows held now.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The most rows this buffer holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{BufferKindTag, SessionId};

    fn buffer(cap: usize) -> Buffer {
        let s = SessionId::parse("00000000-0000-4000-8000-000000000001").unwrap();
        let id = BufferId::derive(&s, BufferKindTag::Channel, "#t");
        Buffer::new(id, "#t".into(), BufferKind::Channel, cap)
    }

    fn msg(time: i64, server_time: bool, msgid: Option<&str>, text: &str) -> NewRow {
        NewRow {
            time: UnixMillis(time),
            server_time,
            msgid: msgid.map(Into::into),
            from: "alice".into(),
            in_history_batch: false,
            payload: Payload::Privmsg { text: text.into() },
            older_batch: None,
        }
    }

    /// A row of the `n`th batch of older rows.
    fn older(n: u64, time: i64, text: &str) -> NewRow {
        NewRow {
            in_history_batch: true,
            older_batch: Some(n),
            ..msg(time, true, None, text)
        }
    }

    fn texts(b: &Buffer) -> Vec<String> {
        b.display()
            .map(|r| match &r.payload {
                Payload::Privmsg { text } => text.to_string(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn a_full_buffer_holds_no_more_slots_than_its_capacity() {
        for cap in [1, 5, 1000, 1500] {
            let mut b = buffer(cap);
            for i in 0..(cap as i64 * 2 + 3) {
                b.push(msg(i, true, None, "x"));
                assert!(
                    b.rows.capacity() <= cap.max(8),
                    "{cap}: {}",
                    b.rows.capacity()
                );
                assert!(b.display.is_arrival(), "every row went last");
            }
            assert_eq!(b.len(), cap);
            assert_eq!(b.display().count(), cap);
            assert_eq!(b.since(0).next().map(|r| r.seq), Some(cap as u64 + 4));
        }
    }

    #[test]
    fn a_capacity_of_one_keeps_the_newest_row() {
        let mut b = buffer(1);
        b.push(msg(10, true, None, "a"));
        b.push(msg(5, true, None, "older, so history"));
        b.push(msg(20, true, None, "c"));
        assert_eq!(texts(&b), vec!["c"]);
    }

    #[test]
    fn seqs_increase_in_arrival_order() {
        let mut b = buffer(10);
        assert_eq!(
            b.push(msg(10, true, None, "a")),
            Pushed::Stored {
                seq: 1,
                history: false
            }
        );
        assert_eq!(
            b.push(msg(20, true, None, "b")),
            Pushed::Stored {
                seq: 2,
                history: false
            }
        );
        assert_eq!(b.last_seq(), 2);
        assert_eq!(b.since(1).map(|r| r.seq).collect::<Vec<_>>(), vec![2]);
        assert_eq!(b.since(0).len(), 2);
        assert_eq!(b.since(99).len(), 0);
    }

    #[test]
    fn older_server_time_is_history_placed_mid_buffer() {
        let mut b = buffer(10);
        b.push(msg(10, true, None, "a"));
        b.push(msg(30, true, None, "c"));
        let p = b.push(msg(20, true, Some("m2"), "b"));
        assert_eq!(
            p,
            Pushed::Stored {
                seq: 3,
                history: true
            }
        );
        assert_eq!(texts(&b), ["a", "b", "c"]);
        // read_since after seq 2 still returns the mid-buffer row.
        assert_eq!(b.since(2).map(|r| r.seq).collect::<Vec<_>>(), vec![3]);
        assert_eq!(b.display_position(3), Some(1));
        // The same history row again is a duplicate.
        assert_eq!(b.push(msg(20, true, Some("m2"), "b")), Pushed::Duplicate);
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn history_batch_rows_are_history_even_when_newest() {
        let mut b = buffer(10);
        let mut r = msg(50, true, None, "x");
        r.in_history_batch = true;
        assert_eq!(
            b.push(r),
            Pushed::Stored {
                seq: 1,
                history: true
            }
        );
        // A history row does not move the live clock: a later live row at an
        // older time than the history row is still live.
        assert_eq!(
            b.push(msg(40, true, None, "y")),
            Pushed::Stored {
                seq: 2,
                history: false
            }
        );
    }

    #[test]
    fn local_times_never_make_history() {
        let mut b = buffer(10);
        b.push(msg(100, false, None, "a"));
        assert_eq!(
            b.push(msg(50, false, None, "b")),
            Pushed::Stored {
                seq: 2,
                history: false
            }
        );
    }

    #[test]
    fn live_rows_display_in_arrival_order_whatever_their_time() {
        let mut b = buffer(10);
        b.push(msg(100, false, None, "local"));
        b.push(msg(90, true, None, "server"));
        assert_eq!(texts(&b), ["local", "server"]);
    }

    #[test]
    fn eviction_drops_oldest_arrivals_and_reports_gap() {
        let mut b = buffer(3);
        for (i, t) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            b.push(msg(i as i64 * 10 + 100, true, None, t));
        }
        assert_eq!(b.len(), 3);
        assert_eq!(texts(&b), ["c", "d", "e"]);
        assert_eq!(b.evicted_through(), 2);
        assert!(b.evicted_after(0));
        assert!(b.evicted_after(1));
        assert!(!b.evicted_after(2));
        assert!(b.get(2).is_none());
        assert_eq!(b.get(3).map(|r| r.seq), Some(3));
        assert_eq!(b.since(0).map(|r| r.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
    }

    #[test]
    fn eviction_removes_rows_placed_behind_history() {
        let mut b = buffer(3);
        b.push(msg(100, true, None, "live1"));
        b.push(msg(200, true, None, "live2"));
        b.push(msg(50, true, None, "old")); // history, displayed first
        b.push(msg(300, true, None, "live3")); // evicts live1 (oldest arrival)
        assert_eq!(texts(&b), ["old", "live2", "live3"]);
        assert_eq!(b.display().count(), b.len());
    }

    #[test]
    fn a_replayed_copy_with_a_truncated_time_is_a_duplicate() {
        let mut b = buffer(10);
        b.push(msg(1_687, true, Some("m1"), "seen live"));
        b.push(msg(2_000, true, None, "later"));
        // InspIRCd's replay of the same message, its time cut to the second.
        let mut replay = msg(1_000, true, Some("m1"), "seen live");
        replay.in_history_batch = true;
        assert_eq!(b.push(replay), Pushed::Duplicate);
        // Another message far away in time with the same id is kept.
        assert!(matches!(
            b.push(msg(500_000, true, Some("m1"), "x")),
            Pushed::Stored { .. }
        ));
    }

    #[test]
    fn older_rows_at_the_time_of_the_oldest_held_row_sort_before_it() {
        let mut b = buffer(10);
        b.push(msg(100, true, None, "held 1"));
        b.push(msg(100, true, None, "held 2"));
        b.push(msg(200, true, None, "held 3"));
        // A fetch before "held 1": its rows, oldest first, two of them at
        // the very millisecond of the oldest held row.
        b.push(older(1, 50, "old a"));
        b.push(older(1, 100, "old b"));
        b.push(older(1, 100, "old c"));
        assert_eq!(
            texts(&b),
            ["old a", "old b", "old c", "held 1", "held 2", "held 3"]
        );
        // A fetch further back goes before the first one's rows too.
        b.push(older(2, 100, "older d"));
        b.push(older(2, 100, "older e"));
        assert_eq!(
            texts(&b),
            ["old a", "older d", "older e", "old b", "old c", "held 1", "held 2", "held 3"]
        );
        // Any other history row at that time still lands after the rows
        // held (by arrival), and a live row at the end.
        let mut replayed = msg(100, true, None, "replayed");
        replayed.in_history_batch = true;
        b.push(replayed);
        b.push(msg(300, true, None, "live"));
        assert_eq!(
            texts(&b),
            [
                "old a", "older d", "older e", "old b", "old c", "held 1", "held 2", "replayed",
                "held 3", "live"
            ]
        );
        assert_eq!(b.display_position(7), Some(1), "older d");
        assert_eq!(b.display().count(), b.len());
    }

    #[test]
    fn find_msgid_finds_newest() {
        let mut b = buffer(10);
        b.push(msg(1, true, Some("x"), "a"));
        b.push(msg(2, true, Some("y"), "b"));
        assert_eq!(b.find_msgid("y"), Some(2));
        assert_eq!(b.find_msgid("z"), None);
    }
}
