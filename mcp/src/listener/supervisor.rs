//! The control supervisor: it keeps one listener actor running on the port,
//! and the subscription registry and send_raw's rate limiter beside it.
//!
//! Should the listener fail, its accept loop is told to drop the socket and
//! a new listener is started on the same port after a short backoff. ractor's
//! default would stop the supervisor with its child; this one restarts it.
//! Should the registry fail, a new, empty one takes its place (subscriptions
//! live in memory only, and an agent re-subscribes after `unknown
//! subscription`). The registry lives exactly as long as the supervisor, so
//! stopping the server — for good, for a new token or for a new port —
//! removes every subscription. So does the limiter: its counts are cleared
//! the same way, and one that fails is replaced by a fresh one.

use super::{ConnCtx, Listener, ListenerArgs, ListenerMsg};
use crate::send::limiter::{LimiterActor, LimiterMsg};
use crate::updates::actor::{RegistryActor, RegistryArgs, RegistryMsg};
use crate::updates::SystemClock;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long to wait before binding the port again after a failure, and
/// between tries while it cannot be bound.
const RESTART_DELAY: Duration = Duration::from_millis(200);

/// Messages the control supervisor handles.
pub(crate) enum SupervisorMsg {
    /// Start a new listener (after a failure).
    Restart,
    /// Stop the listener (every request cancelled, up to 2 s for them), then
    /// the supervisor. MUST reply once both have stopped.
    Stop(RpcReplyPort<()>),
}

/// The control supervisor.
pub(crate) struct ControlSupervisor;

/// What the supervisor starts with: the port already bound for the first
/// listener, so a taken port is reported by the caller before anything runs.
pub(crate) struct SupervisorArgs {
    pub(crate) listener: TcpListener,
    pub(crate) port: u16,
    pub(crate) ctx: Arc<ConnCtx>,
}

/// The supervisor's state.
pub(crate) struct SupervisorState {
    port: u16,
    ctx: Arc<ConnCtx>,
    child: Option<(ActorRef<ListenerMsg>, CancellationToken)>,
    registry: Option<ActorRef<RegistryMsg>>,
    limiter: Option<ActorRef<LimiterMsg>>,
    stopping: bool,
}

impl SupervisorState {
    async fn spawn_child(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        listener: TcpListener,
    ) -> Result<(), ActorProcessingErr> {
        let closed = CancellationToken::new();
        let args = ListenerArgs {
            listener,
            ctx: self.ctx.clone(),
            closed: closed.clone(),
        };
        let (child, _) = Actor::spawn_linked(None, Listener, args, myself.get_cell()).await?;
        self.child = Some((child, closed));
        Ok(())
    }

    async fn spawn_registry(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let args = RegistryArgs {
            sessions: self.ctx.sessions.clone(),
            clock: Arc::new(SystemClock),
            capture: self.ctx.capture.clone(),
            grants: Some(self.ctx.grants.clone()),
        };
        let (registry, _) =
            Actor::spawn_linked(None, RegistryActor, args, myself.get_cell()).await?;
        self.ctx.updates.set(Some(registry.clone()));
        self.registry = Some(registry);
        Ok(())
    }

    async fn spawn_limiter(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let (limiter, _) = Actor::spawn_linked(None, LimiterActor, (), myself.get_cell()).await?;
        self.ctx.limiter.set(Some(limiter.clone()));
        self.limiter = Some(limiter);
        Ok(())
    }
}

