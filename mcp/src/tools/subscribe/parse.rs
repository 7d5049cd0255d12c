//! subscribe's arguments, read and checked into a [`Filter`].
//!
//! Arguments are checked in one fixed order, so a request with several
//! mistakes always gets the same error:
//! 1. `raw` or `log` while control.debug is off (any value, `null`
//!    included): `debug tools are disabled`, before anything else; then
//!    unknown arguments (both by the registry, from the tool's spec);
//! 2. each argument's type, in the spec's order (raw and log last: each
//!    must be an object, then its own unknown properties and their types,
//!    named `raw.<name>` / `log.<name>`);
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

use super::{
    BUFFERS, CATEGORIES, COMMANDS, DIRECTION, FROM, KINDS, LOG, MATCH, MATCH_MODE, MENTIONS,
    MIN_LEVEL, QUERIES, RAW, RAW_SESSIONS, SESSIONS,
};
use crate::debug::log::level::{Category, Level};
use crate::read::args::{cut_utf8, json_string, ArgError, Args, ECHO_CAP};
use crate::read::errors::INVALID_DIRECTION;
use crate::read::errors::{UNKNOWN_BUFFER, UNKNOWN_SESSION};
use crate::read::log::unknown_name;
use crate::read::result::ToolOutcome;
use crate::updates::filter::{
    Filter, LogFilter, MatchMode, RawFilter, TextMatch, KINDS as SUBSCRIBABLE,
};
use rete_actors::Direction;
use rete_engine::ids::{BufferId, SessionId};
use rete_engine::row::Kind;

/// At most this many entries in one list filter, counted as sent.
pub(crate) const MAX_ENTRIES: usize = 50;

/// The longest sessions, buffers or from entry, in UTF-8 bytes as sent.
pub(crate) const MAX_ENTRY_BYTES: usize = 64;

/// The longest match, in UTF-8 bytes.
pub(crate) const MAX_MATCH_BYTES: usize = 256;

/// The longest raw.commands entry, in UTF-8 bytes as sent.
pub(crate) const MAX_COMMAND_BYTES: usize = 32;

/// Reads subscribe's filters in the order the module describes. The
/// registry has already refused raw and log while debug is off, and any
/// argument the spec does not declare.
pub fn parse(args: &Args) -> Result<Filter, ToolOutcome> {
    let sessions = SESSIONS.read(args)?.unwrap_or_default();
    let buffers = BUFFERS.read(args)?.unwrap_or_default();
    let mentions = MENTIONS.read(args)?;
    let queries = QUERIES.read(args)?;
    let from = FROM.read(args)?.unwrap_or_default();
    let kinds = KINDS.read(args)?;
    let text = MATCH.read(args)?.unwrap_or("");
    let mode = MATCH_MODE.read(args)?;
    let raw_args = RAW.read(args)?;
    let raw = raw_args.as_ref().map(RawSent::read).transpose()?;
    let log_args = LOG.read(args)?;
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
        ("commands", commands, MAX_COMMAND_BYTES),
        ("categories", categories, MAX_ENTRY_BYTES),
    ];
    check_counts(&lists)?;
    check_entry_bytes(&lists)?;
    if text.len() > MAX_MATCH_BYTES {
        let detail = format!("match is longer than {MAX_MATCH_BYTES} bytes");
        return Err(ArgError::new(detail).into());
    }
    let mode = MatchMode::parse(mode)
        .ok_or_else(|| ArgError::new("match_mode must be substring or glob"))?;
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

/// `raw` as sent, its types checked.
#[derive(Debug)]
struct RawSent<'a> {
    sessions: Vec<&'a str>,
    commands: Vec<&'a str>,
    direction: Option<&'a str>,
}

impl<'a> RawSent<'a> {
    /// Checks `raw`'s property types (errors name `raw.<name>`).
    fn read(raw: &'a Args) -> Result<RawSent<'a>, ArgError> {
        Ok(RawSent {
            sessions: RAW_SESSIONS.read(raw)?.unwrap_or_default(),
            commands: COMMANDS.read(raw)?.unwrap_or_default(),
            direction: DIRECTION.read(raw)?,
        })
    }

    /// The direction, when one was sent: `in` or `out`.
    fn direction(&self) -> Result<Option<Direction>, ToolOutcome> {
        match self.direction {
            None => Ok(None),
            Some("in") => Ok(Some(Direction::In)),
            Some("out") => Ok(Some(Direction::Out)),
            Some(_) => Err(ToolOutcome::error(INVALID_DIRECTION)),
        }
    }
}

/// `log` as sent, its types checked.
#[derive(Debug)]
struct LogSent<'a> {
    min_level: &'a str,
    categories: Vec<&'a str>,
}

impl<'a> LogSent<'a> {
    /// Checks `log`'s property types (errors name `log.<name>`).
    fn read(log: &'a Args) -> Result<LogSent<'a>, ArgError> {
        Ok(LogSent {
            min_level: MIN_LEVEL.read(log)?,
            categories: CATEGORIES.read(log)?.unwrap_or_default(),
        })
    }

    /// The level and categories, with read_log's errors for names that do
    /// not exist; categories sorted by name and deduplicated.
    fn parse(&self) -> Result<LogFilter, ArgError> {
        let min_level =
            Level::parse(self.min_level).ok_or_else(|| unknown_name("level", self.min_level))?;
        let mut categories = Vec::with_capacity(self.categories.len());
        for name in &self.categories {
            categories.push(Category::parse(name).ok_or_else(|| unknown_name("category", name))?);
        }
        categories.sort_unstable_by_key(|c| c.as_str());
        categories.dedup();
        Ok(LogFilter {
            min_level,
            categories,
        })
    }
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
            .filter(|k| SUBSCRIBABLE.contains(k))
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
