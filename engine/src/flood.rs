//! Outgoing-line flood throttle: a token bucket with two priorities.
//!
//! Servers disconnect clients that send too fast ("Excess Flood"), so every
//! line the client sends passes through [`FloodThrottle`]. A burst of
//! [`FloodConfig::burst`] lines may go at once; after that one token comes
//! back every [`FloodConfig::interval_ms`], up to the burst again.
//!
//! **Urgent lines** (PONG, and CAP / AUTHENTICATE during registration) jump
//! the queue and always go at once: they take a token when one is there, but
//! never wait for one. Otherwise a long chat backlog could hold back a PONG
//! until the server pings the client out. Urgent lines are few and small, so
//! letting them overdraw the bucket does not risk a flood disconnect.
//!
//! Pure and deterministic: time comes in as [`Mono`]; a call with an earlier
//! `now` than one already seen is treated as the latest seen.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::clock::Mono;

/// Pacing limits; the defaults suit common ircd flood limits (e.g. Solanum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloodConfig {
    /// Lines that may go back to back after a quiet spell. `0` acts as `1`,
    /// since an empty bucket could never send a normal line.
    pub burst: u32,
    /// Milliseconds to earn back one token. `0` turns pacing off.
    pub interval_ms: u64,
}

impl Default for FloodConfig {
    fn default() -> Self {
        FloodConfig {
            burst: 5,
            interval_ms: 2000,
        }
    }
}

/// How a line queues: protocol answers must not wait behind chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Priority {
    /// Goes before all normal lines and without waiting for a token
    /// (PONG; CAP / AUTHENTICATE during registration).
    Urgent,
    /// Everything else: paced by the token bucket, in order.
    Normal,
    /// Answers nobody waits on (CTCP replies): they go only from spare
    /// capacity, with no normal line waiting and more than half the burst
    /// in the bucket, so they never delay a person's line nor take the
    /// tokens it would need.
    Spare,
}

/// The throttle: queued lines plus the token bucket.
///
/// `Debug` shows the queued items through `T`'s own `Debug`, so `T` must
/// redact secrets (PASS, AUTHENTICATE payloads) itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloodThrottle<T> {
    cfg: FloodConfig,
    tokens: u32,
    /// Start of the interval now being earned; only meaningful below burst.
    refill_from: Mono,
    /// Latest `now` seen, so time never runs backwards.
    latest: Mono,
    urgent: VecDeque<T>,
    normal: VecDeque<T>,
    #[serde(default)]
    spare: VecDeque<T>,
}

impl<T> FloodThrottle<T> {
    /// A throttle with a full bucket, so the first lines of a session go at once.
    #[must_use]
    pub fn new(cfg: FloodConfig) -> Self {
        FloodThrottle {
            cfg,
            tokens: cfg.burst.max(1),
            refill_from: Mono(0),
            latest: Mono(0),
            urgent: VecDeque::new(),
            normal: VecDeque::new(),
            spare: VecDeque::new(),
        }
    }

    /// Queues a line; it leaves through [`Self::poll_send`].
    pub fn push(&mut self, item: T, prio: Priority) {
        match prio {
            Priority::Urgent => self.urgent.push_back(item),
            Priority::Normal => self.normal.push_back(item),
            Priority::Spare => self.spare.push_back(item),
        }
    }

    /// Tokens a spare line leaves in the bucket at least: half the burst,
    /// which stays the person's.
    fn reserve(&self) -> u32 {
        self.burst() / 2
    }

    /// Next item allowed to go now, or None (nothing queued or no token yet).
    ///
    /// Call in a loop until `None`: urgent items come first, then normal ones
    /// while tokens last.
    #[must_use]
    pub fn poll_send(&mut self, now: Mono) -> Option<T> {
        self.advance(now);
        if let Some(item) = self.urgent.pop_front() {
            self.tokens = self.tokens.saturating_sub(1);
            return Some(item);
        }
        if self.tokens == 0 {
            return None;
        }
        if let Some(item) = self.normal.pop_front() {
            self.tokens -= 1;
            return Some(item);
        }
        if self.tokens <= self.reserve() {
            return None;
        }
        let item = self.spare.pop_front()?;
        self.tokens -= 1;
        Some(item)
    }

