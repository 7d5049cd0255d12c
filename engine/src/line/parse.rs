//! The zero-copy tokenizer for incoming lines.

use std::borrow::Cow;
use std::fmt;

use super::tags::{find_tag, TagIter};

/// The most parameters one line carries (RFC 1459 / 2812).
///
/// Params are stored inline so parsing never allocates. A line with more
/// words than this folds the excess into the last one: the 15th parameter is
/// the rest of the line (a leading `:` removed, inner spaces kept), exactly as
/// the RFC 2812 grammar reads a 15th parameter that has no `:`.
pub const MAX_PARAMS: usize = 15;

/// Why a line could not be tokenized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing but spaces and a line ending; servers send these as keep-alives
    /// now and then, so callers usually skip them silently.
    #[error("empty line")]
    Empty,
    /// Tags and/or a source but no command word after them.
    #[error("line has no command")]
    MissingCommand,
    /// A `:` source marker with nothing after it; the line cannot be
    /// attributed to anyone, so it is refused rather than guessed at.
    #[error("line has an empty source")]
    EmptySource,
}

/// A parsed IRC line borrowing from the input.
///
/// Every part is a slice of the input; only tag values with escapes allocate,
/// and only when asked for. Cheap to clone (a few words and a fixed array).
#[derive(Clone)]
pub struct Line<'a> {
    raw_tags: Option<&'a str>,
    source: Option<&'a str>,
    command: &'a str,
    params: [&'a str; MAX_PARAMS],
    param_count: u8,
}

impl<'a> Line<'a> {
    /// Parses one line.
    ///
    /// A single trailing `\r\n`, `\n` or `\r` is stripped, so framing code may
    /// hand lines over with or without their ending. Runs of spaces between
    /// parts, and leading or trailing spaces, are tolerated because real
    /// servers send them (see the ircdocs parser tests).
    pub fn parse(input: &'a str) -> Result<Line<'a>, ParseError> {
        let rest = skip_spaces(strip_line_ending(input));
        if rest.is_empty() {
            return Err(ParseError::Empty);
        }
        let (raw_tags, rest) = match rest.strip_prefix('@') {
            Some(after) => {
                let (tags, after) = split_word(after);
                (Some(tags), skip_spaces(after))
            }
            None => (None, rest),
        };
        let (source, rest) = match rest.strip_prefix(':') {
            Some(after) => {
                let (source, after) = split_word(after);
                if source.is_empty() {
                    return Err(ParseError::EmptySource);
                }
                (Some(source), skip_spaces(after))
            }
            None => (None, rest),
        };
        let (command, rest) = split_word(rest);
        if command.is_empty() {
            return Err(ParseError::MissingCommand);
        }
        let mut line = Line {
            raw_tags,
            source,
            command,
            params: [""; MAX_PARAMS],
            param_count: 0,
        };
        line.split_params(rest);
        Ok(line)
    }

    /// Fills the inline parameter array from the text after the command.
    fn split_params(&mut self, mut rest: &'a str) {
        let mut count = 0;
        loop {
            rest = skip_spaces(rest);
            if rest.is_empty() {
                break;
            }
            let last_slot = count == MAX_PARAMS - 1;
            if let Some(trailing) = rest.strip_prefix(':') {
                self.params[count] = trailing;
                count += 1;
                break;
            }
            if last_slot {
                self.params[count] = rest;
                count += 1;
                break;
            }
            let (word, after) = split_word(rest);
            self.params[count] = word;
            count += 1;
            rest = after;
        }
        // `count` never exceeds MAX_PARAMS (15), which fits in a u8.
        self.param_count = count as u8;
    }

    /// The source (prefix) without its `:`, e.g. `nick!user@host` or a server name.
    pub fn source(&self) -> Option<&'a str> {
        self.source
    }

