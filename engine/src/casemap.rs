//! Nick and channel name comparison under the server's CASEMAPPING.
//!
//! IRC servers treat some names as equal that differ in bytes: `Alice` and
//! `alice` are one nick everywhere, and under RFC 1459 rules `[bob]` and
//! `{bob}` are too (Scandinavian heritage). Every map keyed by a nick or a
//! channel must fold keys with the mapping the server advertised, or the
//! client will track one user as two.

use serde::{Deserialize, Serialize};

/// A case-folding rule advertised by the `CASEMAPPING` ISUPPORT token.
///
/// Folding only touches ASCII bytes; any other character is kept as is, which
/// is what every server using these three mappings does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CaseMapping {
    /// Only `A`-`Z` fold to `a`-`z`.
    Ascii,
    /// `A`-`Z` plus `[]\~` folding to `{}|^`; RFC 1459's rule, assumed
    /// when a server does not advertise any mapping.
    #[default]
    Rfc1459,
    /// `A`-`Z` plus `[]\` folding to `{}|` but leaving `~` alone.
    StrictRfc1459,
}

impl CaseMapping {
    /// Recognises the `CASEMAPPING=` value; `None` for mappings the engine
    /// does not implement (such as `rfc7613`), so the caller keeps its default
    /// rather than guessing at Unicode folding.
    #[must_use]
    pub fn from_isupport(value: &str) -> Option<CaseMapping> {
        match value {
            "ascii" => Some(CaseMapping::Ascii),
            "rfc1459" => Some(CaseMapping::Rfc1459),
            "strict-rfc1459" => Some(CaseMapping::StrictRfc1459),
            _ => None,
        }
    }

    /// The token value naming this mapping, as servers spell it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CaseMapping::Ascii => "ascii",
            CaseMapping::Rfc1459 => "rfc1459",
            CaseMapping::StrictRfc1459 => "strict-rfc1459",
        }
    }

    /// Folds one character; the single place the three rules are written down.
    #[must_use]
    pub fn fold_char(self, c: char) -> char {
        match (self, c) {
            (_, 'A'..='Z') => c.to_ascii_lowercase(),
            (CaseMapping::Ascii, _) => c,
            (_, '[') => '{',
            (_, ']') => '}',
            (_, '\\') => '|',
            (CaseMapping::Rfc1459, '~') => '^',
            _ => c,
        }
    }

    /// The canonical (folded) form of `s`, for use as a map key.
    #[must_use]
    pub fn fold(self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        self.fold_into(s, &mut out);
        out
    }

    /// Appends the folded form of `s` to `out`, so hot paths can reuse a buffer.
    pub fn fold_into(self, s: &str, out: &mut String) {
        out.extend(s.chars().map(|c| self.fold_char(c)));
    }

    /// Whether `a` and `b` name the same nick or channel; allocates nothing,
    /// so it is cheap enough for per-message checks such as "is this me?".
    #[must_use]
    pub fn eq(self, a: &str, b: &str) -> bool {
        // Folding maps ASCII to ASCII, so byte lengths must match first.
        a.len() == b.len()
            && a.chars()
                .zip(b.chars())
                .all(|(x, y)| self.fold_char(x) == self.fold_char(y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CaseMapping; 3] = [
        CaseMapping::Ascii,
        CaseMapping::Rfc1459,
        CaseMapping::StrictRfc1459,
    ];

    #[test]
    fn default_is_rfc1459() {
        assert_eq!(CaseMapping::default(), CaseMapping::Rfc1459);
    }

    #[test]
    fn from_isupport_knows_the_three_names_only() {
        assert_eq!(
            CaseMapping::from_isupport("ascii"),
            Some(CaseMapping::Ascii)
        );
        assert_eq!(
            CaseMapping::from_isupport("rfc1459"),
            Some(CaseMapping::Rfc1459)
        );
        assert_eq!(
            CaseMapping::from_isupport("strict-rfc1459"),
            Some(CaseMapping::StrictRfc1459)
        );
        assert_eq!(CaseMapping::from_isupport("rfc7613"), None);
        assert_eq!(CaseMapping::from_isupport("ASCII"), None);
        assert_eq!(CaseMapping::from_isupport(""), None);
    }

    #[test]
    fn as_str_round_trips_through_from_isupport() {
        for m in ALL {
            assert_eq!(CaseMapping::from_isupport(m.as_str()), Some(m));
        }
    }

    #[test]
    fn ascii_folds_letters_only() {
        assert_eq!(CaseMapping::Ascii.fold("NiCk[]\\~"), "nick[]\\~");
    }

    #[test]
    fn rfc1459_folds_brackets_backslash_and_tilde() {
        assert_eq!(CaseMapping::Rfc1459.fold("NiCk[]\\~"), "nick{}|^");
    }

    #[test]
    fn strict_rfc1459_keeps_tilde() {
        assert_eq!(CaseMapping::StrictRfc1459.fold("NiCk[]\\~"), "nick{}|~");
    }

    #[test]
    fn fold_leaves_non_ascii_alone() {
        for m in ALL {
            assert_eq!(m.fold("ÄÖÜé"), "ÄÖÜé");
        }
    }

    #[test]
    fn fold_is_idempotent_on_every_ascii_byte() {
        let all: String = (0u8..128).map(char::from).collect();
        for m in ALL {
            let once = m.fold(&all);
            assert_eq!(m.fold(&once), once, "{m:?}");
        }
    }

    #[test]
    fn fold_into_appends() {
        let mut out = String::from("x:");
        CaseMapping::Rfc1459.fold_into("#Chan[1]", &mut out);
        assert_eq!(out, "x:#chan{1}");
    }

    #[test]
    fn eq_follows_each_mapping() {
        assert!(CaseMapping::Ascii.eq("ALICE", "alice"));
        assert!(!CaseMapping::Ascii.eq("[a]", "{a}"));
        assert!(CaseMapping::Rfc1459.eq("[A]~", "{a}^"));
        assert!(CaseMapping::StrictRfc1459.eq("[A]\\", "{a}|"));
        assert!(!CaseMapping::StrictRfc1459.eq("a~", "a^"));
    }

    #[test]
    fn eq_rejects_different_lengths_and_contents() {
        for m in ALL {
            assert!(!m.eq("alice", "alic"));
            assert!(!m.eq("alice", "alicf"));
            assert!(m.eq("", ""));
        }
    }

    #[test]
    fn eq_agrees_with_comparing_folds() {
        let samples = ["Nick", "nick", "[x]", "{X}", "a~", "A^", "é", "É", "\\|"];
        for m in ALL {
            for a in samples {
                for b in samples {
                    assert_eq!(m.eq(a, b), m.fold(a) == m.fold(b), "{m:?} {a} {b}");
                }
            }
        }
    }

    #[test]
    fn serializes_as_variant_name() {
        let json = serde_json::to_string(&CaseMapping::StrictRfc1459).unwrap();
        assert_eq!(json, "\"StrictRfc1459\"");
        let back: CaseMapping = serde_json::from_str(&json).unwrap();
        assert_eq!(back, CaseMapping::StrictRfc1459);
    }
}
