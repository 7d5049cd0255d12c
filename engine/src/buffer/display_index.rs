//! A buffer's display order: which held row comes where on screen.
//!
//! Each row sorts by a key (sort time, rank, seq); see the buffer module for
//! what the sort time and rank mean. Almost always a buffer's display order
//! is its arrival order: every live row goes last. While that holds the
//! index keeps no entry per row at all: the seq is the row's place, the rank
//! the plain one, and the sort time follows from the rows (each row's time
//! raised to the sort time before it). The first history row (placed by its
//! own time, and checked against the rows near that time) turns it into the
//! sorted list of keys, 24 bytes a row, for good.

use crate::row::Row;
use std::collections::VecDeque;
use std::iter::FusedIterator;

/// (sort time, rank, seq): rows are shown in ascending key order.
pub(super) type Key = (i64, u64, u64);

/// The rank of every row not fetched from before all held rows.
pub(super) const PLAIN_RANK: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub(super) enum DisplayIndex {
    /// Display order is arrival order: the rows with seqs `first_seq` up to
    /// `first_seq + len`, each of sort time `max(time, sort time before
    /// it)`, starting from `base`; `last` is the last one's.
    Arrival {
        first_seq: u64,
        len: usize,
        base: i64,
        last: i64,
    },
    /// Some row sorts by its own key: every key, sorted.
    Sorted(VecDeque<Key>),
}

impl Default for DisplayIndex {
    fn default() -> DisplayIndex {
        DisplayIndex::Arrival {
            first_seq: 0,
            len: 0,
            base: i64::MIN,
            last: i64::MIN,
        }
    }
}

impl DisplayIndex {
    /// The sort time of the last row shown, if any.
    pub(super) fn last_sort_time(&self) -> Option<i64> {
        match self {
            DisplayIndex::Arrival { len, last, .. } => (*len > 0).then_some(*last),
            DisplayIndex::Sorted(keys) => keys.back().map(|&(t, _, _)| t),
        }
    }

    /// Places a new row of this `time` (its seq the highest yet), growing
    /// within `capacity` entries. `rows` are the rows held before it.
    pub(super) fn insert(&mut self, key: Key, time: i64, rows: &VecDeque<Row>, capacity: usize) {
        if let DisplayIndex::Arrival {
            first_seq,
            len,
            base,
            last,
        } = self
        {
            if key.1 == PLAIN_RANK {
                if *len == 0 {
                    // The sort time follows from `base`: max(key.0, time) is
                    // key.0, which is never below the row's time.
                    (*first_seq, *len, *base, *last) = (key.2, 1, key.0, key.0);
                    return;
                }
                let follows = key.2 == *first_seq + *len as u64 && key.0 == time.max(*last);
                if follows {
                    *len += 1;
                    *last = key.0;
                    return;
                }
            }
            self.sort_keys(rows, capacity);
        }
        if let DisplayIndex::Sorted(keys) = self {
            super::grow_within(keys, capacity);
            let at = keys.partition_point(|&k| k <= key);
            keys.insert(at, key);
        }
    }

    /// Turns the arrival order into the sorted list of keys it stands for
    /// (`rows` are the held rows); [`DisplayIndex::sorted`] then gives it.
    pub(super) fn sort_keys(&mut self, rows: &VecDeque<Row>, capacity: usize) {
        if let DisplayIndex::Arrival { base, .. } = *self {
            let mut keys = VecDeque::with_capacity((rows.len() + 1).min(capacity.max(1)));
            let mut sort_time = base;
            keys.extend(rows.iter().map(|r| {
                sort_time = sort_time.max(r.time.0);
                (sort_time, PLAIN_RANK, r.seq)
            }));
            *self = DisplayIndex::Sorted(keys);
        }
    }

    /// The sorted keys, once [`DisplayIndex::sort_keys`] has made them.
    pub(super) fn sorted(&self) -> Option<&VecDeque<Key>> {
        match self {
            DisplayIndex::Sorted(keys) => Some(keys),
            DisplayIndex::Arrival { .. } => None,
        }
    }

    /// Takes out the row with this seq and time (an evicted row: in arrival
    /// order, the first).
    pub(super) fn remove(&mut self, seq: u64, time: i64) {
        match self {
            DisplayIndex::Arrival {
                first_seq,
                len,
                base,
                ..
            } => {
                if seq == *first_seq && *len > 0 {
                    *first_seq += 1;
                    *len -= 1;
                    *base = (*base).max(time);
                }
            }
            DisplayIndex::Sorted(keys) => {
                // The evicted row is usually at the front; history can place
                // older rows before it, so find it by position.
                if let Some(at) = keys.iter().position(|&(_, _, s)| s == seq) {
                    keys.remove(at);
                }
            }
        }
    }

