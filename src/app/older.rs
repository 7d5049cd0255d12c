//! Older rows of a ReteCloud buffer, on demand: `/backlog [rows]`, and in
//! full screen scrolling up to a buffer's top.
//!
//! A request waits beside the loop (the service's answer is a round trip)
//! and its outcome comes back to the loop through [`Older::outcomes`]; the
//! rows themselves arrive as engine events, which the session sends before
//! the answer, so line mode prints the rows before the count. Per buffer
//! reterm asks once at a time, and scrolling asks no more once the service
//! said it holds nothing older.

use super::render::escape;
use super::{App, Current};
use anyhow::{bail, Result};
use rete_actors::{CloudBacklogError, OlderRows};
use rete_transports::TransportKind;
use reterm::input::DEFAULT_BACKLOG_ROWS;
use std::collections::HashMap;
use tokio::sync::mpsc;

/// What asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `/backlog`.
    Command,
    /// Full screen reached the buffer's top.
    Scroll,
}

/// A request's outcome.
#[derive(Debug)]
pub struct Outcome {
    /// The buffer.
    pub at: Current,
    /// Its name, for the person.
    name: String,
    /// What asked.
    pub origin: Origin,
    /// What the session answered.
    result: Result<OlderRows, CloudBacklogError>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Asked {
    /// A request waits for its answer.
    asking: bool,
    /// The service said it holds nothing older.
    no_older: bool,
}

/// The requests of this run, per buffer.
pub struct Older {
    asked: HashMap<Current, Asked>,
    tx: mpsc::UnboundedSender<Outcome>,
    rx: Option<mpsc::UnboundedReceiver<Outcome>>,
}

impl Default for Older {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Older {
            asked: HashMap::new(),
            tx,
            rx: Some(rx),
        }
    }
}

impl Older {
    /// Where outcomes arrive (taken once, by the running loop).
    pub fn outcomes(&mut self) -> Option<mpsc::UnboundedReceiver<Outcome>> {
        self.rx.take()
    }

    /// The outcome arrived: what to show the person, if anything (a
    /// scroll's rows speak for themselves).
    pub fn settle(&mut self, o: &Outcome) -> Option<String> {
        let asked = self.asked.entry(o.at.clone()).or_default();
        asked.asking = false;
        let name = escape(&o.name);
        match (&o.result, o.origin) {
            (Ok(rows), origin) => {
                asked.no_older |= rows.no_older;
                let tail = if rows.no_older {
                    "; it holds no older ones"
                } else {
                    ""
                };
                match origin {
                    Origin::Command => Some(format!(
                        "-!- /backlog: {} older row{} of {name} from the ReteCloud service{tail}",
                        rows.added,
                        if rows.added == 1 { "" } else { "s" }
                    )),
                    Origin::Scroll => rows
                        .no_older
                        .then(|| format!("-!- {name}: the ReteCloud service holds no older rows")),
                }
            }
            (Err(e), Origin::Command) => Some(format!("-!- /backlog: {e}")),
            (Err(e), Origin::Scroll) => Some(format!("-!- older rows of {name}: {e}")),
        }
    }
}

/// Asks the session of `at` for `limit` older rows, beside the loop.
fn start(app: &mut App, at: Current, name: String, limit: u32, origin: Origin) {
    app.older.asked.entry(at.clone()).or_default().asking = true;
    let sender = app.networks[at.network].session.sender();
    let tx = app.older.tx.clone();
    tokio::spawn(async move {
        let result = sender.cloud_backlog(at.buffer.clone(), limit).await;
        let _ = tx.send(Outcome {
            at,
            name,
            origin,
            result,
        });
    });
}

/// The name of `at`'s buffer, if the session still has it.
async fn name_of(app: &App, at: &Current) -> Option<String> {
    let id = at.buffer.clone();
    app.networks
        .get(at.network)?
        .session
        .reader()
        .read(move |v| v.buffer(&id).map(|b| b.name().to_owned()))
        .await
        .ok()
        .flatten()
}

fn is_cloud(app: &App, network: usize) -> bool {
    app.networks
        .get(network)
        .is_some_and(|n| n.session.reader().transport() == TransportKind::ReteCloud)
}

/// `/backlog rows`: older rows of the current buffer.
pub async fn command(app: &mut App, limit: u32) -> Result<()> {
    if app.own_focused || app.raw_focused.is_some() {
        bail!("/backlog needs a channel, query or server buffer of a network reached through ReteCloud");
    }
    let Some(at) = app.current.clone() else {
        bail!("no network: add one to the config");
    };
    if !is_cloud(app, at.network) {
        bail!("/backlog is for a network reached through ReteCloud; this one talks to its IRC server directly, which keeps no older rows to fetch");
    }
    let Some(name) = name_of(app, &at).await else {
        bail!("no buffer selected: see /buffers");
    };
    if app.older.asked.get(&at).is_some_and(|a| a.asking) {
        bail!("older rows of {} are being fetched already", escape(&name));
    }
    start(app, at, name, limit, Origin::Command);
    Ok(())
}

/// Full screen shows the top of `at` after the person scrolled up: asks
/// for older rows, unless a request waits or the service has none.
pub async fn on_top(app: &mut App, at: &Current) {
    let asked = app.older.asked.get(at).copied().unwrap_or_default();
    if asked.asking || asked.no_older || !is_cloud(app, at.network) {
        return;
    }
    if let Some(name) = name_of(app, at).await {
        start(app, at.clone(), name, DEFAULT_BACKLOG_ROWS, Origin::Scroll);
    }
}
