//! The running client: networks from the config, the engine, and the two
//! frontends over the same state: line mode (stdin commands, stdout lines)
//! and the full screen.
//!
//! # Layout
//! - `spec.rs`: a configured network becomes an engine session spec.
//! - `render.rs`: a row becomes one printed line (line mode, transcripts).
//! - `dispatch.rs`: a parsed command becomes engine calls.
//! - `buffers.rs`: the numbered buffer list `/buffers`, `/buffer` and the
//!   switching keys share.
//! - `events.rs`: what each engine event means for the person; `errors.rs`:
//!   a server's error shown where the person typed.
//! - `older.rs`: older rows of a ReteCloud buffer on demand (`/backlog`,
//!   scrolling to the top in full screen).
//! - `notices.rs`: where reterm's own lines go; `notes.rs`: lines reterm adds
//!   to a network's buffer in full screen (topic and names on join).
//! - `control.rs`: the AI access control server and `/control`; `reload.rs`:
//!   `/reload`; `approval.rs`: what reterm says and answers while an
//!   agent's line waits for the person (control.approve).
//! - `transcript.rs`: per-buffer transcript files (`logging = true`);
//!   `transcript_dates.rs`: their `log opened` and `day changed` lines.
//! - `leaving.rs`: QUIT with a reason on every way out (`/quit`, signals).
//! - `line_mode.rs`: the line-mode loop.
//! - `screen/`: the full-screen loop.
//! - this file: start-up and the state both frontends share.

mod approval;
mod buffers;
mod cloud_resume;
mod cloud_token;
mod control;
mod dispatch;
mod errors;
mod events;
mod grants;
mod leaving;
mod line_mode;
mod notes;
pub mod notices;
mod older;
mod register;
mod reload;
mod render;
pub mod screen;
mod spec;
pub mod token_command;
mod transcript;
mod transcript_dates;

use anyhow::Context as _;
pub use notices::say;
use rete_actors::{Rete, ReteOptions, SessionEvent, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::BufferId;
use reterm::config::{LoadedConfig, NetworkConfig};
use reterm::tui::look::Look;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use transcript::Transcripts;

/// What a first run says to do next.
const NEXT_STEPS: &str = "-!- next: it holds the network local (a server on this machine: /connect local) and a TLS network for irc.libera.chat, commented out: uncomment it, set your nick, restart reterm and /connect libera";

/// How long `/quit` waits for QUIT lines to reach the servers.
const QUIT_GRACE: Duration = Duration::from_secs(2);

/// One configured network and its running session.
struct Network {
    config: NetworkConfig,
    session: SessionHandle,
}

/// The buffer plain text goes to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Current {
    network: usize,
    buffer: BufferId,
}

