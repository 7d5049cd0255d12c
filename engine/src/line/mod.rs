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
pub use serialize::{OutLine, Part, SerializeError};
pub use tags::{escape_tag_value, unescape_tag_value, Tag, TagIter};
