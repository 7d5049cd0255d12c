//! Fresh random values: tokens (256 bits from the OS generator) and session UUIDs.

use rete_cloud_protocol::Token;

/// A new token, `rct1_` and 64 hex digits.
pub fn new_token() -> Token {
    Token::from_random(rand::random())
}

/// A new random (version 4) UUID, the engine session id of a network.
pub fn new_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Wall-clock Unix milliseconds (token grace periods must survive a restart).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
