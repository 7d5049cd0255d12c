//! One session's collection: which rows changed since the last batch, and
//! when the next batch may read them.
//!
//! The engine signals every stored row as (buffer, seq). Signals for buffers
//! some subscription covers are queued here as one seq range per buffer; a
//! batch then reads each queued range once, in one read of the session, with
//! the session's nick. Timing follows the contract: the first signal after a
//! quiet spell starts a batch at once; while a batch is being read, signals
//! queue; after it, if anything queued, a fixed pause ([`PAUSE`]) runs before
//! the next batch takes everything queued meanwhile. So a busy session costs
//! at most one read per pause however fast it scrolls.
//!
//! A change is a run of consecutive seqs in one buffer: rows appended one
//! after another extend the buffer's run, so a busy channel is one change
//! however many lines it gets between batches. (Rows carry their own
//! history mark, so a run never has to be split to tell live from history.)
//! A seq that does not follow the run starts another change.
//!
//! The queue is bounded: past [`MAX_PENDING`] changes, the busiest buffer's
//! are merged into one range marked evicted, so nothing from it is delivered
//! or counted. A signal whose seq is not above the last one seen for its
//! buffer means the buffer's sequence restarted (the session was removed and
//! added again): that range is marked evicted too.

use rete_engine::ids::BufferId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The fixed pause between one batch and the next while signals keep coming.
pub(crate) const PAUSE: Duration = Duration::from_millis(20);

/// At most this many changes are queued per session.
pub(crate) const MAX_PENDING: usize = 256;

/// What a batch reads from one buffer: rows `from..=through` by seq.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    /// The buffer.
    pub(crate) buffer: BufferId,
    /// The first seq signalled.
    pub(crate) from: u64,
    /// The last seq signalled.
    pub(crate) through: u64,
    /// True when Rete cannot tell which rows of the range were live (the
    /// queue overflowed or the sequence restarted): nothing from it is
    /// delivered or counted, and the buffer is reported evicted.
    pub(crate) evicted: bool,
}

/// Where the collector is between batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Nothing queued and nothing being read: the next signal starts a batch.
    Idle,
    /// A batch is being read; signals queue for the next.
    Reading,
    /// The pause after a batch; the next batch starts when it is over.
    Pausing,
}

/// What the caller must do after feeding the collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing now.
    Wait,
    /// Start a batch now: call [`Collector::take_batch`] and read it.
    ReadNow,
    /// Call [`Collector::pause_over`] at this instant.
    PauseUntil(Instant),
}

#[derive(Clone, Debug)]
struct Queued {
    range: Range,
    changes: usize,
}

/// One session's pending changes and batch timing.
#[derive(Debug)]
pub(crate) struct Collector {
    phase: Phase,
    queue: Vec<Queued>,
    changes: usize,
    /// The highest seq signalled per buffer, to notice a restarted sequence.
    last_seen: HashMap<BufferId, u64>,
    /// A batch must run even with no rows queued (a subscription's starting
    /// point is to be read).
    wanted: bool,
}

impl Default for Collector {
    fn default() -> Collector {
        Collector::new()
    }
}

impl Collector {
    /// An idle collector with nothing queued.
    pub(crate) fn new() -> Collector {
        Collector {
            phase: Phase::Idle,
            queue: Vec::new(),
            changes: 0,
            last_seen: HashMap::new(),
            wanted: false,
        }
    }

    /// Where it is.
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    /// Changes queued for the next batch.
    #[cfg(test)]
    pub(crate) fn pending_changes(&self) -> usize {
        self.changes
    }

