//! What each engine event means for the person, in either frontend: a row
//! is printed (line mode) and written to its transcript, and marks its
//! buffer (full screen); a topic or member list someone asked for is shown;
//! state changes are said.

use super::render::{render_row, state_line};
use super::transcript::Target;
use super::{say, App, Mode};
use rete_actors::SessionEvent;
use rete_engine::buffer::BufferKind;
use rete_engine::event::{ConnState, Event};
use rete_engine::ids::BufferId;
use rete_engine::row::Payload;
use reterm::client::activity::{level_of, Level};
use reterm::client::highlight::is_highlight;
use reterm::client::names::{columns, listed, summary};

/// Columns `/names` output is laid out in, in line mode.
const NAMES_WIDTH: usize = 80;

/// What the full screen needs to know about an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Noted {
    /// A row arrived in a buffer.
    Row {
        /// The network index.
        network: usize,
        /// The buffer.
        buffer: BufferId,
        /// How it marks the buffer.
        level: Level,
        /// It says our nick or a highlight word.
        highlight: bool,
        /// Rows displayed after it: 0 for a row at the end, more for
        /// history placed by time (older rows fetched land at the top).
        rows_after: usize,
    },
    /// Something else the screen may show changed.
    Changed,
    /// Nothing visible changed.
    Nothing,
}

/// Where a line reterm adds to a buffer goes.
pub struct NoteAt<'a> {
    /// The network index.
    pub net: usize,
    /// The buffer.
    pub buffer: &'a BufferId,
    /// Its name, for line mode.
    pub name: &'a str,
    /// The buffer's last seq now: the note follows that row.
    pub after: u64,
}

/// A line reterm adds to a buffer (topic on join, names): printed as a row
/// in line mode; kept beside the buffer's rows in full screen (reterm's
/// own, never part of the engine's buffer or a transcript).
pub fn buffer_note(app: &mut App, at: &NoteAt<'_>, text: &str) {
    if app.mode == Mode::Line {
        let network = &app.networks[at.net].config.name;
        say(&format!(
            "[{}] {} {} -!- {}",
            super::render::escape(network),
            super::render::escape(at.name),
            super::render::clock_now(),
            text
        ));
        return;
    }
    app.notes.add(at.net, at.buffer, at.after, text);
}

