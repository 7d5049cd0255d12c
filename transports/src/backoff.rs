//! Reconnect delays.
//!
//! Doubling the delay spares a server (and our own log) during a long outage; the jitter keeps many clients that
//! lost the same server from all coming back in the same second.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// Exponential backoff with jitter for reconnects: delay n is random in [c / 2, c] where c = min(base * 2^n, max).
///
/// Keeping the lower half out of the jitter range means a delay never collapses to zero, so even an unlucky draw
/// still backs off. Serializable so a session can persist how far it had backed off.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Ceiling of the first delay, in milliseconds.
    pub base_ms: u64,
    /// Largest ceiling any delay can reach, in milliseconds.
    pub max_ms: u64,
    /// How many delays were handed out since the last reset.
    pub attempt: u32,
}

impl Backoff {
    /// A fresh backoff; durations beyond `u64::MAX` milliseconds saturate.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base_ms: millis(base),
            max_ms: millis(max),
            attempt: 0,
        }
    }

    /// The delay to wait before the next attempt; each call moves on to the next attempt.
    pub fn next_delay(&mut self, rng: &mut impl Rng) -> Duration {
        let growth = 1u64.checked_shl(self.attempt).unwrap_or(u64::MAX);
        let ceiling = self.base_ms.saturating_mul(growth).min(self.max_ms);
        let delay = rng.random_range(ceiling / 2..=ceiling);
        self.attempt = self.attempt.saturating_add(1);
        Duration::from_millis(delay)
    }

    /// Back to the first delay; call it once a connection has proven healthy.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// How many delays were handed out since the last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
