//! Rate-limited accounting of refused requests.
//!
//! Any local process can hammer the port, so refusals must not flood the log:
//! at most one debug line per class every [`INTERVAL`]. The line is built
//! here, from the class alone, so it cannot carry an offered token, a header
//! value, a path or a body.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::gate::Refusal;

/// The shortest time between two lines for the same class.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

/// Per-class counters; one per server, updated by every refused connection.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    classes: HashMap<Refusal, ClassState>,
}

#[derive(Debug, Default)]
struct ClassState {
    last_line: Option<Instant>,
    unreported: u64,
}

impl RefusalLog {
    /// An empty log: the first refusal of each class is reported at once.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Counts one refusal at `now` and returns the line to log, if this class
    /// has had no line for [`INTERVAL`]. The count in the line covers every
    /// refusal of the class since its last line, this one included.
    pub(crate) fn record(&mut self, class: Refusal, now: Instant) -> Option<String> {
        let state = self.classes.entry(class).or_default();
        state.unreported = state.unreported.saturating_add(1);
        let due = state
            .last_line
            .is_none_or(|last| now.saturating_duration_since(last) >= INTERVAL);
        if !due {
            return None;
        }
        let count = std::mem::take(&mut state.unreported);
        state.last_line = Some(now);
        Some(line(class, count))
    }
}

fn line(class: Refusal, count: u64) -> String {
    let answer = match class.status() {
        Some(status) => status.to_string(),
        None => "connection closed unanswered".to_owned(),
    };
    format!(
        "refused: {}, answered {answer}, {count} since the last line",
        class.class_name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn the_first_refusal_is_logged_at_once() {
        let mut log = RefusalLog::new();
        let got = log.record(Refusal::Token, Instant::now());
        let want = "refused: bad or missing token, answered 403, 1 since the last line";
        assert_eq!(got.as_deref(), Some(want));
    }

    #[test]
    fn one_line_per_class_per_interval_with_the_count() {
        let mut log = RefusalLog::new();
        let t0 = Instant::now();
        assert!(log.record(Refusal::Host, t0).is_some());
        assert_eq!(log.record(Refusal::Host, t0 + secs(1)), None);
        assert_eq!(log.record(Refusal::Host, t0 + secs(9)), None);
        assert_eq!(
            log.record(Refusal::Host, t0 + Duration::from_millis(9_999)),
            None
        );
        let got = log.record(Refusal::Host, t0 + secs(10));
        assert_eq!(
            got.as_deref(),
            Some("refused: Host, answered 403, 4 since the last line")
        );
        assert_eq!(log.record(Refusal::Host, t0 + secs(19)), None);
        let got = log.record(Refusal::Host, t0 + secs(25));
        assert_eq!(
            got.as_deref(),
            Some("refused: Host, answered 403, 2 since the last line")
        );
    }

    #[test]
    fn classes_are_limited_independently() {
        let mut log = RefusalLog::new();
        let t0 = Instant::now();
        assert!(log.record(Refusal::Token, t0).is_some());
        assert!(log.record(Refusal::Origin, t0 + secs(1)).is_some());
        assert_eq!(log.record(Refusal::Token, t0 + secs(2)), None);
        let got = log.record(Refusal::Origin, t0 + secs(11));
        assert_eq!(
            got.as_deref(),
            Some("refused: Origin, answered 403, 1 since the last line")
        );
    }

    #[test]
    fn unanswered_classes_say_so() {
        let mut log = RefusalLog::new();
        let got = log.record(Refusal::PeerOtherUser, Instant::now());
        let want = "refused: peer is another user, answered connection closed unanswered, 1 since the last line";
        assert_eq!(got.as_deref(), Some(want));
    }

    #[test]
    fn each_class_line_has_its_status() {
        let mut log = RefusalLog::new();
        let now = Instant::now();
        let got = log.record(Refusal::Method, now).unwrap_or_default();
        assert!(got.contains("method, answered 405,"), "{got}");
        let got = log.record(Refusal::HeadTooLarge, now).unwrap_or_default();
        assert!(got.contains("431, answered 431,"), "{got}");
    }

    #[test]
    fn an_instant_earlier_than_the_last_line_is_not_due() {
        let mut log = RefusalLog::new();
        let t0 = Instant::now() + secs(100);
        assert!(log.record(Refusal::Token, t0).is_some());
        assert_eq!(log.record(Refusal::Token, t0 - secs(50)), None);
    }
}
