//! Tokenize + ingest: raw PRIVMSG lines fed through `Session::handle_line`
//! into a channel buffer at its default capacity (so eviction runs too).
//!
//! Also the same steady state with every line first handed to the engine's raw tap, as the
//! session actor does: with the debug capture off (no observer: one atomic load per line) and
//! on (each line masked, cut, stamped and appended to the capture's pending list, the tap actor
//! draining it on a runtime thread into a full 5,000-line ring).
//!
//! Target: at least 1,000,000 lines/s on one core; capture off costs nothing, capture on at
//! most 10% of the lines/s.
//! Run: `cargo bench --bench ingest`
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rete_actors::raw_tap::RawTap;
use rete_actors::{Direction, Rete, ReteOptions};
use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::ids::SessionId;
use rete_engine::session::{Session, SessionConfig};
use rete_mcp::debug::raw::RawTaps;
use std::hint::black_box;

const LINES: usize = 10_000;

fn registered_session() -> (Session, Now) {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid");
    let mut s = Session::new(SessionConfig::new(id, "bench", "rete"));
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

fn lines() -> Vec<String> {
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

fn ingest(c: &mut Criterion) {
    let lines = lines();
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Elements(LINES as u64));
    // Steady state: a buffer already full, so every line also evicts one.
    let (mut full, now) = registered_session();
    for _ in 0..5 {
        for l in &lines {
            full.handle_line(now, l);
        }
        while full.poll_event().is_some() {}
    }
    group.bench_function("privmsg_into_full_buffer", |b| {
        b.iter(|| {
            for l in &lines {
                full.handle_line(now, black_box(l));
            }
            // The host drains events after every input; do the same.
            while let Some(e) = full.poll_event() {
                black_box(e);
            }
        })
    });
    // The session actor's order: the tap sees the line, then the engine handles it.
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid");
    let tap = RawTap::new();
    group.bench_function("privmsg_into_full_buffer_capture_off", |b| {
        b.iter(|| {
            for l in &lines {
                tap.see(&id, Direction::In, black_box(l));
                full.handle_line(now, black_box(l));
            }
            while let Some(e) = full.poll_event() {
                black_box(e);
            }
        })
    });
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (_rete, taps) = runtime.block_on(async {
        let rete = Rete::start(ReteOptions::default()).await.expect("engine");
        let taps = RawTaps::start(rete.debug_raw_slot()).await.expect("tap");
        (rete, taps)
    });
    tap.set_debug(Some(taps.observer()));
    group.bench_function("privmsg_into_full_buffer_capture_on", |b| {
        b.iter(|| {
            for l in &lines {
                tap.see(&id, Direction::In, black_box(l));
                full.handle_line(now, black_box(l));
            }
            while let Some(e) = full.poll_event() {
                black_box(e);
            }
        })
    });
    // Where capture's cost goes: the tap alone (masking and the observer), the observer
    // alone (stamp, copy, push; the actor drains on a runtime thread), masking alone.
    group.bench_function("tap_only_capture_on", |b| {
        b.iter(|| {
            for l in &lines {
                tap.see(&id, Direction::In, black_box(l));
            }
        })
    });
    let obs = taps.observer();
    group.bench_function("capture_observer_only", |b| {
        b.iter(|| {
            for l in &lines {
                obs.on_raw(&id, Direction::In, black_box(l));
            }
        })
    });
    group.bench_function("mask_line_only", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(rete_redact::mask_line(black_box(l)));
            }
        })
    });
    tap.set_debug(None);
    let held = runtime
        .block_on(taps.read(&id, None, usize::MAX))
        .expect("the tap answers")
        .lines
        .len();
    eprintln!("capture on: the tap holds {held} lines");
    drop(taps);
    group.bench_function("privmsg_into_empty_buffer", |b| {
        b.iter_batched(
            registered_session,
            |(mut s, now)| {
                for l in &lines {
                    s.handle_line(now, black_box(l));
                }
                while let Some(e) = s.poll_event() {
                    black_box(e);
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
