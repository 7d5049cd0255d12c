//! The bounded hand-off from the sessions' raw tap to the writer thread.
//!
//! The capture callback runs on the session actor's path, so it must never
//! block: it offers each line to a bounded queue (`try_send`). When the
//! queue is full the line cannot be stored in order, and rows are numbered
//! consecutively, so skipping it silently would hide a hole. Instead that
//! session's **lane** stops: every later line of the session is counted and
//! dropped, until the writer has stored everything the session queued
//! before the overflow. Then the writer takes the count ([`Ingest::ready_gaps`])
//! and stores one row saying how many lines were lost there; the lane runs
//! again. The IRC connection is not touched: the service's engine saw every
//! line, so the state a client's next `sync` gives is whole; only rows are
//! missing, and the gap row says where and how many. Other sessions go on.
//!
//! The queue holds at most `capacity` lines (default
//! [`DEFAULT_INGEST_CAPACITY`]); with the reader's line limit that bounds
//! the memory it can take.

use parking_lot::Mutex;
use rete_actors::{Direction, RawCapture};
use rete_engine::clock::UnixMillis;
use rete_engine::ids::SessionId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;

/// Lines waiting for the writer, all sessions together.
pub const DEFAULT_INGEST_CAPACITY: usize = 8192;

/// What the writer is handed, in the order the sessions saw it.
pub(super) enum Ingested {
    /// A line received from the IRC server.
    In {
        session: SessionId,
        time: u64,
        line: String,
    },
    /// A PRIVMSG or NOTICE handed to the connection's writer (for the echo
    /// the service makes when the server does not echo).
    Out {
        session: SessionId,
        time: u64,
        line: String,
    },
    /// The session starts a new connection.
    Connecting { session: SessionId },
    /// Everything queued before this is stored: answer on `done` (the
    /// service's last step before it exits).
    Flush { done: std::sync::mpsc::Sender<()> },
}

impl Ingested {
    fn session(&self) -> Option<&SessionId> {
        match self {
            Ingested::In { session, .. }
            | Ingested::Out { session, .. }
            | Ingested::Connecting { session } => Some(session),
            Ingested::Flush { .. } => None,
        }
    }
}

/// One session's place in the queue.
#[derive(Default)]
struct Lane {
    /// Its messages in the queue now.
    queued: usize,
    /// Lines dropped since its lane stopped (0: running).
    dropped: u64,
}

/// The recorder in the engine's record slot (see the module doc).
pub(super) struct Ingest {
    tx: SyncSender<Ingested>,
    lanes: Mutex<HashMap<SessionId, Lane>>,
    /// Set while some lane is stopped, so the writer looks for gaps only then.
    stopped: AtomicBool,
}

/// Whether an outgoing line is a PRIVMSG or NOTICE (tags and a source
/// skipped), the only ones the writer may echo.
fn is_message(line: &str) -> bool {
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    let mut word = words.next();
    if word.is_some_and(|w| w.starts_with('@')) {
        word = words.next();
    }
    if word.is_some_and(|w| w.starts_with(':')) {
        word = words.next();
    }
    word.is_some_and(|w| w.eq_ignore_ascii_case("PRIVMSG") || w.eq_ignore_ascii_case("NOTICE"))
}

