//! Drawing a [`Screen`] into a ratatui frame.

use super::glyphs::{cell_width, cells};
use super::model::{areas_with, InputLine, Screen, Status};
use crate::client::activity::Level;
use crate::client::names::Listed;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget as _};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

const BAR: Style = Style::new().fg(Color::White).bg(Color::Blue);
/// The approval prompt: hard to miss.
const ASK: Style = Style::new()
    .fg(Color::Black)
    .bg(Color::Yellow)
    .add_modifier(Modifier::BOLD);

/// Draws the whole frame.
pub fn draw(frame: &mut Frame<'_>, screen: &Screen) {
    let a = areas_with(
        frame.area(),
        screen.nicklist.is_some(),
        screen.approval.is_some(),
    );
    let buf = frame.buffer_mut();
    buf.set_style(a.title, BAR);
    draw_cells(&Line::from(screen.title.as_str()), a.title, buf);
    // Bottom-aligned: the newest line sits right above the status bar.
    let pad = (a.body.height as usize).saturating_sub(screen.lines.len());
    let body = Rect {
        y: a.body.y + pad as u16,
        height: a.body.height - pad as u16,
        ..a.body
    };
    for (row, line) in (body.y..body.y + body.height).zip(&screen.lines) {
        let area = Rect {
            y: row,
            height: 1,
            ..body
        };
        buf.set_style(area, line.style);
        draw_cells(line, area, buf);
    }
    if let (Some(area), Some(nicks)) = (a.nicks, &screen.nicklist) {
        let lines: Vec<Line<'_>> =
            nicklist_lines(nicks, screen.nicklist_scroll, area.height as usize);
        Paragraph::new(lines).render(area, buf);
    }
    Paragraph::new(status_line(&screen.status))
        .style(BAR)
        .render(a.status, buf);
    if let (Some(area), Some(text)) = (a.approval, &screen.approval) {
        Paragraph::new(Line::from(text.as_str()))
            .style(ASK)
            .render(area, buf);
    }
    let (line, cursor) = input_line(&screen.input, a.input.width as usize);
    Paragraph::new(line).render(a.input, buf);
    if let Some(x) = cursor {
        frame.set_cursor_position(Position::new(a.input.x + x as u16, a.input.y));
    }
}

/// The nick list pane's `height` rows, from the `scroll`th nick: a list
/// that does not fit gives its first or last row to `+N`, the count of
/// nicks above or below what is shown.
fn nicklist_lines(nicks: &[Listed], scroll: usize, height: usize) -> Vec<Line<'_>> {
    let more = |n: usize| {
        Line::from(vec![
            Span::raw("│"),
            Span::styled(format!("+{n}"), Style::new().fg(Color::DarkGray)),
        ])
    };
    if height == 0 {
        return Vec::new();
    }
    if nicks.len() <= height {
        return nicks.iter().map(nick_line).collect();
    }
    // The scroll stops where the last nick is on the last row.
    let scroll = scroll.min(nicks.len() - (height - 1));
    let mut lines = Vec::new();
    let mut room = height;
    if scroll > 0 {
        lines.push(more(scroll));
        room -= 1;
    }
    let left = nicks.len() - scroll;
    let shown = if left > room { room - 1 } else { room };
    lines.extend(nicks.iter().skip(scroll).take(shown).map(nick_line));
    if left > shown {
        lines.push(more(left - shown));
    }
    lines
}

fn nick_line(m: &Listed) -> Line<'_> {
    Line::from(vec![
        Span::raw("│"),
        Span::styled(format!("{:>1}", m.prefix), Style::new().fg(Color::Green)),
        Span::raw(m.nick.as_str()),
    ])
}

/// Draws `line` on the one-row `area` from its left, cell by cell as
/// `glyphs::cells` splits the text (each character that takes room with the
/// zero-width ones after it), so an emoji sequence takes the columns a
/// terminal gives it and nothing it draws spills past what was reserved.
fn draw_cells(line: &Line<'_>, area: Rect, buf: &mut Buffer) {
    let right = area.x.saturating_add(area.width);
    let mut x = area.x;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for cell in cells(&span.content) {
            let width = cell_width(cell) as u16;
            if width == 0 {
                continue;
            }
            if x.saturating_add(width) > right {
                return;
            }
            buf[(x, area.y)].set_symbol(cell).set_style(style);
            // The columns a wide cell covers hold nothing of their own.
            for covered in x + 1..x + width {
                buf[(covered, area.y)].reset();
            }
            x += width;
        }
    }
}

