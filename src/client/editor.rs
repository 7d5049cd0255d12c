//! The input line: text, a cursor, the kill buffer (Ctrl-K/U/W, Ctrl-Y) and
//! the history of sent lines (Up/Down). Pure: keys arrive as [`Edit`]s.

/// Lines kept in the history.
const HISTORY: usize = 500;

/// One editing action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Insert text at the cursor.
    Insert(String),
    /// Delete the character before the cursor (Backspace).
    Backspace,
    /// Delete the character under the cursor (Delete).
    Delete,
    /// One character left.
    Left,
    /// One character right.
    Right,
    /// Start of the line (Home, Ctrl-A).
    Home,
    /// End of the line (End, Ctrl-E).
    End,
    /// One word left (Alt-B).
    WordLeft,
    /// One word right (Alt-F).
    WordRight,
    /// Cut from the cursor to the end (Ctrl-K).
    KillToEnd,
    /// Cut from the start to the cursor (Ctrl-U).
    KillToStart,
    /// Cut the word before the cursor (Ctrl-W).
    KillWord,
    /// Paste the last cut (Ctrl-Y).
    Yank,
    /// An older history line (Up).
    HistoryUp,
    /// A newer history line, or back to the draft (Down).
    HistoryDown,
}

/// The input line and its history.
#[derive(Clone, Debug, Default)]
pub struct Editor {
    text: String,
    /// Byte offset, always on a char boundary.
    cursor: usize,
    kill: String,
    history: Vec<String>,
    /// Position while walking the history; `None` while editing the draft.
    browsing: Option<usize>,
    /// The line being typed when the walk started.
    draft: String,
}

impl Editor {
    /// An empty line and history.
    pub fn new() -> Editor {
        Editor::default()
    }

    /// The text typed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor as a byte offset into [`Editor::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text, cursor at the end (completion uses this).
    pub fn set(&mut self, text: String, cursor: usize) {
        self.cursor = cursor.min(text.len());
        while !text.is_char_boundary(self.cursor) {
            self.cursor -= 1;
        }
        self.text = text;
    }

    /// Takes the line for sending: the editor is emptied and a non-empty line
    /// is remembered in the history.
    pub fn take(&mut self) -> String {
        let line = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !line.trim().is_empty() && self.history.last() != Some(&line) {
            self.history.push(line.clone());
            if self.history.len() > HISTORY {
                self.history.remove(0);
            }
        }
        line
    }

    /// Applies one edit.
    pub fn apply(&mut self, edit: Edit) {
        match edit {
            Edit::Insert(s) => {
                self.text.insert_str(self.cursor, &s);
                self.cursor += s.len();
            }
            Edit::Backspace => {
                if let Some(prev) = self.prev_boundary() {
                    self.text.drain(prev..self.cursor);
                    self.cursor = prev;
                }
            }
            Edit::Delete => {
                if let Some(next) = self.next_boundary() {
                    self.text.drain(self.cursor..next);
                }
            }
            Edit::Left => self.cursor = self.prev_boundary().unwrap_or(0),
            Edit::Right => self.cursor = self.next_boundary().unwrap_or(self.text.len()),
            Edit::Home => self.cursor = 0,
            Edit::End => self.cursor = self.text.len(),
            Edit::WordLeft => self.cursor = self.word_start(),
            Edit::WordRight => self.cursor = self.word_end(),
            Edit::KillToEnd => {
                self.kill = self.text.split_off(self.cursor);
            }
            Edit::KillToStart => {
                self.kill = self.text.drain(..self.cursor).collect();
                self.cursor = 0;
            }
            Edit::KillWord => {
                let start = self.word_start();
                self.kill = self.text.drain(start..self.cursor).collect();
                self.cursor = start;
            }
            Edit::Yank => {
                let kill = self.kill.clone();
                self.text.insert_str(self.cursor, &kill);
                self.cursor += kill.len();
            }
            Edit::HistoryUp => self.history_up(),
            Edit::HistoryDown => self.history_down(),
        }
    }

