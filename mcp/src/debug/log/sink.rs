//! The hand-off between the layer (installed once, for the whole process)
//! and the captures (one per control server, coming and going with it).
//!
//! The sink is process-wide. It is open while at least one
//! [`Capture`](crate::debug::Capture) is on: the first to switch on opens it, the last
//! to switch off closes it, and closing clears the ring. While it is closed
//! the layer's whole cost is one relaxed atomic load ([`is_open`]).
//!
//! While open, the layer hands each line to [`push`], which numbers it and
//! casts it to the ring actor under one short lock, so lines reach the ring
//! in seq order. Until the ring actor is running (it is started on the
//! first open, on the runtime of the code that opened the sink, and again
//! whenever it is found gone), lines wait here, at most the ring's capacity
//! of them, and are handed over in order when it registers.

use super::actor::{LogSupervisor, RingMsg, RingRef};
use super::line::{Draft, LogLine};
use super::ring::CAPACITY;
use parking_lot::Mutex;
use ractor::Actor;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

static OPEN: AtomicBool = AtomicBool::new(false);

static STATE: Mutex<SinkState> = Mutex::new(SinkState {
    holders: 0,
    last_seq: 0,
    ring: None,
    pending: VecDeque::new(),
    starting: false,
});

/// Serialises starting the ring, so two readers never start two.
static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct SinkState {
    /// Captures switched on.
    holders: usize,
    /// The seq of the newest line numbered; never reset, so a clear leaves
    /// a gap rather than reusing numbers.
    last_seq: u64,
    /// The ring actor, once it has registered.
    ring: Option<RingRef>,
    /// Lines numbered before the ring registered, oldest first.
    pending: VecDeque<Arc<LogLine>>,
    /// True while a start of the ring was spawned and has not registered.
    starting: bool,
}

/// True while some capture is on: the one check the layer makes per event.
#[inline]
pub(crate) fn is_open() -> bool {
    OPEN.load(Ordering::Relaxed)
}

/// A capture switched on. Returns the seq of the newest line numbered so
/// far: this capture's window is every line after it.
pub(crate) fn open() -> u64 {
    let mut state = STATE.lock();
    state.holders += 1;
    OPEN.store(true, Ordering::Relaxed);
    if state.ring.is_none() {
        start_in_background(&mut state);
    }
    state.last_seq
}

/// The seq of the newest line numbered so far: every line after it is
/// numbered later.
pub(crate) fn last_seq() -> u64 {
    STATE.lock().last_seq
}

/// A capture switched off. The last one closes the sink and clears the ring.
pub(crate) fn close() {
    let mut state = STATE.lock();
    state.holders = state.holders.saturating_sub(1);
    if state.holders > 0 {
        return;
    }
    OPEN.store(false, Ordering::Relaxed);
    state.pending.clear();
    if let Some(ring) = &state.ring {
        if ring.cast(RingMsg::Clear).is_err() {
            state.ring = None;
        }
    }
}

/// Numbers a line and hands it to the ring (or keeps it until the ring
/// registers). Dropped when the sink closed since the layer looked.
pub(crate) fn push(draft: Draft) {
    let mut state = STATE.lock();
    if state.holders == 0 {
        return;
    }
    state.last_seq += 1;
    let line = Arc::new(draft.numbered(state.last_seq));
    if let Some(ring) = &state.ring {
        match ring.cast(RingMsg::Push(line)) {
            Ok(()) => return,
            Err(ractor::MessagingErr::SendErr(RingMsg::Push(line))) => {
                // The ring is gone (its runtime ended): keep the line for
                // the next one.
                state.ring = None;
                keep(&mut state, line);
            }
            Err(_) => state.ring = None,
        }
        start_in_background(&mut state);
        return;
    }
    keep(&mut state, line);
}

fn keep(state: &mut SinkState, line: Arc<LogLine>) {
    if state.pending.len() == CAPACITY {
        state.pending.pop_front();
    }
    state.pending.push_back(line);
}

/// Starts the ring on the current runtime, unless a start is under way or
/// there is no runtime here (the next open, push or read tries again).
fn start_in_background(state: &mut SinkState) {
    if state.starting {
        return;
    }
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        state.starting = true;
        handle.spawn(async {
            let _ = ring().await;
        });
    }
}

/// The ring actor took its place: pending lines go to it first, in order.
pub(super) fn register(ring: RingRef) {
    let mut state = STATE.lock();
    for line in state.pending.drain(..) {
        let _ = ring.cast(RingMsg::Push(line));
    }
    if state.holders == 0 {
        let _ = ring.cast(RingMsg::Clear);
    }
    state.ring = Some(ring);
    state.starting = false;
}

/// The ring actor failed; its successor registers when it starts.
pub(super) fn unregister() {
    STATE.lock().ring = None;
}

/// Forgets a ring that no longer answers, so the next [`ring`] starts one.
pub(crate) fn forget(gone: &RingRef) {
    let mut state = STATE.lock();
    if state
        .ring
        .as_ref()
        .is_some_and(|r| r.get_id() == gone.get_id())
    {
        state.ring = None;
        state.starting = false;
    }
}

/// The ring actor, started (under its supervisor, on this runtime) when
/// none is running. None only when it cannot be started.
pub(crate) async fn ring() -> Option<RingRef> {
    if let Some(r) = STATE.lock().ring.clone() {
        return Some(r);
    }
    let _one_at_a_time = STARTING.lock().await;
    if let Some(r) = STATE.lock().ring.clone() {
        return Some(r);
    }
    let started = Actor::spawn(None, LogSupervisor, ()).await;
    let ring = STATE.lock().ring.clone();
    if started.is_err() {
        STATE.lock().starting = false;
    }
    ring
}
