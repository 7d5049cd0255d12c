//! The connection budget: who may hold a socket of the service, and for how
//! long, before and after proving who they are. I/O-free: the listener and
//! the connections feed it addresses, users and times (milliseconds) and
//! carry out its answers.
//!
//! A connection that has not yet authenticated costs the service memory and
//! a task but proves nothing, so such connections are capped per address
//! ([`Limits::pending_per_address`]; an IPv6 address counts by its /64, the
//! block one host is usually given) and in all ([`Limits::pending_total`]);
//! each must present a valid `auth` within the gate's auth timeout counted
//! from the TCP accept, TLS and WebSocket handshakes included (the listener
//! enforces that deadline). Once authenticated a connection counts against
//! its user instead ([`Limits::clients_per_user`]).
//!
//! Failed authentications are counted per address in a token bucket: an
//! address that spent its [`Limits::auth_failure_burst`] tries gets one more
//! every [`Limits::auth_failure_refill_ms`], and its connections are refused
//! at accept until then, so guessing tokens is slow and cheap to refuse.

use crate::store::UserId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The budget's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections not yet authenticated from one address (IPv6: one /64).
    pub pending_per_address: usize,
    /// Connections not yet authenticated, from all addresses together.
    pub pending_total: usize,
    /// Authenticated connections of one user.
    pub clients_per_user: usize,
    /// Failed authentications an address may make at once.
    pub auth_failure_burst: u32,
    /// After the burst, one more try per this many milliseconds.
    pub auth_failure_refill_ms: u64,
}

/// Connections not yet authenticated from one address, by default.
pub const PENDING_PER_ADDRESS: usize = 32;
/// Connections not yet authenticated in all, by default.
pub const PENDING_TOTAL: usize = 512;
/// Authenticated connections of one user, by default: a person's devices,
/// with room for connections a client has left that the service has not yet
/// seen close.
pub const CLIENTS_PER_USER: usize = 16;
/// Failed authentications an address may make before it is slowed down.
pub const AUTH_FAILURE_BURST: u32 = 10;
/// One more failed authentication per this many milliseconds after that.
pub const AUTH_FAILURE_REFILL_MS: u64 = 6_000;
/// Addresses whose failures are remembered at most; past it, addresses whose
/// bucket has refilled are forgotten first.
const TRACKED_ADDRESSES: usize = 4_096;

impl Default for Limits {
    fn default() -> Self {
        Self {
            pending_per_address: PENDING_PER_ADDRESS,
            pending_total: PENDING_TOTAL,
            clients_per_user: CLIENTS_PER_USER,
            auth_failure_burst: AUTH_FAILURE_BURST,
            auth_failure_refill_ms: AUTH_FAILURE_REFILL_MS,
        }
    }
}

/// Why a connection is not let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its address holds as many unauthenticated connections as it may.
    AddressBusy,
    /// The service holds as many unauthenticated connections as it may.
    Full,
    /// Its address failed to authenticate too often lately.
    TooManyFailures,
    /// Its user has as many clients attached as they may.
    TooManyClients,
}

impl Refusal {
    /// What the log says (no token, no user name).
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::AddressBusy => "too many unauthenticated connections from this address",
            Refusal::Full => "too many unauthenticated connections in all",
            Refusal::TooManyFailures => "too many failed authentications from this address",
            Refusal::TooManyClients => "the user has the most clients allowed attached",
        }
    }
}

/// The address a connection counts against: the IPv4 address, or the /64
/// of an IPv6 one (an IPv4-mapped IPv6 address counts as its IPv4 address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressKey(u128);

impl AddressKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> AddressKey {
        match ip {
            IpAddr::V4(v4) => AddressKey(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => AddressKey(u128::from(u32::from(v4))),
                // Keep the /64; a set high bit keeps it apart from IPv4 keys.
                None => AddressKey((u128::from(v6) & !u128::from(u64::MAX)) | 1),
            },
        }
    }
}

/// A token bucket of failed authentications.
#[derive(Clone, Copy, Debug)]
struct Tries {
    /// Tries left, as of `at`.
    left: u32,
    at: u64,
}