    /// The nick part of the source: everything before the first `!` or `@`.
    ///
    /// For a server source (`irc.example.com`) this is the whole source, which
    /// is what callers comparing against a nick want. May be empty for a
    /// malformed source such as `!user@host`.
    pub fn source_nick(&self) -> Option<&'a str> {
        self.source
            .map(|s| match memchr::memchr2(b'!', b'@', s.as_bytes()) {
                Some(i) => &s[..i],
                None => s,
            })
    }

    /// The command or numeric exactly as sent; compare it case-insensitively.
    pub fn command(&self) -> &'a str {
        self.command
    }

    /// All parameters, the trailing one included without its `:`.
    pub fn params(&self) -> &[&'a str] {
        &self.params[..usize::from(self.param_count)]
    }

    /// The parameter at `i`, if the line has that many.
    pub fn param(&self, i: usize) -> Option<&'a str> {
        self.params().get(i).copied()
    }

    /// Whether the line carries at least one tag item (an empty `@` section does not count).
    pub fn has_tags(&self) -> bool {
        self.raw_tags.is_some_and(|t| !t.is_empty())
    }

    /// The tags in the order sent, values unescaped. Duplicates are all yielded.
    pub fn tags(&self) -> TagIter<'a> {
        TagIter::new(self.raw_tags.unwrap_or(""))
    }

    /// The unescaped value of tag `key`; a later duplicate wins, as the
    /// specification asks. A key sent without a value gives `Some("")`.
    pub fn tag(&self, key: &str) -> Option<Cow<'a, str>> {
        self.raw_tags.and_then(|raw| find_tag(raw, key))
    }

    /// The tag section as sent, without the `@`, for logging or relaying.
    pub fn raw_tags(&self) -> Option<&'a str> {
        self.raw_tags
    }
}

impl fmt::Debug for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Line")
            .field("tags", &self.raw_tags)
            .field("source", &self.source)
            .field("command", &self.command)
            .field("params", &self.params())
            .finish()
    }
}

/// Removes one trailing line ending (`\r\n`, `\n` or `\r`).
fn strip_line_ending(s: &str) -> &str {
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.strip_suffix('\r').unwrap_or(s)
}

/// Skips any number of leading ASCII spaces (not tabs: tab is not a separator).
fn skip_spaces(s: &str) -> &str {
    s.trim_start_matches(' ')
}

