//! The listener actor: it owns the port, the connection slots and the
//! refusal log, and hands each accepted connection to a task of its own.
//!
//! At most [`SLOTS`] connections are served at once; a further one is closed
//! unanswered. A connection holds its slot until its work has really ended
//! (see `connection.rs`), except that a handler overrunning its deadline by
//! a minute gives the slot back and is counted as overrunning; while
//! [`SLOTS`] handlers overrun, new connections are refused.
//!
//! The accept loop runs in a task the actor starts and owns: it takes a
//! slot and starts the connection's task itself, so a request does not wait
//! on the actor's mailbox, and the actor never awaits the socket inside
//! `handle`. The actor holds what a stop needs: the cancellation of every
//! request and the tracker that says when they have all ended.

mod connection;
mod supervisor;
#[cfg(test)]
mod tests;

pub(crate) use supervisor::{ControlSupervisor, SupervisorArgs, SupervisorMsg};

use crate::access_log::{self, AccessLog};
use crate::debug::Capture;
use crate::grant::{Grants, Principal, Tier};
use crate::http::{Gate, Refusal, RefusalLog};
use crate::read::reach::Reach;
use crate::token::Token;
use crate::tools::ToolBox;
use crate::tools::{Settings, ToolContext};
use crate::updates::Updates;
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rete_actors::{ReadOnlySessions, Rete, SendingSessions};
use socket2::SockRef;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Connections served at once.
pub(crate) const SLOTS: usize = 8;

/// How long a stop waits for requests in flight to finish.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What a connection task needs, shared by all of them.
pub(crate) struct ConnCtx {
    /// The token's digest and the port, as the access gate compares them.
    pub(crate) gate: Gate,
    pub(crate) uid: u32,
    pub(crate) tools: ToolBox,
    /// What tools and the registry read sessions through.
    pub(crate) sessions: ReadOnlySessions,
    /// Handed to a request only while control.send is on.
    sending: SendingSessions,
    /// send_raw's rate limits; the supervisor points it at the limiter
    /// actor it runs beside the listener.
    pub(crate) limiter: crate::send::limiter::Limiter,
    pub(crate) debug: Arc<AtomicBool>,
    pub(crate) send: Arc<AtomicBool>,
    /// Read once per request, like the switches: a line waits for the
    /// person only while control.approve is on.
    approvals: crate::send::approval::Approvals,
    pub(crate) access_log: Arc<AccessLog>,
    /// The subscription registry; its supervisor points this at the
    /// registry actor serving now.
    pub(crate) updates: Updates,
    /// The server's debug capture.
    pub(crate) capture: Capture,
    /// The host's grants, which the registry drops the subscriptions of
    /// when they end.
    pub(crate) grants: Grants,
    refusals: Mutex<RefusalLog>,
    slots: Arc<Slots>,
}

impl ConnCtx {
    /// Counts a refusal; logs it at debug level at most once per class per 10 s.
    pub(crate) fn refused(&self, refusal: Refusal) {
        if let Some(line) = self.refusals.lock().record(refusal, Instant::now()) {
            tracing::debug!("{line}");
        }
        // The gate's own refusals (token, Host, Origin, preflight) are AI
        // access and go to the access log too; a malformed request, a
        // deadline or the peer check is not, by the contract's list.
        let logged = match refusal {
            Refusal::Token => Some(access_log::Refusal::Token),
            Refusal::Host => Some(access_log::Refusal::Host),
            Refusal::Origin => Some(access_log::Refusal::Origin),
            Refusal::Options => Some(access_log::Refusal::Preflight),
            _ => None,
        };
        if let Some(class) = logged {
            self.access_log
                .record_refusal(access_log::wall_now(), Instant::now(), class);
        }
    }

    /// The tool context for one request from `principal`: settings read
    /// now, so a switch takes effect on the next request without a restart,
    /// and narrowed to a grant's tier.
    pub(crate) fn tool_context(
        &self,
        cancel: CancellationToken,
        principal: Principal,
    ) -> ToolContext {
        let switched_on = Settings {
            debug: self.debug.load(Ordering::Relaxed),
            send: self.send.load(Ordering::Relaxed),
        };
        let (settings, reach) = match principal.grant() {
            None => (switched_on, Reach::everything()),
            Some(grant) => (
                Settings {
                    debug: switched_on.debug && grant.tier != Tier::Read,
                    send: switched_on.send && grant.tier == Tier::Send,
                },
                Reach::within(grant.scope.clone()),
            ),
        };
        ToolContext {
            reach,
            principal,
            sessions: self.sessions.clone(),
            send: settings.send.then(|| crate::send::Sending {
                sessions: self.sending.clone(),
                limiter: self.limiter.clone(),
                approval: self.approvals.is_on().then(|| self.approvals.clone()),
            }),
            cancel,
            settings,
            access_log: self.access_log.clone(),
            updates: self.updates.clone(),
            capture: self.capture.clone(),
        }
    }
}

/// Slot accounting shared by the actor and the connection tasks.
#[derive(Default)]
pub(crate) struct Slots {
    live: AtomicUsize,
    overrunning: AtomicUsize,
}

/// A taken slot; dropping it gives the slot back.
pub(crate) struct SlotGuard {
    slots: Arc<Slots>,
}

