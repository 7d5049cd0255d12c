//! The way-out scan's cost on a read_messages page: 500 rows of ordinary
//! chat (about 100 bytes of text each, plus nick, user and host) against the
//! eight secrets a busy session might hold. The budget is 100 µs a page.

use criterion::{criterion_group, criterion_main, Criterion};
use rete_redact::SecretSet;
use std::hint::black_box;

struct Row {
    nick: String,
    user: String,
    host: String,
    text: String,
}

const WORDS: &[&str] = &[
    "the",
    "build",
    "is",
    "green",
    "again",
    "after",
    "merging",
    "that",
    "patch",
    "for",
    "reconnect",
    "backoff",
    "anyone",
    "seen",
    "ping",
    "timeouts",
    "on",
    "libera",
    "today",
    "yes",
    "I",
    "think",
    "it",
    "was",
    "netsplit",
    "around",
    "noon",
    "UTC",
    "thanks",
    "👍",
    "café",
    "déjà",
    "vu",
    "https://example.org/issues/4711",
    "lgtm",
    "ship",
    "it",
];

fn page() -> Vec<Row> {
    (0..500)
        .map(|i| {
            let mut text = String::new();
            let mut w = i * 7;
            while text.len() < 100 {
                text.push_str(WORDS[w % WORDS.len()]);
                text.push(' ');
                w = w * 31 + 17;
            }
            Row {
                nick: format!("user{}", i % 40),
                user: format!("~ident{}", i % 40),
                host: format!("host-{}.dsl.example.net", i % 97),
                text,
            }
        })
        .collect()
}

fn scan(c: &mut Criterion) {
    let secrets = SecretSet::new([
        "hunter2-server-pass",
        "s3cret-sasl-password",
        "chan-key-one",
        "sesame",
        "k3y-of-#rust",
        "another-channel-key",
        "Zm9vYmFyYmF6cXV4",
        "tok_8f2e1c9a7b6d5e4f",
    ]);
    let rows = page();
    c.bench_function("secret scan of a 500-row page, 8 secrets", |b| {
        b.iter(|| {
            black_box(&rows)
                .iter()
                .filter(|r| {
                    secrets.contains_secret(&r.text)
                        || secrets.contains_secret(&r.nick)
                        || secrets.contains_secret(&r.user)
                        || secrets.contains_secret(&r.host)
                })
                .count()
        })
    });
}

criterion_group!(benches, scan);
criterion_main!(benches);
