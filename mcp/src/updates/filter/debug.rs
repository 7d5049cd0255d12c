//! subscribe's debug filters, `raw` and `log`: read as sent, checked, and
//! normalised. They exist only while control.debug is on; [`super::Filter`]
//! refuses them before anything else while it is off.
//!
//! Reading is split in two so the errors keep the module order of
//! [`super::Filter::parse`]: [`RawSent`] and [`LogSent`] only check the
//! objects' shape (unknown properties, each property's type), the entry
//! counts and byte caps are checked beside the message lists, and only then
//! are the values parsed (direction, level, categories, session ids).

use crate::debug::log::level::{Category, Level};
use crate::debug::log::line::LogLine;
use crate::debug::raw::ring::RawLine;
use crate::read::args::{ArgError, Args};
use crate::read::raw::{command, direction};
use crate::read::result::ToolOutcome;
use crate::tools::read_log::unknown_name;
use crate::tools::search_raw::INVALID_DIRECTION;
use rete_actors::Direction;
use rete_engine::ids::SessionId;
use serde_json::{Map, Value};

/// The properties `raw` takes.
pub const RAW_PROPERTIES: [&str; 3] = ["sessions", "commands", "direction"];

/// The properties `log` takes.
pub const LOG_PROPERTIES: [&str; 2] = ["min_level", "categories"];

/// The longest raw.commands entry, in UTF-8 bytes as sent.
pub const MAX_COMMAND_BYTES: usize = 32;

/// The lowest level a log subscription collects when min_level is absent.
pub const DEFAULT_MIN_LEVEL: Level = Level::Warning;

/// `raw` as sent, its shape checked.
#[derive(Debug)]
pub struct RawSent<'a> {
    /// raw.sessions as sent.
    pub sessions: Vec<&'a str>,
    /// raw.commands as sent.
    pub commands: Vec<&'a str>,
    /// raw.direction as sent.
    pub direction: Option<&'a str>,
}

impl<'a> RawSent<'a> {
    /// Checks `raw`'s properties and their types (errors name `raw.<name>`).
    pub fn read(raw: &'a Args) -> Result<RawSent<'a>, ArgError> {
        raw.expect_only(&RAW_PROPERTIES)?;
        Ok(RawSent {
            sessions: raw.opt_str_array("sessions")?.unwrap_or_default(),
            commands: raw.opt_str_array("commands")?.unwrap_or_default(),
            direction: raw.opt_str("direction")?,
        })
    }

    /// The direction, when one was sent: `in` or `out`.
    pub fn direction(&self) -> Result<Option<Direction>, ToolOutcome> {
        match self.direction {
            None => Ok(None),
            Some("in") => Ok(Some(Direction::In)),
            Some("out") => Ok(Some(Direction::Out)),
            Some(_) => Err(ToolOutcome::error(INVALID_DIRECTION)),
        }
    }
}

/// `log` as sent, its shape checked.
#[derive(Debug)]
pub struct LogSent<'a> {
    /// log.min_level as sent.
    pub min_level: Option<&'a str>,
    /// log.categories as sent.
    pub categories: Vec<&'a str>,
}

impl<'a> LogSent<'a> {
    /// Checks `log`'s properties and their types (errors name `log.<name>`).
    pub fn read(log: &'a Args) -> Result<LogSent<'a>, ArgError> {
        log.expect_only(&LOG_PROPERTIES)?;
        Ok(LogSent {
            min_level: log.opt_str("min_level")?,
            categories: log.opt_str_array("categories")?.unwrap_or_default(),
        })
    }

    /// The level and categories, with read_log's errors for names that do
    /// not exist; categories sorted by name and deduplicated.
    pub fn parse(&self) -> Result<LogFilter, ArgError> {
        let min_level = match self.min_level {
            None => DEFAULT_MIN_LEVEL,
            Some(name) => Level::parse(name).ok_or_else(|| unknown_name("level", name))?,
        };
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

/// A raw subscription's filter, normalised.
#[derive(Clone, Debug, PartialEq)]
pub struct RawFilter {
    /// Session ids, upper case, sorted, deduplicated; empty: every session.
    pub sessions: Vec<SessionId>,
    /// Commands upper case, trimmed, blanks dropped, sorted, deduplicated;
    /// empty: every command.
    pub commands: Vec<String>,
    /// in or out; None: both.
    pub direction: Option<Direction>,
}

impl RawFilter {
    /// The filter from checked parts.
    pub fn new(sessions: Vec<SessionId>, commands: &[&str], dir: Option<Direction>) -> RawFilter {
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
    pub fn covers(&self, session: &SessionId) -> bool {
        self.sessions.is_empty() || self.sessions.binary_search(session).is_ok()
    }

    /// True when a line of a covered session passes the command and
    /// direction filters. The command is read as search_raw reads it and
    /// compared exactly after upper-casing.
    pub fn matches(&self, line: &RawLine) -> bool {
        if self.direction.is_some_and(|d| d != line.dir) {
            return false;
        }
        if self.commands.is_empty() {
            return true;
        }
        command(&line.text).is_some_and(|c| self.commands.binary_search(&c.to_uppercase()).is_ok())
    }

    /// `{"commands?","direction?","sessions?"}`, only what is present.
    pub fn to_json(&self) -> Value {
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
pub struct LogFilter {
    /// The lowest level collected.
    pub min_level: Level,
    /// The categories collected, sorted by name; empty: every category.
    pub categories: Vec<Category>,
}

impl LogFilter {
    /// True when `line` passes the level and category filters.
    pub fn matches(&self, line: &LogLine) -> bool {
        line.level >= self.min_level
            && (self.categories.is_empty() || self.categories.contains(&line.category))
    }

    /// `{"categories?","min_level?"}`, the default level left out.
    pub fn to_json(&self) -> Value {
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
