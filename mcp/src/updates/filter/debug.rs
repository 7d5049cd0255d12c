//! subscribe's debug filters, `raw` and `log`, normalised, and a raw or log
//! line matched against them. They exist only while control.debug is on.

use crate::debug::log::level::{Category, Level};
use crate::debug::log::line::LogLine;
use crate::debug::raw::ring::RawLine;
use crate::read::raw::{command, direction};
use rete_actors::Direction;
use rete_engine::ids::SessionId;
use serde_json::{Map, Value};

/// The lowest level a log subscription collects when min_level is absent.
pub(crate) const DEFAULT_MIN_LEVEL: Level = Level::Warning;

/// A raw subscription's filter, normalised.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawFilter {
    /// Session ids, upper case, sorted, deduplicated; empty: every session.
    pub(crate) sessions: Vec<SessionId>,
    /// Commands upper case, trimmed, blanks dropped, sorted, deduplicated;
    /// empty: every command.
    pub(crate) commands: Vec<String>,
    /// in or out; None: both.
    pub(crate) direction: Option<Direction>,
}

impl RawFilter {
    /// The filter from checked parts.
    pub(crate) fn new(
        sessions: Vec<SessionId>,
        commands: &[&str],
        dir: Option<Direction>,
    ) -> RawFilter {
        let mut commands: Vec<String> = commands
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .map(str::to_uppercase)
            .collect();
        commands.sort_unstable();
        commands.dedup();
        RawFilter {
            sessions,
            commands,
            direction: dir,
        }
    }

    /// True when this session's raw tap is covered.
    pub(crate) fn covers(&self, session: &SessionId) -> bool {
        self.sessions.is_empty() || self.sessions.binary_search(session).is_ok()
    }

    /// True when a line of a covered session passes the command and
    /// direction filters. The command is read as search_raw reads it and
    /// compared exactly after upper-casing.
    pub(crate) fn matches(&self, line: &RawLine) -> bool {
        if self.direction.is_some_and(|d| d != line.dir) {
            return false;
        }
        if self.commands.is_empty() {
            return true;
        }
        command(&line.text).is_some_and(|c| self.commands.binary_search(&c.to_uppercase()).is_ok())
    }

    /// `{"commands?","direction?","sessions?"}`, only what is present.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.sessions.is_empty() {
            let ids: Vec<&str> = self.sessions.iter().map(SessionId::as_str).collect();
            out.insert("sessions".into(), Value::from(ids));
        }
        if !self.commands.is_empty() {
            out.insert("commands".into(), Value::from(self.commands.clone()));
        }
        if let Some(d) = self.direction {
            out.insert("direction".into(), Value::from(direction(d)));
        }
        Value::Object(out)
    }
}

/// A log subscription's filter, normalised.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogFilter {
    /// The lowest level collected.
    pub(crate) min_level: Level,
    /// The categories collected, sorted by name; empty: every category.
    pub(crate) categories: Vec<Category>,
}

impl LogFilter {
    /// True when `line` passes the level and category filters.
    pub(crate) fn matches(&self, line: &LogLine) -> bool {
        line.level >= self.min_level
            && (self.categories.is_empty() || self.categories.contains(&line.category))
    }

    /// `{"categories?","min_level?"}`, the default level left out.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        if self.min_level != DEFAULT_MIN_LEVEL {
            out.insert("min_level".into(), Value::from(self.min_level.as_str()));
        }
        if !self.categories.is_empty() {
            let names: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
            out.insert("categories".into(), Value::from(names));
        }
        Value::Object(out)
    }
}
