//! The part of a buffer the screen shows: read straight from the engine's
//! rows (newest at the bottom), `scroll` rows up from the end, wrapped at the
//! width; with the unread marker after the last row seen and a day-changed
//! line wherever two rows fall on different days.
//!
//! Only the rows that fit are formatted, so a frame of a 50,000-row buffer
//! costs what its 50 visible rows cost.

use super::glyphs::text_width;
use super::look::Look;
use super::rows::{row_line, spans_before_text};
use super::wrap::{wrap, wrap_words};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use rete_engine::row::{Payload, Row};

/// The marker line's text.
pub const UNREAD: &str = "──── unread ────";

/// Where the screen looks into a buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Viewport {
    /// Columns.
    pub width: usize,
    /// Screen lines.
    pub height: usize,
    /// Rows hidden below the screen (0 = following the end).
    pub scroll: usize,
}

/// The visible screen lines, oldest first, at most `height` of them, from
/// `newest_first` (a buffer's rows from the end).
pub fn visible<'a, I>(
    newest_first: I,
    view: Viewport,
    nick: &str,
    look: &Look,
    unread_after: Option<u64>,
) -> Vec<Line<'static>>
where
    I: Iterator<Item = &'a Row>,
{
    let mut out: Vec<Line<'static>> = Vec::with_capacity(view.height.min(1024) + 4);
    let mut newer: Option<&Row> = None;
    let mut marked = false;
    let mut rows = newest_first.skip(view.scroll).peekable();
    while let Some(row) = rows.next() {
        if out.len() >= view.height {
            break;
        }
        // A run of quits with one reason (a netsplit, a mass quit) is one line.
        let mut quits: Vec<&Row> = Vec::new();
        if let Payload::UserQuit { reason } = &row.payload {
            while let Some(next) = rows.peek() {
                match &next.payload {
                    Payload::UserQuit { reason: r } if r == reason => quits.push(next),
                    _ => break,
                }
                rows.next();
            }
            quits.insert(0, row);
            if !collapses(&quits, reason.as_deref()) {
                // Too few to collapse: one line each (newest first).
                for q in quits {
                    push_row(
                        &mut out,
                        q,
                        &mut newer,
                        &mut marked,
                        view,
                        nick,
                        look,
                        unread_after,
                    );
                }
                continue;
            }
        }
        if quits.len() > 1 {
            if let Some(n) = newer {
                if look.day(n.time) != look.day(row.time) {
                    out.push(day_changed(n, look));
                }
            }
            let mut wrapped = wrap(quit_group(&quits, look), view.width);
            while let Some(line) = wrapped.pop() {
                out.push(line);
            }
            newer = quits.last().copied();
            continue;
        }
        push_row(
            &mut out,
            row,
            &mut newer,
            &mut marked,
            view,
            nick,
            look,
            unread_after,
        );
    }
    out.truncate(view.height);
    out.reverse();
    out
}

/// Where the unread marker goes, given the last row the person saw
/// (`last_seen`): below the last row that is not unread for them, so above
/// the first row after `last_seen` that is not their own (their own lines,
/// sent from elsewhere, are not news). None when every row after it is
/// theirs. `newest_first` are the buffer's rows.
pub fn unread_marker<'a>(
    newest_first: impl Iterator<Item = &'a Row>,
    last_seen: u64,
    nick: &str,
) -> Option<u64> {
    let mut after: Vec<(u64, bool)> = newest_first
        .take_while(|r| r.seq > last_seen)
        .map(|r| {
            (
                r.seq,
                !r.from.is_empty() && r.from.eq_ignore_ascii_case(nick),
            )
        })
        .collect();
    after.reverse();
    let first_news = after.iter().position(|(_, own)| !own)?;
    match first_news.checked_sub(1) {
        None => Some(last_seen),
        Some(before) => after.get(before).map(|(seq, _)| *seq),
    }
}

