//! The engine's own WHO queries, one at a time.
//!
//! The engine asks WHO for each channel it joins, and re-asks periodically,
//! to learn member state (away, account, user@host). Big WHO replies are
//! heavy for the server and for flood limits, so only one of ours is in
//! flight at a time: the next goes when the previous one ended (RPL_ENDOFWHO
//! 315 for its target) or after [`WHO_TIMEOUT_MS`] without an answer.
//!
//! A WHO the user types never enters this queue. To tell its replies from
//! ours: WHOX replies (354) to ours carry our query token; for plain WHO the
//! caller matches the target of the 315 through [`WhoQueue::on_end_of_who`].
//!
//! With WHOX the engine sends `WHO <target> %tcuhnfar,<token>`: t = token,
//! c = channel, u = user, h = host, n = nick, f = flags (away, op status),
//! a = account, r = realname. The engine builds that line itself.
//!
//! Keys are case-folded targets; folding is the caller's job (it knows the
//! server's CASEMAPPING). Pure and deterministic: time comes in as [`Mono`].

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::clock::Mono;

/// How long one of our WHO queries may go unanswered before the next goes.
pub const WHO_TIMEOUT_MS: u64 = 45_000;

/// Default periodic re-poll of joined channels: five minutes.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 5 * 60 * 1000;

/// Token used when the one given to [`WhoQueue::new`] is not 1-3 digits,
/// the form WHOX allows.
pub const DEFAULT_WHOX_TOKEN: &str = "417";

/// A WHO the engine should send now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoRequest {
    /// Target as displayed (not folded), to put on the wire.
    pub target: String,
    /// Our query token when the server supports WHOX; `None` means plain WHO.
    pub whox_token: Option<String>,
}

/// A queued target: folded key for matching, display form for sending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    key: String,
    target: String,
}

/// Our WHO that is waiting for its 315.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct InFlight {
    key: String,
    /// When it times out: 45 s after it was written. None while it still
    /// waits in the flood throttle, where it cannot time out.
    deadline: Option<Mono>,
}

/// Queue of the engine's WHO queries and the periodic poll clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WhoQueue {
    whox_token: String,
    poll_interval_ms: u64,
    queue: VecDeque<Entry>,
    in_flight: Option<InFlight>,
    /// When the next periodic poll is due; `None` until the first
    /// [`WhoQueue::poll_send`] after creation or [`WhoQueue::clear`].
    next_poll: Option<Mono>,
    /// Queries given up at their deadline, for the host's log. Not state
    /// to restore: skipped in serialization.
    #[serde(skip)]
    timed_out: u64,
}

impl WhoQueue {
    /// An empty queue. `whox_token` marks our WHOX replies (1-3 digits,
    /// otherwise [`DEFAULT_WHOX_TOKEN`] is used); `poll_interval_ms` is the
    /// periodic re-poll, usually [`DEFAULT_POLL_INTERVAL_MS`].
    #[must_use]
    pub fn new(whox_token: &str, poll_interval_ms: u64) -> Self {
        let valid =
            (1..=3).contains(&whox_token.len()) && whox_token.bytes().all(|b| b.is_ascii_digit());
        WhoQueue {
            whox_token: if valid {
                whox_token
            } else {
                DEFAULT_WHOX_TOKEN
            }
            .to_owned(),
            poll_interval_ms,
            queue: VecDeque::new(),
            in_flight: None,
            next_poll: None,
            timed_out: 0,
        }
    }

    /// The token our WHOX queries carry, to recognise their 354 replies.
    #[must_use]
    pub fn whox_token(&self) -> &str {
        &self.whox_token
    }

    /// Queues a WHO for `target` (folded as `key`) unless already queued.
    ///
    /// Not skipped when the same key is in flight: after a part and rejoin
    /// the answer in flight describes the old membership.
    pub fn enqueue(&mut self, key: &str, target: &str) {
        if !self.is_queued(key) {
            self.queue.push_back(Entry {
                key: key.to_owned(),
                target: target.to_owned(),
            });
        }
    }

    /// Forgets a parted channel if queued. One in flight stays in flight:
    /// its 315 is still coming and must be recognised as ours.
    pub fn remove(&mut self, key: &str) {
        self.queue.retain(|e| e.key != key);
    }