/// Which frontend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// stdin and stdout are not both a terminal, or `--plain`.
    Line,
    /// The full-screen interface.
    Screen,
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
    /// Full screen only: reterm's own buffer is shown (`current` still names
    /// the network commands go to).
    own_focused: bool,
    /// Full screen: the raw buffer of this network is shown (with
    /// `own_focused` set, so it behaves as reterm's buffer for typed text).
    raw_focused: Option<usize>,
    /// Full screen: networks whose raw buffer `/raw` opened.
    raw_open: std::collections::BTreeSet<usize>,
    /// Networks where the server said we are away (306), until it says we
    /// are back (305) or the connection ends: the status bar says so.
    away: HashSet<usize>,
    mode: Mode,
    /// A channel the person just joined: focus it when its buffer opens.
    focus_next: Option<(usize, String)>,
    /// Channels whose topic (or names) the person asked for, by network and
    /// lower-cased name: the answer is shown when it arrives.
    asked_topic: HashSet<(usize, String)>,
    asked_names: HashSet<(usize, String)>,
    /// Channels we just joined (full screen): the topic and a names summary
    /// are shown when they arrive.
    joining: HashSet<(usize, BufferId)>,
    /// Display settings (`/set time_format …`).
    look: Look,
    /// Full screen: lines reterm adds beside a buffer's rows.
    notes: notes::Notes,
    /// Full screen: reterm's own buffer.
    own: Option<Arc<notices::Notices>>,
    /// The order of the numbered buffer list (new buffers at the end).
    order: buffers::Order,
    /// Where the person typed their last line: a server's error about it
    /// is shown there too (`errors.rs`).
    typed: Option<errors::Typed>,
    /// Buffers `/close`d: left out of the list until focused again (a
    /// `/join`, a `/query`, or new activity in them).
    closed: HashSet<(usize, BufferId)>,
    /// Per network: the session's held secrets as last read from its
    /// engine (every credential it sent among them), masked in every row
    /// shown or written. See `App::secrets`.
    masks: Vec<rete_redact::SecretSet>,
    /// `/ignore` masks, compiled.
    ignores: reterm::client::ignore::Ignores,
    /// Buffers `/clear`ed, with the last seq hidden.
    cleared: HashMap<(usize, BufferId), u64>,
    /// Every session's recent raw lines (`/raw`), fed by the engine's raw
    /// tap; in memory only.
    raw: Arc<reterm::client::raw_ring::RawRings>,
    /// Where rows are also written; `None` unless `logging = true`.
    transcripts: Option<Transcripts>,
    /// The dates transcripts were last written at.
    dates: transcript_dates::Dates,
    /// Requests for older rows of ReteCloud buffers.
    older: older::Older,
    quit: bool,
}

impl App {
    /// Starts the engine and adds every configured network (connecting the
    /// `autoconnect` ones).
    pub async fn start(loaded: LoadedConfig, mode: Mode) -> anyhow::Result<App> {
        let rete = Arc::new(
            Rete::start(ReteOptions::default())
                .await
                .context("starting the engine")?,
        );
        let events = Some(rete.subscribe());
        // Set before any session starts, so `/raw` shows registration too.
        let raw = Arc::new(reterm::client::raw_ring::RawRings::default());
        rete.set_raw_observer(Some(raw.clone()));
        let loaded_logging = loaded.config.logging;
        // AI access starts before any session, so that with control.debug
        // on the debug capture sees each session's registration (CAP, SASL,
        // a ReteCloud auth frame) as `/raw` does.
        let mut control = control::Control::new(rete.clone());
        let control_failure = control.apply(&loaded.config.control).await;
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
        let network_count = networks.len();
        let look = look_of(&loaded.config.display);
        let ignores = reterm::client::ignore::Ignores::new(&loaded.config.ignores);
        let mut app = App {
            control,
            rete,
            events,
            loaded,
            networks,
            current: None,
            own_focused: false,
            raw_focused: None,
            raw_open: Default::default(),
            away: HashSet::new(),
            mode,
            focus_next: None,
            asked_topic: HashSet::new(),
            asked_names: HashSet::new(),
            joining: HashSet::new(),
            look,
            notes: notes::Notes::default(),
            own: (mode == Mode::Screen).then(notices::Notices::install),
            order: buffers::Order::default(),
            typed: None,
            closed: HashSet::new(),
            masks: vec![Default::default(); network_count],
            ignores,
            cleared: HashMap::new(),
            raw,
            transcripts: start_transcripts(loaded_logging),
            dates: transcript_dates::Dates::default(),
            older: older::Older::default(),
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
        if let Some(failure) = control_failure {
            say(&format!("-!- {failure}"));
        }
        if let Some(notice) = app.control.take_grants_notice() {
            say(&format!("-!- {notice}"));
        }
        for line in app.control.unregister_forgotten_grants().await {
            say(&format!("-!- {line}"));
        }
        Ok(app)
    }

    /// Runs the frontend chosen at start until `/quit`, then stops.
    pub async fn run(self) -> anyhow::Result<()> {
        match self.mode {
            Mode::Line => line_mode::run(self).await,
            Mode::Screen => screen::run(self).await,
        }
    }

    /// The first-run and no-network hints.
    fn greet(&self) {
        if self.loaded.created && self.mode == Mode::Line {
            // Scripts may match this line; the next one says what it holds.
            say(&format!(
                "Created {} — add a [[networks]] table, then /connect NAME",
                self.loaded.path.display()
            ));
            say(NEXT_STEPS);
        } else if self.loaded.created {
            say(&format!("Created {}.", self.loaded.path.display()));
            say(NEXT_STEPS);
        } else if self.networks.is_empty() {
            say(&format!(
                "No networks in {} — add a [[networks]] table",
                self.loaded.path.display()
            ));
        }
    }

    /// One typed line: parsed, then run; every failure is one `error:` line.
    async fn on_input(&mut self, line: &str) {
        self.typed = errors::Typed::now(self);
        match reterm::input::parse_input_with(line, &self.loaded.config.aliases) {
            Ok(input) => {
                if let Err(e) = dispatch::dispatch(self, input).await {
                    say(&format!("error: {e}"));
                }
            }
            Err(e) => say(&format!("error: {e}")),
        }
    }

    /// Stops the control server and the engine, and flushes transcripts.
    async fn stop(mut self) {
        self.control.stop().await;
        self.rete.shutdown(QUIT_GRACE).await;
        if let Some(transcripts) = self.transcripts.take() {
            transcripts.close().await;
        }
    }

    /// The network index of a session event.
    fn network_of(&self, event: &SessionEvent) -> Option<usize> {
        self.networks
            .iter()
            .position(|n| n.session.id() == &event.session)
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
            self.focus(Current {
                network: index,
                buffer,
            });
        }
    }

