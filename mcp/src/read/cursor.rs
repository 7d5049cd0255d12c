//! Cursors: opaque, unforgeable page positions.
//!
//! A cursor is base64url of `version | kind | position | binding digest |
//! tag`, where the tag is an HMAC-SHA-256 (cut to 16 bytes) under a key
//! drawn at random once per process. The binding digest ties the cursor to
//! what it was minted for (the tool, the session and buffer, a search's
//! query and filters), so a cursor used anywhere else, tampered with, or
//! minted by another process is `invalid cursor` — never a panic and never a
//! wrong page. Cursors are at most 512 bytes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The longest cursor accepted or minted.
pub(crate) const MAX_LEN: usize = 512;

/// The tool error for any cursor that does not open.
pub(crate) const INVALID: &str = "invalid cursor";

const VERSION: u8 = 1;
const DIGEST_LEN: usize = 16;
const TAG_LEN: usize = 16;

/// What a cursor pages through; a cursor of one kind never opens as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// list_buffers.
    Buffers = 1,
    /// list_members.
    Members = 2,
    /// read_messages (before).
    Messages = 3,
    /// read_since.
    Since = 4,
    /// search_messages.
    Search = 5,
    /// find_user.
    FindUser = 6,
    /// read_log.
    Log = 10,
    /// raw_since.
    RawSince = 7,
    /// search_raw.
    SearchRaw = 8,
}

fn key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        rand::rng().fill_bytes(&mut k);
        k
    })
}

fn mac() -> Hmac<Sha256> {
    // HMAC takes a key of any length, so this cannot fail.
    <Hmac<Sha256> as Mac>::new_from_slice(key()).unwrap_or_else(|_| unreachable!())
}

fn digest(binding: &[&[u8]]) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    for part in binding {
        // Length-prefixed, so ("ab","c") and ("a","bc") differ.
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    let full = h.finalize();
    let mut out = [0u8; DIGEST_LEN];
    out.copy_from_slice(&full[..DIGEST_LEN]);
    out
}

/// Mints a cursor of `kind` at `position`, bound to `binding` (the parts
/// that must match when it comes back).
pub(crate) fn mint(kind: Kind, binding: &[&[u8]], position: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(2 + position.len() + DIGEST_LEN + TAG_LEN);
    bytes.push(VERSION);
    bytes.push(kind as u8);
    bytes.extend_from_slice(position);
    bytes.extend_from_slice(&digest(binding));
    let mut m = mac();
    m.update(&bytes);
    let tag = m.finalize().into_bytes();
    bytes.extend_from_slice(&tag[..TAG_LEN]);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Opens a cursor minted by [`mint`] with the same kind and binding, and
/// returns its position; anything else is `Err(INVALID)`.
pub(crate) fn open(cursor: &str, kind: Kind, binding: &[&[u8]]) -> Result<Vec<u8>, &'static str> {
    if cursor.len() > MAX_LEN {
        return Err(INVALID);
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| INVALID)?;
    if bytes.len() < 2 + DIGEST_LEN + TAG_LEN {
        return Err(INVALID);
    }
    let (signed, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    let mut m = mac();
    m.update(signed);
    m.verify_truncated_left(tag).map_err(|_| INVALID)?;
    if signed[0] != VERSION || signed[1] != kind as u8 {
        return Err(INVALID);
    }
    let (position, bound) = signed[2..].split_at(signed.len() - 2 - DIGEST_LEN);
    // The tag already covers `bound`; comparing plain bytes here is fine.
    if bound != digest(binding) {
        return Err(INVALID);
    }
    Ok(position.to_vec())
}

/// A position made of unsigned integers, big-endian.
pub(crate) fn pack(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
}

/// The integers of a [`pack`]ed position; `n` of them or `Err(INVALID)`.
pub(crate) fn unpack(position: &[u8], n: usize) -> Result<Vec<u64>, &'static str> {
    if position.len() != n * 8 {
        return Err(INVALID);
    }
    Ok(position
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_be_bytes(b)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_only_with_the_same_kind_and_binding() {
        let c = mint(Kind::Since, &[b"read_since", b"S1", b"B1"], &pack(&[42]));
        assert!(c.len() <= MAX_LEN);
        let pos = open(&c, Kind::Since, &[b"read_since", b"S1", b"B1"]).unwrap();
        assert_eq!(unpack(&pos, 1).unwrap(), vec![42]);
        assert_eq!(
            open(&c, Kind::Messages, &[b"read_since", b"S1", b"B1"]),
            Err(INVALID)
        );
        assert_eq!(
            open(&c, Kind::Since, &[b"read_since", b"S1", b"B2"]),
            Err(INVALID)
        );
        assert_eq!(
            open(&c, Kind::Since, &[b"read_since", b"S1B1"]),
            Err(INVALID)
        );
    }

    #[test]
    fn tampering_and_garbage_are_invalid() {
        let c = mint(Kind::Members, &[b"x"], &pack(&[7, 8]));
        let mut bytes = URL_SAFE_NO_PAD.decode(&c).unwrap();
        bytes[3] ^= 1;
        let forged = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(open(&forged, Kind::Members, &[b"x"]), Err(INVALID));
        for junk in ["", "!!", "AAAA", &"A".repeat(600)] {
            assert_eq!(open(junk, Kind::Members, &[b"x"]), Err(INVALID));
        }
        assert_eq!(unpack(&[1, 2, 3], 1), Err(INVALID));
    }
}
