//! How each held network looks (connection state, nick, `sync` lines),
//! published for the clients of other nodes: every [`PUBLISH_EVERY`] the
//! holder writes the views that changed, with a notice; another node reads
//! a view for `hello` and `sync` when a client attaches, and passes a state
//! change on to its attached clients as a `network` frame. The rows that
//! follow carry every change after it, as they do on one node.

use super::{state_of, Hub, Live};
use crate::store::{NetworkView, UserId};
use crate::sync_lines::sync_lines;
use rete_cloud_protocol::frame::{NetworkId, NetworkState, NetworkUpdate};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often a node publishes the views of its networks that changed.
const PUBLISH_EVERY: Duration = Duration::from_secs(2);

impl Hub {
    /// Publishes the views of this node's networks until the hub stops
    /// (only where other nodes share the database).
    pub(super) fn publish_views(self: Arc<Self>) {
        tokio::spawn(async move {
            let mut published: HashMap<(UserId, NetworkId), NetworkView> = HashMap::new();
            let mut tick = tokio::time::interval(PUBLISH_EVERY);
            while !self.stopping.load(Ordering::SeqCst) {
                tick.tick().await;
                let running: Vec<_> = self
                    .handles
                    .lock()
                    .iter()
                    .map(|(key, handle)| (key.clone(), handle.clone()))
                    .collect();
                published.retain(|key, _| running.iter().any(|(k, _)| k == key));
                for ((user, network), handle) in running {
                    let Ok(view) = handle
                        .reader()
                        .read(|v| {
                            let state = state_of(v.state());
                            NetworkView {
                                state,
                                nick: (state == NetworkState::Connected)
                                    .then(|| v.nick().to_owned()),
                                sync: sync_lines(v),
                            }
                        })
                        .await
                    else {
                        continue;
                    };
                    let key = (user, network);
                    if published.get(&key) == Some(&view) {
                        continue;
                    }
                    match self.store(|s| s.publish_view(key.0, &key.1, &view)) {
                        Ok(()) => {
                            published.insert(key, view);
                        }
                        Err(e) => {
                            tracing::warn!(target: "rete::cloud", "network {}: publishing its view: {e}", key.1.0)
                        }
                    }
                }
            }
        });
    }

    /// The holder of `user`'s `network` published a new view: its state
    /// goes to this node's clients of that user.
    pub(super) fn view_changed(&self, user: UserId, network: &NetworkId) {
        if self.session_of(user, network).is_some() {
            return;
        }
        if let Ok(Some(view)) = self.store(|s| s.view_of(user, network)) {
            self.broadcast(
                user,
                Live::Network(NetworkUpdate {
                    network: network.clone(),
                    state: view.state,
                    nick: view.nick,
                    error: None,
                }),
            );
        }
    }
}
