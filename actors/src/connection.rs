//! The connection task: the only place a session touches a socket.
//!
//! It connects, then forwards each received line to the session actor as a
//! message and writes each line the actor hands it. It holds no IRC state:
//! when it ends, for any reason, it tells the actor why and stops.

use crate::session_actor::SessionMsg;
use ractor::ActorRef;
use rete_transports::{connect, ConnectConfig};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The tasks of one connection attempt; aborting them closes the socket.
pub(crate) struct ConnectionTasks {
    tasks: Vec<JoinHandle<()>>,
}

impl ConnectionTasks {
    /// Stops both halves at once.
    pub(crate) fn abort(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for ConnectionTasks {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Starts connecting in the background. Lines to send go into the returned
/// sender; everything the connection has to say reaches `actor` tagged with
/// `generation`, so the actor can ignore a connection it already gave up on.
pub(crate) fn spawn(
    cfg: ConnectConfig,
    actor: ActorRef<SessionMsg>,
    generation: u64,
) -> (mpsc::UnboundedSender<String>, ConnectionTasks) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let main = tokio::spawn(async move {
        let conn = match connect(&cfg).await {
            Ok(c) => c,
            Err(e) => {
                let _ = actor.cast(SessionMsg::Closed {
                    generation,
                    reason: e.to_string(),
                });
                return;
            }
        };
        let peer = conn.peer;
        let tls = conn.tls.as_ref().map(|t| t.peer_fingerprint_sha256.clone());
        let (mut reader, mut writer) = (conn.reader, conn.writer);
        if actor
            .cast(SessionMsg::Connected {
                generation,
                peer: peer.to_string(),
                tls_fingerprint: tls,
            })
            .is_err()
        {
            return;
        }
        let write_actor = actor.clone();
        let writer_task = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if let Err(e) = writer.send_line(&line).await {
                    let _ = write_actor.cast(SessionMsg::Closed {
                        generation,
                        reason: format!("write failed: {e}"),
                    });
                    return;
                }
            }
            // The actor dropped its sender: it wants the connection closed.
            let _ = writer.shutdown().await;
        });
        let reason = loop {
            match reader.next_line().await {
                Ok(Some(line)) => {
                    if actor.cast(SessionMsg::Line { generation, line }).is_err() {
                        writer_task.abort();
                        return;
                    }
                }
                Ok(None) => break "the server closed the connection".to_owned(),
                Err(e) => break format!("read failed: {e}"),
            }
        };
        writer_task.abort();
        let _ = actor.cast(SessionMsg::Closed { generation, reason });
    });
    (tx, ConnectionTasks { tasks: vec![main] })
}