/// Appends one row (with the day-changed line and unread marker above the
/// newer row, as needed); `newer` is the row below it.
#[allow(clippy::too_many_arguments)]
fn push_row<'a>(
    out: &mut Vec<Line<'static>>,
    row: &'a Row,
    newer: &mut Option<&'a Row>,
    marked: &mut bool,
    view: Viewport,
    nick: &str,
    look: &Look,
    unread_after: Option<u64>,
) {
    {
        if let Some(newer) = *newer {
            if look.day(newer.time) != look.day(row.time) {
                out.push(day_changed(newer, look));
            }
            // Once, below the newest row holding that seq (notes share it).
            if !*marked && unread_after == Some(row.seq) {
                out.push(Line::styled(UNREAD, Style::new().fg(Color::Red)));
                *marked = true;
            }
        }
        let line = row_line(row, nick, look);
        let indent = line
            .spans
            .iter()
            .take(spans_before_text(row))
            .map(|s| text_width(&s.content))
            .sum();
        let mut wrapped = wrap_words(line, view.width, indent);
        while let Some(line) = wrapped.pop() {
            out.push(line);
        }
        *newer = Some(row);
    }
}

/// Whether a run of quits with `reason` is shown as one line: a netsplit
/// (the reason names two servers) of two or more, or any three or more.
fn collapses(quits: &[&Row], reason: Option<&str>) -> bool {
    quits.len() >= 3 || (quits.len() >= 2 && reason.is_some_and(is_netsplit))
}

/// A netsplit's quit reason: two host names, e.g. `irc.a.net irc.b.net`.
fn is_netsplit(reason: &str) -> bool {
    let parts: Vec<&str> = reason.split(' ').collect();
    parts.len() == 2
        && parts.iter().all(|p| {
            p.contains('.')
                && !p.starts_with('.')
                && !p.ends_with('.')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        })
}

/// `-!- netsplit a.net ⇄ b.net: 3 quit: x, y, z` or `-!- 3 quit (reason): x, y, z`;
/// `quits` newest first, listed oldest first.
fn quit_group(quits: &[&Row], look: &Look) -> Line<'static> {
    let newest = quits[0];
    let names: Vec<String> = quits
        .iter()
        .rev()
        .map(|r| rete_redact::display_escape(&r.from).into_owned())
        .collect();
    let reason = match &newest.payload {
        Payload::UserQuit { reason } => reason.as_deref().unwrap_or(""),
        _ => "",
    };
    let what = if is_netsplit(reason) {
        let (a, b) = reason.split_once(' ').unwrap_or((reason, ""));
        format!("netsplit {a} ⇄ {b}: {} quit", names.len())
    } else if reason.is_empty() {
        format!("{} quit", names.len())
    } else {
        format!(
            "{} quit ({})",
            names.len(),
            rete_redact::display_escape(reason)
        )
    };
    Line::from(vec![
        ratatui::text::Span::styled(
            format!("{} ", look.clock(newest.time)),
            Style::new().fg(Color::Indexed(8)),
        ),
        ratatui::text::Span::styled(
            format!("-!- {what}: {}", names.join(", ")),
            Style::new().fg(Color::Indexed(8)),
        ),
    ])
}

/// Like [`visible`], with `rows` giving the rows afresh for each try: near
/// the top of a buffer, a scroll that would leave the screen part-empty is
/// reduced until the screen is full (or the end is shown). Returns the
/// lines and the scroll that drew them.
pub fn visible_filled<'a, I, F>(
    rows: F,
    view: Viewport,
    nick: &str,
    look: &Look,
    unread_after: Option<u64>,
) -> (Vec<Line<'static>>, usize)
where
    F: Fn() -> I,
    I: Iterator<Item = &'a Row>,
{
    let lines = visible(rows(), view, nick, look, unread_after);
    if lines.len() >= view.height || view.scroll == 0 {
        return (lines, view.scroll);
    }
    // The oldest row is on screen with room below it: the top of the buffer
    // is anchored at the top of the screen. Take newer rows until the lines
    // from the oldest fill the screen (each row draws at least one line).
    let mut scroll = view.scroll;
    let mut lines = lines;
    while lines.len() < view.height && scroll > 0 {
        scroll = scroll.saturating_sub(view.height - lines.len());
        let tall = Viewport {
            scroll,
            height: usize::MAX,
            ..view
        };
        lines = visible(rows(), tall, nick, look, unread_after);
    }
    lines.truncate(view.height);
    (lines, scroll)
}

/// A buffer's rows from the end with reterm's notes among them: `notes`
/// (oldest first) each hold in `seq` the row they follow.
pub fn with_notes<'a, I>(newest_first: I, notes: &'a [Row]) -> impl Iterator<Item = &'a Row> + 'a
where
    I: Iterator<Item = &'a Row> + 'a,
{
    let mut rows = newest_first.peekable();
    let mut notes = notes.iter().rev().peekable();
    std::iter::from_fn(move || match (rows.peek(), notes.peek()) {
        (Some(row), Some(note)) if note.seq >= row.seq => notes.next(),
        (Some(_), _) => rows.next(),
        (None, _) => notes.next(),
    })
}

