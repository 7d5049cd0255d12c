//! A reader's place in one stream of consecutively numbered rows: the
//! one rule, on both sides of a connection, that the next row taken is the
//! one after the last row taken — so nothing is missed and nothing is taken
//! twice. The client keeps one per stream; the service's replay feed
//! (`replay`, with the `service` feature) keeps one per attached stream.

use std::ops::RangeInclusive;

/// What to do with a row offered to a [`Cursor`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offer {
    /// The row is the next one: take it (the cursor moved on).
    Next,
    /// The row was taken before: drop it.
    Duplicate,
    /// Rows are missing before this one: `missing` comes first.
    Ahead {
        /// The rows between the cursor and the offered row.
        missing: RangeInclusive<u64>,
    },
}

/// Where a stream's reader stands: the last row it took (0: none yet).
///
/// Held as the last row rather than the next one expected, so that every
/// sequence number up to `u64::MAX` can be taken and resumed from without
/// arithmetic that overflows: a row number comes from the other side of the
/// connection, and no value of it may wrap the count or panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    last: u64,
}

impl Cursor {
    /// A cursor for a reader that holds every row up to `after`.
    pub fn after(after: u64) -> Self {
        Self { last: after }
    }

    /// The last row taken (the resume point to give on reconnect).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The next row expected; `u64::MAX` once that row was taken too, when
    /// every later row is a duplicate.
    pub fn next(&self) -> u64 {
        self.last.saturating_add(1)
    }

    /// Offers row `seq`; takes it only when it is the next one.
    pub fn offer(&mut self, seq: u64) -> Offer {
        if seq <= self.last {
            Offer::Duplicate
        } else if seq - 1 == self.last {
            self.last = seq;
            Offer::Next
        } else {
            // `last < seq - 1`, so neither end overflows.
            Offer::Ahead {
                missing: self.last + 1..=seq - 1,
            }
        }
    }

    /// Skips to just after `last` (rows up to it will never be sent).
    pub(crate) fn skip_to(&mut self, last: u64) {
        self.last = self.last.max(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_takes_each_row_once_in_order() {
        let mut c = Cursor::after(4);
        assert_eq!(c.offer(4), Offer::Duplicate);
        assert_eq!(c.offer(5), Offer::Next);
        assert_eq!(c.offer(5), Offer::Duplicate);
        assert_eq!(c.offer(8), Offer::Ahead { missing: 6..=7 });
        assert_eq!(c.last(), 5);
        c.skip_to(7);
        assert_eq!(c.offer(8), Offer::Next);
        c.skip_to(2);
        assert_eq!(c.next(), 9, "never moves back");
    }
}
