//! What the ingest benches share (`benches/ingest.rs`, `benches/capture_cost.rs`): a
//! registered session with one joined channel, the PRIVMSG lines fed to it, and the bench
//! thread's CPU clock.

use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::ids::SessionId;
use rete_engine::session::{Session, SessionConfig};
use std::time::Duration;

/// Lines per round.
pub const LINES: usize = 10_000;

/// The bench session's id.
pub fn session_id() -> SessionId {
    SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid")
}

/// A session registered on a network and joined to `#bench`, its outputs drained.
pub fn registered_session() -> (Session, Now) {
    let mut s = Session::new(SessionConfig::new(session_id(), "bench", "rete"));
    let now = Now {
        mono: Mono(0),
        wall: UnixMillis(1_790_769_600_000),
    };
    s.handle_connected(now, "127.0.0.1:6667", None, [0; 18]);
    s.handle_line(now, ":srv 001 rete :Welcome");
    s.handle_line(
        now,
        ":srv 005 rete CHANTYPES=# PREFIX=(ov)@+ NETWORK=Bench :are supported",
    );
    s.handle_line(now, ":rete!u@h JOIN #bench");
    while s.poll_transmit(now.mono).is_some() {}
    while s.poll_event().is_some() {}
    (s, now)
}

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