    /// The next WHO to send, or None if one of ours is in flight (and not
    /// timed out) or nothing is queued. `whox` says whether the server
    /// advertises WHOX. The first call also starts the periodic poll clock,
    /// so a fresh connection is not re-polled right after its join WHOs.
    #[must_use]
    pub fn poll_send(&mut self, now: Mono, whox: bool) -> Option<WhoRequest> {
        if self.next_poll.is_none() {
            self.next_poll = Some(now.plus_ms(self.poll_interval_ms));
        }
        if let Some(flight) = &self.in_flight {
            if flight.deadline.is_none_or(|deadline| now < deadline) {
                return None;
            }
            // Timed out: give up on it; a late 315 is then not ours.
            self.in_flight = None;
            self.timed_out += 1;
        }
        let entry = self.queue.pop_front()?;
        self.in_flight = Some(InFlight {
            key: entry.key,
            deadline: None,
        });
        Some(WhoRequest {
            target: entry.target,
            whox_token: whox.then(|| self.whox_token.clone()),
        })
    }

    /// Our WHO in flight was written at `now`: its timeout starts.
    pub fn on_written(&mut self, now: Mono) {
        if let Some(flight) = &mut self.in_flight {
            flight.deadline.get_or_insert(now.plus_ms(WHO_TIMEOUT_MS));
        }
    }

    /// Call on RPL_ENDOFWHO (315) with the folded target. True when it ended
    /// OUR in-flight query, so the caller knows the replies were ours (and
    /// hides them) rather than the user's.
    pub fn on_end_of_who(&mut self, key: &str) -> bool {
        let ours = self.in_flight.as_ref().is_some_and(|f| f.key == key);
        if ours {
            self.in_flight = None;
        }
        ours
    }

    /// How many of our queries were given up at their deadline.
    #[must_use]
    pub fn timed_out(&self) -> u64 {
        self.timed_out
    }

    /// Folded key of our WHO in flight, to match plain WHO replies (352).
    #[must_use]
    pub fn in_flight(&self) -> Option<&str> {
        self.in_flight.as_ref().map(|f| f.key.as_str())
    }

    /// When our WHO in flight times out, if one is on the wire (None while
    /// it still waits in the flood throttle).
    #[must_use]
    pub fn in_flight_deadline(&self) -> Option<Mono> {
        self.in_flight.as_ref().and_then(|f| f.deadline)
    }

    /// The targets waiting, in sending order, as they go on the wire.
    pub fn queued_targets(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.queue.iter().map(|e| e.target.as_str())
    }

    /// When the next periodic poll is due (none before the first send).
    #[must_use]
    pub fn next_poll(&self) -> Option<Mono> {
        self.next_poll
    }

    /// The periodic re-poll interval in milliseconds.
    #[must_use]
    pub fn poll_interval_ms(&self) -> u64 {
        self.poll_interval_ms
    }

