//! Tokenizer throughput: plain PRIVMSG lines and tag-heavy IRCv3 lines.
//!
//! Each iteration parses a pre-built batch of varied lines and touches the
//! result so the work cannot be optimised away. Targets (one core):
//! >= 5M plain lines/s, >= 1.5M tag-heavy lines/s.
//!
//! Run: `cargo bench --bench tokenize -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rete_engine::line::Line;

const BATCH: usize = 10_000;

const WORDS: [&str; 12] = [
    "hello",
    "world",
    "the",
    "build",
    "is",
    "green",
    "again",
    "see",
    "https://example.org/x",
    "ok",
    "lunch?",
    "merged",
];

/// A message text of 1 to 12 words, varied by `i`.
fn text(i: usize) -> String {
    let n = 1 + (i * 7) % WORDS.len();
    (0..n)
        .map(|w| WORDS[(i + w * 5) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// `:nick!user@host PRIVMSG #channel :some message text here`, varied.
fn plain_lines() -> Vec<String> {
    (0..BATCH)
        .map(|i| {
            format!(
                ":nick{}!~user{}@host-{}.example.net PRIVMSG #channel{} :{}\r\n",
                i % 97,
                i % 13,
                i % 251,
                i % 7,
                text(i)
            )
        })
        .collect()
}

/// Lines with 5-8 tags: server-time, msgid, account, batch, label and
/// client tags, some values with escapes.
fn tagged_lines() -> Vec<String> {
    (0..BATCH)
        .map(|i| {
            let mut tags = format!(
                "@time=2024-03-{:02}T12:{:02}:{:02}.{:03}Z;msgid=Zx{:08x}Qp;account=acct{}",
                1 + i % 28,
                i % 60,
                (i * 7) % 60,
                i % 1000,
                i.wrapping_mul(2_654_435_761),
                i % 53
            );
            if i % 2 == 0 {
                tags.push_str(&format!(";batch=b{}", i % 5));
            }
            if i % 3 == 0 {
                tags.push_str(&format!(";label=L{i}"));
            }
            tags.push_str(&format!(";+draft/reply=Zx{:08x}Qp", i / 2));
            tags.push_str(r";+example.com/note=semi\:colon\sand\sspace\\slash");
            if i % 4 == 0 {
                tags.push_str(";+typing=active");
            }
            format!(
                "{tags} :nick{}!~user@host.example.net PRIVMSG #chan{} :{}\r\n",
                i % 97,
                i % 7,
                text(i)
            )
        })
        .collect()
}

/// A bench over lines that fail to parse would measure the error path.
fn assert_all_parse(lines: &[String]) {
    assert!(lines.iter().all(|l| Line::parse(l).is_ok()));
}

fn bench_plain(c: &mut Criterion) {
    let lines = plain_lines();
    assert_all_parse(&lines);
    let mut group = c.benchmark_group("tokenize");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("plain_privmsg", |b| {
        b.iter(|| {
            for raw in &lines {
                if let Ok(line) = Line::parse(black_box(raw)) {
                    black_box(line.source_nick());
                    black_box(line.command());
                    black_box(line.params());
                }
            }
        });
    });
    group.finish();
}

fn bench_tagged(c: &mut Criterion) {
    let lines = tagged_lines();
    assert_all_parse(&lines);
    let mut group = c.benchmark_group("tokenize");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("tag_heavy", |b| {
        b.iter(|| {
            for raw in &lines {
                if let Ok(line) = Line::parse(black_box(raw)) {
                    black_box(line.command());
                    black_box(line.params());
                    for tag in line.tags() {
                        black_box(tag);
                    }
                }
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench_plain, bench_tagged);
criterion_main!(benches);
