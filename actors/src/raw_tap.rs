//! The raw tap: every session's lines in and out, masked at the source with
//! `rete_redact::mask_line` (as the engine masks what it stores), handed to
//! up to two observers: the display slot (a host's raw buffer, set with
//! `Rete::set_raw_observer`) and the debug slot (the control surface's debug
//! capture, set through [`DebugRawSlot`]). The slots are independent: setting
//! or clearing one never touches the other.
//!
//! Capture costs nothing while off: each line pays one atomic load (one bit
//! per slot in one byte), and no line is masked, copied or allocated until an
//! observer is set. With both set a line is masked once and handed to each.

use parking_lot::RwLock;
use rete_engine::ids::SessionId;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Received from the server.
    In,
    /// Written to the server (after the raw-out hook allowed it).
    Out,
}

/// Sees each line of every session, already masked.
///
/// Called on the session actor's task: keep it quick and never block.
pub trait RawObserver: Send + Sync + 'static {
    /// One line (without CR LF) of `session`, masked.
    fn on_raw(&self, session: &SessionId, direction: Direction, line: &str);

    /// `session` starts a connection attempt: the lines that follow belong
    /// to a new connection. The default ignores it.
    fn on_connecting(&self, session: &SessionId) {
        let _ = session;
    }
}

/// The display slot's bit in [`RawTap::on`].
const DISPLAY: u8 = 1;
/// The debug slot's bit in [`RawTap::on`].
const DEBUG: u8 = 2;

type Slot = RwLock<Option<Arc<dyn RawObserver>>>;

/// Where sessions hand their lines; shared by the facade and every session.
///
/// Public so benchmarks can drive it as a session does; an embedder sets
/// observers through `Rete` instead.
#[derive(Default)]
pub struct RawTap {
    /// One bit per slot that holds an observer: the one check a line pays
    /// while both are empty.
    on: AtomicU8,
    display: Slot,
    debug: Slot,
}

impl RawTap {
    /// A tap with no observer.
    pub fn new() -> RawTap {
        RawTap::default()
    }

    /// Sets or clears the display observer.
    pub fn set(&self, observer: Option<Arc<dyn RawObserver>>) {
        self.set_slot(&self.display, DISPLAY, observer);
    }

    /// Sets or clears the debug observer.
    pub fn set_debug(&self, observer: Option<Arc<dyn RawObserver>>) {
        self.set_slot(&self.debug, DEBUG, observer);
    }

    fn set_slot(&self, slot: &Slot, bit: u8, observer: Option<Arc<dyn RawObserver>>) {
        let mut held = slot.write();
        if observer.is_some() {
            self.on.fetch_or(bit, Ordering::AcqRel);
        } else {
            self.on.fetch_and(!bit, Ordering::AcqRel);
        }
        *held = observer;
    }

    /// Hands one line to each observer, masked once, when there is one.
    #[inline]
    pub fn see(&self, session: &SessionId, direction: Direction, line: &str) {
        let on = self.on.load(Ordering::Acquire);
        if on == 0 {
            return;
        }
        let masked = rete_redact::mask_line(line);
        for (bit, slot) in [(DISPLAY, &self.display), (DEBUG, &self.debug)] {
            if on & bit != 0 {
                if let Some(observer) = slot.read().as_ref() {
                    observer.on_raw(session, direction, &masked);
                }
            }
        }
    }

    /// Tells each observer that `session` starts a connection attempt.
    #[inline]
    pub fn connecting(&self, session: &SessionId) {
        let on = self.on.load(Ordering::Acquire);
        if on == 0 {
            return;
        }
        for (bit, slot) in [(DISPLAY, &self.display), (DEBUG, &self.debug)] {
            if on & bit != 0 {
                if let Some(observer) = slot.read().as_ref() {
                    observer.on_connecting(session);
                }
            }
        }
    }
}

/// The capability to set the debug slot of an engine's raw tap, and nothing
/// else: what the control surface's debug capture is handed instead of the
/// `Rete`. It cannot read a session, send or touch the display slot.
#[derive(Clone)]
pub struct DebugRawSlot {
    tap: Arc<RawTap>,
}

impl DebugRawSlot {
    pub(crate) fn new(tap: Arc<RawTap>) -> DebugRawSlot {
        DebugRawSlot { tap }
    }

    /// Sets (or, with `None`, clears) the debug observer of every session's
    /// raw lines, masked. While none is set a line costs the display slot's
    /// one atomic load and nothing more.
    pub fn set(&self, observer: Option<Arc<dyn RawObserver>>) {
        self.tap.set_debug(observer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(Direction, String)>>);
    impl RawObserver for Seen {
        fn on_raw(&self, _: &SessionId, direction: Direction, line: &str) {
            self.0.lock().push((direction, line.to_owned()));
        }
        fn on_connecting(&self, _: &SessionId) {
            self.0
                .lock()
                .push((Direction::Out, "<connecting>".to_owned()));
        }
    }

    fn id() -> SessionId {
        SessionId::parse("6f1c2a0e-9a4b-4c53-8d2e-1b7f0c9e4a21").unwrap()
    }

    #[test]
    fn lines_reach_the_observer_masked_and_only_while_set() {
        let tap = RawTap::default();
        let id = id();
        tap.see(&id, Direction::Out, "PRIVMSG #a :before");
        let seen = Arc::new(Seen::default());
        tap.set(Some(seen.clone()));
        tap.see(&id, Direction::Out, "PASS hunter2");
        tap.see(&id, Direction::In, ":srv 001 me :Welcome");
        tap.set(None);
        tap.see(&id, Direction::In, "PRIVMSG #a :after");
        let got = seen.0.lock().clone();
        assert_eq!(
            got,
            [
                (Direction::Out, "PASS :********".to_owned()),
                (Direction::In, ":srv 001 me :Welcome".to_owned()),
            ]
        );
    }

    #[test]
    fn the_two_slots_are_independent() {
        let tap = Arc::new(RawTap::default());
        let id = id();
        let display = Arc::new(Seen::default());
        let debug = Arc::new(Seen::default());
        let slot = DebugRawSlot::new(tap.clone());
        slot.set(Some(debug.clone()));
        tap.see(&id, Direction::In, "one");
        tap.set(Some(display.clone()));
        tap.connecting(&id);
        tap.see(&id, Direction::Out, "OPER admin s3cret");
        slot.set(None);
        tap.see(&id, Direction::In, "three");
        tap.set(None);
        tap.see(&id, Direction::In, "four");
        assert_eq!(
            debug.0.lock().clone(),
            [
                (Direction::In, "one".to_owned()),
                (Direction::Out, "<connecting>".to_owned()),
                (Direction::Out, "OPER admin ********".to_owned()),
            ]
        );
        assert_eq!(
            display.0.lock().clone(),
            [
                (Direction::Out, "<connecting>".to_owned()),
                (Direction::Out, "OPER admin ********".to_owned()),
                (Direction::In, "three".to_owned()),
            ]
        );
        assert_eq!(tap.on.load(Ordering::Acquire), 0);
    }
}