    /// When to call back: now if a WHO may go, else the in-flight deadline,
    /// or the next periodic poll, whichever is first.
    #[must_use]
    pub fn poll_timeout(&self, now: Mono) -> Option<Mono> {
        let send = match &self.in_flight {
            Some(flight) => flight.deadline,
            None if !self.queue.is_empty() => Some(now),
            None => None,
        };
        match (send, self.next_poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the periodic re-poll of joined channels is due.
    #[must_use]
    pub fn poll_due(&self, now: Mono) -> bool {
        self.next_poll.is_some_and(|due| now >= due)
    }

    /// Queues every given channel not already queued or in flight, and
    /// schedules the next periodic poll one interval from `now`.
    pub fn schedule_poll<'a>(
        &mut self,
        now: Mono,
        channels: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (key, target) in channels {
            if self.in_flight() != Some(key) {
                self.enqueue(key, target);
            }
        }
        self.next_poll = Some(now.plus_ms(self.poll_interval_ms));
    }

    /// Forgets everything on disconnect; the poll clock restarts with the
    /// next connection's first [`Self::poll_send`].
    pub fn clear(&mut self) {
        self.queue.clear();
        self.in_flight = None;
        self.next_poll = None;
    }

    fn is_queued(&self, key: &str) -> bool {
        self.queue.iter().any(|e| e.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: u64 = 300_000;

    /// One row of a step table.
    enum Step {
        /// `enqueue(key, target)`.
        Enqueue(&'static str, &'static str),
        /// `remove(key)`.
        Remove(&'static str),
        /// `poll_send(at, whox)` must return this target and token; a WHO
        /// it returns is written at once (`on_written(at)`), as by a host
        /// whose throttle is idle.
        Send(u64, bool, Option<(&'static str, Option<&'static str>)>),
        /// `poll_send(at, whox)` must return this target, and the WHO is not
        /// written yet (it waits in the throttle).
        Queued(u64, &'static str),
        /// `on_written(at)`: the WHO went on the wire.
        Written(u64),
        /// `on_end_of_who(key)` must return this.
        End(&'static str, bool),
        /// `in_flight()` must be this.
        InFlight(Option<&'static str>),
        /// `poll_timeout(at)` must return this.
        Wake(u64, Option<u64>),
        /// `poll_due(at)` must return this.
        Due(u64, bool),
        /// `schedule_poll(at, channels)`.
        Poll(u64, &'static [(&'static str, &'static str)]),
        /// `clear()`.
        Clear,
        /// Serialize and deserialize the queue, continuing with the copy.
        RoundTrip,
    }
    use Step::*;

    fn run(token: &str, steps: &[Step]) {
        let mut q = WhoQueue::new(token, POLL);
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Enqueue(key, target) => q.enqueue(key, target),
                Remove(key) => q.remove(key),
                Send(at, whox, want) => {
                    let want = want.map(|(target, tok)| WhoRequest {
                        target: target.to_owned(),
                        whox_token: tok.map(str::to_owned),
                    });
                    let got = q.poll_send(Mono(at), whox);
                    assert_eq!(got, want, "step {i}: poll_send({at})");
                    if got.is_some() {
                        q.on_written(Mono(at));
                    }
                }
                Queued(at, target) => {
                    let got = q.poll_send(Mono(at), false).map(|r| r.target);
                    assert_eq!(got.as_deref(), Some(target), "step {i}: poll_send({at})");
                }
                Written(at) => q.on_written(Mono(at)),
                End(key, want) => assert_eq!(q.on_end_of_who(key), want, "step {i}: 315 {key}"),
                InFlight(want) => assert_eq!(q.in_flight(), want, "step {i}: in_flight"),
                Wake(at, want) => {
                    let got = q.poll_timeout(Mono(at));
                    assert_eq!(got, want.map(Mono), "step {i}: poll_timeout({at})");
                }
                Due(at, want) => assert_eq!(q.poll_due(Mono(at)), want, "step {i}: poll_due({at})"),
                Poll(at, chans) => q.schedule_poll(Mono(at), chans.iter().copied()),
                Clear => q.clear(),
                RoundTrip => {
                    let json = serde_json::to_string(&q).unwrap();
                    q = serde_json::from_str(&json).unwrap();
                }
            }
        }
    }

    #[test]
    fn one_in_flight_next_on_end_of_who() {
        #[rustfmt::skip]
        run("417", &[
            Wake(0, None), Send(0, false, None),
            Enqueue("#a", "#A"), Enqueue("#b", "#b"), Wake(0, Some(0)),
            Send(0, false, Some(("#A", None))), InFlight(Some("#a")),
            Send(10, false, None), Wake(10, Some(45_000)),
            // A 315 for another target (the user's own WHO) is not ours.
            End("#b", false), InFlight(Some("#a")), Send(20, false, None),
            End("#a", true), InFlight(None), End("#a", false),
            Send(30, true, Some(("#b", Some("417")))), End("#b", true),
            Send(40, true, None), InFlight(None),
        ]);
    }

    #[test]
    fn the_timeout_starts_when_the_who_is_written() {
        #[rustfmt::skip]
        run("9", &[
            Enqueue("#a", "#a"), Enqueue("#b", "#b"),
            Queued(0, "#a"),
            // However long it waits in the throttle, it is in flight and cannot time out.
            Wake(10, Some(POLL)), Send(90_000, false, None), InFlight(Some("#a")),
            Written(90_000), Wake(90_000, Some(135_000)),
            Send(134_999, false, None), Send(135_000, false, Some(("#b", None))),
        ]);
    }

    #[test]
    fn unanswered_query_times_out_after_45_s() {
        #[rustfmt::skip]
        run("9", &[
            Enqueue("#a", "#a"), Enqueue("#b", "#b"),
            Send(1000, true, Some(("#a", Some("9")))),
            Wake(2000, Some(46_000)), Send(45_999, true, None),
            Send(46_000, true, Some(("#b", Some("9")))), InFlight(Some("#b")),
            // The late answer to #a is no longer ours.
            End("#a", false), End("#b", true),
        ]);
    }

    #[test]
    fn timed_out_query_is_dropped_even_with_nothing_next() {
        #[rustfmt::skip]
        run("417", &[
            Enqueue("#a", "#a"), Send(0, false, Some(("#a", None))),
            Send(45_000, false, None), InFlight(None), End("#a", false),
        ]);
    }

    #[test]
    fn timeouts_are_counted_for_the_log() {
        let mut q = WhoQueue::new("417", DEFAULT_POLL_INTERVAL_MS);
        q.enqueue("#a", "#a");
        q.enqueue("#b", "#b");
        assert!(q.poll_send(Mono(0), false).is_some());
        q.on_written(Mono(0));
        assert!(q.poll_send(Mono(WHO_TIMEOUT_MS - 1), false).is_none());
        assert_eq!(q.timed_out(), 0);
        assert!(q.poll_send(Mono(WHO_TIMEOUT_MS), false).is_some());
        assert_eq!(q.timed_out(), 1);
        // An answered query is not a timeout.
        assert!(q.on_end_of_who("#b"));
        assert!(q.poll_send(Mono(10 * WHO_TIMEOUT_MS), false).is_none());
        assert_eq!(q.timed_out(), 1);
    }

    #[test]
    fn duplicates_are_not_queued_twice() {
        #[rustfmt::skip]
        run("417", &[
            Enqueue("#a", "#a"), Enqueue("#a", "#A"), Enqueue("#b", "#b"),
            Send(0, false, Some(("#a", None))),
            // Rejoin of #a while ours is in flight: queued again.
            Enqueue("#a", "#a"), End("#a", true),
            Send(1, false, Some(("#b", None))), End("#b", true),
            Send(2, false, Some(("#a", None))), End("#a", true),
            Send(3, false, None),
        ]);
    }

    #[test]
    fn remove_drops_queued_but_waits_for_in_flight() {
        #[rustfmt::skip]
        run("417", &[
            Enqueue("#a", "#a"), Enqueue("#b", "#b"), Enqueue("#c", "#c"),
            Send(0, false, Some(("#a", None))),
            Remove("#a"), Remove("#b"), InFlight(Some("#a")),
            Send(1, false, None), End("#a", true),
            Send(2, false, Some(("#c", None))),
        ]);
    }

    #[test]
    fn invalid_whox_token_falls_back_to_default() {
        for bad in ["", "1234", "ab", "4 7"] {
            assert_eq!(
                WhoQueue::new(bad, POLL).whox_token(),
                DEFAULT_WHOX_TOKEN,
                "{bad:?}"
            );
        }
        #[rustfmt::skip]
        run("x", &[Enqueue("#a", "#a"), Send(0, true, Some(("#a", Some("417"))))]);
        assert_eq!(WhoQueue::new("0", POLL).whox_token(), "0");
    }

    #[test]
    fn periodic_poll_skips_queued_and_in_flight() {
        #[rustfmt::skip]
        run("417", &[
            // The clock starts at the first poll_send.
            Due(0, false), Wake(0, None),
            Send(100, false, None), Due(100, false), Wake(100, Some(100 + POLL)),
            Enqueue("#a", "#a"), Send(200, false, Some(("#a", None))), End("#a", true),
            Due(100 + POLL - 1, false), Due(100 + POLL, true),
            Enqueue("#b", "#b"), Send(POLL, false, Some(("#b", None))),
            Enqueue("#c", "#c"),
            Poll(100 + POLL, &[("#a", "#a"), ("#b", "#b"), ("#c", "#c"), ("#d", "#D")]),
            Due(100 + POLL, false), Wake(100 + POLL, Some(POLL + WHO_TIMEOUT_MS)),
            End("#b", true), Wake(100 + POLL, Some(100 + POLL)),
            Send(101 + POLL, false, Some(("#c", None))), End("#c", true),
            Send(102 + POLL, false, Some(("#a", None))), End("#a", true),
            Send(103 + POLL, false, Some(("#D", None))), End("#d", true),
            Send(104 + POLL, false, None),
            Wake(104 + POLL, Some(100 + 2 * POLL)),
        ]);
    }

    #[test]
    fn clear_forgets_everything_and_restarts_poll_clock() {
        #[rustfmt::skip]
        run("417", &[
            Enqueue("#a", "#a"), Enqueue("#b", "#b"),
            Send(0, false, Some(("#a", None))),
            Clear, InFlight(None), End("#a", false), Wake(10, None), Due(POLL, false),
            Send(20, false, None), Due(20 + POLL, true),
        ]);
    }

    #[test]
    fn serde_round_trip_keeps_state() {
        #[rustfmt::skip]
        run("42", &[
            Enqueue("#a", "#a"), Enqueue("#b", "#B"),
            Send(0, true, Some(("#a", Some("42")))),
            RoundTrip,
            InFlight(Some("#a")), Wake(1, Some(45_000)), Due(POLL, true),
            Send(45_000, true, Some(("#B", Some("42")))),
        ]);
    }
}
