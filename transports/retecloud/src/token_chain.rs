//! The service's side of one client's tokens: a chain of rotations, stored
//! only as hashes.
//!
//! Each client (one device, one secrets file) holds one chain. The service
//! rotates its token now and then: it issues the next generation
//! (`pending`), the client stores it and acknowledges it, and only then
//! does the new token become current and the old one enter a grace period
//! (so a connection racing the rotation still gets in). Several rotations
//! can wait at once, one per attached connection of the chain (a connection
//! the client has left but the service has not yet seen close rotates on its
//! timer too): the first of them the client acknowledges or presents
//! becomes current, and only the ones begun before it are given up. A replaced token
//! used after its grace period is **reuse**: either the secrets file was
//! copied or the token stolen, and the service cannot tell the thief from
//! the owner, so it revokes the whole chain (the approach OAuth 2.0 refresh
//! token rotation takes). The owner then needs a new token (`user add` or
//! its token command); the thief's copy is dead too.
//!
//! Only SHA-256 hashes are kept. A token is 256 random bits, so a fast hash
//! is enough (no dictionary to guess from: a slow password hash would only
//! cost the service CPU); a stolen database gives no usable token. Hashes
//! are compared in constant time (`subtle`), every entry each time, so the
//! time an answer takes says nothing about which entry, or how much of one,
//! matched. The service finds the chain by the presented token's hash (an
//! index lookup on a hash of a high-entropy secret leaks nothing useful),
//! then asks the chain.
//!
//! Times are wall-clock Unix milliseconds, not a monotonic clock: a grace
//! deadline must survive a restart of the service.

use crate::error_code::ErrorCode;
use crate::secret::Token;
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::{Choice, ConstantTimeEq};

/// The SHA-256 of a token: all the service stores of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash([u8; 32]);

impl TokenHash {
    /// The hash of a token.
    pub fn of(token: &Token) -> Self {
        Self(Sha256::digest(token.expose().as_bytes()).into())
    }

    /// A hash read back from the store.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The bytes to store.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn ct_eq(&self, other: &TokenHash) -> Choice {
        self.0.ct_eq(&other.0)
    }
}

impl fmt::Debug for TokenHash {
    /// The first four bytes, enough to tell entries apart in a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TokenHash({:02x}{:02x}{:02x}{:02x}…)",
            self.0[0], self.0[1], self.0[2], self.0[3]
        )
    }
}

/// Where one generation of the chain stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The token the client should be using.
    Current,
    /// Issued in a `token_rotate`, not yet acknowledged.
    Pending,
    /// Replaced; still accepted until `until_ms`.
    Grace {
        /// The end of the grace period (Unix milliseconds).
        until_ms: u64,
    },
    /// Replaced and past its grace: presenting it revokes the chain.
    Retired,
    /// Issued but given up before it was acknowledged or presented: a
    /// later generation was (the client stores tokens in the order they
    /// came and presents the one it stored last, so it never goes back to
    /// an earlier one), or more rotations were waiting than
    /// [`MAX_PENDING`]. Presenting it is refused as unknown (it does not
    /// revoke, because a store that failed after writing could have kept
    /// it).
    Abandoned,
}

/// One generation of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainEntry {
    /// The rotation count (0 for the token `user add` printed).
    pub generation: u64,
    /// The token's hash.
    pub hash: TokenHash,
    /// Where it stands.
    pub standing: Standing,
}

/// What presenting a token in `auth` came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthOutcome {
    /// The current token.
    Accepted {
        /// Its generation.
        generation: u64,
    },
    /// The pending token: the client stored it but its acknowledgement was
    /// lost. Taken as the acknowledgement; the old token is in grace now.
    AcceptedPending {
        /// Its generation.
        generation: u64,
    },
    /// A replaced token within its grace period. The service should rotate
    /// this connection's token at once.
    AcceptedInGrace {
        /// Its generation.
        generation: u64,
    },
    /// A replaced token past its grace: the chain is revoked now.
    Reused {
        /// The reused generation.
        generation: u64,
    },
    /// The chain was revoked before.
    Revoked,
    /// Not a token of this chain.
    Unknown,
}

impl AuthOutcome {
    /// True when the connection may go on.
    pub fn accepted(&self) -> bool {
        matches!(
            self,
            AuthOutcome::Accepted { .. }
                | AuthOutcome::AcceptedPending { .. }
                | AuthOutcome::AcceptedInGrace { .. }
        )
    }

