//! The control server's lifecycle: start (refusing root, reporting a taken
//! port), the debug and send switches, token regeneration and port changes
//! (close, wait up to 2 s for requests in flight, reopen), stop.

use crate::access_log::AccessLog;
use crate::debug::Capture;
use crate::grant::Grants;
use crate::listener::{conn_ctx, ControlSupervisor, SupervisorArgs, SupervisorMsg, Switches};
use crate::send::approval::Approvals;
use crate::token::{Token, TokenStore, TokenStoreError};
use crate::updates::Updates;
use ractor::{Actor, ActorRef};
use rete_actors::Rete;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Why the server is not serving. `Display` is the text reterm shows.
#[derive(Debug)]
pub enum StartError {
    /// Running as root: a closing socket is listed as owned by root, so the
    /// peer check could not tell our user from no user.
    Root,
    /// Another program holds the port.
    PortInUse(u16),
    /// The port could not be opened for another reason.
    CouldNotOpen(u16, io::Error),
    /// The host's store could not read or keep the token.
    Token(TokenStoreError),
    /// The listener actor could not start.
    Spawn(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Root => {
                f.write_str("AI access is not available when Rete runs as root — AI access is off")
            }
            StartError::PortInUse(port) => write!(f, "Port {port} is in use — AI access is off"),
            StartError::CouldNotOpen(port, e) => {
                write!(
                    f,
                    "Port {port} could not be opened ({e}) — AI access is off"
                )
            }
            StartError::Token(e) => write!(f, "{e} — AI access is off"),
            StartError::Spawn(e) => {
                write!(f, "the server could not start ({e}) — AI access is off")
            }
        }
    }
}

impl std::error::Error for StartError {}

/// Settings the server starts with.
#[derive(Clone)]
pub struct ServerSettings {
    /// The port on 127.0.0.1.
    pub port: u16,
    /// Serve the debug tools.
    pub debug: bool,
    /// Serve send_raw.
    pub send: bool,
    /// Where the token is kept: the host's store, asked at every start
    /// and regeneration.
    pub tokens: Arc<dyn TokenStore>,
    /// The host's scoped grants (beyond the contract; none by default). The
    /// host keeps them and changes them while the server runs: each request
    /// reads them.
    pub grants: Grants,
}

impl fmt::Debug for ServerSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSettings")
            .field("port", &self.port)
            .field("debug", &self.debug)
            .field("send", &self.send)
            .finish_non_exhaustive()
    }
}

/// A running control server.
pub struct ControlServer {
    rete: Arc<Rete>,
    settings: ServerSettings,
    token: Token,
    switches: Switches,
    access_log: Arc<AccessLog>,
    supervisor: ActorRef<SupervisorMsg>,
    updates: Updates,
    capture: Capture,
}

impl ControlServer {
    /// Starts serving on `127.0.0.1:<port>`. The access log is the caller's,
    /// so it survives stops and regenerations.
    pub async fn start(
        rete: Arc<Rete>,
        settings: ServerSettings,
        access_log: Arc<AccessLog>,
    ) -> Result<ControlServer, StartError> {
        ControlServer::start_with_approvals(rete, settings, access_log, Approvals::new()).await
    }

