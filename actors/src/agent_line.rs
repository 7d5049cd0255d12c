//! An agent's line (send_raw) from its queueing to the wire: the session
//! actor keeps who waits for each ticket, and answers once the writer has
//! written the line, or says why it was not sent. A host relaying another
//! client's line (the ReteCloud service) waits the same way, without the
//! audit row ([`Record::Relayed`]).
//!
//! The answer and the audit row come from the actor, not the caller: a line
//! handed over is still sent, and still leaves its row, when the caller has
//! gone (a request answered 504).
//!
//! The writer marks a line here, under the same lock the actor settles
//! lines with, before it writes it and again once it has: so whatever order
//! the writer's report and the connection's end reach the actor in (or if
//! the actor dies between them), a line that reached the socket is answered
//! sent and gets its row, and a line answered "not sent" is never written
//! afterwards.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use ractor::ActorRef;
use rete_engine::session::Ticket;
use tokio::sync::oneshot;

use crate::session_actor::SessionMsg;

/// Why an agent's line was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentLineError {
    /// The session is not registered with a server.
    #[error("session not connected")]
    NotConnected,
    /// The raw-out hook vetoed it, or the connection could not take it
    /// (closed before the line was written).
    #[error("line not sent")]
    NotSent,
}

/// What the caller of [`SessionSender::agent_line`](crate::SessionSender::agent_line) gets.
pub(crate) type AgentReply = oneshot::Sender<Result<(), AgentLineError>>;

/// A session's agent lines, shared by its actor (across restarts) and its
/// connection's writer.
pub(crate) type SharedAgentLines = Arc<Mutex<PendingAgentLines>>;

/// Where one line stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// In the engine's queue, or handed to the writer and not started.
    Queued,
    /// The writer is writing it: only the writer can tell how it ends.
    Writing,
    /// On the socket; its row is still to be written.
    Written,
}

/// What a line leaves once sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// An agent's line: its audit row and log line show this (the line
    /// masked and display-escaped).
    Audited(String),
    /// A line relayed for a client of the host (a ReteCloud `send`): no
    /// audit row, as the person's own lines have none.
    Relayed,
}

impl Record {
    /// The audit row's text, if the line has one.
    pub(crate) fn audited(self) -> Option<String> {
        match self {
            Record::Audited(shown) => Some(shown),
            Record::Relayed => None,
        }
    }
}

/// One line waiting for the wire.
struct Pending {
    reply: AgentReply,
    record: Record,
    stage: Stage,
}

/// The agent lines of one session that are queued or being written.
#[derive(Default)]
pub(crate) struct PendingAgentLines {
    by_ticket: HashMap<Ticket, Pending>,
    /// Set once the session is gone for good: no actor will answer a line
    /// any more, so every line is answered "not sent" at once.
    closed: bool,
    /// The live actor, told when the writer has written a line; set by each
    /// actor as it starts.
    actor: Option<ActorRef<SessionMsg>>,
}

impl PendingAgentLines {
    /// Waits for `ticket`'s line; answers at once when the session is gone.
    pub(crate) fn insert(&mut self, ticket: Ticket, reply: AgentReply, record: Record) {
        if self.closed {
            let _ = reply.send(Err(AgentLineError::NotSent));
            return;
        }
        let stage = Stage::Queued;
        self.by_ticket.insert(
            ticket,
            Pending {
                reply,
                record,
                stage,
            },
        );
    }

    /// A new actor runs the session: the writer's reports go to it.
    pub(crate) fn set_actor(&mut self, actor: ActorRef<SessionMsg>) {
        self.actor = Some(actor);
    }

