//! The filters a search applies before matching: from, kinds, since, until.
//!
//! Times compare at whole seconds, the precision every time in a result is
//! shown at: a row shown as `12:00:00Z` is "at" 12:00:00Z for both since
//! and until, and a bound given with a fraction is cut to its second.

use crate::read::args::{cut_utf8, json_string, ArgError, ECHO_CAP};
use rete_engine::clock::UnixMillis;
use rete_engine::row::{Kind, Row};
use rete_engine::timefmt::parse_server_time;
use time::format_description::well_known::Iso8601;
use time::{Date, OffsetDateTime, PrimitiveDateTime};

/// The filters of one search; `None` is no filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filters {
    /// The sender nick, lowercased.
    pub(crate) from: Option<String>,
    /// The kinds admitted, sorted and deduplicated.
    pub(crate) kinds: Option<Vec<Kind>>,
    /// Whole seconds since the epoch: rows at or after.
    pub(crate) since: Option<i64>,
    /// Whole seconds since the epoch: rows at or before.
    pub(crate) until: Option<i64>,
}

impl Filters {
    /// True when `row` passes every filter.
    pub(crate) fn admits(&self, row: &Row) -> bool {
        if let Some(kinds) = &self.kinds {
            if !kinds.contains(&row.kind()) {
                return false;
            }
        }
        if self.since.is_some() || self.until.is_some() {
            let second = row.time.0.div_euclid(1000);
            if self.since.is_some_and(|s| second < s) || self.until.is_some_and(|u| second > u) {
                return false;
            }
        }
        match &self.from {
            Some(nick) => same_nick(&row.from, nick),
            None => true,
        }
    }
}

/// True when `nick` lowercased is `lowered`.
fn same_nick(nick: &str, lowered: &str) -> bool {
    if nick.is_ascii() {
        nick.len() == lowered.len() && nick.eq_ignore_ascii_case(lowered)
    } else {
        nick.to_lowercase() == lowered
    }
}

/// A `from` argument: lowercased; empty is no filter (as subscribe drops
/// empty from entries).
pub(crate) fn parse_from(from: Option<&str>) -> Option<String> {
    from.filter(|f| !f.is_empty()).map(str::to_lowercase)
}

/// A `kinds` argument: every entry must be a message kind (the kind field's
/// values, matched exactly). An empty list is no filter.
pub(crate) fn parse_kinds(kinds: Option<Vec<&str>>) -> Result<Option<Vec<Kind>>, ArgError> {
    let Some(names) = kinds else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let kind = Kind::from_name(name).ok_or_else(|| {
            ArgError::new(format!(
                "unknown kind: {}",
                json_string(cut_utf8(name, ECHO_CAP))
            ))
        })?;
        out.push(kind);
    }
    out.sort();
    out.dedup();
    Ok((!out.is_empty()).then_some(out))
}

/// A `since` or `until` argument as whole seconds since the epoch.
pub(crate) fn parse_time(name: &str, value: Option<&str>) -> Result<Option<i64>, ArgError> {
    match value {
        None => Ok(None),
        Some(text) => iso8601(text)
            .map(|t| Some(t.0.div_euclid(1000)))
            .ok_or_else(|| ArgError::new(format!("{name} is not an ISO-8601 time"))),
    }
}

