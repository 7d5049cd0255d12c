//! Session and buffer identifiers.
//!
//! A session's id is its configuration id, an upper-case UUID, stable across
//! reconnects and restarts. A buffer's id is derived from the session id and
//! the buffer's case-folded name (UUID v5), so the same buffer gets the same id
//! after the process restarts, and ids never collide across sessions.

use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

/// A session (network connection) id: an upper-case UUID string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

/// A buffer id, unique across sessions: an upper-case UUID string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BufferId(String);

/// A string that is not a UUID was offered as a session id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a UUID")]
pub struct NotAUuid;

impl SessionId {
    /// Parses any UUID spelling and normalises it to upper case.
    pub fn parse(s: &str) -> Result<SessionId, NotAUuid> {
        let uuid = Uuid::parse_str(s.trim()).map_err(|_| NotAUuid)?;
        Ok(SessionId(upper(&uuid)))
    }

    /// The id as its upper-case string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn uuid(&self) -> Uuid {
        // Constructed only through `parse`, so this always holds a UUID;
        // the nil fallback keeps the function total.
        Uuid::parse_str(&self.0).unwrap_or(Uuid::nil())
    }
}

impl BufferId {
    /// The id of the buffer named `folded_name` (already case-folded by the
    /// server's casemapping) of the given kind in `session`.
    pub fn derive(session: &SessionId, kind: BufferKindTag, folded_name: &str) -> BufferId {
        let mut name = String::with_capacity(folded_name.len() + 8);
        name.push_str(kind.as_str());
        name.push(':');
        name.push_str(folded_name);
        BufferId(upper(&Uuid::new_v5(&session.uuid(), name.as_bytes())))
    }

    /// Wraps a string received from a client (for lookups); not validated.
    pub fn from_client(s: &str) -> BufferId {
        BufferId(s.to_owned())
    }

    /// The id as its upper-case string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which namespace a buffer name lives in, for id derivation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKindTag {
    /// The one server buffer of a session.
    Server,
    /// A channel buffer.
    Channel,
    /// A private conversation buffer.
    Query,
}

impl BufferKindTag {
    fn as_str(self) -> &'static str {
        match self {
            BufferKindTag::Server => "server",
            BufferKindTag::Channel => "channel",
            BufferKindTag::Query => "query",
        }
    }
}

fn upper(uuid: &Uuid) -> String {
    uuid.hyphenated().to_string().to_ascii_uppercase()
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for BufferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_normalise_to_upper_case() {
        let id = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b").unwrap();
        assert_eq!(id.as_str(), "0F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B");
        assert_eq!(SessionId::parse("nope"), Err(NotAUuid));
    }

    #[test]
    fn buffer_ids_are_stable_and_distinct() {
        let a = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b").unwrap();
        let b = SessionId::parse("1f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b").unwrap();
        let chan = BufferId::derive(&a, BufferKindTag::Channel, "#rete");
        assert_eq!(chan, BufferId::derive(&a, BufferKindTag::Channel, "#rete"));
        assert_ne!(chan, BufferId::derive(&b, BufferKindTag::Channel, "#rete"));
        assert_ne!(chan, BufferId::derive(&a, BufferKindTag::Query, "#rete"));
        assert_eq!(chan.as_str(), chan.as_str().to_ascii_uppercase());
        assert!(Uuid::parse_str(chan.as_str()).is_ok());
    }
}