    /// [`start`](Self::start), with the host's [`Approvals`]: while it is
    /// on, every send_raw line waits for the person's answer there. The
    /// host keeps it across servers, so its prompts outlive a restart's
    /// handle (the lines themselves are withdrawn when their requests end).
    pub async fn start_with_approvals(
        rete: Arc<Rete>,
        settings: ServerSettings,
        access_log: Arc<AccessLog>,
        approvals: Approvals,
    ) -> Result<ControlServer, StartError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return Err(StartError::Root);
        }
        let token = settings
            .tokens
            .load_or_store(Token::generate())
            .map_err(StartError::Token)?;
        let switches = Switches {
            debug: Arc::new(AtomicBool::new(settings.debug)),
            send: Arc::new(AtomicBool::new(settings.send)),
            approvals,
            grants: settings.grants.clone(),
        };
        let updates = Updates::unstarted();
        let raw_tap = crate::debug::raw::RawTaps::start(rete.debug_raw_slot())
            .await
            .map_err(StartError::Spawn)?;
        let capture = Capture::with_raw_tap(raw_tap);
        let listener = open(
            settings.port,
            &token,
            &rete,
            &switches,
            &access_log,
            &updates,
            &capture,
        )
        .await?;
        capture.switch(settings.debug);
        Ok(ControlServer {
            rete,
            settings,
            token,
            switches,
            access_log,
            supervisor: listener,
            updates,
            capture,
        })
    }

    /// The port served.
    pub fn port(&self) -> u16 {
        self.settings.port
    }

    /// The subscription registry the tools use: a host can subscribe and
    /// read through it too, or watch what collection costs
    /// ([`Updates::stats`]). It is emptied whenever the server closes.
    pub fn updates(&self) -> &Updates {
        &self.updates
    }

    /// The current token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Switches the debug tools and the capture they read; takes effect on
    /// the next request.
    pub fn set_debug(&self, on: bool) {
        self.switches.debug.store(on, Ordering::Relaxed);
        self.capture.switch(on);
    }

    /// The debug capture (the raw tap and the log ring), on while debug is.
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// The lines waiting for the person's approval, and its switch.
    pub fn approvals(&self) -> &Approvals {
        &self.switches.approvals
    }

    /// Switches send_raw; takes effect on the next request.
    pub fn set_send(&self, on: bool) {
        self.switches.send.store(on, Ordering::Relaxed);
    }

    /// `AI access on, port <port>` with ` · debug` and ` · send` as they
    /// apply, and ` · approve` (beyond the contract) while control.approve is.
    pub fn status_line(&self) -> String {
        let mut s = format!("AI access on, port {}", self.settings.port);
        if self.switches.debug.load(Ordering::Relaxed) {
            s.push_str(" · debug");
        }
        if self.switches.send.load(Ordering::Relaxed) {
            s.push_str(" · send");
        }
        if self.switches.approvals.is_on() {
            s.push_str(" · approve");
        }
        s
    }

    /// The command that connects Claude Code, token included.
    pub fn connect_command(&self) -> String {
        format!(
            "claude mcp add --transport http rete http://127.0.0.1:{}/mcp --header \"Authorization: Bearer {}\"",
            self.settings.port,
            self.token.expose()
        )
    }

    /// Makes a new token: the port is closed (requests in flight cancelled,
    /// up to 2 s to finish) and opened again with it. On failure the server
    /// is off and the error says why.
    pub async fn regenerate_token(mut self) -> Result<ControlServer, StartError> {
        self.close().await;
        let fresh = Token::generate();
        self.settings
            .tokens
            .replace(&fresh)
            .map_err(StartError::Token)?;
        self.token = fresh;
        self.reopen().await
    }

    /// Moves to another port, the same way.
    pub async fn set_port(mut self, port: u16) -> Result<ControlServer, StartError> {
        self.close().await;
        self.settings.port = port;
        self.reopen().await
    }

    /// Stops serving: every request cancelled, up to 2 s for them to end.
    pub async fn stop(self) {
        self.close().await;
    }

    /// Closes the port; the capture stops with it (its rings are cleared),
    /// since capture runs only while the server runs.
    async fn close(&self) {
        let _ = ractor::call!(self.supervisor, SupervisorMsg::Stop);
        self.capture.switch(false);
    }

    async fn reopen(mut self) -> Result<ControlServer, StartError> {
        self.supervisor = open(
            self.settings.port,
            &self.token,
            &self.rete,
            &self.switches,
            &self.access_log,
            &self.updates,
            &self.capture,
        )
        .await?;
        self.capture
            .switch(self.switches.debug.load(Ordering::Relaxed));
        Ok(self)
    }
}

async fn open(
    port: u16,
    token: &Token,
    rete: &Arc<Rete>,
    switches: &Switches,
    access_log: &Arc<AccessLog>,
    updates: &Updates,
    capture: &Capture,
) -> Result<ActorRef<SupervisorMsg>, StartError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = TcpListener::bind(addr).await.map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => StartError::PortInUse(port),
        _ => StartError::CouldNotOpen(port, e),
    })?;
    let ctx = conn_ctx(
        token.clone(),
        port,
        rete.clone(),
        switches.clone(),
        access_log.clone(),
        updates.clone(),
        capture.clone(),
    );
    let args = SupervisorArgs {
        listener,
        port,
        ctx,
    };
    let (actor, _) = Actor::spawn(None, ControlSupervisor, args)
        .await
        .map_err(|e| StartError::Spawn(e.to_string()))?;
    Ok(actor)
}
