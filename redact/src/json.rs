//! ReteCloud frames and log lines: JSON with secret-named keys masked.
//!
//! A key names a secret when its name contains password, secret, token,
//! private, credential, cookie, pass or auth, or ends with `_key`, in any
//! case. The bare `key` member (which names a config field) stays visible;
//! when it names a secret field, its sibling value members are masked, which
//! covers a config_update entry. This is applied in every object, not only
//! config_update ones: masking too much is the safe side.
//!
//! Text that is not JSON (a cut frame, a log line with JSON inside) is
//! masked by pattern: every `"name": value` pair whose name is secret-named
//! has its value replaced. When the text still names a secret field the
//! pattern cannot pair with a value, the whole text is replaced by a note.

use crate::MASK;
use serde_json::Value;

/// Words whose presence anywhere in a key's name makes it a secret.
const SECRET_WORDS: &[&str] = &[
    "password",
    "secret",
    "token",
    "private",
    "credential",
    "cookie",
    "pass",
    "auth",
];

/// True when a member name (or the field a `key` member names) is secret.
fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w)) || lower.ends_with("_key")
}

fn is_key_member(name: &str) -> bool {
    name.eq_ignore_ascii_case("key")
}

/// A member that carries the value of the field a `key` member names.
fn is_value_member(name: &str) -> bool {
    name.to_ascii_lowercase().contains("value")
}

/// ReteCloud JSON masking (also used for log lines): the value of every
/// secret-named key, at any depth, becomes `"********"`; the bare `key`
/// member stays visible, and when it names a secret field the entry's value
/// members are masked.
pub fn mask_json(value: &mut Value) {
    mask_counting(value);
}

/// Masks and counts the members masked, so an untouched frame can be
/// returned exactly as it came.
fn mask_counting(value: &mut Value) -> usize {
    match value {
        Value::Object(map) => {
            let names_secret = map
                .iter()
                .any(|(k, v)| is_key_member(k) && v.as_str().is_some_and(is_secret_name));
            let mut masked = 0;
            for (k, v) in map.iter_mut() {
                if is_secret_name(k) || (names_secret && is_value_member(k)) {
                    *v = Value::String(MASK.to_owned());
                    masked += 1;
                } else {
                    masked += mask_counting(v);
                }
            }
            masked
        }
        Value::Array(items) => items.iter_mut().map(mask_counting).sum(),
        _ => 0,
    }
}

/// The note shown instead of a text that names a secret field the pattern
/// cannot pair with a value. It says nothing of the content but its size.
pub(crate) fn withheld_note(text: &str) -> String {
    format!(
        "(withheld: names a secret field that could not be masked, {} bytes)",
        text.len()
    )
}

/// A frame's text as it may be shown: parsed and masked; or, when it is not
/// JSON, masked by pattern; or replaced by a one-line note when it names a
/// secret field the pattern cannot pair with a value. A JSON frame keeps its
/// layout and member order (with nothing to mask, it is returned as it came).
pub fn mask_frame(text: &str) -> String {
    if let Ok(mut value) = serde_json::from_str::<Value>(text) {
        if mask_counting(&mut value) == 0 {
            return text.to_owned();
        }
        // Keep the frame's own layout and member order when the pattern
        // masks it to exactly the same value; else show the masked value.
        return match mask_pattern(text) {
            Some(p) if serde_json::from_str::<Value>(&p).ok().as_ref() == Some(&value) => p,
            _ => value.to_string(),
        };
    }
    match mask_pattern(text) {
        Some(masked) => masked,
        None => withheld_note(text),
    }
}

/// The end (exclusive) of the JSON string starting at `start` (a quote), or
/// the end of the text when it is not closed.
pub(crate) fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The end of the value starting at `start`: a string, a bracketed object
/// or array (to its match, or the end of the text), or a bare word.
fn value_end(bytes: &[u8], start: usize) -> usize {
    match bytes[start] {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        }
        _ => bytes[start..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
            .map_or(bytes.len(), |p| start + p),
    }
}

fn skip_blank(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Masking by pattern for text that is not JSON. None when a secret field is
/// named but cannot be paired with a value.
fn mask_pattern(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0; // bytes of `text` already in `out`
    let mut i = 0;
    let mut last_significant = b' ';
    // A `"key": "<secret field>"` seen: the next value member is its value.
    let mut awaiting_value = false;
    // A value member seen since the last `{`, which a later secret `key`
    // would have needed masked.
    let mut value_member_seen = false;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                value_member_seen = false;
                last_significant = b'{';
                i += 1;
                continue;
            }
            b'"' => {}
            b if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b => {
                last_significant = b;
                i += 1;
                continue;
            }
        }
        let end = string_end(bytes, i);
        let name = text[i + 1..end].trim_end_matches('"');
        let after = skip_blank(bytes, end);
        let is_member_name = bytes.get(after) == Some(&b':');
        let in_value_position = last_significant == b':';
        last_significant = b'"';
        if !is_member_name {
            if !in_value_position && is_secret_name(name) {
                return None;
            }
            i = end;
            continue;
        }
        let value_start = skip_blank(bytes, after + 1);
        let secret_value = is_secret_name(name) || (awaiting_value && is_value_member(name));
        if is_value_member(name) {
            awaiting_value = false;
            value_member_seen = true;
        }
        if is_key_member(name) && value_start < bytes.len() && bytes[value_start] == b'"' {
            let v_end = string_end(bytes, value_start);
            let field = text[value_start + 1..v_end].trim_end_matches('"');
            if is_secret_name(field) {
                if value_member_seen {
                    return None;
                }
                awaiting_value = true;
            }
            i = v_end;
            last_significant = b'"';
            continue;
        }
        if !secret_value {
            i = end;
            continue;
        }
        if value_start >= bytes.len() {
            return None;
        }
        let v_end = value_end(bytes, value_start);
        out.push_str(&text[copied..value_start]);
        out.push('"');
        out.push_str(MASK);
        out.push('"');
        copied = v_end;
        i = v_end;
        last_significant = b'"';
    }
    if awaiting_value {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "password",
            "SASL_Password",
            "authToken",
            "api_key",
            "Cookie",
            "passphrase",
            "author",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["key", "keys", "monkey", "name", "nick", "value"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn value_ends() {
        let t = br#"{"a":[1,{"b":"]"}],"c":2}"#;
        assert_eq!(value_end(t, 5), 18);
        assert_eq!(value_end(br#""ab\"c" x"#, 0), 7);
        assert_eq!(value_end(b"123, x", 0), 3);
        assert_eq!(value_end(b"[1,2", 0), 4);
    }
}