/// Parses the ISO-8601 forms a client sends: RFC 3339 (`2026-09-30T12:00:00Z`,
/// lowercase `t`/`z` too), and through the `time` crate's ISO-8601 parser the
/// extended and basic formats (`20261201T173600Z`), with or without seconds,
/// a fraction of the last component (`.250` or `,5`), `Z` or an offset
/// (`+02:00`, `+0200`, `+02`), ordinal and week dates. A date and time
/// without an offset is taken as UTC, a bare date as its midnight UTC.
/// Anything else (mixed basic and extended, hours alone, text) is `None`.
pub(crate) fn iso8601(text: &str) -> Option<UnixMillis> {
    if let Some(t) = parse_server_time(text) {
        return Some(t);
    }
    let utc = if let Ok(t) = OffsetDateTime::parse(text, &Iso8601::DEFAULT) {
        t
    } else if let Some((_, clock)) = text.split_once('T') {
        if clock.contains(['Z', 'z', '+', '-']) {
            // An offset the parser refused: never silently dropped.
            return None;
        }
        PrimitiveDateTime::parse(text, &Iso8601::DEFAULT)
            .ok()?
            .assume_utc()
    } else {
        Date::parse(text, &Iso8601::DEFAULT)
            .ok()?
            .midnight()
            .assume_utc()
    };
    let ms = utc.unix_timestamp_nanos().div_euclid(1_000_000);
    i64::try_from(ms).ok().map(UnixMillis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::row::Payload;

    fn row(from: &str, time_ms: i64, payload: Payload) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(time_ms),
            msgid: None,
            from: from.into(),
            history: false,
            payload,
        }
    }

    fn say(from: &str, time_ms: i64) -> Row {
        row(from, time_ms, Payload::Privmsg { text: "x".into() })
    }

    const NOON: i64 = 1_790_769_600_000; // 2026-09-30T12:00:00Z

    #[test]
    fn from_ignores_case() {
        let f = Filters {
            from: parse_from(Some("Alice")),
            ..Filters::default()
        };
        assert!(f.admits(&say("alice", 0)));
        assert!(f.admits(&say("ALICE", 0)));
        assert!(!f.admits(&say("alice2", 0)));
        assert!(!f.admits(&say("alic", 0)));
        let f = Filters {
            from: parse_from(Some("ÉLODIE")),
            ..Filters::default()
        };
        assert!(f.admits(&say("élodie", 0)));
        assert_eq!(parse_from(Some("")), None);
        assert_eq!(parse_from(None), None);
    }

    #[test]
    fn kinds_are_exact_sorted_and_deduplicated() {
        assert_eq!(
            parse_kinds(Some(vec!["notice", "privmsg", "notice"])).unwrap(),
            Some(vec![Kind::Privmsg, Kind::Notice])
        );
        assert_eq!(parse_kinds(Some(vec![])).unwrap(), None);
        assert_eq!(
            parse_kinds(Some(vec!["privmsg", "PRIVMSG"]))
                .unwrap_err()
                .to_string(),
            "invalid arguments: unknown kind: \"PRIVMSG\""
        );
        let long = format!("{}\"\n", "k".repeat(70));
        assert_eq!(
            parse_kinds(Some(vec![long.as_str()]))
                .unwrap_err()
                .to_string(),
            format!("invalid arguments: unknown kind: \"{}\"", "k".repeat(64))
        );
        assert_eq!(
            parse_kinds(Some(vec!["a\"b"])).unwrap_err().to_string(),
            "invalid arguments: unknown kind: \"a\\\"b\""
        );
        let f = Filters {
            kinds: parse_kinds(Some(vec!["join"])).unwrap(),
            ..Filters::default()
        };
        assert!(!f.admits(&say("a", 0)));
        assert!(f.admits(&row(
            "a",
            0,
            Payload::UserJoined {
                account: None,
                userhost: None
            }
        )));
    }

    #[test]
    fn times_parse_in_the_usual_iso_forms() {
        let at = |s: &str| iso8601(s).map(|t| t.0);
        assert_eq!(at("2026-09-30T12:00:00Z"), Some(NOON));
        assert_eq!(at("2026-09-30T12:00:00.250Z"), Some(NOON + 250));
        assert_eq!(at("2026-09-30T14:00:00+02:00"), Some(NOON));
        assert_eq!(at("2026-09-30T12:00:00"), Some(NOON));
        assert_eq!(at("2026-09-30"), Some(NOON - 12 * 3_600_000));
        assert_eq!(at("2026-09-30t12:00:00z"), Some(NOON));
        // Without seconds, with or without an offset.
        assert_eq!(at("2026-09-30T12:00Z"), Some(NOON));
        assert_eq!(at("2026-09-30T12:00"), Some(NOON));
        assert_eq!(at("2026-09-30T14:00+02:00"), Some(NOON));
        assert_eq!(at("2026-09-30T11:30-00:30"), Some(NOON));
        // Fractions of the last component.
        assert_eq!(at("2026-09-30T12:00:00,5Z"), Some(NOON + 500));
        assert_eq!(at("2026-09-30T12:00:00.123456789Z"), Some(NOON + 123));
        assert_eq!(at("2026-09-30T12:00:00.5"), Some(NOON + 500));
        // The basic format.
        assert_eq!(at("20260930T120000Z"), Some(NOON));
        assert_eq!(at("20260930T1200Z"), Some(NOON));
        assert_eq!(at("20260930T140000+0200"), Some(NOON));
        assert_eq!(at("20260930T140000+02"), Some(NOON));
        assert_eq!(at("20260930T120000"), Some(NOON));
        assert_eq!(at("20260930"), Some(NOON - 12 * 3_600_000));
        assert_eq!(at("20261201T173600Z"), Some(1_796_146_560_000));
        // Ordinal and week dates are ISO-8601 too.
        assert_eq!(at("2026-273T12:00Z"), Some(NOON));
        assert_eq!(at("2026-W40-3T12:00Z"), Some(NOON));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-09-30T25:00:00Z",
            "12:00",
            "1790769600",
            "2026-09-30T120000Z",
            "20260930T12:00:00Z",
            "2026-09-30T12:00:00Zjunk",
            "2026-09-30T12:00:00+2",
            "2026-09-30T12:00:00 +02:00",
            "2026-09-30T",
            "T12:00:00Z",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(
            parse_time("since", Some("soon")).unwrap_err().to_string(),
            "invalid arguments: since is not an ISO-8601 time"
        );
        assert_eq!(
            parse_time("until", Some("")).unwrap_err().to_string(),
            "invalid arguments: until is not an ISO-8601 time"
        );
        assert_eq!(parse_time("since", None), Ok(None));
    }

    #[test]
    fn since_and_until_are_inclusive_at_whole_seconds() {
        let f = Filters {
            since: parse_time("since", Some("2026-09-30T12:00:00Z")).unwrap(),
            until: parse_time("until", Some("2026-09-30T12:00:01Z")).unwrap(),
            ..Filters::default()
        };
        assert!(!f.admits(&say("a", NOON - 1)));
        assert!(f.admits(&say("a", NOON)));
        assert!(f.admits(&say("a", NOON + 1_999)), "shown as 12:00:01Z");
        assert!(!f.admits(&say("a", NOON + 2_000)));
        let backwards = Filters {
            since: Some(NOON / 1000 + 10),
            until: Some(NOON / 1000),
            ..Filters::default()
        };
        assert!(
            !backwards.admits(&say("a", NOON + 5_000)),
            "since after until matches nothing"
        );
    }
}
