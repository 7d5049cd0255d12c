//! What the debug capture costs the session's thread, measured in pairs: the ingest bench's
//! steady state (PRIVMSG lines through the raw tap and `Session::handle_line` into a full
//! buffer), alternately with capture off and on, in rounds of 10,000 lines each, timed in the
//! bench thread's own CPU time. Each round's ratio (lines/s on ÷ lines/s off) compares two runs
//! made a few milliseconds apart, so the load of a shared machine, which moves criterion's
//! separate runs of each case by more than the effect measured, cancels out of it; the median
//! and quartiles of the ratios are printed.
//!
//! Target: capture on at least 0.9 of capture off (at most 10% fewer lines/s).
//! Run: `cargo bench --bench capture_cost` (`-- ROUNDS` for another number of rounds).
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/ingest.rs"]
mod common;
#[path = "common/session.rs"]
mod session;

use common::{lines, thread_cpu, LINES};
use rete_actors::raw_tap::{RawTap, TapView};
use rete_actors::{Direction, Rete, ReteOptions};
use rete_engine::clock::Now;
use rete_engine::ids::SessionId;
use rete_engine::session::Session;
use rete_mcp::debug::raw::RawTaps;
use session::{registered_session, session_id};
use std::hint::black_box;

const DEFAULT_ROUNDS: usize = 400;

/// One round: every line through the tap and the engine, as the session actor does; the
/// thread's CPU time it took.
fn round(
    session: &mut Session,
    tap: &RawTap,
    view: &mut TapView,
    id: &SessionId,
    now: Now,
    lines: &[String],
) -> f64 {
    let start = thread_cpu();
    for l in lines {
        tap.see(view, id, Direction::In, now.wall, black_box(l));
        session.handle_line(now, black_box(l));
    }
    while let Some(e) = session.poll_event() {
        black_box(e);
    }
    (thread_cpu() - start).as_secs_f64()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let rounds = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let lines = lines();
    let id = session_id();
    let (mut session, now) = registered_session();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (_rete, taps) = runtime.block_on(async {
        let rete = Rete::start(ReteOptions::default()).await.expect("engine");
        let taps = RawTaps::start(rete.debug_raw_slot()).await.expect("tap");
        (rete, taps)
    });
    let tap = RawTap::new();
    // The session actor's copy of the tap's observers.
    let mut view = TapView::default();
    // Steady state first: a full buffer (every line also evicts one) and a full tap.
    tap.set_debug(Some(taps.capture()));
    for _ in 0..5 {
        round(&mut session, &tap, &mut view, &id, now, &lines);
    }
    let mut ratios = Vec::with_capacity(rounds);
    let (mut off_total, mut on_total) = (0.0, 0.0);
    for i in 0..rounds {
        // Alternate which case runs first, so neither always follows the other.
        let mut timed = |capture: bool| {
            tap.set_debug(capture.then(|| taps.capture()));
            round(&mut session, &tap, &mut view, &id, now, &lines)
        };
        let (off, on) = match i % 2 {
            0 => {
                let off = timed(false);
                (off, timed(true))
            }
            _ => {
                let on = timed(true);
                (timed(false), on)
            }
        };
        off_total += off;
        on_total += on;
        ratios.push(off / on);
    }
    tap.set_debug(None);
    ratios.sort_by(f64::total_cmp);
    let per_line = |total: f64| total / (rounds * LINES) as f64 * 1e9;
    println!(
        "capture on / off, lines/s of the session's thread, {rounds} paired rounds of {LINES} lines: \
         median {:.3}, quartiles {:.3}..{:.3}; mean ns/line off {:.1}, on {:.1}",
        quantile(&ratios, 0.5),
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.75),
        per_line(off_total),
        per_line(on_total),
    );
}
