//! subscribe's message filters: its arguments checked and normalised, and a
//! live row matched against them.
//!
//! Arguments are checked in one fixed order, so a request with several
//! mistakes always gets the same error:
//! 1. `raw` or `log` while control.debug is off (any value, `null`
//!    included): `debug tools are disabled`, before anything else;
//! 2. unknown arguments, then each argument's type, in the schema's order
//!    (raw and log last: each must be an object, then its own unknown
//!    properties and their types, named `raw.<name>` / `log.<name>`);
//! 3. entry counts (sessions, buffers, from, raw.sessions, raw.commands,
//!    log.categories, as sent), then entry byte caps (the same lists, as
//!    sent), then the match's byte cap — all before any entry is parsed, so
//!    an over-long id is a length error;
//! 4. match_mode, kinds, raw.direction, log.min_level, log.categories;
//! 5. session ids (`unknown session`), then buffer ids (`unknown buffer`),
//!    then raw.sessions (`unknown session`): every `invalid arguments`
//!    error comes before these;
//! 6. no filter left after dropping empty lists, false flags and an empty
//!    match. Steps 4 and 5 can only fail on a filter that was given, so
//!    their order against this one is only visible with a bad match_mode
//!    and nothing else, which is the match_mode error.
//!
//! A well-formed id is a hyphenated UUID in any case, as list_sessions and
//! list_buffers spell ids; it is kept upper-cased. Other UUID spellings
//! (braces, `urn:uuid:`, no hyphens, surrounding spaces) name nothing the
//! release tools accept, so they are refused as unknown too.

use super::mention;
use crate::read::args::{cut_utf8, json_string, ArgError, Args, ECHO_CAP};
use crate::read::errors::DEBUG_DISABLED;
use crate::read::errors::{UNKNOWN_BUFFER, UNKNOWN_SESSION};
use crate::read::matcher::Scratch;
use crate::read::result::ToolOutcome;
use debug::{LogSent, RawSent};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::{BufferId, SessionId};
use rete_engine::row::{Kind, Row};
use serde_json::{Map, Value};

pub mod debug;
mod text;
pub use debug::{LogFilter, RawFilter};
pub use text::{MatchMode, TextMatch};

/// The message-filter arguments subscribe takes; with debug on, also
/// [`DEBUG_ARGUMENTS`].
pub const ARGUMENTS: [&str; 8] = [
    "sessions",
    "buffers",
    "mentions",
    "queries",
    "from",
    "kinds",
    "match",
    "match_mode",
];

/// subscribe's debug filters, taken only while control.debug is on.
pub const DEBUG_ARGUMENTS: [&str; 2] = ["raw", "log"];

/// At most this many entries in one list filter, counted as sent.
pub const MAX_ENTRIES: usize = 50;

/// The longest sessions, buffers or from entry, in UTF-8 bytes as sent.
pub const MAX_ENTRY_BYTES: usize = 64;

/// The longest match, in UTF-8 bytes.
pub const MAX_MATCH_BYTES: usize = 256;

/// The message kinds a subscription can ask for.
pub const KINDS: [Kind; 10] = [
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
pub const DEFAULT_KINDS: [Kind; 3] = [Kind::Privmsg, Kind::Action, Kind::Notice];

/// A subscription's message filters, normalised: what it collects and what
/// list_subscriptions shows. Empty lists, false flags and an empty match are
/// absent.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Session ids, upper case, sorted, deduplicated.
    pub sessions: Vec<SessionId>,
    /// Buffer ids, upper case, sorted, deduplicated.
    pub buffers: Vec<BufferId>,
    /// Only messages that mention the session's current nick.
    pub mentions: bool,
    /// Only messages in query buffers.
    pub queries: bool,
    /// Sender nicks, lowercased, empty entries dropped, sorted, deduplicated.
    pub from: Vec<String>,
    /// The kinds collected, sorted and deduplicated; `None` is the default
    /// ([`DEFAULT_KINDS`]).
    pub kinds: Option<Vec<Kind>>,
    /// The match; `None` when absent or empty.
    pub text: Option<TextMatch>,
    /// The raw filter (debug tier); `None` when absent.
    pub raw: Option<RawFilter>,
    /// The log filter (debug tier); `None` when absent.
    pub log: Option<LogFilter>,
}

