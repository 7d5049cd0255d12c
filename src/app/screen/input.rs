//! What each key, paste and resize does in full screen.

use super::super::buffers::{self, Key};
use super::super::dispatch::{focused_key, say_text, switch_to};
use super::super::notices::Notices;
use super::super::{say, App};
use super::state::Ui;
use super::terminal::Term;
use crossterm::event::Event;
use rete_engine::buffer::BufferKind;
use rete_engine::row::Payload;
use reterm::client::activity::Level;
use reterm::client::complete::Sources;
use reterm::client::editor::Edit;
use reterm::client::switch::cycle;
use reterm::tui::keys::Action;
use reterm::tui::paste::{paste, Paste};
use std::sync::Arc;

/// How many of a command's answer lines show under a network buffer's rows;
/// a longer answer (`/help`) moves the focus to reterm's buffer.
const ANSWER_LINES: usize = 3;

/// Nicks F11 and F12 scroll the nick list by.
const NICKS_PER_KEY: usize = 10;

/// Rows scanned for the most recent speakers when completing a nick.
const RECENT_ROWS: usize = 500;

/// Handles one terminal event.
pub async fn on_terminal_event(
    app: &mut App,
    ui: &mut Ui,
    term: &mut Term,
    own: &Arc<Notices>,
    event: Event,
) {
    match event {
        Event::Key(key) => {
            if let Some(a) = ui.keys.action(key) {
                on_action(app, ui, term, own, a).await;
            }
        }
        Event::Paste(text) => {
            ui.completer.reset();
            match paste(&text) {
                Paste::Insert(line) => {
                    if ui.paste.is_none() {
                        ui.editor.apply(Edit::Insert(line));
                    }
                }
                Paste::Ask(lines) => ui.paste = Some(lines),
            }
        }
        // A resize is drawn by the next frame, which measures the terminal.
        _ => {}
    }
}

async fn on_action(app: &mut App, ui: &mut Ui, term: &mut Term, own: &Arc<Notices>, a: Action) {
    if !matches!(a, Action::Complete) {
        ui.completer.reset();
    }
    // An approval is answered whatever else waits (a paste's question too).
    if let Action::Allow | Action::Deny = a {
        own.take_fresh();
        let approvals = app.control.approvals();
        say(&super::super::approval::answer_shown(
            approvals,
            ui.prompted,
            a == Action::Allow,
        ));
        show_answer(app, ui, own);
        return;
    }
    if ui.paste.is_some() {
        // Only the question's answers count while a paste waits.
        match a {
            Action::Submit => {
                let lines = ui.paste.take().unwrap_or_default();
                for line in lines.into_iter().filter(|l| !l.trim().is_empty()) {
                    if let Err(e) = say_text(app, line).await {
                        say(&format!("error: {e}"));
                        break;
                    }
                }
                show_answer(app, ui, own);
            }
            Action::Cancel => {
                ui.paste = None;
                own.take_fresh();
                say("-!- paste dropped");
                show_answer(app, ui, own);
            }
            _ => {}
        }
        return;
    }
    let focused = focused_key(app).unwrap_or(Key::Own);
    match a {
        Action::Edit(edit) => ui.editor.apply(edit),
        Action::Submit => {
            let line = ui.editor.take();
            own.take_fresh();
            app.on_input(&line).await;
            show_answer(app, ui, own);
        }
        Action::Complete => {
            let sources = sources(app).await;
            ui.completer.tab(&mut ui.editor, &sources);
        }
        Action::Buffer(n) => {
            let list = buffers::list(app).await;
            if let Some(entry) = list.get(n - 1) {
                switch_to(app, &entry.key);
            }
        }
        Action::Next | Action::Previous => {
            let list = buffers::list(app).await;
            let here = buffers::number_of(&list, &focused).unwrap_or(1);
            let to = cycle(here, list.len(), a == Action::Previous);
            if let Some(entry) = list.get(to - 1) {
                switch_to(app, &entry.key);
            }
        }
        Action::MostActive => {
            let list = buffers::list(app).await;
            let best = list
                .iter()
                .filter_map(|e| {
                    let level = ui.get(&e.key).map(|b| b.level).unwrap_or(Level::None);
                    (level > Level::None && e.key != focused).then_some((level, e))
                })
                // Highest level first; the lowest number among equals.
                .max_by(|a, b| a.0.cmp(&b.0).then(std::cmp::Ordering::Greater));
            if let Some((_, entry)) = best {
                let key = entry.key.clone();
                switch_to(app, &key);
            }
        }
        Action::PageUp => {
            let page = ui.page.saturating_sub(1).max(1);
            ui.of(&focused).scroll += page;
        }
        Action::PageDown => {
            let page = ui.page.saturating_sub(1).max(1);
            let b = ui.of(&focused);
            b.scroll = b.scroll.saturating_sub(page);
        }
        Action::Top => ui.of(&focused).scroll = usize::MAX,
        Action::Bottom => ui.of(&focused).scroll = 0,
        Action::ToggleNicklist => app.look.nicklist = !app.look.nicklist,
        Action::NicklistUp => ui.nick_scroll = ui.nick_scroll.saturating_sub(NICKS_PER_KEY),
        Action::NicklistDown => ui.nick_scroll += NICKS_PER_KEY,
        Action::Redraw => term.repaint(),
        Action::Cancel | Action::Allow | Action::Deny => {}
    }
}

