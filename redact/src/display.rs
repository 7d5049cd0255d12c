//! Display escaping: text shown in an audit row, the AI access log or
//! reterm's screen must not be able to colour, hide or reorder its own row,
//! or look like a second one.
//!
//! mIRC formatting codes are stripped (shown as nothing, not drawn). Every
//! other character that draws nothing or changes how text is drawn is shown
//! as an escape: `\n`, `\r` and `\t` by their usual names, anything else as
//! `\u{…}` in upper-case hex (`\u{1B}`, `\u{202E}`). A backslash already in
//! the text is left alone: the escapes are for a reader, not for parsing back.

use std::borrow::Cow;
use std::fmt::Write;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

const BOLD: char = '\u{02}';
const COLOUR: char = '\u{03}';
const HEX_COLOUR: char = '\u{04}';
const RESET: char = '\u{0F}';
const MONOSPACE: char = '\u{11}';
const REVERSE: char = '\u{16}';
const ITALIC: char = '\u{1D}';
const STRIKETHROUGH: char = '\u{1E}';
const UNDERLINE: char = '\u{1F}';

/// Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties):
/// characters a renderer may draw as nothing at all.
const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFF8}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

pub(crate) fn is_formatting_code(c: char) -> bool {
    matches!(
        c,
        BOLD | COLOUR
            | HEX_COLOUR
            | RESET
            | MONOSPACE
            | REVERSE
            | ITALIC
            | STRIKETHROUGH
            | UNDERLINE
    )
}

/// True for a character that must be shown escaped: a control character, a
/// format character, a line or paragraph separator, a default-ignorable
/// character (bidi controls, variation selectors and tags among them).
fn needs_escape(c: char) -> bool {
    if c.is_control() {
        return true;
    }
    if c.is_ascii() {
        return false;
    }
    matches!(
        c.general_category(),
        GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    ) || is_default_ignorable(c)
}

/// True for a Default_Ignorable_Code_Point: a character a renderer may
/// draw as nothing at all.
pub(crate) fn is_default_ignorable(c: char) -> bool {
    !c.is_ascii()
        && DEFAULT_IGNORABLE
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// How many of the chars after a formatting code belong to it: a colour's
/// one or two digits (and `,` with one or two more), a hex colour's six hex
/// digits (and `,` with six more). A comma with no digit after it is text.
pub(crate) fn code_argument_len(code: char, after: &str) -> usize {
    let (max, is_digit): (usize, fn(u8) -> bool) = match code {
        COLOUR => (2, |b| b.is_ascii_digit()),
        HEX_COLOUR => (6, |b| b.is_ascii_hexdigit()),
        _ => return 0,
    };
    let run = |s: &[u8]| s.iter().take(max).take_while(|b| is_digit(**b)).count();
    let bytes = after.as_bytes();
    let first = run(bytes);
    if first == 0 {
        return 0;
    }
    match bytes.get(first) {
        Some(b',') => {
            let second = run(&bytes[first + 1..]);
            if second == 0 {
                first
            } else {
                first + 1 + second
            }
        }
        _ => first,
    }
}

/// Display escaping for audit rows, the AI access log and reterm's screen:
/// mIRC formatting codes stripped, and control, format, default-ignorable
/// and bidi characters shown as escapes (`\n`, `\r`, `\t`, else `\u{1B}`
/// style, upper-case hex). Text with nothing to escape is borrowed.
pub fn display_escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        if is_formatting_code(c) {
            // Arguments are ASCII digits, so the byte count is a char boundary.
            rest = &rest[code_argument_len(c, rest)..];
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{{{:X}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The AI access log's escaping: every character [`display_escape`] escapes
/// is escaped the same way, and nothing is stripped — mIRC formatting codes
/// included (`\u{2}`), since the log shows what an agent sent, not text to
/// draw. Text with nothing to escape is borrowed.
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{{{:X}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_invisible_escapes_what_display_escape_does_and_strips_nothing() {
        assert_eq!(escape_invisible("plain é"), "plain é");
        assert_eq!(
            escape_invisible("a\u{2}b\u{3}4c\n\u{202E}\u{200B}"),
            "a\\u{2}b\\u{3}4c\\n\\u{202E}\\u{200B}"
        );
        for c in [
            '\u{1B}',
            '\u{AD}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{2028}',
            '\u{FE0F}',
        ] {
            let t = c.to_string();
            assert_eq!(escape_invisible(&t), display_escape(&t), "{:X}", c as u32);
        }
    }

    #[test]
    fn colour_arguments() {
        assert_eq!(code_argument_len(COLOUR, "04,12x"), 5);
        assert_eq!(code_argument_len(COLOUR, "4,x"), 1);
        assert_eq!(code_argument_len(COLOUR, "123"), 2);
        assert_eq!(code_argument_len(COLOUR, ",12"), 0);
        assert_eq!(code_argument_len(HEX_COLOUR, "FF00aa,000000z"), 13);
        assert_eq!(code_argument_len(BOLD, "12"), 0);
    }
}