impl Filter {
    /// Reads subscribe's message filters in the order the module describes.
    /// `debug` is control.debug for this request.
    pub fn parse(args: &Args, debug: bool) -> Result<Filter, ToolOutcome> {
        if !debug && (args.was_sent("raw") || args.was_sent("log")) {
            return Err(ToolOutcome::error(DEBUG_DISABLED));
        }
        if debug {
            let all: Vec<&str> = ARGUMENTS.iter().chain(&DEBUG_ARGUMENTS).copied().collect();
            args.expect_only(&all)?;
        } else {
            args.expect_only(&ARGUMENTS)?;
        }
        let sessions = args.opt_str_array("sessions")?.unwrap_or_default();
        let buffers = args.opt_str_array("buffers")?.unwrap_or_default();
        let mentions = args.opt_bool("mentions")?.unwrap_or(false);
        let queries = args.opt_bool("queries")?.unwrap_or(false);
        let from = args.opt_str_array("from")?.unwrap_or_default();
        let kinds = args.opt_str_array("kinds")?;
        let text = args.opt_str("match")?.unwrap_or("");
        let mode = args.opt_str("match_mode")?;
        let raw_args = args.opt_object("raw")?;
        let raw = raw_args.as_ref().map(RawSent::read).transpose()?;
        let log_args = args.opt_object("log")?;
        let log = log_args.as_ref().map(LogSent::read).transpose()?;

        let none = Vec::new();
        let raw_sessions = raw.as_ref().map_or(&none, |r| &r.sessions);
        let commands = raw.as_ref().map_or(&none, |r| &r.commands);
        let categories = log.as_ref().map_or(&none, |l| &l.categories);
        let lists = [
            ("sessions", &sessions, MAX_ENTRY_BYTES),
            ("buffers", &buffers, MAX_ENTRY_BYTES),
            ("from", &from, MAX_ENTRY_BYTES),
            ("raw.sessions", raw_sessions, MAX_ENTRY_BYTES),
            ("commands", commands, debug::MAX_COMMAND_BYTES),
            ("categories", categories, MAX_ENTRY_BYTES),
        ];
        check_counts(&lists)?;
        check_entry_bytes(&lists)?;
        if text.len() > MAX_MATCH_BYTES {
            let detail = format!("match is longer than {MAX_MATCH_BYTES} bytes");
            return Err(ArgError::new(detail).into());
        }
        let mode = match mode {
            None => MatchMode::Substring,
            Some(name) => MatchMode::parse(name)
                .ok_or_else(|| ArgError::new("match_mode must be substring or glob"))?,
        };
        let kinds = parse_kinds(kinds)?;
        let direction = raw.as_ref().map(RawSent::direction).transpose()?.flatten();
        let log = log.as_ref().map(LogSent::parse).transpose()?;
        let filter = Filter {
            sessions: parse_ids(&sessions, UNKNOWN_SESSION, |id| SessionId::parse(id).ok())?,
            buffers: parse_ids(&buffers, UNKNOWN_BUFFER, |id| {
                Some(BufferId::from_client(id))
            })?,
            mentions,
            queries,
            from: normalise_nicks(&from),
            kinds,
            text: match text {
                "" => None,
                t => Some(TextMatch::new(t, mode).map_err(ToolOutcome::internal)?),
            },
            raw: match &raw {
                None => None,
                Some(r) => Some(RawFilter::new(
                    parse_ids(&r.sessions, UNKNOWN_SESSION, |id| SessionId::parse(id).ok())?,
                    &r.commands,
                    direction,
                )),
            },
            log,
        };
        if filter.is_empty() {
            return Err(ArgError::new("a subscription needs at least one filter").into());
        }
        Ok(filter)
    }

    /// True when no filter is left: such a subscription is refused. A raw
    /// or log object, even `{}`, is a filter (every raw line, or every log
    /// line at warning or above).
    fn is_empty(&self) -> bool {
        !self.has_message_filter() && self.raw.is_none() && self.log.is_none()
    }

