//! A ReteCloud transport frame as the raw buffer and the raw tap may show
//! it.
//!
//! Two rules apply, in this order of reasoning:
//! 1. the JSON rule ([`mask_json`](crate::mask_json)): the value of every
//!    secret-named key at any depth, and of a `config_update` entry whose
//!    bare `key` member names a secret field, becomes `********`;
//! 2. the IRC rule ([`mask_line`]): the IRC line a frame carries (a
//!    `send`'s or a `line` row's `line`, each of a `sync`'s `lines`, each
//!    backlog row's `line`) is masked as a direct connection masks its raw
//!    lines (PASS, AUTHENTICATE payloads, OPER, service logins).
//!
//! A frame that does not parse as JSON (cut, or broken) is masked by
//! pattern: every string literal in value position that [`mask_line`]
//! would change is replaced by its masked form, then the secret-named
//! members are masked by [`mask_frame`](crate::mask_frame), which replaces
//! the whole text with a one-line note when it still names a secret field
//! it cannot pair with a value. An unterminated string that holds a
//! credential gives the note too. Only what is shown is masked: the frame
//! sent to ReteCloud is unchanged.

use crate::json::{mask_frame, mask_json, string_end, withheld_note};
use crate::line::mask_line;
use serde_json::Value;

/// How reterm's raw buffer introduces the IRC line a send frame carries,
/// shown under the frame: `→ IRC: <line>`.
pub const IRC_ECHO_PREFIX: &str = "→ IRC: ";

/// A ReteCloud frame's text as it may be shown (see the module doc). A
/// frame with nothing to mask is returned exactly as it came.
pub fn mask_retecloud_frame(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            let before = value.clone();
            mask_json(&mut value);
            mask_irc_lines(&mut value);
            if value == before {
                return text.to_owned();
            }
            // Keep the frame's own layout and member order when masking by
            // pattern gives exactly the same value; else show the value.
            match mask_line_literals(text).map(|t| mask_frame(&t)) {
                Some(p) if serde_json::from_str::<Value>(&p).ok().as_ref() == Some(&value) => p,
                _ => value.to_string(),
            }
        }
        Err(_) => match mask_line_literals(text) {
            Some(lines_masked) => mask_frame(&lines_masked),
            None => withheld_note(text),
        },
    }
}

/// The `→ IRC: <line>` echo of a send frame, its line masked as on a direct
/// connection. Text without the prefix is masked as an IRC line whole.
pub fn mask_irc_echo(echo: &str) -> String {
    match echo.strip_prefix(IRC_ECHO_PREFIX) {
        Some(line) => format!("{IRC_ECHO_PREFIX}{}", mask_line(line)),
        None => mask_line(echo).into_owned(),
    }
}

/// Every `line` member's string and every string of a `lines` array, at
/// any depth, masked by the IRC rule.
fn mask_irc_lines(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match (k.as_str(), v) {
                    ("line", Value::String(s)) => mask_string(s),
                    ("lines", Value::Array(items)) => {
                        for item in items.iter_mut() {
                            match item {
                                Value::String(s) => mask_string(s),
                                other => mask_irc_lines(other),
                            }
                        }
                    }
                    (_, other) => mask_irc_lines(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_irc_lines),
        _ => {}
    }
}

fn mask_string(s: &mut String) {
    if let std::borrow::Cow::Owned(m) = mask_line(s) {
        *s = m;
    }
}

