//! mIRC formatting (bold, italic, underline, strikethrough, reverse,
//! colours) as styled segments. The codes and their arguments are read with
//! the same rules `rete_redact::display_escape` uses to strip them, and each
//! segment's text is escaped by it (through `tui::glyphs::screen_escape`,
//! which draws an emoji sequence whole), so what is drawn is what line mode
//! prints, only styled.

/// How a segment is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Format {
    /// `^B`
    pub bold: bool,
    /// `^]`
    pub italic: bool,
    /// `^_`
    pub underline: bool,
    /// `^^`
    pub strike: bool,
    /// `^V`
    pub reverse: bool,
    /// Foreground colour 0–98, from `^C`.
    pub fg: Option<u8>,
    /// Background colour 0–98.
    pub bg: Option<u8>,
}

/// `text` split at its formatting codes: (format, escaped text) pairs with
/// the codes removed. Empty segments are dropped.
pub fn segments(text: &str) -> Vec<(Format, String)> {
    let mut out = Vec::new();
    let mut format = Format::default();
    let mut run = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        let before = format;
        match c {
            '\u{02}' => format.bold = !format.bold,
            '\u{1D}' => format.italic = !format.italic,
            '\u{1F}' => format.underline = !format.underline,
            '\u{1E}' => format.strike = !format.strike,
            '\u{16}' => format.reverse = !format.reverse,
            '\u{11}' => {}
            '\u{0F}' => format = Format::default(),
            '\u{03}' => {
                let (fg, bg, used) = colour_args(rest);
                rest = &rest[used..];
                match fg {
                    None => {
                        format.fg = None;
                        format.bg = None;
                    }
                    Some(fg) => {
                        format.fg = Some(fg);
                        if bg.is_some() {
                            format.bg = bg;
                        }
                    }
                }
            }
            '\u{04}' => {
                // Hex colours are read and dropped: the 99-colour palette is
                // what terminals agree on.
                rest = &rest[hex_args(rest)..];
            }
            c => {
                run.push(c);
                continue;
            }
        }
        if format != before || c == '\u{0F}' {
            flush(&mut out, before, &mut run);
        }
    }
    flush(&mut out, format, &mut run);
    out
}

fn flush(out: &mut Vec<(Format, String)>, format: Format, run: &mut String) {
    if run.is_empty() {
        return;
    }
    let escaped = crate::tui::glyphs::screen_escape(run).into_owned();
    run.clear();
    out.push((format, escaped));
}

/// `^C`'s arguments: up to two digits, optionally `,` and up to two more.
fn colour_args(after: &str) -> (Option<u8>, Option<u8>, usize) {
    let digits = |s: &str| s.bytes().take(2).take_while(u8::is_ascii_digit).count();
    let first = digits(after);
    if first == 0 {
        return (None, None, 0);
    }
    let fg = after[..first].parse().ok();
    let rest = &after[first..];
    if let Some(tail) = rest.strip_prefix(',') {
        let second = digits(tail);
        if second > 0 {
            return (fg, tail[..second].parse().ok(), first + 1 + second);
        }
    }
    (fg, None, first)
}

/// Length of `^D`'s arguments: six hex digits, optionally `,` and six more.
fn hex_args(after: &str) -> usize {
    let hex = |s: &str| s.bytes().take(6).take_while(u8::is_ascii_hexdigit).count();
    let first = hex(after);
    if first == 0 {
        return 0;
    }
    match after[first..].strip_prefix(',') {
        Some(tail) if hex(tail) > 0 => first + 1 + hex(tail),
        _ => first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_become_formats_and_text_matches_the_stripped_line() {
        let text = "a\u{02}b\u{02}c\u{03}4,12red\u{03}plain\u{1F}u\u{0F}x\u{1b}";
        let segs = segments(text);
        let joined: String = segs.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(joined, rete_redact::display_escape(text));
        assert_eq!(segs[0], (Format::default(), "a".into()));
        assert!(segs[1].0.bold && segs[1].1 == "b");
        assert_eq!(
            (segs[3].0.fg, segs[3].0.bg, segs[3].1.as_str()),
            (Some(4), Some(12), "red")
        );
        assert_eq!((segs[4].0.fg, segs[4].1.as_str()), (None, "plain"));
        assert!(segs[5].0.underline);
        assert_eq!(segs[6], (Format::default(), "x\\u{1B}".into()));
    }

    #[test]
    fn colour_arguments_follow_the_stripping_rule() {
        assert_eq!(colour_args("04,12x"), (Some(4), Some(12), 5));
        assert_eq!(colour_args("4,x"), (Some(4), None, 1));
        assert_eq!(colour_args("123"), (Some(12), None, 2));
        assert_eq!(colour_args(",12"), (None, None, 0));
        assert_eq!(hex_args("FF00aa,000000z"), 13);
        let joined: String = segments("\u{04}FF0000red\u{03},5x")
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(
            joined,
            rete_redact::display_escape("\u{04}FF0000red\u{03},5x")
        );
    }
}
