//! How a message is matched: on its sender nick and its payload's
//! text-bearing fields, never on rendered text, in one of three modes.
//!
//! - substring: ignores case and takes every character literally. Case is
//!   ignored by lowercasing both sides (`str::to_lowercase`, with an ASCII
//!   fast path), so an empty query is in every field.
//! - glob: an IRC glob over each whole field, ignoring case the same way:
//!   `*` any run, `?` one character, no escape.
//! - regex: the contract's dialect is NSRegularExpression (ICU), so the
//!   engine is `fancy-regex`: backreferences, lookahead and lookbehind,
//!   atomic groups and possessive quantifiers are valid, and a pattern that
//!   needs none of them is handed whole to the `regex` crate's engines
//!   (linear time, the speed the README measures). Unanchored, case-sensitive
//!   unless the pattern says `(?i)`, at most 256 UTF-8 bytes. A field over
//!   4,096 UTF-16 units is not tried, and a message that did not match with
//!   such a field was not fully searched (the caller counts it in
//!   regex_skipped). PCRE2 would be the other maintained choice; it means a C
//!   library and FFI, and its Rust binding exposes neither a match limit nor
//!   callouts, so it gives no better control of a match's cost.
//!
//! The time budget inside a match. Neither engine can be interrupted
//! mid-match, so a match's own cost is bounded instead, and the clock is
//! asked before each field a regex is tried on (told the field's length as
//! the work about to be done). A delegated pattern is linear in the field,
//! at most 4,096 UTF-16 units. A backtracking pattern stops after
//! `BACKTRACK_LIMIT` backtracks (a few milliseconds at worst, see the
//! search benchmark); a field it gave up on counts as not fully searched, so
//! the message is reported in regex_skipped rather than silently missed. So
//! no pattern can stall a call: the overrun past the budget is at most one
//! bounded match (plus what the caller's clock lets through between
//! readings; see `search_rows`).

use fancy_regex::{Regex, RegexBuilder};
use memchr::memmem::Finder;
use rete_engine::row::Row;

/// The longest regex accepted, in UTF-8 bytes.
pub(crate) const MAX_REGEX_BYTES: usize = 256;

/// The longest field a regex is tried on, in UTF-16 units.
pub(crate) const MAX_REGEX_FIELD_UNITS: usize = 4_096;

/// The tool error for a regex over [`MAX_REGEX_BYTES`].
pub(crate) const REGEX_TOO_LONG: &str = "regex rejected: pattern too long";

/// The tool error for a regex that does not compile.
pub(crate) const REGEX_INVALID: &str = "regex rejected: invalid pattern";

/// Compiled programs larger than this are refused as invalid, so a short
/// pattern with nested counted repetitions (`((a{100}){100}){100}`) cannot
/// take a lot of memory. 256-byte patterns such as `(?:\w+\W+){20}zzz` or
/// `(?i)(\b\w+\b\W*){20}QQ` (Unicode classes, counted) fit.
const REGEX_SIZE_LIMIT: usize = 16 << 20;

/// The lazy DFA's cache, per delegated expression.
const REGEX_DFA_SIZE_LIMIT: usize = 4 << 20;

/// Backtracks one match of a backtracking pattern may take before it gives
/// up on the field (fancy-regex's own default is 1,000,000).
pub(crate) const BACKTRACK_LIMIT: usize = 100_000;

/// The match mode an argument names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Case-insensitive literal substring.
    Substring,
    /// IRC glob over each whole field.
    Glob,
    /// Regular expression.
    Regex,
}

impl Mode {
    /// The mode named by a `match` argument.
    pub(crate) fn parse(name: &str) -> Option<Mode> {
        match name {
            "substring" => Some(Mode::Substring),
            "glob" => Some(Mode::Glob),
            "regex" => Some(Mode::Regex),
            _ => None,
        }
    }

    /// The argument's spelling, which the cursor binds.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Substring => "substring",
            Mode::Glob => "glob",
            Mode::Regex => "regex",
        }
    }
}

