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
