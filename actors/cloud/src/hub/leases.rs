//! The hub's side of one owner per network (see [`crate::ownership`]).
//!
//! Every look renews this node's leases, stops what is no longer its own,
//! starts what is, and claims its share of the networks nobody holds, or
//! moves away what it holds past its share (a node joined). The
//! same look applies the admin's changes, since the store is the admin
//! channel: a network `network add` wrote is claimed, one `network remove`
//! deleted is stopped, one `network set` changed is started again with its
//! new settings.

use super::{admin_settings, Hub, Stop};
use crate::ownership::{to_claim, to_move, Lapse, LEASE_MS, RENEW_EVERY_MS};
use crate::store::{NetworkRecord, StoreError, UserId};
use rete_cloud_protocol::frame::NetworkId;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the deadline is checked: well inside the margin the node
/// keeps before its lease could expire.
const DEADLINE_CHECK_MS: u64 = 100;

type Key = (UserId, NetworkId);

impl Hub {
    /// Looks at the leases every [`RENEW_EVERY_MS`] (or `--admin-poll-ms`,
    /// when shorter) until the hub stops.
    pub(super) fn keep_leases(self: Arc<Self>) {
        let every = Duration::from_millis(self.options.admin_poll_ms.clamp(100, RENEW_EVERY_MS));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is now, and `start` has just looked.
            tick.tick().await;
            while !self.stopping.load(Ordering::SeqCst) {
                tick.tick().await;
                self.look_at_leases().await;
            }
        });
    }

    /// Past the node's deadline (it could not renew in time, so another
    /// node may soon claim its networks), closes every connection without a
    /// word. The fence vetoes their lines already; the next renewal that
    /// succeeds starts again those still held.
    pub(super) fn watch_deadline(self: Arc<Self>) {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(DEADLINE_CHECK_MS));
            while !self.stopping.load(Ordering::SeqCst) {
                tick.tick().await;
                if self.fence.lapse() != Lapse::Now {
                    continue;
                }
                let running: Vec<Key> = self.handles.lock().keys().cloned().collect();
                tracing::error!(
                    target: "rete::cloud",
                    "the leases could not be renewed in time: {} network connection(s) closed before another node may claim them",
                    running.len()
                );
                for (user, network) in running {
                    self.stop_network(user, &network, Stop::Lost).await;
                }
            }
        });
    }

    /// The first look, at start: on a database nodes share, it only
    /// renews (which marks the node alive) and claims nothing, so nodes
    /// started together each count the others before taking their share.
    pub(super) async fn first_look(self: &Arc<Self>) {
        if self.fence.shared() {
            let asked = self.fence.now_ms();
            match self.store(|s| s.renew_leases(&self.node, LEASE_MS)) {
                Ok(_) => self.fence.renewed(asked),
                Err(e) => look_failed("renewing the leases", &e),
            }
        } else {
            self.look_at_leases().await;
        }
    }

    /// One look (see the module doc).
    pub(super) async fn look_at_leases(self: &Arc<Self>) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let asked = self.fence.now_ms();
        let held = match self.store(|s| s.renew_leases(&self.node, LEASE_MS)) {
            Ok(held) => {
                self.fence.renewed(asked);
                held
            }
            Err(e) => return look_failed("renewing the leases", &e),
        };
        let all = match self.store(|s| s.all_networks()) {
            Ok(all) => all,
            Err(e) => return look_failed("reading the networks", &e),
        };
        let stored: HashMap<Key, &NetworkRecord> = all
            .iter()
            .map(|(user, record)| ((*user, record.network.clone()), record))
            .collect();
        let held: HashMap<Key, u64> = held
            .into_iter()
            .map(|(user, network, epoch)| ((user, network), epoch))
            .collect();
        for ((user, network), why) in self.to_stop(&stored, &held) {
            let what = match why {
                Stop::HandedOver => "moved to another node",
                Stop::Removed => "removed while running: disconnected",
                Stop::Moved => "changed by the admin: reconnecting with its new settings",
                Stop::Lost => "held by another node now: connection closed without a word",
            };
            tracing::info!(target: "rete::cloud", "network {} of user {}: {what}", network.0, user.0);
            self.stop_network(user, &network, why).await;
        }
        // Held and not running: stopped just now for new settings, or
        // silenced past the deadline and renewed since.
        let running: HashSet<Key> = self.handles.lock().keys().cloned().collect();
        for (key, epoch) in &held {
            if let (false, Some(record)) = (running.contains(key), stored.get(key)) {
                self.start_network(key.0, record, *epoch).await;
            }
        }
        // Lines other nodes' clients sent to these networks, in case a
        // notice was lost.
        if self.fence.shared() {
            self.take_remote_sends();
        }
        let (others, networks) = match self.store(|s| s.lease_census(&self.node)) {
            Ok(census) => census,
            Err(e) => return look_failed("counting the nodes", &e),
        };
        let excess = to_move(networks, others, held.len());
        if excess > 0 {
            return self.hand_over(excess).await;
        }
        let want = to_claim(networks, others, held.len());
        if want == 0 || self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let claimed = match self.store(|s| s.claim_networks(&self.node, LEASE_MS, want)) {
            Ok(claimed) => claimed,
            Err(e) => return look_failed("claiming networks", &e),
        };
        for h in claimed {
            tracing::info!(
                target: "rete::cloud",
                "network {} of user {}: claimed by node {} (epoch {}): connecting",
                h.record.network.0,
                h.user.0,
                self.node.name,
                h.epoch
            );
            self.start_network(h.user, &h.record, h.epoch).await;
        }
    }

    /// Moves `count` networks away: each QUITs, then its lease is given up
    /// for a node holding fewer to claim (this look claims nothing).
    async fn hand_over(&self, count: usize) {
        let mut running: Vec<Key> = self.handles.lock().keys().cloned().collect();
        running.sort_by(|a, b| (a.0 .0, &a.1 .0).cmp(&(b.0 .0, &b.1 .0)));
        for (user, network) in running.into_iter().rev().take(count) {
            tracing::info!(
                target: "rete::cloud",
                "network {} of user {}: more than this node's share: moving it to another node",
                network.0,
                user.0
            );
            self.stop_network(user, &network, Stop::HandedOver).await;
            if let Err(e) = self.store(|s| s.release_lease(&self.node, user, &network)) {
                look_failed("giving a lease up", &e);
            }
        }
    }

    /// The running networks to stop, and why: gone from the store (or
    /// removed and added again, another stream), no longer held by this
    /// node, or given new settings by the admin.
    fn to_stop(
        &self,
        stored: &HashMap<Key, &NetworkRecord>,
        held: &HashMap<Key, u64>,
    ) -> Vec<(Key, Stop)> {
        let routes = self.routes.lock();
        let handles = self.handles.lock();
        handles
            .iter()
            .filter_map(|(key, handle)| {
                let route = routes.get(handle.id())?;
                let record = stored.get(key).filter(|r| r.stream == route.stream);
                let why = match (record, held.get(key)) {
                    (None, _) => Stop::Removed,
                    (Some(_), Some(epoch)) if *epoch != route.epoch => Stop::Lost,
                    (Some(_), None) => Stop::Lost,
                    (Some(r), Some(_)) if route.admin != admin_settings(&r.settings) => Stop::Moved,
                    (Some(_), Some(_)) => return None,
                };
                Some((key.clone(), why))
            })
            .collect()
    }
}

fn look_failed(doing: &str, e: &StoreError) {
    tracing::warn!(target: "rete::cloud", "{doing}: {e}");
}
