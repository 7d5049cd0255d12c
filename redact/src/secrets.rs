//! The way-out scan: the exact secret values a session holds, looked for in
//! everything the control surface is about to return.
//!
//! A secret is found in any ASCII case (a case-folded password is one guess
//! away from the password) and with mIRC formatting codes or default-ignorable
//! characters (U+200B, U+00AD, …) inside it: text is also searched as drawn,
//! those removed, and so is each secret, so neither form slips past.
//!
//! The set is built once per change of secrets (one automaton for all of
//! them), so each scan is a single pass over the text whatever the number of
//! secrets. It never gives a secret back: there is no accessor, and Debug
//! prints only how many there are. It can mask them in a text
//! ([`SecretSet::mask`], for what the terminal shows) and learn them from a
//! line being sent ([`SecretSet::with_credentials_of`]), so a holder never
//! reads one.

use crate::drawn::{drawn, hides_anything, DrawnMap};
use crate::MASK;
use aho_corasick::{AhoCorasick, MatchKind};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Secrets shorter than this are not looked for: a two-byte channel key
/// would withhold nearly everything.
const MIN_SECRET_BYTES: usize = 4;

/// The exact secret values one session holds, ready to scan for. Cloning is
/// cheap (the values and the automaton are shared).
#[derive(Clone, Default)]
pub struct SecretSet {
    /// The secrets of at least four bytes as given, sorted and
    /// deduplicated: what a set is extended from.
    secrets: Arc<[Box<str>]>,
    /// What is looked for: each secret and, where it differs, the secret as
    /// drawn (when that is four bytes or more), sorted and deduplicated.
    forms: Arc<[Box<str>]>,
    /// None when there is nothing to look for (or the automaton could not be
    /// built, which for plain literals only a size limit could cause).
    matcher: Option<AhoCorasick>,
    /// The length of the shortest form: a shorter text (a nick, a host
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
        let mut forms: Vec<Box<str>> = kept.clone();
        forms.extend(kept.iter().filter_map(|s| match drawn(s) {
            Cow::Owned(d) if d.len() >= MIN_SECRET_BYTES => Some(d.into()),
            _ => None,
        }));
        forms.sort_unstable();
        forms.dedup();
        let matcher = if forms.is_empty() {
            None
        } else {
            // Only whether a secret occurs matters, not which: leftmost
            // semantics let the crate use its SIMD (Teddy) searcher, about
            // three times faster than the standard automaton here.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .ascii_case_insensitive(true)
                .build(forms.iter().map(|s| s.as_bytes()))
                .ok()
        };
        let shortest = forms.iter().map(|s| s.len()).min().unwrap_or(0);
        SecretSet {
            secrets: kept.into(),
            forms: forms.into(),
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

    /// This set plus the credentials `line` gives away when Rete sends it:
    /// the password of a PASS or an OPER, and of a service login in any
    /// spelling the masking rules know (see `mask_line`). None when the line
    /// gives none this set lacks, so a holder rebuilds only when it learns
    /// something. The credential is learned as written (and so also as
    /// drawn), never handed to the caller.
    pub fn with_credentials_of(&self, line: &str) -> Option<SecretSet> {
        let new: Vec<String> = crate::line::sent_credentials(line)
            .into_iter()
            .filter(|c| c.len() >= MIN_SECRET_BYTES)
            .filter(|c| self.secrets.binary_search_by(|s| (**s).cmp(c)).is_err())
            .collect();
        if new.is_empty() {
            return None;
        }
        Some(self.extended(new))
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
    /// written or as drawn (mIRC formatting codes and default-ignorable
    /// characters removed).
    pub fn contains_secret(&self, text: &str) -> bool {
        if text.len() < self.shortest {
            return false;
        }
        if self.finds(text) {
            return true;
        }
        match drawn(text) {
            Cow::Owned(d) => self.finds(&d),
            Cow::Borrowed(_) => false,
        }
    }

    fn finds(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            // Only a failed build leaves secrets without a matcher: search
            // plainly rather than let everything through.
            None => {
                let folded = text.to_ascii_lowercase();
                self.forms
                    .iter()
                    .any(|s| folded.contains(&s.to_ascii_lowercase()))
            }
        }
    }

    /// `text` with every secret in it shown as `********`: each occurrence
    /// [`contains_secret`](Self::contains_secret) would find, in any case,
    /// as written or as drawn (a secret with a formatting code inside is
    /// masked with the code). Borrowed when it holds none. For what a
    /// person's own screen shows; the control surface withholds instead.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.contains_secret(text) {
            return Cow::Borrowed(text);
        }
        let mut ranges = occurrences(&self.forms, text);
        if hides_anything(text) {
            let map = DrawnMap::new(text);
            ranges.extend(
                occurrences(&self.forms, &map.text)
                    .into_iter()
                    .map(|(s, e)| map.original(s, e)),
            );
        }
        ranges.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in ranges {
            if end <= at {
                continue;
            }
            if start >= at {
                out.push_str(&text[at..start]);
                out.push_str(MASK);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// For a raw line stored cut (ending `…[+N bytes]`), given the part that
    /// was kept: true when it ends with four or more bytes of a secret's
    /// start, so the cut fell inside a secret.
    pub fn cut_ends_in_secret(&self, kept: &str) -> bool {
        let kept = kept.as_bytes();
        self.forms.iter().any(|s| {
            let s = s.as_bytes();
            (MIN_SECRET_BYTES..=s.len().min(kept.len()))
                .any(|n| kept[kept.len() - n..].eq_ignore_ascii_case(&s[..n]))
        })
    }
}

/// The byte ranges of `text` where one of `forms` occurs, in any ASCII case
/// (each form's occurrences found left to right, without overlap). ASCII
/// case folding keeps every byte where it was, and a form is whole UTF-8, so
/// each range lies on char boundaries.
fn occurrences(forms: &[Box<str>], text: &str) -> Vec<(usize, usize)> {
    let folded = text.to_ascii_lowercase();
    let mut out = Vec::new();
    for form in forms {
        let form = form.to_ascii_lowercase();
        out.extend(
            folded
                .match_indices(form.as_str())
                .map(|(at, m)| (at, at + m.len())),
        );
    }
    out
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
    fn a_secret_split_by_an_invisible_character_is_found() {
        let set = SecretSet::new(["Hunter22-Pw"]);
        for text in [
            "Hun\u{200B}ter22-Pw",
            "x Hunter\u{AD}22-Pw",
            "H\u{2060}unter22\u{FEFF}-Pw",
            "Hunter22-\u{E0041}Pw",
            "Hu\u{200D}n\u{2}ter22-p\u{180E}W",
        ] {
            assert!(set.contains_secret(text), "{text:?}");
        }
        // A secret held with one inside is found without it, too.
        assert!(SecretSet::new(["pass\u{200B}word"]).contains_secret("a password"));
        assert!(
            !set.contains_secret("Hunter\u{A0}22-Pw"),
            "NBSP draws a space"
        );
    }

    #[test]
    fn mask_hides_every_occurrence_as_written_and_as_drawn() {
        let set = SecretSet::new(["hunter22", "sesame12"]);
        assert_eq!(
            set.mask("identified with HUNTER22, then sesame12."),
            "identified with ********, then ********."
        );
        assert_eq!(set.mask("pw: hun\u{2}ter\u{200B}22!"), "pw: ********!");
        assert_eq!(set.mask("hunter22hunter22"), "****************");
        assert!(matches!(set.mask("nothing here"), Cow::Borrowed(_)));
        let masked = set.mask("a \u{3}04hunter22\u{3} b");
        assert!(!set.contains_secret(&masked), "{masked:?}");
    }

    #[test]
    fn a_sent_credential_is_learned_once() {
        let set = SecretSet::new(["server-pw"]);
        assert!(set.with_credentials_of("PRIVMSG #c :hello").is_none());
        assert!(set.with_credentials_of("PASS server-pw").is_none(), "held");
        assert!(set.with_credentials_of("OPER me abc").is_none(), "short");
        let more = set
            .with_credentials_of("PRIVMSG #rete,NickServ :IDENTIFY nspw-1234")
            .unwrap();
        assert_eq!(more.len(), 2);
        assert!(more.contains_secret("you are now identified with nspw-1234"));
        assert!(more.with_credentials_of("NS ID nspw-1234").is_none());
        assert!(
            !set.contains_secret("nspw-1234"),
            "the old set is unchanged"
        );
    }

    #[test]
    fn extended_keeps_the_old_secrets() {
        let set = SecretSet::new(["hunter22"]).extended(["sesame12"]);
        assert_eq!(set.len(), 2);
        assert!(set.contains_secret("hunter22") && set.contains_secret("sesame12"));
    }
}
