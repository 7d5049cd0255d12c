//! The log ring's levels and categories: their contract names, and how a
//! `tracing` event is given one of each.
//!
//! # Levels
//! From the event's `tracing` level: TRACE and DEBUG are `debug`, INFO is
//! `info`, WARN is `warning`, ERROR is `error`. The three levels `tracing`
//! has no word for are asked for with a field, `rete_level`, whose value is
//! the level's name: `tracing::info!(rete_level = "notice", …)`. A
//! `rete_level` that is not a level name is ignored (the tracing level
//! stands), and the field itself is never part of the line's text.
//!
//! # Categories
//! From the event's target, the first rule that applies:
//! 1. `rete::<category>` (or a longer target under it, `rete::auth::sasl`),
//!    the explicit form the project's own log lines use;
//! 2. a target with a part naming scripts (`reterm::scripts`,
//!    `…::script_host`) is `scripts`;
//! 3. the terminal's drawing code (`reterm::tui`, `reterm::app::screen`) is
//!    `ui`; transcripts (`reterm::app::transcript`) are `db`;
//! 4. the transports and the session actors (`rete_transports`,
//!    `rete_actors::connection`, `rete_actors::session_actor`) are
//!    `network`; the SASL code (`rete_engine::sasl`) is `auth`;
//! 5. everything else (the control surface, the supervisor, other crates)
//!    is `app`.

/// A log line's level, lowest first; ordered, so `min_level` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// debug
    Debug,
    /// info
    Info,
    /// scripts (what scripts print)
    Scripts,
    /// notice
    Notice,
    /// warning
    Warning,
    /// error
    Error,
    /// fault (a bug: something that must not happen)
    Fault,
}

/// Every level, lowest first.
pub(crate) const LEVELS: [Level; 7] = [
    Level::Debug,
    Level::Info,
    Level::Scripts,
    Level::Notice,
    Level::Warning,
    Level::Error,
    Level::Fault,
];

/// The field that asks for a level `tracing` has no word for.
pub(crate) const LEVEL_FIELD: &str = "rete_level";

impl Level {
    /// The contract's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Scripts => "scripts",
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Fault => "fault",
        }
    }

    /// The level with this exact name.
    pub(crate) fn parse(name: &str) -> Option<Level> {
        LEVELS.into_iter().find(|l| l.as_str() == name)
    }

    /// The level a `tracing` level maps to when no `rete_level` is given.
    pub(crate) fn of_tracing(level: &tracing::Level) -> Level {
        match *level {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warning,
            tracing::Level::INFO => Level::Info,
            _ => Level::Debug,
        }
    }
}

/// A log line's category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// app
    App,
    /// ui
    Ui,
    /// network
    Network,
    /// db
    Db,
    /// auth
    Auth,
    /// perf
    Perf,
    /// scripts
    Scripts,
}

/// Every category.
pub(crate) const CATEGORIES: [Category; 7] = [
    Category::App,
    Category::Ui,
    Category::Network,
    Category::Db,
    Category::Auth,
    Category::Perf,
    Category::Scripts,
];

impl Category {
    /// The contract's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Category::App => "app",
            Category::Ui => "ui",
            Category::Network => "network",
            Category::Db => "db",
            Category::Auth => "auth",
            Category::Perf => "perf",
            Category::Scripts => "scripts",
        }
    }

    /// The category with this exact name.
    pub(crate) fn parse(name: &str) -> Option<Category> {
        CATEGORIES.into_iter().find(|c| c.as_str() == name)
    }

    /// The category of an event with this target (see the module docs).
    pub(crate) fn of_target(target: &str) -> Category {
        if let Some(rest) = target.strip_prefix("rete::") {
            let first = rest.split("::").next().unwrap_or_default();
            if let Some(c) = Category::parse(first) {
                return c;
            }
        }
        if target.split("::").any(|part| part.starts_with("script")) {
            return Category::Scripts;
        }
        let under = |prefix: &str| {
            target == prefix
                || target
                    .strip_prefix(prefix)
                    .is_some_and(|r| r.starts_with("::"))
        };
        if under("reterm::tui") || under("reterm::app::screen") {
            Category::Ui
        } else if under("reterm::app::transcript") {
            Category::Db
        } else if under("rete_transports")
            || under("rete_actors::connection")
            || under("rete_actors::session_actor")
        {
            Category::Network
        } else if under("rete_engine::sasl") {
            Category::Auth
        } else {
            Category::App
        }
    }
}

/// The explicit target the control server's own log lines use
/// (`tracing::warn!(target: target::APP, …)`).
pub(crate) mod target {
    /// `app`: supervision and the program's own life.
    pub(crate) const APP: &str = "rete::app";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_exactly() {
        for l in LEVELS {
            assert_eq!(Level::parse(l.as_str()), Some(l));
        }
        for c in CATEGORIES {
            assert_eq!(Category::parse(c.as_str()), Some(c));
        }
        assert_eq!(Level::parse("Warning"), None);
        assert_eq!(Level::parse("warn"), None);
        assert_eq!(Category::parse("Network"), None);
    }

    #[test]
    fn levels_are_ordered_lowest_first() {
        assert!(LEVELS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Level::of_tracing(&tracing::Level::TRACE), Level::Debug);
        assert_eq!(Level::of_tracing(&tracing::Level::WARN), Level::Warning);
    }

    #[test]
    fn targets_map_to_categories() {
        for (target, want) in [
            ("rete::auth", Category::Auth),
            ("rete::perf::who", Category::Perf),
            ("rete::nonsense", Category::App),
            ("rete_actors::session_actor", Category::Network),
            ("rete_actors::supervisor", Category::App),
            ("rete_transports::connect", Category::Network),
            ("rete_engine::sasl::scram", Category::Auth),
            ("reterm::tui::draw", Category::Ui),
            ("reterm::app::screen", Category::Ui),
            ("reterm::app::transcript", Category::Db),
            ("reterm::app::transcripts_x", Category::App),
            ("reterm::scripts", Category::Scripts),
            ("rete_mcp::listener", Category::App),
            ("hyper::proto", Category::App),
        ] {
            assert_eq!(Category::of_target(target), want, "{target}");
        }
    }
}