    /// The error to answer a refusal with (None when accepted).
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            AuthOutcome::Reused { .. } | AuthOutcome::Revoked => Some(ErrorCode::TokenRevoked),
            AuthOutcome::Unknown => Some(ErrorCode::AuthFailed),
            _ => None,
        }
    }
}

/// Why a rotation cannot begin, an acknowledgement be taken, or a stored
/// chain be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainError {
    /// The chain is revoked.
    Revoked,
    /// No rotation of that generation is waiting.
    NotPending,
    /// The new token hashes like one the chain already holds.
    TokenReused,
    /// A stored chain that breaks the rules (not exactly one current
    /// entry, more than [`MAX_PENDING`] pending, generations not
    /// increasing).
    Inconsistent,
}

/// How many replaced tokens a chain remembers for reuse detection. An older
/// one presented is simply unknown (still refused, but it no longer revokes).
pub const MAX_REMEMBERED: usize = 32;

/// How many rotations may wait at once. Each attached connection of a chain
/// has at most one in flight, and a chain is one client, so more than two
/// or three at once means connections the client left long ago; past this
/// the oldest is given up.
pub const MAX_PENDING: usize = 4;

fn is_replaced(s: Standing) -> bool {
    matches!(
        s,
        Standing::Grace { .. } | Standing::Retired | Standing::Abandoned
    )
}

/// One client's tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenChain {
    /// Oldest first; generations increase.
    entries: Vec<ChainEntry>,
    revoked: bool,
    grace_ms: u64,
}

impl TokenChain {
    /// A new chain whose first (current) token is `first`.
    pub fn new(first: &Token, grace_ms: u64) -> Self {
        Self {
            entries: vec![ChainEntry {
                generation: 0,
                hash: TokenHash::of(first),
                standing: Standing::Current,
            }],
            revoked: false,
            grace_ms,
        }
    }

    /// A chain read back from the store, checked.
    pub fn from_entries(
        entries: Vec<ChainEntry>,
        revoked: bool,
        grace_ms: u64,
    ) -> Result<Self, ChainError> {
        let current = entries
            .iter()
            .filter(|e| e.standing == Standing::Current)
            .count();
        let pending = entries
            .iter()
            .filter(|e| e.standing == Standing::Pending)
            .count();
        let increasing = entries
            .windows(2)
            .all(|w| w[0].generation < w[1].generation);
        if (current != 1 && !revoked) || current > 1 || pending > MAX_PENDING || !increasing {
            return Err(ChainError::Inconsistent);
        }
        Ok(Self {
            entries,
            revoked,
            grace_ms,
        })
    }

    /// The entries to store (hashes only), oldest first.
    pub fn entries(&self) -> &[ChainEntry] {
        &self.entries
    }

    /// True once the chain is revoked: no token of it is accepted again.
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// How long a replaced token is still accepted.
    pub fn grace_ms(&self) -> u64 {
        self.grace_ms
    }

    /// The generations rotations are waiting on, oldest first.
    pub fn pending(&self) -> Vec<u64> {
        self.entries
            .iter()
            .filter(|e| e.standing == Standing::Pending)
            .map(|e| e.generation)
            .collect()
    }

    /// Revokes the chain (reuse, or the user's own request).
    pub fn revoke(&mut self) {
        self.revoked = true;
    }

    /// The index of the entry whose hash matches, comparing with every
    /// entry in constant time.
    fn find(&self, hash: &TokenHash) -> Option<usize> {
        let mut found = 0usize;
        let mut any = Choice::from(0);
        for (i, e) in self.entries.iter().enumerate() {
            let hit = e.hash.ct_eq(hash);
            // Branch-free select: keeps `i` when this entry matched.
            found |= i & 0usize.wrapping_sub(usize::from(hit.unwrap_u8()));
            any |= hit;
        }
        bool::from(any).then_some(found)
    }

    /// Grace periods that ended by `now_ms` become retired.
    fn expire(&mut self, now_ms: u64) {
        for e in &mut self.entries {
            if let Standing::Grace { until_ms } = e.standing {
                if now_ms >= until_ms {
                    e.standing = Standing::Retired;
                }
            }
        }
    }