impl Tries {
    /// The tries left at `now`, refilled.
    fn refilled(self, now: u64, limits: &Limits) -> Tries {
        let refill = limits.auth_failure_refill_ms.max(1);
        let gained = now.saturating_sub(self.at) / refill;
        let left = u64::from(self.left)
            .saturating_add(gained)
            .min(u64::from(limits.auth_failure_burst));
        Tries {
            left: u32::try_from(left).unwrap_or(u32::MAX),
            // Keep the part of an interval already run.
            at: self.at.saturating_add(gained.saturating_mul(refill)),
        }
    }

    fn is_full(self, now: u64, limits: &Limits) -> bool {
        self.refilled(now, limits).left >= limits.auth_failure_burst
    }
}

/// The budget's state.
#[derive(Debug, Default)]
pub struct Admission {
    limits: Limits,
    pending: HashMap<AddressKey, usize>,
    pending_total: usize,
    clients: HashMap<UserId, usize>,
    failures: HashMap<AddressKey, Tries>,
}

impl Admission {
    /// A budget with these limits.
    pub fn new(limits: Limits) -> Admission {
        Admission {
            limits,
            ..Admission::default()
        }
    }

    /// A connection from `address` was accepted at `now`: counted as
    /// unauthenticated, or refused (nothing counted). Each `Ok` must be
    /// ended by [`Admission::end_pending`].
    pub fn admit(&mut self, now: u64, address: AddressKey) -> Result<(), Refusal> {
        if let Some(tries) = self.failures.get(&address) {
            if tries.refilled(now, &self.limits).left == 0 {
                return Err(Refusal::TooManyFailures);
            }
        }
        let held = self.pending.get(&address).copied().unwrap_or(0);
        if held >= self.limits.pending_per_address {
            return Err(Refusal::AddressBusy);
        }
        if self.pending_total >= self.limits.pending_total {
            return Err(Refusal::Full);
        }
        self.pending.insert(address, held + 1);
        self.pending_total += 1;
        Ok(())
    }

    /// An admitted connection authenticated or ended.
    pub fn end_pending(&mut self, address: AddressKey) {
        match self.pending.get_mut(&address) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.pending.remove(&address);
            }
            None => return,
        }
        self.pending_total = self.pending_total.saturating_sub(1);
    }

    /// A connection authenticated as `user`: counted as theirs, or refused
    /// when they have as many as they may. Each `Ok` must be ended by
    /// [`Admission::end_client`].
    pub fn bind(&mut self, user: UserId) -> Result<(), Refusal> {
        let held = self.clients.get(&user).copied().unwrap_or(0);
        if held >= self.limits.clients_per_user {
            return Err(Refusal::TooManyClients);
        }
        self.clients.insert(user, held + 1);
        Ok(())
    }

    /// A connection bound to `user` ended.
    pub fn end_client(&mut self, user: UserId) {
        match self.clients.get_mut(&user) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.clients.remove(&user);
            }
            None => {}
        }
    }

    /// `address` presented a token that failed at `now`; answers whether
    /// that used its last try (the moment to log that it is slowed down).
    pub fn auth_failed(&mut self, now: u64, address: AddressKey) -> bool {
        if self.failures.len() >= TRACKED_ADDRESSES && !self.failures.contains_key(&address) {
            let limits = self.limits;
            self.failures.retain(|_, t| !t.is_full(now, &limits));
            if self.failures.len() >= TRACKED_ADDRESSES {
                // Every tracked address is still being slowed down: the
                // newcomer is not tracked rather than letting the map grow.
                return false;
            }
        }
        let fresh = Tries {
            left: self.limits.auth_failure_burst,
            at: now,
        };
        let tries = self.failures.entry(address).or_insert(fresh);
        let mut now_tries = tries.refilled(now, &self.limits);
        now_tries.left = now_tries.left.saturating_sub(1);
        *tries = now_tries;
        now_tries.left == 0
    }

    /// Unauthenticated connections held now, in all.
    pub fn pending_total(&self) -> usize {
        self.pending_total
    }
}

