//! Drawing one full-screen frame: a 200×50 terminal showing the end (and a scrolled-back page)
//! of a 50,000-row channel buffer fed through `Session::handle_line`, as reterm draws it — the
//! visible rows formatted from the engine's buffer (wrapping, nick colours, mIRC formatting),
//! the layout, status bar and input line, rendered by ratatui into its buffer (a
//! `TestBackend`, so terminal I/O is not measured).
//!
//! Target: under 1 ms per frame.
//! Run: `cargo bench --bench screen -- --warm-up-time 1 --measurement-time 3`
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/session.rs"]
mod session;

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use rete_engine::buffer::BufferKind;
use rete_engine::session::Session;
use reterm::client::activity::Level;
use reterm::tui::draw::draw;
use reterm::tui::lines::{visible, Viewport};
use reterm::tui::look::Look;
use reterm::tui::model::{areas, InputLine, Screen, Status};
use session::registered_session;
use std::hint::black_box;

const ROWS: usize = 50_000;
const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;

/// The bench session with its channel filled with `ROWS` rows.
fn filled_session() -> Session {
    let (mut s, now) = registered_session();
    for i in 0..ROWS {
        // Every fifth line is long enough to wrap, every seventh carries mIRC codes.
        let text = match i % 35 {
            0 => format!("\u{2}bold\u{2} and \u{3}4,1colour\u{3} in message {i}"),
            n if n % 5 == 0 => format!(
                "message {i} {}",
                "long words that wrap past the edge ".repeat(7)
            ),
            _ => format!("message number {i} with some ordinary chat text"),
        };
        let line = format!(
            "@msgid=m{i} :nick{}!user@host PRIVMSG #bench :{text}",
            i % 50
        );
        s.handle_line(now, &line);
    }
    while s.poll_transmit(now.mono).is_some() {}
    while s.poll_event().is_some() {}
    s
}

/// One frame: the screen model from the buffer, then ratatui's render into its buffer.
fn frame(s: &Session, terminal: &mut Terminal<TestBackend>, scroll: usize, look: &Look) {
    let view = s.view();
    let id = view
        .find_buffer(BufferKind::Channel, "#bench")
        .expect("#bench")
        .clone();
    let buffer = view.buffer(&id).expect("buffer");
    let a = areas(Rect::new(0, 0, WIDTH, HEIGHT), false);
    let lines = visible(
        buffer.display().rev(),
        Viewport {
            width: a.body.width as usize,
            height: a.body.height as usize,
            scroll,
        },
        view.nick(),
        look,
        Some(buffer.last_seq() - 10),
    );
    let screen = Screen {
        title: "#bench: a topic for the benchmark".into(),
        lines,
        nicklist: None,
        nicklist_scroll: 0,
        status: Status {
            clock: "12:34".into(),
            nick: view.nick().into(),
            number: 3,
            label: "bench/#bench".into(),
            state: None,
            lag_ms: Some(180),
            activity: vec![
                (1, Level::Events),
                (4, Level::Message),
                (7, Level::Highlight),
            ],
            more_below: scroll > 0,
        },
        approval: None,
        input: InputLine {
            prompt: "[#bench] ".into(),
            text: "a half-typed line".into(),
            cursor: 17,
            question: None,
        },
    };
    terminal.draw(|f| draw(f, &screen)).expect("draw");
}

fn bench(c: &mut Criterion) {
    let s = filled_session();
    let look = Look::in_fixed_zone(0);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let mut group = c.benchmark_group("screen");
    group.bench_function("frame_200x50_of_50k_rows_at_the_end", |b| {
        b.iter(|| frame(black_box(&s), &mut terminal, 0, &look))
    });
    group.bench_function("frame_200x50_of_50k_rows_scrolled_back_25k", |b| {
        b.iter(|| frame(black_box(&s), &mut terminal, 25_000, &look))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