/// The status bar's spans.
pub fn status_line(s: &Status) -> Line<'static> {
    let mut spans = vec![
        Span::raw(format!("[{}] ", s.clock)),
        Span::raw(if s.nick.is_empty() {
            String::new()
        } else {
            format!("[{}] ", s.nick)
        }),
        Span::styled(
            format!("[{}:{}]", s.number, s.label),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ];
    if let Some(state) = &s.state {
        spans.push(Span::raw(format!(" ({state})")));
    }
    if let Some(ms) = s.lag_ms {
        // irssi's habit: seconds with two decimals.
        spans.push(Span::raw(format!(
            " [Lag: {}.{:02}]",
            ms / 1000,
            ms % 1000 / 10
        )));
    }
    if !s.activity.is_empty() {
        spans.push(Span::raw(" [Act: "));
        for (i, (n, level)) in s.activity.iter().enumerate() {
            if i > 0 {
                spans.push(Span::raw(","));
            }
            spans.push(Span::styled(n.to_string(), activity_style(*level)));
        }
        spans.push(Span::raw("]"));
    }
    if s.more_below {
        spans.push(Span::styled(
            " -more-",
            Style::new().add_modifier(Modifier::BOLD),
        ));
    }
    Line::from(spans)
}

/// The colour of a buffer number in the activity list.
pub fn activity_style(level: Level) -> Style {
    match level {
        Level::None | Level::Events => Style::new().fg(Color::Gray),
        Level::Message => Style::new().fg(Color::White).add_modifier(Modifier::BOLD),
        Level::Highlight => Style::new()
            .fg(Color::LightMagenta)
            .add_modifier(Modifier::BOLD),
    }
}

/// The caret letter a control character of the input line is drawn as, in
/// reverse video (as irssi shows them): Ctrl-B's bold code as `B`, Ctrl-C's
/// colour as `C`, Ctrl-_'s underline as `_`. `None` for any other character.
fn caret_letter(c: char) -> Option<char> {
    match c {
        '\u{0}'..='\u{1F}' => char::from_u32(c as u32 + 0x40),
        '\u{7F}' => Some('?'),
        _ => None,
    }
}

/// Columns a character of the input line takes.
fn input_width(c: char) -> usize {
    match caret_letter(c) {
        Some(_) => 1,
        None => c.width().unwrap_or(0),
    }
}

