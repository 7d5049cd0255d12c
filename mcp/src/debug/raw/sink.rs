//! The debug slot's observer: what a session's task pays per line while
//! capture is on. It copies the line, not yet masked, onto the end of its
//! session's staging lane, with the time the session stamped it, under a
//! short lock. That is all: no mask, no clock read, no wake-up, and no
//! allocation per line (the lanes keep their buffers' capacity, the actor
//! handing emptied ones back). The tap actor masks each line
//! (`rete_redact::mask_line`), cuts it at 2,048 bytes and builds the stored
//! line on its own thread, when it drains the lanes: before every read, and
//! once every [`DRAIN_EVERY`] otherwise. An unmasked line lives only in a
//! lane, until that drain, and is never logged or `Debug`-printed. The sink
//! never waits on the actor or on a reader (a reader's copy runs in the
//! actor, never under this lock).
//!
//! # Why a lane holds lines until a drain rather than waking the actor
//! A lane keeps only a session's newest lines: its lines are in
//! generations of [`GEN_LINES`], and when a new one starts past [`GENS`]
//! the oldest is dropped, its lines counted as lost (they take their places
//! in the tap and count as dropped at capacity, as if the ring had evicted
//! them). So a lane holds at least the ring's 5,000 newest lines and at
//! most [`GEN_LINES`] more, and between two drains the actor masks at most
//! that many of a session's lines, however many arrived. Waking the actor
//! every thousand lines instead (as this sink did) made it read every
//! line's bytes from the session's core and hand the emptied buffers back,
//! so the session's thread wrote each line into memory the other core held:
//! at the ingest bench's rate that traffic cost the session's thread more
//! than the copy itself (`benches/capture_cost.rs`, in the README).
//!
//! Copying beats moving the session's own `String` here: a line freed on
//! the thread that allocated it stays in that thread's allocator cache,
//! where a line freed by the actor's thread makes both threads contend for
//! the allocator's lock on every line.
//!
//! At most [`COPIED_MAX`] bytes of a line are copied (IRC lines are far
//! shorter); the rest counts as dropped in the cut's `…[+N bytes]`. A
//! generation also ends at [`GEN_BYTES`], so a lane's memory is bounded
//! whatever its lines' length; a burst of lines longer than 2,048 bytes
//! between two drains can so keep fewer than 5,000 of them.

use crate::debug::raw::actor::TapMsg;
use crate::debug::raw::ring::{CAPACITY, MAX_LINE_BYTES};
use parking_lot::Mutex;
use ractor::ActorRef;
use rete_actors::wall_clock::now;
use rete_actors::{Direction, RawCapture, RawObserver};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::collections::VecDeque;
use std::time::Duration;

/// How often the tap actor drains the lanes when no read asks it to: the
/// longest an unmasked line waits, and the most lines a busy session's
/// lane drops between two drains is whatever arrived beyond its newest
/// 5,000 in that time.
pub(crate) const DRAIN_EVERY: Duration = Duration::from_secs(1);

/// Lines per generation of a lane.
pub(crate) const GEN_LINES: usize = 1_000;

/// Generations a lane holds, the newest being filled: the others, full,
/// are the ring's 5,000 lines.
pub(crate) const GENS: usize = CAPACITY / GEN_LINES + 1;

/// Bytes past which a generation ends early: a thousand lines at the
/// stored length, so long lines cannot make a lane's memory unbounded.
pub(crate) const GEN_BYTES: usize = GEN_LINES * MAX_LINE_BYTES;

/// An emptied generation whose bytes grew past this is freed rather than
/// kept for reuse: a burst of long lines does not pin its memory.
const REUSED_BYTES_MAX: usize = GEN_LINES * 512;

/// The most bytes of one line copied for the actor: enough that masking
/// sees every word it could mask before the 2,048-byte cut.
pub(crate) const COPIED_MAX: usize = 8 * MAX_LINE_BYTES;

// A generation's byte offsets are u32.
const _: () = assert!(GEN_BYTES + COPIED_MAX < u32::MAX as usize);

/// The length of the longest start of `line` of at most `max` bytes that
/// ends on a character boundary.
pub(crate) fn prefix_len(line: &str, max: usize) -> usize {
    if line.len() <= max {
        return line.len();
    }
    let mut kept = max;
    while !line.is_char_boundary(kept) {
        kept -= 1;
    }
    kept
}

/// What a session handed over, waiting for the actor.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A connection attempt.
    Connecting,
    /// A line: `bytes[start..start + len]` of its generation is the part
    /// copied of a line of `original_len` bytes; `unmasked` when the actor
    /// must mask it (false for a line handed over as given, see
    /// [`RawObserver`] below).
    Line {
        dir: Direction,
        unmasked: bool,
        time: UnixMillis,
        start: u32,
        len: u32,
        original_len: u32,
    },
}

// What a line writes onto its lane besides its bytes.
const _: () = assert!(std::mem::size_of::<Event>() <= 24);

/// Lines a lane dropped, in order with the connection attempts among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// This many lines, in a row.
    Lines(u64),
    /// A connection attempt.
    Connecting,
}

/// Up to [`GEN_LINES`] events and the bytes their lines point into. No
/// `Debug`: the bytes are not masked yet.
#[derive(Default)]
pub(crate) struct Gen {
    pub(crate) events: Vec<Event>,
    pub(crate) bytes: String,
}

impl Gen {
    fn is_full(&self, adding: usize) -> bool {
        self.events.len() >= GEN_LINES
            || (!self.events.is_empty() && self.bytes.len() + adding > GEN_BYTES)
    }
}

