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

use std::future::Future;

use crate::agent_line::SharedAgentLines;
use crate::session_actor::SessionMsg;
use ractor::ActorRef;
use rete_engine::session::Ticket;
use rete_transports::websocket::{self, CloudReader, CloudWriter, Incoming};
use rete_transports::{connect, LineReader, LineWriter, Transport};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

/// Received lines that may wait in the session actor's mailbox at once.
pub const MAX_LINES_IN_FLIGHT: usize = 1024;

/// One received line's place in the mailbox: dropping it (when the actor
/// has handled the line, or discarded it as stale) lets the connection read
/// one more line.
pub struct LinePermit(#[allow(dead_code)] OwnedSemaphorePermit);

/// One line for the writer. A line with a ticket is an agent's: it is
/// marked in the session's [`SharedAgentLines`] as it is written, and its
/// writing reported back ([`SessionMsg::Written`]).
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

/// Where the writer marks and reports the agent lines it writes.
pub(crate) struct AgentReports {
    /// The session's agent lines, which the actor settles from.
    pub(crate) lines: SharedAgentLines,
    /// True while a test holds the reports back (never in production).
    pub(crate) held: tokio::sync::watch::Receiver<bool>,
}

/// Starts connecting in the background. Lines to send go into the returned
/// sender; everything the connection has to say reaches `actor` tagged with
/// `generation`, so the actor can ignore a connection it already gave up on.
pub(crate) fn spawn(
    transport: Transport,
    actor: ActorRef<SessionMsg>,
    generation: u64,
    span: tracing::Span,
    reports: AgentReports,
) -> (mpsc::UnboundedSender<Outgoing>, ConnectionTasks) {
    let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
    let main = tokio::spawn(
        async move {
            let task = Task {
                actor,
                generation,
                reports,
            };
            match transport {
                Transport::Irc(cfg) => match connect(&cfg).await {
                    Ok(c) => task.run(c.reader, c.writer, c.peer, c.tls, rx).await,
                    Err(e) => task.closed(e.to_string()),
                },
                Transport::ReteCloud(cloud) => match websocket::open(&cloud).await {
                    Ok(c) => task.run(c.reader, c.writer, c.peer, c.tls, rx).await,
                    Err(e) => task.closed(e.to_string()),
                },
            }
        }
        .instrument(span),
    );
    (tx, ConnectionTasks { tasks: vec![main] })
}

/// What the reader got from the wire.
enum Received {
    /// An IRC line, or the text of one frame.
    Line(String),
    /// The wire ended, for this reason.
    Ended(String),
}

/// The reading half of a wire: an IRC socket's lines, or a ReteCloud
/// WebSocket's text messages (one frame each, which the actor decodes).
trait WireRead: Send + 'static {
    fn receive(&mut self) -> impl Future<Output = Received> + Send;
}

/// The writing half: a line (or a frame's text) per [`Outgoing`].
trait WireWrite: Send + 'static {
    fn send(&mut self, line: String) -> impl Future<Output = Result<(), String>> + Send;
    /// Closes the wire politely: the actor wants the connection closed.
    fn finish(self) -> impl Future<Output = ()> + Send;
}

impl WireRead for LineReader {
    async fn receive(&mut self) -> Received {
        match self.next_line().await {
            Ok(Some(line)) => Received::Line(line),
            Ok(None) => Received::Ended("the server closed the connection".to_owned()),
            Err(e) => Received::Ended(format!("read failed: {e}")),
        }
    }
}

impl WireWrite for LineWriter {
    async fn send(&mut self, line: String) -> Result<(), String> {
        self.send_line(&line).await.map_err(|e| e.to_string())
    }

    async fn finish(mut self) {
        let _ = self.shutdown().await;
    }
}

impl WireRead for CloudReader {
    async fn receive(&mut self) -> Received {
        match self.next().await {
            Ok(Some(Incoming::Text(frame))) => Received::Line(frame),
            // The protocol has no binary frames: close and resume.
            Ok(Some(Incoming::Binary)) => {
                Received::Ended("the service sent a binary message".to_owned())
            }
            Ok(None) => Received::Ended("the service closed the connection".to_owned()),
            Err(e) => Received::Ended(format!("read failed: {e}")),
        }
    }
}

impl WireWrite for CloudWriter {
    async fn send(&mut self, frame: String) -> Result<(), String> {
        self.send_text(frame).await
    }

