//! send_raw's two limits per session, as a state machine fed with time: at
//! most 30 lines in any 60 seconds, and a burst of at most 5 that refills by
//! one every 2 seconds.
//!
//! A line is reserved before it is handed to the session and then committed
//! (it was sent) or released (it was not). A reservation holds its place
//! under both limits, so concurrent calls can never exceed them; a released
//! one takes nothing from either, since a refused line does not count.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Lines per session in any rolling minute.
pub(crate) const PER_MINUTE: usize = 30;
/// Lines at once.
pub(crate) const BURST: u32 = 5;
/// One more line of burst every this long.
pub(crate) const REFILL: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(60);

/// Why a line was refused. `Display` is the contract's error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CapRefused {
    /// The rolling minute is full (also the answer when both refuse).
    #[error("too many sends: at most 30 per minute on a session")]
    PerMinute,
    /// The burst is spent.
    #[error("too many sends: at most 5 at once")]
    Burst,
}

/// One session's limits.
#[derive(Clone, Debug)]
pub(crate) struct RateCaps {
    /// When each committed line in the window was sent, oldest first.
    sent: VecDeque<Instant>,
    /// Lines reserved and not yet committed or released.
    reserved: usize,
    /// Burst left, and when it last grew (or was last full).
    tokens: u32,
    refilled_at: Instant,
}

impl RateCaps {
    /// Fresh limits: a full burst, an empty minute.
    pub(crate) fn new(now: Instant) -> RateCaps {
        RateCaps {
            sent: VecDeque::new(),
            reserved: 0,
            tokens: BURST,
            refilled_at: now,
        }
    }

    /// Takes a place for one line, or says which limit refuses it.
    pub(crate) fn reserve(&mut self, now: Instant) -> Result<(), CapRefused> {
        self.advance(now);
        if self.sent.len() + self.reserved >= PER_MINUTE {
            return Err(CapRefused::PerMinute);
        }
        if self.tokens == 0 {
            return Err(CapRefused::Burst);
        }
        if self.tokens == BURST {
            // Refilling starts when the burst is first drawn from.
            self.refilled_at = now;
        }
        self.tokens -= 1;
        self.reserved += 1;
        Ok(())
    }

    /// The reserved line was sent: it counts in the minute from now.
    pub(crate) fn commit(&mut self, now: Instant) {
        self.reserved = self.reserved.saturating_sub(1);
        self.sent.push_back(now);
    }

    /// The reserved line was not sent: both limits get their place back.
    pub(crate) fn release(&mut self) {
        self.reserved = self.reserved.saturating_sub(1);
        self.tokens = (self.tokens + 1).min(BURST);
    }

    /// True when nothing is held: the entry can be forgotten.
    pub(crate) fn idle(&mut self, now: Instant) -> bool {
        self.advance(now);
        self.sent.is_empty() && self.reserved == 0 && self.tokens == BURST
    }

    fn advance(&mut self, now: Instant) {
        while self
            .sent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            self.sent.pop_front();
        }
        if self.tokens < BURST {
            let steps =
                now.saturating_duration_since(self.refilled_at).as_millis() / REFILL.as_millis();
            let steps = u32::try_from(steps).unwrap_or(u32::MAX);
            if steps > 0 {
                self.tokens = self.tokens.saturating_add(steps).min(BURST);
                self.refilled_at += REFILL * steps.min(BURST);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(caps: &mut RateCaps, now: Instant) -> Result<(), CapRefused> {
        caps.reserve(now)?;
        caps.commit(now);
        Ok(())
    }

    #[test]
    fn a_sixth_line_straight_after_five_is_refused_and_one_more_comes_every_two_seconds() {
        let t0 = Instant::now();
        let mut caps = RateCaps::new(t0);
        for _ in 0..5 {
            sent(&mut caps, t0).unwrap();
        }
        assert_eq!(caps.reserve(t0), Err(CapRefused::Burst));
        assert_eq!(
            caps.reserve(t0 + Duration::from_millis(1999)),
            Err(CapRefused::Burst)
        );
        sent(&mut caps, t0 + REFILL).unwrap();
        assert_eq!(caps.reserve(t0 + REFILL), Err(CapRefused::Burst));
        sent(&mut caps, t0 + REFILL * 2).unwrap();
    }

    #[test]
    fn never_a_31st_line_in_any_minute() {
        let t0 = Instant::now();
        let mut caps = RateCaps::new(t0);
        let mut at = t0;
        let mut sent_at = Vec::new();
        // Try a line every 200 ms for three minutes.
        for _ in 0..900 {
            if sent(&mut caps, at).is_ok() {
                sent_at.push(at);
            }
            at += Duration::from_millis(200);
        }
        for (i, t) in sent_at.iter().enumerate() {
            let in_window = sent_at[i..]
                .iter()
                .take_while(|u| u.duration_since(*t) < WINDOW)
                .count();
            assert!(in_window <= PER_MINUTE, "{in_window} lines within a minute");
        }
        // Every two seconds refills one, so the minute, not the burst, binds.
        assert_eq!(sent_at.len(), 90);
    }

    #[test]
    fn when_both_refuse_the_answer_is_the_per_minute_one() {
        let t0 = Instant::now();
        let mut caps = RateCaps::new(t0);
        let mut at = t0;
        while caps.sent.len() < PER_MINUTE {
            if sent(&mut caps, at).is_err() {
                at += REFILL;
            }
        }
        // Spend the burst too (the minute is full, so nothing is taken).
        assert_eq!(caps.reserve(at), Err(CapRefused::PerMinute));
        caps.tokens = 0;
        assert_eq!(caps.reserve(at), Err(CapRefused::PerMinute));
    }

    #[test]
    fn a_released_line_takes_nothing_from_either_limit() {
        let t0 = Instant::now();
        let mut caps = RateCaps::new(t0);
        for _ in 0..20 {
            caps.reserve(t0).unwrap();
            caps.release();
        }
        for _ in 0..5 {
            sent(&mut caps, t0).unwrap();
        }
        assert_eq!(caps.reserve(t0), Err(CapRefused::Burst));
        // A refused reservation holds nothing either.
        assert_eq!(caps.reserved, 0);
    }

    #[test]
    fn reservations_hold_their_place_until_resolved() {
        let t0 = Instant::now();
        let mut caps = RateCaps::new(t0);
        for _ in 0..5 {
            caps.reserve(t0).unwrap();
        }
        assert_eq!(caps.reserve(t0), Err(CapRefused::Burst));
        assert!(!caps.idle(t0));
        for _ in 0..5 {
            caps.release();
        }
        assert!(caps.idle(t0));
    }
}
