//! The body of the read tools — the copy made inside the session actor and the page built
//! from it outside — over a channel buffer of 50,000 rows fed through `Session::handle_line`.
//! The actor round trip around them is list_sessions' (see `control_roundtrip`).
//!
//! Target: read_messages with limit 500 from a 50,000-row buffer under 1 ms.
//! Run: `cargo bench --bench read_tools -- --warm-up-time 1 --measurement-time 3`
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/session.rs"]
mod session;

use criterion::{criterion_group, criterion_main, Criterion};
use rete_engine::buffer::{Buffer, BufferKind};
use rete_engine::session::Session;
use rete_mcp::tools::cursor::Kind;
use rete_mcp::tools::paging::Binding;
use rete_mcp::tools::read_messages::{self, Request};
use rete_mcp::tools::read_since;
use rete_mcp::tools::result::BUDGET;
use rete_mcp::tools::withheld::Withholder;
use session::registered_session;
use std::hint::black_box;

const ROWS: usize = 50_000;

/// The bench session with its channel filled with `ROWS` rows.
fn filled_session() -> Session {
    let (mut s, now) = registered_session();
    for i in 0..ROWS {
        let line = format!(
            "@msgid=m{i} :nick{}!user@host PRIVMSG #bench :message number {i} with some ordinary chat text",
            i % 50,
        );
        s.handle_line(now, &line);
    }
    while s.poll_transmit(now.mono).is_some() {}
    while s.poll_event().is_some() {}
    s
}

fn channel(s: &Session) -> &Buffer {
    let view = s.view();
    let id = view
        .find_buffer(BufferKind::Channel, "#bench")
        .expect("channel buffer");
    let b = view.buffer(id).expect("buffer");
    assert!(b.len() >= ROWS, "{} rows", b.len());
    b
}

fn read_tools(c: &mut Criterion) {
    let s = filled_session();
    let buffer = channel(&s);
    let binding = Binding::new(Kind::Messages, "read_messages", "S", buffer.id().as_str());
    let since = Binding::new(Kind::Since, "read_since", "S", buffer.id().as_str());
    let middle = buffer.last_seq() - ROWS as u64 / 2;

    let page = read_messages::page(
        &read_messages::Window::copy(buffer, &Request::Latest, 500, Withholder::default()),
        &binding,
        BUDGET,
    );
    eprintln!(
        "read_messages limit 500: {} rows fit the budget",
        page["messages"].as_array().map_or(0, Vec::len)
    );

    let mut group = c.benchmark_group("read_tools");
    group.bench_function("read_messages_latest_500_of_50000", |b| {
        b.iter(|| {
            let w = read_messages::Window::copy(
                black_box(buffer),
                &Request::Latest,
                500,
                Withholder::default(),
            );
            black_box(read_messages::page(&w, &binding, BUDGET))
        })
    });
    group.bench_function("read_messages_before_middle_500_of_50000", |b| {
        b.iter(|| {
            let w = read_messages::Window::copy(
                black_box(buffer),
                &Request::Before(middle),
                500,
                Withholder::default(),
            );
            black_box(read_messages::page(&w, &binding, BUDGET))
        })
    });
    group.bench_function("read_since_middle_500_of_50000", |b| {
        b.iter(|| {
            let w = read_since::Window::copy(
                black_box(buffer),
                Some(middle),
                500,
                Withholder::default(),
            );
            black_box(read_since::page(&w, &since, BUDGET))
        })
    });
    group.finish();
}

criterion_group!(benches, read_tools);
criterion_main!(benches);
