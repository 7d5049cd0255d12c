//! Rete's own log for the debug tier: a `tracing` layer, a process-wide
//! sink, and the log ring actor read_log reads.
//!
//! # Layout
//! - `level`: the contract's levels and categories, and how an event gets
//!   one of each (the `tracing` level or a `rete_level` field; the target).
//! - [`line`](mod@line): a line as the ring keeps it: message and fields, masked by
//!   the secret-key rule, then cut at 2,048 bytes.
//! - `layer`: [`LogLayer`], installed once per process with [`layer()`].
//! - `sink`: the hand-off between that one layer and the captures that come
//!   and go with control servers: open while some capture is on.
//! - [`ring`]: the ring's state (2,000 lines, evictions, learned secrets);
//!   `actor`: the ring actor and its supervisor, one of each per process.
//!
//! # Why a process-wide sink
//! A `tracing` subscriber is installed once, at start-up, before any
//! control server exists; captures start and stop with servers. So the
//! layer does not hold a capture: it checks one atomic flag per event, and
//! only while some capture holds the sink open does it render the event and
//! hand it on. The ring is one per process, as the contract says; each
//! capture reads only the lines numbered after it switched on, and the last
//! capture to switch off clears the ring.

pub(crate) mod level;
#[doc(hidden)] // For the project's tests and benches.
pub mod line;
#[doc(hidden)] // For the project's tests and benches.
pub mod ring;

mod actor;
mod layer;
mod sink;

pub use layer::{layer, subscriber, LogFilter, LogLayer};
pub use level::{Category, Level};

use ring::{ReadRequest, Snapshot};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A capture's hold on the log sink: its window's start, while it is on.
#[derive(Debug, Default)]
pub(crate) struct LogCapture {
    held: AtomicBool,
    /// The seq of the newest line numbered before this capture switched on.
    start: AtomicU64,
}

impl LogCapture {
    /// Opens the sink for this capture (once).
    pub(crate) fn open(&self) {
        if !self.held.swap(true, Ordering::AcqRel) {
            self.start.store(sink::open(), Ordering::Release);
        }
    }

    /// Lets go of the sink (once); the last capture to let go clears the ring.
    pub(crate) fn close(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            sink::close();
        }
    }

    /// The seq this capture's window starts after, or None while it is off.
    pub(crate) fn window_start(&self) -> Option<u64> {
        self.held
            .load(Ordering::Acquire)
            .then(|| self.start.load(Ordering::Acquire))
    }

    /// The seq of the newest line in this capture's window so far (its
    /// start when it has none), or None while it is off: every line after it
    /// is numbered later.
    pub(crate) fn end(&self) -> Option<u64> {
        self.window_start().map(|start| start.max(sink::last_seq()))
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        self.close();
    }
}

/// How long a read waits for the ring; it answers within one mailbox turn
/// unless it is gone.
const RING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The log ring is not running and could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the log ring is not running")]
pub(crate) struct RingGone;

/// Reads the ring (starting it if it is not running): the lines after
/// `request.after`, and what it knows of the sessions' secrets.
pub(crate) async fn snapshot(request: ReadRequest) -> Result<Snapshot, RingGone> {
    // A ring found gone (its runtime ended) is forgotten and started again,
    // once.
    for _ in 0..2 {
        let ring = sink::ring().await.ok_or(RingGone)?;
        let asked = request.clone();
        let answer = ring
            .call(
                |reply_to| actor::RingMsg::Read {
                    request: asked,
                    reply_to,
                },
                Some(RING_TIMEOUT),
            )
            .await;
        match answer {
            Ok(ractor::rpc::CallResult::Success(snapshot)) => return Ok(snapshot),
            Ok(_) | Err(_) => sink::forget(&ring),
        }
    }
    Err(RingGone)
}
