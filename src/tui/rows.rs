//! One engine row as a styled line: `HH:MM <nick> text`, the nick in its
//! colour, highlights in bold red, mIRC formatting rendered (or stripped when
//! the look says so). Every piece of text from IRC passes through
//! `rete_redact::display_escape`, exactly as line mode prints it; message
//! text through `glyphs::screen_escape`, which draws an emoji sequence whole.

use super::look::Look;
use crate::client::colour::nick_colour;
use crate::client::highlight::is_highlight;
use crate::client::mirc::{segments, Format};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use rete_engine::row::{Payload, Row};
use rete_redact::display_escape;

/// The style of reterm's own notices (`-!-`).
const NOTICE: Style = Style::new().fg(Color::Indexed(8));
/// A highlighted row's text.
pub const HIGHLIGHT_TEXT: Style = Style::new().fg(Color::Yellow);
/// A highlighted row's nick.
pub const HIGHLIGHT: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);

/// How many of [`row_line`]'s spans come before the row's text: the time
/// and `<nick> ` (or `-nick- `, `* nick `), or the time and `-!- `. A
/// wrapped row's lines after the first start under the text.
pub fn spans_before_text(row: &Row) -> usize {
    match &row.payload {
        Payload::Privmsg { .. } | Payload::Action { .. } => 4,
        Payload::Notice { .. } if !row.from.is_empty() => 4,
        _ => 2,
    }
}

/// `row` as one (unwrapped) line. `nick` is our current nick, for highlights.
pub fn row_line(row: &Row, nick: &str, look: &Look) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{} ", look.clock(row.time)),
        Style::new().fg(Color::Indexed(8)),
    )];
    let highlighted = is_highlight(row, nick, &look.highlights);
    let from = display_escape(&row.from).into_owned();
    let who = Style::new().fg(Color::Indexed(nick_colour(&row.from)));
    let who = if highlighted { HIGHLIGHT } else { who };
    match &row.payload {
        Payload::Privmsg { text } => {
            spans.push(Span::raw("<"));
            spans.push(Span::styled(from, who));
            spans.push(Span::raw("> "));
            let start = spans.len();
            push_text(&mut spans, text, look);
            if highlighted {
                // The whole text stands out, over its own formatting.
                for span in &mut spans[start..] {
                    span.style = span.style.patch(HIGHLIGHT_TEXT);
                }
            }
        }
        Payload::Notice { text } if row.from.is_empty() => {
            spans.push(Span::styled("-!- ", NOTICE));
            push_text(&mut spans, text, look);
        }
        Payload::Notice { text } => {
            spans.push(Span::raw("-"));
            spans.push(Span::styled(from, who));
            spans.push(Span::raw("- "));
            push_text(&mut spans, text, look);
        }
        Payload::Action { text } => {
            spans.push(Span::raw("* "));
            spans.push(Span::styled(from, who));
            spans.push(Span::raw(" "));
            push_text(&mut spans, text, look);
        }
        Payload::ServerReply { command, text } => {
            let shown = server_reply(command, text, look).unwrap_or_else(|| event_text(row));
            spans.push(Span::styled("-!- ", NOTICE));
            spans.push(Span::styled(look.masks.mask(&shown).into_owned(), NOTICE));
        }
        _ => {
            spans.push(Span::styled("-!- ", NOTICE));
            spans.push(Span::styled(
                look.masks.mask(&event_text(row)).into_owned(),
                NOTICE,
            ));
        }
    }
    if row.history {
        spans.push(Span::styled(" (history)", NOTICE));
    }
    Line::from(spans)
}