    async fn finish(mut self) {
        self.close().await;
    }
}

/// One connection attempt's reporting to its session actor.
struct Task {
    actor: ActorRef<SessionMsg>,
    generation: u64,
    reports: AgentReports,
}

impl Task {
    /// Tells the actor the connection is gone, and why.
    fn closed(&self, reason: String) {
        let _ = self.actor.cast(SessionMsg::Closed {
            generation: self.generation,
            reason,
        });
    }

    /// Drives an open wire to its end, the same way for both transports:
    /// the actor is told it connected, a writer task writes what the actor
    /// hands it, and this task reads, one permit per line in the mailbox.
    async fn run(
        self,
        mut reader: impl WireRead,
        writer: impl WireWrite,
        peer: std::net::SocketAddr,
        tls: Option<rete_transports::TlsInfo>,
        rx: mpsc::UnboundedReceiver<Outgoing>,
    ) {
        let Task {
            actor,
            generation,
            reports,
        } = self;
        let connected = SessionMsg::Connected {
            generation,
            peer: peer.to_string(),
            tls_fingerprint: tls.map(|t| t.peer_fingerprint_sha256),
        };
        if actor.cast(connected).is_err() {
            return;
        }
        // Aborted with the connection: when this task is aborted (or ends),
        // the guard's drop stops the writer too, so no half outlives it.
        let writer_task = AbortOnDrop(tokio::spawn(
            write_all(writer, rx, actor.clone(), generation, reports).in_current_span(),
        ));
        let in_flight = Arc::new(Semaphore::new(MAX_LINES_IN_FLIGHT));
        let reason = loop {
            // Wait for room in the mailbox before reading more from the socket.
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break "the line queue closed".to_owned();
            };
            match reader.receive().await {
                Received::Line(line) => {
                    let permit = LinePermit(permit);
                    let line = SessionMsg::Line {
                        generation,
                        line,
                        permit,
                    };
                    if actor.cast(line).is_err() {
                        return;
                    }
                }
                Received::Ended(reason) => break reason,
            }
        };
        drop(writer_task);
        let _ = actor.cast(SessionMsg::Closed { generation, reason });
    }
}

/// The writer task: writes each line the actor hands over, until the actor
/// drops its sender (then the wire is closed politely) or a write fails.
///
/// An agent's line is marked in the session's agent lines before it is
/// written (one the actor answered "not sent" meanwhile is skipped, never
/// written) and once it is, and only then reported: so the actor, settling
/// a closed connection, knows every line that reached the socket even when
/// the report is behind the close in its mailbox or is lost with a failed
/// actor. A write that fails, or a writer dropped mid-write (the connection
/// aborted), answers its line "not sent".
async fn write_all(
    mut writer: impl WireWrite,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    actor: ActorRef<SessionMsg>,
    generation: u64,
    mut reports: AgentReports,
) {
    while let Some(out) = rx.recv().await {
        let writing = match out.ticket {
            Some(ticket) if !reports.lines.lock().start_writing(ticket) => continue,
            Some(ticket) => Some(Writing {
                lines: reports.lines.clone(),
                ticket,
                armed: true,
            }),
            None => None,
        };
        if let Err(e) = writer.send(out.line).await {
            drop(writing);
            let _ = actor.cast(SessionMsg::Closed {
                generation,
                reason: format!("write failed: {e}"),
            });
            return;
        }
        if let Some(writing) = writing {
            let ticket = writing.done();
            let tell = reports.lines.lock().wrote(ticket);
            // Only a test holds reports back; the line is marked written.
            let _ = reports.held.wait_for(|held| !held).await;
            if let Some(actor) = tell {
                let _ = actor.cast(SessionMsg::Written { ticket });
            }
        }
    }
    writer.finish().await;
}

/// An agent's line being written: dropped before [`Writing::done`] (the
/// write failed, or the writer was aborted mid-write), the line was not sent.
struct Writing {
    lines: SharedAgentLines,
    ticket: Ticket,
    armed: bool,
}

impl Writing {
    /// The line is on the socket: disarms the guard.
    fn done(mut self) -> Ticket {
        self.armed = false;
        self.ticket
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        if self.armed {
            self.lines.lock().write_failed(self.ticket);
        }
    }
}

/// A task that is aborted when this handle is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
