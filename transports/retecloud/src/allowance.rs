//! A request allowance: a token bucket in whole tokens and milliseconds.
//!
//! The service gives each connection one ([`ServerConfig`]'s burst and
//! interval) and refuses a request past it with `rate_limited`. The client
//! keeps a stricter one of its own, so that what it sends always fits the
//! service's, and holds a request back rather than have it refused.
//!
//! [`ServerConfig`]: super::server::ServerConfig

/// Tokens available now, and when the last one was earned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Allowance {
    /// Requests allowed at once.
    burst: u32,
    /// One more token per this many milliseconds (at least 1).
    interval_ms: u64,
    tokens: u32,
    /// When the last token was added (or the bucket was last full).
    refilled_at: u64,
}

impl Allowance {
    /// A full bucket at `now`.
    pub(crate) fn full(now: u64, burst: u32, interval_ms: u64) -> Self {
        Self {
            burst,
            interval_ms: interval_ms.max(1),
            tokens: burst,
            refilled_at: now,
        }
    }

    /// Takes one request's token; false when none is left.
    pub(crate) fn take(&mut self, now: u64) -> bool {
        self.refill(now);
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }

    /// When the next token is earned: after a [`take`](Self::take) that
    /// failed, the time a request held back can be sent.
    pub(crate) fn next_token_at(&self) -> u64 {
        self.refilled_at.saturating_add(self.interval_ms)
    }

    /// Adds the tokens earned since the last refill, up to the burst.
    fn refill(&mut self, now: u64) {
        let earned = now.saturating_sub(self.refilled_at) / self.interval_ms;
        if earned == 0 {
            return;
        }
        let room = u64::from(self.burst.saturating_sub(self.tokens));
        if earned >= room {
            self.tokens = self.burst;
            self.refilled_at = now;
        } else {
            // `earned < room <= u32::MAX`.
            self.tokens += earned as u32;
            self.refilled_at += earned * self.interval_ms;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_interval_never_more_than_the_burst() {
        let mut a = Allowance::full(0, 3, 100);
        assert!((0..3).all(|_| a.take(10)));
        assert!(!a.take(10));
        assert_eq!(a.next_token_at(), 100);
        assert!(!a.take(99));
        assert!(a.take(100));
        assert!(!a.take(150));
        assert_eq!(a.next_token_at(), 200);
        // A long pause fills the bucket, no further.
        assert!((0..3).all(|_| a.take(100_000)));
        assert!(!a.take(100_000));
    }

    #[test]
    fn a_zero_interval_is_taken_as_one_millisecond() {
        let mut a = Allowance::full(0, 1, 0);
        assert!(a.take(0));
        assert!(!a.take(0));
        assert_eq!(a.next_token_at(), 1);
        assert!(a.take(1));
    }
}
