//! The debug slot's observer: what a session's task pays per line while
//! capture is on. It stamps the line, cuts it, and appends it to a pending
//! list under a short lock, waking the tap actor once every [`DRAIN_AT`]
//! lines; it never waits on the actor or on a reader (a reader's copy runs
//! in the actor, never under this lock).
//!
//! The list is bounded: past [`PENDING_MAX`] (an actor that is not draining,
//! say while it restarts) a line is counted as lost and later reported as
//! dropped at capacity, never queued without bound.

use crate::debug::raw::actor::TapMsg;
use crate::debug::raw::ring::stored;
use parking_lot::Mutex;
use ractor::ActorRef;
use rete_actors::{Direction, RawObserver};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Pending lines that wake the actor: batching keeps the wake (a task
/// unpark) off nearly every line. Reads drain first, so a reader never
/// misses what is pending.
pub(crate) const DRAIN_AT: usize = 256;

/// Pending lines past which new ones are counted as lost.
pub(crate) const PENDING_MAX: usize = 20_000;

/// What a session handed over, waiting for the actor.
#[derive(Debug)]
pub(crate) enum Event {
    /// A connection attempt of the session at this index.
    Connecting(u32),
    /// A line.
    Line {
        session: u32,
        time: UnixMillis,
        dir: Direction,
        text: Arc<str>,
        kept: Option<usize>,
    },
}

/// The pending list and the session ids its events name by index (so a
/// line costs no id copy).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) sessions: Vec<SessionId>,
    pub(crate) events: Vec<Event>,
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
    /// Takes every pending event (and the ids and losses they refer to),
    /// leaving the list empty.
    pub(crate) fn take(&self) -> Pending {
        let mut p = self.pending.lock();
        let events = std::mem::take(&mut p.events);
        let lost = p.lost.iter_mut().map(std::mem::take).collect();
        Pending {
            sessions: p.sessions.clone(),
            events,
            lost,
        }
    }

    /// Drops everything pending (capture switched off).
    pub(crate) fn clear(&self) {
        let mut p = self.pending.lock();
        *p = Pending::default();
    }

    fn push(&self, session: &SessionId, make: impl FnOnce(u32) -> Event) {
        let wake = {
            let mut p = self.pending.lock();
            let i = p.index(session);
            if p.events.len() >= PENDING_MAX {
                p.lost[i as usize] += 1;
                false
            } else {
                p.events.push(make(i));
                p.events.len() % DRAIN_AT == 0
            }
        };
        if wake {
            if let Some(actor) = self.actor.lock().as_ref() {
                let _ = actor.cast(TapMsg::Drain);
            }
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
        // Built before the lock, so the lock covers only the push.
        let (text, kept) = stored(line);
        let time = now();
        self.push(session, |session| Event::Line {
            session,
            time,
            dir: direction,
            text,
            kept,
        });
    }

    fn on_connecting(&self, session: &SessionId) {
        self.push(session, Event::Connecting);
    }
}
