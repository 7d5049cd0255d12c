//! The registry's clock, injectable so idle expiry and the inbox's one-hour
//! limit can be tested without waiting for them.

use parking_lot::Mutex;
use rete_engine::clock::UnixMillis;
use std::time::{Duration, Instant};

/// Where the registry reads the time.
pub trait Clock: Send + Sync + 'static {
    /// Monotonic time, for idle expiry and inbox ages.
    fn now(&self) -> Instant;
    /// Wall time, for `created` and `last_read`.
    fn wall(&self) -> UnixMillis;
}

/// The operating system's clocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> UnixMillis {
        rete_actors::wall_clock::now()
    }
}

/// The system clocks moved forward by however much a test advanced them.
#[derive(Debug, Default)]
pub struct ShiftedClock {
    ahead: Mutex<Duration>,
}

impl ShiftedClock {
    /// A clock reading the system time.
    pub fn new() -> ShiftedClock {
        ShiftedClock::default()
    }

    /// Moves both clocks forward.
    pub fn advance(&self, by: Duration) {
        *self.ahead.lock() += by;
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> Instant {
        Instant::now() + *self.ahead.lock()
    }

    fn wall(&self) -> UnixMillis {
        let ahead = i64::try_from(self.ahead.lock().as_millis()).unwrap_or(i64::MAX);
        UnixMillis(SystemClock.wall().0.saturating_add(ahead))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_clock_runs_ahead_by_what_was_added() {
        let clock = ShiftedClock::new();
        let before = clock.now();
        let wall = clock.wall();
        clock.advance(Duration::from_secs(900));
        assert!(clock.now() >= before + Duration::from_secs(900));
        assert!(clock.wall().0 >= wall.0 + 900_000);
    }
}