    /// Replaces the ignore list (already saved).
    /// The held secrets of network `net` as its engine holds them now (the
    /// one list the control surface scans for), or as last read when the
    /// engine is busy this instant: for what is drawn outside a read of the
    /// engine (the raw buffer).
    fn secrets(&self, net: usize) -> rete_redact::SecretSet {
        self.networks[net]
            .session
            .reader()
            .try_peek(|v| v.secrets().clone())
            .unwrap_or_else(|| self.masks[net].clone())
    }

    fn set_ignores(&mut self, masks: Vec<String>) {
        self.ignores = reterm::client::ignore::Ignores::new(&masks);
        self.loaded.config.ignores = masks;
    }

    /// Adds a configured network and starts its session.
    async fn add_network(&mut self, net: NetworkConfig) -> anyhow::Result<()> {
        let session = self
            .rete
            .add_session(spec::session_spec(&net)?)
            .await
            .with_context(|| format!("starting network {}", net.name))?;
        self.networks.push(Network {
            config: net,
            session,
        });
        self.masks.push(Default::default());
        Ok(())
    }

    /// Makes `to` the current buffer (leaving reterm's own buffer).
    fn focus(&mut self, to: Current) {
        self.closed.remove(&(to.network, to.buffer.clone()));
        self.current = Some(to);
        self.own_focused = false;
        self.set_raw_focused(None);
    }

    /// Shows network `net`'s raw buffer (or none), and tells the sessions:
    /// a ReteCloud session hands the frames it receives to the raw tap only
    /// while its raw buffer is shown.
    fn set_raw_focused(&mut self, net: Option<usize>) {
        if self.raw_focused == net {
            return;
        }
        for i in self.raw_focused.into_iter().chain(net) {
            if let Some(n) = self.networks.get(i) {
                n.session.sender().set_raw_shown(net == Some(i));
            }
        }
        self.raw_focused = net;
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

/// The display settings of the config as the screen uses them (the time
/// format was checked when the file was loaded).
fn look_of(display: &reterm::config::DisplayConfig) -> Look {
    let mut look = Look::default();
    if look.set_time_format(&display.time_format).is_err() {
        tracing::warn!("display.time_format was refused; using the default");
    }
    look.mirc = display.mirc_colours;
    look.nicklist = display.nicklist;
    look.highlights = display.highlights.clone();
    look
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
