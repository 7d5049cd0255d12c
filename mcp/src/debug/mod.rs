//! The debug capture: what the debug tier reads (the raw tap and the log
//! ring), filled only while the control server runs with control.debug on.
//!
//! One [`Capture`] belongs to a [`ControlServer`](crate::server::ControlServer)
//! and is handed to every tool call in its
//! [`ToolContext`](crate::tools::ToolContext). Switching it off (debug off, or the server
//! closing) clears every ring: lines lost that way are a silent sequence gap,
//! reported as neither evicted nor withheld.
//!
//! `attribution` decides which of those lines a scoped grant may see: the
//! raw lines whose every target is in its reach, and log lines only for a
//! grant covering everything.

pub(crate) mod attribution;
pub mod log;
pub mod raw;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The capture switch and the rings behind it. Cloning shares them.
#[derive(Clone, Default)]
pub struct Capture {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    on: AtomicBool,
    /// How many times capture went off: a reader that saw another number
    /// knows the rings were cleared since, however briefly.
    cleared: AtomicU64,
    /// This capture's hold on the process-wide log sink (see [`log`]).
    log: log::LogCapture,
    /// The raw tap; None for a capture not attached to an engine.
    raw: Option<raw::RawTaps>,
}

impl Capture {
    /// A capture that is off (a context for the release tools only).
    pub fn off() -> Capture {
        Capture::default()
    }

    /// A capture (off) whose raw tap fills from `raw`'s engine slot.
    pub fn with_raw_tap(raw: raw::RawTaps) -> Capture {
        Capture {
            inner: Arc::new(Inner {
                raw: Some(raw),
                ..Inner::default()
            }),
        }
    }

    /// The raw tap, when this capture is attached to an engine.
    pub fn raw(&self) -> Option<&raw::RawTaps> {
        self.inner.raw.as_ref()
    }

    /// True while lines are captured.
    pub(crate) fn is_on(&self) -> bool {
        self.inner.on.load(Ordering::Acquire)
    }

    /// Starts or stops capturing. Stopping clears every ring; starting
    /// begins empty, so nothing from before is ever seen.
    pub fn switch(&self, on: bool) {
        let was = self.inner.on.swap(on, Ordering::AcqRel);
        if was == on {
            return;
        }
        if on {
            self.inner.log.open();
            if let Some(raw) = &self.inner.raw {
                raw.attach();
            }
        } else {
            self.inner.cleared.fetch_add(1, Ordering::AcqRel);
            self.inner.log.close();
            if let Some(raw) = &self.inner.raw {
                raw.detach_and_clear();
            }
        }
    }

    /// How many times capture has gone off (each clearing every ring).
    pub(crate) fn clears(&self) -> u64 {
        self.inner.cleared.load(Ordering::Acquire)
    }

    /// This capture's part of the log ring: its window, while on.
    pub(crate) fn log(&self) -> &log::LogCapture {
        &self.inner.log
    }
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("on", &self.is_on())
            .finish()
    }
}