    /// A row was stored in a covered buffer.
    pub(crate) fn signal(&mut self, buffer: &BufferId, seq: u64) -> Next {
        let restarted = self
            .last_seen
            .insert(buffer.clone(), seq)
            .is_some_and(|last| seq <= last);
        match self.queue.iter_mut().find(|q| &q.range.buffer == buffer) {
            Some(q) => {
                let follows = seq == q.range.through.saturating_add(1);
                q.range.from = q.range.from.min(seq);
                q.range.through = q.range.through.max(seq);
                q.range.evicted |= restarted;
                if follows {
                    return Next::Wait;
                }
                q.changes += 1;
            }
            None => self.queue.push(Queued {
                range: Range {
                    buffer: buffer.clone(),
                    from: seq,
                    through: seq,
                    evicted: restarted,
                },
                changes: 1,
            }),
        }
        self.changes += 1;
        if self.changes > MAX_PENDING {
            self.merge_busiest();
        }
        self.start_if_idle()
    }

    /// A batch is wanted even without rows (to read a starting point).
    pub(crate) fn want_batch(&mut self) -> Next {
        self.wanted = true;
        self.start_if_idle()
    }

    /// Signals were lost (the event stream lagged). Returns the highest seq
    /// seen per buffer until then — rows past it may never be signalled, so
    /// the caller compares it with what the buffers hold — and wants a batch
    /// to read that. What was seen is forgotten, so the next signal for a
    /// buffer cannot be judged a restart.
    pub(crate) fn lagged(&mut self) -> (HashMap<BufferId, u64>, Next) {
        let seen = std::mem::take(&mut self.last_seen);
        (seen, self.want_batch())
    }

    /// Takes everything queued as the batch to read now.
    pub(crate) fn take_batch(&mut self) -> Vec<Range> {
        self.phase = Phase::Reading;
        self.wanted = false;
        self.changes = 0;
        self.queue.drain(..).map(|q| q.range).collect()
    }

    /// The batch's read finished (or failed). Returns when to look again.
    pub(crate) fn batch_done(&mut self, now: Instant) -> Next {
        if self.queue.is_empty() && !self.wanted {
            self.phase = Phase::Idle;
            Next::Wait
        } else {
            self.phase = Phase::Pausing;
            Next::PauseUntil(now + PAUSE)
        }
    }

    /// The pause is over: a batch starts when anything is queued.
    pub(crate) fn pause_over(&mut self) -> Next {
        if self.phase != Phase::Pausing {
            return Next::Wait;
        }
        if self.queue.is_empty() && !self.wanted {
            self.phase = Phase::Idle;
            Next::Wait
        } else {
            Next::ReadNow
        }
    }

    fn start_if_idle(&mut self) -> Next {
        if self.phase == Phase::Idle {
            Next::ReadNow
        } else {
            Next::Wait
        }
    }

