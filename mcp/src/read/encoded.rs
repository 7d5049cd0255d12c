//! A result encoded for the one place it is sent: the content of the
//! tools/call answer's text item, which is a JSON string.
//!
//! The result's compact JSON is escaped again as that string's content. Both
//! happen in one serialization here: a formatter writes each token of the
//! JSON as it appears inside the string (a quote as `\"`, an escape as its
//! escaped escape), so a result is neither written out as JSON first and
//! then escaped, nor built as a `Value` to be written. The length of the
//! JSON itself, which the budget and the access log count, is kept beside
//! it.

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, Serializer};
use serde_json::Value;
use std::io;

/// JSON text escaped as the content of a JSON string, and the length of the
/// JSON text itself.
///
/// The JSON is compact with sorted keys when it comes from a `Value` or from
/// a struct whose fields are declared in sorted order (a struct is written in
/// declaration order): the bytes `serde_json::to_string` writes for it, which
/// [`crate::read::result::encode`] writes for the same object as a `Value`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// UTF-8: what serde_json writes for a str keeps its runs whole, and
    /// every escape written here is ASCII. Kept as bytes, which is what the
    /// answer's body is, so it is never validated again.
    escaped: Vec<u8>,
    len: usize,
}

impl Encoded {
    /// Nothing yet, with room for `escaped` bytes of escaped text.
    pub(crate) fn with_capacity(escaped: usize) -> Encoded {
        Encoded {
            escaped: Vec::with_capacity(escaped),
            len: 0,
        }
    }

    /// `value` as JSON, escaped. See the type for when the JSON is what a
    /// `Value` of the same object would encode to.
    pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> Encoded {
        let mut out = Encoded::with_capacity(256);
        out.push_value(value);
        out
    }

    /// Any text (an error's text, a result already encoded), escaped.
    pub(crate) fn text(text: &str) -> Encoded {
        let mut out = Encoded::with_capacity(text.len() + text.len() / 8 + 16);
        out.push_json(text);
        out
    }

    /// Appends `value` as JSON, escaped.
    pub(crate) fn push_value<T: Serialize + ?Sized>(&mut self, value: &T) {
        let start = self.escaped.len();
        let mut extra = 0;
        let written = value.serialize(&mut Serializer::with_formatter(
            &mut self.escaped,
            Escaping { extra: &mut extra },
        ));
        // Serializing into a Vec fails only for a value serde_json cannot
        // write at all (a map with non-string keys), which no result holds;
        // what was written of it is dropped.
        if written.is_err() {
            self.escaped.truncate(start);
            extra = 0;
        }
        self.len += self.escaped.len() - start - extra;
    }

    /// Appends `json` (any text: pieces of JSON written by hand, between
    /// values), escaped.
    pub(crate) fn push_json(&mut self, json: &str) {
        self.len += json.len();
        escape_into(&mut self.escaped, json.as_bytes(), Level::Once);
    }

