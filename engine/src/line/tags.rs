//! IRCv3 message tags: lazy iteration over a raw tag section and the value
//! escaping rules of the message-tags specification.

use std::borrow::Cow;

/// One message tag, with its value already unescaped.
///
/// A tag sent without a value (`@key`) and one sent with an empty value
/// (`@key=`) both give an empty `value`: the specification makes them equal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag<'a> {
    /// The key as sent, including any `+` client prefix and vendor (`+draft/reply`).
    pub key: &'a str,
    /// The unescaped value; borrowed from the line unless it held escapes.
    pub value: Cow<'a, str>,
}

/// Iterates the tags of a line in the order they were sent.
///
/// Keys are not de-duplicated here (that would need an allocation); callers
/// that want "last one wins" use [`crate::line::Line::tag`] or collect into a map.
/// Empty items (`@a;;b`) and items with an empty key (`@=x`) are skipped because
/// no one can ask for them by name.
#[derive(Clone, Debug)]
pub struct TagIter<'a> {
    raw: RawTags<'a>,
}

impl<'a> TagIter<'a> {
    /// Iterates over a raw tag section (without the leading `@`).
    pub(crate) fn new(raw: &'a str) -> Self {
        TagIter {
            raw: RawTags { rest: raw },
        }
    }
}

impl<'a> Iterator for TagIter<'a> {
    type Item = Tag<'a>;

    fn next(&mut self) -> Option<Tag<'a>> {
        self.raw.next().map(|(key, raw_value)| Tag {
            key,
            value: unescape_tag_value(raw_value),
        })
    }
}

/// Yields `(key, still-escaped value)` pairs, skipping items with an empty key.
#[derive(Clone, Debug)]
struct RawTags<'a> {
    rest: &'a str,
}

impl<'a> Iterator for RawTags<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        while !self.rest.is_empty() {
            let item = match memchr::memchr(b';', self.rest.as_bytes()) {
                Some(i) => {
                    let item = &self.rest[..i];
                    self.rest = &self.rest[i + 1..];
                    item
                }
                None => std::mem::take(&mut self.rest),
            };
            let (key, value) = split_item(item);
            if !key.is_empty() {
                return Some((key, value));
            }
        }
        None
    }
}

/// Splits `key=value` at the first `=`; a missing `=` means an empty value.
fn split_item(item: &str) -> (&str, &str) {
    match memchr::memchr(b'=', item.as_bytes()) {
        Some(i) => (&item[..i], &item[i + 1..]),
        None => (item, ""),
    }
}

/// Finds the value of `key` among raw tags; a later duplicate overrides an earlier one.
pub(crate) fn find_tag<'a>(raw: &'a str, key: &str) -> Option<Cow<'a, str>> {
    // Compare raw keys first and unescape only the winning value.
    RawTags { rest: raw }
        .filter(|(k, _)| *k == key)
        .last()
        .map(|(_, v)| unescape_tag_value(v))
}

/// Undoes IRCv3 tag-value escaping.
///
/// `\:` → `;`, `\s` → space, `\\` → `\`, `\r` → CR, `\n` → LF; any other
/// escaped character stands for itself and a lone trailing `\` is dropped, as
/// the specification asks. Borrows when there is nothing to unescape, which
/// is the common case.
pub fn unescape_tag_value(v: &str) -> Cow<'_, str> {
    let Some(first) = memchr::memchr(b'\\', v.as_bytes()) else {
        return Cow::Borrowed(v);
    };
    let mut out = String::with_capacity(v.len());
    out.push_str(&v[..first]);
    let mut rest = &v[first..];
    // Invariant: `rest` starts with a backslash.
    loop {
        let mut chars = rest[1..].chars();
        match chars.next() {
            None => break,
            Some(escaped) => out.push(unescaped_char(escaped)),
        }
        let after = chars.as_str();
        match memchr::memchr(b'\\', after.as_bytes()) {
            Some(i) => {
                out.push_str(&after[..i]);
                rest = &after[i..];
            }
            None => {
                out.push_str(after);
                break;
            }
        }
    }
    Cow::Owned(out)
}

