//! Gathering one frame: the buffer list (for numbers and the activity
//! list), then the focused buffer's visible rows, title, nick list and our
//! nick, read inside its session actor in one closure that formats only the
//! rows that fit.

use super::super::buffers::{self, Entry, Key, OWN_LABEL, RAW_NAME};
use super::super::dispatch::focused_key;
use super::super::App;
use super::state::Ui;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::row::{Payload, Row};
use reterm::client::names::listed;
use reterm::client::raw_ring::RAW_KEEP;
use reterm::tui::lines::{unread_marker, visible, visible_filled, with_notes, Viewport};
use reterm::tui::model::{areas_with, InputLine, Screen};
use reterm::tui::paste::question;
use reterm::tui::title::{channel_title, Topic};
use std::collections::HashMap;

/// The title of reterm's own buffer.
const OWN_TITLE: &str = "reterm — its own messages: /help lists every command";

/// The title of a network's raw buffer, after its name.
const RAW_TITLE: &str = "raw lines, << in and >> out, masked; kept in memory only";

/// A network's raw lines as rows reterm draws (oldest first), with the
/// session's held secrets masked (as they are on every row); drawing escapes them.
fn raw_rows(app: &App, net: usize) -> Vec<Row> {
    let (lines, _) = app.raw.last(app.networks[net].session.id(), RAW_KEEP);
    let masks = app.secrets(net);
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| Row {
            seq: i as u64 + 1,
            time: line.time,
            msgid: None,
            from: "".into(),
            history: false,
            payload: Payload::ClientStatus {
                text: masks.mask(&line.marked()).into_owned().into(),
            },
        })
        .collect()
}

/// The last command's answer, under the rows.
fn push_answer(screen: &mut Screen, ui: &Ui) {
    let style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
    screen.lines.extend(
        ui.answer
            .iter()
            .map(|a| Line::styled(format!("» {a}"), style)),
    );
}

