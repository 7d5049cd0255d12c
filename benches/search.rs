//! search_messages' core (the walk and the page, after the rows are copied)
//! over 100,000 rows in 10 buffers, beside `grep -ci` over the same texts in
//! a file, measured side by side in one run.
//!
//! Targets: substring median under 15 ms on one core and within 3x of
//! `grep -ci` (a process spawn included, as a shell user would pay it);
//! regex under 40 ms.
//!
//! The query matches 20 rows, all among the oldest, so a page of 50 never
//! fills and every row is walked. A second substring query made of common
//! letters shows the cost when the rare-byte screen lets most fields
//! through.
//!
//! Run: `cargo bench --bench search -- --warm-up-time 1 --measurement-time 3`
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rete_engine::clock::UnixMillis;
use rete_engine::row::{Payload, Row};
use rete_mcp::tools::args::Args;
use rete_mcp::tools::result::BUDGET;
use rete_mcp::tools::search::matcher::{Matcher, Mode, RowMatch, Scratch};
use rete_mcp::tools::search::page::Page;
use rete_mcp::tools::search::request::Request;
use rete_mcp::tools::search::search_rows;
use rete_mcp::tools::search::window::CopiedBuffer;
use serde_json::{json, Value};
use std::hint::black_box;
use std::io::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

const BUFFERS: usize = 10;
const PER_BUFFER: usize = 10_000;
const NEEDLE: &str = "Kumquat";
const NEEDLES_PER_BUFFER: usize = 2;

const WORDS: &[&str] = &[
    "the",
    "a",
    "and",
    "of",
    "to",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "this",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "Mr",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "IRC",
    "server",
    "channel",
    "nick",
    "lol",
    "ok",
    "thanks",
    "Rust",
    "build",
    "crash",
    "https://example.org/x",
    "deploy",
    "merge",
    "review",
    "tests",
    "green",
    "red",
    "cargo",
];

/// Chat-like rows: 6 to 14 words from a fixed vocabulary, 20 nicks; the
/// needle in the oldest rows of each buffer.
fn buffers() -> Vec<CopiedBuffer> {
    let mut rng = StdRng::seed_from_u64(7);
    (0..BUFFERS)
        .map(|b| {
            let rows = (0..PER_BUFFER)
                .map(|i| {
                    let n = rng.random_range(6..=14);
                    let mut text: Vec<&str> = (0..n)
                        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
                        .collect();
                    if i < NEEDLES_PER_BUFFER {
                        text.insert(n / 2, NEEDLE);
                    }
                    Row {
                        seq: i as u64 + 1,
                        time: UnixMillis(1_790_769_600_000 + i as i64 * 1_000),
                        msgid: None,
                        from: format!("nick{}", rng.random_range(0..20)).into(),
                        history: false,
                        payload: Payload::Privmsg {
                            text: text.join(" ").into(),
                        },
                    }
                })
                .collect();
            CopiedBuffer::of_rows(format!("00000000-0000-4000-8000-{b:012}"), rows)
        })
        .collect()
}

/// The same texts, one row a line (sender, tab, text), for grep.
fn write_file(buffers: &[CopiedBuffer]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let mut out = std::io::BufWriter::new(file.as_file_mut());
    for b in buffers {
        for r in &b.rows {
            let mut text = String::new();
            r.payload.for_each_text(|t| text.push_str(t));
            writeln!(out, "{}\t{}", r.from, text).expect("write");
        }
    }
    out.flush().expect("flush");
    drop(out);
    file
}

fn request(v: Value) -> Request {
    Request::parse(&Args::from_request(Some(&v)).expect("object")).expect("request")
}

fn search(buffers: &[CopiedBuffer], request: &Request) -> Page {
    let matcher = Matcher::new(request.mode, &request.query).expect("query");
    search_rows(
        buffers,
        request,
        matcher,
        None,
        Duration::from_secs(10),
        BUDGET,
        &|| false,
    )
    .expect("not cancelled")
}

fn grep_count(path: &std::path::Path) -> usize {
    let out = Command::new("grep")
        .arg("-ci")
        .arg(NEEDLE)
        .arg(path)
        .output()
        .expect("grep runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a count")
}

fn bench(c: &mut Criterion) {
    let buffers = buffers();
    let file = write_file(&buffers);
    let expected = BUFFERS * NEEDLES_PER_BUFFER;
    assert_eq!(grep_count(file.path()), expected);

    let substring = request(json!({"query": NEEDLE.to_lowercase()}));
    let regex = request(json!({"query": "(?i)kum+qu[a-z]t", "match": "regex"}));
    // The same with a lookahead, so fancy-regex runs its backtracking engine
    // (the plain pattern above is handed whole to the regex crate's).
    let lookahead = request(json!({"query": "(?i)kum+qu[a-z]t(?!zz)", "match": "regex"}));
    let counting = request(json!({"query": NEEDLE, "count_only": true}));
    // Only common letters, so the rare-byte screen lets most fields through
    // to the lowercasing path; count_only so every row is walked.
    let common = request(json!({"query": "heart", "count_only": true}));
    for r in [&substring, &regex, &lookahead] {
        let page = search(&buffers, r);
        assert_eq!(
            page.result["matches"].as_array().map(Vec::len),
            Some(expected)
        );
        assert_eq!(page.result["truncated"], json!(false));
    }

    let mut g = c.benchmark_group("search_100k_rows");
    g.sample_size(30);
    g.bench_function("substring", |b| {
        b.iter(|| black_box(search(&buffers, &substring)))
    });
    g.bench_function("grep_ci_same_text", |b| {
        b.iter(|| black_box(grep_count(file.path())))
    });
    g.bench_function("regex", |b| b.iter(|| black_box(search(&buffers, &regex))));
    g.bench_function("regex_lookahead", |b| {
        b.iter(|| black_box(search(&buffers, &lookahead)))
    });
    g.bench_function("substring_count_only", |b| {
        b.iter(|| black_box(search(&buffers, &counting)))
    });
    g.bench_function("substring_common_letters_count_only", |b| {
        b.iter(|| black_box(search(&buffers, &common)))
    });
    g.finish();

    // A plain side-by-side median for the report, in the same run.
    let median = |f: &mut dyn FnMut()| {
        let mut times: Vec<Duration> = (0..31)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let ours = median(&mut || {
        black_box(search(&buffers, &substring));
    });
    let grep = median(&mut || {
        black_box(grep_count(file.path()));
    });
    let re = median(&mut || {
        black_box(search(&buffers, &regex));
    });
    let fancy = median(&mut || {
        black_box(search(&buffers, &lookahead));
    });
    // The worst one field costs: 4,000 characters against an exponential
    // pattern, stopped by the backtrack limit.
    let worst = Matcher::new(Mode::Regex, "^(a|aa)+\\1c").expect("compiles");
    let field = [Row {
        seq: 1,
        time: UnixMillis(0),
        msgid: None,
        from: String::new().into(),
        history: false,
        payload: Payload::Privmsg {
            text: "a".repeat(4_000).into(),
        },
    }];
    let limit = median(&mut || {
        let r = worst.match_row(&field[0], &mut Scratch::default(), &mut |_| false);
        assert_eq!(r, RowMatch::NotFullySearched);
    });
    println!(
        "medians: substring {ours:?}, grep -ci {grep:?} (ratio {:.2}), regex {re:?}, \
         regex with a lookahead {fancy:?}, one field at the backtrack limit {limit:?}",
        ours.as_secs_f64() / grep.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