fn day_changed(row: &Row, look: &Look) -> Line<'static> {
    let day = look.day(row.time).format("%A, %-d %B %Y");
    Line::styled(
        format!("-!- day changed to {day}"),
        Style::new().fg(Color::Indexed(8)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    const T0: i64 = 1_790_769_601_000; // 2026-09-30 12:00:01 UTC

    fn rows(n: u64) -> Vec<Row> {
        (1..=n)
            .map(|seq| Row {
                seq,
                time: UnixMillis(T0 + seq as i64 * 60_000),
                msgid: None,
                from: "bob".into(),
                history: false,
                payload: Payload::Privmsg {
                    text: format!("m{seq}").into(),
                },
            })
            .collect()
    }

    fn look() -> Look {
        Look::in_fixed_zone(0)
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn follows_the_end_and_scrolls_back_by_rows() {
        let all = rows(10);
        let v = Viewport {
            width: 40,
            height: 3,
            scroll: 0,
        };
        assert_eq!(
            text(&visible(all.iter().rev(), v, "me", &look(), None)),
            ["12:08 <bob> m8", "12:09 <bob> m9", "12:10 <bob> m10"]
        );
        let v = Viewport { scroll: 5, ..v };
        assert_eq!(
            text(&visible(all.iter().rev(), v, "me", &look(), None)),
            ["12:03 <bob> m3", "12:04 <bob> m4", "12:05 <bob> m5"]
        );
        let v = Viewport { scroll: 100, ..v };
        assert!(visible(all.iter().rev(), v, "me", &look(), None).is_empty());
    }

    #[test]
    fn the_top_of_a_buffer_fills_the_screen() {
        let all = rows(10);
        let v = Viewport {
            width: 40,
            height: 3,
            scroll: 9,
        };
        let (lines, scroll) = visible_filled(|| all.iter().rev(), v, "me", &look(), None);
        assert_eq!(
            text(&lines),
            ["12:01 <bob> m1", "12:02 <bob> m2", "12:03 <bob> m3"]
        );
        assert_eq!(scroll, 7);
        // Extra lines (a marker) do not push the oldest row off the top.
        let (lines, _) = visible_filled(|| all.iter().rev(), v, "me", &look(), Some(1));
        assert_eq!(text(&lines), ["12:01 <bob> m1", UNREAD, "12:02 <bob> m2"]);
        let v = Viewport {
            width: 40,
            height: 30,
            scroll: 5,
        };
        let (lines, scroll) = visible_filled(|| all.iter().rev(), v, "me", &look(), None);
        assert_eq!((lines.len(), scroll), (10, 0));
    }

    #[test]
    fn wrapped_rows_fill_from_the_bottom() {
        let all = rows(3);
        let v = Viewport {
            width: 8,
            height: 3,
            scroll: 0,
        };
        // "12:03 <bob> m3" is 14 columns: two screen lines.
        assert_eq!(
            text(&visible(all.iter().rev(), v, "me", &look(), None)),
            ["ob> m2", "12:03 <b", "ob> m3"]
        );
    }

    #[test]
    fn notes_follow_the_row_they_were_added_after() {
        let all = rows(3);
        let mut note = rows(1).remove(0);
        note.seq = 2;
        note.payload = Payload::ClientStatus {
            text: "topic: x".into(),
        };
        let notes = [note];
        let merged: Vec<u64> = with_notes(all.iter().rev(), &notes)
            .map(|r| r.seq)
            .collect();
        assert_eq!(merged, [3, 2, 2, 1]);
        let v = Viewport {
            width: 40,
            height: 4,
            scroll: 0,
        };
        let got = text(&visible(
            with_notes(all.iter().rev(), &notes),
            v,
            "me",
            &look(),
            None,
        ));
        assert_eq!(got[2], "12:01 -!- topic: x");
    }

    #[test]
    fn unread_marker_shows_once_when_notes_share_its_seq() {
        let all = rows(3);
        let mut note = rows(1).remove(0);
        note.seq = 2;
        note.payload = Payload::ClientStatus { text: "n".into() };
        let notes = [note.clone(), note];
        let v = Viewport {
            width: 40,
            height: 10,
            scroll: 0,
        };
        let got = text(&visible(
            with_notes(all.iter().rev(), &notes),
            v,
            "me",
            &look(),
            Some(2),
        ));
        assert_eq!(got.iter().filter(|l| *l == UNREAD).count(), 1, "{got:?}");
        assert_eq!(got[4], UNREAD, "{got:?}");
    }

    fn quit(seq: u64, nick: &str, reason: &str) -> Row {
        Row {
            seq,
            time: UnixMillis(T0 + seq as i64 * 60_000),
            msgid: None,
            from: nick.into(),
            history: false,
            payload: Payload::UserQuit {
                reason: Some(reason.into()),
            },
        }
    }

    #[test]
    fn netsplits_and_mass_quits_collapse_to_one_line() {
        let mut all = rows(1);
        all.push(quit(2, "amy", "irc.a.net irc.b.net"));
        all.push(quit(3, "bob", "irc.a.net irc.b.net"));
        all.push(quit(4, "cat", "Ping timeout"));
        all.push(quit(5, "dan", "Excess Flood"));
        all.push(quit(6, "eve", "Excess Flood"));
        all.push(quit(7, "fay", "Excess Flood"));
        let v = Viewport {
            width: 80,
            height: 10,
            scroll: 0,
        };
        assert_eq!(
            text(&visible(all.iter().rev(), v, "me", &look(), None)),
            [
                "12:01 <bob> m1",
                "12:03 -!- netsplit irc.a.net ⇄ irc.b.net: 2 quit: amy, bob",
                "12:04 -!- cat quit (Ping timeout)",
                "12:07 -!- 3 quit (Excess Flood): dan, eve, fay",
            ]
        );
        assert!(is_netsplit("irc.a.net irc.b.net"));
        assert!(!is_netsplit("Quit: bye now"));
        assert!(!is_netsplit("a.b"));
    }

    #[test]
    fn the_unread_marker_skips_the_persons_own_lines() {
        let mut all = rows(5);
        all[1].from = "Me".into();
        all[2].from = "me".into();
        // Seen up to m1; m2 and m3 are the person's own: the marker goes above m4.
        assert_eq!(unread_marker(all.iter().rev(), 1, "me"), Some(3));
        let v = Viewport {
            width: 60,
            height: 10,
            scroll: 0,
        };
        let got = text(&visible(all.iter().rev(), v, "me", &look(), Some(3)));
        assert_eq!(got.get(3).map(String::as_str), Some(UNREAD), "{got:?}");
        // Seen up to m3: m4 is news at once.
        assert_eq!(unread_marker(all.iter().rev(), 3, "me"), Some(3));
        // Only the person's own lines after it: nothing is unread.
        assert_eq!(unread_marker(all.iter().take(3).rev(), 1, "me"), None);
        assert_eq!(unread_marker(all.iter().rev(), 5, "me"), None);
    }

    #[test]
    fn unread_marker_and_day_change() {
        let mut all = rows(3);
        all[2].time = UnixMillis(T0 + 86_400_000);
        let v = Viewport {
            width: 60,
            height: 10,
            scroll: 0,
        };
        let got = text(&visible(all.iter().rev(), v, "me", &look(), Some(1)));
        assert_eq!(
            got,
            [
                "12:01 <bob> m1",
                UNREAD,
                "12:02 <bob> m2",
                "-!- day changed to Thursday, 1 October 2026",
                "12:00 <bob> m3",
            ]
        );
    }
}
