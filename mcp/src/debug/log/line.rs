//! One log line as the ring keeps it, and how an event's message and fields
//! become its text: masked first, then cut.
//!
//! # Format
//! The text is the event's message, then, when the event has other fields,
//! a space and the fields as one compact JSON object (`connected
//! {"peer":"127.0.0.1:6667","session":"…"}`). Fields are JSON so that the
//! secret-key rule can pair every secret-named field with its value.
//!
//! Masking follows the contract's rule for Rete's own log lines: the fields
//! object has every secret-named member masked (`rete_redact::mask_json`),
//! then the whole text goes through `rete_redact::mask_frame`, which masks
//! the JSON parts inside a message by pattern and replaces a text that names
//! a secret field it cannot pair with a value by a one-line note. Only then
//! is the line cut at `MAX_LINE_BYTES`, so a cut never hides a secret
//! field's name from the masking.

use super::level::{Category, Level};
use rete_engine::clock::UnixMillis;
use serde_json::{Map, Value};

/// A line longer than this is stored cut: this many bytes of it (fewer
/// when a character straddles the cut), then `…[+N bytes]`.
pub(crate) const MAX_LINE_BYTES: usize = 2_048;

/// One line in the ring.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    /// The ring's sequence number: strictly increasing for the process,
    /// never reused (a clear leaves a gap).
    pub(crate) seq: u64,
    /// When the event happened.
    pub(crate) time: UnixMillis,
    /// Its level.
    pub(crate) level: Level,
    /// Its category.
    pub(crate) category: Category,
    /// The masked text, cut when longer than [`MAX_LINE_BYTES`].
    pub(crate) text: Box<str>,
    /// When the text was cut: how many bytes of it are the original's (the
    /// rest is the `…[+N bytes]` marker), for the check that a cut did not
    /// fall inside a secret.
    pub(crate) kept: Option<usize>,
}

impl LogLine {
    /// The part of the text that came from the event: all of it, or what a
    /// cut kept.
    pub(crate) fn kept_text(&self) -> &str {
        match self.kept {
            Some(n) => self.text.get(..n).unwrap_or(&self.text),
            None => &self.text,
        }
    }
}

/// A line before the ring numbers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    /// When the event happened.
    pub(crate) time: UnixMillis,
    /// Its level.
    pub(crate) level: Level,
    /// Its category.
    pub(crate) category: Category,
    /// The masked, cut text.
    pub(crate) text: Box<str>,
    /// See [`LogLine::kept`].
    pub(crate) kept: Option<usize>,
}

impl Draft {
    /// The line from an event's message and its other fields: masked, then
    /// cut (see the module docs).
    pub fn new(
        time: UnixMillis,
        level: Level,
        category: Category,
        message: &str,
        fields: Map<String, Value>,
    ) -> Draft {
        let mut text = String::with_capacity(message.len() + 32);
        text.push_str(message);
        if !fields.is_empty() {
            let mut fields = Value::Object(fields);
            rete_redact::mask_json(&mut fields);
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&fields.to_string());
        }
        let masked = rete_redact::mask_frame(&text);
        let (text, kept) = cut(masked);
        Draft {
            time,
            level,
            category,
            text,
            kept,
        }
    }

    /// The line numbered `seq`.
    pub fn numbered(self, seq: u64) -> LogLine {
        LogLine {
            seq,
            time: self.time,
            level: self.level,
            category: self.category,
            text: self.text,
            kept: self.kept,
        }
    }
}

/// `text` as stored: whole, or its first [`MAX_LINE_BYTES`] (on a character
/// boundary) and `…[+N bytes]` with the number of bytes dropped; and how
/// many bytes were kept when it was cut.
pub(crate) fn cut(text: String) -> (Box<str>, Option<usize>) {
    if text.len() <= MAX_LINE_BYTES {
        return (text.into_boxed_str(), None);
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let dropped = text.len() - end;
    let mut out = text;
    out.truncate(end);
    out.push_str(&format!("…[+{dropped} bytes]"));
    (out.into_boxed_str(), Some(end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn draft(message: &str, fields: Value) -> Draft {
        let Value::Object(map) = fields else {
            panic!("fields are an object")
        };
        Draft::new(UnixMillis(0), Level::Info, Category::App, message, map)
    }

    #[test]
    fn fields_follow_the_message_as_json() {
        let d = draft("connected", json!({"peer": "127.0.0.1:6667", "tls": false}));
        assert_eq!(
            &*d.text,
            r#"connected {"peer":"127.0.0.1:6667","tls":false}"#
        );
        assert_eq!(&*draft("plain", json!({})).text, "plain");
    }

    #[test]
    fn secret_named_fields_are_masked() {
        let d = draft("login", json!({"password": "hunter22", "user": "bob"}));
        assert_eq!(&*d.text, r#"login {"password":"********","user":"bob"}"#);
        let d = draft(r#"frame {"authToken": "abc123", "n": 1} sent"#, json!({}));
        assert_eq!(&*d.text, r#"frame {"authToken": "********", "n": 1} sent"#);
        let d = draft(
            r#"config {"key":"sasl_password","value":"hunter22"}"#,
            json!({}),
        );
        assert!(!d.text.contains("hunter22"), "{}", d.text);
    }

    #[test]
    fn an_unpairable_secret_field_becomes_a_note() {
        let d = draft(r#"missing field "password" in reply"#, json!({}));
        assert_eq!(
            &*d.text,
            "(withheld: names a secret field that could not be masked, 33 bytes)"
        );
    }

    #[test]
    fn long_lines_are_cut_with_the_dropped_count() {
        let (t, kept) = cut("a".repeat(3000));
        assert_eq!(kept, Some(2048));
        assert_eq!(t.len(), 2048 + "…[+952 bytes]".len());
        assert!(t.ends_with("a…[+952 bytes]"));
        let (t, kept) = cut("a".repeat(2048));
        assert_eq!((t.len(), kept), (2048, None));
        // A character straddling byte 2048 is dropped whole.
        let (t, kept) = cut(format!("{}é{}", "a".repeat(2047), "b".repeat(10)));
        assert_eq!(kept, Some(2047));
        assert!(t.ends_with("a…[+12 bytes]"), "{t}");
        let line = draft(&"x".repeat(5000), json!({})).numbered(1);
        assert_eq!(line.kept_text(), "x".repeat(2048));
    }
}