    /// Merges the busiest buffer's changes into one evicted range, counted
    /// as one change.
    fn merge_busiest(&mut self) {
        let Some(busiest) = self.queue.iter_mut().max_by_key(|q| q.changes) else {
            return;
        };
        self.changes -= busiest.changes - 1;
        busiest.changes = 1;
        busiest.range.evicted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(n: u8) -> BufferId {
        BufferId::from_client(&format!("B{n}"))
    }

    #[test]
    fn the_first_signal_after_a_quiet_spell_reads_at_once() {
        let mut c = Collector::new();
        assert_eq!(c.signal(&buf(1), 5), Next::ReadNow);
        let batch = c.take_batch();
        assert_eq!(
            batch,
            [Range {
                buffer: buf(1),
                from: 5,
                through: 5,
                evicted: false
            }]
        );
        assert_eq!(c.phase(), Phase::Reading);
    }

    #[test]
    fn signals_during_a_read_wait_for_the_pause_then_go_in_one_batch() {
        let t0 = Instant::now();
        let mut c = Collector::new();
        c.signal(&buf(1), 1);
        c.take_batch();
        assert_eq!(c.signal(&buf(1), 2), Next::Wait);
        assert_eq!(c.signal(&buf(2), 7), Next::Wait);
        assert_eq!(c.signal(&buf(1), 3), Next::Wait);
        assert_eq!(c.pending_changes(), 2, "a run of seqs is one change");
        assert_eq!(c.batch_done(t0), Next::PauseUntil(t0 + PAUSE));
        assert_eq!(c.signal(&buf(1), 4), Next::Wait, "the pause is fixed");
        assert_eq!(c.pause_over(), Next::ReadNow);
        let batch = c.take_batch();
        assert_eq!(batch.len(), 2, "each buffer once per batch");
        assert_eq!((batch[0].from, batch[0].through), (2, 4));
        assert_eq!((batch[1].from, batch[1].through), (7, 7));
        assert_eq!(c.batch_done(t0), Next::Wait);
        assert_eq!(c.phase(), Phase::Idle);
    }

    #[test]
    fn a_pause_with_nothing_queued_goes_idle() {
        let mut c = Collector::new();
        c.signal(&buf(1), 1);
        c.take_batch();
        c.signal(&buf(1), 2);
        c.batch_done(Instant::now());
        c.take_batch();
        assert_eq!(c.batch_done(Instant::now()), Next::Wait);
        assert_eq!(c.pause_over(), Next::Wait);
        assert_eq!(c.signal(&buf(1), 3), Next::ReadNow);
    }

    #[test]
    fn a_flood_into_one_buffer_is_one_change() {
        let mut c = Collector::new();
        c.signal(&buf(1), 1);
        c.take_batch();
        for seq in 2..=10_000 {
            c.signal(&buf(1), seq);
        }
        assert_eq!(c.pending_changes(), 1);
        c.batch_done(Instant::now());
        c.pause_over();
        let batch = c.take_batch();
        assert!(!batch[0].evicted && (batch[0].from, batch[0].through) == (2, 10_000));
    }

    #[test]
    fn past_256_changes_the_busiest_buffer_becomes_one_evicted_range() {
        let mut c = Collector::new();
        c.signal(&buf(9), 1);
        c.take_batch();
        // Every other seq: each signal starts a new run, a change of its own.
        for seq in 1..=200 {
            c.signal(&buf(1), seq * 2);
        }
        for seq in 1..=56 {
            c.signal(&buf(2), seq * 2);
        }
        assert_eq!(c.pending_changes(), 256);
        c.signal(&buf(2), 114);
        assert_eq!(c.pending_changes(), 58, "buffer 1's 200 became one");
        c.batch_done(Instant::now());
        c.pause_over();
        let batch = c.take_batch();
        assert!(batch[0].evicted && (batch[0].from, batch[0].through) == (2, 400));
        assert!(!batch[1].evicted && batch[1].through == 114);
    }

    #[test]
    fn a_restarted_sequence_is_evicted() {
        let mut c = Collector::new();
        c.signal(&buf(1), 40);
        c.take_batch();
        c.signal(&buf(1), 1);
        c.batch_done(Instant::now());
        c.pause_over();
        assert!(c.take_batch()[0].evicted);
        c.batch_done(Instant::now());
        let (seen, next) = c.lagged();
        assert_eq!(seen.get(&buf(1)), Some(&1));
        assert_eq!(next, Next::ReadNow, "a batch reads what the buffers hold");
        assert!(c.take_batch().is_empty());
        c.batch_done(Instant::now());
        c.signal(&buf(1), 1);
        assert!(!c.take_batch()[0].evicted, "forgotten, so not a restart");
    }

    #[test]
    fn a_wanted_batch_runs_without_rows() {
        let mut c = Collector::new();
        assert_eq!(c.want_batch(), Next::ReadNow);
        assert!(c.take_batch().is_empty());
        assert_eq!(c.batch_done(Instant::now()), Next::Wait);
        c.signal(&buf(1), 1);
        c.take_batch();
        c.want_batch();
        assert!(matches!(c.batch_done(Instant::now()), Next::PauseUntil(_)));
        assert_eq!(c.pause_over(), Next::ReadNow);
    }
}
