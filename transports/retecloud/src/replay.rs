//! The replay planner: given what a store holds of a stream and where a
//! client resumes, what to send so the client gets exactly the rows it
//! missed, no more, no less.
//!
//! Sequence numbers are consecutive within a stream (each row is one more
//! than the one before), so "no gap, no duplicate" is one rule on both
//! sides: the next row sent is always the one after the last row sent. A
//! [`Cursor`] holds that rule. The service's [`StreamFeed`] merges the rows
//! it reads from the store with the rows that arrive live while it does:
//! it relies on one ordering the service must keep, **a row is stored
//! before it is broadcast live**, so a live row that arrives ahead of the
//! cursor can be dropped: the store already holds it and a later read
//! brings it in order.

use crate::cursor::{Cursor, Offer};
use std::ops::RangeInclusive;

/// The rows a store holds of one stream: `earliest..=latest`. Nothing held
/// is `earliest == latest + 1` (a new stream is `1, 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreExtent {
    /// The oldest sequence number still held.
    pub earliest: u64,
    /// The newest sequence number the stream has given out.
    pub latest: u64,
}

impl StoreExtent {
    /// An extent, or None when `earliest` is 0 or past `latest + 1`.
    pub fn new(earliest: u64, latest: u64) -> Option<Self> {
        (earliest >= 1 && earliest <= latest.saturating_add(1)).then_some(Self { earliest, latest })
    }

    /// A stream with no row yet.
    pub const EMPTY: StoreExtent = StoreExtent {
        earliest: 1,
        latest: 0,
    };
}

/// What a resume point asks of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumePlan {
    /// The client holds every row: nothing to replay.
    UpToDate,
    /// Replay `from..=to` (all held), then go live.
    Replay {
        /// The first row the client lacks.
        from: u64,
        /// The newest row now.
        to: u64,
    },
    /// Rows after the resume point were evicted: answer
    /// `resume_point_gone` naming `earliest` (the rows between are lost),
    /// then replay `earliest..=latest`, what the store still holds.
    Gone {
        /// The oldest row held.
        earliest: u64,
        /// The newest row.
        latest: u64,
    },
    /// The resume point is beyond the newest row (another numbering):
    /// answer `resume_point_unknown` and go live from `latest + 1`.
    Unknown {
        /// The newest row.
        latest: u64,
    },
}

/// The plan for a client that holds every row up to `after` (0: none).
pub fn plan_resume(extent: StoreExtent, after: u64) -> ResumePlan {
    if after > extent.latest {
        ResumePlan::Unknown {
            latest: extent.latest,
        }
    } else if after == extent.latest {
        ResumePlan::UpToDate
    } else if after + 1 < extent.earliest {
        ResumePlan::Gone {
            earliest: extent.earliest,
            latest: extent.latest,
        }
    } else {
        ResumePlan::Replay {
            from: after + 1,
            to: extent.latest,
        }
    }
}

/// What the service should read from the store next for a feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextRead {
    /// Nothing: the feed has sent every row the store holds.
    Nothing,
    /// Read these rows and offer each to the feed, in order.
    Rows(RangeInclusive<u64>),
    /// The store evicted rows the feed still had to send: tell the client
    /// (`resume_point_gone`) and call [`StreamFeed::skip_lost`].
    Lost(RangeInclusive<u64>),
}

/// One stream's rows to one connection: replay from the store, then live,
/// each row once and in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamFeed {
    cursor: Cursor,
    replay_to: u64,
}

impl StreamFeed {
    /// The feed for a resume `plan` made against `extent`. `Gone` replays
    /// what is held (after its error); a stream not resumed (`UpToDate`, or
    /// `Unknown`: another numbering) goes live from `extent.latest + 1`.
    pub fn start(plan: ResumePlan, extent: StoreExtent) -> Self {
        match plan {
            ResumePlan::Replay { from, to } => Self {
                cursor: Cursor::after(from - 1),
                replay_to: to,
            },
            ResumePlan::Gone { earliest, latest } => Self {
                cursor: Cursor::after(earliest - 1),
                replay_to: latest,
            },
            _ => Self {
                cursor: Cursor::after(extent.latest),
                replay_to: extent.latest,
            },
        }
    }

    /// The newest row that is sent as replay (`replay: true`).
    pub fn replay_to(&self) -> u64 {
        self.replay_to
    }

    /// True once every replayed row has been sent (the stream's part of
    /// `ready`).
    pub fn replayed(&self) -> bool {
        self.cursor.last() >= self.replay_to
    }

    /// Whether row `seq` goes out as replay.
    pub fn is_replay(&self, seq: u64) -> bool {
        seq <= self.replay_to
    }

    /// The next read from a store that now holds `extent`, at most
    /// `max_rows` rows (at least one).
    pub fn next_read(&self, extent: StoreExtent, max_rows: u64) -> NextRead {
        if self.cursor.last() >= extent.latest {
            return NextRead::Nothing;
        }
        // `last < latest`, so the next row exists.
        let next = self.cursor.last() + 1;
        if next < extent.earliest {
            NextRead::Lost(next..=extent.earliest - 1)
        } else {
            let last = next.saturating_add(max_rows.max(1) - 1).min(extent.latest);
            NextRead::Rows(next..=last)
        }
    }

    /// After [`NextRead::Lost`]: go on from the oldest row held.
    pub fn skip_lost(&mut self, extent: StoreExtent) {
        self.cursor.skip_to(extent.earliest - 1);
    }

