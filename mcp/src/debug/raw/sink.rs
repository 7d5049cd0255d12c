//! The debug slot's observer: what a session's task pays per line while
//! capture is on. It stamps the line, copies the part that is kept (at most
//! 2,048 bytes) onto the end of one shared byte buffer, and records where it
//! is, under a short lock; it wakes the tap actor once every [`DRAIN_AT`]
//! lines. It allocates nothing per line: the buffers keep their capacity, the
//! actor swapping in emptied ones, and it is the actor that builds each
//! stored line (and frees the evicted ones) on its own thread. It never waits
//! on the actor or on a reader (a reader's copy runs in the actor, never
//! under this lock).
//!
//! The list is bounded: past [`PENDING_MAX`] lines (an actor that is not
//! draining, say while it restarts) a line is counted as lost and later
//! reported as dropped at capacity, never queued without bound.

use crate::debug::raw::actor::TapMsg;
use crate::debug::raw::ring::cut_point;
use parking_lot::Mutex;
use ractor::ActorRef;
use rete_actors::{Direction, RawObserver};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::time::{SystemTime, UNIX_EPOCH};

/// Pending lines that wake the actor: batching keeps the wake (a task
/// unpark) off nearly every line. Reads drain first, so a reader never
/// misses what is pending.
pub(crate) const DRAIN_AT: usize = 256;

/// Pending lines past which new ones are counted as lost.
pub(crate) const PENDING_MAX: usize = 20_000;

/// What a session handed over, waiting for the actor.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A connection attempt of the session at this index.
    Connecting(u32),
    /// A line: `bytes[start..start + len]` is the part kept of a line of
    /// `original_len` bytes.
    Line {
        session: u32,
        time: UnixMillis,
        dir: Direction,
        start: usize,
        len: usize,
        original_len: usize,
    },
}

/// The pending events, the bytes their lines point into, and the session
/// ids they name by index (so a line costs no id copy).
#[derive(Debug, Default)]
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

impl RawObserver for Sink {
    fn on_raw(&self, session: &SessionId, direction: Direction, line: &str) {
        let kept = &line[..cut_point(line)];
        let time = now();
        let wake = {
            let mut p = self.pending.lock();
            let i = p.index(session);
            if p.events.len() >= PENDING_MAX {
                p.lost[i as usize] += 1;
                false
            } else {
                let start = p.bytes.len();
                p.bytes.push_str(kept);
                p.events.push(Event::Line {
                    session: i,
                    time,
                    dir: direction,
                    start,
                    len: kept.len(),
                    original_len: line.len(),
                });
                p.events.len() % DRAIN_AT == 0
            }
        };
        if wake {
            self.wake();
        }
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
