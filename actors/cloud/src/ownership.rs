//! One owner per network: the lease arithmetic and the fence, I/O-free.
//!
//! A node holds each of its networks through a lease in the store (owner,
//! epoch, expiry by the database's clock). It renews them all every
//! [`RENEW_EVERY_MS`]; a lease not renewed for [`LEASE_MS`] may be claimed
//! by another node, which bumps the network's epoch, so every append of the
//! old holder (conditional on its epoch) is refused from then on.
//!
//! The IRC server cannot check an epoch, so a node also keeps a deadline of
//! its own: the start of its last successful renewal plus the lease, less
//! [`DEADLINE_MARGIN_MS`]. Past it the [`Fence`] vetoes every line the
//! node's sessions would send and the hub closes their connections without
//! a word: the renewal was asked before the database stamped its expiry, so
//! the node is off IRC before any other node may claim the network. A node
//! whose appends come back fenced is fenced for that session at once.
//!
//! # What happens at each failure
//!
//! - **A node dies** (SIGKILL, a crash, its machine gone): the kernel closes
//!   its sockets, so IRC sees it leave at once. Its leases end within
//!   [`LEASE_MS`] of its last renewal; other nodes claim them at their next
//!   look, connect, and mark the time away in each channel (nobody was on
//!   IRC to receive those lines).
//! - **A node freezes** (SIGSTOP, a suspended VM): the same claims happen,
//!   but its connections stay open until it runs again, so the new holder
//!   registers under a fallback nick and takes the nick back when the old
//!   connection leaves. On waking, the old node's fence vetoes every line,
//!   its connections close unsaid and its appends are fenced.
//! - **A node loses the database** (the link, or a database that stops
//!   answering): it leaves IRC at its deadline, before its leases can end;
//!   other nodes claim them after. Back in touch, it holds nothing and
//!   claims its share of what is free, like a new node.
//! - **The database restarts**: store calls fail until it is back (each
//!   node connects again at its next call); a node that cannot renew by its
//!   deadline leaves IRC, and networks are claimed again once renewals work.
//! - **A node's listener loses its connection**: it connects again each
//!   second, then re-reads every stream its clients follow; a client that
//!   missed rows reads them from the store.
//! - **A node stops cleanly** (SIGTERM): it QUITs, stores every line it
//!   received, then gives its leases up, so others claim them at once.
//! - **A node joins** (or starts again): it claims what nobody holds; a
//!   node holding more than its share plus [`MOVE_SLACK`] QUITs the excess,
//!   [`MOVE_BATCH`] at a time, and gives those leases up, so the new node
//!   claims them (each network away from IRC for about a second).
//! - **A send waits in the outbox when its taker dies**: the next holder
//!   takes it (once per epoch); a line written but whose id was not yet
//!   stored goes out twice, as on one node (PROTOCOL.md §7).

use parking_lot::Mutex;
use rete_actors::{RawOutHook, Verdict};
use rete_engine::ids::SessionId;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// How long a lease lasts after its renewal.
pub const LEASE_MS: u64 = 5_000;
/// How often a node renews its leases (and looks for networks to claim).
pub const RENEW_EVERY_MS: u64 = 1_000;
/// How long before its lease could expire a node that failed to renew
/// stops speaking for its networks: room for the time a renewal takes to
/// reach the database and for the node's own scheduling.
pub const DEADLINE_MARGIN_MS: u64 = 2_000;
/// Most networks a node claims in one look, so a node taking over many
/// connects them in steps.
pub const CLAIM_BATCH: usize = 100;

/// How far past its share a node may hold before it moves networks away:
/// slack, so two nodes do not pass one network back and forth.
pub const MOVE_SLACK: usize = 1;
/// Most networks a node moves away in one look, so a node that joins takes
/// its share in steps, each network a QUIT and a JOIN apart.
pub const MOVE_BATCH: usize = 10;

/// How many networks to move away now: what is held past the share and
/// its slack, at most [`MOVE_BATCH`].
pub fn to_move(networks: u64, other_live_nodes: u64, held: usize) -> usize {
    let share = share(networks, other_live_nodes);
    if held > share + MOVE_SLACK {
        (held - share).min(MOVE_BATCH)
    } else {
        0
    }
}

/// How many networks a node should hold: an equal share of all of them
/// among the nodes that hold some and itself (rounded up, so together the
/// nodes cover every network).
pub fn share(networks: u64, other_live_nodes: u64) -> usize {
    usize::try_from(networks.div_ceil(other_live_nodes + 1)).unwrap_or(usize::MAX)
}

/// How many to claim now: what is missing from the share, at most
/// [`CLAIM_BATCH`].
pub fn to_claim(networks: u64, other_live_nodes: u64, held: usize) -> usize {
    share(networks, other_live_nodes)
        .saturating_sub(held)
        .min(CLAIM_BATCH)
}

