//! The way-out scan: the exact secret values a session holds, looked for in
//! everything the control surface is about to return.
//!
//! A secret is found in any ASCII case (a case-folded password is one guess
//! away from the password) and with mIRC formatting codes inside it (text is
//! also searched as drawn, the codes removed), so neither form slips past.
//!
//! The set is built once per change of secrets (one automaton for all of
//! them), so each scan is a single pass over the text whatever the number of
//! secrets. It never gives a secret back: there is no accessor, and Debug
//! prints only how many there are.

use aho_corasick::{AhoCorasick, MatchKind};
use std::fmt;

/// Secrets shorter than this are not looked for: a two-byte channel key
/// would withhold nearly everything.
const MIN_SECRET_BYTES: usize = 4;

/// The exact secret values one session holds, ready to scan for.
#[derive(Clone, Default)]
pub struct SecretSet {
    /// The secrets of at least four bytes, deduplicated; kept for the cut
    /// check and to extend the set.
    secrets: Vec<Box<str>>,
    /// None when there is nothing to look for (or the automaton could not be
    /// built, which for plain literals only a size limit could cause).
    matcher: Option<AhoCorasick>,
    /// The length of the shortest secret: a shorter text (a nick, a host
    /// part) cannot hold one and is not searched.
    shortest: usize,
}

impl SecretSet {
    /// A set of these secrets; those shorter than four bytes are ignored.
    pub fn new<I, S>(secrets: I) -> SecretSet
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut kept: Vec<Box<str>> = secrets
            .into_iter()
            .filter(|s| s.as_ref().len() >= MIN_SECRET_BYTES)
            .map(|s| s.as_ref().into())
            .collect();
        kept.sort_unstable();
        kept.dedup();
        let matcher = if kept.is_empty() {
            None
        } else {
            // Only whether a secret occurs matters, not which: leftmost
            // semantics let the crate use its SIMD (Teddy) searcher, about
            // three times faster than the standard automaton here.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .ascii_case_insensitive(true)
                .build(kept.iter().map(|s| s.as_bytes()))
                .ok()
        };
        let shortest = kept.iter().map(|s| s.len()).min().unwrap_or(0);
        SecretSet {
            secrets: kept,
            matcher,
            shortest,
        }
    }

    /// A set with nothing to look for.
    pub fn empty() -> SecretSet {
        SecretSet::default()
    }

    /// This set plus more secrets (a channel key learned later), rebuilt.
    /// Lets a holder add a secret without ever reading the old ones.
    pub fn extended<I, S>(&self, more: I) -> SecretSet
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let more: Vec<Box<str>> = more.into_iter().map(|s| s.as_ref().into()).collect();
        SecretSet::new(self.secrets.iter().chain(more.iter()))
    }

    /// Every secret of this set and of `other`, so a holder of several
    /// sets (the log ring, which keeps what it learned of each session) can
    /// combine them without ever reading one. Returns a clone of `self`,
    /// without rebuilding, when `other` adds nothing.
    pub fn union(&self, other: &SecretSet) -> SecretSet {
        if other
            .secrets
            .iter()
            .all(|s| self.secrets.binary_search(s).is_ok())
        {
            return self.clone();
        }
        SecretSet::new(self.secrets.iter().chain(other.secrets.iter()))
    }

    /// True when nothing is looked for.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// How many distinct secrets are looked for.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// True when `text` contains one of the secrets, in any ASCII case, as
    /// written or as drawn (mIRC formatting codes removed).
    pub fn contains_secret(&self, text: &str) -> bool {
        if text.len() < self.shortest {
            return false;
        }
        if self.finds(text) {
            return true;
        }
        match crate::display::strip_formatting(text) {
            std::borrow::Cow::Owned(drawn) => self.finds(&drawn),
            std::borrow::Cow::Borrowed(_) => false,
        }
    }

    fn finds(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            // Only a failed build leaves secrets without a matcher: search
            // plainly rather than let everything through.
            None => {
                let folded = text.to_ascii_lowercase();
                self.secrets
                    .iter()
                    .any(|s| folded.contains(&s.to_ascii_lowercase()))
            }
        }
    }

    /// For a raw line stored cut (ending `…[+N bytes]`), given the part that
    /// was kept: true when it ends with four or more bytes of a secret's
    /// start, so the cut fell inside a secret.
    pub fn cut_ends_in_secret(&self, kept: &str) -> bool {
        let kept = kept.as_bytes();
        self.secrets.iter().any(|s| {
            let s = s.as_bytes();
            (MIN_SECRET_BYTES..=s.len().min(kept.len()))
                .any(|n| kept[kept.len() - n..].eq_ignore_ascii_case(&s[..n]))
        })
    }
}

