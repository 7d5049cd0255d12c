//! The debug slot's observer: what a session's task pays per line while
//! capture is on. It copies the line, not yet masked, onto the end of one
//! shared byte buffer and records where it is, with the time the session
//! stamped it, under a short lock; it wakes the tap actor once every
//! [`DRAIN_AT`] lines. That is all: no mask, no clock read, no allocation
//! per line (the buffers keep their capacity, the actor swapping in emptied
//! ones). The tap actor masks each line (`rete_redact::mask_line`), cuts it
//! at 2,048 bytes and builds the stored line on its own thread, before it
//! is stored; it frees evicted lines there too. An unmasked line lives only
//! in the pending buffer, until the next drain, and is never logged or
//! `Debug`-printed. The sink never waits on the actor or on a reader (a
//! reader's copy runs in the actor, never under this lock).
//!
//! Copying beats moving the session's own `String` here: a line freed on
//! the thread that allocated it stays in that thread's allocator cache,
//! where a line freed by the actor's thread makes both threads contend for
//! the allocator's lock on every line.
//!
//! The list is bounded: past [`PENDING_MAX`] lines (an actor that is not
//! draining, say while it restarts) a line is counted as lost and later
//! reported as dropped at capacity, never queued without bound. At most
//! [`COPIED_MAX`] bytes of a line are copied (IRC lines are far shorter);
//! the rest counts as dropped in the cut's `…[+N bytes]`.

use crate::debug::raw::actor::TapMsg;
use crate::debug::raw::ring::MAX_LINE_BYTES;
use parking_lot::Mutex;
use ractor::ActorRef;
use rete_actors::{Direction, RawCapture, RawObserver};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::time::{SystemTime, UNIX_EPOCH};

/// Pending lines that wake the actor: batching keeps the wake (a task
/// unpark, a system call when the runtime's threads sleep) off nearly every
/// line. Reads drain first, so a reader never misses what is pending.
pub(crate) const DRAIN_AT: usize = 1_024;

/// Pending lines past which new ones are counted as lost.
pub(crate) const PENDING_MAX: usize = 20_000;

/// The most bytes of one line copied for the actor: enough that masking
/// sees every word it could mask before the 2,048-byte cut.
pub(crate) const COPIED_MAX: usize = 8 * MAX_LINE_BYTES;

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
    /// A connection attempt of the session at this index.
    Connecting(u32),
    /// A line: `bytes[start..start + len]` is the part copied of a line of
    /// `original_len` bytes; `unmasked` when the actor must mask it (false
    /// for a line handed over as given, see [`RawObserver`] below).
    /// (Offsets are u32, keeping an event 32 bytes: the pending bytes stay
    /// under `PENDING_MAX * COPIED_MAX`, far below 4 GiB.)
    Line {
        session: u32,
        dir: Direction,
        unmasked: bool,
        time: UnixMillis,
        start: u32,
        len: u32,
        original_len: u32,
    },
}

// What a line writes onto the pending list besides its bytes.
const _: () = assert!(std::mem::size_of::<Event>() <= 32);

/// The pending events, the bytes their lines point into, and the session
/// ids they name by index (so a line costs no id copy). No `Debug`: the
/// bytes are not masked yet.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) sessions: Vec<SessionId>,
    pub(crate) events: Vec<Event>,
    pub(crate) bytes: String,
    /// Lines lost past [`PENDING_MAX`], by session index.
    pub(crate) lost: Vec<u64>,
}

impl Pending {
    fn index(&mut self, session: &SessionId) -> u32 {
        match self.sessions.iter().position(|s| s == session) {
            Some(i) => i as u32,
            None => {
                self.sessions.push(session.clone());
                self.lost.push(0);
                (self.sessions.len() - 1) as u32
            }
        }
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
    /// Swaps every pending event and byte into `into` (whose lists must be
    /// empty: their capacity is handed back for reuse), with the ids and
    /// losses they refer to.
    pub(crate) fn take(&self, into: &mut Pending) {
        let mut p = self.pending.lock();
        std::mem::swap(&mut p.events, &mut into.events);
        std::mem::swap(&mut p.bytes, &mut into.bytes);
        into.sessions.clone_from(&p.sessions);
        into.lost.clear();
        into.lost.extend(p.lost.iter_mut().map(std::mem::take));
    }

    /// Drops everything pending (capture switched off).
    pub(crate) fn clear(&self) {
        let mut p = self.pending.lock();
        *p = Pending::default();
    }

    fn wake(&self) {
        if let Some(actor) = self.actor.lock().as_ref() {
            let _ = actor.cast(TapMsg::Drain);
        }
    }
}

fn now() -> UnixMillis {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    UnixMillis(ms)
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
        let wake = {
            let mut p = self.pending.lock();
            let i = p.index(session);
            if p.events.len() >= PENDING_MAX {
                p.lost[i as usize] += 1;
                false
            } else {
                let start = p.bytes.len();
                p.bytes.push_str(copied);
                p.events.push(Event::Line {
                    session: i,
                    dir,
                    unmasked,
                    time,
                    start: start as u32,
                    len: copied.len() as u32,
                    original_len: u32::try_from(line.len()).unwrap_or(u32::MAX),
                });
                p.events.len() % DRAIN_AT == 0
            }
        };
        if wake {
            self.wake();
        }
    }
}

impl RawCapture for Sink {
    fn on_line(&self, session: &SessionId, time: UnixMillis, direction: Direction, line: &str) {
        self.push(session, time, direction, line, true);
    }

    fn on_connecting(&self, session: &SessionId) {
        let wake = {
            let mut p = self.pending.lock();
            let i = p.index(session);
            p.events.push(Event::Connecting(i));
            p.events.len() % DRAIN_AT == 0
        };
        if wake {
            self.wake();
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