    /// The session is gone for good (removed, or Rete shut down): the lines
    /// waiting were not sent, and so is any line handed over later. Needed
    /// because the waiting callers hold the session's shared state, and so
    /// these replies, alive: nothing else would ever answer them. A line
    /// already on the socket is answered sent (there is no buffer left for
    /// its row); one being written is answered by its writer.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.actor = None;
        // No buffer is left for the rows of lines already on the socket.
        let _sent = self.settle(|_| false);
    }

    /// The writer is about to write `ticket`'s line. False when the line was
    /// answered already (not sent, its connection gone): it must not go.
    pub(crate) fn start_writing(&mut self, ticket: Ticket) -> bool {
        match self.by_ticket.get_mut(&ticket) {
            Some(p) if p.stage == Stage::Queued => {
                p.stage = Stage::Writing;
                true
            }
            _ => false,
        }
    }

    /// The writer wrote `ticket`'s line: returns the actor to tell, which
    /// then writes its row ([`written`](Self::written)). With the session
    /// gone, the caller is answered here.
    pub(crate) fn wrote(&mut self, ticket: Ticket) -> Option<ActorRef<SessionMsg>> {
        if self.closed {
            if let Some(p) = self.by_ticket.remove(&ticket) {
                let _ = p.reply.send(Ok(()));
            }
            return None;
        }
        let p = self.by_ticket.get_mut(&ticket)?;
        p.stage = Stage::Written;
        self.actor.clone()
    }

    /// The writer could not write `ticket`'s line (the write failed, or the
    /// connection was dropped while it waited to be written).
    pub(crate) fn write_failed(&mut self, ticket: Ticket) {
        if self
            .by_ticket
            .get(&ticket)
            .is_some_and(|p| p.stage == Stage::Writing)
        {
            self.answer_not_sent(ticket);
        }
    }

    /// The line was sent (written to the socket, or acknowledged by the
    /// ReteCloud service): answers the caller and returns what to record.
    pub(crate) fn written(&mut self, ticket: Ticket) -> Option<Record> {
        let pending = self.by_ticket.remove(&ticket)?;
        // A caller that is gone still had its line sent; nothing to tell.
        let _ = pending.reply.send(Ok(()));
        Some(pending.record)
    }

    /// The line will not be sent (vetoed, or never handed to a writer):
    /// answers the caller and returns what it was. A line the writer has
    /// started is not the actor's to fail; its writer answers it.
    pub(crate) fn not_sent(&mut self, ticket: Ticket) -> Option<Record> {
        if self
            .by_ticket
            .get(&ticket)
            .is_none_or(|p| p.stage != Stage::Queued)
        {
            return None;
        }
        self.answer_not_sent(ticket)
    }

    fn answer_not_sent(&mut self, ticket: Ticket) -> Option<Record> {
        let pending = self.by_ticket.remove(&ticket)?;
        let _ = pending.reply.send(Err(AgentLineError::NotSent));
        Some(pending.record)
    }

    /// The connection is gone: every line not yet written was not sent
    /// (answered here), except those `kept` says will still be answered (a
    /// ReteCloud send handed to the client, whose outcome the service tells
    /// after a reconnect). Lines already on the socket are answered sent, and
    /// the audit rows of those that have one returned, for the caller to
    /// write; a line being written is left to its writer.
    pub(crate) fn settle(&mut self, kept: impl Fn(Ticket) -> bool) -> Vec<String> {
        let mut tickets: Vec<(Ticket, Stage)> = self
            .by_ticket
            .iter()
            .map(|(&t, p)| (t, p.stage))
            .filter(|&(t, _)| !kept(t))
            .collect();
        // The rows of lines written, in the order they were queued.
        tickets.sort_unstable_by_key(|&(t, _)| t);
        let mut sent = Vec::new();
        for (t, stage) in tickets {
            match stage {
                Stage::Queued => {
                    self.answer_not_sent(t);
                }
                Stage::Writing => {}
                Stage::Written => sent.extend(self.written(t).and_then(Record::audited)),
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audited(shown: &str) -> Record {
        Record::Audited(shown.into())
    }

    #[tokio::test]
    async fn closing_answers_the_lines_waiting_and_every_later_one() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        pending.insert(1, a, audited("PING :a"));
        pending.close();
        assert_eq!(a_rx.await, Ok(Err(AgentLineError::NotSent)));
        let (b, b_rx) = oneshot::channel();
        pending.insert(2, b, audited("PING :b"));
        assert_eq!(b_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert_eq!(pending.written(2), None, "nothing left to record");
    }

    #[tokio::test]
    async fn each_caller_hears_about_its_own_line() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        let (b, b_rx) = oneshot::channel();
        let (c, c_rx) = oneshot::channel();
        pending.insert(1, a, audited("PING :a"));
        pending.insert(2, b, audited("PASS :********"));
        pending.insert(3, c, audited("PING :c"));
        assert_eq!(pending.written(2), Some(audited("PASS :********")));
        assert_eq!(pending.written(2), None, "answered once");
        assert_eq!(pending.not_sent(1), Some(audited("PING :a")));
        assert!(pending.settle(|_| false).is_empty());
        assert_eq!(b_rx.await, Ok(Ok(())));
        assert_eq!(a_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert_eq!(c_rx.await, Ok(Err(AgentLineError::NotSent)));
    }

    #[tokio::test]
    async fn lines_kept_at_a_close_are_answered_later() {
        let mut pending = PendingAgentLines::default();
        let (a, mut a_rx) = oneshot::channel();
        let (b, b_rx) = oneshot::channel();
        pending.insert(1, a, audited("PING :a"));
        pending.insert(2, b, audited("PING :b"));
        assert!(pending.settle(|t| t == 1).is_empty());
        assert_eq!(b_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert!(a_rx.try_recv().is_err(), "still waiting");
        assert_eq!(pending.written(1), Some(audited("PING :a")));
        assert_eq!(a_rx.await, Ok(Ok(())));
    }

    #[tokio::test]
    async fn a_line_on_the_socket_is_sent_whatever_reaches_the_actor_first() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        let (b, mut b_rx) = oneshot::channel();
        let (c, c_rx) = oneshot::channel();
        pending.insert(1, a, audited("PING :written"));
        pending.insert(2, b, audited("PING :writing"));
        pending.insert(3, c, audited("PING :queued"));
        assert!(pending.start_writing(1));
        assert!(!pending.start_writing(1), "started once");
        pending.wrote(1);
        assert!(pending.start_writing(2));
        // The connection ends before the actor took the writer's report.
        assert_eq!(pending.settle(|_| false), ["PING :written"]);
        assert_eq!(a_rx.await, Ok(Ok(())));
        assert_eq!(c_rx.await, Ok(Err(AgentLineError::NotSent)));
        // The line being written is its writer's to answer, not the actor's.
        assert_eq!(pending.not_sent(2), None);
        assert!(b_rx.try_recv().is_err(), "still being written");
        pending.write_failed(2);
        assert_eq!(b_rx.await, Ok(Err(AgentLineError::NotSent)));
        // A line answered "not sent" is never written afterwards.
        assert!(!pending.start_writing(3));
        assert_eq!(pending.written(1), None, "its report finds nothing left");
    }

    #[tokio::test]
    async fn a_relayed_line_is_answered_and_leaves_no_row() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        let (b, b_rx) = oneshot::channel();
        pending.insert(1, a, Record::Relayed);
        pending.insert(2, b, audited("PING :b"));
        assert!(pending.start_writing(1));
        pending.wrote(1);
        assert!(pending.start_writing(2));
        pending.wrote(2);
        assert_eq!(
            pending.settle(|_| false),
            ["PING :b"],
            "only the agent's row"
        );
        assert_eq!(a_rx.await, Ok(Ok(())));
        assert_eq!(b_rx.await, Ok(Ok(())));
    }

    #[tokio::test]
    async fn a_line_written_after_the_session_is_gone_is_answered_sent() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        pending.insert(1, a, audited("PING :a"));
        assert!(pending.start_writing(1));
        pending.close();
        assert!(pending.wrote(1).is_none(), "no actor to tell");
        assert_eq!(a_rx.await, Ok(Ok(())));
    }
}
