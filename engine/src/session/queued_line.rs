//! An outgoing line waiting in the flood throttle.

use std::fmt;

/// A line queued for the wire. It may be PASS, AUTHENTICATE, OPER, a
/// service login or `/smsg` text, so its `Debug` names only its command and
/// length: a session's `{:?}` (a panic message, a test failure, a `tracing`
/// field) never shows what the line carries.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct QueuedLine(pub(crate) String);

impl QueuedLine {
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
        let line = QueuedLine("PASS :hunter2-secret".into());
        assert_eq!(format!("{line:?}"), "QueuedLine(PASS …, 20 bytes)");
        let tagged = QueuedLine("@label=1 :me PRIVMSG NickServ :IDENTIFY pw".into());
        assert_eq!(format!("{tagged:?}"), "QueuedLine(PRIVMSG …, 42 bytes)");
        assert_eq!(
            format!("{:?}", QueuedLine(String::new())),
            "QueuedLine( …, 0 bytes)"
        );
    }
}