impl Actor for ControlSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = SupervisorState {
            port: args.port,
            ctx: args.ctx,
            child: None,
            registry: None,
            limiter: None,
            stopping: false,
        };
        state.spawn_registry(&myself).await?;
        state.spawn_limiter(&myself).await?;
        state.spawn_child(&myself, args.listener).await?;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Restart => {
                if state.stopping || state.child.is_some() {
                    return Ok(());
                }
                let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, state.port));
                match TcpListener::bind(addr).await {
                    Ok(listener) => {
                        state.spawn_child(&myself, listener).await?;
                        tracing::info!(port = state.port, "control listener restarted");
                    }
                    Err(e) => {
                        tracing::warn!(port = state.port, error = %e, "control port could not be bound again; retrying");
                        myself.send_after(RESTART_DELAY, || SupervisorMsg::Restart);
                    }
                }
            }
            SupervisorMsg::Stop(reply) => {
                state.stopping = true;
                let child = state.child.take();
                let registry = state.registry.take();
                let limiter = state.limiter.take();
                let updates = state.ctx.updates.clone();
                let limits = state.ctx.limiter.clone();
                let me = myself.clone();
                // Wait for the listener off this actor's task, then stop.
                tokio::spawn(async move {
                    if let Some((child, closed)) = child {
                        let _ = ractor::call!(child, ListenerMsg::Stop);
                        closed.cancel();
                    }
                    // Only once no request can reach it: every subscription
                    // goes with it.
                    updates.set(None);
                    if let Some(registry) = registry {
                        let _ = registry.stop_and_wait(None, None).await;
                    }
                    limits.set(None);
                    if let Some(limiter) = limiter {
                        let _ = limiter.stop_and_wait(None, None).await;
                    }
                    me.stop(None);
                    let _ = reply.send(());
                });
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let cell = match &event {
            SupervisionEvent::ActorFailed(cell, _)
            | SupervisionEvent::ActorTerminated(cell, ..) => cell.clone(),
            _ => return Ok(()),
        };
        if state.stopping {
            return Ok(());
        }
        let registry_failed = state
            .registry
            .as_ref()
            .is_some_and(|r| r.get_id() == cell.get_id());
        if registry_failed {
            tracing::warn!("subscription registry stopped unexpectedly; starting an empty one");
            state.registry = None;
            state.ctx.updates.set(None);
            state.spawn_registry(&myself).await?;
            return Ok(());
        }
        let limiter_failed = state
            .limiter
            .as_ref()
            .is_some_and(|l| l.get_id() == cell.get_id());
        if limiter_failed {
            tracing::warn!("send_raw's rate limiter stopped unexpectedly; starting a fresh one");
            state.limiter = None;
            state.ctx.limiter.set(None);
            state.spawn_limiter(&myself).await?;
            return Ok(());
        }
        let ours = state
            .child
            .as_ref()
            .is_some_and(|(child, _)| child.get_id() == cell.get_id());
        if !ours {
            return Ok(());
        }
        if let Some((_, closed)) = state.child.take() {
            // Frees the port: the old accept loop drops its socket.
            closed.cancel();
        }
        tracing::warn!("control listener stopped unexpectedly; restarting");
        myself.send_after(RESTART_DELAY, || SupervisorMsg::Restart);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::AccessLog;
    use crate::listener::conn_ctx;
    use crate::token::Token;
    use rete_actors::{Rete, ReteOptions};
    use std::time::Instant;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpStream;

    /// A ping through the whole listener; the status code, or None when the
    /// connection could not be made or was closed unanswered.
    async fn ping(port: u16, token: &str) -> Option<u16> {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        let status = answer.get(9..12)?;
        std::str::from_utf8(status).ok()?.parse().ok()
    }

    /// A control supervisor serving a fresh port with no sessions.
    struct Served {
        supervisor: ActorRef<SupervisorMsg>,
        updates: crate::updates::Updates,
        limiter: crate::send::limiter::Limiter,
        token: Token,
        port: u16,
    }

    async fn serve() -> Served {
        let rete = Arc::new(Rete::start(ReteOptions::default()).await.unwrap());
        let token = Token::generate();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let updates = crate::updates::Updates::unstarted();
        let ctx = conn_ctx(
            token.clone(),
            port,
            rete,
            crate::listener::Switches::default(),
            Arc::new(AccessLog::new()),
            updates.clone(),
            crate::debug::Capture::off(),
        );
        let limiter = ctx.limiter.clone();
        let args = SupervisorArgs {
            listener,
            port,
            ctx,
        };
        let (supervisor, _) = Actor::spawn(None, ControlSupervisor, args).await.unwrap();
        Served {
            supervisor,
            updates,
            limiter,
            token,
            port,
        }
    }

    #[tokio::test]
    async fn a_failed_listener_is_restarted_on_the_same_port() {
        let Served {
            supervisor,
            updates,
            limiter,
            token,
            port,
        } = serve().await;
        // This test runs as whatever user runs it, and so does its client:
        // the peer check sees the same user.
        assert_eq!(ping(port, token.expose()).await, Some(200));

        let registry = updates.actor().map(|r| r.get_id());
        assert!(registry.is_some(), "the registry starts with the server");
        let limits = limiter.actor().map(|l| l.get_id());
        assert!(limits.is_some(), "the rate limiter starts with the server");
        let listeners = || -> Vec<_> {
            supervisor
                .get_children()
                .into_iter()
                .filter(|c| Some(c.get_id()) != registry && Some(c.get_id()) != limits)
                .collect()
        };
        let children = listeners();
        assert_eq!(children.len(), 1);
        children[0].kill();

        // The supervisor binds the port again and serves it, with the same token.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut served = false;
        while Instant::now() < deadline {
            if ping(port, token.expose()).await == Some(200) {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            served,
            "the port was not served again after the listener failed"
        );
        let new_children = listeners();
        assert_eq!(new_children.len(), 1);
        assert_ne!(new_children[0].get_id(), children[0].get_id());
        let _ = ractor::call!(supervisor, SupervisorMsg::Stop);
        assert_eq!(
            ping(port, token.expose()).await,
            None,
            "stopped means closed"
        );
        assert!(
            updates.actor().is_none(),
            "the registry stops with the server"
        );
    }

    #[tokio::test]
    async fn a_failed_registry_is_replaced_by_an_empty_one() {
        let Served {
            supervisor,
            updates,
            ..
        } = serve().await;
        let first = updates.actor().expect("started with the server");
        first.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        let replaced = loop {
            match updates.actor() {
                Some(r) if r.get_id() != first.get_id() => break Some(r),
                _ if Instant::now() > deadline => break None,
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        let replaced = replaced.expect("a new registry took the failed one's place");
        let stats = updates.stats().await.expect("the new registry answers");
        assert_eq!(stats.subscriptions, 0);
        assert!(supervisor
            .get_children()
            .iter()
            .any(|c| c.get_id() == replaced.get_id()));
        let _ = ractor::call!(supervisor, SupervisorMsg::Stop);
    }
}
