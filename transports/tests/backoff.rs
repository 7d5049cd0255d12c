//! Reconnect backoff: growth, cap, jitter bounds and reset, with a seeded generator.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rete_transports::{Backoff, HEALTHY_AFTER};

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap()
}

/// A backoff from 1 s to an hour with `attempts` delays handed out already,
/// and the random source it draws from.
fn after_attempts(seed: u64, attempts: u32) -> (Backoff, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut backoff = Backoff::new(Duration::from_millis(1000), Duration::from_secs(3600));
    for _ in 0..attempts {
        backoff.next_delay(&mut rng);
    }
    (backoff, rng)
}

#[test]
fn each_delay_lies_in_the_upper_half_of_a_doubling_ceiling() {
    for seed in 0..50 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut backoff = Backoff::new(Duration::from_millis(1000), Duration::from_secs(3600));
        for n in 0..10u32 {
            assert_eq!(backoff.attempt(), n);
            let ceiling = 1000u64 << n;
            let delay = ms(backoff.next_delay(&mut rng));
            assert!(
                (ceiling / 2..=ceiling).contains(&delay),
                "n={n} delay={delay}"
            );
        }
    }
}

#[test]
fn delays_stop_growing_at_the_cap() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
    for _ in 0..200 {
        let delay = ms(backoff.next_delay(&mut rng));
        assert!(delay <= 60_000, "{delay}");
    }
    // Far past the point where base * 2^n overflows, delays still sit in [max / 2, max].
    assert_eq!(backoff.attempt(), 200);
    let delay = ms(backoff.next_delay(&mut rng));
    assert!((30_000..=60_000).contains(&delay), "{delay}");
}

#[test]
fn jitter_actually_spreads_delays() {
    let mut rng = StdRng::seed_from_u64(42);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..100 {
        let mut backoff = Backoff::new(Duration::from_millis(1000), Duration::from_secs(60));
        backoff.attempt = 3;
        seen.insert(ms(backoff.next_delay(&mut rng)));
    }
    assert!(seen.len() > 50, "only {} distinct delays", seen.len());
    assert!(*seen.first().unwrap() >= 4000 && *seen.last().unwrap() <= 8000);
    // Both halves of the range are reached.
    assert!(seen.iter().any(|&d| d < 5000) && seen.iter().any(|&d| d > 7000));
}

#[test]
fn reset_returns_to_the_first_delay() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
    for _ in 0..6 {
        backoff.next_delay(&mut rng);
    }
    assert_eq!(backoff.attempt(), 6);
    backoff.reset();
    assert_eq!(backoff.attempt(), 0);
    let delay = ms(backoff.next_delay(&mut rng));
    assert!((50..=100).contains(&delay), "{delay}");
}

#[test]
fn same_seed_gives_same_delays() {
    let run = || {
        let mut rng = StdRng::seed_from_u64(99);
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
        (0..8)
            .map(|_| backoff.next_delay(&mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_connection_dropped_soon_after_it_proved_healthy_keeps_the_delays_growing() {
    let (mut backoff, mut rng) = after_attempts(3, 0);
    let soon = ms(HEALTHY_AFTER) - 1;
    let mut now = 0;
    for n in 0..5u32 {
        // Connected, registered, dropped just short of HEALTHY_AFTER.
        backoff.proven(now);
        now += soon;
        let delay = ms(backoff.next_delay_after_loss(now, &mut rng));
        let ceiling = 1000u64 << n;
        assert!(
            (ceiling / 2..=ceiling).contains(&delay),
            "n={n} delay={delay}"
        );
        now += delay;
    }
}

#[test]
fn a_connection_that_stayed_up_long_enough_starts_the_delays_over_once() {
    let (mut backoff, mut rng) = after_attempts(4, 4);
    backoff.proven(10_000);
    let delay = ms(backoff.next_delay_after_loss(10_000 + ms(HEALTHY_AFTER), &mut rng));
    assert!((500..=1000).contains(&delay), "{delay}");
    // The next attempt fails before registering: no healthy mark is left,
    // so the delay grows again.
    let delay = ms(backoff.next_delay_after_loss(u64::MAX, &mut rng));
    assert!((1000..=2000).contains(&delay), "{delay}");
}

#[test]
fn reset_forgets_a_healthy_mark() {
    let (mut backoff, mut rng) = after_attempts(5, 0);
    backoff.proven(0);
    backoff.reset();
    backoff.next_delay(&mut rng);
    let delay = ms(backoff.next_delay_after_loss(u64::MAX, &mut rng));
    assert!((1000..=2000).contains(&delay), "{delay}");
}

#[test]
fn a_second_healthy_mark_on_one_connection_keeps_the_first() {
    let (mut backoff, mut rng) = after_attempts(6, 1);
    backoff.proven(0);
    // Marked again just before the loss (a bridged link's upstream 001).
    backoff.proven(ms(HEALTHY_AFTER) - 1);
    let delay = ms(backoff.next_delay_after_loss(ms(HEALTHY_AFTER), &mut rng));
    assert!((500..=1000).contains(&delay), "{delay}");
}

#[test]
fn a_connection_ended_without_a_delay_is_settled_once() {
    let (mut backoff, mut rng) = after_attempts(7, 3);
    // Healthy for HEALTHY_AFTER, then its actor restarted: the delays start
    // over, and the next connection, failing at once, is judged alone.
    backoff.proven(0);
    backoff.connection_ended(ms(HEALTHY_AFTER));
    assert_eq!(backoff.attempt(), 0);
    backoff.next_delay(&mut rng);
    let delay = ms(backoff.next_delay_after_loss(10 * ms(HEALTHY_AFTER), &mut rng));
    assert!((1000..=2000).contains(&delay), "{delay}");
}