/// A compiled query.
#[derive(Clone, Debug)]
pub enum Matcher {
    /// The lowercased needle.
    Substring(Box<Substring>),
    /// The lowercased pattern.
    Glob(Glob),
    /// The compiled expression.
    Regex(Regex),
}

/// What matching one message found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowMatch {
    /// A field matched.
    Match,
    /// No field matched, and every field was tried.
    NoMatch,
    /// No field matched, but a field was too long to try (regex only).
    NotFullySearched,
    /// The time budget ran out before every field was tried.
    OutOfTime,
}

impl Matcher {
    /// Compiles `query` in `mode`; the error is the contract's tool error.
    pub fn new(mode: Mode, query: &str) -> Result<Matcher, &'static str> {
        match mode {
            Mode::Substring => Ok(Matcher::Substring(Box::new(Substring::new(query)))),
            Mode::Glob => Ok(Matcher::Glob(Glob::new(query))),
            Mode::Regex => compile_regex(query).map(Matcher::Regex),
        }
    }

    /// Matches one row. `out_of_time` is asked before each field a regex is
    /// tried on, with the field's length in bytes (substring and glob fields
    /// are cheap and never ask).
    pub fn match_row(
        &self,
        row: &Row,
        scratch: &mut Scratch,
        out_of_time: &mut dyn FnMut(usize) -> bool,
    ) -> RowMatch {
        let mut found = false;
        let mut skipped = false;
        let mut late = false;
        let mut try_field = |field: &str| {
            if found || late {
                return;
            }
            match self {
                Matcher::Substring(needle) => {
                    found = needle.is_in(field, scratch);
                }
                Matcher::Glob(glob) => {
                    found = glob.matches_lowered(scratch.lower(field));
                }
                Matcher::Regex(re) => {
                    if utf16_len_over(field, MAX_REGEX_FIELD_UNITS) {
                        skipped = true;
                    } else if out_of_time(field.len()) {
                        late = true;
                    } else {
                        match re.is_match(field) {
                            Ok(hit) => found = hit,
                            // Past the backtrack limit: not fully searched.
                            Err(_) => skipped = true,
                        }
                    }
                }
            }
        };
        try_field(&row.from);
        row.payload.for_each_text(&mut try_field);
        if found {
            RowMatch::Match
        } else if late {
            RowMatch::OutOfTime
        } else if skipped {
            RowMatch::NotFullySearched
        } else {
            RowMatch::NoMatch
        }
    }
}

fn compile_regex(pattern: &str) -> Result<Regex, &'static str> {
    if pattern.len() > MAX_REGEX_BYTES {
        return Err(REGEX_TOO_LONG);
    }
    RegexBuilder::new(pattern)
        .backtrack_limit(BACKTRACK_LIMIT)
        .delegate_size_limit(REGEX_SIZE_LIMIT)
        .delegate_dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map_err(|_| REGEX_INVALID)
}

/// True when `s` is longer than `max` UTF-16 units. A UTF-8 string never
/// has more UTF-16 units than bytes, so short strings are not counted.
fn utf16_len_over(s: &str, max: usize) -> bool {
    s.len() > max && s.encode_utf16().count() > max
}

/// A case-insensitive literal: the needle lowercased, found in the field
/// lowercased.
///
/// Lowercasing every field is most of the cost, so an ASCII field is first
/// screened: lowercasing ASCII yields ASCII only, so a needle with other
/// characters is never in it, and the needle's rarest byte (in either case)
/// must occur in it. Non-ASCII fields always take the full path, since
/// lowercasing them can yield ASCII (KELVIN SIGN becomes `k`).
#[derive(Clone, Debug)]
pub struct Substring {
    finder: Finder<'static>,
    ascii: bool,
    rare: Option<(u8, u8)>,
}

impl Substring {
    /// The needle `query`, lowercased.
    pub(crate) fn new(query: &str) -> Substring {
        let lower = query.to_lowercase();
        Substring {
            ascii: lower.is_ascii(),
            rare: rarest_byte(lower.as_bytes()),
            finder: Finder::new(lower.as_bytes()).into_owned(),
        }
    }

