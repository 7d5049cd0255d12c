//! The grants a host has issued, shared between the host (which adds,
//! revokes and keeps them) and the gate (which recognises their tokens on
//! every request). A change is seen by the next request: a revoked or
//! expired grant's token gets the gate's 403 from then on.

use super::record::{GrantRecord, Presented};
use super::scope::Scope;
use super::spec::Tier;
use parking_lot::RwLock;
use std::sync::Arc;

/// The grants, shared. Cloning shares them.
#[derive(Clone, Default)]
pub struct Grants {
    records: Arc<RwLock<Vec<GrantRecord>>>,
}

/// A grant's name is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameTaken;

/// The grant a request presented: what the tools need of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// Its name, which the access log shows on its rows.
    pub name: Arc<str>,
    /// What it covers.
    pub scope: Scope,
    /// What it may do.
    pub tier: Tier,
    /// Its token's digest: what its subscriptions belong to, so a grant
    /// made later under the same name does not inherit them. Never shown.
    pub(crate) key: Arc<str>,
}

/// Who made a request: the full token or one grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// The one full token: the contract's behaviour, everything.
    Full,
    /// A scoped grant.
    Grant(Granted),
}

impl Granted {
    /// A grant presented without the gate (a host's own request, a test):
    /// `key` must tell it apart from every other grant, as the token's
    /// digest does for the gate, since its subscriptions belong to it.
    pub fn new(name: &str, scope: Scope, tier: Tier, key: &str) -> Granted {
        Granted {
            name: Arc::from(name),
            scope,
            tier,
            key: Arc::from(key),
        }
    }
}

impl Principal {
    /// The grant, for a scoped request.
    pub fn grant(&self) -> Option<&Granted> {
        match self {
            Principal::Full => None,
            Principal::Grant(g) => Some(g),
        }
    }

    /// The grant's name, for a scoped request.
    pub fn grant_name(&self) -> Option<&str> {
        self.grant().map(|g| &*g.name)
    }
}

impl Grants {
    /// The grants `records` (as the host kept them).
    pub fn new(records: Vec<GrantRecord>) -> Grants {
        Grants {
            records: Arc::new(RwLock::new(records)),
        }
    }

    /// Adds `record`, unless its name is taken.
    pub fn add(&self, record: GrantRecord) -> Result<(), NameTaken> {
        let mut records = self.records.write();
        if records.iter().any(|r| r.name == record.name) {
            return Err(NameTaken);
        }
        records.push(record);
        Ok(())
    }

    /// Removes the grant named `name`; None when there is none.
    pub fn revoke(&self, name: &str) -> Option<GrantRecord> {
        let mut records = self.records.write();
        let at = records.iter().position(|r| r.name == name)?;
        Some(records.remove(at))
    }

    /// Removes every grant ended at `now_ms`, returning their names.
    pub fn remove_ended(&self, now_ms: i64) -> Vec<String> {
        let mut records = self.records.write();
        let mut ended = Vec::new();
        records.retain(|r| {
            let live = r.is_live(now_ms);
            if !live {
                ended.push(r.name.clone());
            }
            live
        });
        ended
    }

    /// Every grant, in the order they were added.
    pub fn list(&self) -> Vec<GrantRecord> {
        self.records.read().clone()
    }

    /// True while the grant whose token's digest is `key` exists and has
    /// not ended at `now_ms` (a subscription's owner, say).
    pub(crate) fn holds_live(&self, key: &str, now_ms: i64) -> bool {
        self.records
            .read()
            .iter()
            .any(|r| r.token_digest() == key && r.is_live(now_ms))
    }

    /// The live grant whose token is `token` at `now_ms`, its last use set
    /// to now; None for an ended grant's token or no grant's.
    pub(crate) fn recognise(&self, token: &str, now_ms: i64) -> Option<Granted> {
        let mut records = self.records.write();
        let name = match GrantRecord::find(&records, token, now_ms) {
            Presented::Grant(record) => record.name.clone(),
            Presented::Expired(_) | Presented::Unknown => return None,
        };
        let record = records.iter_mut().find(|r| r.name == name)?;
        record.last_used_ms = Some(now_ms);
        Some(Granted {
            name: Arc::from(record.name.as_str()),
            scope: record.scope.clone(),
            tier: record.tier,
            key: Arc::from(record.token_digest()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::GrantSpec;

    #[test]
    fn a_token_is_recognised_until_its_grant_is_revoked_and_its_use_is_kept() {
        let grants = Grants::default();
        let (record, token) =
            GrantRecord::issue(GrantSpec::parse(&["a", "tier=debug"]).unwrap(), 1_000);
        grants.add(record.clone()).unwrap();
        assert_eq!(grants.add(record), Err(NameTaken));
        let granted = grants.recognise(token.expose(), 5_000).unwrap();
        assert_eq!((&*granted.name, granted.tier), ("a", Tier::Debug));
        assert_eq!(grants.list()[0].last_used_ms, Some(5_000));
        assert!(grants.recognise("another", 5_000).is_none());
        assert!(grants.revoke("a").is_some());
        assert!(grants.recognise(token.expose(), 6_000).is_none());
        assert!(grants.revoke("a").is_none());
    }

    #[test]
    fn an_ended_grant_is_not_recognised_and_is_removed() {
        let grants = Grants::default();
        let (record, token) =
            GrantRecord::issue(GrantSpec::parse(&["a", "expires=1s"]).unwrap(), 1_000);
        grants.add(record).unwrap();
        assert!(grants.recognise(token.expose(), 1_999).is_some());
        assert!(grants.recognise(token.expose(), 2_000).is_none());
        assert_eq!(grants.remove_ended(2_000), ["a"]);
        assert!(grants.list().is_empty());
    }
}