/// Text that is not JSON with every string literal in value position (after
/// `:`, `[` or `,`) masked by the IRC rule when that changes it. None when
/// an unterminated string would need masking (it cannot be paired with its
/// end, so the caller shows a note instead).
fn mask_line_literals(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    let mut last_significant = b' ';
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'"' {
            if !b.is_ascii_whitespace() {
                last_significant = b;
            }
            i += 1;
            continue;
        }
        let end = string_end(bytes, i);
        let closed = is_closed(bytes, i, end);
        let in_value_position = matches!(last_significant, b':' | b'[' | b',');
        last_significant = b'"';
        if in_value_position {
            let raw = &text[i..end];
            let decoded: String = if closed {
                serde_json::from_str::<String>(raw)
                    .unwrap_or_else(|_| raw[1..raw.len() - 1].to_owned())
            } else {
                raw[1..].to_owned()
            };
            let masked = mask_line(&decoded);
            if let std::borrow::Cow::Owned(m) = masked {
                if !closed {
                    return None;
                }
                out.push_str(&text[copied..i]);
                out.push_str(&Value::String(m).to_string());
                copied = end;
            }
        }
        i = end;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Whether the string literal starting at `start` (a quote) and ending at
/// `end` (from `string_end`) has its closing quote: the last byte is a
/// quote that no backslash escapes.
fn is_closed(bytes: &[u8], start: usize, end: usize) -> bool {
    if end < start + 2 || bytes[end - 1] != b'"' {
        return false;
    }
    let backslashes = bytes[start + 1..end - 1]
        .iter()
        .rev()
        .take_while(|b| **b == b'\\')
        .count();
    backslashes % 2 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_frames_line_is_masked_as_on_a_direct_connection() {
        let cases = [
            (
                r#"{"type":"send","id":"s1","network":"libera","line":"PASS hunter2"}"#,
                r#"{"type":"send","id":"s1","network":"libera","line":"PASS :********"}"#,
            ),
            (
                r#"{"type":"send","id":"s1","network":"n","line":"PRIVMSG NickServ :IDENTIFY alice hunter2"}"#,
                r#"{"type":"send","id":"s1","network":"n","line":"PRIVMSG NickServ :IDENTIFY ********"}"#,
            ),
            (
                r#"{"type":"send","id":"s1","network":"n","line":"@label=x :me OPER root hunter2"}"#,
                r#"{"type":"send","id":"s1","network":"n","line":":me OPER root ********"}"#,
            ),
        ];
        for (frame, want) in cases {
            assert_eq!(mask_retecloud_frame(frame), want, "{frame}");
        }
        // A string elsewhere that looks like a credential line is not a
        // line member: the value is shown masked where it must be, in
        // whatever member order serde_json keeps.
        let f = r#"{"type":"error","code":"bad_line","message":"PASS hunter2","fatal":false,"line":"PASS hunter2"}"#;
        let shown = mask_retecloud_frame(f);
        assert!(!shown.contains(r#""line":"PASS hunter2""#), "{shown}");
        assert!(shown.contains(r#""line":"PASS :********""#), "{shown}");
    }

    #[test]
    fn a_frame_with_nothing_to_mask_is_unchanged() {
        let f = r#"{"type":"line","stream":"libera.1","seq":4,"time":1,"line":":a!b@c PRIVMSG #rete :hi"}"#;
        assert_eq!(mask_retecloud_frame(f), f);
    }

    #[test]
    fn secret_keys_and_config_entries_are_masked() {
        let f = r#"{"type":"auth","version":1,"token":"rct1_abc"}"#;
        assert!(!mask_retecloud_frame(f).contains("rct1_abc"));
        let f = r#"{"type":"config_update","id":"c","network":"n","entries":[{"key":"nick","value":"rete"},{"key":"sasl_password","value":"hunter2"}]}"#;
        let shown = mask_retecloud_frame(f);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains(r#"{"key":"nick","value":"rete"}"#),
            "{shown}"
        );
        assert!(
            shown.contains(r#""key":"sasl_password""#),
            "the key stays visible: {shown}"
        );
    }

    #[test]
    fn sync_and_backlog_lines_are_masked() {
        let f = r#"{"type":"sync","stream":"s","lines":[":srv 001 me :hi","AUTHENTICATE aHVudGVyMg=="]}"#;
        assert!(!mask_retecloud_frame(f).contains("aHVudGVyMg"));
        let f = r#"{"type":"backlog","id":"f","stream":"s","buffer":"NickServ","rows":[{"seq":1,"time":1,"line":"PRIVMSG NickServ :IDENTIFY hunter2"}],"more":false}"#;
        assert!(!mask_retecloud_frame(f).contains("hunter2"));
    }

    #[test]
    fn a_frame_that_does_not_parse_is_masked_by_pattern_or_noted() {
        // Cut after the line: the line is masked, the rest kept.
        let cut = r#"{"type":"send","id":"s1","network":"n","line":"PASS hunter2","#;
        let shown = mask_retecloud_frame(cut);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("PASS :********"), "{shown}");
        // Cut inside the line: cannot pair the string with its end.
        let cut = r#"{"type":"send","id":"s1","network":"n","line":"PASS hunter2"#;
        let shown = mask_retecloud_frame(cut);
        assert!(shown.starts_with("(withheld:"), "{shown}");
        // Cut inside a token: the JSON pattern masks it.
        let cut = r#"{"type":"auth","version":1,"token":"rct1_abcdef"#;
        assert!(!mask_retecloud_frame(cut).contains("abcdef"));
        // A secret field named with no value to pair: a note.
        let cut = r#"{"type":"auth","version":1,"token""#;
        assert!(mask_retecloud_frame(cut).starts_with("(withheld:"));
    }

    #[test]
    fn a_string_cut_after_an_escaped_quote_is_not_closed() {
        assert!(is_closed(br#""ab""#, 0, 4));
        assert!(!is_closed(br#""ab\""#, 0, 5));
        assert!(is_closed(br#""ab\\""#, 0, 6));
        let cut = r#"{"type":"send","line":"PASS hunter2 \""#;
        assert!(mask_retecloud_frame(cut).starts_with("(withheld:"));
    }

    #[test]
    fn the_irc_echo_is_masked() {
        assert_eq!(
            mask_irc_echo("→ IRC: PASS hunter2"),
            "→ IRC: PASS :********"
        );
        assert_eq!(
            mask_irc_echo("→ IRC: PRIVMSG #a :hi"),
            "→ IRC: PRIVMSG #a :hi"
        );
        assert_eq!(mask_irc_echo("OPER root hunter2"), "OPER root ********");
    }
}
