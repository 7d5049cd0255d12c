//! An agent's line (send_raw) from its queueing to the wire: the session
//! actor keeps who waits for each ticket, and answers once the writer has
//! written the line, or says why it was not sent.
//!
//! The answer and the audit row come from the actor, not the caller: a line
//! handed over is still sent, and still leaves its row, when the caller has
//! gone (a request answered 504).

use std::collections::HashMap;

use rete_engine::session::Ticket;
use tokio::sync::oneshot;

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

/// One line waiting for the wire.
struct Pending {
    reply: AgentReply,
    /// The line as recorded (masked and display-escaped), for the audit row
    /// and the log line.
    shown: String,
}

/// The agent lines of one session that are queued or being written.
#[derive(Default)]
pub(crate) struct PendingAgentLines {
    by_ticket: HashMap<Ticket, Pending>,
    /// Set once the session is gone for good: no actor will answer a line
    /// any more, so every line is answered "not sent" at once.
    closed: bool,
}

impl PendingAgentLines {
    /// Waits for `ticket`'s line; answers at once when the session is gone.
    pub(crate) fn insert(&mut self, ticket: Ticket, reply: AgentReply, shown: String) {
        if self.closed {
            let _ = reply.send(Err(AgentLineError::NotSent));
            return;
        }
        self.by_ticket.insert(ticket, Pending { reply, shown });
    }

    /// The session is gone for good (removed, or Rete shut down): the lines
    /// waiting were not sent, and so is any line handed over later. Needed
    /// because the waiting callers hold the session's shared state, and so
    /// these replies, alive: nothing else would ever answer them.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.fail_all();
    }

    /// The line was written: answers the caller and returns what to record.
    pub(crate) fn written(&mut self, ticket: Ticket) -> Option<String> {
        let pending = self.by_ticket.remove(&ticket)?;
        // A caller that is gone still had its line sent; nothing to tell.
        let _ = pending.reply.send(Ok(()));
        Some(pending.shown)
    }

    /// The line was not sent: answers the caller and returns what it was.
    pub(crate) fn not_sent(&mut self, ticket: Ticket) -> Option<String> {
        let pending = self.by_ticket.remove(&ticket)?;
        let _ = pending.reply.send(Err(AgentLineError::NotSent));
        Some(pending.shown)
    }

    /// The connection is gone: every line still waiting was not sent.
    pub(crate) fn fail_all(&mut self) {
        self.fail_all_but(|_| false);
    }

    /// The connection is gone: every line still waiting was not sent, but
    /// those `kept` says will still be answered (a ReteCloud send handed to
    /// the client, whose outcome the service tells after a reconnect).
    pub(crate) fn fail_all_but(&mut self, kept: impl Fn(Ticket) -> bool) {
        let failed: Vec<Ticket> = self
            .by_ticket
            .keys()
            .copied()
            .filter(|&t| !kept(t))
            .collect();
        for t in failed {
            self.not_sent(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn closing_answers_the_lines_waiting_and_every_later_one() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        pending.insert(1, a, "PING :a".into());
        pending.close();
        assert_eq!(a_rx.await, Ok(Err(AgentLineError::NotSent)));
        let (b, b_rx) = oneshot::channel();
        pending.insert(2, b, "PING :b".into());
        assert_eq!(b_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert_eq!(pending.written(2), None, "nothing left to record");
    }

    #[tokio::test]
    async fn each_caller_hears_about_its_own_line() {
        let mut pending = PendingAgentLines::default();
        let (a, a_rx) = oneshot::channel();
        let (b, b_rx) = oneshot::channel();
        let (c, c_rx) = oneshot::channel();
        pending.insert(1, a, "PING :a".into());
        pending.insert(2, b, "PASS :********".into());
        pending.insert(3, c, "PING :c".into());
        assert_eq!(pending.written(2).as_deref(), Some("PASS :********"));
        assert_eq!(pending.written(2), None, "answered once");
        assert_eq!(pending.not_sent(1).as_deref(), Some("PING :a"));
        pending.fail_all();
        assert_eq!(b_rx.await, Ok(Ok(())));
        assert_eq!(a_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert_eq!(c_rx.await, Ok(Err(AgentLineError::NotSent)));
    }

    #[tokio::test]
    async fn lines_kept_at_a_close_are_answered_later() {
        let mut pending = PendingAgentLines::default();
        let (a, mut a_rx) = oneshot::channel();
        let (b, b_rx) = oneshot::channel();
        pending.insert(1, a, "PING :a".into());
        pending.insert(2, b, "PING :b".into());
        pending.fail_all_but(|t| t == 1);
        assert_eq!(b_rx.await, Ok(Err(AgentLineError::NotSent)));
        assert!(a_rx.try_recv().is_err(), "still waiting");
        assert_eq!(pending.written(1).as_deref(), Some("PING :a"));
        assert_eq!(a_rx.await, Ok(Ok(())));
    }
}
