//! Live rows of networks another node holds, for this node's clients: each
//! notice says a stream grew (see [`crate::postgres::notices`]); the hub
//! reads the new rows from the store and broadcasts them as it does its own.
//! A connection that finds a row missing reads the store itself (its feed's
//! `Offer::Ahead`), so a notice lost or dropped costs a catch-up, never a
//! row; after the listener connects again, every followed stream is read.

use super::{Hub, Live};
use crate::postgres::notices::Notice;
use crate::store::UserId;
use rete_cloud_protocol::frame::{NetworkId, StreamId};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Most rows one notice reads: a connection further behind catches up from
/// the store on its own.
const READ_LIMIT: u64 = 1_000;

impl Hub {
    /// Follows the notices until the listener ends.
    pub(super) fn follow_remote_rows(self: Arc<Self>, mut notices: mpsc::Receiver<Notice>) {
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                match notice {
                    Notice::Appended {
                        user,
                        network,
                        latest,
                    } => self.remote_appended(user, &network, latest),
                    Notice::Outbox => self.take_remote_sends(),
                    Notice::SendDone { id } => self.send_done(id),
                    Notice::View { user, network } => self.view_changed(user, &network),
                    Notice::Listening => {
                        self.reread_remote_streams();
                        self.take_remote_sends();
                    }
                }
            }
        });
    }

    /// Whether a connection of `user` is attached here.
    fn has_listeners(&self, user: UserId) -> bool {
        self.live
            .lock()
            .get(&user)
            .is_some_and(|tx| tx.receiver_count() > 0)
    }

    /// Broadcasts the rows of `user`'s `network` after those broadcast
    /// before, up to `latest`, unless this node holds the network (its
    /// writer broadcast them) or none of the user's connections is here.
    fn remote_appended(&self, user: UserId, network: &NetworkId, latest: u64) {
        if self.session_of(user, network).is_some() || !self.has_listeners(user) {
            return;
        }
        let key = (user, network.clone());
        let known = self.remote_seen.lock().get(&key).cloned();
        let (stream, from) = match known {
            Some((_, seen)) if seen >= latest => return,
            Some((stream, seen)) => (stream, seen + 1),
            None => match self.stream_of(user, network) {
                Some(stream) => (stream, latest),
                None => return,
            },
        };
        let from = from.max(latest.saturating_sub(READ_LIMIT) + 1);
        let rows = match self.store(|s| s.rows(user, network, from..=latest)) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(target: "rete::cloud", "network {}: reading another node's rows: {e}", network.0);
                return;
            }
        };
        self.remote_seen
            .lock()
            .insert(key, (stream.clone(), latest));
        for row in rows {
            self.broadcast(
                user,
                Live::Row {
                    stream: stream.clone(),
                    seq: row.seq,
                    time: row.time,
                    line: row.line,
                },
            );
        }
    }

    fn stream_of(&self, user: UserId, network: &NetworkId) -> Option<StreamId> {
        let all = self.store(|s| s.networks(user)).ok()?;
        all.into_iter()
            .find(|n| &n.network == network)
            .map(|n| n.stream)
    }

    /// After the listener (re)connected: each stream of a network held
    /// elsewhere, of a user attached here, read to its end.
    fn reread_remote_streams(&self) {
        let users: Vec<UserId> = self
            .live
            .lock()
            .iter()
            .filter(|(_, tx)| tx.receiver_count() > 0)
            .map(|(user, _)| *user)
            .collect();
        for user in users {
            let Ok(networks) = self.store(|s| s.networks(user)) else {
                continue;
            };
            for n in networks {
                if self.session_of(user, &n.network).is_some() {
                    continue;
                }
                // The stream may be new (removed and added again).
                self.remote_seen.lock().retain(|(u, net), (stream, _)| {
                    !(*u == user && *net == n.network && *stream != n.stream)
                });
                if let Ok(extent) = self.store(|s| s.extent(user, &n.network)) {
                    self.remote_appended(user, &n.network, extent.latest);
                }
            }
        }
    }
}
