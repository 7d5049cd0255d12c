//! The raw tap: one optional observer of every session's lines in and out,
//! masked at the source with `rete_redact::mask_line` (as the engine masks
//! what it stores), for a raw buffer or a later raw capture.
//!
//! Capture costs nothing while off: each line pays one atomic load, and no
//! line is masked, copied or allocated until an observer is set.

use parking_lot::RwLock;
use rete_engine::ids::SessionId;
use std::sync::atomic::{AtomicBool, Ordering};
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
}

/// Where sessions hand their lines; shared by the facade and every session.
#[derive(Default)]
pub(crate) struct RawTap {
    /// Mirrors `observer.is_some()`: the one check a line pays while off.
    on: AtomicBool,
    observer: RwLock<Option<Arc<dyn RawObserver>>>,
}

impl RawTap {
    /// Sets or clears the observer.
    pub(crate) fn set(&self, observer: Option<Arc<dyn RawObserver>>) {
        let mut slot = self.observer.write();
        self.on.store(observer.is_some(), Ordering::Release);
        *slot = observer;
    }

    /// Hands one line to the observer, masked, when there is one.
    #[inline]
    pub(crate) fn see(&self, session: &SessionId, direction: Direction, line: &str) {
        if !self.on.load(Ordering::Acquire) {
            return;
        }
        if let Some(observer) = self.observer.read().as_ref() {
            observer.on_raw(session, direction, &rete_redact::mask_line(line));
        }
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
    }

    #[test]
    fn lines_reach_the_observer_masked_and_only_while_set() {
        let tap = RawTap::default();
        let id = SessionId::parse("6f1c2a0e-9a4b-4c53-8d2e-1b7f0c9e4a21").unwrap();
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
}
