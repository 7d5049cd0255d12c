//! The running client: networks from the config, the engine, and the loop
//! that reads commands from stdin and prints activity to stdout.
//!
//! # Layout
//! - `spec.rs`: a configured network becomes an engine session spec.
//! - `render.rs`: a row becomes one printed line.
//! - `dispatch.rs`: a parsed command becomes engine calls.
//! - `control.rs`: the AI access control server and `/control`.
//! - `transcript.rs`: per-buffer transcript files (`logging = true`).
//! - this file: start-up, the event loop, the current buffer.

mod control;
mod dispatch;
mod render;
mod spec;
mod transcript;

use anyhow::Context as _;
use render::render_row;
use rete_actors::{Rete, ReteOptions, SessionEvent, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::event::Event;
use rete_engine::ids::BufferId;
use reterm::config::{LoadedConfig, NetworkConfig};
use reterm::input::parse_input;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::broadcast::error::RecvError;
use transcript::{Target, Transcripts};

/// How long `/quit` waits for QUIT lines to reach the servers.
const QUIT_GRACE: Duration = Duration::from_secs(2);

/// One configured network and its running session.
struct Network {
    config: NetworkConfig,
    session: SessionHandle,
}

/// The buffer plain text goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Current {
    network: usize,
    buffer: BufferId,
}

/// The client's state between inputs.
pub struct App {
    rete: Arc<Rete>,
    control: control::Control,
    /// Subscribed before any session starts, so no early event is missed.
    events: Option<tokio::sync::broadcast::Receiver<SessionEvent>>,
    loaded: LoadedConfig,
    networks: Vec<Network>,
    current: Option<Current>,
    /// A channel the person just joined: focus it when its buffer opens.
    focus_next: Option<(usize, String)>,
    /// Where rows are also written; `None` unless `logging = true`.
    transcripts: Option<Transcripts>,
    quit: bool,
}

impl App {
    /// Starts the engine and adds every configured network (connecting the
    /// `autoconnect` ones).
    pub async fn start(loaded: LoadedConfig) -> anyhow::Result<App> {
        let rete = Arc::new(
            Rete::start(ReteOptions::default())
                .await
                .context("starting the engine")?,
        );
        let events = Some(rete.subscribe());
        let loaded_logging = loaded.config.logging;
        let mut networks = Vec::new();
        for net in &loaded.config.networks {
            let session = rete
                .add_session(spec::session_spec(net)?)
                .await
                .with_context(|| format!("starting network {}", net.name))?;
            networks.push(Network {
                config: net.clone(),
                session,
            });
        }
        let current = networks.first().map(|_| Current {
            network: 0,
            buffer: BufferId::from_client(""),
        });
        let mut app = App {
            control: control::Control::new(rete.clone()),
            rete,
            events,
            loaded,
            networks,
            current,
            focus_next: None,
            transcripts: start_transcripts(loaded_logging),
            quit: false,
        };
        if let Some(first) = app.networks.first() {
            let server = first
                .session
                .reader()
                .read(|v| v.server_buffer().clone())
                .await?;
            app.current = Some(Current {
                network: 0,
                buffer: server,
            });
        }
        for notice in &app.loaded.notices {
            say(&format!("-!- {notice}"));
        }
        if let Some(failure) = app.control.apply(&app.loaded.config.control).await {
            say(&format!("-!- {failure}"));
        }
        Ok(app)
    }

    /// Runs until `/quit`, end of input or Ctrl-C.
    pub async fn run(mut self) -> anyhow::Result<()> {
        let mut events = match self.events.take() {
            Some(e) => e,
            None => self.rete.subscribe(),
        };
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        if self.loaded.created {
            say(&format!(
                "Created {} — add a [[networks]] table, then /connect NAME",
                self.loaded.path.display()
            ));
        } else if self.networks.is_empty() {
            say(&format!(
                "No networks in {} — add a [[networks]] table",
                self.loaded.path.display()
            ));
        }
        while !self.quit {
            tokio::select! {
                line = stdin.next_line() => match line {
                    Ok(Some(line)) => self.on_input(&line).await,
                    // End of input is a quit: reterm is line-driven.
                    Ok(None) | Err(_) => self.quit = true,
                },
                event = events.recv() => match event {
                    Ok(event) => self.on_event(event).await,
                    Err(RecvError::Lagged(n)) => say(&format!("-!- {n} events were not shown (output fell behind)")),
                    Err(RecvError::Closed) => self.quit = true,
                },
                _ = tokio::signal::ctrl_c() => self.quit = true,
            }
        }
        self.control.stop().await;
        self.rete.shutdown(QUIT_GRACE).await;
        if let Some(transcripts) = self.transcripts.take() {
            transcripts.close().await;
        }
        Ok(())
    }