    /// True when some message filter was given. A subscription with only
    /// raw or log matches no messages.
    pub fn has_message_filter(&self) -> bool {
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
    pub fn to_json(&self) -> Value {
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
    pub fn in_scope(&self, session: &SessionId, buffer: &BufferId) -> bool {
        if !self.has_message_filter() {
            return false;
        }
        (self.sessions.is_empty() && self.buffers.is_empty())
            || self.sessions.binary_search(session).is_ok()
            || self.buffers.binary_search(buffer).is_ok()
    }

    /// True when rows of `kind` are collected.
    pub fn wants_kind(&self, kind: Kind) -> bool {
        match &self.kinds {
            Some(kinds) => kinds.binary_search(&kind).is_ok(),
            None => DEFAULT_KINDS.contains(&kind),
        }
    }

    /// Matches a live row of a buffer of `buffer_kind` (scope is the
    /// caller's, through [`Filter::in_scope`]). `None` when a filter refuses
    /// it; otherwise whether it mentions `nick`, the session's current nick,
    /// which a digest counts even when mentions is not a filter.
    pub fn matches(&self, row: &Row, buffer_kind: BufferKind, nick: &str) -> Option<bool> {
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
    pub fn admits(&self, row: &Row, buffer_kind: BufferKind, scratch: &mut Scratch) -> bool {
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
pub fn mentions_in(row: &Row, nick: &str) -> bool {
    let mut found = false;
    row.payload.for_each_text(|field| {
        found = found || mention::mentions(field, nick);
    });
    found
}

/// One list filter as sent: its name in errors, its entries, its entry cap.
type SentList<'a, 'b> = (&'static str, &'b Vec<&'a str>, usize);

fn check_counts(lists: &[SentList<'_, '_>]) -> Result<(), ArgError> {
    match lists.iter().find(|(_, items, _)| items.len() > MAX_ENTRIES) {
        Some((name, _, _)) => Err(ArgError::new(format!(
            "{name} has more than {MAX_ENTRIES} entries"
        ))),
        None => Ok(()),
    }
}

fn check_entry_bytes(lists: &[SentList<'_, '_>]) -> Result<(), ArgError> {
    let too_long = |items: &Vec<&str>, cap: usize| items.iter().any(|s| s.len() > cap);
    match lists.iter().find(|(_, items, cap)| too_long(items, *cap)) {
        Some((name, _, cap)) => Err(ArgError::new(format!(
            "{name} entry is longer than {cap} bytes"
        ))),
        None => Ok(()),
    }
}

/// The kinds asked for, sorted and deduplicated; an empty list is absent.
/// The first entry that is not a subscribable kind is reported.
fn parse_kinds(names: Option<Vec<&str>>) -> Result<Option<Vec<Kind>>, ArgError> {
    let mut kinds = Vec::new();
    for name in names.unwrap_or_default() {
        let kind = Kind::from_name(name)
            .filter(|k| KINDS.contains(k))
            .ok_or_else(|| {
                ArgError::new(format!(
                    "unknown kind: {}",
                    json_string(cut_utf8(name, ECHO_CAP))
                ))
            })?;
        kinds.push(kind);
    }
    kinds.sort_unstable();
    kinds.dedup();
    Ok((!kinds.is_empty()).then_some(kinds))
}

/// Ids upper-cased, sorted and deduplicated; the first malformed one is
/// `unknown`. `make` builds the id from its upper-case spelling.
fn parse_ids<T: Ord>(
    sent: &[&str],
    unknown: &'static str,
    make: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, ToolOutcome> {
    let mut ids = Vec::with_capacity(sent.len());
    for id in sent {
        let parsed = canonical_id(id).and_then(|upper| make(&upper));
        ids.push(parsed.ok_or_else(|| ToolOutcome::error(unknown))?);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The id upper-cased, when it is a hyphenated UUID: the one spelling the
/// release tools give ids in (session and buffer ids share it).
fn canonical_id(sent: &str) -> Option<String> {
    let upper = sent.to_ascii_uppercase();
    let parsed = SessionId::parse(&upper).ok()?;
    (parsed.as_str() == upper).then_some(upper)
}

/// from entries lowercased, empty ones dropped, sorted, deduplicated.
fn normalise_nicks(sent: &[&str]) -> Vec<String> {
    let mut nicks: Vec<String> = sent
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| n.to_lowercase())
        .collect();
    nicks.sort_unstable();
    nicks.dedup();
    nicks
}

#[cfg(test)]
mod tests;
