//! Reconnect delays.
//!
//! Doubling the delay spares a server (and our own log) during a long outage; the jitter keeps many clients that
//! lost the same server from all coming back in the same second.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// How long a connection must stay up after it proved healthy (registered, or
/// attached to the service) before its loss starts the delays over. A server
/// that lets a client in and drops it at once (a ban applied after
/// registration, a service failing right after `ready`) would otherwise be
/// retried at the first delay forever, which is how addresses get banned.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

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
    /// When the current connection proved healthy, in the caller's
    /// monotonic milliseconds; a connection's state, so never saved.
    #[serde(skip)]
    proven_at_ms: Option<u64>,
}

impl Backoff {
    /// A fresh backoff; durations beyond `u64::MAX` milliseconds saturate.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base_ms: millis(base),
            max_ms: millis(max),
            attempt: 0,
            proven_at_ms: None,
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

    /// The delay after a connection that ended at `now_ms`: the first delay
    /// again when the connection had proven healthy and stayed up
    /// [`HEALTHY_AFTER`] since, else the next one.
    pub fn next_delay_after_loss(&mut self, now_ms: u64, rng: &mut impl Rng) -> Duration {
        self.connection_ended(now_ms);
        self.next_delay(rng)
    }

    /// The current connection ended at `now_ms` without a delay being asked
    /// for yet (a restarted session actor reconnects at once): the delays
    /// start over if it had proven healthy and stayed up [`HEALTHY_AFTER`],
    /// and its mark is cleared, so the next connection is judged alone.
    pub fn connection_ended(&mut self, now_ms: u64) {
        if let Some(at) = self.proven_at_ms.take() {
            if now_ms.saturating_sub(at) >= millis(HEALTHY_AFTER) {
                self.attempt = 0;
            }
        }
    }

    /// The current connection proved healthy at `now_ms` (registered, or
    /// attached): if it stays up [`HEALTHY_AFTER`], its loss starts the
    /// delays over (see [`next_delay_after_loss`](Self::next_delay_after_loss)).
    /// A second mark on the same connection keeps the first: it has been
    /// healthy since then.
    pub fn proven(&mut self, now_ms: u64) {
        self.proven_at_ms.get_or_insert(now_ms);
    }

    /// Back to the first delay at once: for a connection the person asked
    /// for, which should not wait out an earlier outage's delays.
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.proven_at_ms = None;
    }

    /// How many delays were handed out since the last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