    /// True when `field` contains the needle, ignoring case (an empty
    /// needle is in everything).
    pub(crate) fn is_in(&self, field: &str, scratch: &mut Scratch) -> bool {
        if self.finder.needle().is_empty() {
            return true;
        }
        if field.is_ascii() {
            if !self.ascii {
                return false;
            }
            if let Some((a, b)) = self.rare {
                if memchr::memchr2(a, b, field.as_bytes()).is_none() {
                    return false;
                }
            }
        }
        self.finder.find(scratch.lower(field)).is_some()
    }
}

/// The byte of an ASCII lowercased needle least likely in chat text, with
/// its upper-case twin (itself when it has none). Letters are ranked by
/// their frequency in English; any other byte but a space counts as rarer
/// than every letter.
fn rarest_byte(needle: &[u8]) -> Option<(u8, u8)> {
    const BY_FREQUENCY: &[u8] = b" etaoinshrdlcumwfgypbvkjxqz";
    let rarity = |b: u8| {
        BY_FREQUENCY
            .iter()
            .position(|&x| x == b)
            .unwrap_or(BY_FREQUENCY.len())
    };
    if !needle.is_ascii() {
        return None;
    }
    let b = *needle.iter().max_by_key(|&&b| rarity(b))?;
    Some((b, b.to_ascii_uppercase()))
}

/// A reusable buffer for lowercased fields, so matching allocates only for
/// non-ASCII text.
#[derive(Debug, Default)]
pub struct Scratch {
    bytes: Vec<u8>,
    text: String,
}

impl Scratch {
    /// `field` lowercased, as bytes of UTF-8.
    fn lower(&mut self, field: &str) -> &[u8] {
        if field.is_ascii() {
            self.bytes.clear();
            self.bytes.extend_from_slice(field.as_bytes());
            self.bytes.make_ascii_lowercase();
            &self.bytes
        } else {
            self.text = field.to_lowercase();
            self.text.as_bytes()
        }
    }
}

/// An IRC glob, lowercased: `*` any run, `?` one character, no escape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    tokens: Vec<Token>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Star,
    One,
    Char(char),
}

impl Glob {
    /// Parses a pattern, ignoring case by lowercasing it.
    pub(crate) fn new(pattern: &str) -> Glob {
        let mut tokens = Vec::new();
        for c in pattern.to_lowercase().chars() {
            match c {
                // Runs of stars mean one star; collapsing them keeps the
                // backtracking below from revisiting the same positions.
                '*' if tokens.last() == Some(&Token::Star) => {}
                '*' => tokens.push(Token::Star),
                '?' => tokens.push(Token::One),
                c => tokens.push(Token::Char(c)),
            }
        }
        Glob { tokens }
    }

    /// True when the whole of `text` matches, ignoring case.
    pub(crate) fn matches(&self, text: &str) -> bool {
        self.matches_lowered(Scratch::default().lower(text))
    }

    /// True when the whole of `text` (already lowercased UTF-8) matches.
    ///
    /// The usual wildcard walk: on a mismatch, go back to the last star and
    /// let it take one more character. That is at most O(pattern × text)
    /// and linear for patterns with one star.
    fn matches_lowered(&self, text: &[u8]) -> bool {
        // Lowered text is valid UTF-8 (ASCII-lowered UTF-8 or a String).
        let Ok(text) = std::str::from_utf8(text) else {
            return false;
        };
        let (mut p, mut t) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            let c = next_char(text, t);
            match self.tokens.get(p) {
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(Token::One) => {
                    p += 1;
                    t += c.map_or(1, char::len_utf8);
                    continue;
                }
                Some(Token::Char(want)) if Some(*want) == c => {
                    p += 1;
                    t += want.len_utf8();
                    continue;
                }
                _ => {}
            }
            match star {
                Some((sp, st)) => {
                    let step = next_char(text, st).map_or(1, char::len_utf8);
                    star = Some((sp, st + step));
                    p = sp + 1;
                    t = st + step;
                }
                None => return false,
            }
        }
        self.tokens[p..].iter().all(|t| *t == Token::Star)
    }
}