/// Shows what the last command answered: a few lines under a network
/// buffer's rows, or reterm's buffer for a longer answer.
fn show_answer(app: &mut App, ui: &mut Ui, own: &Arc<Notices>) {
    let fresh = own.take_fresh();
    let own_shown = app.own_focused && app.raw_focused.is_none();
    if own_shown || fresh.is_empty() {
        ui.answer.clear();
        return;
    }
    if fresh.len() > ANSWER_LINES {
        app.own_focused = true;
        app.set_raw_focused(None);
        ui.answer.clear();
    } else {
        ui.answer = fresh
            .iter()
            .map(|l| rete_redact::display_escape(l).into_owned())
            .collect();
    }
}

/// Completion candidates for the focused buffer: its members (most recent
/// speakers first), the network's channels, and the commands.
async fn sources(app: &App) -> Sources {
    let mut sources = Sources {
        commands: reterm::input::command_names(),
        ..Sources::default()
    };
    let Some(current) = app.current.clone().filter(|_| !app.own_focused) else {
        return sources;
    };
    let found = app.networks[current.network]
        .session
        .reader()
        .read(move |v| {
            let channels: Vec<String> = v
                .buffers()
                .filter(|b| b.kind() == BufferKind::Channel)
                .map(|b| b.name().to_owned())
                .collect();
            let mut nicks: Vec<String> = Vec::new();
            let own = v.nick().to_owned();
            if let Some(b) = v.buffer(&current.buffer) {
                for row in b.display().rev().take(RECENT_ROWS) {
                    let spoke = matches!(
                        row.payload,
                        Payload::Privmsg { .. } | Payload::Action { .. } | Payload::Notice { .. }
                    );
                    if spoke
                        && !row.from.is_empty()
                        && !row.from.eq_ignore_ascii_case(&own)
                        && !nicks.iter().any(|n| n.eq_ignore_ascii_case(&row.from))
                    {
                        nicks.push(row.from.to_string());
                    }
                }
                if b.kind() == BufferKind::Query
                    && !nicks.iter().any(|n| n.eq_ignore_ascii_case(b.name()))
                {
                    nicks.push(b.name().to_owned());
                }
            }
            let members: Vec<String> = v
                .members(&current.buffer)
                .unwrap_or_default()
                .into_iter()
                .map(|m| m.nick)
                .collect();
            // Speakers who left are not offered.
            if !members.is_empty() {
                nicks.retain(|n| members.iter().any(|m| m.eq_ignore_ascii_case(n)));
            }
            for m in members {
                if !m.eq_ignore_ascii_case(&own)
                    && !nicks.iter().any(|n| n.eq_ignore_ascii_case(&m))
                {
                    nicks.push(m);
                }
            }
            (nicks, channels)
        })
        .await
        .unwrap_or_default();
    sources.nicks = found.0;
    sources.channels = found.1;
    sources
}
