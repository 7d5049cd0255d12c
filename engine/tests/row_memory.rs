//! Memory per stored row, beyond its text: at most 160 bytes.
//!
//! A counting allocator measures what filling a buffer to its default
//! capacity (50,000 rows) through `Session::handle_line` costs, minus the
//! bytes of text the rows own. It counts what glibc's malloc really takes for
//! each allocation (its usable size plus the 8-byte chunk header), not the
//! size asked for: a 6-byte nick on the heap costs a 32-byte chunk, and
//! what a row costs is what the process holds. Deterministic: it counts
//! bytes, not time.

use rete_engine::buffer::{BufferKind, DEFAULT_CAPACITY};
use rete_engine::clock::{Mono, Now, UnixMillis};
use rete_engine::ids::SessionId;
use rete_engine::session::{Session, SessionConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// glibc's header before each chunk's usable bytes.
const CHUNK_HEADER: usize = 8;

/// The bytes malloc holds for the allocation at `ptr`.
fn held(ptr: *mut u8) -> isize {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: `ptr` came from the system allocator and is still live.
    let usable = unsafe { libc::malloc_usable_size(ptr.cast()) };
    (usable + CHUNK_HEADER) as isize
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        LIVE.fetch_add(held(ptr), Ordering::Relaxed);
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(held(ptr), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let before = held(ptr);
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(held(new) - before, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn a_stored_row_costs_at_most_160_bytes_beyond_its_text() {
    let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
    let mut s = Session::new(SessionConfig::new(id, "mem", "rete"));
    let now = Now {
        mono: Mono(0),
        wall: UnixMillis(1_790_769_600_000),
    };
    s.handle_connected(now, "127.0.0.1:6667", None, [0; 18]);
    s.handle_line(now, ":srv 001 rete :Welcome");
    s.handle_line(now, ":rete!u@h JOIN #mem");
    while s.poll_transmit(now.mono).is_some() {}
    while s.poll_event().is_some() {}

    let lines: Vec<String> = (0..DEFAULT_CAPACITY - 1)
        .map(|i| {
            format!(
                "@msgid=m{i};time=2026-09-30T12:00:00.000Z :nick{}!u@h PRIVMSG #mem :message {i}",
                i % 40
            )
        })
        .collect();
    let before = LIVE.load(Ordering::Relaxed);
    for l in &lines {
        s.handle_line(now, l);
        while s.poll_event().is_some() {}
    }
    let after = LIVE.load(Ordering::Relaxed);

    let v = s.view();
    let buffer = v
        .buffer(v.find_buffer(BufferKind::Channel, "#mem").unwrap())
        .unwrap();
    assert_eq!(
        buffer.len(),
        DEFAULT_CAPACITY,
        "the join row plus the messages fill it"
    );
    // The text the rows own on the heap: a sender or msgid held inline
    // takes no allocation, so it is not subtracted.
    let on_heap = |s: &rete_engine::row::CompactString| {
        if s.is_heap_allocated() {
            s.len()
        } else {
            0
        }
    };
    let text: usize = buffer
        .display()
        .map(|r| r.payload.text_len() + on_heap(&r.from) + r.msgid.as_ref().map_or(0, on_heap))
        .sum();
    let rows = buffer.len();
    let per_row = ((after - before) as usize - text) as f64 / rows as f64;
    println!("{per_row:.1} bytes per row beyond text ({rows} rows, {text} bytes of text)");
    assert!(per_row <= 160.0, "{per_row:.1} bytes per row beyond text");
}
