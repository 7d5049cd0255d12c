//! The log ring's actor and its supervisor: one of each for the process.
//!
//! The ring actor owns a [`LogRing`]; the layer casts it each captured line
//! (through the sink), and read_log asks it for a [`Snapshot`]. It never
//! awaits inside `handle` and never logs there (a line it logged would come
//! straight back to it). The supervisor restarts it, empty, if it fails: the
//! lost lines are a silent gap, as after a clear.

use super::line::LogLine;
use super::ring::{LogRing, ReadRequest, Snapshot};
use super::sink;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::sync::Arc;

/// A reference to the ring actor.
pub(crate) type RingRef = ActorRef<RingMsg>;

/// Messages the ring actor handles.
pub(crate) enum RingMsg {
    /// A captured line, numbered by the sink.
    Push(Arc<LogLine>),
    /// Capture went off: forget every line and every secret learned.
    Clear,
    /// A read. MUST reply with the snapshot.
    Read {
        /// What to read, and the sessions' secrets.
        request: ReadRequest,
        /// Where the snapshot goes.
        reply_to: RpcReplyPort<Snapshot>,
    },
}

/// The ring actor.
pub(crate) struct RingActor;

impl Actor for RingActor {
    type Msg = RingMsg;
    type State = LogRing;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<RingMsg>,
        _args: (),
    ) -> Result<LogRing, ActorProcessingErr> {
        Ok(LogRing::new())
    }

    async fn handle(
        &self,
        _myself: ActorRef<RingMsg>,
        msg: RingMsg,
        ring: &mut LogRing,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RingMsg::Push(line) => ring.push(line),
            RingMsg::Clear => ring.clear(),
            RingMsg::Read { request, reply_to } => {
                // The reader may have given up; nothing to do then.
                let _ = reply_to.send(ring.read(request));
            }
        }
        Ok(())
    }
}

/// Supervises the ring actor: starts it, hands it to the sink, and starts a
/// new, empty one if it fails.
pub(crate) struct LogSupervisor;

/// Messages the supervisor handles (none: it reacts only to its child).
pub(crate) enum SupervisorMsg {}

impl LogSupervisor {
    async fn spawn_ring(myself: &ActorRef<SupervisorMsg>) -> Result<(), ActorProcessingErr> {
        let (ring, _) = Actor::spawn_linked(None, RingActor, (), myself.get_cell()).await?;
        sink::register(ring);
        Ok(())
    }
}

impl Actor for LogSupervisor {
    type Msg = SupervisorMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        _args: (),
    ) -> Result<(), ActorProcessingErr> {
        LogSupervisor::spawn_ring(&myself).await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(_, why) => {
                sink::unregister();
                tracing::warn!(target: super::level::target::APP, reason = %why, "log ring failed; restarting it empty");
                LogSupervisor::spawn_ring(&myself).await?;
            }
            SupervisionEvent::ActorTerminated(..) => {
                sink::unregister();
                tracing::warn!(target: super::level::target::APP, "log ring stopped; restarting it empty");
                LogSupervisor::spawn_ring(&myself).await?;
            }
            _ => {}
        }
        Ok(())
    }
}
