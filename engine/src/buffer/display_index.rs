//! A buffer's display order: which held row comes where on screen.
//!
//! Each row sorts by a key (sort time, rank, seq); see the buffer module for
//! what the sort time and rank mean. Almost always a buffer's display order
//! is its arrival order: every live row goes last, and so does a history row
//! newer than everything held. While that holds the index keeps only each
//! row's sort time, 8 bytes a row instead of a 24-byte key: the rank is the
//! live rank and the seq is the row's place. The first row placed elsewhere
//! (an older history row, a row of a fetch of older rows) turns it into the
//! full sorted list of keys, for good.

use std::collections::VecDeque;
use std::iter::FusedIterator;

/// (sort time, rank, seq): rows are shown in ascending key order.
pub(super) type Key = (i64, u64, u64);

/// The rank of every row not fetched from before all held rows.
pub(super) const PLAIN_RANK: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub(super) enum DisplayIndex {
    /// Display order is arrival order: `sort_times[i]` is the sort time of
    /// the row with seq `first_seq + i`, each at least the one before, every
    /// rank [`PLAIN_RANK`].
    Arrival {
        sort_times: VecDeque<i64>,
        first_seq: u64,
    },
    /// Some row sorts out of arrival order: every key, sorted.
    Sorted(VecDeque<Key>),
}

impl Default for DisplayIndex {
    fn default() -> DisplayIndex {
        DisplayIndex::Arrival {
            sort_times: VecDeque::new(),
            first_seq: 0,
        }
    }
}

impl DisplayIndex {
    /// The sort time of the last row shown, if any.
    pub(super) fn last_sort_time(&self) -> Option<i64> {
        match self {
            DisplayIndex::Arrival { sort_times, .. } => sort_times.back().copied(),
            DisplayIndex::Sorted(keys) => keys.back().map(|&(t, _, _)| t),
        }
    }

    /// Places a new row (its seq the highest yet), growing within
    /// `capacity` entries.
    pub(super) fn insert(&mut self, key: Key, capacity: usize) {
        if let DisplayIndex::Arrival {
            sort_times,
            first_seq,
        } = self
        {
            let next_seq = *first_seq + sort_times.len() as u64;
            let goes_last = sort_times.back().is_none_or(|&last| key.0 >= last);
            if sort_times.is_empty() {
                *first_seq = key.2;
            }
            if key.1 == PLAIN_RANK && goes_last && (sort_times.is_empty() || key.2 == next_seq) {
                super::grow_within(sort_times, capacity);
                sort_times.push_back(key.0);
                return;
            }
            self.sort_keys(capacity);
        }
        if let DisplayIndex::Sorted(keys) = self {
            super::grow_within(keys, capacity);
            let at = keys.partition_point(|&k| k <= key);
            keys.insert(at, key);
        }
    }

    /// Turns the arrival order into the sorted list of keys it stands for.
    fn sort_keys(&mut self, capacity: usize) {
        if let DisplayIndex::Arrival {
            sort_times,
            first_seq,
        } = self
        {
            let mut keys = VecDeque::with_capacity((sort_times.len() + 1).min(capacity.max(1)));
            keys.extend(
                sort_times
                    .iter()
                    .zip(*first_seq..)
                    .map(|(&t, seq)| (t, PLAIN_RANK, seq)),
            );
            *self = DisplayIndex::Sorted(keys);
        }
    }

