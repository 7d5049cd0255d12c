//! One printed line per row: `[network] buffer HH:MM:SS <nick> text`.
//!
//! Text from IRC is shown escaped (see [`escape`]).

use rete_engine::buffer::BufferKind;
use rete_engine::row::{Payload, Row};
use rete_engine::timefmt::iso_seconds;
use reterm::tui::rows::event_text;

/// Renders one row of `buffer` (named `buffer_name`) on `network`.
pub fn render_row(network: &str, buffer_name: &str, kind: BufferKind, row: &Row) -> String {
    let iso = iso_seconds(row.time);
    let clock = iso.get(11..19).unwrap_or("??:??:??");
    let where_ = match kind {
        BufferKind::Server => "(server)".to_owned(),
        _ => escape(buffer_name),
    };
    let from = escape(&row.from);
    // Messages keep IRC's punctuation; every other row is the full screen's
    // wording (one place: `event_text`) behind a marker saying what it is.
    let body = match &row.payload {
        Payload::Privmsg { text } => format!("<{from}> {}", escape(text)),
        Payload::Notice { text } if from.is_empty() => format!("-!- {}", escape(text)),
        Payload::Notice { text } => format!("-{from}- {}", escape(text)),
        Payload::Action { text } => format!("* {from} {}", escape(text)),
        Payload::UserJoined { .. } => format!("--> {}", event_text(row)),
        Payload::UserParted { .. } | Payload::UserQuit { .. } | Payload::UserKicked { .. } => {
            format!("<-- {}", event_text(row))
        }
        _ => format!("-!- {}", event_text(row)),
    };
    let history = if row.history { " (history)" } else { "" };
    format!("[{}] {where_} {clock}{history} {body}", escape(network))
}

/// A connection-state line: `[net] 12:00:01 -!- reconnecting in 4 s`, the
/// time left out where the frontend shows one, the wait said while a retry
/// is pending (rounded up: "in 0 s" would be a lie).
pub fn state_line(
    network: &str,
    clock: Option<&str>,
    state: rete_engine::event::ConnState,
    retry_in: Option<std::time::Duration>,
) -> String {
    let mut line = format!("[{}] ", escape(network));
    if let Some(clock) = clock {
        line.push_str(clock);
        line.push(' ');
    }
    line.push_str("-!- ");
    line.push_str(state.as_str());
    if let Some(wait) = retry_in {
        let secs = wait.as_millis().div_ceil(1000).max(1);
        line.push_str(&format!(" in {secs} s"));
    }
    line
}

/// The time now as rows print it (`HH:MM:SS`, UTC).
pub fn clock_now() -> String {
    let iso = iso_seconds(rete_actors::wall_clock::now());
    iso.get(11..19).unwrap_or("??:??:??").to_owned()
}

/// Text from IRC as it may be shown: mIRC formatting codes stripped, and
/// control, format, bidi and invisible characters shown as `\u{…}` escapes,
/// so a message cannot move the cursor, fake another line or reorder itself.
pub fn escape(text: &str) -> String {
    rete_redact::display_escape(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lines_say_the_time_and_the_wait() {
        use rete_engine::event::ConnState;
        use std::time::Duration;
        assert_eq!(
            state_line("net", Some("12:00:01"), ConnState::Connected, None),
            "[net] 12:00:01 -!- connected"
        );
        assert_eq!(
            state_line(
                "net",
                None,
                ConnState::Reconnecting,
                Some(Duration::from_millis(3_200))
            ),
            "[net] -!- reconnecting in 4 s"
        );
        assert_eq!(
            state_line("net", None, ConnState::Reconnecting, Some(Duration::ZERO)),
            "[net] -!- reconnecting in 1 s"
        );
    }
    use rete_engine::clock::UnixMillis;

    fn row(from: &str, payload: Payload) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(1_790_769_601_000),
            msgid: None,
            from: from.into(),
            history: false,
            payload,
        }
    }

    #[test]
    fn renders_network_buffer_time_nick_text() {
        let r = row("alice", Payload::Privmsg { text: "hi".into() });
        assert_eq!(
            render_row("net", "#rete", BufferKind::Channel, &r),
            "[net] #rete 12:00:01 <alice> hi"
        );
        let r = row(
            "",
            Payload::ClientStatus {
                text: "Connected".into(),
            },
        );
        assert_eq!(
            render_row("net", "net", BufferKind::Server, &r),
            "[net] (server) 12:00:01 -!- Connected"
        );
    }

    #[test]
    fn ctcp_without_arguments_has_one_space() {
        let r = row(
            "bob",
            Payload::Ctcp {
                command: "TIME".into(),
                args: "".into(),
                reply: false,
            },
        );
        assert_eq!(
            render_row("net", "rt", BufferKind::Query, &r),
            "[net] rt 12:00:01 -!- CTCP TIME from bob"
        );
        let r = row(
            "bob",
            Payload::Ctcp {
                command: "PING".into(),
                args: "123".into(),
                reply: true,
            },
        );
        assert_eq!(
            render_row("net", "rt", BufferKind::Query, &r),
            "[net] rt 12:00:01 -!- CTCP reply PING 123 from bob"
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        let r = row(
            "alice",
            Payload::Privmsg {
                text: "a\u{1b}[2Jb\rc\u{3}4,5red\u{3}\u{202e}".into(),
            },
        );
        assert_eq!(
            render_row("net", "#rete", BufferKind::Channel, &r),
            "[net] #rete 12:00:01 <alice> a\\u{1B}[2Jb\\rcred\\u{202E}"
        );
    }
}