    /// Every seq, in display order.
    pub(super) fn seqs(&self) -> Seqs<'_> {
        match self {
            DisplayIndex::Arrival { first_seq, len, .. } => Seqs::Arrival {
                front: *first_seq,
                back: *first_seq + *len as u64,
            },
            DisplayIndex::Sorted(keys) => Seqs::Sorted(keys.iter()),
        }
    }

    /// The display position of `seq`, if it is held.
    pub(super) fn position(&self, seq: u64) -> Option<usize> {
        match self {
            DisplayIndex::Arrival { first_seq, len, .. } => {
                let at = usize::try_from(seq.checked_sub(*first_seq)?).ok()?;
                (at < *len).then_some(at)
            }
            DisplayIndex::Sorted(keys) => keys.iter().rposition(|&(_, _, s)| s == seq),
        }
    }

    /// True while the order is arrival order (for tests of the memory it saves).
    #[cfg(test)]
    pub(super) fn is_arrival(&self) -> bool {
        matches!(self, DisplayIndex::Arrival { .. })
    }
}

/// The seqs of a [`DisplayIndex`], in display order.
pub(crate) enum Seqs<'a> {
    /// `front..back`.
    Arrival {
        front: u64,
        back: u64,
    },
    Sorted(std::collections::vec_deque::Iter<'a, Key>),
}

impl Iterator for Seqs<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            Seqs::Arrival { front, back } => (*front < *back).then(|| {
                *front += 1;
                *front - 1
            }),
            Seqs::Sorted(keys) => keys.next().map(|&(_, _, s)| s),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Seqs::Arrival { front, back } => usize::try_from(back - front).unwrap_or(usize::MAX),
            Seqs::Sorted(keys) => keys.len(),
        };
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Seqs<'_> {
    fn next_back(&mut self) -> Option<u64> {
        match self {
            Seqs::Arrival { front, back } => (*front < *back).then(|| {
                *back -= 1;
                *back
            }),
            Seqs::Sorted(keys) => keys.next_back().map(|&(_, _, s)| s),
        }
    }
}

