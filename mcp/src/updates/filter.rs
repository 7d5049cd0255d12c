//! subscribe's message filters, normalised (what a subscription collects
//! and list_subscriptions shows), and a live row matched against them. The
//! arguments are read and checked by the subscribe tool
//! (`crate::tools::subscribe::parse`).

use crate::read::matcher::Scratch;
use rete_engine::buffer::BufferKind;
use rete_engine::ids::{BufferId, SessionId};
use rete_engine::mention;
use rete_engine::row::{Kind, Row};
use serde_json::{Map, Value};

pub(crate) mod debug;
mod text;
pub(crate) use debug::{LogFilter, RawFilter};
pub(crate) use text::{MatchMode, TextMatch};

/// The message kinds a subscription can ask for.
pub(crate) const KINDS: [Kind; 10] = [
    Kind::Privmsg,
    Kind::Action,
    Kind::Notice,
    Kind::Topic,
    Kind::Join,
    Kind::Part,
    Kind::Quit,
    Kind::Nick,
    Kind::Mode,
    Kind::Kick,
];

/// The kinds collected when kinds is absent: what people say.
pub(crate) const DEFAULT_KINDS: [Kind; 3] = [Kind::Privmsg, Kind::Action, Kind::Notice];

/// A subscription's message filters, normalised: what it collects and what
/// list_subscriptions shows. Empty lists, false flags and an empty match are
/// absent.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Session ids, upper case, sorted, deduplicated.
    pub(crate) sessions: Vec<SessionId>,
    /// Buffer ids, upper case, sorted, deduplicated.
    pub(crate) buffers: Vec<BufferId>,
    /// Only messages that mention the session's current nick.
    pub(crate) mentions: bool,
    /// Only messages in query buffers.
    pub(crate) queries: bool,
    /// Sender nicks, lowercased, empty entries dropped, sorted, deduplicated.
    pub(crate) from: Vec<String>,
    /// The kinds collected, sorted and deduplicated; `None` is the default
    /// ([`DEFAULT_KINDS`]).
    pub(crate) kinds: Option<Vec<Kind>>,
    /// The match; `None` when absent or empty.
    pub(crate) text: Option<TextMatch>,
    /// The raw filter (debug tier); `None` when absent.
    pub(crate) raw: Option<RawFilter>,
    /// The log filter (debug tier); `None` when absent.
    pub(crate) log: Option<LogFilter>,
}

impl Filter {
    /// True when no filter is left: such a subscription is refused. A raw
    /// or log object, even `{}`, is a filter (every raw line, or every log
    /// line at warning or above).
    pub(crate) fn is_empty(&self) -> bool {
        !self.has_message_filter() && self.raw.is_none() && self.log.is_none()
    }

    /// True when some message filter was given. A subscription with only
    /// raw or log matches no messages.
    pub(crate) fn has_message_filter(&self) -> bool {
        !(self.sessions.is_empty()
            && self.buffers.is_empty()
            && !self.mentions
            && !self.queries
            && self.from.is_empty()
            && self.kinds.is_none()
            && self.text.is_none())
    }

    /// The normalised `filters` object of subscribe and list_subscriptions:
    /// only what is present, the default match_mode left out.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        let strings = |items: Vec<&str>| Value::from(items);
        if !self.sessions.is_empty() {
            let ids = self.sessions.iter().map(SessionId::as_str).collect();
            out.insert("sessions".into(), strings(ids));
        }
        if !self.buffers.is_empty() {
            let ids = self.buffers.iter().map(BufferId::as_str).collect();
            out.insert("buffers".into(), strings(ids));
        }
        if self.mentions {
            out.insert("mentions".into(), Value::Bool(true));
        }
        if self.queries {
            out.insert("queries".into(), Value::Bool(true));
        }
        if !self.from.is_empty() {
            out.insert("from".into(), Value::from(self.from.clone()));
        }
        if let Some(kinds) = &self.kinds {
            let mut names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            names.sort_unstable();
            out.insert("kinds".into(), strings(names));
        }
        if let Some(text) = &self.text {
            out.insert("match".into(), Value::from(text.text()));
            if text.mode() != MatchMode::Substring {
                out.insert("match_mode".into(), Value::from(text.mode().as_str()));
            }
        }
        if let Some(raw) = &self.raw {
            out.insert("raw".into(), raw.to_json());
        }
        if let Some(log) = &self.log {
            out.insert("log".into(), log.to_json());
        }
        Value::Object(out)
    }

    /// True when a message in `buffer` of `session` is in the subscription's
    /// scope: any listed session or any listed buffer, or every session
    /// when it lists neither. Never, for a subscription with no message
    /// filter (only raw or log).
    pub(crate) fn in_scope(&self, session: &SessionId, buffer: &BufferId) -> bool {
        if !self.has_message_filter() {
            return false;
        }
        (self.sessions.is_empty() && self.buffers.is_empty())
            || self.sessions.binary_search(session).is_ok()
            || self.buffers.binary_search(buffer).is_ok()
    }

    /// True when rows of `kind` are collected.
    pub(crate) fn wants_kind(&self, kind: Kind) -> bool {
        match &self.kinds {
            Some(kinds) => kinds.binary_search(&kind).is_ok(),
            None => DEFAULT_KINDS.contains(&kind),
        }
    }

    /// Matches a live row of a buffer of `buffer_kind` (scope is the
    /// caller's, through [`Filter::in_scope`]). `None` when a filter refuses
    /// it; otherwise whether it mentions `nick`, the session's current nick,
    /// which a digest counts even when mentions is not a filter.
    #[cfg(test)]
    pub(crate) fn matches(&self, row: &Row, buffer_kind: BufferKind, nick: &str) -> Option<bool> {
        if !self.admits(row, buffer_kind, &mut Scratch::default()) {
            return None;
        }
        let mention = mentions_in(row, nick);
        (mention || !self.mentions).then_some(mention)
    }

    /// Every filter but mentions. The collector asks this of each
    /// subscription, and whether a row mentions the nick once per row
    /// ([`mentions_in`]), since that answer is the same for all of them.
    /// `scratch` is reused across rows, so matching allocates rarely.
    pub(crate) fn admits(&self, row: &Row, buffer_kind: BufferKind, scratch: &mut Scratch) -> bool {
        self.wants_kind(row.kind())
            && (!self.queries || buffer_kind == BufferKind::Query)
            && self.wants_sender(&row.from)
            && self.text.as_ref().is_none_or(|t| t.is_in(row, scratch))
    }

    /// True when from is absent or names `nick`, ignoring case.
    fn wants_sender(&self, nick: &str) -> bool {
        if self.from.is_empty() {
            return true;
        }
        if nick.is_ascii() {
            // Entries are lowercased, so an ASCII comparison decides; no
            // allocation on the common path.
            self.from
                .iter()
                .any(|f| f.len() == nick.len() && f.eq_ignore_ascii_case(nick))
        } else {
            self.from.binary_search(&nick.to_lowercase()).is_ok()
        }
    }
}

/// True when a payload text field (never the sender) mentions `nick`.
pub(crate) fn mentions_in(row: &Row, nick: &str) -> bool {
    let mut found = false;
    row.payload.for_each_text(|field| {
        found = found || mention::mentions(field, nick);
    });
    found
}

#[cfg(test)]
mod tests;
