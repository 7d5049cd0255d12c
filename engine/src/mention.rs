//! The nick-boundary rule: what counts as a mention of the person's nick,
//! for reterm's highlight and the control surface's `mentions: true`.
//!
//! A plain substring would make every `mrironman` a mention of `mriron`, so
//! the nick is bounded (as the control surface's contract states): it must appear ignoring case, with the
//! character just before it and just after it each the start or end of the
//! field or not a nick character. Nick characters are letters, digits and
//! the ten characters `-`, `[`, `]`, `\`, `` ` ``, `^`, `_`, `{`, `|` and
//! `}` (letters and digits in the Unicode sense), so
//! `@mriron!` and `MrIron:` mention `mriron` while `[mriron]` and `mriron_`
//! do not.
//!
//! Case is ignored character by character (each side lowercased), so the
//! characters around a match are the field's own, never shifted by a
//! lowercasing that changed lengths.

/// True when `nick` appears in `text`, ignoring case, bounded on both sides
/// by the field's start or end or a character that is not a nick character.
///
/// Every occurrence is tried, overlapping ones included: the first may be
/// glued to a word (`mrironman`) and a later one stand alone. An empty nick
/// (a session that has none yet) never mentions.
pub fn mentions(text: &str, nick: &str) -> bool {
    if nick.is_empty() {
        return false;
    }
    let mut before: Option<char> = None;
    let mut rest = text;
    loop {
        // An occurrence right after a nick character is glued to a word, so
        // it is not even compared.
        if !before.is_some_and(is_nick_char) {
            if let Some(after) = prefix_ignoring_case(rest, nick) {
                if !after.chars().next().is_some_and(is_nick_char) {
                    return true;
                }
            }
        }
        let mut chars = rest.chars();
        match chars.next() {
            None => return false,
            Some(c) => {
                before = Some(c);
                rest = chars.as_str();
            }
        }
    }
}

/// True for the characters a nick may hold: letters, digits and
/// `- [ ] \ ` ^ _ { | }`.
fn is_nick_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '-' | '[' | ']' | '\\' | '`' | '^' | '_' | '{' | '|' | '}'
        )
}

/// When `text` starts with `nick` ignoring case, what follows it.
fn prefix_ignoring_case<'a>(text: &'a str, nick: &str) -> Option<&'a str> {
    let mut chars = text.chars();
    for want in nick.chars() {
        if !same_ignoring_case(chars.next()?, want) {
            return None;
        }
    }
    Some(chars.as_str())
}

fn same_ignoring_case(a: char, b: char) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b || a.to_lowercase().eq(b.to_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contracts_examples() {
        for yes in ["mriron", "MrIron: ping", "hi @mriron!"] {
            assert!(mentions(yes, "mriron"), "{yes}");
        }
        for no in ["mrironman", "xmriron", "mriron_", "[mriron]"] {
            assert!(!mentions(no, "mriron"), "{no}");
        }
    }

    #[test]
    fn the_nick_is_found_anywhere_in_the_field() {
        assert!(mentions("ask mriron about it", "mriron"));
        assert!(mentions("thanks, mriron", "MRIRON"));
        assert!(mentions("mriron.", "mriron"));
        assert!(mentions("(mriron)", "mriron"));
        assert!(!mentions("mriro", "mriron"));
        assert!(!mentions("", "mriron"));
    }

    #[test]
    fn every_nick_character_binds() {
        for c in [
            '-', '[', ']', '\\', '`', '^', '_', '{', '|', '}', 'a', 'Z', '7',
        ] {
            assert!(!mentions(&format!("{c}mriron"), "mriron"), "before {c}");
            assert!(!mentions(&format!("mriron{c}"), "mriron"), "after {c}");
        }
        for c in ['@', '!', ':', ',', '.', ' ', '~', '#', '<', '>', '\'', '"'] {
            assert!(mentions(&format!("{c}mriron{c}"), "mriron"), "around {c}");
        }
    }

    #[test]
    fn a_later_occurrence_counts_after_a_badly_bounded_one() {
        assert!(mentions("mrironman says hi mriron", "mriron"));
        assert!(mentions("xmriron mriron_ mriron", "mriron"));
        assert!(!mentions("xmriron mriron_ [mriron]", "mriron"));
        // Overlapping occurrences are tried too: in `aaa` neither `aa`
        // stands alone, in `aaa aa` the last one does.
        assert!(!mentions("aaa", "aa"));
        assert!(mentions("aaa aa", "aa"));
    }

    #[test]
    fn non_ascii_letters_are_nick_characters_and_case_folds() {
        assert!(!mentions("émriron", "mriron"));
        assert!(!mentions("mrironé", "mriron"));
        assert!(!mentions("mriron日本", "mriron"));
        assert!(mentions("«mriron»", "mriron"));
        assert!(mentions("— mriron —", "mriron"));
        assert!(mentions("salut ÉLODIE !", "élodie"));
        assert!(!mentions("élodieé", "ÉLODIE"));
        // KELVIN SIGN lowercases to k.
        assert!(mentions("\u{212A}ate?", "kate"));
    }

    #[test]
    fn an_empty_nick_never_mentions() {
        assert!(!mentions("anything", ""));
        assert!(!mentions("", ""));
    }

    #[test]
    fn nicks_with_special_characters() {
        assert!(mentions("hey [mriron], hi", "[mriron]"));
        assert!(!mentions("hey x[mriron]", "[mriron]"));
        assert!(mentions("ping mr_iron|away!", "MR_IRON|AWAY"));
    }
}
