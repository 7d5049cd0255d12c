//! The session every engine bench starts from (`benches/ingest.rs`, `capture_cost.rs`,
//! `read_tools.rs`, `screen.rs`): registered on a network and joined to `#bench`.

use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::ids::SessionId;
use rete_engine::session::{Session, SessionConfig};

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
