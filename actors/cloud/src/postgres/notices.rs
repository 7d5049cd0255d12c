//! Rows appended on one node, announced to every node: each append
//! transaction sends a NOTIFY per stream it grew (delivered at commit), and
//! each node keeps a listening connection of its own, so a client attached
//! to any node gets the live rows of a network another node holds.
//!
//! The outbox uses the same listener: a line put there wakes the node that
//! holds its network, and its outcome written back wakes the node whose
//! client sent it.
//!
//! A notification lost while the listener was away is gone for good, so
//! after every (re)connection the listener says `Listening`: the hub then
//! reads each followed stream's newest rows from the store again (and the
//! outbox is also looked at every second, and waiting senders ask too).

use crate::store::UserId;
use futures_util::StreamExt;
use rete_cloud_protocol::frame::NetworkId;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel of grown streams.
pub const CHANNEL: &str = "rete_rows";
/// The channel of lines put in the outbox (no payload: the holding node
/// takes every waiting line of its networks).
pub const OUTBOX: &str = "rete_outbox";
/// The channel of outbox lines whose outcome was written back (payload:
/// the outbox id).
pub const OUTBOX_DONE: &str = "rete_outbox_done";
/// The channel of networks whose holder published a new view (payload:
/// `user:network`).
pub const VIEWS: &str = "rete_views";

/// How long the listener waits before connecting again.
const RETRY: Duration = Duration::from_secs(1);

/// Notices waiting for the hub (a slow hub drops the newest: the next
/// `Listening` or notice of that stream reads its rows anyway).
const QUEUE: usize = 4096;

/// What the listener tells the hub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Stream `network` of `user` now ends at `latest`.
    Appended {
        /// Whose.
        user: UserId,
        /// Which network's stream.
        network: NetworkId,
        /// Its newest sequence number.
        latest: u64,
    },
    /// A line was put in the outbox.
    Outbox,
    /// Outbox line `id` has its outcome.
    SendDone {
        /// Its outbox id.
        id: i64,
    },
    /// The holder of `user`'s `network` published a new view of it.
    View {
        /// Whose.
        user: UserId,
        /// Which network.
        network: NetworkId,
    },
    /// The listener (re)connected: notices sent meanwhile are lost.
    Listening,
}

/// The payload of a view notice.
pub fn view_payload(user: i64, network: &str) -> String {
    format!("{user}:{network}")
}

fn parse_view(payload: &str) -> Option<Notice> {
    let (user, network) = payload.split_once(':')?;
    Some(Notice::View {
        user: UserId(user.parse().ok()?),
        network: NetworkId(network.to_owned()),
    })
}

/// The payload of a notice: `user:latest:network` (the network last, since
/// its name may hold a colon).
pub fn payload(user: i64, latest: i64, network: &str) -> String {
    format!("{user}:{latest}:{network}")
}

/// Reads a payload written by [`payload`].
pub fn parse(payload: &str) -> Option<Notice> {
    let mut parts = payload.splitn(3, ':');
    let user = parts.next()?.parse().ok()?;
    let latest = parts.next()?.parse().ok()?;
    let network = parts.next()?;
    Some(Notice::Appended {
        user: UserId(user),
        network: NetworkId(network.to_owned()),
        latest,
    })
}

/// Listens on `config`'s database for as long as the receiver lives,
/// connecting again after any loss.
pub fn listen(config: tokio_postgres::Config) -> mpsc::Receiver<Notice> {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(async move {
        while !tx.is_closed() {
            if let Err(e) = listen_once(&config, &tx).await {
                tracing::warn!(target: "rete::cloud", "listening for other nodes' rows: {e}; again in {RETRY:?}");
            }
            tokio::time::sleep(RETRY).await;
        }
    });
    rx
}

async fn listen_once(
    config: &tokio_postgres::Config,
    tx: &mpsc::Sender<Notice>,
) -> Result<(), String> {
    let (client, mut connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
    let (messages_tx, mut messages) = mpsc::unbounded_channel();
    // The connection is driven here; its notifications come out as messages.
    let driver = tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    let notice = match n.channel() {
                        OUTBOX => Some(Notice::Outbox),
                        OUTBOX_DONE => n.payload().parse().ok().map(|id| Notice::SendDone { id }),
                        VIEWS => parse_view(n.payload()),
                        _ => parse(n.payload()),
                    };
                    if let Some(notice) = notice {
                        if messages_tx.send(notice).is_err() {
                            break;
                        }
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let listening = client
        .batch_execute(&format!(
            "LISTEN {CHANNEL}; LISTEN {OUTBOX}; LISTEN {OUTBOX_DONE}; LISTEN {VIEWS}"
        ))
        .await
        .map_err(|e| e.to_string());
    if listening.is_ok() && tx.send(Notice::Listening).await.is_ok() {
        while let Some(notice) = messages.recv().await {
            // Full: dropped (see QUEUE).
            let _ = tx.try_send(notice);
        }
    }
    driver.abort();
    listening.and(Err("the connection ended".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_with_a_colon_in_the_network() {
        assert_eq!(
            parse(&payload(7, 42, "libera:main")),
            Some(Notice::Appended {
                user: UserId(7),
                network: NetworkId("libera:main".into()),
                latest: 42
            })
        );
        assert_eq!(parse("x:1:n"), None);
        assert_eq!(parse("1:2"), None);
    }
}
