//! The connection task: the only place a session touches a socket.
//!
//! It connects, then forwards each received line to the session actor as a
//! message and writes each line the actor hands it. For a ReteCloud session
//! the "lines" are the WebSocket's text messages (one frame each), which
//! the actor decodes. It holds no IRC state:
//! when it ends, for any reason, it tells the actor why and stops.
//!
//! **Backpressure.** At most [`MAX_LINES_IN_FLIGHT`] received lines wait in
//! the actor's mailbox: each carries a [`LinePermit`], released when the
//! actor has handled it, and the reader takes a permit before it reads the
//! next line. When the actor falls behind, the reader stops reading, the
//! socket's receive buffer fills and TCP's window closes, so a burst waits in
//! the server's send queue rather than in our heap. The mailbox then holds at
//! most `MAX_LINES_IN_FLIGHT` lines of at most 8,191 + 512 bytes each (IRCv3's
//! tag and message limits, which the line reader enforces), about 8.9 MB in
//! the worst case and 0.5 MB for ordinary 512-byte lines.

use std::sync::Arc;

use crate::session_actor::SessionMsg;
use ractor::ActorRef;
use rete_engine::session::Ticket;
use rete_transports::websocket::{self, CloudConnection, Incoming};
use rete_transports::{connect, CloudConfig, Connection, Transport};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

/// Received lines that may wait in the session actor's mailbox at once.
pub const MAX_LINES_IN_FLIGHT: usize = 1024;

/// One received line's place in the mailbox: dropping it (when the actor
/// has handled the line, or discarded it as stale) lets the connection read
/// one more line.
pub struct LinePermit(#[allow(dead_code)] OwnedSemaphorePermit);

/// One line for the writer. A line with a ticket is an agent's, and its
/// writing is reported back ([`SessionMsg::Written`]).
pub(crate) struct Outgoing {
    /// The line without CR LF.
    pub(crate) line: String,
    /// The agent line's ticket, if it is one.
    pub(crate) ticket: Option<Ticket>,
}

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
    transport: Transport,
    actor: ActorRef<SessionMsg>,
    generation: u64,
    span: tracing::Span,
) -> (mpsc::UnboundedSender<Outgoing>, ConnectionTasks) {
    let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
    let main = match transport {
        Transport::Irc(_) => spawn_irc(transport, actor, generation, span, rx),
        Transport::ReteCloud(cloud) => spawn_cloud(cloud, actor, generation, span, rx),
    };
    (tx, ConnectionTasks { tasks: vec![main] })
}

fn spawn_irc(
    transport: Transport,
    actor: ActorRef<SessionMsg>,
    generation: u64,
    span: tracing::Span,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) -> JoinHandle<()> {
    tokio::spawn(
        async move {
            let conn = match open(&transport).await {
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
            // Aborted with the connection: when this task is aborted (or ends),
            // the guard's drop stops the writer too, so no half outlives it.
            let writer_task = AbortOnDrop(tokio::spawn(
                async move {
                    while let Some(out) = rx.recv().await {
                        if let Err(e) = writer.send_line(&out.line).await {
                            let _ = write_actor.cast(SessionMsg::Closed {
                                generation,
                                reason: format!("write failed: {e}"),
                            });
                            return;
                        }
                        if let Some(ticket) = out.ticket {
                            let _ = write_actor.cast(SessionMsg::Written { generation, ticket });
                        }
                    }
                    // The actor dropped its sender: it wants the connection closed.
                    let _ = writer.shutdown().await;
                }
                .in_current_span(),
            ));
            let in_flight = Arc::new(Semaphore::new(MAX_LINES_IN_FLIGHT));
            let reason = loop {
                // Wait for room in the mailbox before reading more from the socket.
                let Ok(permit) = in_flight.clone().acquire_owned().await else {
                    break "the line queue closed".to_owned();
                };
                match reader.next_line().await {
                    Ok(Some(line)) => {
                        let permit = LinePermit(permit);
                        if actor
                            .cast(SessionMsg::Line {
                                generation,
                                line,
                                permit,
                            })
                            .is_err()
                        {
                            return;
                        }
                    }
                    Ok(None) => break "the server closed the connection".to_owned(),
                    Err(e) => break format!("read failed: {e}"),
                }
            };
            drop(writer_task);
            let _ = actor.cast(SessionMsg::Closed { generation, reason });
        }
        .instrument(span),
    )
}

/// A ReteCloud session's connection: the same shape, with WebSocket text
/// messages for lines. Each text message is one frame; the session actor
/// decodes it (with the same permits, so a fast service is held back by
/// TCP as a fast IRC server is), and each `Outgoing` is a frame to send.
fn spawn_cloud(
    cloud: CloudConfig,
    actor: ActorRef<SessionMsg>,
    generation: u64,
    span: tracing::Span,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) -> JoinHandle<()> {
    tokio::spawn(
        async move {
            let conn: CloudConnection = match websocket::open(&cloud).await {
                Ok(c) => c,
                Err(e) => {
                    let _ = actor.cast(SessionMsg::Closed {
                        generation,
                        reason: e.to_string(),
                    });
                    return;
                }
            };
            let tls = conn.tls.as_ref().map(|t| t.peer_fingerprint_sha256.clone());
            let (mut reader, mut writer) = (conn.reader, conn.writer);
            if actor
                .cast(SessionMsg::Connected {
                    generation,
                    peer: conn.peer.to_string(),
                    tls_fingerprint: tls,
                })
                .is_err()
            {
                return;
            }
            let write_actor = actor.clone();
            let writer_task = AbortOnDrop(tokio::spawn(
                async move {
                    while let Some(out) = rx.recv().await {
                        if let Err(e) = writer.send_text(out.line).await {
                            let _ = write_actor.cast(SessionMsg::Closed {
                                generation,
                                reason: format!("write failed: {e}"),
                            });
                            return;
                        }
                    }
                    writer.close().await;
                }
                .in_current_span(),
            ));
            let in_flight = Arc::new(Semaphore::new(MAX_LINES_IN_FLIGHT));
            let reason = loop {
                let Ok(permit) = in_flight.clone().acquire_owned().await else {
                    break "the frame queue closed".to_owned();
                };
                match reader.next().await {
                    Ok(Some(Incoming::Text(line))) => {
                        let permit = LinePermit(permit);
                        if actor
                            .cast(SessionMsg::Line {
                                generation,
                                line,
                                permit,
                            })
                            .is_err()
                        {
                            return;
                        }
                    }
                    // The protocol has no binary frames: close and resume.
                    Ok(Some(Incoming::Binary)) => {
                        break "the service sent a binary message".to_owned()
                    }
                    Ok(None) => break "the service closed the connection".to_owned(),
                    Err(e) => break format!("read failed: {e}"),
                }
            };
            drop(writer_task);
            let _ = actor.cast(SessionMsg::Closed { generation, reason });
        }
        .instrument(span),
    )
}

/// Opens an IRC session's wire.
async fn open(transport: &Transport) -> Result<Connection, rete_transports::ConnectError> {
    match transport {
        Transport::Irc(cfg) => connect(cfg).await,
        Transport::ReteCloud(_) => Err(rete_transports::ConnectError::Tls(
            "a ReteCloud transport is opened by its own task".into(),
        )),
    }
}

/// A task that is aborted when this handle is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
