//! The full-screen frontend: a title line, the focused buffer's rows with
//! their own scrollback, a status bar with the activity list, and an input
//! line. It redraws only when something happened (a key, an event, the
//! clock's minute, or its second with a time format showing seconds), and
//! at most one frame per 33 ms under a flood (`reterm::tui::pace`); idle, it
//! waits in `select!` without a timer but the clock's.
//!
//! # Layout
//! - `terminal.rs`: taking the terminal over and giving it back; key input.
//! - `state.rs`: per-buffer activity, scroll and unread marker; the input line.
//! - `frame.rs`: gathering one frame from the engine.
//! - `input.rs`: what each key does.
//! - this file: the loop.

mod frame;
mod input;
mod state;
mod terminal;

use super::buffers::Key;
use super::dispatch::focused_key;
use super::events::{self, Noted};
use super::{say, App, Current};
use reterm::client::activity::Level;
use reterm::tui::draw::draw;
use reterm::tui::pace::{Pacer, FRAME};
use state::Ui;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;

/// Events handled before a frame is drawn, so a flood cannot starve keys.
const EVENTS_PER_TURN: usize = 512;

/// Runs until `/quit`, SIGINT, SIGTERM or SIGHUP (the terminal closed).
pub async fn run(mut app: App) -> anyhow::Result<()> {
    let mut events = match app.events.take() {
        Some(e) => e,
        None => app.rete.subscribe(),
    };
    let Some(own) = app.own.clone() else {
        anyhow::bail!("full screen started without reterm's buffer");
    };
    let mut signals = super::leaving::Signals::catch()?;
    let mut term = terminal::Term::enter()?;
    let mut keys = terminal::input()?;
    let mut ui = Ui::default();
    // A first run (or a config without networks) starts in reterm's own
    // buffer, where the hint about the config file is.
    if app.networks.is_empty() || app.loaded.created {
        app.own_focused = true;
    }
    app.greet();
    say("reterm: Alt+1…0 and Alt+Q…O switch buffers (this one is 1), PgUp/PgDn scroll, /help lists commands");
    term.title("reterm");
    let mut pacer = Pacer::new(FRAME);
    let raw = app.raw.clone();
    let approvals = app.control.approvals().clone();
    let mut approval_events = approvals.subscribe();
    let mut focused = focused_key(&app);
    let mut older = app.older.outcomes();
    while !app.quit {
        if pacer.due(std::time::Instant::now()) {
            let area = term
                .terminal
                .size()
                .map(|s| ratatui::layout::Rect::new(0, 0, s.width, s.height))?;
            let (screen, _) = frame::build(&app, &mut ui, area).await;
            term.terminal.draw(|f| draw(f, &screen))?;
            pacer.drawn(std::time::Instant::now());
            // Scrolled up to a ReteCloud buffer's top: ask for older rows.
            if let Some(at) = ui.at_top.take() {
                super::older::on_top(&mut app, &at).await;
            }
        }
        let redraw_at = pacer.wake_at().map(Instant::from_std);
        let minute = next_tick(app.look.shows_seconds());
        tokio::select! {
            key = keys.recv() => match key {
                Some(event) => {
                    input::on_terminal_event(&mut app, &mut ui, &mut term, &own, event).await;
                    pacer.changed();
                }
                // The terminal is gone.
                None => app.leave(None),
            },
            event = events.recv() => {
                let mut next = Some(event);
                let mut handled = 0;
                while let Some(event) = next.take() {
                    match event {
                        Ok(event) => {
                            let noted = events::on_event(&mut app, event).await;
                            note(&app, &mut ui, &mut term, noted);
                        }
                        Err(RecvError::Lagged(n)) => say(&format!("-!- {n} events were not shown (the screen fell behind)")),
                        Err(RecvError::Closed) => app.quit = true,
                    }
                    handled += 1;
                    if handled < EVENTS_PER_TURN {
                        next = match events.try_recv() {
                            Ok(e) => Some(Ok(e)),
                            Err(TryRecvError::Lagged(n)) => Some(Err(RecvError::Lagged(n))),
                            Err(TryRecvError::Empty) => None,
                            Err(TryRecvError::Closed) => Some(Err(RecvError::Closed)),
                        };
                    }
                }
                pacer.changed();
            },
            _ = own.wait() => {
                if focused_key(&app) != Some(Key::Own) {
                    ui.raise(&Key::Own, Level::Events);
                }
                pacer.changed();
            },
            // A line starting or stopping to wait for the person changes
            // the prompt row; what reterm says about it goes to buffer 1.
            event = approval_events.recv() => {
                // A line waiting for the person rings, as a highlight does:
                // it has 20 seconds.
                if let Ok(rete_mcp::ApprovalEvent::Asked { prompt, .. }) = &event {
                    term.alert(&format!("reterm: AI access asks to send on {}", prompt.session));
                }
                super::approval::on_event(event, &approvals);
                pacer.changed();
            },
            Some(outcome) = super::line_mode::next_outcome(&mut older) => {
                if let Some(line) = app.older.settle(&outcome) {
                    say(&line);
                    if focused_key(&app) == Some(Key::Engine(outcome.at.clone())) {
                        ui.answer = vec![rete_redact::display_escape(&line).into_owned()];
                    }
                }
                pacer.changed();
            },
            // Only a shown raw buffer is redrawn for its lines.
            _ = raw.wait(), if app.raw_focused.is_some() => pacer.changed(),
            _ = sleep_until(redraw_at) => {},
            _ = tokio::time::sleep_until(minute) => pacer.changed(),
            _ = signals.next() => app.leave(None),
        }
        // Whatever moved the focus (a key, /buffer, /join), the buffer left
        // gets its unread marker and the one entered loses its activity.
        let now = focused_key(&app);
        if now != focused {
            if let Some(old) = &focused {
                let last = last_seq(&app, old).await;
                ui.left(old, last);
            }
            if let Some(new) = &now {
                ui.entered(new);
            }
            term.title("reterm");
            focused = now;
        }
    }
    drop(term);
    app.stop().await;
    Ok(())
}

