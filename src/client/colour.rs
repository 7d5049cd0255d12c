//! Nick colours: a stable hash of the case-folded nick picks one of a fixed
//! palette, so a person keeps their colour across buffers and runs.

/// Terminal colours (ANSI indexes) readable on dark and light backgrounds;
/// red is left for errors and highlights.
pub const PALETTE: [u8; 12] = [2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 33, 208];

/// The palette index for `nick` (FNV-1a over its ASCII-lowercased bytes).
pub fn nick_colour(nick: &str) -> u8 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in nick.bytes() {
        hash ^= u32::from(b.to_ascii_lowercase());
        hash = hash.wrapping_mul(0x0100_0193);
    }
    PALETTE[(hash % PALETTE.len() as u32) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_case_blind() {
        assert_eq!(nick_colour("Alice"), nick_colour("alice"));
        assert_eq!(nick_colour("alice"), nick_colour("alice"));
        let distinct: std::collections::HashSet<u8> =
            ["alice", "bob", "carol", "dave", "eve", "mallory"]
                .iter()
                .map(|n| nick_colour(n))
                .collect();
        assert!(distinct.len() > 2, "{distinct:?}");
    }
}
