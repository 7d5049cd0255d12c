//! One stored buffer row: what happened, who did it, when, and its structured payload.
//!
//! Rows hold structured payloads, never display text: a frontend renders them,
//! and the control surface returns them as data. Text fields are `Box<str>`, and
//! the sender and msgid inline strings, to keep a row small (see the memory
//! benchmark in `benches/ingest.rs`).

use crate::clock::UnixMillis;
pub use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// A stored message or event in a buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// Ingest sequence: strictly increasing in arrival order within a buffer, never reused.
    pub seq: u64,
    /// Server time when the line carried one, else the arrival time.
    pub time: UnixMillis,
    /// The IRCv3 msgid, when present. Inline up to 24 bytes, as `from` is:
    /// InspIRCd's msgids and every nick fit, so most rows allocate only
    /// their text.
    pub msgid: Option<CompactString>,
    /// The nick the row is from ("" when none); see [`Payload`] for each kind's subject.
    pub from: CompactString,
    /// True when the row arrived as history (a history batch, a join replay,
    /// or a server time older than the buffer's newest), not live.
    pub history: bool,
    /// What happened.
    pub payload: Payload,
}

impl Row {
    /// The row's kind, derived from its payload.
    pub fn kind(&self) -> Kind {
        self.payload.kind()
    }
}

/// The structured payload of a row. Serialized with a `caseName` naming the
/// variant beside the variant's fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "caseName",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Payload {
    /// A PRIVMSG.
    Privmsg {
        /// The message text.
        text: Box<str>,
    },
    /// A NOTICE.
    Notice {
        /// The notice text.
        text: Box<str>,
    },
    /// A CTCP ACTION (`/me`).
    Action {
        /// The action text.
        text: Box<str>,
    },
    /// A CTCP request or reply other than ACTION.
    Ctcp {
        /// The CTCP command, upper-cased.
        command: Box<str>,
        /// Its arguments.
        args: Box<str>,
        /// True for a reply (carried in a NOTICE).
        reply: bool,
    },
    /// `from` joined the channel.
    UserJoined {
        /// The account from extended-join, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        account: Option<Box<str>>,
        /// The joiner's `user@host`, when the server sent it. One field, not
        /// two, keeps every payload within two strings (see `row_stays_small`).
        #[serde(skip_serializing_if = "Option::is_none")]
        userhost: Option<Box<str>>,
    },
    /// `from` left the channel.
    UserParted {
        /// The part reason, when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Box<str>>,
    },
    /// `from` quit IRC.
    UserQuit {
        /// The quit reason, when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Box<str>>,
    },
    /// `from` (the kicker) kicked `victim` out of the channel.
    UserKicked {
        /// Who was kicked.
        victim: Box<str>,
        /// The kick reason, when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Box<str>>,
    },
    /// `from` (the old nick) is now known as `new_nick`.
    NickChanged {
        /// The new nick.
        new_nick: Box<str>,
    },
    /// The topic was set by `from` ("" when the server set it).
    TopicChanged {
        /// The new topic ("" when cleared).
        topic: Box<str>,
    },
    /// A mode change by `from`.
    ModeChanged {
        /// The mode string and its arguments as sent, e.g. `+ov alice bob`.
        modes: Box<str>,
    },
    /// `from` invited `target` to `channel`.
    Invited {
        /// Who was invited.
        target: Box<str>,
        /// Where to.
        channel: Box<str>,
    },
    /// A server reply or message kept in the server buffer.
    ServerReply {
        /// The command or three-digit numeric.
        command: Box<str>,
        /// The reply's parameters after the target, joined by spaces.
        text: Box<str>,
    },
    /// An ERROR from the server (usually right before it closes the link).
    ServerError {
        /// The error text.
        text: Box<str>,
    },
    /// A status line the client itself produced (connected, SASL failed, ...).
    ClientStatus {
        /// The status text.
        text: Box<str>,
    },
}

