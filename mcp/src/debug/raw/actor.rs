//! The tap actor and its supervisor: one actor for the process, holding
//! every session's ring (see `super` for why one rather than one per
//! session). It masks pending lines and moves them into the rings (before
//! every read, and once every `DRAIN_EVERY`), serves reads by copying a
//! window out (lines are shared, so a copy is a reference count each), and
//! clears the rings when capture goes off. It never awaits inside `handle`.
//!
//! The supervisor restarts a failed tap actor at once. The restarted actor
//! starts with empty rings: the lines lost are a gap, and since tap numbers
//! are process-wide and increasing, a reader's old cursor reads the new
//! lines from their start rather than skipping them.

use crate::debug::raw::ring::{cut_point, stored_from, Pos, Rings, Window, MAX_LINE_BYTES};
use crate::debug::raw::sink::{Event, Gen, Pending, Sink, Skip, DRAIN_EVERY};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use rete_engine::ids::SessionId;
use std::borrow::Cow;
use std::sync::Arc;

/// Messages the tap actor handles.
pub(crate) enum TapMsg {
    /// Move the lines pending in the sink's lanes into the rings (sent
    /// every `DRAIN_EVERY`).
    Drain,
    /// Copy up to `limit` lines of `session` after `after` (None: from the
    /// oldest held), after draining. MUST reply.
    Read {
        session: SessionId,
        after: Option<Pos>,
        limit: usize,
        reply: RpcReplyPort<Window>,
    },
    /// The position of the newest line of `session` numbered so far, after
    /// draining (see `Rings::end`). MUST reply.
    End {
        session: SessionId,
        reply: RpcReplyPort<Pos>,
    },
    /// Drop every line (capture off); counters stay.
    Clear,
    /// Fail, to exercise supervision in tests.
    #[cfg(test)]
    Crash,
}

/// The tap actor.
pub(crate) struct TapActor;

pub(crate) struct TapState {
    rings: Rings,
    sink: Arc<Sink>,
    /// What the last drain took and emptied: its generations go back to the
    /// sink on the next one, so neither side allocates per line.
    taken: Pending,
}

impl TapState {
    /// Moves every lane's lines into the rings: first what a lane dropped
    /// (their places, counted as dropped at capacity), then its
    /// generations, each line masked and cut here, on the actor's thread.
    fn drain(&mut self) {
        self.sink.take(&mut self.taken);
        let p = &mut self.taken;
        for (s, lane) in p.sessions.iter().zip(&mut p.lanes) {
            for skip in lane.skipped.drain(..) {
                match skip {
                    Skip::Lines(n) => self.rings.lost(s, n),
                    Skip::Connecting => self.rings.connecting(s),
                }
            }
            while let Some(gen) = lane.gens.pop_front() {
                store(&mut self.rings, s, &gen);
                lane.recycle(gen);
            }
        }
    }
}

/// Stores one generation's lines in `session`'s ring.
fn store(rings: &mut Rings, session: &SessionId, gen: &Gen) {
    for event in &gen.events {
        match *event {
            Event::Connecting => rings.connecting(session),
            Event::Line {
                time,
                dir,
                start,
                len,
                original_len,
                unmasked,
            } => {
                let (start, len) = (start as usize, len as usize);
                let Some(copied) = gen.bytes.get(start..start + len) else {
                    continue;
                };
                // Masked here, on the actor's thread, before it is cut and
                // stored: the session's path only copied it.
                let text = if unmasked {
                    rete_redact::mask_line(copied)
                } else {
                    Cow::Borrowed(copied)
                };
                // What was not copied counts as cut off too, unless masking
                // made the line short: then the rest belonged to what it
                // masked, and its length is not shown.
                let masked_short = matches!(text, Cow::Owned(_)) && text.len() <= MAX_LINE_BYTES;
                let whole = match masked_short {
                    true => text.len(),
                    false => text.len() + (original_len as usize).saturating_sub(len),
                };
                let kept = &text[..cut_point(&text)];
                let (text, kept) = stored_from(kept, whole);
                rings.push(session, time, dir, text, kept);
            }
        }
    }
}

impl Actor for TapActor {
    type Msg = TapMsg;
    type State = TapState;
    type Arguments = Arc<Sink>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        sink: Arc<Sink>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(TapState {
            rings: Rings::default(),
            sink,
            taken: Pending::default(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Lines wait in their lanes until a read drains them, or this (the
        // timer's task ends with the actor).
        myself.send_interval(DRAIN_EVERY, || TapMsg::Drain);
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TapMsg::Drain => state.drain(),
            TapMsg::Read {
                session,
                after,
                limit,
                reply,
            } => {
                state.drain();
                let _ = reply.send(state.rings.window(&session, after, limit));
            }
            TapMsg::End { session, reply } => {
                state.drain();
                let _ = reply.send(state.rings.end(&session));
            }
            TapMsg::Clear => state.rings.clear(),
            #[cfg(test)]
            TapMsg::Crash => return Err("crash requested".into()),
        }
        Ok(())
    }
}

/// Restarts the tap actor when it fails.
pub(crate) struct TapSupervisor;

async fn spawn_tap(
    myself: &ActorRef<()>,
    sink: &Arc<Sink>,
) -> Result<ActorRef<TapMsg>, ActorProcessingErr> {
    let (tap, _) = Actor::spawn_linked(None, TapActor, sink.clone(), myself.get_cell()).await?;
    *sink.actor.lock() = Some(tap.clone());
    Ok(tap)
}

impl Actor for TapSupervisor {
    type Msg = ();
    type State = Arc<Sink>;
    type Arguments = Arc<Sink>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        sink: Arc<Sink>,
    ) -> Result<Self::State, ActorProcessingErr> {
        spawn_tap(&myself, &sink).await?;
        Ok(sink)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        sink: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(tap) = sink.actor.lock().take() {
            tap.stop(None);
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        sink: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(_, cause) => {
                tracing::warn!("the raw tap actor failed ({cause}); restarting it");
                sink.actor.lock().take();
                spawn_tap(&myself, sink).await?;
            }
            // Only our own post_stop stops the tap (taking it out of the
            // sink first); anything else is a failure to recover from.
            SupervisionEvent::ActorTerminated(..) if sink.actor.lock().take().is_some() => {
                tracing::warn!("the raw tap actor stopped; restarting it");
                spawn_tap(&myself, sink).await?;
            }
            _ => {}
        }
        Ok(())
    }
}
