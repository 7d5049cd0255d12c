//! Text as it is drawn: mIRC formatting codes (with a colour's digits) and
//! Unicode default-ignorable characters removed.
//!
//! Both draw nothing, so a reader sees `IDENTIFY` in `\x02IDENTIFY\x02` and a
//! password in `hun\u{200B}ter22`. The rules read a line's command, targets
//! and service verb as drawn, and the secret scan looks for a secret in text
//! as drawn too; what is masked is always the text as written.

use crate::display::{code_argument_len, is_default_ignorable, is_formatting_code};
use std::borrow::Cow;

/// True for a byte that may begin something drawing removes: a formatting
/// code, or the lead byte of a default-ignorable character (all of them lie
/// in U+00AD, U+034F, U+061C, U+115F–U+180F, U+200B–U+206F, U+3164,
/// U+FE00–U+FFF8, U+1BCA0–U+1D17A and U+E0000–U+E0FFF). A byte scan, so
/// plain text (ASCII, or another script's letters) is never decoded.
fn may_hide(b: u8) -> bool {
    matches!(
        b,
        0x02 | 0x03
            | 0x04
            | 0x0F
            | 0x11
            | 0x16
            | 0x1D
            | 0x1E
            | 0x1F
            | 0xC2
            | 0xCD
            | 0xD8
            | 0xE1
            | 0xE2
            | 0xE3
            | 0xEF
            | 0xF0
            | 0xF3
    )
}

fn hides(c: char) -> bool {
    is_formatting_code(c) || is_default_ignorable(c)
}

/// True when drawing `text` removes something from it.
pub(crate) fn hides_anything(text: &str) -> bool {
    text.bytes().any(may_hide) && text.chars().any(hides)
}

/// Calls `keep` with each character of `text` that is drawn and its byte
/// offset in `text`.
fn for_each_drawn(text: &str, mut keep: impl FnMut(usize, char)) {
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let next = i + c.len_utf8();
        if is_formatting_code(c) {
            // Arguments are ASCII digits, so the byte count is a char boundary.
            i = next + code_argument_len(c, &text[next..]);
            continue;
        }
        if !is_default_ignorable(c) {
            keep(i, c);
        }
        i = next;
    }
}

/// `text` as drawn: formatting codes and default-ignorable characters
/// removed, nothing else changed. Borrowed when there is none.
pub(crate) fn drawn(text: &str) -> Cow<'_, str> {
    if !hides_anything(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for_each_drawn(text, |_, c| out.push(c));
    Cow::Owned(out)
}

/// `text` as drawn, and where each of its bytes came from, so a match found
/// in what is drawn can be masked in what was written.
pub(crate) struct DrawnMap {
    /// The text as drawn.
    pub text: String,
    /// For each byte of `text`, its offset in the original.
    from: Vec<usize>,
}

impl DrawnMap {
    pub(crate) fn new(original: &str) -> DrawnMap {
        let mut text = String::with_capacity(original.len());
        let mut from = Vec::with_capacity(original.len());
        for_each_drawn(original, |at, c| {
            text.push(c);
            from.extend(at..at + c.len_utf8());
        });
        DrawnMap { text, from }
    }

    /// The range of the original that drawn bytes `start..end` (a non-empty
    /// range on char boundaries) came from, any hidden characters between
    /// them included.
    pub(crate) fn original(&self, start: usize, end: usize) -> (usize, usize) {
        (self.from[start], self.from[end - 1] + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_ignorables_are_not_drawn() {
        assert_eq!(drawn("\u{2}IDENTIFY\u{2}"), "IDENTIFY");
        assert_eq!(drawn("hun\u{200B}ter\u{AD}22\u{E0041}"), "hunter22");
        assert_eq!(drawn("a\u{3}04,12b\u{4}FF00AAc\u{F}"), "abc");
        assert!(matches!(drawn("plain é текст"), Cow::Borrowed(_)));
        assert!(matches!(drawn("\u{A0}nbsp"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_drawn_range_maps_back_to_what_was_written() {
        let original = "x \u{2}hu\u{200B}n\u{3}04ter é";
        let map = DrawnMap::new(original);
        assert_eq!(map.text, "x hunter é");
        let at = map.text.find("hunter").unwrap();
        let (s, e) = map.original(at, at + "hunter".len());
        assert_eq!(&original[s..e], "hu\u{200B}n\u{3}04ter");
        let at = map.text.find('é').unwrap();
        assert_eq!(
            map.original(at, at + 2),
            (original.len() - 2, original.len())
        );
    }
}