    /// Appends `value` as a JSON string, escaped: its quotes as `\"`, its
    /// escapes escaped once more.
    pub(crate) fn push_string(&mut self, value: &str) {
        self.escaped.extend_from_slice(br#"\""#);
        let start = self.escaped.len();
        // Each backslash written for the text's escapes is one the JSON
        // itself does not have.
        let backslashes = escape_into(&mut self.escaped, value.as_bytes(), Level::Twice);
        self.len += 2 + (self.escaped.len() - start) - backslashes;
        self.escaped.extend_from_slice(br#"\""#);
    }

    /// Appends another encoded piece.
    pub(crate) fn push(&mut self, other: &Encoded) {
        self.escaped.extend_from_slice(&other.escaped);
        self.len += other.len;
    }

    /// The escaped text, to be written between the quotes of a JSON string.
    pub(crate) fn escaped(&self) -> &[u8] {
        &self.escaped
    }

    /// The length in bytes of the text itself (before escaping).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The text itself, unescaped, as a client reads it from the string.
    pub(crate) fn unescape(&self) -> serde_json::Result<String> {
        let mut quoted = Vec::with_capacity(self.escaped.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&self.escaped);
        quoted.push(b'"');
        serde_json::from_slice(&quoted)
    }

    /// The text decoded as JSON, as a client reads the result.
    pub fn decode(&self) -> serde_json::Result<Value> {
        serde_json::from_str(&self.unescape()?)
    }
}

/// How many times text is escaped: once for text that is the string's
/// content, twice for a string inside the JSON that is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Once,
    Twice,
}

/// Appends `text` escaped as serde_json escapes a string's content (a quote,
/// a backslash, and each control character as `\b`, `\f`, `\n`, `\r`,
/// `\t` or `\u00xx`; nothing else), once or twice; returns how many of the
/// bytes written are the second level's backslashes.
fn escape_into(out: &mut Vec<u8>, text: &[u8], level: Level) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Most text has nothing to escape: names, nicks, keys. Seeing that in
    // one pass the compiler can vectorize, then copying it whole, costs a
    // fraction of the byte-by-byte walk below.
    if !needs_escape(text) {
        out.extend_from_slice(text);
        return 0;
    }
    out.reserve(text.len());
    let mut added = 0;
    let mut run = 0;
    let mut i = 0;
    while i < text.len() {
        let short = ESCAPE[usize::from(text[i])];
        if short == 0 {
            i += 1;
            continue;
        }
        let byte = text[i];
        out.extend_from_slice(&text[run..i]);
        i += 1;
        run = i;
        if level == Level::Twice {
            // Escaped again: the escape's backslash gets one more, and so
            // does a quote or backslash after it.
            out.push(b'\\');
            added += 1;
            if short == b'"' || short == b'\\' {
                out.extend_from_slice(br"\\");
                added += 1;
            } else {
                out.push(b'\\');
            }
        } else {
            out.push(b'\\');
        }
        if short == b'u' {
            out.extend_from_slice(&[
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xF)],
            ]);
        } else {
            out.push(short);
        }
    }
    out.extend_from_slice(&text[run..]);
    added
}