/// Says at most once per interval that something happened, with how often:
/// for events a hostile peer can repeat as fast as it likes (accept errors,
/// refused connections), so the log cannot be flooded.
#[derive(Debug)]
pub struct LogThrottle {
    every_ms: u64,
    last: Option<u64>,
    count: u64,
}

impl LogThrottle {
    /// At most one report per `every_ms`.
    pub fn new(every_ms: u64) -> LogThrottle {
        LogThrottle {
            every_ms,
            last: None,
            count: 0,
        }
    }

    /// The event happened at `now`: `Some(n)` when it is time to log, `n`
    /// being how many happened since the last report (this one included).
    pub fn note(&mut self, now: u64) -> Option<u64> {
        self.count += 1;
        let due = self
            .last
            .is_none_or(|last| now.saturating_sub(last) >= self.every_ms);
        if due {
            self.last = Some(now);
            Some(std::mem::take(&mut self.count))
        } else {
            None
        }
    }
}

/// One admitted connection's place in the budget: unauthenticated, then
/// (after [`Seat::bind`]) its user's; given back when dropped, however the
/// connection ends.
#[derive(Debug)]
pub struct Seat {
    budget: Arc<Mutex<Admission>>,
    address: AddressKey,
    pending: bool,
    user: Option<UserId>,
}

impl Seat {
    /// Admits a connection from `address` accepted at `now`, or refuses it.
    pub fn admit(
        budget: &Arc<Mutex<Admission>>,
        now: u64,
        address: AddressKey,
    ) -> Result<Seat, Refusal> {
        budget.lock().admit(now, address)?;
        Ok(Seat {
            budget: budget.clone(),
            address,
            pending: true,
            user: None,
        })
    }

    /// The address the connection counts against.
    pub fn address(&self) -> AddressKey {
        self.address
    }

    /// The connection authenticated as `user`: it now counts as theirs, or
    /// is refused (and still counts as unauthenticated until dropped).
    pub fn bind(&mut self, user: UserId) -> Result<(), Refusal> {
        let mut budget = self.budget.lock();
        budget.bind(user)?;
        if self.pending {
            budget.end_pending(self.address);
            self.pending = false;
        }
        if let Some(before) = self.user.replace(user) {
            budget.end_client(before);
        }
        Ok(())
    }

    /// The connection's token failed at `now`; answers whether its address
    /// has now used its last try.
    pub fn auth_failed(&self, now: u64) -> bool {
        self.budget.lock().auth_failed(now, self.address)
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut budget = self.budget.lock();
        if self.pending {
            budget.end_pending(self.address);
        }
        if let Some(user) = self.user {
            budget.end_client(user);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(last: u8) -> AddressKey {
        AddressKey::of(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)))
    }

    fn small() -> Limits {
        Limits {
            pending_per_address: 2,
            pending_total: 3,
            clients_per_user: 2,
            auth_failure_burst: 3,
            auth_failure_refill_ms: 1_000,
        }
    }

    #[test]
    fn unauthenticated_connections_are_capped_per_address_and_in_all() {
        let mut a = Admission::new(small());
        assert_eq!(a.admit(0, v4(1)), Ok(()));
        assert_eq!(a.admit(0, v4(1)), Ok(()));
        assert_eq!(a.admit(0, v4(1)), Err(Refusal::AddressBusy));
        assert_eq!(a.admit(0, v4(2)), Ok(()));
        assert_eq!(a.admit(0, v4(3)), Err(Refusal::Full));
        a.end_pending(v4(1));
        assert_eq!(a.pending_total(), 2);
        assert_eq!(a.admit(0, v4(3)), Ok(()));
        for k in [v4(1), v4(2), v4(3)] {
            a.end_pending(k);
        }
        assert_eq!(a.pending_total(), 0);
        assert!(a.pending.is_empty(), "nothing left behind");
        a.end_pending(v4(9));
        assert_eq!(
            a.pending_total(),
            0,
            "an end without an admit changes nothing"
        );
    }

