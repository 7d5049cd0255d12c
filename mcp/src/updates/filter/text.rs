//! A subscription's match: search_messages' matcher in the two modes a
//! subscription takes, kept with the text it was compiled from so the
//! filters can echo it back.

use crate::read::matcher::{Matcher, Mode, RowMatch, Scratch};
use rete_engine::row::Row;

/// How a subscription's match is compared (regex is search-only: a
/// subscription runs on every live row, without a time budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MatchMode {
    /// Case-insensitive literal substring (the default).
    Substring,
    /// IRC glob over each whole field, ignoring case.
    Glob,
}

impl MatchMode {
    /// The mode a match_mode argument names, matched exactly.
    pub(crate) fn parse(name: &str) -> Option<MatchMode> {
        match name {
            "substring" => Some(MatchMode::Substring),
            "glob" => Some(MatchMode::Glob),
            _ => None,
        }
    }

    /// The argument's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        self.search_mode().as_str()
    }

    fn search_mode(self) -> Mode {
        match self {
            MatchMode::Substring => Mode::Substring,
            MatchMode::Glob => Mode::Glob,
        }
    }
}

/// A non-empty match, compiled once with search_messages' matcher so both
/// tools find the same messages.
#[derive(Clone, Debug)]
pub(crate) struct TextMatch {
    text: String,
    mode: MatchMode,
    matcher: Matcher,
}

impl TextMatch {
    /// Compiles `text` in `mode`. Substring and glob always compile; the
    /// error is the matcher's tool error, kept only so this stays total.
    pub(crate) fn new(text: &str, mode: MatchMode) -> Result<TextMatch, &'static str> {
        Ok(TextMatch {
            text: text.to_owned(),
            mode,
            matcher: Matcher::new(mode.search_mode(), text)?,
        })
    }

    /// The match as sent, which the filters echo back.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// How it is compared.
    pub(crate) fn mode(&self) -> MatchMode {
        self.mode
    }

    /// True when the sender or a payload text field matches. Substring and
    /// glob never consult the clock, so the row is always fully tried.
    pub(crate) fn is_in(&self, row: &Row, scratch: &mut Scratch) -> bool {
        let mut never_late = |_| false;
        self.matcher.match_row(row, scratch, &mut never_late) == RowMatch::Match
    }
}

impl PartialEq for TextMatch {
    /// The matcher is compiled from the text and mode, so they decide.
    fn eq(&self, other: &TextMatch) -> bool {
        self.text == other.text && self.mode == other.mode
    }
}