    /// Takes out the row with this seq (an evicted row: in arrival order,
    /// the first).
    pub(super) fn remove(&mut self, seq: u64) {
        match self {
            DisplayIndex::Arrival {
                sort_times,
                first_seq,
            } => {
                if seq == *first_seq && sort_times.pop_front().is_some() {
                    *first_seq += 1;
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

    /// The number of entries before the first whose sort time `before`
    /// rejects (sort times never go down along the order).
    pub(super) fn partition_point(&self, before: impl Fn(i64) -> bool) -> usize {
        match self {
            DisplayIndex::Arrival { sort_times, .. } => sort_times.partition_point(|&t| before(t)),
            DisplayIndex::Sorted(keys) => keys.partition_point(|&(t, _, _)| before(t)),
        }
    }

    /// (sort time, seq) of each entry from position `start` on, in order.
    pub(super) fn entries_from(&self, start: usize) -> Box<dyn Iterator<Item = (i64, u64)> + '_> {
        match self {
            DisplayIndex::Arrival {
                sort_times,
                first_seq,
            } => Box::new(
                sort_times
                    .range(start.min(sort_times.len())..)
                    .copied()
                    .zip(*first_seq + start as u64..),
            ),
            DisplayIndex::Sorted(keys) => Box::new(
                keys.range(start.min(keys.len())..)
                    .map(|&(t, _, seq)| (t, seq)),
            ),
        }
    }

    /// Every seq, in display order.
    pub(super) fn seqs(&self) -> Seqs<'_> {
        match self {
            DisplayIndex::Arrival {
                sort_times,
                first_seq,
            } => Seqs::Arrival {
                front: *first_seq,
                back: *first_seq + sort_times.len() as u64,
            },
            DisplayIndex::Sorted(keys) => Seqs::Sorted(keys.iter()),
        }
    }

    /// The display position of `seq`, if it is held.
    pub(super) fn position(&self, seq: u64) -> Option<usize> {
        match self {
            DisplayIndex::Arrival {
                sort_times,
                first_seq,
            } => {
                let at = usize::try_from(seq.checked_sub(*first_seq)?).ok()?;
                (at < sort_times.len()).then_some(at)
            }
            DisplayIndex::Sorted(keys) => keys.iter().rposition(|&(_, _, s)| s == seq),
        }
    }

    /// True while the order is arrival order (for tests of the memory it saves).
    #[cfg(test)]
    pub(super) fn is_arrival(&self) -> bool {
        matches!(self, DisplayIndex::Arrival { .. })
    }

    /// The entries it has room for.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        match self {
            DisplayIndex::Arrival { sort_times, .. } => sort_times.capacity(),
            DisplayIndex::Sorted(keys) => keys.capacity(),
        }
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

    fn seqs(index: &DisplayIndex) -> Vec<u64> {
        index.seqs().collect()
    }

    #[test]
    fn rows_in_arrival_order_keep_only_their_times() {
        let mut index = DisplayIndex::default();
        for (seq, t) in [(1, 10), (2, 10), (3, 30)] {
            index.insert((t, PLAIN_RANK, seq), 100);
        }
        assert!(index.is_arrival());
        assert_eq!(seqs(&index), vec![1, 2, 3]);
        assert_eq!(index.seqs().rev().collect::<Vec<_>>(), vec![3, 2, 1]);
        assert_eq!(index.seqs().len(), 3);
        assert_eq!(index.position(2), Some(1));
        assert_eq!(index.position(4), None);
        assert_eq!(index.partition_point(|t| t < 30), 2);
        assert_eq!(
            index.entries_from(1).collect::<Vec<_>>(),
            vec![(10, 2), (30, 3)]
        );
        index.remove(1);
        assert_eq!(seqs(&index), vec![2, 3]);
        assert_eq!(index.position(2), Some(0));
        assert_eq!(index.last_sort_time(), Some(30));
    }

    #[test]
    fn a_row_placed_earlier_sorts_the_keys_and_keeps_the_order_exact() {
        let mut index = DisplayIndex::default();
        for (seq, t) in [(1, 10), (2, 20), (3, 30)] {
            index.insert((t, PLAIN_RANK, seq), 100);
        }
        index.insert((15, PLAIN_RANK, 4), 100);
        assert!(!index.is_arrival());
        assert_eq!(seqs(&index), vec![1, 4, 2, 3]);
        index.insert((40, PLAIN_RANK, 5), 100);
        assert_eq!(seqs(&index), vec![1, 4, 2, 3, 5]);
        index.remove(2);
        assert_eq!(seqs(&index), vec![1, 4, 3, 5]);
        assert_eq!(index.position(3), Some(2));
    }

    #[test]
    fn a_row_of_a_fetch_of_older_rows_sorts_the_keys_even_at_the_end() {
        let mut index = DisplayIndex::default();
        index.insert((10, PLAIN_RANK, 1), 100);
        // Same time, lower rank: it goes before the row at 10.
        index.insert((10, PLAIN_RANK - 1, 2), 100);
        assert!(!index.is_arrival());
        assert_eq!(seqs(&index), vec![2, 1]);
        // Newer than all, but of such a fetch: kept with its rank, so a row
        // of the same fetch and time after it still sorts after it.
        index.insert((50, PLAIN_RANK - 1, 3), 100);
        index.insert((50, PLAIN_RANK - 1, 4), 100);
        assert_eq!(seqs(&index), vec![2, 1, 3, 4]);
    }

    #[test]
    fn an_empty_index_starts_at_the_first_seq_it_is_given() {
        let mut index = DisplayIndex::default();
        index.insert((5, PLAIN_RANK, 41), 100);
        index.insert((6, PLAIN_RANK, 42), 100);
        assert!(index.is_arrival());
        assert_eq!(seqs(&index), vec![41, 42]);
        index.remove(41);
        index.remove(42);
        index.insert((1, PLAIN_RANK, 43), 100);
        assert!(index.is_arrival(), "empty again: nothing to sort against");
        assert_eq!(seqs(&index), vec![43]);
    }
}
