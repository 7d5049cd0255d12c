//! Text as terminal cells. The screen is laid out by grapheme cluster (UAX
//! #29, from `unicode-segmentation`): a cluster is never split across two
//! lines, and an emoji sequence (a ZWJ between two emoji, a skin tone, a
//! flag, a keycap) is drawn as it came rather than escaped.
//!
//! A cluster is drawn as the cells a terminal gives it: each character that
//! takes room starts a cell, and the zero-width ones after it (a ZWJ, a
//! variation selector, a combining mark) ride in that cell, which is how
//! terminals without grapheme support (xterm, tmux, the `vt100` crate)
//! place them. Handing ratatui the whole cluster as one two-column cell
//! made such a terminal draw more columns than reterm had reserved: a skin
//! tone was overwritten by the next character, and the cells past a line's
//! end kept stray halves no redraw cleared. A terminal that joins clusters
//! shows the parts side by side instead, in the same columns.

use std::borrow::Cow;
use unicode_segmentation::UnicodeSegmentation as _;
use unicode_width::UnicodeWidthStr as _;

const ZWJ: char = '\u{200D}';
const EMOJI_PRESENTATION: char = '\u{FE0F}';

/// Whether `c` is an emoji base a sequence is built from (pictographs,
/// dingbats and symbols, regional indicators for flags).
fn is_emoji(c: char) -> bool {
    matches!(c,
        '\u{1F000}'..='\u{1FAFF}'
        | '\u{2190}'..='\u{21FF}'
        | '\u{2300}'..='\u{23FF}'
        | '\u{2460}'..='\u{24FF}'
        | '\u{25A0}'..='\u{27BF}'
        | '\u{2900}'..='\u{297F}'
        | '\u{2B00}'..='\u{2BFF}'
        | '\u{3030}' | '\u{303D}' | '\u{3297}' | '\u{3299}'
        | '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}')
}

/// Whether the cluster `g` is an emoji sequence: emoji joined by ZWJ, with
/// presentation selectors, skin tones (themselves emoji), tag characters
/// (subdivision flags) and the keycap mark — and nothing else invisible.
fn is_emoji_sequence(g: &str) -> bool {
    let mut chars = g.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let keycap_base = first.is_ascii_digit() || first == '#' || first == '*';
    if !is_emoji(first) && !keycap_base {
        return false;
    }
    let mut previous = first;
    for c in chars {
        let fits = match c {
            // A ZWJ only between two emoji: never first, last or doubled.
            ZWJ => previous != ZWJ,
            EMOJI_PRESENTATION | '\u{20E3}' | '\u{E0020}'..='\u{E007F}' => true,
            c => is_emoji(c) && (previous == ZWJ || !keycap_base),
        };
        if !fits {
            return false;
        }
        previous = c;
    }
    previous != ZWJ && (!keycap_base || g.contains('\u{20E3}'))
}

/// `text` escaped for the screen as `rete_redact::display_escape` does
/// (mIRC codes stripped; control, invisible and bidi characters shown as
/// `\u{…}`), except that an emoji sequence keeps its ZWJs and selectors.
/// Borrowed when nothing changes.
pub fn screen_escape(text: &str) -> Cow<'_, str> {
    let escaped = rete_redact::display_escape(text);
    if matches!(escaped, Cow::Borrowed(_))
        || !text.contains([ZWJ, EMOJI_PRESENTATION, '\u{20E3}'])
            && !text
                .chars()
                .any(|c| ('\u{E0020}'..='\u{E007F}').contains(&c))
    {
        return escaped;
    }
    // Escape the runs between emoji sequences; a run keeps a formatting
    // code with its colour digits, which are never emoji.
    let mut out = String::with_capacity(text.len());
    let mut run_start = 0;
    for (at, g) in text.grapheme_indices(true) {
        if is_emoji_sequence(g) {
            out.push_str(&rete_redact::display_escape(&text[run_start..at]));
            out.push_str(g);
            run_start = at + g.len();
        }
    }
    out.push_str(&rete_redact::display_escape(&text[run_start..]));
    Cow::Owned(out)
}

/// The cells of `text`, in order: each character that takes room with the
/// zero-width characters after it. Zero-width characters with nothing
/// before them make a cell of width 0 (the caller skips it).
pub fn cells(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        let mut chars = rest.char_indices();
        chars.next()?;
        let end = chars
            .find(|(_, c)| unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0) > 0)
            .map_or(rest.len(), |(i, _)| i);
        let (cell, tail) = rest.split_at(end);
        rest = tail;
        Some(cell)
    })
}

/// Columns one cell takes, as ratatui and the terminal measure it.
pub fn cell_width(cell: &str) -> usize {
    cell.width()
}

/// Columns `text` takes, drawn as [`cells`].
pub fn text_width(text: &str) -> usize {
    cells(text).map(cell_width).sum()
}

/// The grapheme clusters of `text`, each with the columns it takes: the
/// units a line is wrapped in.
pub fn clusters(text: &str) -> impl Iterator<Item = (&str, usize)> + '_ {
    text.graphemes(true).map(|g| (g, text_width(g)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILY: &str = "👨\u{200D}👩\u{200D}👧";
    const THUMB: &str = "👍\u{1F3FD}";
    const FLAG: &str = "🇫🇷";
    const RAINBOW: &str = "🏳\u{FE0F}\u{200D}🌈";

    #[test]
    fn emoji_sequences_are_drawn_and_invisible_characters_elsewhere_escaped() {
        for seq in [
            FAMILY,
            THUMB,
            FLAG,
            RAINBOW,
            "❤\u{FE0F}",
            "1\u{FE0F}\u{20E3}",
        ] {
            let text = format!("a {seq} b");
            assert_eq!(screen_escape(&text), text, "{seq:?}");
        }
        // A ZWJ not between two emoji stays escaped, and so does the rest.
        assert_eq!(screen_escape("a\u{200D}b"), "a\\u{200D}b");
        assert_eq!(screen_escape("👨\u{200D}"), "👨\\u{200D}");
        assert_eq!(
            screen_escape(&format!("\u{202E}{FAMILY}\u{1B}[2J")),
            format!("\\u{{202E}}{FAMILY}\\u{{1B}}[2J")
        );
        // mIRC codes are still stripped, colour digits with them.
        assert_eq!(
            screen_escape(&format!("\u{3}4red{FAMILY}\u{3}")),
            format!("red{FAMILY}")
        );
        assert_eq!(screen_escape("plain"), "plain");
    }

    #[test]
    fn cells_follow_the_terminal_and_clusters_are_measured_by_them() {
        assert_eq!(
            cells(FAMILY).collect::<Vec<_>>(),
            ["👨\u{200D}", "👩\u{200D}", "👧"]
        );
        assert_eq!(cells(THUMB).collect::<Vec<_>>(), ["👍", "\u{1F3FD}"]);
        assert_eq!(cells("e\u{301}x").collect::<Vec<_>>(), ["e\u{301}", "x"]);
        assert_eq!(text_width(FAMILY), 6);
        assert_eq!(text_width(THUMB), 4);
        assert_eq!(text_width(FLAG), 2);
        let text = format!("a{THUMB}b");
        let units: Vec<_> = clusters(&text).collect();
        assert_eq!(units, [("a", 1), (THUMB, 4), ("b", 1)]);
    }
}