/// Builds the frame for a terminal of `area`, and the buffer list it used.
pub async fn build(app: &App, ui: &mut Ui, area: Rect) -> (Screen, Vec<Entry>) {
    let list = buffers::list(app).await;
    let focused = focused_key(app).unwrap_or(Key::Own);
    let number = buffers::number_of(&list, &focused).unwrap_or(1);
    let mut activity: Vec<(usize, _)> = ui
        .levels()
        .filter(|(k, _)| **k != focused)
        .filter_map(|(k, level)| buffers::number_of(&list, k).map(|n| (n, level)))
        .collect();
    activity.sort();
    let answer_lines = if matches!(focused, Key::Own) {
        0
    } else {
        ui.answer.len()
    };
    // An agent's line waiting for the person takes a row of its own; the
    // keys answer the line drawn, so the id is kept with the frame.
    let approval = super::super::approval::prompt_row(app.control.approvals());
    ui.prompted = approval.as_ref().map(|(id, _)| *id);
    let with_nicks = areas_with(area, true, approval.is_some());
    let without = areas_with(area, false, approval.is_some());
    let look = app.look.clone();
    let time_format = look.time_format().to_owned();
    let scroll = ui.get(&focused).map(|b| b.scroll).unwrap_or(0);
    let unread = ui.get(&focused).and_then(|b| b.unread_after);
    let mut screen = Screen::default();
    let mut scrolled = 0;
    match &focused {
        Key::Own => {
            let height = without.body.height as usize;
            let own = app.own.clone();
            let lines = own
                .map(|o| {
                    o.with_rows(|rows| {
                        let view = Viewport {
                            width: without.body.width as usize,
                            height,
                            scroll: scroll.min(rows.len().saturating_sub(1)),
                        };
                        let (lines, used) =
                            visible_filled(|| rows.iter().rev(), view, "", &look, unread);
                        scrolled = used;
                        lines
                    })
                })
                .unwrap_or_default();
            screen.title = OWN_TITLE.to_owned();
            screen.lines = lines;
            screen.status.label = OWN_LABEL.to_owned();
            screen.input.prompt = format!("[{OWN_LABEL}] ");
            ui.page = height;
        }
        Key::Raw(net) => {
            let height = (without.body.height as usize).saturating_sub(ui.answer.len());
            let rows = raw_rows(app, *net);
            let view = Viewport {
                width: without.body.width as usize,
                height,
                scroll: scroll.min(rows.len().saturating_sub(1)),
            };
            let (lines, used) = visible_filled(|| rows.iter().rev(), view, "", &look, None);
            scrolled = used;
            let name = &app.networks[*net].config.name;
            screen.title = format!("{name}: {RAW_TITLE}");
            screen.lines = lines;
            push_answer(&mut screen, ui);
            screen.status.label = format!("{name}/{RAW_NAME}");
            screen.input.prompt = format!("[{name} {RAW_NAME}] ");
            ui.page = height;
        }
        Key::Engine(current) => {
            let net = &app.networks[current.network];
            let net_name = net.config.name.clone();
            let id = current.buffer.clone();
            let notes = app.notes.of(current.network, &current.buffer);
            let cleared = app
                .cleared
                .get(&(current.network, current.buffer.clone()))
                .copied()
                .unwrap_or(0);
            let nicklist_on = look.nicklist;
            let ignores = app.ignores.clone();
            let mut look = look.clone();
            let read = net
                .session
                .reader()
                .read(move |v| {
                    // Masked with the secrets the engine holds at this read.
                    look.masks = v.secrets().clone();
                    let b = v.buffer(&id)?;
                    let channel = v.channel(&id);
                    let show_nicks = nicklist_on && channel.is_some() && with_nicks.nicks.is_some();
                    let a = if show_nicks { with_nicks } else { without };
                    let height = (a.body.height as usize).saturating_sub(answer_lines);
                    let total = b.len();
                    let view = Viewport {
                        width: a.body.width as usize,
                        height,
                        scroll: scroll.min((total + notes.len()).saturating_sub(1)),
                    };
                    // With ignores, who is who comes from the member list, read once.
                    let hosts: HashMap<String, (Option<String>, Option<String>)> =
                        if ignores.is_empty() {
                            HashMap::new()
                        } else {
                            v.members(&id)
                                .unwrap_or_default()
                                .into_iter()
                                .map(|m| (m.nick.to_ascii_lowercase(), (m.user, m.host)))
                                .collect()
                        };
                    let rows = || {
                        with_notes(b.display().rev(), &notes)
                            .take_while(|r| r.seq > cleared)
                            .filter(|r| {
                                let (user, host) = hosts
                                    .get(&r.from.as_str().to_ascii_lowercase())
                                    .cloned()
                                    .unwrap_or_default();
                                !ignores.hides(r, user.as_deref(), host.as_deref())
                            })
                    };
                    // Above the first unread row that is not the person's own.
                    let unread =
                        unread.and_then(|last| unread_marker(b.display().rev(), last, v.nick()));
                    let (lines, used) = visible_filled(rows, view, v.nick(), &look, unread);
                    // Scrolled up and the oldest row is on screen: nothing
                    // above it fits one more line. (After /clear the rows
                    // above are hidden on purpose.)
                    let at_top = scroll > 0
                        && cleared == 0
                        && visible(
                            rows(),
                            Viewport {
                                scroll: used,
                                height: height + 1,
                                ..view
                            },
                            v.nick(),
                            &look,
                            unread,
                        )
                        .len()
                            <= height;
                    let nicks = if show_nicks {
                        v.members(&id).map(|m| listed(&m, &v.isupport().prefix))
                    } else {
                        None
                    };
                    let title = match (b.kind(), channel) {
                        (BufferKind::Channel, Some(c)) => {
                            let topic = Topic {
                                text: c.topic.as_deref(),
                                set_by: c.topic_set_by.as_deref(),
                                set_at: c.topic_set_at,
                            };
                            channel_title(b.name(), &topic, &look)
                        }
                        (BufferKind::Server, _) => format!("{} (server)", b.name()),
                        _ => b.name().to_owned(),
                    };
                    let state =
                        (v.state() != ConnState::Connected).then(|| v.state().as_str().to_owned());
                    let joined = channel.is_none_or(|c| c.joined);
                    let lag = v.lag_ms();
                    Some((
                        lines,
                        nicks,
                        title,
                        match v.user_modes() {
                            "" => v.nick().to_owned(),
                            modes => format!("{}(+{modes})", v.nick()),
                        },
                        b.name().to_owned(),
                        state,
                        used,
                        height,
                        joined,
                        lag,
                        at_top,
                    ))
                })
                .await
                .ok()
                .flatten();
            if let Some((
                lines,
                nicks,
                title,
                nick,
                name,
                state,
                rows,
                height,
                joined,
                lag,
                at_top,
            )) = read
            {
                if at_top {
                    ui.at_top = Some(current.clone());
                }
                screen.status.lag_ms = lag;
                scrolled = rows;
                screen.lines = lines;
                // Scrolled no further than the last nick (F12 pressed on).
                ui.nick_scroll = ui
                    .nick_scroll
                    .min(nicks.as_ref().map_or(0, |n| n.len().saturating_sub(1)));
                screen.nicklist_scroll = ui.nick_scroll;
                screen.nicklist = nicks;
                screen.title = title;
                // irssi's away indicator, beside the nick.
                screen.status.nick = if app.away.contains(&current.network) {
                    format!("{nick} (zZzZ)")
                } else {
                    nick
                };
                screen.status.state = state;
                screen.status.label = format!("{net_name}/{name}");
                let note = if joined { "" } else { " (not joined)" };
                screen.input.prompt = format!("[{}{note}] ", rete_redact::display_escape(&name));
                ui.page = height;
            }
            if answer_lines > 0 {
                push_answer(&mut screen, ui);
            }
        }
    }
    // Keep the scroll the frame could draw: inside the buffer, and at the
    // top no further than a full screen of its oldest rows.
    ui.of(&focused).scroll = scrolled;
    screen.status.clock = chrono::Local::now().format(&time_format).to_string();
    screen.status.number = number;
    screen.status.activity = activity;
    screen.status.more_below = ui.get(&focused).is_some_and(|b| b.scroll > 0);
    screen.approval = approval.map(|(_, text)| text);
    screen.input = InputLine {
        prompt: std::mem::take(&mut screen.input.prompt),
        text: ui.editor.text().to_owned(),
        cursor: ui.editor.cursor(),
        question: ui.paste.as_ref().map(|lines| question(lines)),
    };
    (screen, list)
}
