//! An outgoing line waiting in the flood throttle.

use std::fmt;

/// A line queued for the wire. It may be PASS, AUTHENTICATE, OPER, a
/// service login or `/smsg` text, so its `Debug` names only its command and
/// length: a session's `{:?}` (a panic message, a test failure, a `tracing`
/// field) never shows what the line carries.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct QueuedLine(pub(crate) String, pub(crate) Origin);

/// Who waits for a queued line to go on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// No one.
    Plain,
    /// An agent's line (send_raw): the host answers the agent once this very
    /// line is written (or vetoed), by its ticket.
    Agent(Ticket),
    /// The engine's own WHO: its 45-second timeout starts when it is
    /// written, not while it waits behind other lines in the throttle.
    SilentWho,
}

/// Names one agent line from queueing to the wire; see
/// [`Commands::agent_line`](super::Commands::agent_line).
pub type Ticket = u64;

impl QueuedLine {
    /// A line no one waits for.
    pub(crate) fn plain(line: String) -> QueuedLine {
        QueuedLine(line, Origin::Plain)
    }

    /// The command word, read past an `@tags` word and a `:source` word.
    fn command(&self) -> &str {
        let mut words = self.0.split(' ').filter(|w| !w.is_empty());
        let mut word = words.next().unwrap_or("");
        if word.starts_with('@') {
            word = words.next().unwrap_or("");
        }
        if word.starts_with(':') {
            word = words.next().unwrap_or("");
        }
        word
    }
}

impl fmt::Debug for QueuedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "QueuedLine({} …, {} bytes)",
            self.command(),
            self.0.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::QueuedLine;

    #[test]
    fn debug_names_the_command_and_length_only() {
        let line = QueuedLine::plain("PASS :hunter2-secret".into());
        assert_eq!(format!("{line:?}"), "QueuedLine(PASS …, 20 bytes)");
        let tagged = QueuedLine::plain("@label=1 :me PRIVMSG NickServ :IDENTIFY pw".into());
        assert_eq!(format!("{tagged:?}"), "QueuedLine(PRIVMSG …, 42 bytes)");
        assert_eq!(
            format!("{:?}", QueuedLine::plain(String::new())),
            "QueuedLine( …, 0 bytes)"
        );
    }
}