/// Handles one event.
pub async fn on_event(app: &mut App, event: SessionEvent) -> Noted {
    let Some(index) = app.network_of(&event) else {
        return Noted::Nothing;
    };
    let network = app.networks[index].config.name.clone();
    match event.event {
        Event::Row { buffer, seq } => {
            let reader = app.networks[index].session.reader();
            let net = network.clone();
            let words = app.look.highlights.clone();
            let ignores = app.ignores.clone();
            // The line-mode text is needed to print it or write a transcript.
            let wants_line = app.mode == Mode::Line || app.transcripts.is_some();
            let id = buffer.clone();
            let seen = reader
                .read(move |v| {
                    let b = v.buffer(&id)?;
                    let row = b.get(seq)?;
                    if !ignores.is_empty() {
                        let member = v.members(&id).and_then(|m| {
                            m.into_iter()
                                .find(|m| m.nick.eq_ignore_ascii_case(&row.from))
                        });
                        let (user, host) = member.map(|m| (m.user, m.host)).unwrap_or_default();
                        if ignores.hides(row, user.as_deref(), host.as_deref()) {
                            return None;
                        }
                    }
                    let target = match b.kind() {
                        BufferKind::Server => Target::Server,
                        _ => Target::Named(b.name().to_owned()),
                    };
                    let nick = v.nick();
                    let highlight = is_highlight(row, nick, &words);
                    let level = level_of(row, b.kind(), nick, highlight);
                    // A replayed join of ours is not a join happening now.
                    let own_join = matches!(row.payload, Payload::UserJoined { .. })
                        && row.from.eq_ignore_ascii_case(nick)
                        && !row.history;
                    let label = match b.kind() {
                        BufferKind::Server => "(server)".to_owned(),
                        _ => super::render::escape(b.name()),
                    };
                    let line = if wants_line {
                        render_row(&net, b.name(), b.kind(), row)
                    } else {
                        String::new()
                    };
                    let rows_after = b
                        .display_position(seq)
                        .map_or(0, |at| b.len().saturating_sub(at + 1));
                    // A server's error, to show where the person typed too.
                    let error = match &row.payload {
                        Payload::ServerReply { command, text }
                            if b.kind() == BufferKind::Server
                                && !row.history
                                && super::errors::is_error_reply(command) =>
                        {
                            Some(format!(
                                "{} {}",
                                super::render::escape(command),
                                super::render::escape(text)
                            ))
                        }
                        _ => None,
                    };
                    // RPL_NOWAWAY and RPL_UNAWAY: the away indicator.
                    let away = match &row.payload {
                        Payload::ServerReply { command, .. } if !row.history => {
                            match command.as_ref() {
                                "306" => Some(true),
                                "305" => Some(false),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    Some((
                        line,
                        target,
                        level,
                        highlight,
                        own_join,
                        (label, row.time, rows_after, error, away),
                        v.secrets().clone(),
                    ))
                })
                .await;
            let Ok(Some((
                line,
                target,
                level,
                highlight,
                own_join,
                (label, time, rows_after, error, away),
                secrets,
            ))) = seen
            else {
                return Noted::Nothing;
            };
            match away {
                Some(true) => {
                    app.away.insert(index);
                }
                Some(false) => {
                    app.away.remove(&index);
                }
                None => {}
            }
            // Masked with the secrets the engine held when it gave the row
            // (every credential sent so far among them), kept for what is
            // drawn outside a read.
            app.masks[index] = secrets;
            let line = app.masks[index].mask(&line).into_owned();
            // With transcripts, their date lines come first (line mode
            // prints them too, so a transcript holds only printed lines).
            let dated = match &app.transcripts {
                Some(_) => {
                    let escaped = super::render::escape(&network);
                    app.dates.before(
                        &escaped,
                        &target,
                        &label,
                        time,
                        rete_actors::wall_clock::now(),
                    )
                }
                None => Vec::new(),
            };
            if app.mode == Mode::Line {
                for d in &dated {
                    say(d);
                }
                say(&line);
            } else if own_join {
                app.joining.insert((index, buffer.clone()));
            }
            if let Some(transcripts) = &app.transcripts {
                for d in dated {
                    transcripts.append(&network, &target, d).await;
                }
                transcripts.append(&network, &target, line).await;
            }
            if let Some(error) = error {
                let error = app.masks[index].mask(&error).into_owned();
                super::errors::show_where_typed(app, index, &error).await;
            }
            Noted::Row {
                network: index,
                buffer,
                level,
                highlight,
                rows_after,
            }
        }
        Event::State(state) => {
            // A new connection starts back.
            if state != ConnState::Connected {
                app.away.remove(&index);
            }
            let retry_in = if state == ConnState::Reconnecting {
                app.networks[index]
                    .session
                    .reader()
                    .read(|v| v.retry_in())
                    .await
                    .ok()
                    .flatten()
            } else {
                None
            };
            // Full-screen rows carry their time already; a line-mode line says it.
            let clock = (app.mode == Mode::Line).then(super::render::clock_now);
            say(&state_line(&network, clock.as_deref(), state, retry_in));
            Noted::Changed
        }
        Event::BufferOpened(buffer) => {
            app.maybe_focus(index, buffer).await;
            Noted::Changed
        }
        Event::OwnNick(nick) => {
            say(&format!("[{network}] -!- you are now {nick}"));
            Noted::Changed
        }
        Event::Topic(buffer) => {
            show_topic(app, index, &buffer, false).await;
            Noted::Changed
        }
        Event::Members(buffer) => {
            if app.joining.remove(&(index, buffer.clone())) {
                show_topic(app, index, &buffer, true).await;
                show_names(app, index, &buffer, true).await;
            } else {
                show_names(app, index, &buffer, false).await;
            }
            Noted::Changed
        }
        Event::Registered => Noted::Changed,
    }
}

/// Shows a channel's topic when the person asked for it (`/topic`,
/// `/quote TOPIC`), or `on_join`.
async fn show_topic(app: &mut App, net: usize, buffer: &BufferId, on_join: bool) {
    let id = buffer.clone();
    let found = app.networks[net]
        .session
        .reader()
        .read(move |v| {
            let c = v.channel(&id)?;
            let last = v.buffer(&id)?.last_seq();
            Some((
                c.name.clone(),
                c.topic.clone(),
                c.topic_set_by.clone(),
                last,
            ))
        })
        .await
        .ok()
        .flatten();
    let Some((name, topic, setter, after)) = found else {
        return;
    };
    let asked = app.asked_topic.remove(&(net, name.to_lowercase()));
    if !asked && !on_join {
        return;
    }
    let text = match (topic.filter(|t| !t.is_empty()), setter) {
        (Some(t), Some(by)) => format!(
            "topic: {} (set by {})",
            super::render::escape(&t),
            super::render::escape(&by)
        ),
        (Some(t), None) => format!("topic: {}", super::render::escape(&t)),
        (None, _) if asked => "no topic is set".to_owned(),
        (None, _) => return,
    };
    let at = NoteAt {
        net,
        buffer,
        name: &name,
        after,
    };
    buffer_note(app, &at, &text);
}

/// Shows a channel's members when the person asked for them (`/names`,
/// `/quote NAMES`) in columns, or a one-line summary `on_join`.
async fn show_names(app: &mut App, net: usize, buffer: &BufferId, on_join: bool) {
    let id = buffer.clone();
    let found = app.networks[net]
        .session
        .reader()
        .read(move |v| {
            let c = v.channel(&id)?;
            let members = v.members(&id)?;
            let last = v.buffer(&id)?.last_seq();
            let prefix = v.isupport().prefix.clone();
            Some((c.name.clone(), listed(&members, &prefix), prefix, last))
        })
        .await
        .ok()
        .flatten();
    let Some((name, members, prefix, after)) = found else {
        return;
    };
    let asked = app.asked_names.remove(&(net, name.to_lowercase()));
    let at = NoteAt {
        net,
        buffer,
        name: &name,
        after,
    };
    if asked {
        for line in columns(&members, NAMES_WIDTH) {
            buffer_note(app, &at, &super::render::escape(&line));
        }
    }
    if asked || on_join {
        buffer_note(app, &at, &summary(&members, &prefix));
    }
}