/// The kind of a row: the coarse class a reader filters on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// PRIVMSG.
    Privmsg,
    /// NOTICE.
    Notice,
    /// CTCP ACTION.
    Action,
    /// Other CTCP.
    Ctcp,
    /// JOIN.
    Join,
    /// PART.
    Part,
    /// QUIT.
    Quit,
    /// KICK.
    Kick,
    /// NICK.
    Nick,
    /// TOPIC.
    Topic,
    /// MODE.
    Mode,
    /// INVITE.
    Invite,
    /// A server reply.
    Server,
    /// ERROR.
    Error,
    /// The client's own status line.
    Status,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 15] = [
        Kind::Privmsg,
        Kind::Notice,
        Kind::Action,
        Kind::Ctcp,
        Kind::Join,
        Kind::Part,
        Kind::Quit,
        Kind::Kick,
        Kind::Nick,
        Kind::Topic,
        Kind::Mode,
        Kind::Invite,
        Kind::Server,
        Kind::Error,
        Kind::Status,
    ];

    /// The kind's wire name (`privmsg`, `join`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Privmsg => "privmsg",
            Kind::Notice => "notice",
            Kind::Action => "action",
            Kind::Ctcp => "ctcp",
            Kind::Join => "join",
            Kind::Part => "part",
            Kind::Quit => "quit",
            Kind::Kick => "kick",
            Kind::Nick => "nick",
            Kind::Topic => "topic",
            Kind::Mode => "mode",
            Kind::Invite => "invite",
            Kind::Server => "server",
            Kind::Error => "error",
            Kind::Status => "status",
        }
    }

    /// The kind with this wire name.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl Payload {
    /// The payload's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Payload::Privmsg { .. } => Kind::Privmsg,
            Payload::Notice { .. } => Kind::Notice,
            Payload::Action { .. } => Kind::Action,
            Payload::Ctcp { .. } => Kind::Ctcp,
            Payload::UserJoined { .. } => Kind::Join,
            Payload::UserParted { .. } => Kind::Part,
            Payload::UserQuit { .. } => Kind::Quit,
            Payload::UserKicked { .. } => Kind::Kick,
            Payload::NickChanged { .. } => Kind::Nick,
            Payload::TopicChanged { .. } => Kind::Topic,
            Payload::ModeChanged { .. } => Kind::Mode,
            Payload::Invited { .. } => Kind::Invite,
            Payload::ServerReply { .. } => Kind::Server,
            Payload::ServerError { .. } => Kind::Error,
            Payload::ClientStatus { .. } => Kind::Status,
        }
    }

    /// Calls `f` on each text-bearing field (message text, reasons, victim,
    /// new nick, topic, mode string, ...). Searches match on these, never on
    /// rendered text.
    pub fn for_each_text(&self, mut f: impl FnMut(&str)) {
        match self {
            Payload::Privmsg { text }
            | Payload::Notice { text }
            | Payload::Action { text }
            | Payload::ServerError { text }
            | Payload::ClientStatus { text } => f(text),
            Payload::Ctcp { command, args, .. } => {
                f(command);
                f(args);
            }
            Payload::UserJoined { account, .. } => {
                if let Some(a) = account {
                    f(a)
                }
            }
            Payload::UserParted { reason } | Payload::UserQuit { reason } => {
                if let Some(r) = reason {
                    f(r)
                }
            }
            Payload::UserKicked { victim, reason } => {
                f(victim);
                if let Some(r) = reason {
                    f(r)
                }
            }
            Payload::NickChanged { new_nick } => f(new_nick),
            Payload::TopicChanged { topic } => f(topic),
            Payload::ModeChanged { modes } => f(modes),
            Payload::Invited { target, channel } => {
                f(target);
                f(channel);
            }
            Payload::ServerReply { command, text } => {
                f(command);
                f(text);
            }
        }
    }

    /// Bytes of text the payload owns (for memory accounting).
    pub fn text_len(&self) -> usize {
        let mut n = 0;
        self.for_each_text(|t| n += t.len());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_serializes_with_case_name() {
        let p = Payload::UserKicked {
            victim: "bob".into(),
            reason: None,
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"caseName":"userKicked","victim":"bob"}"#
        );
        let p = Payload::NickChanged {
            new_nick: "carol".into(),
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"caseName":"nickChanged","newNick":"carol"}"#
        );
    }

    #[test]
    fn kinds_round_trip_by_name() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.as_str()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        assert_eq!(Kind::from_name("PRIVMSG"), None);
    }

    #[test]
    fn row_stays_small() {
        // The memory target is 160 bytes per row beyond its text; the row
        // struct is the bulk of that, the display index adds 16.
        assert!(
            std::mem::size_of::<Row>() <= 112,
            "{}",
            std::mem::size_of::<Row>()
        );
    }
}
