//! The wall clock, read in this one place by every host around the engine:
//! the session actors, the control surface, reterm and the rete-cloud
//! service. The engine itself never reads the OS clock (each of its inputs
//! carries a [`Now`](rete_engine::clock::Now)); its hosts read it here.

use rete_engine::clock::UnixMillis;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now. A clock set before the epoch
/// reads as the epoch; one past `i64::MAX` milliseconds as that.
pub fn now() -> UnixMillis {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    UnixMillis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_after_this_code_was_written_and_never_goes_far_back() {
        // 2026-01-01T00:00:00Z: a reading before it is a clock not read.
        let first = now();
        assert!(first.0 > 1_767_225_600_000, "{first:?}");
        assert!(now() >= UnixMillis(first.0 - 1_000));
    }
}