    #[test]
    fn an_ipv6_host_counts_by_its_64_and_a_mapped_ipv4_as_itself() {
        let one: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(AddressKey::of(one.into()), AddressKey::of(same_64.into()));
        assert_ne!(AddressKey::of(one.into()), AddressKey::of(other_64.into()));
        let mapped: Ipv6Addr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(AddressKey::of(mapped.into()), v4(7));
        // No IPv6 /64 is taken for an IPv4 address.
        let low: Ipv6Addr = "::c000:207".parse().unwrap();
        assert_ne!(AddressKey::of(low.into()), v4(7));
    }

    #[test]
    fn a_user_has_at_most_so_many_clients() {
        let mut a = Admission::new(small());
        let (u, v) = (UserId(1), UserId(2));
        assert_eq!(a.bind(u), Ok(()));
        assert_eq!(a.bind(u), Ok(()));
        assert_eq!(a.bind(u), Err(Refusal::TooManyClients));
        assert_eq!(a.bind(v), Ok(()), "another user is not held back");
        a.end_client(u);
        assert_eq!(a.bind(u), Ok(()));
        for user in [u, u, v] {
            a.end_client(user);
        }
        assert!(a.clients.is_empty());
    }

    #[test]
    fn a_seat_gives_back_what_it_holds_however_the_connection_ends() {
        let budget = Arc::new(Mutex::new(Admission::new(small())));
        let left = Seat::admit(&budget, 0, v4(1)).unwrap();
        let mut bound = Seat::admit(&budget, 0, v4(1)).unwrap();
        assert!(Seat::admit(&budget, 0, v4(1)).is_err());
        bound.bind(UserId(7)).unwrap();
        assert_eq!(budget.lock().pending_total(), 1, "bound: no longer pending");
        let mut refused = Seat::admit(&budget, 0, v4(2)).unwrap();
        budget.lock().bind(UserId(7)).unwrap();
        assert_eq!(refused.bind(UserId(7)), Err(Refusal::TooManyClients));
        assert_eq!(
            budget.lock().pending_total(),
            2,
            "a refused bind stays pending"
        );
        drop((left, bound, refused));
        budget.lock().end_client(UserId(7));
        let b = budget.lock();
        assert_eq!(b.pending_total(), 0);
        assert!(b.pending.is_empty() && b.clients.is_empty());
    }

    #[test]
    fn failed_authentications_slow_an_address_down_then_it_may_try_again() {
        let mut a = Admission::new(small());
        assert!(!a.auth_failed(0, v4(1)));
        assert!(!a.auth_failed(10, v4(1)));
        assert!(
            a.auth_failed(20, v4(1)),
            "the last try is the moment to log"
        );
        assert_eq!(a.admit(500, v4(1)), Err(Refusal::TooManyFailures));
        assert_eq!(a.admit(500, v4(2)), Ok(()), "other addresses are not");
        // One try back a refill interval after the bucket's start.
        assert_eq!(a.admit(1_000, v4(1)), Ok(()));
        assert!(a.auth_failed(1_000, v4(1)));
        assert_eq!(a.admit(1_999, v4(1)), Err(Refusal::TooManyFailures));
        assert_eq!(a.admit(2_000, v4(1)), Ok(()));
    }

    #[test]
    fn the_failures_remembered_are_bounded() {
        let mut a = Admission::new(small());
        for i in 0..TRACKED_ADDRESSES as u32 {
            let key = AddressKey::of(IpAddr::V4(Ipv4Addr::from(i)));
            a.auth_failed(0, key);
        }
        assert_eq!(a.failures.len(), TRACKED_ADDRESSES);
        // Still slowed down: the newcomer is not remembered.
        assert!(!a.auth_failed(0, v4(200)));
        assert_eq!(a.failures.len(), TRACKED_ADDRESSES);
        // Once their buckets refilled, they are forgotten for the newcomer.
        a.auth_failed(10_000, v4(200));
        assert_eq!(a.failures.len(), 1);
    }

    #[test]
    fn the_log_throttle_reports_once_per_interval_with_the_count() {
        let mut t = LogThrottle::new(10_000);
        assert_eq!(t.note(0), Some(1));
        for ms in 1..=500 {
            assert_eq!(t.note(ms), None);
        }
        assert_eq!(t.note(10_000), Some(501));
        assert_eq!(t.note(10_001), None);
        assert_eq!(t.note(25_000), Some(2));
    }
}
