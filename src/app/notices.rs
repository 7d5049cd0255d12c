//! Where reterm's own lines go (`/help`, errors, `/control` answers, state
//! lines): printed on stdout in line mode; in full screen, into reterm's own
//! buffer (number 1), which lives in memory only and is never written to a
//! transcript.
//!
//! Lines are pushed synchronously, so the screen knows right after a command
//! what it answered; lines from other tasks (a transcript failure) wake the
//! screen through [`Notices::wait`].

use rete_engine::row::{Payload, Row};
use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

/// Rows reterm's buffer keeps.
const KEEP: usize = 5000;

/// The full screen's sink, once it runs.
static SCREEN: OnceLock<Arc<Notices>> = OnceLock::new();

/// reterm's own buffer.
#[derive(Default)]
pub struct Notices {
    inner: Mutex<Inner>,
    wake: Notify,
}

#[derive(Default)]
struct Inner {
    rows: VecDeque<Row>,
    next_seq: u64,
    /// Lines not yet taken by [`Notices::take_fresh`].
    fresh: Vec<String>,
}

impl Notices {
    /// Routes every later [`say`] into this buffer.
    pub fn install() -> Arc<Notices> {
        SCREEN.get_or_init(|| Arc::new(Notices::default())).clone()
    }

    fn push(&self, line: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.next_seq += 1;
        let row = Row {
            seq: inner.next_seq,
            time: rete_actors::wall_clock::now(),
            msgid: None,
            from: "".into(),
            history: false,
            payload: Payload::ClientStatus { text: line.into() },
        };
        inner.rows.push_back(row);
        if inner.rows.len() > KEEP {
            inner.rows.pop_front();
        }
        inner.fresh.push(line.to_owned());
        drop(inner);
        self.wake.notify_one();
    }

    /// Lines added since the last call.
    pub fn take_fresh(&self) -> Vec<String> {
        std::mem::take(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()).fresh)
    }

    /// Runs `f` over the rows, oldest first.
    pub fn with_rows<R>(&self, f: impl FnOnce(&VecDeque<Row>) -> R) -> R {
        f(&self.inner.lock().unwrap_or_else(|p| p.into_inner()).rows)
    }

    /// The last row's seq (0 when empty).
    pub fn last_seq(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_seq
    }

    /// Forgets every row (`/clear` in reterm's buffer).
    pub fn clear(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .rows
            .clear();
    }

    /// Resolves when a line was pushed since the last wait.
    pub async fn wait(&self) {
        self.wake.notified().await;
    }
}

/// Shows one of reterm's own lines: stdout in line mode, reterm's buffer in
/// full screen. A closed stdout ends nothing here: the loop notices the
/// closed stdin or a signal.
pub fn say(line: &str) {
    if let Some(screen) = SCREEN.get() {
        screen.push(line);
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