/// What a non-message row says, escaped.
pub fn event_text(row: &Row) -> String {
    let e = |s: &str| display_escape(s).into_owned();
    let from = e(&row.from);
    let reason = |r: &Option<Box<str>>| {
        r.as_ref()
            .map(|r| format!(" ({})", e(r)))
            .unwrap_or_default()
    };
    match &row.payload {
        Payload::Privmsg { text } | Payload::Notice { text } | Payload::Action { text } => e(text),
        Payload::Ctcp {
            command,
            args,
            reply,
        } => {
            let what = if *reply { "CTCP reply" } else { "CTCP" };
            let args = if args.is_empty() {
                String::new()
            } else {
                format!(" {}", e(args))
            };
            format!("{what} {}{args} from {from}", e(command))
        }
        Payload::UserJoined { userhost, .. } => match userhost {
            Some(uh) => format!("{from} ({}) joined", e(uh)),
            None => format!("{from} joined"),
        },
        Payload::UserParted { reason: r } => format!("{from} left{}", reason(r)),
        Payload::UserQuit { reason: r } => format!("{from} quit{}", reason(r)),
        Payload::UserKicked { victim, reason: r } => {
            format!("{} was kicked by {from}{}", e(victim), reason(r))
        }
        Payload::NickChanged { new_nick } => format!("{from} is now {}", e(new_nick)),
        Payload::TopicChanged { topic } if from.is_empty() => format!("topic: {}", e(topic)),
        Payload::TopicChanged { topic } => format!("{from} set the topic: {}", e(topic)),
        Payload::ModeChanged { modes } if from.is_empty() => format!("mode {}", e(modes)),
        Payload::ModeChanged { modes } => format!("{from} set mode {}", e(modes)),
        Payload::Invited { target, channel } => {
            format!("{from} invited {} to {}", e(target), e(channel))
        }
        Payload::ServerReply { command, text } => format!("{} {}", e(command), e(text)),
        Payload::ServerError { text } => format!("ERROR {}", e(text)),
        // reterm's own lines are said with the prefix every event gets:
        // drawn once, not `-!- -!-`.
        Payload::ClientStatus { text } => e(text.strip_prefix("-!- ").unwrap_or(text)),
    }
}

/// WHOIS and LIST replies as a person reads them (dates, not epoch
/// seconds); `None` for other replies, shown as they came.
pub fn server_reply(command: &str, text: &str, look: &Look) -> Option<String> {
    let e = |s: &str| display_escape(s).into_owned();
    let date = |w: &str| -> Option<String> {
        let secs: i64 = w.parse().ok()?;
        let time = rete_engine::clock::UnixMillis(secs.checked_mul(1000)?);
        Some(format!(
            "{} {}",
            look.day(time).format("%a %-d %b %Y"),
            look.clock(time)
        ))
    };
    let words: Vec<&str> = text.split(' ').collect();
    match (command, words.as_slice()) {
        // RPL_WHOISUSER: nick user host * realname
        ("311", [nick, user, host, _, realname @ ..]) => Some(format!(
            "{} is {}@{} ({})",
            e(nick),
            e(user),
            e(host),
            e(&realname.join(" "))
        )),
        // RPL_WHOISIDLE: nick idle signon seconds idle, signon time
        ("317", [nick, idle, signon, ..]) => {
            let idle: u64 = idle.parse().ok()?;
            let (h, m, s) = (idle / 3600, idle / 60 % 60, idle % 60);
            let idle = match (h, m) {
                (0, 0) => format!("{s}s"),
                (0, _) => format!("{m}m {s}s"),
                _ => format!("{h}h {m}m {s}s"),
            };
            Some(format!(
                "{} has been idle {idle}, signed on {}",
                e(nick),
                date(signon)?
            ))
        }
        // RPL_CREATIONTIME: channel time
        ("329", [channel, time, ..]) => Some(format!("{} was created {}", e(channel), date(time)?)),
        // RPL_LIST: channel users topic
        ("322", [channel, users, topic @ ..]) => Some(format!(
            "{:<20} {:>5} users  {}",
            e(channel),
            e(users),
            e(&topic.join(" "))
        )),
        _ => None,
    }
}

fn push_text(spans: &mut Vec<Span<'static>>, text: &str, look: &Look) {
    let text = look.masks.mask(text);
    if !look.mirc {
        spans.push(Span::raw(super::glyphs::screen_escape(&text).into_owned()));
        return;
    }
    for (format, piece) in segments(&text) {
        spans.push(Span::styled(piece, style_of(format)));
    }
}

