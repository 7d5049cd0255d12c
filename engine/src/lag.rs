//! Lag: the round trip of a `PING :rete-lag-<n>` the session sends on a
//! timer while registered, measured when its PONG comes back. Fed with
//! time like every engine state machine; the host only drives the timer.
//!
//! The PONG for our own probe is consumed here and never reaches a buffer.

use crate::clock::Mono;
use serde::Serialize;

/// Milliseconds between probes.
pub const PROBE_INTERVAL_MS: u64 = 30_000;
/// The token prefix that marks a PONG as the answer to our probe.
pub const TOKEN_PREFIX: &str = "rete-lag-";

/// The lag measurement of one connection.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Lag {
    /// When the next probe is due (none while not registered).
    #[serde(skip)]
    next_probe: Option<Mono>,
    /// The probe in flight: its number and when it was sent.
    #[serde(skip)]
    in_flight: Option<(u64, Mono)>,
    /// Probes sent so far (numbers the tokens; never reused on a session).
    #[serde(skip)]
    sent: u64,
    /// The last round trip measured, in milliseconds.
    pub last_ms: Option<u64>,
}

impl Lag {
    /// Registration completed: the first probe goes out one interval on.
    pub fn start(&mut self, now: Mono) {
        self.next_probe = Some(now.plus_ms(PROBE_INTERVAL_MS));
        self.in_flight = None;
        self.last_ms = None;
    }

    /// The connection ended: nothing is measured until the next start.
    pub fn stop(&mut self) {
        self.next_probe = None;
        self.in_flight = None;
        self.last_ms = None;
    }

    /// The token of a probe to send now, when one is due. One probe is in
    /// flight at a time: a server that stops answering shows a growing lag.
    pub fn poll_probe(&mut self, now: Mono) -> Option<String> {
        let due = self.next_probe?;
        if now < due || self.in_flight.is_some() {
            return None;
        }
        self.sent += 1;
        self.in_flight = Some((self.sent, now));
        self.next_probe = Some(now.plus_ms(PROBE_INTERVAL_MS));
        Some(format!("{TOKEN_PREFIX}{}", self.sent))
    }

    /// A PONG with `token` arrived; true when it answers our probe (the
    /// caller then drops it). A stale or foreign token is ours only by its
    /// prefix: it is consumed but measures nothing.
    pub fn on_pong(&mut self, now: Mono, token: &str) -> bool {
        let Some(n) = token.strip_prefix(TOKEN_PREFIX) else {
            return false;
        };
        if let Some((sent, at)) = self.in_flight {
            if n.parse::<u64>().ok() == Some(sent) {
                self.last_ms = Some(now.ms_since(at));
                self.in_flight = None;
            }
        }
        true
    }

    /// When the host should wake the session for the next probe.
    pub fn poll_timeout(&self) -> Option<Mono> {
        if self.in_flight.is_some() {
            return None;
        }
        self.next_probe
    }

    /// The lag to show at `now`: the last round trip, or, while a probe is
    /// unanswered for longer than that, how long it has been out.
    pub fn current_ms(&self, now: Mono) -> Option<u64> {
        let waiting = self.in_flight.map(|(_, at)| now.ms_since(at));
        match (self.last_ms, waiting) {
            (Some(last), Some(w)) => Some(last.max(w)),
            (Some(last), None) => Some(last),
            (None, Some(w)) if w >= PROBE_INTERVAL_MS / 6 => Some(w),
            (None, _) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_table() {
        let mut lag = Lag::default();
        // (time, what happens, probe sent, lag shown)
        assert_eq!(lag.poll_probe(Mono(0)), None, "not registered");
        lag.start(Mono(1_000));
        assert_eq!(lag.poll_timeout(), Some(Mono(31_000)));
        assert_eq!(lag.poll_probe(Mono(30_999)), None);
        assert_eq!(lag.poll_probe(Mono(31_000)).as_deref(), Some("rete-lag-1"));
        assert_eq!(lag.poll_timeout(), None, "one probe in flight");
        assert_eq!(lag.current_ms(Mono(31_100)), None);
        assert!(lag.on_pong(Mono(31_250), "rete-lag-1"));
        assert_eq!(lag.current_ms(Mono(40_000)), Some(250));
        assert_eq!(lag.poll_timeout(), Some(Mono(61_000)));
        assert_eq!(lag.poll_probe(Mono(61_000)).as_deref(), Some("rete-lag-2"));
        // Unanswered for longer than the last round trip: the lag grows.
        assert_eq!(lag.current_ms(Mono(61_100)), Some(250));
        assert_eq!(lag.current_ms(Mono(64_000)), Some(3_000));
        // A stale answer is consumed and measures nothing.
        assert!(lag.on_pong(Mono(64_001), "rete-lag-1"));
        assert_eq!(lag.current_ms(Mono(64_001)), Some(3_001));
        // A PONG that is not ours is left to the caller.
        assert!(!lag.on_pong(Mono(64_002), "irc.example"));
        assert!(lag.on_pong(Mono(65_000), "rete-lag-2"));
        assert_eq!(lag.current_ms(Mono(65_000)), Some(4_000));
        lag.stop();
        assert_eq!(lag.current_ms(Mono(70_000)), None);
        assert_eq!(lag.poll_probe(Mono(100_000)), None);
        // Tokens are not reused after a reconnect.
        lag.start(Mono(100_000));
        assert_eq!(lag.poll_probe(Mono(130_000)).as_deref(), Some("rete-lag-3"));
    }
}
