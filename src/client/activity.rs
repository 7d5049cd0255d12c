//! Activity levels, irssi's `Act:` habit: a buffer the person is not
//! looking at is marked by the most important thing that happened in it.

use rete_engine::buffer::BufferKind;
use rete_engine::row::{Payload, Row};

/// How much happened, in increasing order of importance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Nothing new.
    #[default]
    None,
    /// Joins, parts, quits, nick and mode changes, server chatter.
    Events,
    /// Someone spoke in a channel.
    Message,
    /// A private message, or the person's nick or a highlight word.
    Highlight,
}

/// The level one row raises its buffer to. Our own rows raise nothing: the
/// person knows what they said.
pub fn level_of(row: &Row, kind: BufferKind, own_nick: &str, highlighted: bool) -> Level {
    if !own_nick.is_empty() && row.from.eq_ignore_ascii_case(own_nick) {
        return Level::None;
    }
    let spoken = matches!(
        row.payload,
        Payload::Privmsg { .. } | Payload::Notice { .. } | Payload::Action { .. }
    );
    if spoken && (highlighted || kind == BufferKind::Query) {
        Level::Highlight
    } else if spoken && kind == BufferKind::Channel {
        Level::Message
    } else {
        Level::Events
    }
}

/// Raises `current` to `new` when it is higher; levels never go down until
/// the buffer is looked at.
pub fn raise(current: &mut Level, new: Level) {
    if new > *current {
        *current = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    fn row(from: &str, payload: Payload) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(0),
            msgid: None,
            from: from.into(),
            history: false,
            payload,
        }
    }

    #[test]
    fn joins_are_below_messages_below_private_and_highlights() {
        let join = row(
            "bob",
            Payload::UserJoined {
                account: None,
                userhost: None,
            },
        );
        let msg = row("bob", Payload::Privmsg { text: "hi".into() });
        assert_eq!(
            level_of(&join, BufferKind::Channel, "me", false),
            Level::Events
        );
        assert_eq!(
            level_of(&msg, BufferKind::Channel, "me", false),
            Level::Message
        );
        assert_eq!(
            level_of(&msg, BufferKind::Query, "me", false),
            Level::Highlight
        );
        assert_eq!(
            level_of(&msg, BufferKind::Channel, "me", true),
            Level::Highlight
        );
        assert_eq!(
            level_of(&msg, BufferKind::Channel, "BOB", false),
            Level::None
        );
        assert!(Level::Events < Level::Message && Level::Message < Level::Highlight);
    }

    #[test]
    fn raise_never_lowers() {
        let mut level = Level::Highlight;
        raise(&mut level, Level::Events);
        assert_eq!(level, Level::Highlight);
        let mut level = Level::None;
        raise(&mut level, Level::Message);
        assert_eq!(level, Level::Message);
    }
}