/// The terminal style of a mIRC format; the 16 basic mIRC colours map onto
/// their ANSI equivalents, 16–98 onto the 256-colour cube as mIRC defines.
fn style_of(f: Format) -> Style {
    let mut style = Style::new();
    if f.bold {
        style = style.add_modifier(Modifier::BOLD);
    }
    if f.italic {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if f.underline {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    if f.strike {
        style = style.add_modifier(Modifier::CROSSED_OUT);
    }
    if f.reverse {
        style = style.add_modifier(Modifier::REVERSED);
    }
    if let Some(c) = f.fg.and_then(mirc_colour) {
        style = style.fg(c);
    }
    if let Some(c) = f.bg.and_then(mirc_colour) {
        style = style.bg(c);
    }
    style
}

/// mIRC colour numbers 0–15 as ANSI colours; 16–98 as 256-colour indexes
/// (mIRC's extended palette); 99 is "default".
fn mirc_colour(n: u8) -> Option<Color> {
    const BASIC: [u8; 16] = [15, 0, 4, 2, 9, 1, 5, 3, 11, 10, 6, 14, 12, 13, 8, 7];
    const EXTENDED: [u8; 83] = [
        52, 94, 100, 58, 22, 29, 23, 24, 17, 54, 53, 89, 88, 130, 142, 64, 28, 35, 30, 25, 18, 91,
        90, 125, 124, 166, 184, 106, 34, 49, 37, 33, 19, 129, 127, 161, 196, 208, 226, 154, 46, 86,
        51, 75, 21, 171, 201, 198, 203, 215, 227, 191, 83, 122, 87, 111, 63, 177, 207, 205, 217,
        223, 229, 193, 157, 158, 159, 153, 147, 183, 219, 212, 16, 233, 235, 237, 239, 241, 244,
        247, 250, 254, 231,
    ];
    match n {
        0..=15 => Some(Color::Indexed(BASIC[n as usize])),
        16..=98 => Some(Color::Indexed(EXTENDED[(n - 16) as usize])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    fn look() -> Look {
        Look::in_fixed_zone(0)
    }

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

    fn plain(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn reterms_own_lines_have_one_prefix() {
        for text in ["-!- lastlog: 1 rows contain x", "lastlog: 1 rows contain x"] {
            let r = row("", Payload::ClientStatus { text: text.into() });
            assert_eq!(
                plain(&row_line(&r, "me", &look())),
                "12:00 -!- lastlog: 1 rows contain x"
            );
        }
    }

    #[test]
    fn message_with_time_nick_colour_and_escaping() {
        let r = row(
            "alice",
            Payload::Privmsg {
                text: "a\u{1b}[2J\u{02}b".into(),
            },
        );
        let line = row_line(&r, "me", &look());
        assert_eq!(plain(&line), "12:00 <alice> a\\u{1B}[2Jb");
        assert_eq!(
            line.spans[2].style.fg,
            Some(Color::Indexed(nick_colour("alice")))
        );
        let bold = line.spans.last().unwrap();
        assert_eq!(
            (bold.content.as_ref(), bold.style.add_modifier),
            ("b", Modifier::BOLD)
        );
    }

    #[test]
    fn highlight_marks_the_nick_and_mirc_can_be_off() {
        let r = row(
            "bob",
            Payload::Privmsg {
                text: "me: \u{02}x".into(),
            },
        );
        let mut l = look();
        let line = row_line(&r, "me", &l);
        assert_eq!(line.spans[2].style, HIGHLIGHT);
        assert!(line.spans[4..]
            .iter()
            .all(|s| s.style.fg == Some(Color::Yellow)));
        l.mirc = false;
        let line = row_line(&r, "me", &l);
        assert_eq!(plain(&line), "12:00 <bob> me: x");
        assert_eq!(line.spans.len(), 5);
    }

    #[test]
    fn whois_and_list_replies_read_as_dates() {
        let look = look();
        assert_eq!(
            server_reply(
                "317",
                "bob 3725 1790769601 seconds idle, signon time",
                &look
            )
            .unwrap(),
            "bob has been idle 1h 2m 5s, signed on Wed 30 Sep 2026 12:00"
        );
        assert_eq!(
            server_reply("329", "#rete 1790769601", &look).unwrap(),
            "#rete was created Wed 30 Sep 2026 12:00"
        );
        assert_eq!(
            server_reply("322", "#rete 5 the topic here", &look).unwrap(),
            "#rete                    5 users  the topic here"
        );
        assert_eq!(
            server_reply("311", "bob ~b host.example * Bob Smith", &look).unwrap(),
            "bob is ~b@host.example (Bob Smith)"
        );
        assert_eq!(server_reply("001", "Welcome", &look), None);
        assert_eq!(server_reply("317", "bob x y", &look), None);
    }

    #[test]
    fn ctcp_with_no_arguments_has_one_space() {
        let r = row(
            "bob",
            Payload::Ctcp {
                command: "TIME".into(),
                args: "".into(),
                reply: false,
            },
        );
        assert_eq!(event_text(&r), "CTCP TIME from bob");
    }
}
