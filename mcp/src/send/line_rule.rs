//! send_raw's line rule: what an agent may hand to IRC. A line is refused,
//! never cut, and nothing is sent when it breaks the rule.

/// Why a line was refused. `Display` is the contract's error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LineRefused {
    /// CR, LF, VT, FF, U+0085, U+2028, U+2029 or NUL anywhere.
    #[error("invalid arguments: line contains a line break or NUL")]
    Break,
    /// Empty, or nothing but whitespace.
    #[error("invalid arguments: line is empty")]
    Empty,
    /// The message after any tags is over 510 bytes.
    #[error("invalid arguments: line is longer than 510 bytes")]
    TooLong,
    /// The tag data is over 4094 bytes.
    #[error("invalid arguments: message tags are longer than 4094 bytes")]
    TagsTooLong,
    /// `@` with no space after the tags, an empty tag section, or only
    /// whitespace after it.
    #[error("invalid arguments: message tags are not followed by a message")]
    TagsAlone,
    /// A tagged line on a session without the message-tags capability.
    #[error("invalid arguments: message tags need the message-tags capability")]
    TagsNeedCapability,
}

/// The longest message after the tags, in UTF-8 bytes (the engine's
/// wire limit).
pub(crate) const MAX_MESSAGE: usize = rete_engine::line::MAX_MESSAGE_BYTES;
/// The longest tag data (between `@` and the space), in UTF-8 bytes.
pub(crate) const MAX_TAGS: usize = 4094;

/// A line the rule let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    /// It starts with message tags, so it needs the message-tags capability.
    pub(crate) tagged: bool,
}

/// Checks `line` against every part of the rule that needs no session.
pub(crate) fn check(line: &str) -> Result<Checked, LineRefused> {
    if line.contains(is_break_or_nul) {
        return Err(LineRefused::Break);
    }
    if line.trim().is_empty() {
        return Err(LineRefused::Empty);
    }
    let Some(tagged) = line.strip_prefix('@') else {
        return if line.len() > MAX_MESSAGE {
            Err(LineRefused::TooLong)
        } else {
            Ok(Checked { tagged: false })
        };
    };
    let Some((tags, message)) = tagged.split_once(' ') else {
        return Err(LineRefused::TagsAlone);
    };
    if tags.len() > MAX_TAGS {
        return Err(LineRefused::TagsTooLong);
    }
    if tags.is_empty() || message.trim().is_empty() {
        return Err(LineRefused::TagsAlone);
    }
    if message.len() > MAX_MESSAGE {
        return Err(LineRefused::TooLong);
    }
    Ok(Checked { tagged: true })
}

/// Foundation's newlines and NUL.
fn is_break_or_nul(c: char) -> bool {
    matches!(
        c,
        '\r' | '\n' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\0'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_break_and_nul_is_refused_anywhere() {
        for c in [
            '\r', '\n', '\u{0B}', '\u{0C}', '\u{85}', '\u{2028}', '\u{2029}', '\0',
        ] {
            for line in [
                format!("PING{c}"),
                format!("{c}PING"),
                format!("PRIVMSG #a :x{c}y"),
            ] {
                assert_eq!(check(&line), Err(LineRefused::Break), "{line:?}");
            }
        }
    }

    #[test]
    fn empty_and_whitespace_lines_are_refused() {
        for line in ["", " ", "\t \u{3000}"] {
            assert_eq!(check(line), Err(LineRefused::Empty), "{line:?}");
        }
    }

    #[test]
    fn the_510_bytes_are_counted_after_the_tags() {
        let fits = format!("PRIVMSG #a :{}", "é".repeat(249)); // 12 + 498 bytes
        assert_eq!(fits.len(), 510);
        assert_eq!(check(&fits), Ok(Checked { tagged: false }));
        assert_eq!(check(&format!("{fits}x")), Err(LineRefused::TooLong));
        let tags = "a=".to_owned() + &"b".repeat(4092);
        assert_eq!(tags.len(), MAX_TAGS);
        assert_eq!(
            check(&format!("@{tags} {fits}")),
            Ok(Checked { tagged: true })
        );
        assert_eq!(
            check(&format!("@{tags}b {fits}")),
            Err(LineRefused::TagsTooLong)
        );
        assert_eq!(
            check(&format!("@{tags} {fits}x")),
            Err(LineRefused::TooLong)
        );
    }

    #[test]
    fn tags_need_a_message_after_them() {
        for line in ["@a=b", "@ PING x", "@a=b ", "@a=b    ", "@"] {
            assert_eq!(check(line), Err(LineRefused::TagsAlone), "{line:?}");
        }
        assert_eq!(check("@a=b PING x"), Ok(Checked { tagged: true }));
    }

    #[test]
    fn the_texts_are_the_contracts() {
        assert_eq!(
            LineRefused::TagsNeedCapability.to_string(),
            "invalid arguments: message tags need the message-tags capability"
        );
        assert_eq!(
            LineRefused::TooLong.to_string(),
            "invalid arguments: line is longer than 510 bytes"
        );
    }
}