/// The character an escape sequence `\c` stands for.
fn unescaped_char(c: char) -> char {
    match c {
        ':' => ';',
        's' => ' ',
        'r' => '\r',
        'n' => '\n',
        other => other,
    }
}

/// Appends `v` to `out` with IRCv3 tag-value escaping applied.
///
/// The inverse of [`unescape_tag_value`]: `;`, space, `\`, CR and LF are the
/// characters that would end the value or the line, so they are escaped.
/// NUL cannot be escaped; [`crate::line::OutLine::write_to`] rejects it before
/// calling this.
pub fn escape_tag_value(v: &str, out: &mut String) {
    let bytes = v.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b';' => "\\:",
            b' ' => "\\s",
            b'\\' => "\\\\",
            b'\r' => "\\r",
            b'\n' => "\\n",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `start..i` is on char boundaries.
        out.push_str(&v[start..i]);
        out.push_str(escape);
        start = i + 1;
    }
    out.push_str(&v[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(v: &str) -> String {
        let mut s = String::new();
        escape_tag_value(v, &mut s);
        s
    }

    #[test]
    fn unescape_borrows_when_nothing_to_do() {
        assert!(matches!(
            unescape_tag_value("plain"),
            Cow::Borrowed("plain")
        ));
        assert!(matches!(unescape_tag_value(""), Cow::Borrowed("")));
    }

    #[test]
    fn unescape_known_sequences() {
        assert_eq!(unescape_tag_value(r"a\:b\sc\\d\re\nf"), "a;b c\\d\re\nf");
    }

    #[test]
    fn unescape_unknown_sequence_keeps_the_character() {
        assert_eq!(unescape_tag_value(r"value\1"), "value1");
        assert_eq!(unescape_tag_value(r"\é\x"), "éx");
    }

    #[test]
    fn unescape_drops_lone_trailing_backslash() {
        assert_eq!(unescape_tag_value("value1\\"), "value1");
        assert_eq!(unescape_tag_value("\\"), "");
        assert_eq!(unescape_tag_value("a\\\\\\"), "a\\");
    }

    #[test]
    fn unescape_is_char_at_a_time() {
        // `\\n` is an escaped backslash followed by a plain `n`, not a newline.
        assert_eq!(unescape_tag_value(r"value\\ntest"), "value\\ntest");
    }

    #[test]
    fn escape_all_specials() {
        assert_eq!(escaped("a;b c\\d\re\nf"), r"a\:b\sc\\d\re\nf");
        assert_eq!(escaped("héllo"), "héllo");
        assert_eq!(escaped(""), "");
    }

    #[test]
    fn escape_then_unescape_round_trips() {
        for v in ["", "x", ";;", " \\ ", "\r\n", "mixé; \\s"] {
            assert_eq!(unescape_tag_value(&escaped(v)), v);
        }
    }

    #[test]
    fn iter_skips_empty_items_and_keys() {
        let tags: Vec<_> = TagIter::new(";a=1;;=x;b;c=").collect();
        let pairs: Vec<_> = tags.iter().map(|t| (t.key, t.value.as_ref())).collect();
        assert_eq!(pairs, [("a", "1"), ("b", ""), ("c", "")]);
    }

    #[test]
    fn iter_value_may_contain_equals() {
        let tag = TagIter::new("k=a=b").next();
        assert_eq!(tag.map(|t| t.value.into_owned()), Some("a=b".to_owned()));
    }

    #[test]
    fn find_tag_last_duplicate_wins() {
        assert_eq!(find_tag("a=1;b=2;a=3", "a").as_deref(), Some("3"));
        assert_eq!(find_tag("a=1;b", "b").as_deref(), Some(""));
        assert_eq!(find_tag("a=1", "c"), None);
        assert_eq!(find_tag("=1", ""), None);
    }
}
