//! Dates in transcripts: the first line reterm writes to a transcript in a
//! run says `log opened` with the date, and a row on a later day than the
//! one before it is preceded by a `day changed` line, so a transcript read
//! later tells which day each `HH:MM:SS` belongs to. Both lines are shaped
//! as rows of their buffer (`[network] buffer HH:MM:SS -!- …`, UTC, like
//! every row), and line mode prints them too.

use super::transcript::Target;
use chrono::{DateTime, NaiveDate, Utc};
use rete_engine::clock::UnixMillis;
use std::collections::HashMap;

/// The last date written per (network, buffer) in this run.
#[derive(Default)]
pub struct Dates {
    last: HashMap<(String, Target), NaiveDate>,
}

impl Dates {
    /// The lines to write before a row at `time` of `target` (printed as
    /// `label`, e.g. `#rete` or `(server)`) on `network`.
    pub fn before(
        &mut self,
        network: &str,
        target: &Target,
        label: &str,
        time: UnixMillis,
        now: UnixMillis,
    ) -> Vec<String> {
        let day = utc(time).date_naive();
        let key = (network.to_owned(), target.clone());
        let prefix = |t: UnixMillis| format!("[{network}] {label} {}", utc(t).format("%H:%M:%S"));
        match self.last.get(&key).copied() {
            None => {
                self.last.insert(key, day);
                vec![format!(
                    "{} -!- log opened {}",
                    prefix(now),
                    utc(now).format("%A, %-d %B %Y")
                )]
            }
            // Only forward: a history replay of older rows does not go back.
            Some(last) if day > last => {
                self.last.insert(key, day);
                let midnight = day
                    .and_hms_opt(0, 0, 0)
                    .map(|d| d.and_utc().timestamp_millis())
                    .unwrap_or(time.0);
                vec![format!(
                    "{} -!- day changed to {}",
                    prefix(UnixMillis(midnight)),
                    utc(time).format("%A, %-d %B %Y")
                )]
            }
            Some(_) => Vec::new(),
        }
    }
}

fn utc(t: UnixMillis) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    /// 2026-09-30 12:00:01 UTC.
    const T: i64 = 1_790_769_601_000;

    #[test]
    fn log_opened_then_day_changed_forward_only() {
        let mut d = Dates::default();
        let chan = Target::Named("#rete".into());
        assert_eq!(
            d.before("net", &chan, "#rete", UnixMillis(T), UnixMillis(T)),
            ["[net] #rete 12:00:01 -!- log opened Wednesday, 30 September 2026"]
        );
        assert!(d
            .before("net", &chan, "#rete", UnixMillis(T + 1000), UnixMillis(T))
            .is_empty());
        assert_eq!(
            d.before("net", &chan, "#rete", UnixMillis(T + DAY), UnixMillis(T)),
            ["[net] #rete 00:00:00 -!- day changed to Thursday, 1 October 2026"]
        );
        assert!(d
            .before("net", &chan, "#rete", UnixMillis(T), UnixMillis(T))
            .is_empty());
        // Each buffer has its own.
        assert_eq!(
            d.before(
                "net",
                &Target::Server,
                "(server)",
                UnixMillis(T),
                UnixMillis(T)
            )
            .len(),
            1
        );
    }
}
