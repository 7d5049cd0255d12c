//! Fresh random values: tokens (256 bits from the OS generator) and session UUIDs.

use rete_cloud_protocol::Token;

/// A new token, `rct1_` and 64 hex digits.
pub fn new_token() -> Token {
    Token::from_random(rand::random())
}

/// A new random (version 4) UUID, the engine session id of a network.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