/// Splits at the first space: the word before it and the text after it.
fn split_word(s: &str) -> (&str, &str) {
    match memchr::memchr(b' ', s.as_bytes()) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Line<'_> {
        match Line::parse(s) {
            Ok(line) => line,
            Err(e) => panic!("{s:?} failed to parse: {e}"),
        }
    }

    #[test]
    fn plain_privmsg() {
        let l = parse(":nick!user@host PRIVMSG #chan :hello there\r\n");
        assert_eq!(l.source(), Some("nick!user@host"));
        assert_eq!(l.source_nick(), Some("nick"));
        assert_eq!(l.command(), "PRIVMSG");
        assert_eq!(l.params(), ["#chan", "hello there"]);
        assert_eq!(l.param(1), Some("hello there"));
        assert_eq!(l.param(2), None);
        assert!(!l.has_tags());
        assert_eq!(l.tags().count(), 0);
        assert_eq!(l.tag("time"), None);
    }

    #[test]
    fn each_line_ending_is_stripped_once() {
        for input in ["PING x\r\n", "PING x\n", "PING x\r"] {
            assert_eq!(parse(input).params(), ["x"], "{input:?}");
        }
        // Only one ending is removed; a second one stays in the last param.
        assert_eq!(parse("PING :x\n\n").params(), ["x\n"]);
    }

    #[test]
    fn empty_and_blank_lines_are_errors() {
        for input in ["", "\r\n", "\n", "   ", "  \r\n"] {
            assert_eq!(
                Line::parse(input).err(),
                Some(ParseError::Empty),
                "{input:?}"
            );
        }
    }

    #[test]
    fn missing_command_is_an_error() {
        for input in ["@a=b", "@a=b ", ":src", ":src   ", "@a :src \r\n"] {
            assert_eq!(
                Line::parse(input).err(),
                Some(ParseError::MissingCommand),
                "{input:?}"
            );
        }
    }

    #[test]
    fn empty_source_is_an_error() {
        assert_eq!(Line::parse(": PING").err(), Some(ParseError::EmptySource));
        assert_eq!(
            Line::parse("@a : PING").err(),
            Some(ParseError::EmptySource)
        );
    }

    #[test]
    fn leading_and_repeated_spaces_are_tolerated() {
        let l = parse("  :src   MODE   #c  +o   nick  ");
        assert_eq!(l.source(), Some("src"));
        assert_eq!(l.command(), "MODE");
        assert_eq!(l.params(), ["#c", "+o", "nick"]);
    }

    #[test]
    fn trailing_keeps_spaces_and_colons() {
        let l = parse("PRIVMSG #c :  a :b  ");
        assert_eq!(l.params(), ["#c", "  a :b  "]);
        assert_eq!(parse("X :").params(), [""]);
        assert_eq!(parse("X ::").params(), [":"]);
    }

    #[test]
    fn tab_is_not_a_separator() {
        let l = parse("X a\tb c");
        assert_eq!(l.params(), ["a\tb", "c"]);
    }

    #[test]
    fn fifteen_params_fit_exactly() {
        let words: Vec<String> = (1..=15).map(|i| format!("p{i}")).collect();
        let input = format!("X {}", words.join(" "));
        assert_eq!(parse(&input).params(), words.as_slice());
    }

    #[test]
    fn excess_params_fold_into_the_fifteenth() {
        let words: Vec<String> = (1..=18).map(|i| format!("p{i}")).collect();
        let input = format!("X {}", words.join(" "));
        let l = parse(&input);
        assert_eq!(l.params().len(), MAX_PARAMS);
        assert_eq!(l.param(13), Some("p14"));
        assert_eq!(l.param(14), Some("p15 p16 p17 p18"));
        // A ':' on the fifteenth is still a trailing marker.
        let input = format!("X {} :last one", words[..14].join(" "));
        assert_eq!(parse(&input).param(14), Some("last one"));
    }

    #[test]
    fn source_nick_variants() {
        let nick = |s: &'static str| parse(s).source_nick();
        assert_eq!(
            nick(":irc.example.com NOTICE * :hi"),
            Some("irc.example.com")
        );
        assert_eq!(nick(":nick@host X"), Some("nick"));
        assert_eq!(nick(":!user@host X"), Some(""));
        assert_eq!(nick("X"), None);
    }

    #[test]
    fn tags_are_parsed_lazily_and_unescaped() {
        let l = parse("@time=2024-01-01T00:00:00.000Z;msgid=abc;+draft/x=a\\sb;flag :s X");
        assert!(l.has_tags());
        assert_eq!(
            l.raw_tags(),
            Some("time=2024-01-01T00:00:00.000Z;msgid=abc;+draft/x=a\\sb;flag")
        );
        assert_eq!(l.tag("+draft/x").as_deref(), Some("a b"));
        assert_eq!(l.tag("flag").as_deref(), Some(""));
        assert_eq!(l.tag("missing"), None);
        let keys: Vec<_> = l.tags().map(|t| t.key).collect();
        assert_eq!(keys, ["time", "msgid", "+draft/x", "flag"]);
        assert_eq!(l.source(), Some("s"));
    }

    #[test]
    fn empty_tag_section_is_not_tags() {
        let l = parse("@ PING");
        assert!(!l.has_tags());
        assert_eq!(l.raw_tags(), Some(""));
        assert_eq!(l.command(), "PING");
    }

    #[test]
    fn command_only() {
        let l = parse("COMMAND");
        assert_eq!(l.command(), "COMMAND");
        assert!(l.params().is_empty());
        assert_eq!(l.source(), None);
    }

    #[test]
    fn debug_shows_only_used_params() {
        let shown = format!("{:?}", parse("X a"));
        assert!(shown.contains(r#"params: ["a"]"#), "{shown}");
    }
}