/// Whether any byte of `text` has an escape in [`ESCAPE`]: a control
/// character, a quote or a backslash. Each block of 16 bytes is folded whole
/// rather than stopped at its first hit, which lets the compiler check it in
/// a few vector instructions.
fn needs_escape(text: &[u8]) -> bool {
    let escaped = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut blocks = text.chunks_exact(16);
    for block in &mut blocks {
        if block.iter().fold(false, |any, &b| any | escaped(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| escaped(b))
}

/// Each byte's short escape (`u` for `\u00xx`), or 0 when it is written as
/// it is: serde_json's own table.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x0c] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Writes compact JSON as it appears escaped inside a JSON string, and
/// counts the bytes the escaping added: every token that is not part of a
/// string (braces, brackets, commas, colons, numbers, literals) needs no
/// escaping, and a string's unescaped runs neither (they hold no quote,
/// backslash or control character), so only a string's quotes and its
/// escapes are written differently.
struct Escaping<'a> {
    extra: &'a mut usize,
}

impl Formatter for Escaping<'_> {
    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        *self.extra += 1;
        writer.write_all(br#"\""#)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        *self.extra += 1;
        writer.write_all(br#"\""#)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        // The escape as compact JSON writes it, then escaped once more: its
        // backslash (and a quote's quote) doubled.
        let escaped: &[u8] = match char_escape {
            CharEscape::Quote => br#"\\\""#,
            CharEscape::ReverseSolidus => br"\\\\",
            CharEscape::Solidus => br"\\/",
            CharEscape::Backspace => br"\\b",
            CharEscape::FormFeed => br"\\f",
            CharEscape::LineFeed => br"\\n",
            CharEscape::CarriageReturn => br"\\r",
            CharEscape::Tab => br"\\t",
            CharEscape::AsciiControl(byte) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xF)]];
                *self.extra += 1;
                writer.write_all(br"\\u00")?;
                return writer.write_all(&hex);
            }
        };
        // Quote and reverse solidus are two bytes of JSON written as four;
        // the others two as three.
        *self.extra += match char_escape {
            CharEscape::Quote | CharEscape::ReverseSolidus => 2,
            _ => 1,
        };
        writer.write_all(escaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AWKWARD: &str =
        "quote \" backslash \\ slash / line\nbreak cr\r tab\t bs\u{8} ff\u{c} nul\u{0} esc\u{1b} del\u{7f} bidi\u{202e} é 😀";

    /// What the answer's envelope writes for `text`: serde_json's own
    /// string escaping, without the quotes.
    fn escaped_by_serde(text: &str) -> Vec<u8> {
        let quoted = serde_json::to_string(text).unwrap();
        quoted.as_bytes()[1..quoted.len() - 1].to_vec()
    }

    #[test]
    fn a_value_is_its_encoding_escaped() {
        for value in [
            json!({}),
            json!([]),
            json!(AWKWARD),
            json!({"b": [1, -2.5, null, true, false, 12345678901234567890u64], "a": {AWKWARD: AWKWARD}}),
            json!({"sessions": [{"name": "x".repeat(5_000), "nick": "\u{1f}"}], "untrusted": true}),
        ] {
            let text = crate::read::result::encode(&value);
            let e = Encoded::of(&value);
            assert_eq!(e.escaped(), escaped_by_serde(&text), "{value}");
            assert_eq!(e.len(), text.len(), "{value}");
            assert_eq!(e.unescape().unwrap(), text);
            assert_eq!(e.decode().unwrap(), value);
        }
    }

    #[test]
    fn every_control_character_is_escaped_as_serde_escapes_it() {
        for byte in 0u8..0x80 {
            let s = char::from(byte).to_string();
            let value = json!({ "k": s });
            let text = crate::read::result::encode(&value);
            let e = Encoded::of(&value);
            assert_eq!(e.escaped(), escaped_by_serde(&text), "byte {byte:#x}");
            assert_eq!(e.len(), text.len(), "byte {byte:#x}");
            let t = Encoded::text(&s);
            assert_eq!(t.escaped(), escaped_by_serde(&s), "byte {byte:#x}");
            assert_eq!(t.len(), 1);
            let mut by_hand = Encoded::default();
            by_hand.push_json(r#"{"k":"#);
            by_hand.push_string(&s);
            by_hand.push_json("}");
            assert_eq!(by_hand, e, "byte {byte:#x}");
        }
    }

    #[test]
    fn the_quick_check_agrees_with_the_table() {
        for byte in 0..=u8::MAX {
            let has = ESCAPE[usize::from(byte)] != 0;
            assert_eq!(needs_escape(&[byte]), has, "byte {byte:#x}");
            let long = [&b"plain text long enough to fill a vector"[..], &[byte]].concat();
            assert_eq!(needs_escape(&long), has, "byte {byte:#x} at the end");
        }
        assert!(!needs_escape(b""));
    }

    #[test]
    fn pieces_add_up_to_their_whole() {
        let row = json!({"id": AWKWARD, "n": 1});
        let mut whole = Encoded::text(r#"{"rows":["#);
        whole.push(&Encoded::of(&row));
        whole.push_json(",");
        whole.push_value(&row);
        whole.push_json(r#"],"untrusted":true}"#);
        let value = json!({"rows": [row, row], "untrusted": true});
        assert_eq!(whole, Encoded::of(&value));
        assert_eq!(whole, Encoded::text(&crate::read::result::encode(&value)));
        assert_eq!(Encoded::text(AWKWARD).unescape().unwrap(), AWKWARD);
        let mut string = Encoded::default();
        string.push_string(AWKWARD);
        assert_eq!(string, Encoded::of(AWKWARD));
        assert!(Encoded::default().is_empty());
    }
}
