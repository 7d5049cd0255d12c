//! Property tests: the tokenizer never panics on any input, and whatever the
//! serializer accepts reads back unchanged.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use rete_engine::line::{Line, OutLine, MAX_PARAMS};

/// Calls every accessor so lazy parts (tags) are exercised too, and checks
/// the structural promises that hold for any successfully parsed line.
fn touch_everything(input: &str) {
    let Ok(line) = Line::parse(input) else {
        return;
    };
    let params = line.params();
    assert!(params.len() <= MAX_PARAMS);
    assert!(!line.command().is_empty() && !line.command().contains(' '));
    assert!(line
        .source()
        .is_none_or(|s| !s.is_empty() && !s.contains(' ')));
    if let Some((_, middle)) = params.split_last() {
        for p in middle {
            assert!(
                !p.is_empty() && !p.contains(' '),
                "middle {p:?} of {input:?}"
            );
        }
    }
    for i in 0..=params.len() {
        assert_eq!(line.param(i), params.get(i).copied());
    }
    let _ = line.source_nick();
    for tag in line.tags() {
        assert!(!tag.key.is_empty());
        // A key seen during iteration is always found by lookup.
        assert!(line.tag(tag.key).is_some(), "{:?} in {input:?}", tag.key);
    }
    let _ = format!("{line:?}");
}

/// Strings over the characters that matter to IRC syntax, so edge cases
/// (empty parts, stray colons, escapes, line breaks) come up often.
fn nasty() -> impl Strategy<Value = String> {
    r"[a:;=@\\ \r\n\x00/+!\t]{0,6}"
}

/// Mostly plausible lines with a sprinkling of broken parts, so both the
/// accepting and the refusing paths of the serializer are exercised.
fn arbitrary_out_line() -> impl Strategy<Value = OutLine> {
    let word = r"[a-z;=@!\\/+\t][a-z:;=@!\\/+\t]{0,4}";
    let key = prop_oneof![9 => r"\+?([a-z.]{1,3}/)?[a-z-]{1,4}", 1 => nasty()];
    (
        prop::collection::vec((key, prop::option::of(nasty())), 0..3),
        prop::option::of(prop_oneof![9 => word, 1 => nasty()]),
        prop_oneof![9 => "[A-Z0-9]{1,5}", 1 => nasty()],
        prop::collection::vec(prop_oneof![19 => word, 1 => nasty()], 0..17),
    )
        .prop_map(|(tags, source, command, params)| OutLine {
            tags,
            source,
            command,
            params,
        })
}

fn valid_out_line() -> impl Strategy<Value = OutLine> {
    let key = r"\+?([a-z0-9.-]{1,8}/)?[a-zA-Z0-9-]{1,8}";
    let value = prop::option::of(r"[^\x00]{0,12}");
    let middle = r"[^ \r\n\x00:][^ \r\n\x00]{0,8}";
    let last = r"[^\r\n\x00]{0,16}";
    (
        prop::collection::vec((key, value), 0..8),
        prop::option::of(r"[^ \r\n\x00]{1,16}"),
        "[A-Za-z0-9]{1,10}",
        prop::collection::vec(middle, 0..MAX_PARAMS),
        prop::option::of(last),
    )
        .prop_map(|(tags, source, command, mut params, last)| {
            if let Some(last) = last.filter(|_| params.len() < MAX_PARAMS) {
                params.push(last);
            }
            OutLine {
                tags,
                source,
                command,
                params,
            }
        })
}

/// Asserts that `wire` parses back into exactly what `out` describes.
fn assert_reads_back(out: &OutLine, wire: &str) {
    let line = match Line::parse(wire) {
        Ok(line) => line,
        Err(e) => panic!("{wire:?} from {out:?} does not parse: {e}"),
    };
    let tags: Vec<(String, String)> = line
        .tags()
        .map(|t| (t.key.to_owned(), t.value.into_owned()))
        .collect();
    let expected_tags: Vec<(String, String)> = out
        .tags
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().unwrap_or_default()))
        .collect();
    assert_eq!(tags, expected_tags, "tags of {wire:?}");
    assert_eq!(line.source(), out.source.as_deref(), "source of {wire:?}");
    assert_eq!(line.command(), out.command, "command of {wire:?}");
    assert_eq!(line.params(), out.params.as_slice(), "params of {wire:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_never_panics_on_any_string(input in any::<String>()) {
        touch_everything(&input);
    }

    #[test]
    fn parse_never_panics_on_irc_like_strings(input in r"[@:; =\\a-z!\r\n\t]{0,60}") {
        touch_everything(&input);
    }

    #[test]
    fn parse_never_panics_on_lossy_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        touch_everything(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn valid_lines_round_trip(out in valid_out_line()) {
        let wire = out.to_wire();
        prop_assert!(wire.is_ok(), "{:?} refused: {:?}", out, wire);
        if let Ok(wire) = wire {
            assert_reads_back(&out, &wire);
        }
    }

    #[test]
    fn whatever_serializes_reads_back_and_is_one_line(out in arbitrary_out_line()) {
        if let Ok(wire) = out.to_wire() {
            prop_assert!(!wire.contains(['\r', '\n', '\0']), "{:?}", wire);
            assert_reads_back(&out, &wire);
        }
    }
}
