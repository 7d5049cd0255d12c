//! Tokenize + ingest: raw PRIVMSG lines fed through `Session::handle_line`
//! into a channel buffer at its default capacity (so eviction runs too).
//!
//! Also the same steady state with every line first handed to the engine's raw tap, as the
//! session actor does: with the debug capture off (no observer: one atomic load per line) and
//! on (each line copied, unmasked, onto its session's staging lane; the tap actor masks, cuts
//! and stores a lane's newest lines into the 5,000-line ring on a runtime thread once a second).
//! `benches/capture_cost.rs` measures the same pair alternately, for a ratio a busy machine
//! does not blur.
//!
//! The `ingest_thread_cpu` group runs the full-buffer rows again measured in the bench
//! thread's CPU time rather than wall time: the session's thread's own cost, which a shared
//! machine's load does not blur.
//!
//! Target: at least 1,000,000 lines/s on one core; capture off costs nothing, capture on at
//! most 10% of the lines/s.
//! Run: `cargo bench --bench ingest`
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/ingest.rs"]
mod common;
#[path = "common/session.rs"]
mod session;

use common::{lines, thread_cpu, LINES};
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, Throughput,
};
use rete_actors::raw_tap::{RawTap, TapView};
use rete_actors::{Direction, Rete, ReteOptions};
use rete_engine::clock::Now;
use rete_engine::ids::SessionId;
use rete_mcp::debug::raw::RawTaps;
use session::{registered_session, session_id};
use std::hint::black_box;
use std::time::Duration;

/// The engine's path and the session actor's (the tap sees the line, then the engine handles
/// it) into a full buffer, with capture off and on; `extra` adds rows while capture is on.
fn full_buffer_rows<M: Measurement>(
    group: &mut BenchmarkGroup<'_, M>,
    extra: impl FnOnce(&mut BenchmarkGroup<'_, M>, &RawTap, &SessionId, Now),
) {
    let lines = lines();
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
    let id = session_id();
    let tap = RawTap::new();
    // The session actor's copy of the tap's observers.
    let mut view = TapView::default();
    group.bench_function("privmsg_into_full_buffer_capture_off", |b| {
        b.iter(|| {
            for l in &lines {
                tap.see(&mut view, &id, Direction::In, now.wall, black_box(l));
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
    tap.set_debug(Some(taps.capture()));
    group.bench_function("privmsg_into_full_buffer_capture_on", |b| {
        b.iter(|| {
            for l in &lines {
                tap.see(&mut view, &id, Direction::In, now.wall, black_box(l));
                full.handle_line(now, black_box(l));
            }
            while let Some(e) = full.poll_event() {
                black_box(e);
            }
        })
    });
    extra(group, &tap, &id, now);
    tap.set_debug(None);
    let held = runtime
        .block_on(taps.read(&id, None, usize::MAX))
        .expect("the tap answers")
        .lines
        .len();
    eprintln!("capture on: the tap holds {held} lines");
}

fn ingest(c: &mut Criterion) {
    let lines = lines();
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Elements(LINES as u64));
    full_buffer_rows(&mut group, |group, tap, id, now| {
        // Where capture's cost goes: the tap alone (what the session's thread pays: a copy
        // onto its lane), and the masking the tap actor then does on its own thread.
        let mut view = TapView::default();
        group.bench_function("tap_only_capture_on", |b| {
            b.iter(|| {
                for l in &lines {
                    tap.see(&mut view, id, Direction::In, now.wall, black_box(l));
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
    });
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

/// The bench thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`): what the session's thread
/// pays, whatever else the machine runs. Wall time on a shared machine also counts the time
/// the thread waits for a core, which the tap actor's thread then competes for.
struct ThreadCpu;

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

fn ingest_thread_cpu(c: &mut Criterion<ThreadCpu>) {
    let mut group = c.benchmark_group("ingest_thread_cpu");
    group.throughput(Throughput::Elements(LINES as u64));
    full_buffer_rows(&mut group, |_, _, _, _| {});
    group.finish();
}

criterion_group!(benches, ingest);
criterion_group! {
    name = thread_cpu_benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = ingest_thread_cpu
}
criterion_main!(benches, thread_cpu_benches);