impl SlotGuard {
    /// Gives the slot back and counts the holder as overrunning until the
    /// returned guard drops.
    pub(crate) fn into_overrun(self) -> OverrunGuard {
        let slots = self.slots.clone();
        slots.overrunning.fetch_add(1, Ordering::SeqCst);
        drop(self);
        OverrunGuard { slots }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.slots.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An overrunning handler; dropping it ends the overrun.
pub(crate) struct OverrunGuard {
    slots: Arc<Slots>,
}

impl Drop for OverrunGuard {
    fn drop(&mut self) {
        self.slots.overrunning.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    fn try_take(self: &Arc<Self>) -> Option<SlotGuard> {
        if self.overrunning.load(Ordering::SeqCst) >= SLOTS {
            return None;
        }
        self.live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < SLOTS).then_some(n + 1)
            })
            .ok()
            .map(|_| SlotGuard {
                slots: self.clone(),
            })
    }
}

/// Messages the listener actor handles.
pub(crate) enum ListenerMsg {
    /// Stop: cancel every request, wait up to 2 s for them, close the port.
    /// MUST reply once stopped.
    Stop(RpcReplyPort<()>),
}

/// The listener actor.
pub(crate) struct Listener;

/// What the listener is started with.
pub(crate) struct ListenerArgs {
    pub(crate) listener: TcpListener,
    pub(crate) ctx: Arc<ConnCtx>,
    /// Cancelled when this listener is done, by its own stop or by the
    /// supervisor after a failure: the accept loop then drops the socket, so
    /// the port is free to be bound again.
    pub(crate) closed: CancellationToken,
}

/// The listener's state.
pub(crate) struct ListenerState {
    cancel: CancellationToken,
    tracker: TaskTracker,
    closed: CancellationToken,
}

impl Actor for Listener {
    type Msg = ListenerMsg;
    type State = ListenerState;
    type Arguments = ListenerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ListenerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let state = ListenerState {
            cancel: CancellationToken::new(),
            tracker: TaskTracker::new(),
            closed: args.closed,
        };
        tokio::spawn(accept_loop(
            args.listener,
            args.ctx,
            state.cancel.clone(),
            state.tracker.clone(),
            state.closed.clone(),
        ));
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        state.closed.cancel();
        state.cancel.cancel();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ListenerMsg::Stop(reply) => {
                state.closed.cancel();
                state.cancel.cancel();
                state.tracker.close();
                let tracker = state.tracker.clone();
                // Wait off the actor's own task, then stop it.
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(STOP_GRACE, tracker.wait()).await;
                    myself.stop(None);
                    let _ = reply.send(());
                });
            }
        }
        Ok(())
    }
}

/// Accepts until `closed`: each connection takes a slot and gets a task of
/// its own; over the limit it is closed unanswered (the stream is dropped).
async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<ConnCtx>,
    cancel: CancellationToken,
    tracker: TaskTracker,
    closed: CancellationToken,
) {
    let local = own_address(&listener);
    // Accepted sockets inherit TCP_NODELAY (on Linux), so setting it once
    // here spares every connection a system call; see `connection::answer`.
    let nodelay = SockRef::from(&listener).set_tcp_nodelay(true).is_ok();
    loop {
        let accepted = tokio::select! {
            _ = closed.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let Some(slot) = ctx.slots.try_take() else {
                    continue;
                };
                let addrs = connection::Addrs {
                    peer,
                    local,
                    nodelay,
                };
                let task =
                    connection::serve(stream, addrs, ctx.clone(), cancel.child_token(), slot);
                tracker.spawn(task);
            }
            Err(e) => {
                // Out of file descriptors and the like: back off briefly.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The address every accepted connection's local end has: the listener's
/// own, when it is bound to one address (as the control port always is);
/// None for a wildcard, when each connection asks its socket.
fn own_address(listener: &TcpListener) -> Option<SocketAddr> {
    listener
        .local_addr()
        .ok()
        .filter(|addr| !addr.ip().is_unspecified())
}

/// The two switches every request reads once, shared by the server that
/// flips them and the connections that read them.
#[derive(Clone, Default)]
pub(crate) struct Switches {
    /// control.debug.
    pub(crate) debug: Arc<AtomicBool>,
    /// control.send.
    pub(crate) send: Arc<AtomicBool>,
    /// control.approve, and the lines waiting for the person.
    pub(crate) approvals: crate::send::approval::Approvals,
    /// The host's scoped grants, read by the gate on every request.
    pub(crate) grants: Grants,
}

/// Builds the shared connection context.
pub(crate) fn conn_ctx(
    token: Token,
    port: u16,
    rete: Arc<Rete>,
    switches: Switches,
    access_log: Arc<AccessLog>,
    updates: Updates,
    capture: Capture,
) -> Arc<ConnCtx> {
    Arc::new(ConnCtx {
        gate: Gate::new(token.expose(), port, switches.grants.clone()),
        grants: switches.grants.clone(),
        // SAFETY: geteuid has no preconditions and cannot fail.
        uid: unsafe { libc::geteuid() },
        tools: ToolBox::new(),
        sessions: ReadOnlySessions::new(rete.clone()),
        sending: SendingSessions::new(rete),
        limiter: crate::send::limiter::Limiter::unstarted(),
        debug: switches.debug,
        send: switches.send,
        approvals: switches.approvals,
        access_log,
        updates,
        capture,
        refusals: Mutex::new(RefusalLog::default()),
        slots: Arc::new(Slots::default()),
    })
}