impl ExactSizeIterator for Seqs<'_> {}
impl FusedIterator for Seqs<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::UnixMillis;
    use crate::row::Payload;

    /// Index and rows together, as the buffer keeps them.
    #[derive(Default)]
    struct Held {
        index: DisplayIndex,
        rows: VecDeque<Row>,
        last_seq: u64,
    }

    impl Held {
        fn push(&mut self, time: i64, rank: u64, live: bool) {
            self.last_seq += 1;
            let seq = self.last_seq;
            let newest = self.index.last_sort_time().unwrap_or(i64::MIN);
            let sort_time = if live { time.max(newest) } else { time };
            self.index
                .insert((sort_time, rank, seq), time, &self.rows, 100);
            self.rows.push_back(Row {
                seq,
                time: UnixMillis(time),
                msgid: None,
                from: "a".into(),
                history: !live,
                payload: Payload::Privmsg { text: "x".into() },
            });
        }

        fn evict(&mut self) {
            let row = self.rows.pop_front().unwrap();
            self.index.remove(row.seq, row.time.0);
        }

        fn seqs(&self) -> Vec<u64> {
            self.index.seqs().collect()
        }

        /// The keys the index stands for, sorted now if they were not.
        fn keys(&mut self) -> Vec<Key> {
            self.index.sort_keys(&self.rows, 100);
            self.index.sorted().into_iter().flatten().copied().collect()
        }
    }

    /// The index as it was before it had an arrival mode: every key, sorted.
    #[derive(Default)]
    struct AllKeys(VecDeque<Key>);

    impl AllKeys {
        fn insert(&mut self, key: Key) {
            let at = self.0.partition_point(|&k| k <= key);
            self.0.insert(at, key);
        }

        fn remove(&mut self, seq: u64) {
            if let Some(at) = self.0.iter().position(|&(_, _, s)| s == seq) {
                self.0.remove(at);
            }
        }
    }

    proptest::proptest! {
        /// Pushes as `Buffer::push` makes them (a live row raised to the
        /// newest sort time, a history row at its own time, some of a fetch
        /// of older rows; eviction at a capacity), against the list of every
        /// key: the same order and the same newest sort time throughout.
        #[test]
        fn the_order_is_the_one_every_key_sorted_gives(
            pushes in proptest::collection::vec((0i64..50, 0u8..10, 0u64..3), 1..120),
            capacity in 1usize..12,
        ) {
            let mut held = Held::default();
            let mut all = AllKeys::default();
            for (time, kind, batch) in pushes {
                let live = kind < 7;
                let rank = if !live && kind == 9 { PLAIN_RANK - 1 - batch } else { PLAIN_RANK };
                let newest = held.index.last_sort_time().unwrap_or(i64::MIN);
                proptest::prop_assert_eq!(newest, all.0.back().map_or(i64::MIN, |k| k.0));
                let sort_time = if live { time.max(newest) } else { time };
                if !live {
                    held.index.sort_keys(&held.rows, capacity);
                }
                while held.rows.len() >= capacity {
                    let seq = held.rows.front().unwrap().seq;
                    held.evict();
                    all.remove(seq);
                }
                held.last_seq += 1;
                let key = (sort_time, rank, held.last_seq);
                held.index.insert(key, time, &held.rows, capacity);
                all.insert(key);
                held.rows.push_back(Row {
                    seq: held.last_seq,
                    time: UnixMillis(time),
                    msgid: None,
                    from: "a".into(),
                    history: !live,
                    payload: Payload::Privmsg { text: "x".into() },
                });
                let order: Vec<u64> = all.0.iter().map(|k| k.2).collect();
                proptest::prop_assert_eq!(held.seqs(), order);
            }
            let every: Vec<Key> = all.0.iter().copied().collect();
            proptest::prop_assert_eq!(held.keys(), every);
        }
    }

    #[test]
    fn live_rows_keep_no_entry_and_stand_for_the_same_keys() {
        let mut held = Held::default();
        // A time going back (a local-time row after a server-time one) is
        // raised to the one before it.
        for t in [10, 10, 30, 20, 40] {
            held.push(t, PLAIN_RANK, true);
        }
        assert!(held.index.is_arrival());
        assert_eq!(held.seqs(), vec![1, 2, 3, 4, 5]);
        assert_eq!(
            held.index.seqs().rev().collect::<Vec<_>>(),
            vec![5, 4, 3, 2, 1]
        );
        assert_eq!(held.index.seqs().len(), 5);
        assert_eq!(held.index.position(2), Some(1));
        assert_eq!(held.index.position(6), None);
        assert_eq!(held.index.last_sort_time(), Some(40));
        held.evict();
        held.evict();
        held.evict();
        assert_eq!(held.seqs(), vec![4, 5]);
        assert_eq!(held.index.position(4), Some(0));
        // Row 4 (time 20) came after row 3 (time 30): its sort time is 30,
        // though row 3 is gone.
        assert_eq!(held.keys(), vec![(30, PLAIN_RANK, 4), (40, PLAIN_RANK, 5)]);
        assert!(!held.index.is_arrival());
    }

    #[test]
    fn a_history_row_sorts_the_keys_and_is_placed_by_its_time() {
        let mut held = Held::default();
        for t in [10, 20, 30] {
            held.push(t, PLAIN_RANK, true);
        }
        held.push(15, PLAIN_RANK, false);
        assert!(!held.index.is_arrival());
        assert_eq!(held.seqs(), vec![1, 4, 2, 3]);
        held.push(40, PLAIN_RANK, true);
        assert_eq!(held.seqs(), vec![1, 4, 2, 3, 5]);
        held.evict();
        held.evict();
        assert_eq!(held.seqs(), vec![4, 3, 5]);
        assert_eq!(held.index.position(3), Some(1));
    }

    #[test]
    fn a_row_of_a_fetch_of_older_rows_sorts_the_keys_even_at_the_end() {
        let mut held = Held::default();
        held.push(10, PLAIN_RANK, true);
        // Same time, lower rank: it goes before the row at 10.
        held.push(10, PLAIN_RANK - 1, false);
        assert_eq!(held.seqs(), vec![2, 1]);
        // Newer than all, but of such a fetch: kept with its rank, so a row
        // of the same fetch and time after it still sorts after it.
        held.push(50, PLAIN_RANK - 1, false);
        held.push(50, PLAIN_RANK - 1, false);
        assert_eq!(held.seqs(), vec![2, 1, 3, 4]);
    }

    #[test]
    fn an_emptied_index_starts_again_from_the_next_row() {
        let mut held = Held::default();
        held.push(50, PLAIN_RANK, true);
        held.evict();
        // Nothing is held to raise it to: the next row's key is its own.
        held.push(5, PLAIN_RANK, true);
        assert!(held.index.is_arrival());
        assert_eq!(held.seqs(), vec![2]);
        assert_eq!(held.index.last_sort_time(), Some(5));
        assert_eq!(held.keys(), vec![(5, PLAIN_RANK, 2)]);
    }
}
