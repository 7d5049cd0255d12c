//! IRC lines on the wire: a zero-copy tokenizer for what the server sends
//! ([`Line`]) and an owned, validating serializer for what the engine sends
//! ([`OutLine`]).
//!
//! Parsing is tolerant, in the way the ircdocs parser tests expect: runs of
//! spaces separate parts, trailing spaces are ignored, a trailing line ending
//! is stripped. Serializing is strict: anything that would change the meaning
//! of the line on the wire (a line break, a space in a middle parameter, ...)
//! is an error rather than silently mangled, because a wrong line sent to a
//! server can be a command injection.
//!
//! Framing (splitting a byte stream into lines, decoding bytes to text) is the
//! transport's job; [`Line::parse`] takes one already-decoded line.

mod parse;
mod serialize;
mod tags;

pub use parse::{Line, ParseError, MAX_PARAMS};

/// The most bytes of a line after its tags that a server reads: 512 with the
/// CR LF, the rest cut without a word. Tags are counted apart (IRCv3).
pub const MAX_MESSAGE_BYTES: usize = 510;

/// The message of a line as sent: what follows the tag section (`@…` up to
/// the first space) when it has one, else the whole line; None for a line
/// that is tags alone.
#[must_use]
pub fn message_part(line: &str) -> Option<&str> {
    match line.strip_prefix('@') {
        Some(tagged) => tagged.split_once(' ').map(|(_, message)| message),
        None => Some(line),
    }
}
pub use serialize::{OutLine, Part, SerializeError};
pub use tags::{escape_tag_value, unescape_tag_value, Tag, TagIter};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_what_follows_the_tags() {
        assert_eq!(message_part("PRIVMSG #a :hi"), Some("PRIVMSG #a :hi"));
        assert_eq!(
            message_part("@+draft/x=1;y PRIVMSG #a :hi"),
            Some("PRIVMSG #a :hi")
        );
        assert_eq!(message_part("@only-tags"), None);
    }
}