fn next_char(text: &str, at: usize) -> Option<char> {
    text.get(at..).and_then(|s| s.chars().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::Payload;

    fn row(from: &str, payload: Payload) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(0),
            msgid: None,
            from: from.into(),
            history: false,
            payload,
        }
    }

    fn say(text: &str) -> Row {
        row("alice", Payload::Privmsg { text: text.into() })
    }

    fn run(mode: Mode, query: &str, r: &Row) -> RowMatch {
        let m = Matcher::new(mode, query).unwrap();
        m.match_row(r, &mut Scratch::default(), &mut |_| false)
    }

    fn hit(mode: Mode, query: &str, r: &Row) -> bool {
        run(mode, query, r) == RowMatch::Match
    }

    #[test]
    fn substring_ignores_case_and_is_literal() {
        assert!(hit(Mode::Substring, "HELLO", &say("well hello there")));
        assert!(hit(Mode::Substring, "hello", &say("HeLLo")));
        assert!(!hit(Mode::Substring, "hello", &say("help")));
        assert!(hit(Mode::Substring, "a.c", &say("xa.cx")));
        assert!(!hit(Mode::Substring, "a.c", &say("abc")));
        assert!(hit(Mode::Substring, "*", &say("2*3")));
        assert!(!hit(Mode::Substring, "*", &say("23")));
        assert!(hit(Mode::Substring, "ÉCOLE", &say("à l'école")));
        assert!(hit(Mode::Substring, "école", &say("À L'ÉCOLE")));
    }

    #[test]
    fn the_ascii_screen_never_hides_a_match() {
        assert_eq!(rarest_byte(b"kumquat"), Some((b'q', b'Q')));
        assert_eq!(rarest_byte(b"a b"), Some((b'b', b'B')));
        assert_eq!(rarest_byte(b"e-"), Some((b'-', b'-')));
        assert_eq!(rarest_byte("é".as_bytes()), None);
        assert!(hit(Mode::Substring, "QUA", &say("aQUAb")));
        assert!(hit(Mode::Substring, "qua", &say("AQUAB")));
        assert!(!hit(Mode::Substring, "qua", &say("aua")));
        // A non-ASCII needle is never in an ASCII field, but is in others.
        assert!(!hit(Mode::Substring, "é", &say("e")));
        assert!(hit(Mode::Substring, "É", &say("café")));
        // Lowercasing non-ASCII text can make ASCII: KELVIN SIGN is k.
        assert!(hit(Mode::Substring, "kelvin", &say("\u{212A}ELVIN")));
    }

    #[test]
    fn empty_substring_matches_every_message() {
        assert!(hit(Mode::Substring, "", &say("")));
        assert!(hit(
            Mode::Substring,
            "",
            &row(
                "",
                Payload::UserJoined {
                    account: None,
                    userhost: None
                }
            )
        ));
    }

    #[test]
    fn the_sender_and_every_text_field_are_searched() {
        assert!(hit(Mode::Substring, "ALI", &say("nothing")));
        let kick = row(
            "op",
            Payload::UserKicked {
                victim: "bob".into(),
                reason: Some("spam".into()),
            },
        );
        assert!(hit(Mode::Substring, "bob", &kick));
        assert!(hit(Mode::Substring, "spam", &kick));
        let nick = row(
            "old",
            Payload::NickChanged {
                new_nick: "newer".into(),
            },
        );
        assert!(hit(Mode::Glob, "NEWER", &nick));
        let mode = row(
            "op",
            Payload::ModeChanged {
                modes: "+o bob".into(),
            },
        );
        assert!(hit(Mode::Substring, "+o", &mode));
        // A userhost is not a text-bearing field.
        let join = row(
            "bob",
            Payload::UserJoined {
                account: None,
                userhost: Some("u@secret.host".into()),
            },
        );
        assert!(!hit(Mode::Substring, "secret.host", &join));
    }

    #[test]
    fn globs_match_whole_fields() {
        assert!(hit(Mode::Glob, "hello", &say("HELLO")));
        assert!(!hit(Mode::Glob, "hello", &say("hello there")));
        assert!(hit(Mode::Glob, "*hello*", &say("oh hello there")));
        assert!(hit(Mode::Glob, "h?llo", &say("hallo")));
        assert!(!hit(Mode::Glob, "h?llo", &say("hllo")));
        assert!(hit(Mode::Glob, "*", &say("")));
        assert!(hit(Mode::Glob, "", &say("")));
        // An empty glob matches only an empty field (here the sender "").
        assert!(!hit(Mode::Glob, "", &say("x")));
        assert!(hit(
            Mode::Glob,
            "",
            &row("", Payload::Privmsg { text: "x".into() })
        ));
    }

    #[test]
    fn glob_details() {
        let g = |p: &str, t: &str| Glob::new(p).matches(t);
        assert!(g("a*b*c", "aXXbYYc"));
        assert!(g("a*b*c", "abc"));
        assert!(!g("a*b*c", "abcd"));
        assert!(g("a*b*c*", "abcd"));
        assert!(g("**a**", "xay"));
        assert!(g("*?", "x"));
        assert!(!g("*?", ""));
        assert!(g("?é?", "aÉb"), "? is one character, not one byte");
        assert!(!g("??", "é"));
        assert!(g("\\*", "\\anything"), "no escape: backslash is literal");
        assert!(!g("\\*", "*x"));
        assert!(g("nick!*@*.example", "Nick!~u@host.EXAMPLE"));
        assert!(!g("nick!*@*.example", "nick!~u@host.example.org"));
        // Many stars against a long non-match stays fast.
        let long = "a".repeat(5000);
        assert!(!g("*a*a*a*a*a*a*b", &long));
    }

    #[test]
    fn regexes_are_unanchored_and_case_sensitive_by_default() {
        assert!(hit(Mode::Regex, "l+o", &say("hello")));
        assert!(!hit(Mode::Regex, "HELLO", &say("hello")));
        assert!(hit(Mode::Regex, "(?i)HELLO", &say("oh hello")));
        assert!(hit(Mode::Regex, "^ali", &say("x")), "the sender is a field");
        assert!(!hit(Mode::Regex, "^hello$", &say("hello there")));
    }

    #[test]
    fn regex_rejections() {
        assert_eq!(
            Matcher::new(Mode::Regex, &"a".repeat(257)).err(),
            Some(REGEX_TOO_LONG)
        );
        assert!(Matcher::new(Mode::Regex, &"a".repeat(256)).is_ok());
        // 256 bytes are counted in UTF-8: 86 three-byte characters are 258.
        assert_eq!(
            Matcher::new(Mode::Regex, &"€".repeat(86)).err(),
            Some(REGEX_TOO_LONG)
        );
        assert_eq!(Matcher::new(Mode::Regex, "(").err(), Some(REGEX_INVALID));
        assert_eq!(
            Matcher::new(Mode::Regex, "(((a{100}){100}){100})").err(),
            Some(REGEX_INVALID),
            "a program past the size limit is refused"
        );
    }

    #[test]
    fn the_icu_syntax_is_accepted() {
        // Backreferences, lookaround, atomic groups, possessive quantifiers.
        assert!(hit(Mode::Regex, "(a)\\1", &say("xaay")));
        assert!(!hit(Mode::Regex, "(a)\\1", &say("xay")));
        assert!(hit(Mode::Regex, "hello(?= there)", &say("hello there")));
        assert!(!hit(Mode::Regex, "hello(?= there)", &say("hello you")));
        assert!(hit(Mode::Regex, "(?=hello)", &say("oh hello")));
        assert!(hit(Mode::Regex, "(?<!x)abc", &say("yabc")));
        assert!(!hit(Mode::Regex, "(?<!x)abc", &say("xabc")));
        assert!(hit(Mode::Regex, "(?<=x)abc", &say("xabc")));
        assert!(hit(Mode::Regex, "(?>a+)b", &say("aab")));
        assert!(
            !hit(Mode::Regex, "(?>a+)a", &say("aaa")),
            "atomic: no giving back"
        );
        assert!(
            !hit(Mode::Regex, "a++a", &say("aaa")),
            "possessive: no giving back"
        );
        assert!(hit(Mode::Regex, "a*+b", &say("aab")));
        // Valid 256-byte patterns that a compiled-size limit used to refuse.
        let words = "w ".repeat(20);
        assert!(hit(
            Mode::Regex,
            "(?:\\w+\\W+){20}zzz",
            &say(&format!("{words}zzz"))
        ));
        assert!(hit(
            Mode::Regex,
            "(?i)(\\b\\w+\\b\\W*){20}QQ",
            &say(&format!("{words}qq"))
        ));
        assert!(!hit(
            Mode::Regex,
            "(?i)(\\b\\w+\\b\\W*){20}QQ",
            &say("w w qq")
        ));
    }

    #[test]
    fn a_catastrophic_backtrack_gives_up_on_the_field() {
        // Exponential for a backtracking engine: the backreference keeps it
        // off the linear engines. It stops at the backtrack limit; the message
        // was not fully searched.
        let field = "a".repeat(4_000);
        let r = run(Mode::Regex, "^(a|aa)+\\1c", &say(&field));
        assert_eq!(r, RowMatch::NotFullySearched);
        // A match in another field still counts.
        let m = Matcher::new(Mode::Regex, "^(a|aa)+\\1c|^ali").unwrap();
        let mut never = |_| false;
        assert_eq!(
            m.match_row(&say(&field), &mut Scratch::default(), &mut never),
            RowMatch::Match
        );
    }

    #[test]
    fn long_fields_are_not_tried_by_a_regex() {
        let long = row(
            "",
            Payload::Privmsg {
                text: "x".repeat(4097).into(),
            },
        );
        assert_eq!(run(Mode::Regex, "x", &long), RowMatch::NotFullySearched);
        let fits = row(
            "",
            Payload::Privmsg {
                text: "x".repeat(4096).into(),
            },
        );
        assert_eq!(run(Mode::Regex, "x", &fits), RowMatch::Match);
    }

    #[test]
    fn utf16_units_decide_what_is_too_long() {
        // 4,096 three-byte characters are 4,096 UTF-16 units: tried.
        let at_cap = row(
            "",
            Payload::Privmsg {
                text: "€".repeat(4096).into(),
            },
        );
        assert_eq!(run(Mode::Regex, "€", &at_cap), RowMatch::Match);
        // 2,049 four-byte characters are 4,098 units: not tried.
        let over = row(
            "",
            Payload::Privmsg {
                text: "😀".repeat(2049).into(),
            },
        );
        assert_eq!(run(Mode::Regex, "😀", &over), RowMatch::NotFullySearched);
        // Substring and glob have no cap.
        assert_eq!(run(Mode::Substring, "😀", &over), RowMatch::Match);
        // A match in another field still counts.
        let mixed = row(
            "smiley",
            Payload::Privmsg {
                text: "😀".repeat(2049).into(),
            },
        );
        assert_eq!(run(Mode::Regex, "smi", &mixed), RowMatch::Match);
        assert_eq!(run(Mode::Regex, "nope", &mixed), RowMatch::NotFullySearched);
    }

    #[test]
    fn the_clock_is_asked_before_each_regex_field() {
        let m = Matcher::new(Mode::Regex, "zzz").unwrap();
        let kick = row(
            "op",
            Payload::UserKicked {
                victim: "bob".into(),
                reason: Some("zzz".into()),
            },
        );
        let mut asked = Vec::new();
        let r = m.match_row(&kick, &mut Scratch::default(), &mut |len| {
            asked.push(len);
            asked.len() > 2
        });
        // from and victim were tried; the reason was not. Each ask carries
        // the field's length.
        assert_eq!(r, RowMatch::OutOfTime);
        assert_eq!(asked, vec![2, 3, 3]);
        let mut never = |_| false;
        assert_eq!(
            m.match_row(&kick, &mut Scratch::default(), &mut never),
            RowMatch::Match
        );
    }

    #[test]
    fn modes_parse_exactly() {
        assert_eq!(Mode::parse("glob"), Some(Mode::Glob));
        assert_eq!(Mode::parse("Glob"), None);
        assert_eq!(Mode::parse(""), None);
        for m in [Mode::Substring, Mode::Glob, Mode::Regex] {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
    }
}