    /// The next queued item whatever the tokens say, urgent ones first: for a
    /// connection that is closing, where holding lines back only loses them.
    #[must_use]
    pub fn pop_unpaced(&mut self) -> Option<T> {
        self.urgent
            .pop_front()
            .or_else(|| self.normal.pop_front())
            .or_else(|| self.spare.pop_front())
    }

    /// Takes every queued item `pick` chooses out of the queue, urgent ones
    /// first, each queue's order kept; the rest stay queued as they were.
    pub fn take_where(&mut self, mut pick: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut taken = Vec::new();
        for queue in [&mut self.urgent, &mut self.normal, &mut self.spare] {
            let mut kept = VecDeque::with_capacity(queue.len());
            for item in queue.drain(..) {
                if pick(&item) {
                    taken.push(item);
                } else {
                    kept.push_back(item);
                }
            }
            *queue = kept;
        }
        taken
    }

    /// When poll_send should be called next (None when the queue is empty).
    ///
    /// Returns `now` (or the latest time seen) when something may go already.
    #[must_use]
    pub fn poll_timeout(&self, now: Mono) -> Option<Mono> {
        let now = now.max(self.latest);
        if !self.urgent.is_empty() {
            return Some(now);
        }
        let (tokens, from) = self.bucket_at(now);
        // Tokens a waiting line needs before it may go.
        let needed = if !self.normal.is_empty() {
            1
        } else if !self.spare.is_empty() {
            self.reserve() + 1
        } else {
            return None;
        };
        if tokens >= needed {
            Some(now)
        } else {
            let missing = u64::from(needed - tokens);
            Some(from.plus_ms(self.cfg.interval_ms.saturating_mul(missing)))
        }
    }

