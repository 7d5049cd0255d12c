//! The access token (43 characters from 32 random bytes) and the store the
//! host keeps it in.
//!
//! rete-mcp opens no file of its own: the host hands [`ControlServer`] a
//! [`TokenStore`] (reterm's is its private secrets file, 0600, replaced
//! atomically under a lock), and the server asks it for the token at start
//! and gives it a fresh one at a regeneration. What the server needs of the
//! token itself — making one, the gate's constant-time comparison — is here.
//!
//! [`ControlServer`]: crate::server::ControlServer

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;
use rete_redact::Secret;

/// The control server's bearer token, held in the project's one secret
/// wrapper: its `Debug` is `Token(Secret(********))`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token(Secret);

/// A stored token's length: 32 bytes, base64url without padding.
const TOKEN_LEN: usize = 43;

impl Token {
    /// A fresh random token: 32 bytes, base64url without padding (43 characters).
    pub fn generate() -> Token {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Token(Secret::new(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// A token as a [`TokenStore`] kept it, or None when what it kept is not
    /// one (not 43 characters long): the store then keeps a fresh one.
    pub fn from_stored(stored: String) -> Option<Token> {
        (stored.len() == TOKEN_LEN).then(|| Token(Secret::new(stored)))
    }

    /// The token itself, for the gate's comparison, the connect command and
    /// the host's store.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

/// Where the control token lives: the host's store, durable and readable by
/// the person only (reterm's is `~/.rete/secrets.json`). The server asks it
/// at every start and regeneration and never opens a file itself.
pub trait TokenStore: Send + Sync + 'static {
    /// The stored token, or `fresh` stored now when the store holds none it
    /// accepts ([`Token::from_stored`]). Read and, when needed, written as
    /// one step (under the store's lock), so two hosts starting together
    /// serve the same token.
    fn load_or_store(&self, fresh: Token) -> Result<Token, TokenStoreError>;
    /// Stores `fresh` in place of the stored token (a regeneration);
    /// returns once it is kept.
    fn replace(&self, fresh: &Token) -> Result<(), TokenStoreError>;
}

/// Why the store could not read or keep the token: the text the person is
/// shown (before " — AI access is off"). It never holds the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenStoreError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_43_url_safe_characters() {
        let t = Token::generate();
        assert_eq!(t.expose().len(), 43);
        assert!(t
            .expose()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(t, Token::generate());
        assert_eq!(format!("{t:?}"), "Token(Secret(********))");
    }

    #[test]
    fn only_a_43_character_token_is_taken_from_a_store() {
        let t = Token::generate();
        assert_eq!(Token::from_stored(t.expose().to_owned()), Some(t));
        assert_eq!(Token::from_stored("short".into()), None);
        assert_eq!(Token::from_stored("x".repeat(44)), None);
    }
}
