//! Display settings, changed with `/set` (`time_format`, `mirc_colours`,
//! `nicklist`, `highlights`).

use chrono::{DateTime, FixedOffset, Local, NaiveDate};
use rete_engine::clock::UnixMillis;
use rete_redact::SecretSet;

/// The default time stamp: hours and minutes.
pub use crate::config::DEFAULT_TIME_FORMAT;

/// How rows are drawn.
#[derive(Clone, Debug)]
pub struct Look {
    /// strftime-style format of each row's time, validated.
    time_format: String,
    /// Render mIRC bold/italic/underline/colour (off: plain text, codes stripped).
    pub mirc: bool,
    /// Show the nick list pane beside channels.
    pub nicklist: bool,
    /// Words that highlight like the person's nick.
    pub highlights: Vec<String>,
    /// Time zone; `None` is the local one. Tests pin it.
    pub zone: Option<FixedOffset>,
    /// The held secrets of the session drawn (the engine's list, the one
    /// the control surface scans for), masked in its rows.
    pub masks: SecretSet,
}

impl Default for Look {
    fn default() -> Look {
        Look {
            time_format: DEFAULT_TIME_FORMAT.to_owned(),
            mirc: true,
            nicklist: true,
            highlights: Vec::new(),
            zone: None,
            masks: SecretSet::empty(),
        }
    }
}

impl Look {
    /// The default look in a fixed zone (tests and benchmarks pin it).
    pub fn in_fixed_zone(offset_seconds: i32) -> Look {
        Look {
            zone: FixedOffset::east_opt(offset_seconds),
            ..Look::default()
        }
    }

    /// Sets the time format; refuses one chrono cannot format.
    pub fn set_time_format(&mut self, format: &str) -> Result<(), String> {
        if let Some(problem) = crate::config::time_format_problem(format) {
            return Err(problem);
        }
        self.time_format = format.to_owned();
        Ok(())
    }

    /// The time format in use.
    pub fn time_format(&self) -> &str {
        &self.time_format
    }

    /// Whether the time format shows seconds (`%S`, `%T`, `%s`…): the
    /// status bar's clock then ticks every second, not every minute.
    pub fn shows_seconds(&self) -> bool {
        use std::fmt::Write as _;
        let format = |at: i64| {
            let mut text = String::new();
            let time = DateTime::from_timestamp(at, 0).map(|t| t.naive_utc());
            match time {
                Some(t) => write!(text, "{}", t.format(&self.time_format)).map(|()| text),
                None => Err(std::fmt::Error),
            }
        };
        // Two instants a second apart, in the same minute.
        match (format(1_790_769_601), format(1_790_769_602)) {
            (Ok(a), Ok(b)) => a != b,
            _ => false,
        }
    }

    /// `time` in the look's zone and format.
    pub fn clock(&self, time: UnixMillis) -> String {
        match self.zone {
            Some(zone) => self
                .in_zone(time, &zone)
                .format(&self.time_format)
                .to_string(),
            None => self
                .in_zone(time, &Local)
                .format(&self.time_format)
                .to_string(),
        }
    }

    /// The calendar day of `time` in the look's zone.
    pub fn day(&self, time: UnixMillis) -> NaiveDate {
        match self.zone {
            Some(zone) => self.in_zone(time, &zone).date_naive(),
            None => self.in_zone(time, &Local).date_naive(),
        }
    }

    fn in_zone<Z: chrono::TimeZone>(&self, time: UnixMillis, zone: &Z) -> DateTime<Z> {
        let utc = DateTime::from_timestamp_millis(time.0).unwrap_or_default();
        zone.from_utc_datetime(&utc.naive_utc())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_in_the_zone_and_refuses_bad_formats() {
        let mut look = Look::in_fixed_zone(3600);
        // 12:00:01 UTC
        let t = UnixMillis(1_790_769_601_000);
        assert_eq!(look.clock(t), "13:00");
        look.set_time_format("%H:%M:%S").unwrap();
        assert_eq!(look.clock(t), "13:00:01");
        assert!(look.set_time_format("%Q").is_err());
        assert_eq!(look.time_format(), "%H:%M:%S");
        assert_eq!(look.day(t).to_string(), "2026-09-30");
    }

    #[test]
    fn a_format_with_seconds_ticks_every_second() {
        let mut look = Look::in_fixed_zone(0);
        assert!(!look.shows_seconds());
        for format in ["%H:%M:%S", "%T", "%s", "%X", "[%H:%M:%S]"] {
            look.set_time_format(format).unwrap();
            assert!(look.shows_seconds(), "{format}");
        }
        for format in ["%H:%M", "%a %H:%M", "%R"] {
            look.set_time_format(format).unwrap();
            assert!(!look.shows_seconds(), "{format}");
        }
    }
}
