//! The tap actor and its supervisor: one actor for the process, holding
//! every session's ring (see `super` for why one rather than one per
//! session). It masks pending lines and moves them into the rings (woken
//! every `DRAIN_AT` lines, and before every read), serves reads by copying a
//! window out (lines are shared, so a copy is a reference count each), and
//! clears the rings when capture goes off. It never awaits inside `handle`.
//!
//! The supervisor restarts a failed tap actor at once. The restarted actor
//! starts with empty rings: the lines lost are a gap, and since tap numbers
//! are process-wide and increasing, a reader's old cursor reads the new
//! lines from their start rather than skipping them.

use crate::debug::raw::ring::{cut_point, stored_from, Pos, Rings, Window, MAX_LINE_BYTES};
use crate::debug::raw::sink::{Event, Pending, Sink};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use rete_engine::ids::SessionId;
use std::borrow::Cow;
use std::sync::Arc;

/// Messages the tap actor handles.
pub(crate) enum TapMsg {
    /// Lines are pending: move them into the rings.
    Drain,
    /// Copy up to `limit` lines of `session` after `after` (None: from the
    /// oldest held), after draining. MUST reply.
    Read {
        session: SessionId,
        after: Option<Pos>,
        limit: usize,
        reply: RpcReplyPort<Window>,
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
    /// The lists the last drain emptied, handed back to the sink on the next
    /// one so neither side allocates per line.
    spare: Pending,
}

impl TapState {
    fn drain(&mut self) {
        self.sink.take(&mut self.spare);
        let p = &mut self.spare;
        for event in p.events.drain(..) {
            match event {
                Event::Connecting(i) => {
                    if let Some(s) = p.sessions.get(i as usize) {
                        self.rings.connecting(s);
                    }
                }
                Event::Line {
                    session,
                    time,
                    dir,
                    start,
                    len,
                    original_len,
                    unmasked,
                } => {
                    let (start, len) = (start as usize, len as usize);
                    let (Some(s), Some(copied)) = (
                        p.sessions.get(session as usize),
                        p.bytes.get(start..start + len),
                    ) else {
                        continue;
                    };
                    // Masked here, on the actor's thread, before it is cut
                    // and stored: the session's path only copied it.
                    let text = if unmasked {
                        rete_redact::mask_line(copied)
                    } else {
                        Cow::Borrowed(copied)
                    };
                    // What was not copied counts as cut off too, unless
                    // masking made the line short: then the rest belonged
                    // to what it masked, and its length is not shown.
                    let masked_short =
                        matches!(text, Cow::Owned(_)) && text.len() <= MAX_LINE_BYTES;
                    let whole = match masked_short {
                        true => text.len(),
                        false => text.len() + (original_len as usize).saturating_sub(len),
                    };
                    let kept = &text[..cut_point(&text)];
                    let (text, kept) = stored_from(kept, whole);
                    self.rings.push(s, time, dir, text, kept);
                }
            }
        }
        p.bytes.clear();
        for (i, lost) in p.lost.iter().enumerate() {
            if let Some(s) = p.sessions.get(i) {
                self.rings.lost(s, *lost);
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
            spare: Pending::default(),
        })
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
