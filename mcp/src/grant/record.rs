//! What a host keeps for each grant: its spec, when it ends, when it was
//! last used, and the SHA-256 of its token — never the token, which is
//! shown once (written to the grant's own headers file) and then only
//! recognised.
//!
//! A presented token is hashed once and compared with every record's hash
//! in constant time, all of them, so how long the answer takes says nothing
//! about which grant, if any, it matched.

use super::scope::Scope;
use super::spec::{GrantSpec, Tier};
use crate::token::Token;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// One grant as kept (in reterm, in the secrets file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRecord {
    /// Its name.
    pub name: String,
    /// What it covers.
    pub scope: Scope,
    /// What it may do.
    pub tier: Tier,
    /// When it was made (Unix milliseconds).
    pub created_ms: i64,
    /// When it ends (Unix milliseconds); None for never.
    pub expires_ms: Option<i64>,
    /// When a request last presented it; None for never.
    pub last_used_ms: Option<i64>,
    /// The SHA-256 of its token, lowercase hex.
    token_sha256: String,
}

/// What a presented bearer token is, among the grants.
#[derive(Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    /// A live grant's token.
    Grant(&'a GrantRecord),
    /// The token of a grant that has ended.
    Expired(&'a GrantRecord),
    /// No grant's token.
    Unknown,
}

fn sha256_hex(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl GrantRecord {
    /// A new grant for `spec`, made at `now_ms`, and its token.
    pub fn issue(spec: GrantSpec, now_ms: i64) -> (GrantRecord, Token) {
        let token = Token::generate();
        let expires_ms = spec.expires.map(|d| {
            let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            now_ms.saturating_add(ms)
        });
        let record = GrantRecord {
            name: spec.name,
            scope: spec.scope,
            tier: spec.tier,
            created_ms: now_ms,
            expires_ms,
            last_used_ms: None,
            token_sha256: sha256_hex(token.expose()),
        };
        (record, token)
    }

    /// The SHA-256 of its token (lowercase hex): what tells two grants of
    /// one name apart, one revoked and one made since. Never shown.
    pub(crate) fn token_digest(&self) -> &str {
        &self.token_sha256
    }

    /// True while the grant has not ended at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.expires_ms.is_none_or(|end| now_ms < end)
    }

    /// Which grant, if any, `token` belongs to at `now_ms`.
    pub fn find<'a>(records: &'a [GrantRecord], token: &str, now_ms: i64) -> Presented<'a> {
        let presented = sha256_hex(token);
        let mut found = None;
        for record in records {
            let same: bool = presented
                .as_bytes()
                .ct_eq(record.token_sha256.as_bytes())
                .into();
            if same && found.is_none() {
                found = Some(record);
            }
        }
        match found {
            Some(r) if r.is_live(now_ms) => Presented::Grant(r),
            Some(r) => Presented::Expired(r),
            None => Presented::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(words: &[&str]) -> GrantSpec {
        GrantSpec::parse(words).unwrap()
    }

    #[test]
    fn a_grant_is_found_by_its_token_and_keeps_only_a_hash() {
        let (a, token_a) = GrantRecord::issue(spec(&["a"]), 1_000);
        let (b, token_b) = GrantRecord::issue(spec(&["b", "expires=never"]), 1_000);
        let kept = serde_json::to_string(&[&a, &b]).unwrap();
        assert!(!kept.contains(token_a.expose()) && !kept.contains(token_b.expose()));
        let records = vec![a, b];
        assert_eq!(
            GrantRecord::find(&records, token_b.expose(), 2_000),
            Presented::Grant(&records[1])
        );
        assert_eq!(
            GrantRecord::find(&records, token_a.expose(), 2_000),
            Presented::Grant(&records[0])
        );
        assert_eq!(
            GrantRecord::find(&records, "not-a-token", 2_000),
            Presented::Unknown
        );
        let back: Vec<GrantRecord> = serde_json::from_str(&kept).unwrap();
        assert_eq!(back, records);
    }

    #[test]
    fn a_grant_ends_at_its_expiry() {
        let (a, token) = GrantRecord::issue(spec(&["a", "expires=90s"]), 1_000);
        assert_eq!(a.expires_ms, Some(91_000));
        let records = vec![a];
        assert_eq!(
            GrantRecord::find(&records, token.expose(), 90_999),
            Presented::Grant(&records[0])
        );
        assert_eq!(
            GrantRecord::find(&records, token.expose(), 91_000),
            Presented::Expired(&records[0])
        );
    }
}
