//! Display escaping: nothing in a row can colour, hide or reorder it.

use rete_redact::display_escape;
use std::borrow::Cow;

#[test]
fn escaping_table() {
    let cases: &[(&str, &str)] = &[
        ("plain text", "plain text"),
        ("café ☕ 日本", "café ☕ 日本"),
        ("\u{2}bold\u{2}", "bold"),
        ("\u{3}04red\u{3}", "red"),
        ("\u{3}04,12on blue\u{F}", "on blue"),
        ("\u{3}4,x", ",x"),
        ("\u{3}123", "3"),
        ("\u{4}FF00AAhex\u{4}FF00AA,000000y", "hexy"),
        (
            "\u{11}mono\u{16}rev\u{1D}it\u{1E}st\u{1F}ul",
            "monorevitstul",
        ),
        ("a\nb", "a\\nb"),
        ("a\r\nb\tc", "a\\r\\nb\\tc"),
        ("\u{1B}[31m", "\\u{1B}[31m"),
        ("\u{0}\u{7F}\u{85}", "\\u{0}\\u{7F}\\u{85}"),
        ("abc\u{202E}fed", "abc\\u{202E}fed"),
        (
            "\u{200B}\u{200F}\u{202A}\u{2060}\u{206F}",
            "\\u{200B}\\u{200F}\\u{202A}\\u{2060}\\u{206F}",
        ),
        (
            "\u{61C}\u{180E}\u{AD}\u{FEFF}",
            "\\u{61C}\\u{180E}\\u{AD}\\u{FEFF}",
        ),
        ("x\u{FE0F}\u{E0100}", "x\\u{FE0F}\\u{E0100}"),
        ("\u{E0001}\u{E0041}", "\\u{E0001}\\u{E0041}"),
        ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
        ("\u{3164}\u{115F}", "\\u{3164}\\u{115F}"),
        ("\\u{1B} typed", "\\u{1B} typed"),
    ];
    for (input, want) in cases {
        assert_eq!(display_escape(input), *want, "{input:?}");
    }
}

#[test]
fn clean_text_is_borrowed() {
    assert!(matches!(display_escape("hello, world ü"), Cow::Borrowed(_)));
    assert!(matches!(display_escape("\u{2}x"), Cow::Owned(_)));
}