/// Marks the buffer an event touched, and alerts on a highlight.
fn note(app: &App, ui: &mut Ui, term: &mut terminal::Term, noted: Noted) {
    let Noted::Row {
        network,
        buffer,
        level,
        highlight,
        rows_after,
    } = noted
    else {
        return;
    };
    let key = Key::Engine(Current { network, buffer });
    if focused_key(app).as_ref() == Some(&key) {
        // Scrolled back: stay on the same rows as new ones arrive below
        // (older rows fetched land above the screen and move nothing).
        let b = ui.of(&key);
        if b.scroll > rows_after {
            b.scroll += 1;
        }
    } else {
        ui.raise(&key, level);
    }
    if highlight {
        let net = &app.networks[network].config.name;
        term.alert(&format!("reterm: highlight on {net}"));
    }
}

/// The last seq of the buffer `key` names (0 when unknown).
async fn last_seq(app: &App, key: &Key) -> u64 {
    match key {
        Key::Own => app.own.as_ref().map(|o| o.last_seq()).unwrap_or(0),
        Key::Raw(_) => 0,
        Key::Engine(c) => {
            let id = c.buffer.clone();
            app.networks[c.network]
                .session
                .reader()
                .read(move |v| v.buffer(&id).map(|b| b.last_seq()))
                .await
                .ok()
                .flatten()
                .unwrap_or(0)
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next change of the status bar's clock: its second when the time
/// format shows seconds (`%S`), else its minute.
fn next_tick(seconds: bool) -> Instant {
    let period: u64 = if seconds { 1_000 } else { 60_000 };
    let into = rete_actors::wall_clock::now().unsigned() % period;
    Instant::now() + Duration::from_millis(period - into + 5)
}
