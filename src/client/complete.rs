//! Tab completion of the word before the cursor: `/commands` at the start of
//! a line, `#channels`, and nicks (most recent speaker first, then the rest
//! in the member list's order). A nick at the start of the line gets `: `,
//! anything else a space. Tab again cycles through the other matches.

use super::editor::Editor;

/// What there is to complete from.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// Nicks of the current buffer, most recent speaker first.
    pub nicks: Vec<String>,
    /// Channels of the current network.
    pub channels: Vec<String>,
    /// Command names without `/`.
    pub commands: Vec<String>,
}

/// A completion in progress, so a second Tab takes the next match.
#[derive(Clone, Debug, Default)]
pub struct Completer {
    active: Option<Active>,
}

#[derive(Clone, Debug)]
struct Active {
    /// Byte offset where the completed word starts.
    start: usize,
    /// The matches, in the order Tab offers them.
    matches: Vec<String>,
    /// The one on the line now.
    index: usize,
    /// What follows the word (`: ` or ` `).
    suffix: &'static str,
}

impl Completer {
    /// A completer with nothing in progress.
    pub fn new() -> Completer {
        Completer::default()
    }

    /// Any key but Tab ends the cycle.
    pub fn reset(&mut self) {
        self.active = None;
    }

    /// Completes (or cycles) the word before the cursor. Returns false when
    /// nothing matches, leaving the line unchanged.
    pub fn tab(&mut self, editor: &mut Editor, sources: &Sources) -> bool {
        if let Some(active) = &mut self.active {
            let old = active.matches[active.index].len() + active.suffix.len();
            active.index = (active.index + 1) % active.matches.len();
            let text = editor.text();
            let end = (active.start + old).min(text.len());
            let mut new = String::with_capacity(text.len());
            new.push_str(&text[..active.start]);
            new.push_str(&active.matches[active.index]);
            new.push_str(active.suffix);
            let cursor = new.len();
            new.push_str(&text[end..]);
            editor.set(new, cursor);
            return true;
        }
        let text = editor.text();
        let cursor = editor.cursor();
        let start = text[..cursor].rfind(' ').map_or(0, |i| i + 1);
        let word = &text[start..cursor];
        let (matches, suffix): (Vec<String>, &'static str) = if start == 0 && word.starts_with('/')
        {
            let prefix = word[1..].to_lowercase();
            let found = sources
                .commands
                .iter()
                .filter(|c| c.starts_with(&prefix))
                .map(|c| format!("/{c}"))
                .collect();
            (found, " ")
        } else if word.starts_with(['#', '&']) {
            (starting_with(&sources.channels, word), " ")
        } else if word.is_empty() {
            (Vec::new(), " ")
        } else {
            let suffix = if start == 0 { ": " } else { " " };
            (starting_with(&sources.nicks, word), suffix)
        };
        if matches.is_empty() {
            return false;
        }
        let mut new = String::with_capacity(text.len() + 16);
        new.push_str(&text[..start]);
        new.push_str(&matches[0]);
        new.push_str(suffix);
        let at = new.len();
        new.push_str(&text[cursor..]);
        editor.set(new, at);
        self.active = Some(Active {
            start,
            matches,
            index: 0,
            suffix,
        });
        true
    }
}

/// The candidates starting with `prefix`, ignoring ASCII case, in order,
/// each once.
fn starting_with(candidates: &[String], prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in candidates {
        let matches = c.len() >= prefix.len()
            && c.is_char_boundary(prefix.len())
            && c[..prefix.len()].eq_ignore_ascii_case(prefix);
        if matches && !out.iter().any(|o| o.eq_ignore_ascii_case(c)) {
            out.push(c.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::editor::Edit;

    fn sources() -> Sources {
        Sources {
            nicks: vec!["alice".into(), "Alfred".into(), "bob".into()],
            channels: vec!["#rete".into(), "#rust".into()],
            commands: vec!["join".into(), "msg".into(), "me".into()],
        }
    }

    fn line(text: &str) -> Editor {
        let mut e = Editor::new();
        e.apply(Edit::Insert(text.into()));
        e
    }

    #[test]
    fn nick_at_line_start_gets_a_colon_and_tab_cycles() {
        let mut e = line("al");
        let mut c = Completer::new();
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "alice: ");
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "Alfred: ");
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "alice: ");
    }

    #[test]
    fn nick_mid_line_gets_a_space_and_keeps_the_rest() {
        let mut e = line("hi B there");
        for _ in 0.." there".len() {
            e.apply(Edit::Left);
        }
        let mut c = Completer::new();
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "hi bob  there");
        assert_eq!(e.cursor(), "hi bob ".len());
    }

    #[test]
    fn channels_and_commands() {
        let mut e = line("/join #ru");
        let mut c = Completer::new();
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "/join #rust ");
        let mut e = line("/m");
        let mut c = Completer::new();
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "/msg ");
        assert!(c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "/me ");
    }

    #[test]
    fn no_match_changes_nothing() {
        let mut e = line("zed");
        let mut c = Completer::new();
        assert!(!c.tab(&mut e, &sources()));
        assert_eq!(e.text(), "zed");
        let mut e = line("");
        assert!(!c.tab(&mut e, &sources()));
    }
}