    fn history_up(&mut self) {
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    fn history_down(&mut self) {
        let Some(i) = self.browsing else {
            return;
        };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    /// Start of the word before the cursor (spaces before it skipped).
    fn word_start(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        trimmed.rfind(' ').map_or(0, |i| i + 1)
    }

    /// End of the word after the cursor (spaces before it skipped).
    fn word_end(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skipped = after.len() - after.trim_start_matches(' ').len();
        let rest = &after[skipped..];
        self.cursor + skipped + rest.find(' ').unwrap_or(rest.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Editor {
        let mut e = Editor::new();
        e.apply(Edit::Insert(text.to_owned()));
        e
    }

    #[test]
    fn cursor_moves_and_deletes_by_character() {
        let mut e = typed("héllo");
        e.apply(Edit::Left);
        e.apply(Edit::Backspace);
        assert_eq!((e.text(), e.cursor()), ("hélo", 4));
        e.apply(Edit::Home);
        e.apply(Edit::Delete);
        assert_eq!((e.text(), e.cursor()), ("élo", 0));
        e.apply(Edit::Right);
        assert_eq!(e.cursor(), 2);
        e.apply(Edit::End);
        assert_eq!(e.cursor(), 4);
        e.apply(Edit::Right);
        assert_eq!(e.cursor(), 4);
        e.apply(Edit::Home);
        e.apply(Edit::Left);
        e.apply(Edit::Backspace);
        assert_eq!((e.text(), e.cursor()), ("élo", 0));
    }

    #[test]
    fn words_move_and_cut() {
        let mut e = typed("one two  three");
        e.apply(Edit::WordLeft);
        assert_eq!(e.cursor(), 9);
        e.apply(Edit::WordLeft);
        assert_eq!(e.cursor(), 4);
        e.apply(Edit::WordRight);
        assert_eq!(e.cursor(), 7);
        e.apply(Edit::End);
        e.apply(Edit::KillWord);
        assert_eq!(e.text(), "one two  ");
        e.apply(Edit::Home);
        e.apply(Edit::Yank);
        assert_eq!(e.text(), "threeone two  ");
    }

    #[test]
    fn kill_to_end_and_start_then_yank() {
        let mut e = typed("hello world");
        e.apply(Edit::Home);
        e.apply(Edit::WordRight);
        e.apply(Edit::KillToEnd);
        assert_eq!(e.text(), "hello");
        e.apply(Edit::Yank);
        assert_eq!(e.text(), "hello world");
        e.apply(Edit::Left);
        e.apply(Edit::KillToStart);
        assert_eq!((e.text(), e.cursor()), ("d", 0));
        e.apply(Edit::End);
        e.apply(Edit::Yank);
        assert_eq!(e.text(), "dhello worl");
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut e = Editor::new();
        for line in ["first", "second"] {
            e.apply(Edit::Insert(line.to_owned()));
            assert_eq!(e.take(), line);
        }
        e.apply(Edit::Insert("draft".to_owned()));
        e.apply(Edit::HistoryUp);
        assert_eq!(e.text(), "second");
        e.apply(Edit::HistoryUp);
        assert_eq!(e.text(), "first");
        e.apply(Edit::HistoryUp);
        assert_eq!(e.text(), "first");
        e.apply(Edit::HistoryDown);
        assert_eq!(e.text(), "second");
        e.apply(Edit::HistoryDown);
        assert_eq!((e.text(), e.cursor()), ("draft", 5));
        e.apply(Edit::HistoryDown);
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn blank_and_repeated_lines_are_not_remembered_twice() {
        let mut e = Editor::new();
        for line in ["a", "a", "  "] {
            e.apply(Edit::Insert(line.to_owned()));
            e.take();
        }
        e.apply(Edit::HistoryUp);
        assert_eq!(e.text(), "a");
        e.apply(Edit::HistoryUp);
        assert_eq!(e.text(), "a");
        assert_eq!(e.history.len(), 1);
    }
}