/// The node's right to speak on IRC: its lease deadline, and the sessions
/// whose appends were refused. Installed as the engine's raw-out hook.
pub struct Fence {
    started: Instant,
    /// Whether other nodes may use the database (PostgreSQL): only then can
    /// another node claim a network, and only then does the deadline bind.
    shared: bool,
    /// Milliseconds after `started` until which the node may speak (0:
    /// never renewed yet).
    until_ms: AtomicU64,
    /// Set once the deadline passed, until the next renewal.
    lapsed: AtomicBool,
    fenced: Mutex<HashSet<SessionId>>,
}

impl Fence {
    /// A fence for a node whose database is `shared` with other nodes.
    pub fn new(shared: bool) -> Fence {
        Fence {
            started: Instant::now(),
            shared,
            until_ms: AtomicU64::new(0),
            lapsed: AtomicBool::new(false),
            fenced: Mutex::new(HashSet::new()),
        }
    }

    /// Whether other nodes may use the database.
    pub fn shared(&self) -> bool {
        self.shared
    }

    /// Milliseconds since the fence was made: the clock of its deadline.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A renewal asked at `asked_ms` (this fence's clock) succeeded.
    pub fn renewed(&self, asked_ms: u64) {
        let until = asked_ms + LEASE_MS - DEADLINE_MARGIN_MS;
        self.until_ms.fetch_max(until, Ordering::SeqCst);
        self.lapsed.store(false, Ordering::SeqCst);
    }

    /// Whether the node's deadline has passed (never on a database no other
    /// node uses). The first call that finds it passed since the last
    /// renewal answers `Lapsed::Now`, so the hub acts once.
    pub fn lapse(&self) -> Lapse {
        if !self.shared || self.now_ms() <= self.until_ms.load(Ordering::SeqCst) {
            return Lapse::Held;
        }
        if self.lapsed.swap(true, Ordering::SeqCst) {
            Lapse::Already
        } else {
            Lapse::Now
        }
    }

    /// Refuses every further line of `session`: its appends were fenced.
    pub fn fence(&self, session: &SessionId) {
        self.fenced.lock().insert(session.clone());
    }

    /// Forgets `session` (stopped): a new session id is never fenced.
    pub fn forget(&self, session: &SessionId) {
        self.fenced.lock().remove(session);
    }

    /// Whether `session` was fenced.
    pub fn is_fenced(&self, session: &SessionId) -> bool {
        self.fenced.lock().contains(session)
    }
}

/// What [`Fence::lapse`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lapse {
    /// The node may speak.
    Held,
    /// The deadline passed just now: stop every session.
    Now,
    /// It passed before, and the sessions were stopped then.
    Already,
}

impl RawOutHook for Fence {
    fn on_raw_out(&self, session: &SessionId, _line: &str) -> Verdict {
        if self.is_fenced(session) || self.lapse() != Lapse::Held {
            Verdict::Veto
        } else {
            Verdict::Allow
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_network_and_claims_come_in_batches() {
        assert_eq!(share(300, 2), 100);
        assert_eq!(share(301, 2), 101);
        assert_eq!(share(5, 0), 5);
        assert_eq!(share(0, 3), 0);
        assert_eq!(to_claim(300, 1, 100), 50);
        assert_eq!(to_claim(1_000, 0, 0), CLAIM_BATCH);
        assert_eq!(to_claim(10, 1, 7), 0);
        // A node that joins: the one holding all moves its excess, in steps.
        assert_eq!(to_move(300, 1, 300), MOVE_BATCH);
        assert_eq!(to_move(6, 1, 6), 3);
        assert_eq!(to_move(6, 1, 4), 0, "within the slack");
        assert_eq!(to_move(5, 0, 5), 0);
    }

    #[test]
    fn past_its_deadline_a_shared_node_is_vetoed_until_it_renews() {
        let id = SessionId::parse("6f1c2d3e-0000-4000-8000-000000000001").unwrap();
        let fence = Fence::new(true);
        // Never renewed: the deadline is 0, so it has passed.
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(fence.on_raw_out(&id, "PONG x"), Verdict::Veto);
        assert_eq!(fence.lapse(), Lapse::Already, "reported once");
        fence.renewed(fence.now_ms());
        assert_eq!(fence.lapse(), Lapse::Held);
        assert_eq!(fence.on_raw_out(&id, "PONG x"), Verdict::Allow);
        fence.fence(&id);
        assert_eq!(fence.on_raw_out(&id, "PRIVMSG #a :x"), Verdict::Veto);
        fence.forget(&id);
        assert_eq!(fence.on_raw_out(&id, "PRIVMSG #a :x"), Verdict::Allow);
    }

    #[test]
    fn a_node_alone_on_its_database_is_never_vetoed_for_time() {
        let id = SessionId::parse("6f1c2d3e-0000-4000-8000-000000000002").unwrap();
        let fence = Fence::new(false);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(fence.lapse(), Lapse::Held);
        assert_eq!(fence.on_raw_out(&id, "PONG x"), Verdict::Allow);
    }
}
