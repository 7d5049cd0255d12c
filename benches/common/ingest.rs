//! What the ingest benches share (`benches/ingest.rs`, `benches/capture_cost.rs`) beside
//! the session (`common/session.rs`): the PRIVMSG lines fed to it, and the bench thread's
//! CPU clock.

use std::time::Duration;

/// Lines per round.
pub const LINES: usize = 10_000;

/// [`LINES`] PRIVMSG lines to `#bench` from 50 senders.
pub fn lines() -> Vec<String> {
    (0..LINES)
        .map(|i| {
            format!(
                ":nick{}!user{}@host{}.example.org PRIVMSG #bench :message number {i} with some ordinary chat text",
                i % 50,
                i % 50,
                i % 7
            )
        })
        .collect()
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into; the clock id is a constant Linux has.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}