    /// The current entry becomes replaced (in grace) and `index`, a pending
    /// one, current. Rotations begun before it are given up: the client has
    /// moved past them. Those begun after it still wait (another connection
    /// of the chain may deliver one yet).
    fn promote(&mut self, now_ms: u64, index: usize) {
        let until_ms = now_ms.saturating_add(self.grace_ms);
        let generation = self.entries[index].generation;
        for e in &mut self.entries {
            match e.standing {
                Standing::Current => e.standing = Standing::Grace { until_ms },
                Standing::Pending if e.generation < generation => {
                    e.standing = Standing::Abandoned;
                }
                _ => {}
            }
        }
        self.entries[index].standing = Standing::Current;
        self.forget_oldest();
    }

    fn forget_oldest(&mut self) {
        let replaced = self
            .entries
            .iter()
            .filter(|e| is_replaced(e.standing))
            .count();
        if replaced > MAX_REMEMBERED {
            let mut drop = replaced - MAX_REMEMBERED;
            self.entries.retain(|e| {
                let old = is_replaced(e.standing);
                if old && drop > 0 {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
    }

    /// Judges a token presented in `auth` at `now_ms`.
    pub fn authenticate(&mut self, now_ms: u64, presented: &Token) -> AuthOutcome {
        let hash = TokenHash::of(presented);
        let found = self.find(&hash);
        if self.revoked {
            return match found {
                Some(_) => AuthOutcome::Revoked,
                None => AuthOutcome::Unknown,
            };
        }
        self.expire(now_ms);
        let Some(i) = found else {
            return AuthOutcome::Unknown;
        };
        let generation = self.entries[i].generation;
        match self.entries[i].standing {
            // A pending rotation stays pending: the client may store its
            // token yet (its store failed, or this is another connection).
            Standing::Current => AuthOutcome::Accepted { generation },
            Standing::Pending => {
                self.promote(now_ms, i);
                AuthOutcome::AcceptedPending { generation }
            }
            Standing::Grace { .. } => AuthOutcome::AcceptedInGrace { generation },
            Standing::Retired => {
                self.revoked = true;
                AuthOutcome::Reused { generation }
            }
            Standing::Abandoned => AuthOutcome::Unknown,
        }
    }

    /// Begins a rotation to `next` (which the service made from fresh
    /// random bytes and sends once in `token_rotate`); returns its
    /// generation. Only its hash is kept.
    ///
    /// Rotations already waiting go on waiting: one may have been sent on
    /// another connection of the chain that the client is still reading,
    /// and giving it up here would leave that client holding a token the
    /// service no longer takes. Only when [`MAX_PENDING`] are waiting is the
    /// oldest given up.
    pub fn begin_rotation(&mut self, next: &Token) -> Result<u64, ChainError> {
        if self.revoked {
            return Err(ChainError::Revoked);
        }
        let hash = TokenHash::of(next);
        if self.find(&hash).is_some() {
            return Err(ChainError::TokenReused);
        }
        let waiting = self
            .entries
            .iter()
            .filter(|e| e.standing == Standing::Pending)
            .count();
        let mut give_up = (waiting + 1).saturating_sub(MAX_PENDING);
        for e in &mut self.entries {
            if give_up > 0 && e.standing == Standing::Pending {
                e.standing = Standing::Abandoned;
                give_up -= 1;
            }
        }
        let generation = self.entries.last().map_or(0, |e| e.generation) + 1;
        self.entries.push(ChainEntry {
            generation,
            hash,
            standing: Standing::Pending,
        });
        // A client that never acknowledges, reconnecting with its current
        // token, begins a rotation at each `auth`: what it gave up is
        // forgotten like any replaced token.
        self.forget_oldest();
        Ok(generation)
    }

    /// The client stored generation `generation` (its `token_ack`): the new
    /// token is current, the old one in grace until `now_ms + grace`.
    pub fn acknowledge(&mut self, now_ms: u64, generation: u64) -> Result<(), ChainError> {
        if self.revoked {
            return Err(ChainError::Revoked);
        }
        self.expire(now_ms);
        let i = self
            .entries
            .iter()
            .position(|e| e.generation == generation && e.standing == Standing::Pending)
            .ok_or(ChainError::NotPending)?;
        self.promote(now_ms, i);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
