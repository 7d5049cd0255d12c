//! Splitting a styled line into screen lines of at most `width` columns,
//! by grapheme cluster measured as the terminal draws it (`glyphs.rs`): a
//! wide (CJK, emoji) character or an emoji sequence that does not fit moves
//! whole to the next line, and a combining mark stays with the character
//! before it.

use super::glyphs::{clusters, text_width};
use ratatui::text::{Line, Span};

/// `line` wrapped at `width` columns (at least one line, even when empty).
pub fn wrap(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(2);
    if line
        .spans
        .iter()
        .map(|s| text_width(&s.content))
        .sum::<usize>()
        <= width
    {
        return vec![line];
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let mut piece = String::new();
        for (c, w) in clusters(&span.content) {
            if used + w > width {
                if !piece.is_empty() {
                    current.push(Span::styled(std::mem::take(&mut piece), span.style));
                }
                out.push(Line::from(std::mem::take(&mut current)));
                used = 0;
            }
            piece.push_str(c);
            used += w;
        }
        if !piece.is_empty() {
            current.push(Span::styled(piece, span.style));
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(Line::from(current));
    }
    out
}

/// `line` wrapped at `width` columns between words where it can, as irssi
/// wraps a message: the lines after the first start `indent` columns in,
/// under the text (the time and nick stand alone at the left). A word longer
/// than a line is split where the edge falls. A narrow screen (an indent over
/// half the width) gets no indent.
pub fn wrap_words(line: Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(2);
    let total: usize = line.spans.iter().map(|s| text_width(&s.content)).sum();
    if total <= width {
        return vec![line];
    }
    // Breaks are between words of the text, never inside the prefix.
    let text_column = indent;
    let indent = if indent * 2 > width { 0 } else { indent };
    // Every cluster with its width and style, in order.
    let mut cells: Vec<(String, usize, ratatui::style::Style)> = Vec::new();
    for span in &line.spans {
        for (c, w) in clusters(&span.content) {
            cells.push((c.to_owned(), w, span.style));
        }
    }
    let mut out: Vec<Vec<(String, usize, ratatui::style::Style)>> = vec![Vec::new()];
    let mut used = 0;
    // Where the current line may be broken: the index after a space in
    // the text (past the indent), and the columns up to it.
    let mut last_space: Option<usize> = None;
    let mut first = true;
    for cell in cells {
        let room = if first { width } else { width - indent };
        let is_space = cell.0 == " ";
        if used + cell.1 > room {
            if is_space {
                // A space at the edge ends the line; it is not carried.
                out.push(Vec::new());
                first = false;
                used = 0;
                last_space = None;
                continue;
            }
            let current = out.last_mut().map(std::mem::take).unwrap_or_default();
            let (kept, carried) = match last_space {
                Some(at) => {
                    let mut kept = current;
                    let carried = kept.split_off(at);
                    (kept, carried)
                }
                None => (current, Vec::new()),
            };
            if let Some(last) = out.last_mut() {
                *last = kept;
            }
            // Trailing spaces of the broken line go.
            if let Some(last) = out.last_mut() {
                while last.last().is_some_and(|c| c.0 == " ") {
                    last.pop();
                }
            }
            used = carried.iter().map(|c| c.1).sum();
            out.push(carried);
            first = false;
            last_space = None;
        }
        used += cell.1;
        if let Some(current) = out.last_mut() {
            current.push(cell);
            let text_started = !first || used > text_column;
            if is_space && text_started {
                last_space = Some(current.len());
            }
        }
    }
    let count = out.len();
    out.into_iter()
        .enumerate()
        .filter(|(i, cells)| !cells.is_empty() || *i == 0 || *i + 1 == count)
        .map(|(i, cells)| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            if i > 0 && indent > 0 {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let mut piece = String::new();
            let mut style = None;
            for (c, _, s) in cells {
                if style.is_some_and(|st| st != s) {
                    spans.push(Span::styled(
                        std::mem::take(&mut piece),
                        style.unwrap_or_default(),
                    ));
                }
                style = Some(s);
                piece.push_str(&c);
            }
            if !piece.is_empty() {
                spans.push(Span::styled(piece, style.unwrap_or_default()));
            }
            Line::from(spans)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn messages_wrap_at_words_under_the_text() {
        let line = Line::from(vec![
            Span::raw("12:00 <bob> "),
            Span::raw("the quick brown fox jumps over the lazy dog"),
        ]);
        let lines = wrap_words(line, 30, 12);
        assert_eq!(
            texts(&lines),
            [
                "12:00 <bob> the quick brown",
                "            fox jumps over the",
                "            lazy dog",
            ]
        );
        assert!(lines.iter().all(|l| l.width() <= 30));
        // A word longer than a line is split at the edge.
        let long = Line::from(vec![Span::raw("12:00 <bob> "), Span::raw("a".repeat(40))]);
        let lines = wrap_words(long, 30, 12);
        assert!(lines.iter().all(|l| l.width() <= 30), "{:?}", texts(&lines));
        assert_eq!(
            texts(&lines).concat().replace(' ', "").len(),
            "12:00<bob>".len() + 40
        );
        // Too narrow for the indent: none.
        let narrow = Line::from(vec![Span::raw("12:00 <bob> "), Span::raw("one two three")]);
        assert_eq!(
            texts(&wrap_words(narrow, 20, 12)),
            ["12:00 <bob> one two", "three"]
        );
        // No break inside the prefix: text without spaces is split at the edge.
        let cjk = Line::from(vec![
            Span::raw("12:00 <bob> "),
            Span::raw("漢字漢字漢字漢字"),
        ]);
        assert_eq!(
            texts(&wrap_words(cjk, 20, 12)),
            ["12:00 <bob> 漢字漢字", "漢字漢字"]
        );
    }

    #[test]
    fn wide_characters_never_split_across_the_edge() {
        // Each ideograph is two columns: five columns hold two of them.
        let lines = wrap(Line::from("a漢字かな"), 5);
        assert_eq!(texts(&lines), ["a漢字", "かな"]);
        assert!(lines.iter().all(|l| l.width() <= 5));
    }

    #[test]
    fn combining_marks_stay_with_their_letter() {
        let lines = wrap(Line::from("abcde\u{301}f"), 5);
        assert_eq!(texts(&lines), ["abcde\u{301}", "f"]);
    }

    #[test]
    fn an_emoji_sequence_moves_whole_measured_as_the_terminal_draws_it() {
        // The family is three emoji of two columns each.
        let family = "👨\u{200D}👩\u{200D}👧";
        let lines = wrap(Line::from(format!("abc{family}")), 8);
        assert_eq!(texts(&lines), ["abc".to_owned(), family.to_owned()]);
    }

    #[test]
    fn styles_survive_the_split() {
        use ratatui::style::{Color, Style};
        let red = Style::new().fg(Color::Red);
        let line = Line::from(vec![Span::raw("ab"), Span::styled("cdef", red)]);
        let lines = wrap(line, 3);
        assert_eq!(texts(&lines), ["abc", "def"]);
        assert_eq!(lines[0].spans[1].style, red);
        assert_eq!(lines[1].spans[0].style, red);
        assert_eq!(texts(&wrap(Line::from(""), 4)), [""]);
    }
}
