//! The raw tap of the debug tier: the redacted raw lines raw_since and
//! search_raw return, captured only while the debug capture is on.
//!
//! # Layout
//! - `ring`: the rings as plain state (positions, cutting, eviction, taps).
//! - `sink`: the observer in the engine's debug slot, on the session's path.
//! - `actor`: the tap actor that owns the rings, and its supervisor.
//!
//! # One actor for the process, keyed by session
//! The capture is switched for the whole process at once (control.debug and
//! the server's life), and switching it off must clear every session's ring
//! in one step; the engine's debug slot is one observer for every session.
//! One actor keyed by session matches both: one message clears all, one sink
//! feeds it, and a session needs no actor of its own spawned, found or
//! stopped as it comes and goes. It lives beside the control server, not
//! under the session's supervisor, so a session actor's restart does not
//! touch its ring; what bounds it is per session (5,000 lines each).
//!
//! Lines are masked at the source, before they are stored: the engine's
//! raw tap hands the sink each line as the session owns it, the sink keeps
//! a session's newest lines in its staging lane, and the tap actor masks
//! each (`rete_redact::mask_line`, the rules the raw buffer shows) and cuts
//! it on its own thread when it drains the lanes (before a read, and once a
//! second), so the session's path pays only a copy. Screening on the way out (the session's secrets, the raw-line
//! tripwire, a cut inside a secret) is the reading tool's, through
//! `crate::read::raw`.

mod actor;
pub(crate) mod ring;
mod sink;

use actor::{TapMsg, TapSupervisor};
use ractor::{Actor, ActorRef};
use rete_actors::{DebugRawSlot, RawCapture, RawObserver};
use rete_engine::ids::SessionId;
use ring::{Pos, Window};
use sink::Sink;
use std::sync::Arc;

/// The raw taps of one capture, and the engine slot they fill from.
pub struct RawTaps {
    slot: DebugRawSlot,
    sink: Arc<Sink>,
    supervisor: ActorRef<()>,
}

/// The tap actor did not answer (it is restarting, or stopped).
#[derive(Debug, thiserror::Error)]
#[error("the raw tap did not answer")]
pub struct NotAnswering;

impl RawTaps {
    /// Starts the tap actor (under its supervisor), not yet attached to the
    /// engine: nothing is captured until `RawTaps::attach`.
    pub async fn start(slot: DebugRawSlot) -> Result<RawTaps, String> {
        let sink = Arc::new(Sink::default());
        let (supervisor, _) = Actor::spawn(None, TapSupervisor, sink.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok(RawTaps {
            slot,
            sink,
            supervisor,
        })
    }

    /// Starts capturing: the sink goes into the engine's debug slot.
    pub(crate) fn attach(&self) {
        self.sink.open();
        self.slot.set(Some(self.sink.clone()));
    }

    /// Stops capturing and clears every ring: the lines lost are a silent
    /// gap. The slot is emptied first, so no line lands after the clear.
    pub(crate) fn detach_and_clear(&self) {
        self.slot.set(None);
        self.sink.clear();
        if let Some(actor) = self.sink.actor.lock().as_ref() {
            let _ = actor.cast(TapMsg::Clear);
        }
    }

    /// An observer that feeds the tap directly, for benchmarks and tests
    /// that have no socket. Lines handed to it are stored **as given**, not
    /// masked (the engine's debug slot gets the sink as a `RawCapture`,
    /// whose lines the tap actor masks): so a test can store an unmasked
    /// line and see the screens on the way out catch it.
    pub fn observer(&self) -> Arc<dyn RawObserver> {
        self.sink.clone()
    }

    /// The sink as the engine's debug slot holds it: lines handed to it are
    /// unmasked, and the tap actor masks and cuts each before storing it.
    /// For benchmarks that drive a `RawTap` of their own as a session does.
    pub fn capture(&self) -> Arc<dyn RawCapture> {
        self.sink.clone()
    }

    /// Up to `limit` lines of `session` after `after` (None: from the
    /// oldest held), with everything pending drained first.
    pub async fn read(
        &self,
        session: &SessionId,
        after: Option<Pos>,
        limit: usize,
    ) -> Result<Window, NotAnswering> {
        let actor = self.sink.actor.lock().clone().ok_or(NotAnswering)?;
        ractor::call!(actor, |reply| TapMsg::Read {
            session: session.clone(),
            after,
            limit,
            reply,
        })
        .map_err(|_| NotAnswering)
    }

    /// Where `session`'s tap ends now, with everything pending drained
    /// first: a reader after this position reads every line handed over
    /// later (a raw subscription's starting point).
    pub(crate) async fn end(&self, session: &SessionId) -> Result<Pos, NotAnswering> {
        let actor = self.sink.actor.lock().clone().ok_or(NotAnswering)?;
        ractor::call!(actor, |reply| TapMsg::End {
            session: session.clone(),
            reply,
        })
        .map_err(|_| NotAnswering)
    }
}

impl Drop for RawTaps {
    fn drop(&mut self) {
        self.slot.set(None);
        self.supervisor.stop(None);
    }
}

impl std::fmt::Debug for RawTaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTaps").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_actors::{Direction, Rete, ReteOptions};
    use std::time::Duration;