/// The input line as it fits `width` columns, scrolled sideways to keep the
/// cursor visible, and the cursor's column (none while a question shows).
pub fn input_line(input: &InputLine, width: usize) -> (Line<'static>, Option<usize>) {
    if let Some(question) = &input.question {
        return (
            Line::styled(question.clone(), Style::new().add_modifier(Modifier::BOLD)),
            None,
        );
    }
    let prompt_width = input.prompt.width();
    let room = width.saturating_sub(prompt_width + 1).max(1);
    let before = &input.text[..input.cursor.min(input.text.len())];
    // Drop characters from the start until the text before the cursor fits.
    let mut start = 0;
    let mut used: usize = before.chars().map(input_width).sum();
    for c in before.chars() {
        if used < room {
            break;
        }
        start += c.len_utf8();
        used -= input_width(c);
    }
    let mut spans = vec![Span::styled(
        input.prompt.clone(),
        Style::new().fg(Color::Cyan),
    )];
    let mut plain = String::new();
    let mut shown_width = 0;
    for c in input.text[start..].chars() {
        let w = input_width(c);
        if prompt_width + shown_width + w > width {
            break;
        }
        shown_width += w;
        match caret_letter(c) {
            Some(letter) => {
                if !plain.is_empty() {
                    spans.push(Span::raw(std::mem::take(&mut plain)));
                }
                spans.push(Span::styled(
                    letter.to_string(),
                    Style::new().add_modifier(Modifier::REVERSED),
                ));
            }
            None => plain.push(c),
        }
    }
    if !plain.is_empty() {
        spans.push(Span::raw(plain));
    }
    (
        Line::from(spans),
        Some((prompt_width + used).min(width.saturating_sub(1))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::names::Listed;
    use crate::tui::lines::{visible, Viewport};
    use crate::tui::look::Look;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::{Payload, Row};

    fn terminal(w: u16, h: u16) -> Terminal<TestBackend> {
        Terminal::new(TestBackend::new(w, h)).unwrap()
    }

    fn screen_text(t: &Terminal<TestBackend>) -> Vec<String> {
        let buf = t.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                // A wide character fills two cells; the second is not text.
                let mut line = String::new();
                let mut skip = 0;
                for x in 0..buf.area.width {
                    if skip > 0 {
                        skip -= 1;
                        continue;
                    }
                    let symbol = buf[(x, y)].symbol();
                    skip = symbol.width().saturating_sub(1);
                    line.push_str(symbol);
                }
                line.trim_end().to_owned()
            })
            .collect()
    }

    fn said(seq: u64, text: &str) -> Row {
        Row {
            seq,
            time: UnixMillis(1_790_769_601_000 + seq as i64 * 1000),
            msgid: None,
            from: "bob".into(),
            history: false,
            payload: Payload::Privmsg { text: text.into() },
        }
    }

    fn base() -> Screen {
        Screen {
            title: "#rete: the topic".into(),
            status: Status {
                clock: "12:34".into(),
                nick: "rt".into(),
                number: 2,
                label: "test/#rete".into(),
                ..Status::default()
            },
            input: InputLine {
                prompt: "[#rete] ".into(),
                ..InputLine::default()
            },
            ..Screen::default()
        }
    }

    #[test]
    fn layout_with_title_rows_status_and_prompt() {
        let mut t = terminal(40, 6);
        let mut s = base();
        let rows = [said(1, "one"), said(2, "two")];
        let look = Look::in_fixed_zone(0);
        s.lines = visible(
            rows.iter().rev(),
            Viewport {
                width: 40,
                height: 3,
                scroll: 0,
            },
            "rt",
            &look,
            None,
        );
        t.draw(|f| draw(f, &s)).unwrap();
        assert_eq!(
            screen_text(&t),
            [
                "#rete: the topic",
                "",
                "12:00 <bob> one",
                "12:00 <bob> two",
                "[12:34] [rt] [2:test/#rete]",
                "[#rete]",
            ]
        );
        t.backend_mut().assert_cursor_position(Position::new(8, 5));
        // The bars are drawn in the bar colours.
        assert_eq!(t.backend().buffer()[(0, 4)].bg, Color::Blue);
    }

    #[test]
    fn the_approval_prompt_takes_the_row_above_the_input_line() {
        let mut t = terminal(40, 6);
        let mut s = base();
        // The frame builds as many lines as the smaller body holds.
        s.lines = vec![Line::from("two"), Line::from("three")];
        s.approval = Some("AI access wants to send".into());
        t.draw(|f| draw(f, &s)).unwrap();
        assert_eq!(
            screen_text(&t),
            [
                "#rete: the topic",
                "two",
                "three",
                "[12:34] [rt] [2:test/#rete]",
                "AI access wants to send",
                "[#rete]",
            ]
        );
        assert_eq!(t.backend().buffer()[(0, 4)].bg, Color::Yellow);
        t.backend_mut().assert_cursor_position(Position::new(8, 5));
    }

    #[test]
    fn activity_numbers_are_coloured_by_level() {
        let mut s = base();
        s.status.activity = vec![
            (1, Level::Events),
            (3, Level::Message),
            (4, Level::Highlight),
        ];
        s.status.more_below = true;
        let line = status_line(&s.status);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "[12:34] [rt] [2:test/#rete] [Act: 1,3,4] -more-");
        let style_of = |n: &str| line.spans.iter().find(|s| s.content == n).unwrap().style;
        assert_eq!(style_of("1"), activity_style(Level::Events));
        assert_eq!(style_of("3"), activity_style(Level::Message));
        assert_eq!(style_of("4"), activity_style(Level::Highlight));
        assert_ne!(
            activity_style(Level::Message),
            activity_style(Level::Highlight)
        );
        assert_ne!(
            activity_style(Level::Events),
            activity_style(Level::Message)
        );
    }

    #[test]
    fn the_status_bar_shows_the_lag() {
        let mut s = base();
        s.status.lag_ms = Some(1_234);
        let mut t = terminal(60, 6);
        t.draw(|f| draw(f, &s)).unwrap();
        let text = screen_text(&t);
        assert!(text[4].contains("[2:test/#rete] [Lag: 1.23]"), "{text:?}");
        s.status.lag_ms = None;
        t.draw(|f| draw(f, &s)).unwrap();
        assert!(!screen_text(&t)[4].contains("Lag"), "unmeasured: not shown");
    }

    #[test]
    fn scrollback_shows_older_rows_and_more_marker() {
        let rows: Vec<Row> = (1..=20).map(|i| said(i, &format!("m{i}"))).collect();
        let look = Look::in_fixed_zone(0);
        let mut t = terminal(50, 6);
        let mut s = base();
        s.lines = visible(
            rows.iter().rev(),
            Viewport {
                width: 50,
                height: 3,
                scroll: 10,
            },
            "rt",
            &look,
            None,
        );
        s.status.more_below = true;
        t.draw(|f| draw(f, &s)).unwrap();
        let text = screen_text(&t);
        assert_eq!(
            &text[1..4],
            ["12:00 <bob> m8", "12:00 <bob> m9", "12:00 <bob> m10"]
        );
        assert!(text[4].ends_with("-more-"), "{text:?}");
    }

    #[test]
    fn wide_characters_wrap_inside_the_width() {
        let rows = [said(1, "漢字漢字漢字漢字")];
        let look = Look::in_fixed_zone(0);
        let mut t = terminal(20, 6);
        let mut s = base();
        s.lines = visible(
            rows.iter().rev(),
            Viewport {
                width: 20,
                height: 3,
                scroll: 0,
            },
            "rt",
            &look,
            None,
        );
        t.draw(|f| draw(f, &s)).unwrap();
        let text = screen_text(&t);
        // "12:00 <bob> " is 12 columns: four ideographs fit, four wrap.
        assert_eq!(&text[2..4], ["12:00 <bob> 漢字漢字", "漢字漢字"]);
    }

    #[test]
    fn a_nick_list_too_long_says_how_many_more() {
        let nicks: Vec<Listed> = (1..=10)
            .map(|i| Listed {
                prefix: "".into(),
                nick: format!("n{i}"),
                rank: 2,
            })
            .collect();
        let text = |scroll| -> Vec<String> {
            nicklist_lines(&nicks, scroll, 4)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect()
        };
        assert_eq!(text(0), ["│ n1", "│ n2", "│ n3", "│+7"]);
        assert_eq!(text(3), ["│+3", "│ n4", "│ n5", "│+5"]);
        assert_eq!(text(7), ["│+7", "│ n8", "│ n9", "│ n10"]);
        // Past the end it stops at the last nick.
        assert_eq!(text(50), text(7));
        assert_eq!(nicklist_lines(&nicks[..4], 2, 4).len(), 4);
    }

    #[test]
    fn nick_list_pane_beside_the_rows() {
        let mut t = terminal(60, 5);
        let mut s = base();
        s.nicklist = Some(vec![
            Listed {
                prefix: "@".into(),
                nick: "amy".into(),
                rank: 0,
            },
            Listed {
                prefix: "".into(),
                nick: "bob".into(),
                rank: 2,
            },
        ]);
        t.draw(|f| draw(f, &s)).unwrap();
        let text = screen_text(&t);
        assert!(text[1].ends_with("│@amy"), "{text:?}");
        assert!(text[2].ends_with("│ bob"), "{text:?}");
    }

    #[test]
    fn input_scrolls_sideways_to_keep_the_cursor_visible() {
        let input = InputLine {
            prompt: "> ".into(),
            text: "abcdefghijklmnop".into(),
            cursor: 16,
            question: None,
        };
        let (line, cursor) = input_line(&input, 10);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!((text.as_str(), cursor), ("> klmnop", Some(8)));
        let question = InputLine {
            question: Some("paste 2 lines?".into()),
            ..input
        };
        assert_eq!(input_line(&question, 10).1, None);
    }

    #[test]
    fn formatting_codes_show_as_reversed_letters_one_column_each() {
        let input = InputLine {
            prompt: "> ".into(),
            text: "\u{2}b\u{2} \u{3}4r\u{f}\u{1f}u\u{16}".into(),
            cursor: 5,
            question: None,
        };
        let (line, cursor) = input_line(&input, 40);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "> BbB C4rO_uV");
        let reversed: String = line
            .spans
            .iter()
            .filter(|s| s.style.add_modifier.contains(Modifier::REVERSED))
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(reversed, "BBCO_V");
        // The cursor after "\u{2}b\u{2} \u{3}": five columns past the prompt.
        assert_eq!(cursor, Some(7));
    }
}