    /// Number of lines waiting, every priority.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.urgent.len() + self.normal.len() + self.spare.len()
    }

    /// The pacing limits in force.
    #[must_use]
    pub fn config(&self) -> FloodConfig {
        self.cfg
    }

    /// Tokens in the bucket at `now` (clamped to the latest time seen),
    /// without changing state: how many normal lines may go at once.
    #[must_use]
    pub fn tokens_at(&self, now: Mono) -> u32 {
        self.bucket_at(now.max(self.latest)).0
    }

    /// When the bucket is full again (`now` when it is, or when pacing is
    /// off): the time a line that should use only spare capacity may go.
    #[must_use]
    pub fn full_at(&self, now: Mono) -> Mono {
        let now = now.max(self.latest);
        let (tokens, from) = self.bucket_at(now);
        let missing = u64::from(self.burst().saturating_sub(tokens));
        if missing == 0 || self.cfg.interval_ms == 0 {
            return now;
        }
        from.plus_ms(self.cfg.interval_ms.saturating_mul(missing))
            .max(now)
    }

    /// Lines waiting that jump the queue (PONG, registration).
    #[must_use]
    pub fn queued_urgent(&self) -> usize {
        self.urgent.len()
    }

    /// Drops all queued lines and refills the bucket: on disconnect nothing
    /// queued belongs to the next connection, and a new server owes no debt.
    pub fn clear(&mut self) {
        self.urgent.clear();
        self.normal.clear();
        self.spare.clear();
        self.refill();
    }

    /// Refills the bucket and keeps the queue: registration lines are paced
    /// by the server's own registration rules, so the burst starts afresh
    /// once the connection is registered.
    pub fn refill(&mut self) {
        self.tokens = self.burst();
        self.refill_from = self.latest;
    }

    /// [`Self::clear`], and re-anchors the clock at `now` even if it is
    /// earlier than times seen before, e.g. after restoring serialized state
    /// in a process whose monotonic clock has another origin.
    pub fn reset(&mut self, now: Mono) {
        self.latest = now;
        self.clear();
    }

    fn burst(&self) -> u32 {
        self.cfg.burst.max(1)
    }

    /// Credits tokens earned up to `now` (clamped to the latest time seen).
    fn advance(&mut self, now: Mono) {
        self.latest = now.max(self.latest);
        (self.tokens, self.refill_from) = self.bucket_at(self.latest);
    }

    /// Tokens and refill start as they stand at `now`, without changing state.
    ///
    /// A full bucket earns nothing, so its refill start moves along with `now`:
    /// the first token spent from it is earned back a full interval later.
    fn bucket_at(&self, now: Mono) -> (u32, Mono) {
        let burst = self.burst();
        let interval = self.cfg.interval_ms;
        if self.tokens >= burst || interval == 0 {
            return (burst, now);
        }
        let earned = now.ms_since(self.refill_from) / interval;
        let tokens = u64::from(self.tokens).saturating_add(earned);
        match u32::try_from(tokens) {
            Ok(tokens) if tokens < burst => (
                tokens,
                self.refill_from.plus_ms(earned.saturating_mul(interval)),
            ),
            _ => (burst, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Priority::{Normal, Urgent};

    /// One row of a step table.
    enum Step {
        /// Queue an item.
        Push(&'static str, Priority),
        /// `poll_send(at)` must return this.
        Send(u64, Option<&'static str>),
        /// `poll_timeout(at)` must return this.
        Wake(u64, Option<u64>),
        /// `queued()` must be this.
        Queued(usize),
        /// `clear()`.
        Clear,
        /// `reset(at)`.
        Reset(u64),
        /// Serialize and deserialize the throttle, continuing with the copy.
        RoundTrip,
    }
    use Step::*;

    fn run(cfg: FloodConfig, steps: &[Step]) {
        let mut t = FloodThrottle::<String>::new(cfg);
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Push(item, prio) => t.push(item.to_owned(), prio),
                Send(at, want) => {
                    let got = t.poll_send(Mono(at));
                    assert_eq!(got.as_deref(), want, "step {i}: poll_send({at})");
                }
                Wake(at, want) => {
                    let got = t.poll_timeout(Mono(at));
                    assert_eq!(got, want.map(Mono), "step {i}: poll_timeout({at})");
                }
                Queued(n) => assert_eq!(t.queued(), n, "step {i}: queued"),
                Clear => t.clear(),
                Reset(at) => t.reset(Mono(at)),
                RoundTrip => {
                    let json = serde_json::to_string(&t).unwrap();
                    t = serde_json::from_str(&json).unwrap();
                }
            }
        }
    }

    const CFG: FloodConfig = FloodConfig {
        burst: 3,
        interval_ms: 1000,
    };

    /// A spare line (a CTCP reply) goes behind every normal line and only
    /// while the bucket holds more than half the burst (3 → reserve 1).
    #[test]
    fn spare_lines_take_only_spare_capacity_behind_normal_ones() {
        use Priority::Spare;
        #[rustfmt::skip]
        run(CFG, &[
            Push("r1", Spare), Push("r2", Spare), Push("r3", Spare),
            Push("mine", Normal), Queued(4),
            // The person's line first, then replies down to the reserve.
            Send(0, Some("mine")), Send(0, Some("r1")), Send(0, None),
            // One token in the bucket is the reserve: the next reply waits
            // for a second one.
            Wake(0, Some(1000)), Send(999, None), Send(1000, Some("r2")),
            // A normal line may take the reserve; a spare one then waits
            // until two tokens are back.
            Push("again", Normal), Send(1000, Some("again")),
            Wake(1000, Some(3000)), Send(2999, None), Send(3000, Some("r3")),
            RoundTrip, Queued(0), Wake(3000, None),
        ]);
    }

    #[test]
    fn default_config_is_five_lines_then_one_per_two_seconds() {
        assert_eq!(
            FloodConfig::default(),
            FloodConfig {
                burst: 5,
                interval_ms: 2000
            }
        );
    }

    #[test]
    fn burst_then_one_per_interval() {
        #[rustfmt::skip]
        run(CFG, &[
            Wake(0, None), Send(0, None),
            Push("a", Normal), Push("b", Normal), Push("c", Normal),
            Push("d", Normal), Push("e", Normal), Queued(5),
            Wake(0, Some(0)),
            Send(0, Some("a")), Send(0, Some("b")), Send(0, Some("c")), Send(0, None),
            Queued(2), Wake(0, Some(1000)), Wake(500, Some(1000)),
            Send(999, None), Send(1000, Some("d")), Send(1000, None),
            Wake(1000, Some(2000)),
            Send(1999, None), Send(2000, Some("e")), Send(2000, None),
            Queued(0), Wake(2000, None),
        ]);
    }

    #[test]
    fn partial_interval_progress_is_kept() {
        // Tokens earned at 1000 and 2000 regardless of when we look.
        #[rustfmt::skip]
        run(CFG, &[
            Push("a", Normal), Push("b", Normal), Push("c", Normal),
            Push("d", Normal), Push("e", Normal),
            Send(0, Some("a")), Send(0, Some("b")), Send(0, Some("c")),
            Send(1500, Some("d")), Send(1500, None), Wake(1500, Some(2000)),
            Send(2000, Some("e")),
        ]);
    }

    #[test]
    fn take_where_takes_the_chosen_items_and_keeps_the_rest_in_order() {
        let mut f = FloodThrottle::new(FloodConfig {
            burst: 1,
            interval_ms: 1000,
        });
        for item in ["a1", "b1", "a2", "b2"] {
            f.push(item, Normal);
        }
        f.push("a-urgent", Urgent);
        assert_eq!(
            f.take_where(|i| i.starts_with('a')),
            ["a-urgent", "a1", "a2"]
        );
        assert_eq!(f.queued(), 2);
        assert_eq!(f.pop_unpaced(), Some("b1"));
        assert_eq!(f.pop_unpaced(), Some("b2"));
        assert!(f.take_where(|_| true).is_empty());
    }

    #[test]
    fn pop_unpaced_drains_everything_in_order() {
        let mut f = FloodThrottle::new(FloodConfig {
            burst: 1,
            interval_ms: 1000,
        });
        f.push("a", Priority::Normal);
        f.push("b", Priority::Normal);
        f.push("u", Priority::Urgent);
        assert_eq!(f.poll_send(Mono(0)), Some("u"));
        assert_eq!(f.poll_send(Mono(0)), None);
        assert_eq!(f.pop_unpaced(), Some("a"));
        assert_eq!(f.pop_unpaced(), Some("b"));
        assert_eq!(f.pop_unpaced(), None);
    }

    #[test]
    fn refill_caps_at_burst_after_idle() {
        #[rustfmt::skip]
        run(CFG, &[
            Push("a", Normal), Send(0, Some("a")),
            Push("b", Normal), Push("c", Normal), Push("d", Normal), Push("e", Normal),
            Send(60_000, Some("b")), Send(60_000, Some("c")), Send(60_000, Some("d")),
            Send(60_000, None),
            // The spent-from-full bucket starts earning when the first token went.
            Wake(60_000, Some(61_000)), Send(61_000, Some("e")),
        ]);
    }

    #[test]
    fn full_bucket_starts_earning_when_first_spent() {
        // Idle time while full is not banked: spending at 10_000 earns back at 11_000.
        #[rustfmt::skip]
        run(FloodConfig { burst: 1, interval_ms: 1000 }, &[
            Push("a", Normal), Push("b", Normal),
            Send(10_000, Some("a")), Send(10_500, None),
            Wake(10_500, Some(11_000)), Send(11_000, Some("b")),
        ]);
    }

    #[test]
    fn urgent_jumps_queue_and_does_not_wait_for_tokens() {
        #[rustfmt::skip]
        run(CFG, &[
            Push("n1", Normal), Push("n2", Normal), Push("n3", Normal), Push("n4", Normal),
            Send(0, Some("n1")), Send(0, Some("n2")), Send(0, Some("n3")), Send(0, None),
            Push("pong", Urgent), Wake(0, Some(0)),
            Send(0, Some("pong")), Send(0, None),
            // No token was there, so none was overdrawn: n4 goes on schedule.
            Send(1000, Some("n4")),
        ]);
    }

    #[test]
    fn urgent_takes_a_token_when_there_is_one() {
        #[rustfmt::skip]
        run(FloodConfig { burst: 2, interval_ms: 1000 }, &[
            Push("n1", Normal), Push("n2", Normal),
            Push("u1", Urgent), Push("u2", Urgent), Queued(4),
            Send(0, Some("u1")), Send(0, Some("u2")), Send(0, None),
            Send(999, None), Send(1000, Some("n1")), Send(1000, None),
            Send(2000, Some("n2")),
        ]);
    }

    #[test]
    fn earlier_now_is_treated_as_latest_seen() {
        #[rustfmt::skip]
        run(FloodConfig { burst: 1, interval_ms: 1000 }, &[
            Push("a", Normal), Push("b", Normal), Push("c", Normal),
            Send(5000, Some("a")),
            // Going back to 0 must not earn a token from a negative gap...
            Send(0, None), Wake(0, Some(6000)),
            Send(6000, Some("b")),
            // ...nor lose track: 6000 is still the reference.
            Send(100, None), Send(7000, Some("c")),
        ]);
    }

    #[test]
    fn clear_empties_and_refills() {
        #[rustfmt::skip]
        run(CFG, &[
            Push("a", Normal), Push("b", Normal), Push("c", Normal), Push("d", Normal),
            Push("u", Urgent),
            Send(0, Some("u")), Send(0, Some("a")), Send(0, Some("b")), Send(0, None),
            Clear, Queued(0), Wake(0, None),
            Push("x", Normal), Push("y", Normal), Push("z", Normal), Push("w", Normal),
            Send(10, Some("x")), Send(10, Some("y")), Send(10, Some("z")), Send(10, None),
        ]);
    }

    #[test]
    fn reset_reanchors_clock_even_backwards() {
        #[rustfmt::skip]
        run(FloodConfig { burst: 1, interval_ms: 1000 }, &[
            Push("a", Normal), Push("b", Normal), Send(50_000, Some("a")),
            // Restored in a new process whose clock starts near zero.
            Reset(7), Queued(0),
            Push("c", Normal), Push("d", Normal),
            Send(7, Some("c")), Wake(7, Some(1007)), Send(1007, Some("d")),
        ]);
    }

    #[test]
    fn serde_round_trip_keeps_state() {
        #[rustfmt::skip]
        run(CFG, &[
            Push("a", Normal), Push("b", Normal), Push("c", Normal), Push("d", Normal),
            Push("u", Urgent),
            Send(0, Some("u")), Send(0, Some("a")), Send(500, Some("b")),
            RoundTrip, Queued(2),
            Send(500, None), Wake(300, Some(1000)),
            Send(1000, Some("c")), Send(1999, None), Send(2000, Some("d")),
        ]);
    }

    #[test]
    fn zero_interval_is_unpaced_and_zero_burst_acts_as_one() {
        #[rustfmt::skip]
        run(FloodConfig { burst: 1, interval_ms: 0 }, &[
            Push("a", Normal), Push("b", Normal), Push("c", Normal),
            Send(0, Some("a")), Send(0, Some("b")), Send(0, Some("c")), Send(0, None),
        ]);
        #[rustfmt::skip]
        run(FloodConfig { burst: 0, interval_ms: 1000 }, &[
            Push("a", Normal), Push("b", Normal),
            Send(0, Some("a")), Send(0, None), Send(1000, Some("b")),
        ]);
    }
}