    async fn on_input(&mut self, line: &str) {
        match parse_input(line) {
            Ok(input) => {
                if let Err(e) = dispatch::dispatch(self, input).await {
                    say(&format!("error: {e}"));
                }
            }
            Err(e) => say(&format!("error: {e}")),
        }
    }

    async fn on_event(&mut self, event: SessionEvent) {
        let Some(index) = self
            .networks
            .iter()
            .position(|n| n.session.id() == &event.session)
        else {
            return;
        };
        let network = self.networks[index].config.name.clone();
        match event.event {
            Event::Row { buffer, seq } => {
                let reader = self.networks[index].session.reader();
                let net = network.clone();
                let rendered = reader
                    .read(move |v| {
                        let b = v.buffer(&buffer)?;
                        let row = b.get(seq)?;
                        let target = match b.kind() {
                            BufferKind::Server => Target::Server,
                            _ => Target::Named(b.name().to_owned()),
                        };
                        Some((render_row(&net, b.name(), b.kind(), row), target))
                    })
                    .await;
                if let Ok(Some((line, target))) = rendered {
                    say(&line);
                    if let Some(transcripts) = &self.transcripts {
                        transcripts.append(&network, &target, line).await;
                    }
                }
            }
            Event::State(state) => say(&format!("[{network}] -!- {}", state.as_str())),
            Event::BufferOpened(buffer) => self.maybe_focus(index, buffer).await,
            Event::OwnNick(nick) => say(&format!("[{network}] -!- you are now {nick}")),
            Event::Registered | Event::Members(_) | Event::Topic(_) => {}
        }
    }

    /// Focuses a new channel buffer when the person has just asked to join
    /// it, or when they are still looking at that network's server buffer.
    async fn maybe_focus(&mut self, index: usize, buffer: BufferId) {
        let reader = self.networks[index].session.reader();
        let id = buffer.clone();
        let name = reader
            .read(move |v| {
                v.buffer(&id)
                    .filter(|b| b.kind() == BufferKind::Channel)
                    .map(|b| b.name().to_owned())
            })
            .await
            .ok()
            .flatten();
        let Some(name) = name else {
            return;
        };
        let asked = self
            .focus_next
            .as_ref()
            .is_some_and(|(net, want)| *net == index && want.eq_ignore_ascii_case(&name));
        let idle = match self.current_target().await {
            Some((net, _, kind)) => net == index && kind == BufferKind::Server,
            None => true,
        };
        if asked || idle {
            self.focus_next = None;
            self.current = Some(Current {
                network: index,
                buffer,
            });
        }
    }

    /// The current buffer's network, name and kind.
    async fn current_target(&self) -> Option<(usize, String, BufferKind)> {
        let current = self.current.clone()?;
        let reader = self.networks.get(current.network)?.session.reader();
        let id = current.buffer.clone();
        let found = reader
            .read(move |v| v.buffer(&id).map(|b| (b.name().to_owned(), b.kind())))
            .await
            .ok()
            .flatten()?;
        Some((current.network, found.0, found.1))
    }
}

/// The transcript writer when `logging` is on; says why not when `HOME` is
/// unset, since the person asked for transcripts.
fn start_transcripts(logging: bool) -> Option<Transcripts> {
    if !logging {
        return None;
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Some(Transcripts::start(
            transcript::logs_dir(std::path::Path::new(&home)),
            say,
        )),
        None => {
            say("error: logging is on but HOME is not set: no transcripts are written");
            None
        }
    }
}

/// Prints one line to stdout. A closed stdout ends nothing here: the loop
/// notices the closed stdin or Ctrl-C.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
