//! Reading the IRCv3 `time` tag and writing ISO-8601 timestamps.

use crate::clock::UnixMillis;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Parses a server-time tag value (`2026-09-30T12:00:00.123Z`) into Unix milliseconds.
pub fn parse_server_time(value: &str) -> Option<UnixMillis> {
    let t = OffsetDateTime::parse(value, &Rfc3339).ok()?;
    let ms = t.unix_timestamp_nanos() / 1_000_000;
    i64::try_from(ms).ok().map(UnixMillis)
}

/// Formats a time as ISO-8601 in UTC to the whole second (`2026-09-30T12:00:00Z`).
pub fn iso_seconds(t: UnixMillis) -> String {
    let secs = t.0.div_euclid(1000);
    match OffsetDateTime::from_unix_timestamp(secs) {
        Ok(dt) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second()
        ),
        Err(_) => String::from("1970-01-01T00:00:00Z"),
    }
}

/// Formats a time as ISO-8601 in UTC with milliseconds, for outgoing tags.
pub fn iso_millis(t: UnixMillis) -> String {
    let base = iso_seconds(t);
    format!("{}.{:03}Z", &base[..base.len() - 1], t.0.rem_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = parse_server_time("2026-09-30T12:00:00.123Z").unwrap();
        assert_eq!(t, UnixMillis(1_790_769_600_123));
        assert_eq!(iso_seconds(t), "2026-09-30T12:00:00Z");
        assert_eq!(iso_millis(t), "2026-09-30T12:00:00.123Z");
        assert_eq!(
            parse_server_time("2026-09-30T14:00:00+02:00"),
            Some(UnixMillis(1_790_769_600_000))
        );
        assert_eq!(parse_server_time("yesterday"), None);
        assert_eq!(iso_seconds(UnixMillis(-1)), "1969-12-31T23:59:59Z");
    }
}
