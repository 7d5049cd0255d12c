//! The raw tap: every session's lines in and out, handed to up to three
//! observers: the display slot (a host's raw buffer, set with
//! `Rete::set_raw_observer`), which sees each line masked with
//! `rete_redact::mask_line` (as the engine masks what it stores); the
//! debug slot (the control surface's debug capture, set through
//! [`DebugRawSlot`]), which is handed each line not yet masked, with the
//! time the session stamped it, so that masking, cutting and storing happen
//! on its own thread rather than on the session's; and the record slot (a
//! host that keeps every line verbatim for the person's own client: the
//! rete-cloud service's store, set with `Rete::set_raw_recorder`), handed
//! lines as the debug slot is. The slots are independent: setting or
//! clearing one never touches the others, so the service can store its
//! users' lines and still run a debug capture.
//!
//! Capture costs nothing while off: each line pays one atomic load (one bit
//! per slot in one byte), and no line is masked, copied or allocated until an
//! observer is set. The display slot costs a mask per line; the debug slot
//! what its observer does on the session's path (the control surface's
//! copies the line's bytes onto a reused buffer, and nothing else).
//!
//! A session reads the observers through its own [`TapView`]: a copy of both
//! slots, refreshed only when one is set or cleared (an epoch counter says
//! so), so a line pays a plain load instead of taking the slots' read locks.
//! Those locks' atomic read-modify-writes were a third of what a captured
//! line cost the session's thread. A line a session hands over while a slot
//! is being cleared can still reach the observer it replaces: an observer
//! that must see nothing after it is taken out refuses such lines itself
//! (the control surface's sink does, under its own lock).

use parking_lot::RwLock;
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
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

/// What the debug and record slots hold: sees each line of every session
/// **not masked**. A debug capture must mask each line
/// (`rete_redact::mask_line`) before it keeps or shows it; a recorder keeps
/// lines verbatim only for the person's own client, never for an agent.
/// Neither may log or `Debug`-print a line unmasked. It gets the line
/// unmasked so that any masking runs on its own thread, off the session's
/// path.
///
/// Called on the session actor's task: copy the bytes and return (onto a
/// reused buffer under a short lock, say); never mask, allocate, block or
/// wait there.
pub trait RawCapture: Send + Sync + 'static {
    /// One line (without CR LF) of `session`, unmasked, seen at `time`.
    fn on_line(&self, session: &SessionId, time: UnixMillis, direction: Direction, line: &str);

    /// `session` starts a connection attempt: the lines that follow belong
    /// to a new connection.
    fn on_connecting(&self, session: &SessionId);
}

/// The display slot's bit in [`RawTap::on`].
const DISPLAY: u8 = 1;
/// The debug slot's bit in [`RawTap::on`].
const DEBUG: u8 = 2;
/// The record slot's bit in [`RawTap::on`].
const RECORD: u8 = 4;

/// Where sessions hand their lines; shared by the facade and every session.
///
/// Public so benchmarks can drive it as a session does; an embedder sets
/// observers through `Rete` instead.
#[derive(Default)]
pub struct RawTap {
    /// One bit per slot that holds an observer: the one check a line pays
    /// while both are empty.
    on: AtomicU8,
    /// Bumped each time a slot is set or cleared: a [`TapView`] that saw an
    /// older one copies the slots again.
    epoch: AtomicU64,
    display: RwLock<Option<Arc<dyn RawObserver>>>,
    debug: RwLock<Option<Arc<dyn RawCapture>>>,
    record: RwLock<Option<Arc<dyn RawCapture>>>,
}

/// One session's copy of a [`RawTap`]'s observers, as of an epoch. Held by
/// the session's actor and passed to [`RawTap::see`]; a new one (a
/// restarted actor's) copies the slots at its first line.
#[derive(Default)]
pub struct TapView {
    /// The epoch copied, plus one: 0 has copied nothing yet.
    seen: u64,
    display: Option<Arc<dyn RawObserver>>,
    debug: Option<Arc<dyn RawCapture>>,
    record: Option<Arc<dyn RawCapture>>,
}

