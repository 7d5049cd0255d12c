//! Time as the engine sees it: numbers handed in by the caller.
//!
//! The engine never reads the OS clock. The host passes a [`Now`] into every
//! input, so tests can drive time step by step and the state serializes.

use serde::{Deserialize, Serialize};

/// Monotonic milliseconds since an origin the host chooses (usually process start).
///
/// Used for timers: flood pacing, WHO timeouts, batch expiry. Never goes backwards.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Mono(pub u64);

impl Mono {
    /// This instant moved `ms` milliseconds later.
    #[must_use]
    pub fn plus_ms(self, ms: u64) -> Mono {
        Mono(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`; zero when `earlier` is later.
    #[must_use]
    pub fn ms_since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// Wall-clock time as milliseconds since the Unix epoch (UTC).
///
/// Used only for row timestamps, never for timers.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct UnixMillis(pub i64);

impl UnixMillis {
    /// The milliseconds as an unsigned count, a time before the epoch as 0
    /// (stores and frames that number time from the epoch take no sign).
    #[must_use]
    pub fn unsigned(self) -> u64 {
        u64::try_from(self.0).unwrap_or(0)
    }
}

/// The two clocks at one instant, handed to every engine input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Now {
    /// For timers.
    pub mono: Mono,
    /// For timestamps.
    pub wall: UnixMillis,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mono_arithmetic_saturates() {
        assert_eq!(Mono(5).plus_ms(10), Mono(15));
        assert_eq!(Mono(u64::MAX).plus_ms(1), Mono(u64::MAX));
        assert_eq!(Mono(15).ms_since(Mono(5)), 10);
        assert_eq!(Mono(5).ms_since(Mono(15)), 0);
    }

    #[test]
    fn unix_millis_before_the_epoch_are_zero_unsigned() {
        assert_eq!(UnixMillis(1_700_000_000_123).unsigned(), 1_700_000_000_123);
        assert_eq!(UnixMillis(-5).unsigned(), 0);
    }
}