impl Ingest {
    /// A capture and the writer's end of its queue.
    pub(super) fn new(capacity: usize) -> (Arc<Ingest>, Receiver<Ingested>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity.max(1));
        let ingest = Arc::new(Ingest {
            tx,
            lanes: Mutex::new(HashMap::new()),
            stopped: AtomicBool::new(false),
        });
        (ingest, rx)
    }

    /// Queues `msg` unless its lane is stopped; stops the lane when the
    /// queue is full. Never blocks.
    fn offer(&self, msg: Ingested) {
        let Some(session) = msg.session() else {
            return;
        };
        let mut lanes = self.lanes.lock();
        let lane = lanes.entry(session.clone()).or_default();
        if lane.dropped > 0 {
            lane.dropped += 1;
            return;
        }
        match self.tx.try_send(msg) {
            Ok(()) => lane.queued += 1,
            Err(TrySendError::Full(_)) => {
                lane.dropped = 1;
                self.stopped.store(true, Ordering::Release);
            }
            // The writer is gone (the service is stopping).
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Waits until the writer has stored everything queued before this
    /// call, or for `limit`: the service's last step, after its sessions
    /// stopped, so no line received is left unstored at exit. Blocks.
    pub(super) fn flush(&self, limit: std::time::Duration) -> bool {
        let (done, stored) = std::sync::mpsc::channel();
        // Behind every line queued before it. A full queue makes room as the
        // writer stores; a writer gone has dropped the queue, and this fails.
        if self.tx.send(Ingested::Flush { done }).is_err() {
            return false;
        }
        stored.recv_timeout(limit).is_ok()
    }

    /// The writer handled one message of `session`.
    pub(super) fn done(&self, session: &SessionId) {
        if let Some(lane) = self.lanes.lock().get_mut(session) {
            lane.queued = lane.queued.saturating_sub(1);
        }
    }

    /// The writer could not store a line of `session`: that is a gap too,
    /// and the lane stops until it is recorded.
    pub(super) fn lost(&self, session: &SessionId, lines: u64) {
        let mut lanes = self.lanes.lock();
        let lane = lanes.entry(session.clone()).or_default();
        lane.dropped += lines;
        self.stopped.store(true, Ordering::Release);
    }

    /// Stopped lanes with nothing left in the queue: each session's lost
    /// line count, taken (the lane runs again). The writer stores the gap's
    /// row before it reads the next message, so that row comes before any
    /// line the session queues from now on.
    pub(super) fn ready_gaps(&self) -> Vec<(SessionId, u64)> {
        if !self.stopped.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut lanes = self.lanes.lock();
        let mut ready = Vec::new();
        let mut still = false;
        for (session, lane) in lanes.iter_mut() {
            if lane.dropped == 0 {
                continue;
            }
            if lane.queued == 0 {
                ready.push((session.clone(), lane.dropped));
                lane.dropped = 0;
            } else {
                still = true;
            }
        }
        self.stopped.store(still, Ordering::Release);
        ready
    }
}

impl RawCapture for Ingest {
    fn on_line(&self, session: &SessionId, time: UnixMillis, direction: Direction, line: &str) {
        let time = time.unsigned();
        match direction {
            Direction::In => self.offer(Ingested::In {
                session: session.clone(),
                time,
                line: line.to_owned(),
            }),
            Direction::Out if is_message(line) => self.offer(Ingested::Out {
                session: session.clone(),
                time,
                line: line.to_owned(),
            }),
            Direction::Out => {}
        }
    }

    fn on_connecting(&self, session: &SessionId) {
        self.offer(Ingested::Connecting {
            session: session.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn id(n: u8) -> SessionId {
        SessionId::parse(&format!("00000000-0000-4000-8000-0000000000{n:02}")).unwrap()
    }

    #[test]
    fn a_full_queue_stops_one_lane_and_counts_until_drained() {
        let (ingest, rx) = Ingest::new(2);
        let (a, b) = (id(1), id(2));
        let t = UnixMillis(0);
        ingest.on_line(&a, t, Direction::In, "a1");
        ingest.on_line(&b, t, Direction::In, "b1");
        // Full: a's lane stops; its later lines are counted, not queued.
        ingest.on_line(&a, t, Direction::In, "a2");
        ingest.on_line(&a, t, Direction::In, "a3");
        assert!(ingest.ready_gaps().is_empty(), "a1 is still queued");
        let m = rx.recv().unwrap();
        ingest.done(m.session().unwrap());
        // b runs on: its next line takes the freed place.
        ingest.on_line(&b, t, Direction::In, "b2");
        assert_eq!(ingest.ready_gaps(), vec![(a.clone(), 2)]);
        assert!(ingest.ready_gaps().is_empty(), "taken once");
        for _ in 0..2 {
            let m = rx.recv().unwrap();
            assert_eq!(m.session(), Some(&b));
            ingest.done(m.session().unwrap());
        }
        ingest.on_line(&a, t, Direction::In, "a4");
        assert!(matches!(rx.try_recv(), Ok(Ingested::In { line, .. }) if line == "a4"));
    }

    #[test]
    fn only_messages_go_out() {
        assert!(is_message("PRIVMSG #a :hi"));
        assert!(is_message("@+typing=x notice bob :hi"));
        assert!(!is_message("PASS secret"));
        assert!(!is_message("AUTHENTICATE abc"));
        assert!(!is_message("@a=b"));
    }
}
