//! Values that must never be printed: the bearer token, a SASL or server
//! password, and the IRC lines a frame carries.
//!
//! Each is a newtype whose `Debug` shows no secret, so a frame can derive
//! `Debug` and still be logged or put in a test failure safely. On the wire
//! they are plain JSON strings (`serde(transparent)`).

use rete_redact::mask_line;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A ReteCloud bearer token. Shown as `Token(Secret(********))`; read it
/// with [`Token::expose`] only to put it on the wire or in the secrets file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(Secret);

/// The prefix every token the service issues starts with, so a token found
/// in a file or a paste can be recognised (and a secret scanner can look for
/// it); the version digit changes if the token's format does.
pub const TOKEN_PREFIX: &str = "rct1_";

impl Token {
    /// Wraps a token read from the secrets file or typed by the person.
    pub fn new(token: impl Into<String>) -> Self {
        Self(Secret::new(token))
    }

    /// A new token from 32 random bytes (the randomness is an input: the
    /// state machines never draw it): the prefix and 64 lowercase hex digits.
    pub fn from_random(bytes: [u8; 32]) -> Self {
        let mut s = String::with_capacity(TOKEN_PREFIX.len() + 64);
        s.push_str(TOKEN_PREFIX);
        for b in bytes {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Self(Secret::new(s))
    }

    /// The token's text, for the wire and the secrets file only.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A secret setting's value (a SASL or server password) in a
/// `config_update`: the project's one secret wrapper, carried on the wire as
/// the bare string. Shown as `Secret(********)`.
pub use rete_redact::Secret;

/// One IRC line as a frame carries it (no CR LF). `Debug` shows it masked
/// by the same rules as a direct connection's raw lines
/// (`rete_redact::mask_line`: PASS, AUTHENTICATE payloads, OPER, service
/// logins), so a send frame holding `PASS hunter2` never prints the password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IrcLine(String);

impl IrcLine {
    /// Wraps a line.
    pub fn new(line: impl Into<String>) -> Self {
        Self(line.into())
    }

    /// The line as it goes to IRC (or came from it).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Why this line cannot be carried, or None: it must be non-empty, hold
    /// no CR, LF or NUL, and fit in [`MAX_IRC_LINE_BYTES`].
    pub fn problem(&self) -> Option<&'static str> {
        if self.0.is_empty() {
            Some("is empty")
        } else if self.0.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            Some("holds a CR, LF or NUL")
        } else if self.0.len() > MAX_IRC_LINE_BYTES {
            Some("is longer than 8703 bytes")
        } else {
            None
        }
    }
}

/// The longest IRC line a frame may carry: 8,191 bytes of tags and their
/// space plus the 512 bytes of the rest (IRCv3 message-tags), CR LF
/// excluded.
pub const MAX_IRC_LINE_BYTES: usize = 8_191 + 512;

impl fmt::Debug for IrcLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IrcLine({:?})", mask_line(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let t = Token::new("rct1_abcdef");
        assert_eq!(format!("{t:?}"), "Token(Secret(********))");
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(********)");
        let l = IrcLine::new("PASS :hunter2");
        let shown = format!("{l:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("PASS :********"), "{shown}");
        let l = IrcLine::new("PRIVMSG NickServ :IDENTIFY hunter2");
        assert!(!format!("{l:?}").contains("hunter2"));
    }

    #[test]
    fn a_random_token_has_the_prefix_and_64_hex_digits() {
        let t = Token::from_random([0xab; 32]);
        let text = t.expose();
        assert!(text.starts_with(TOKEN_PREFIX));
        assert_eq!(text.len(), TOKEN_PREFIX.len() + 64);
        assert!(text[TOKEN_PREFIX.len()..]
            .chars()
            .all(|c| c == 'a' || c == 'b'));
        assert_ne!(Token::from_random([1; 32]), Token::from_random([2; 32]));
    }

    #[test]
    fn line_problems() {
        assert_eq!(IrcLine::new("").problem(), Some("is empty"));
        assert!(IrcLine::new("PRIVMSG #a :x\r\nQUIT").problem().is_some());
        assert!(IrcLine::new("a\0b").problem().is_some());
        assert!(IrcLine::new("x".repeat(MAX_IRC_LINE_BYTES + 1))
            .problem()
            .is_some());
        assert_eq!(IrcLine::new("x".repeat(MAX_IRC_LINE_BYTES)).problem(), None);
        assert_eq!(IrcLine::new("PRIVMSG #a :hi").problem(), None);
    }
}