    /// Offers a row, read from the store or arriving live. Send it only on
    /// [`Offer::Next`]; on `Ahead` drop it (the store holds it, and
    /// [`next_read`](Self::next_read) brings it in order).
    pub fn offer(&mut self, seq: u64) -> Offer {
        self.cursor.offer(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(e: u64, l: u64) -> StoreExtent {
        StoreExtent::new(e, l).unwrap()
    }

    #[test]
    fn extents() {
        assert_eq!(StoreExtent::new(0, 5), None);
        assert_eq!(StoreExtent::new(7, 5), None);
        assert!(StoreExtent::new(6, 5).is_some(), "everything evicted");
        assert_eq!(StoreExtent::new(1, 0), Some(StoreExtent::EMPTY));
    }

    #[test]
    fn plans() {
        let e = extent(10, 20);
        assert_eq!(plan_resume(e, 20), ResumePlan::UpToDate);
        assert_eq!(plan_resume(e, 15), ResumePlan::Replay { from: 16, to: 20 });
        assert_eq!(
            plan_resume(e, 9),
            ResumePlan::Replay { from: 10, to: 20 },
            "the point just before the oldest"
        );
        assert_eq!(
            plan_resume(e, 8),
            ResumePlan::Gone {
                earliest: 10,
                latest: 20
            }
        );
        assert_eq!(
            plan_resume(e, 0),
            ResumePlan::Gone {
                earliest: 10,
                latest: 20
            }
        );
        assert_eq!(plan_resume(e, 21), ResumePlan::Unknown { latest: 20 });
        assert_eq!(
            plan_resume(extent(1, 20), 0),
            ResumePlan::Replay { from: 1, to: 20 }
        );
        assert_eq!(plan_resume(StoreExtent::EMPTY, 0), ResumePlan::UpToDate);
        assert_eq!(plan_resume(extent(21, 20), 20), ResumePlan::UpToDate);
        assert_eq!(
            plan_resume(extent(21, 20), 19),
            ResumePlan::Gone {
                earliest: 21,
                latest: 20
            }
        );
    }

    #[test]
    fn the_last_sequence_number_is_taken_and_resumed_from_without_overflow() {
        let mut c = Cursor::after(u64::MAX - 2);
        assert_eq!(
            c.offer(u64::MAX),
            Offer::Ahead {
                missing: u64::MAX - 1..=u64::MAX - 1
            }
        );
        assert_eq!(c.offer(u64::MAX - 1), Offer::Next);
        assert_eq!(c.offer(u64::MAX), Offer::Next);
        assert_eq!(c.last(), u64::MAX);
        assert_eq!(c.offer(u64::MAX), Offer::Duplicate);
        assert_eq!(c.offer(1), Offer::Duplicate);
        assert_eq!(
            Cursor::after(u64::MAX).last(),
            u64::MAX,
            "the resume point kept"
        );
        c.skip_to(u64::MAX);
        assert_eq!(c.last(), u64::MAX);

        let e = extent(u64::MAX - 1, u64::MAX);
        let mut f = StreamFeed::start(plan_resume(e, u64::MAX - 2), e);
        assert_eq!(f.next_read(e, 100), NextRead::Rows(u64::MAX - 1..=u64::MAX));
        assert_eq!(f.offer(u64::MAX - 1), Offer::Next);
        assert!(!f.replayed());
        assert_eq!(f.offer(u64::MAX), Offer::Next);
        assert!(f.replayed());
        assert_eq!(f.next_read(e, 100), NextRead::Nothing);
        let f = StreamFeed::start(plan_resume(e, u64::MAX), e);
        assert!(f.replayed());
        assert_eq!(f.next_read(e, 100), NextRead::Nothing);
    }

    #[test]
    fn a_feed_reads_in_chunks_then_goes_live() {
        let e = extent(1, 10);
        let mut f = StreamFeed::start(plan_resume(e, 3), e);
        assert!(!f.replayed());
        assert_eq!(f.next_read(e, 4), NextRead::Rows(4..=7));
        for s in 4..=7 {
            assert_eq!(f.offer(s), Offer::Next);
        }
        // Row 11 is stored and broadcast while the replay is still going.
        let e = extent(1, 11);
        assert!(
            matches!(f.offer(11), Offer::Ahead { .. }),
            "dropped: the store has it"
        );
        assert_eq!(f.next_read(e, 100), NextRead::Rows(8..=11));
        for s in 8..=11 {
            assert_eq!(f.offer(s), Offer::Next);
        }
        assert!(f.replayed());
        assert!(f.is_replay(10) && !f.is_replay(11));
        assert_eq!(f.next_read(e, 100), NextRead::Nothing);
        assert_eq!(f.offer(12), Offer::Next, "live");
    }

    #[test]
    fn eviction_during_a_replay_is_reported_not_skipped_silently() {
        let e = extent(1, 10);
        let mut f = StreamFeed::start(plan_resume(e, 2), e);
        let e = extent(6, 12);
        assert_eq!(f.next_read(e, 100), NextRead::Lost(3..=5));
        f.skip_lost(e);
        assert_eq!(f.next_read(e, 100), NextRead::Rows(6..=12));
    }

    #[test]
    fn a_gone_resume_point_replays_what_is_held() {
        let e = extent(5, 9);
        let mut f = StreamFeed::start(plan_resume(e, 1), e);
        assert_eq!(f.next_read(e, 100), NextRead::Rows(5..=9));
        for s in 5..=9 {
            assert_eq!(f.offer(s), Offer::Next);
        }
        assert!(f.replayed());
    }

    #[test]
    fn a_stream_not_resumed_goes_live_from_the_newest_row() {
        let e = extent(5, 9);
        for plan in [plan_resume(e, 30), plan_resume(e, 9)] {
            let mut f = StreamFeed::start(plan, e);
            assert!(f.replayed());
            assert_eq!(f.next_read(e, 10), NextRead::Nothing);
            assert_eq!(f.offer(10), Offer::Next);
        }
    }
}