impl fmt::Debug for SecretSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretSet")
            .field("len", &self.secrets.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_only_the_count() {
        let set = SecretSet::new(["hunter22", "channelkey"]);
        let shown = format!("{set:?}");
        assert_eq!(shown, "SecretSet { len: 2 }");
    }

    #[test]
    fn short_and_duplicate_secrets_are_dropped() {
        let set = SecretSet::new(["abc", "abcd", "abcd", ""]);
        assert_eq!(set.len(), 1);
        assert!(!set.contains_secret("abc abc"));
        assert!(set.contains_secret("xabcdx"));
        assert!(SecretSet::new(["ab"]).is_empty());
    }

    #[test]
    fn a_union_finds_the_secrets_of_both() {
        let a = SecretSet::new(["hunter22"]);
        let b = SecretSet::new(["channelkey", "hunter22"]);
        let u = a.union(&b);
        assert_eq!(u.len(), 2);
        assert!(u.contains_secret("x channelkey") && u.contains_secret("hunter22"));
        assert_eq!(b.union(&a).len(), 2);
        assert!(SecretSet::empty().union(&SecretSet::empty()).is_empty());
    }

    #[test]
    fn overlapping_secrets_are_all_found() {
        let set = SecretSet::new(["abcdefgh", "abcd", "defghijk"]);
        for text in ["xabcdefgh", "abcdefg", "zzdefghijk", "abcdefghijk"] {
            assert!(set.contains_secret(text), "{text}");
        }
        assert!(!set.contains_secret("abc defghij"));
        assert!(set.cut_ends_in_secret("... defg"));
        assert!(set.cut_ends_in_secret("... DEFG"));
        assert!(!set.cut_ends_in_secret("... def"));
    }

    #[test]
    fn a_secret_in_another_case_is_found() {
        // A case-folded password is one guess away from the password.
        let set = SecretSet::new(["Hunter22-Pw"]);
        for text in ["HUNTER22-PW", "say hunter22-pw now", "hUnTeR22-pW"] {
            assert!(set.contains_secret(text), "{text}");
        }
        assert!(!set.contains_secret("hunter22 pw"));
    }

    #[test]
    fn a_secret_with_formatting_codes_inside_is_found() {
        // It draws as the secret itself.
        let set = SecretSet::new(["Hunter22-Pw"]);
        for text in [
            "Hun\u{2}ter22-Pw",
            "Hunter22\u{3}04-Pw\u{3}",
            "\u{1D}Hunter\u{1D}\u{1D}22-Pw",
            "Hunt\u{F}er22-Pw",
            "Hunter\u{4}FF00AA22-Pw",
            "x Hu\u{1F}nter22-p\u{16}W",
        ] {
            assert!(set.contains_secret(text), "{text:?}");
        }
        // A colour's digits are not text: what is drawn is not the secret.
        assert!(!SecretSet::new(["pass1234"]).contains_secret("pass\u{3}1234"));
        assert!(!set.contains_secret("Hun\u{2}ter23-Pw"));
    }

    #[test]
    fn extended_keeps_the_old_secrets() {
        let set = SecretSet::new(["hunter22"]).extended(["sesame12"]);
        assert_eq!(set.len(), 2);
        assert!(set.contains_secret("hunter22") && set.contains_secret("sesame12"));
    }
}