impl RawTap {
    /// A tap with no observer.
    pub fn new() -> RawTap {
        RawTap::default()
    }

    /// Sets or clears the display observer.
    pub fn set(&self, observer: Option<Arc<dyn RawObserver>>) {
        let mut held = self.display.write();
        self.set_bit(DISPLAY, observer.is_some());
        *held = observer;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Sets or clears the debug observer.
    pub fn set_debug(&self, observer: Option<Arc<dyn RawCapture>>) {
        let mut held = self.debug.write();
        self.set_bit(DEBUG, observer.is_some());
        *held = observer;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Sets or clears the recorder.
    pub fn set_record(&self, recorder: Option<Arc<dyn RawCapture>>) {
        let mut held = self.record.write();
        self.set_bit(RECORD, recorder.is_some());
        *held = recorder;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// `view` brought up to date with the slots, when one changed since it
    /// last looked.
    #[inline]
    fn refresh(&self, view: &mut TapView) {
        let epoch = self.epoch.load(Ordering::Acquire) + 1;
        if view.seen != epoch {
            view.display = self.display.read().clone();
            view.debug = self.debug.read().clone();
            view.record = self.record.read().clone();
            view.seen = epoch;
        }
    }

    fn set_bit(&self, bit: u8, on: bool) {
        if on {
            self.on.fetch_or(bit, Ordering::AcqRel);
        } else {
            self.on.fetch_and(!bit, Ordering::AcqRel);
        }
    }

    /// Hands one line, seen at `time`, to each observer there is, as
    /// `view` (the session's) has them: masked to the display slot, as it
    /// is to the debug and record slots. With none set this is one atomic
    /// load.
    #[inline]
    pub fn see(
        &self,
        view: &mut TapView,
        session: &SessionId,
        direction: Direction,
        time: UnixMillis,
        line: &str,
    ) {
        let on = self.on.load(Ordering::Acquire);
        if on == 0 {
            return;
        }
        self.refresh(view);
        if on & DISPLAY != 0 {
            if let Some(observer) = &view.display {
                observer.on_raw(session, direction, &rete_redact::mask_line(line));
            }
        }
        if on & DEBUG != 0 {
            if let Some(capture) = &view.debug {
                capture.on_line(session, time, direction, line);
            }
        }
        if on & RECORD != 0 {
            if let Some(recorder) = &view.record {
                recorder.on_line(session, time, direction, line);
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
        if on & DISPLAY != 0 {
            if let Some(observer) = self.display.read().as_ref() {
                observer.on_connecting(session);
            }
        }
        if on & DEBUG != 0 {
            if let Some(capture) = self.debug.read().as_ref() {
                capture.on_connecting(session);
            }
        }
        if on & RECORD != 0 {
            if let Some(recorder) = self.record.read().as_ref() {
                recorder.on_connecting(session);
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
    /// raw lines, unmasked (see [`RawCapture`]). While none is set a line
    /// costs the display slot's one atomic load and nothing more.
    pub fn set(&self, observer: Option<Arc<dyn RawCapture>>) {
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
    impl RawCapture for Seen {
        fn on_line(&self, _: &SessionId, time: UnixMillis, direction: Direction, line: &str) {
            self.0
                .lock()
                .push((direction, format!("{} {line}", time.0)));
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

    fn see(tap: &RawTap, direction: Direction, line: &str) {
        // A fresh view each time, as after every change of a slot.
        tap.see(
            &mut TapView::default(),
            &id(),
            direction,
            UnixMillis(7),
            line,
        );
    }

    /// A session keeps one view for its life: it follows every change of a
    /// slot from the next line on.
    #[test]
    fn a_kept_view_follows_each_change_of_the_slots() {
        let tap = RawTap::default();
        let mut view = TapView::default();
        let mut see = |tap: &RawTap, line: &str| {
            tap.see(&mut view, &id(), Direction::In, UnixMillis(7), line);
        };
        see(&tap, "none set");
        let first = Arc::new(Seen::default());
        tap.set_debug(Some(first.clone()));
        see(&tap, "to the first");
        let second = Arc::new(Seen::default());
        tap.set_debug(Some(second.clone()));
        see(&tap, "to the second");
        let display = Arc::new(Seen::default());
        tap.set(Some(display.clone()));
        see(&tap, "to both");
        tap.set_debug(None);
        see(&tap, "display only");
        tap.set(None);
        see(&tap, "none again");
        let texts = |s: &Seen| {
            s.0.lock()
                .iter()
                .map(|(_, l)| l.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&first), ["7 to the first"]);
        assert_eq!(texts(&second), ["7 to the second", "7 to both"]);
        assert_eq!(texts(&display), ["to both", "display only"]);
    }

    #[test]
    fn lines_reach_the_display_observer_masked_and_only_while_set() {
        let tap = RawTap::default();
        see(&tap, Direction::Out, "PRIVMSG #a :before");
        let seen = Arc::new(Seen::default());
        tap.set(Some(seen.clone()));
        see(&tap, Direction::Out, "PASS hunter2");
        see(&tap, Direction::In, ":srv 001 me :Welcome");
        tap.set(None);
        see(&tap, Direction::In, "PRIVMSG #a :after");
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
    fn the_two_slots_are_independent_and_the_debug_slot_masks_for_itself() {
        let tap = Arc::new(RawTap::default());
        let display = Arc::new(Seen::default());
        let debug = Arc::new(Seen::default());
        let slot = DebugRawSlot::new(tap.clone());
        slot.set(Some(debug.clone()));
        see(&tap, Direction::In, "one");
        tap.set(Some(display.clone()));
        tap.connecting(&id());
        see(&tap, Direction::Out, "OPER admin s3cret");
        slot.set(None);
        see(&tap, Direction::In, "three");
        tap.set(None);
        see(&tap, Direction::In, "four");
        assert_eq!(
            debug.0.lock().clone(),
            [
                (Direction::In, "7 one".to_owned()),
                (Direction::Out, "<connecting>".to_owned()),
                // Handed over as it went: the capture masks it on its own
                // thread (rete_mcp's tap actor) before it keeps it.
                (Direction::Out, "7 OPER admin s3cret".to_owned()),
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

    /// The service records every line while a debug capture comes and goes:
    /// neither slot sees a change of the other.
    #[test]
    fn the_record_slot_keeps_every_line_while_a_debug_capture_comes_and_goes() {
        let tap = Arc::new(RawTap::default());
        let recorder = Arc::new(Seen::default());
        let debug = Arc::new(Seen::default());
        let mut view = TapView::default();
        let mut see = |tap: &RawTap, line: &str| {
            tap.see(&mut view, &id(), Direction::In, UnixMillis(7), line);
        };
        tap.set_record(Some(recorder.clone()));
        see(&tap, "one");
        let slot = DebugRawSlot::new(tap.clone());
        slot.set(Some(debug.clone()));
        tap.connecting(&id());
        see(&tap, "PASS hunter2");
        slot.set(None);
        see(&tap, "three");
        tap.set_record(None);
        see(&tap, "four");
        assert_eq!(
            recorder.0.lock().clone(),
            [
                (Direction::In, "7 one".to_owned()),
                (Direction::Out, "<connecting>".to_owned()),
                (Direction::In, "7 PASS hunter2".to_owned()),
                (Direction::In, "7 three".to_owned()),
            ]
        );
        assert_eq!(
            debug.0.lock().clone(),
            [
                (Direction::Out, "<connecting>".to_owned()),
                (Direction::In, "7 PASS hunter2".to_owned()),
            ]
        );
        assert_eq!(tap.on.load(Ordering::Acquire), 0);
    }
}