/// One session's staging: what was dropped, oldest first, then the
/// generations held, oldest first, the last being filled.
#[derive(Default)]
pub(crate) struct Lane {
    pub(crate) skipped: Vec<Skip>,
    pub(crate) gens: VecDeque<Gen>,
    /// Emptied generations, their capacity kept for the next ones.
    pub(crate) free: Vec<Gen>,
}

impl Lane {
    /// The generation to add an event of `adding` bytes to: the newest, or
    /// a new one when it is full, dropping the oldest past [`GENS`].
    fn filling(&mut self, adding: usize) -> &mut Gen {
        if self.gens.back().is_none_or(|g| g.is_full(adding)) {
            if self.gens.len() >= GENS {
                if let Some(oldest) = self.gens.pop_front() {
                    self.skip(&oldest);
                    self.recycle(oldest);
                }
            }
            let fresh = self.free.pop().unwrap_or_default();
            self.gens.push_back(fresh);
        }
        // Pushed just above when it was missing or full.
        self.gens.back_mut().unwrap_or_else(|| unreachable!())
    }

    /// Records a dropped generation's events: its lines as counts, its
    /// connection attempts as they were (two in a row are one: a tap
    /// without lines is not started).
    fn skip(&mut self, gen: &Gen) {
        for event in &gen.events {
            match (event, self.skipped.last_mut()) {
                (Event::Line { .. }, Some(Skip::Lines(n))) => *n += 1,
                (Event::Line { .. }, _) => self.skipped.push(Skip::Lines(1)),
                (Event::Connecting, Some(Skip::Connecting)) => {}
                (Event::Connecting, _) => self.skipped.push(Skip::Connecting),
            }
        }
    }

    /// Keeps an emptied generation for reuse, unless its bytes grew large.
    pub(crate) fn recycle(&mut self, mut gen: Gen) {
        gen.events.clear();
        gen.bytes.clear();
        if gen.bytes.capacity() <= REUSED_BYTES_MAX && self.free.len() < GENS {
            self.free.push(gen);
        }
    }
}

/// Every session's lane, and the ids they belong to, by index (so a line
/// costs no id copy).
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) sessions: Vec<SessionId>,
    pub(crate) lanes: Vec<Lane>,
    /// Set when capture went off, until it is on again: a line a session
    /// hands over after that, through the copy of the observers it read
    /// just before (see `rete_actors::raw_tap::TapView`), is dropped.
    closed: bool,
}

impl Pending {
    fn lane(&mut self, session: &SessionId) -> &mut Lane {
        let i = match self.sessions.iter().position(|s| s == session) {
            Some(i) => i,
            None => {
                self.sessions.push(session.clone());
                self.lanes.push(Lane::default());
                self.sessions.len() - 1
            }
        };
        &mut self.lanes[i]
    }
}

/// The observer set in the engine's debug slot.
#[derive(Default)]
pub(crate) struct Sink {
    pub(crate) pending: Mutex<Pending>,
    /// The tap actor now running (swapped by its supervisor on restart).
    pub(crate) actor: Mutex<Option<ActorRef<TapMsg>>>,
}

impl Sink {
    /// Takes every lane's dropped counts and generations into `into`, whose
    /// lanes the actor has emptied since the last take: their emptied
    /// generations go back to the sink's lanes for reuse.
    pub(crate) fn take(&self, into: &mut Pending) {
        let mut p = self.pending.lock();
        into.sessions.clone_from(&p.sessions);
        into.lanes.resize_with(p.lanes.len(), Lane::default);
        for (lane, taken) in p.lanes.iter_mut().zip(&mut into.lanes) {
            std::mem::swap(&mut lane.skipped, &mut taken.skipped);
            std::mem::swap(&mut lane.gens, &mut taken.gens);
            while let Some(gen) = taken.free.pop() {
                lane.recycle(gen);
            }
        }
    }

    /// Drops everything pending and refuses lines until [`Sink::open`]
    /// (capture switched off).
    pub(crate) fn clear(&self) {
        let mut p = self.pending.lock();
        *p = Pending {
            closed: true,
            ..Pending::default()
        };
    }

    /// Takes lines again (capture switched on).
    pub(crate) fn open(&self) {
        self.pending.lock().closed = false;
    }
}

impl Sink {
    fn push(
        &self,
        session: &SessionId,
        time: UnixMillis,
        dir: Direction,
        line: &str,
        unmasked: bool,
    ) {
        let copied = &line[..prefix_len(line, COPIED_MAX)];
        let mut p = self.pending.lock();
        if p.closed {
            return;
        }
        let gen = p.lane(session).filling(copied.len());
        let start = gen.bytes.len();
        gen.bytes.push_str(copied);
        gen.events.push(Event::Line {
            dir,
            unmasked,
            time,
            start: start as u32,
            len: copied.len() as u32,
            original_len: u32::try_from(line.len()).unwrap_or(u32::MAX),
        });
    }
}

impl RawCapture for Sink {
    fn on_line(&self, session: &SessionId, time: UnixMillis, direction: Direction, line: &str) {
        self.push(session, time, direction, line, true);
    }

    fn on_connecting(&self, session: &SessionId) {
        let mut p = self.pending.lock();
        if !p.closed {
            p.lane(session).filling(0).events.push(Event::Connecting);
        }
    }
}

/// Lines handed over directly (benchmarks and tests that feed the tap
/// without a socket) are stored as given, stamped now: a test can so store
/// an unmasked line and see the screens on the way out catch it.
impl RawObserver for Sink {
    fn on_raw(&self, session: &SessionId, direction: Direction, line: &str) {
        self.push(session, now(), direction, line, false);
    }

    fn on_connecting(&self, session: &SessionId) {
        RawCapture::on_connecting(self, session);
    }
}
