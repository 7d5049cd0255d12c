//! `AUTHENTICATE` framing: payloads travel as base64 split into 400-byte
//! chunks, because one IRC line cannot carry a large SCRAM message.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::SaslError;

/// The longest base64 chunk one `AUTHENTICATE` line carries.
pub const CHUNK_LEN: usize = 400;

/// The largest reassembled base64 payload accepted from a server, to bound
/// memory if a server keeps sending full chunks. SCRAM messages are a few
/// hundred bytes, so this leaves ample room.
pub const MAX_PAYLOAD_BASE64: usize = 16 * 1024;

/// Frames a decoded payload as the `AUTHENTICATE` arguments to send, in
/// order. An empty payload is `+`; when the base64 is a non-zero multiple of
/// 400 bytes a final `+` tells the server nothing more follows.
#[must_use]
pub fn encode_authenticate(payload: &[u8]) -> Vec<String> {
    let encoded = STANDARD.encode(payload);
    // Base64 output is ASCII, so every 400-byte boundary is a char boundary.
    let mut chunks: Vec<String> = encoded
        .as_bytes()
        .chunks(CHUNK_LEN)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    if encoded.len() % CHUNK_LEN == 0 {
        chunks.push("+".to_owned());
    }
    chunks
}

/// Reassembles server `AUTHENTICATE` chunks into one decoded challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthenticateAssembler {
    buffer: String,
}

impl AuthenticateAssembler {
    /// An assembler with nothing buffered.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chunk. Returns `Some(decoded)` when the payload is complete
    /// (`+` alone, or any chunk shorter than 400 bytes, ends it) and `None`
    /// while more chunks are due. On error the buffer is cleared so the next
    /// exchange starts clean.
    ///
    /// # Errors
    /// A chunk over 400 bytes, a payload over [`MAX_PAYLOAD_BASE64`], or
    /// invalid base64 once the payload is complete.
    pub fn push(&mut self, chunk: &str) -> Result<Option<Vec<u8>>, SaslError> {
        let result = self.push_inner(chunk);
        if !matches!(result, Ok(None)) {
            self.buffer.clear();
        }
        result
    }

    fn push_inner(&mut self, chunk: &str) -> Result<Option<Vec<u8>>, SaslError> {
        if chunk == "+" {
            return decode(&self.buffer).map(Some);
        }
        if chunk.len() > CHUNK_LEN {
            return Err(SaslError::ChunkTooLong);
        }
        if self.buffer.len() + chunk.len() > MAX_PAYLOAD_BASE64 {
            return Err(SaslError::PayloadTooLarge);
        }
        self.buffer.push_str(chunk);
        if chunk.len() == CHUNK_LEN {
            return Ok(None);
        }
        decode(&self.buffer).map(Some)
    }

    /// Whether a partial payload is buffered (an exchange is mid-message).
    #[must_use]
    pub fn is_pending(&self) -> bool {
        !self.buffer.is_empty()
    }
}

fn decode(base64: &str) -> Result<Vec<u8>, SaslError> {
    STANDARD
        .decode(base64)
        .map_err(|_| SaslError::InvalidBase64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload whose base64 is exactly `b64_len` bytes (a multiple of 4).
    fn payload_for_b64_len(b64_len: usize) -> Vec<u8> {
        (0..b64_len / 4 * 3).map(|i| (i % 251) as u8).collect()
    }

    fn reassemble(chunks: &[String]) -> Vec<u8> {
        let mut a = AuthenticateAssembler::new();
        let (last, init) = chunks.split_last().unwrap();
        for c in init {
            assert_eq!(a.push(c).unwrap(), None, "ended early at {c:?}");
        }
        a.push(last).unwrap().unwrap()
    }

    #[test]
    fn empty_payload_is_plus() {
        assert_eq!(encode_authenticate(b""), vec!["+"]);
    }

    #[test]
    fn short_payload_is_one_chunk() {
        assert_eq!(encode_authenticate(b"hello"), vec!["aGVsbG8="]);
    }

    #[test]
    fn exactly_400_gets_trailing_plus() {
        let chunks = encode_authenticate(&payload_for_b64_len(400));
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].len(), 400);
        assert_eq!(chunks[1], "+");
    }

    #[test]
    fn exactly_800_gets_two_chunks_and_plus() {
        let chunks = encode_authenticate(&payload_for_b64_len(800));
        let lens: Vec<usize> = chunks.iter().map(String::len).collect();
        assert_eq!(lens, vec![400, 400, 1]);
        assert_eq!(chunks[2], "+");
    }

    #[test]
    fn just_over_400_splits_without_plus() {
        // 301 bytes encode to 404 base64 bytes (the nearest to 401 base64 allows).
        let payload: Vec<u8> = vec![7; 301];
        let chunks = encode_authenticate(&payload);
        let lens: Vec<usize> = chunks.iter().map(String::len).collect();
        assert_eq!(lens, vec![400, 4]);
    }

    #[test]
    fn round_trips_through_assembler() {
        for len in [0usize, 1, 2, 3, 299, 300, 301, 600, 601, 1000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
            let chunks = encode_authenticate(&payload);
            assert_eq!(reassemble(&chunks), payload, "len {len}");
        }
    }

    #[test]
    fn plus_alone_is_empty() {
        let mut a = AuthenticateAssembler::new();
        assert_eq!(a.push("+").unwrap(), Some(Vec::new()));
    }

    #[test]
    fn chunk_of_401_is_rejected_and_clears() {
        let mut a = AuthenticateAssembler::new();
        assert_eq!(a.push(&"A".repeat(400)).unwrap(), None);
        assert!(a.is_pending());
        assert_eq!(a.push(&"A".repeat(401)), Err(SaslError::ChunkTooLong));
        assert!(!a.is_pending());
        assert_eq!(a.push("aGk=").unwrap(), Some(b"hi".to_vec()));
    }

    #[test]
    fn full_chunk_waits_then_plus_completes() {
        let payload = payload_for_b64_len(400);
        let chunks = encode_authenticate(&payload);
        let mut a = AuthenticateAssembler::new();
        assert_eq!(a.push(&chunks[0]).unwrap(), None);
        assert_eq!(a.push("+").unwrap(), Some(payload));
        assert!(!a.is_pending());
    }

    #[test]
    fn invalid_base64_is_an_error() {
        let mut a = AuthenticateAssembler::new();
        assert_eq!(a.push("!!!"), Err(SaslError::InvalidBase64));
        assert_eq!(a.push("aGk").unwrap_err(), SaslError::InvalidBase64);
    }

    #[test]
    fn oversized_payload_is_bounded() {
        let mut a = AuthenticateAssembler::new();
        let full = "A".repeat(CHUNK_LEN);
        for _ in 0..MAX_PAYLOAD_BASE64 / CHUNK_LEN {
            assert_eq!(a.push(&full).unwrap(), None);
        }
        assert_eq!(a.push(&full), Err(SaslError::PayloadTooLarge));
        assert!(!a.is_pending());
    }
}
