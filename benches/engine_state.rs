//! engine_state over a busy session: 100 channels of 200 members each (20,000 memberships),
//! 50 query buffers and 20,000 rows, fed through `Session::handle_line`. Measured: the index
//! (computed inside the session actor, then the answer built and scanned outside it) and, for
//! reference, every section at once.
//!
//! Target: the engine_state index under 1 ms.
//! Run: `cargo bench --bench engine_state -- --warm-up-time 1 --measurement-time 3`

// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, Session, SessionConfig};
use rete_engine::state_dump::Section;
use rete_mcp::tools::engine_state::{index_answer, sections_answer};
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::withheld::Withholder;
use rete_mcp::tools::ToolOutcome;
use std::hint::black_box;

const CHANNELS: usize = 100;
const MEMBERS: usize = 200;
const QUERIES: usize = 50;
const ROWS: usize = 20_000;
const AT: UnixMillis = UnixMillis(1_790_769_600_000);

fn busy_session() -> Session {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").expect("uuid");
    let mut config = SessionConfig::new(id, "bench", "rete");
    // A configured key, so the way-out scan has a secret to look for.
    config.channels = vec![ChannelSpec {
        name: "#c0".into(),
        key: Some("bench-key-1234".into()),
    }];
    let mut s = Session::new(config);
    let now = Now {
        mono: Mono(0),
        wall: AT,
    };
    s.handle_connected(now, "127.0.0.1:6667", None, [0; 18]);
    s.handle_line(now, ":srv 001 rete :Welcome");
    s.handle_line(
        now,
        ":srv 005 rete CHANTYPES=# PREFIX=(ov)@+ NETWORK=Bench WHOX :are supported",
    );
    for c in 0..CHANNELS {
        s.handle_line(now, &format!(":rete!u@h JOIN #c{c}"));
        s.handle_line(
            now,
            &format!(":srv 332 rete #c{c} :the topic of channel {c}, as long as topics go"),
        );
        let names: Vec<String> = (0..MEMBERS).map(|m| format!("nick{m}")).collect();
        s.handle_line(
            now,
            &format!(":srv 353 rete = #c{c} :@rete {}", names.join(" ")),
        );
        s.handle_line(now, &format!(":srv 366 rete #c{c} :End of /NAMES list."));
    }
    for q in 0..QUERIES {
        s.handle_line(now, &format!(":friend{q}!u@h PRIVMSG rete :hello"));
    }
    for i in 0..ROWS {
        let line = format!(
            ":nick{}!user@host PRIVMSG #c{} :message number {i} with some ordinary chat text",
            i % MEMBERS,
            i % CHANNELS
        );
        s.handle_line(now, &line);
    }
    while s.poll_transmit(now.mono).is_some() {}
    while s.poll_event().is_some() {}
    s
}

fn engine_state(c: &mut Criterion) {
    let s = busy_session();
    let view = s.view();
    let index = index_answer(&view.state_index(), &Withholder::for_view(&view), BUDGET);
    let ToolOutcome::Ok(index) = index else {
        panic!("index failed: {index:?}")
    };
    eprintln!("engine_state index: {} bytes", encode(&index).len());
    let all = sections_answer(
        view.state_sections(&Section::ALL, AT),
        &Withholder::for_view(&view),
        BUDGET,
    );
    let ToolOutcome::Ok(all) = all else {
        panic!("sections failed: {all:?}")
    };
    eprintln!(
        "engine_state every section: {} bytes, omitted {}",
        encode(&all).len(),
        all["omitted"]
    );

    let mut group = c.benchmark_group("engine_state");
    group.bench_function("index", |b| {
        b.iter(|| {
            let view = black_box(&s).view();
            // Inside the actor: the entries and the scanner.
            let (entries, withhold) = (view.state_index(), Withholder::for_view(&view));
            // Outside it: the answer, scanned and budgeted.
            index_answer(&entries, &withhold, BUDGET)
        })
    });
    group.bench_function("every_section", |b| {
        b.iter(|| {
            let view = black_box(&s).view();
            let snap = view.state_sections(&Section::ALL, AT);
            sections_answer(snap, &Withholder::for_view(&view), BUDGET)
        })
    });
    // The part of that run inside the session actor, which holds up its lines meanwhile.
    group.bench_function("every_section_in_actor", |b| {
        b.iter(|| {
            let view = black_box(&s).view();
            (
                view.state_sections(&Section::ALL, AT),
                Withholder::for_view(&view),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, engine_state);
criterion_main!(benches);