    fn sid() -> SessionId {
        SessionId::parse("00000000-0000-4000-8000-000000000001").unwrap()
    }

    async fn taps() -> (Rete, RawTaps) {
        let rete = Rete::start(ReteOptions::default()).await.unwrap();
        let taps = RawTaps::start(rete.debug_raw_slot()).await.unwrap();
        (rete, taps)
    }

    async fn texts(taps: &RawTaps) -> Vec<String> {
        let w = taps.read(&sid(), None, usize::MAX).await.unwrap();
        w.lines.iter().map(|l| l.text.to_string()).collect()
    }

    #[tokio::test]
    async fn a_read_sees_every_line_handed_over_before_it() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        let n = sink::GEN_LINES * 2 + 3;
        for i in 0..n {
            o.on_raw(&sid(), Direction::In, &format!("line {i}"));
        }
        let got = texts(&taps).await;
        assert_eq!(got.len(), n);
        assert_eq!(got.last(), Some(&format!("line {}", n - 1)));
    }

    /// Past what the ring keeps, a lane drops its oldest generation before
    /// the actor sees it: the ring ends up as if it had stored and evicted
    /// those lines (their places taken, counted as dropped at capacity), and
    /// a connection attempt among them still starts a new tap.
    #[tokio::test]
    async fn lines_dropped_before_a_drain_take_their_places_and_count_as_evicted() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        o.on_raw(&sid(), Direction::In, "first");
        let first = taps.read(&sid(), None, 1).await.unwrap().lines[0].pos;
        // A connection attempt inside what will be dropped, then far more
        // lines than the ring holds, all before the next read.
        o.on_raw(&sid(), Direction::In, "old tap");
        RawObserver::on_connecting(&*taps.sink, &sid());
        let n = ring::CAPACITY + sink::GEN_LINES * 3 + 7;
        for i in 0..n {
            o.on_raw(&sid(), Direction::In, &format!("line {i}"));
        }
        let w = taps.read(&sid(), Some(first), usize::MAX).await.unwrap();
        assert!(w.evicted, "lines after the cursor were dropped");
        assert!(w.lines.len() >= ring::CAPACITY, "{}", w.lines.len());
        assert!(w.lines.len() <= ring::CAPACITY + sink::GEN_LINES);
        assert_eq!(
            w.lines.last().map(|l| &*l.text),
            Some(&*format!("line {}", n - 1))
        );
        // Every line kept is in the new tap, numbered by its place in it.
        let last = w.lines.last().unwrap().pos;
        assert!(last.tap > first.tap);
        assert_eq!(last.seq, n as u64);
        for pair in w.lines.windows(2) {
            assert_eq!(pair[1].pos.seq, pair[0].pos.seq + 1);
        }
        assert_eq!(w.dropped_through.map(|d| d.tap), Some(last.tap));
    }

    /// Without a read, the actor drains the lanes on its own within
    /// `DRAIN_EVERY`: the lane is empty afterwards.
    #[tokio::test]
    async fn the_actor_drains_without_a_read() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        o.on_raw(&sid(), Direction::In, "waiting");
        let deadline = tokio::time::Instant::now() + sink::DRAIN_EVERY * 5;
        loop {
            let held = taps.sink.pending.lock().lanes[0].gens.len();
            if held == 0 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never drained");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(texts(&taps).await, ["waiting"]);
    }

    #[tokio::test]
    async fn lines_the_engine_hands_over_are_masked_and_cut_by_the_actor() {
        let (_rete, taps) = taps().await;
        let c = taps.capture();
        let t = rete_engine::clock::UnixMillis(42);
        c.on_line(&sid(), t, Direction::Out, "PASS hunter2");
        c.on_line(&sid(), t, Direction::Out, "OPER admin s3cret");
        c.on_line(&sid(), t, Direction::Out, "AUTHENTICATE aHVudGVyMg==");
        c.on_line(
            &sid(),
            t,
            Direction::Out,
            "PRIVMSG NickServ :IDENTIFY me pw",
        );
        let long = format!("PRIVMSG #a :{}", "x".repeat(3_000));
        c.on_line(&sid(), t, Direction::In, &long);
        // Longer than what the sink copies: the part not copied is counted
        // as cut off too, and a password in it is masked (the copy holds
        // every word masking looks at).
        let huge = format!("PASS {}", "p".repeat(sink::COPIED_MAX * 2));
        c.on_line(&sid(), t, Direction::Out, &huge);
        let huge_text = format!("PRIVMSG #a :{}", "y".repeat(sink::COPIED_MAX * 2));
        c.on_line(&sid(), t, Direction::In, &huge_text);
        let w = taps.read(&sid(), None, 10).await.unwrap();
        let got: Vec<&str> = w.lines.iter().map(|l| &*l.text).collect();
        assert_eq!(
            got[..4],
            [
                "PASS :********",
                "OPER admin ********",
                "AUTHENTICATE ********",
                "PRIVMSG NickServ :IDENTIFY ********",
            ]
        );
        assert!(w.lines.iter().all(|l| l.time == t));
        let cut = &w.lines[4];
        assert_eq!(cut.kept, Some(ring::MAX_LINE_BYTES));
        let marker = format!("…[+{} bytes]", long.len() - ring::MAX_LINE_BYTES);
        assert!(cut.text.ends_with(&marker), "{}", &cut.text[2_000..]);
        assert_eq!(&*w.lines[5].text, "PASS :********");
        let huge_cut = &w.lines[6];
        let marker = format!("…[+{} bytes]", huge_text.len() - ring::MAX_LINE_BYTES);
        assert!(
            huge_cut.text.ends_with(&marker),
            "{}",
            &huge_cut.text[2_000..]
        );
        assert_eq!(w.lines.len(), 7);
    }

    #[tokio::test]
    async fn the_end_counts_lines_still_waiting_in_a_lane() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        o.on_raw(&sid(), Direction::In, "before");
        let end = taps.end(&sid()).await.unwrap();
        o.on_raw(&sid(), Direction::In, "after");
        let w = taps.read(&sid(), Some(end), 10).await.unwrap();
        assert_eq!(w.lines.len(), 1);
        assert_eq!(&*w.lines[0].text, "after");
    }

    #[tokio::test]
    async fn clearing_empties_the_rings_and_the_pending_list() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        o.on_raw(&sid(), Direction::Out, "before");
        assert_eq!(texts(&taps).await, ["before"]);
        o.on_raw(&sid(), Direction::Out, "pending");
        taps.detach_and_clear();
        assert!(texts(&taps).await.is_empty());
        taps.attach();
        o.on_raw(&sid(), Direction::Out, "after");
        let w = taps.read(&sid(), None, 10).await.unwrap();
        assert_eq!(w.lines.len(), 1);
        // "before" was 1; the pending line was dropped before it took a
        // place, and the sequence goes on rather than starting over.
        assert_eq!(w.lines[0].pos.seq, 2);
        assert_eq!(&*w.lines[0].text, "after");
    }

    /// A session may hand a line over through the observers it copied just
    /// before capture went off: that line is not kept, and capture taking
    /// lines again starts with the next one.
    #[tokio::test]
    async fn a_line_handed_over_after_capture_went_off_is_dropped() {
        let (_rete, taps) = taps().await;
        taps.attach();
        let stale = taps.capture();
        let t = rete_engine::clock::UnixMillis(42);
        stale.on_line(&sid(), t, Direction::In, "while on");
        taps.detach_and_clear();
        stale.on_line(&sid(), t, Direction::In, "after off");
        RawCapture::on_connecting(&*stale, &sid());
        assert!(texts(&taps).await.is_empty());
        taps.attach();
        stale.on_line(&sid(), t, Direction::In, "on again");
        assert_eq!(texts(&taps).await, ["on again"]);
    }

    #[tokio::test]
    async fn a_failed_tap_actor_is_restarted_and_old_cursors_read_on() {
        let (_rete, taps) = taps().await;
        let o = taps.observer();
        o.on_raw(&sid(), Direction::In, "one");
        let old = taps.read(&sid(), None, 10).await.unwrap().lines[0].pos;
        let first = taps.sink.actor.lock().clone().unwrap();
        first.cast(TapMsg::Crash).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let now = taps.sink.actor.lock().clone();
            if now.is_some_and(|a| a.get_id() != first.get_id()) {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "not restarted");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        o.on_raw(&sid(), Direction::In, "two");
        let w = taps.read(&sid(), Some(old), 10).await.unwrap();
        assert_eq!(w.lines.len(), 1);
        assert_eq!(&*w.lines[0].text, "two");
        assert!(w.lines[0].pos > old, "a new tap after the old cursor");
    }
}
