//! What the full screen remembers per buffer between frames: activity,
//! scroll position and the unread marker; and the input line's state.

use super::super::buffers::Key;
use reterm::client::activity::{raise, Level};
use reterm::client::complete::Completer;
use reterm::client::editor::Editor;
use reterm::tui::keys::Keys;
use std::collections::HashMap;

/// Per-buffer view state.
#[derive(Clone, Debug, Default)]
pub struct BufferUi {
    /// The most important thing that happened since it was last looked at.
    pub level: Level,
    /// Rows hidden below the screen (0: following the end).
    pub scroll: usize,
    /// The last row seen before the person left it.
    pub unread_after: Option<u64>,
}

/// The screen's state.
#[derive(Default)]
pub struct Ui {
    buffers: HashMap<Key, BufferUi>,
    /// The input line.
    pub editor: Editor,
    /// The keys as a sequence (Esc then a digit).
    pub keys: Keys,
    /// Nicks scrolled past at the top of the nick list (F11, F12).
    pub nick_scroll: usize,
    /// Tab completion in progress.
    pub completer: Completer,
    /// A multi-line paste waiting for Enter or Esc.
    pub paste: Option<Vec<String>>,
    /// The agent's line the prompt row showed at the last frame: what
    /// Ctrl-G and Ctrl-X answer.
    pub prompted: Option<u64>,
    /// reterm's answer to the last command, shown under the rows of a
    /// network buffer (it is also in reterm's buffer).
    pub answer: Vec<String>,
    /// Screen lines of the body at the last frame (a page for PgUp/PgDn).
    pub page: usize,
    /// The last frame showed the top of this buffer after the person
    /// scrolled up: the loop asks for older rows (a ReteCloud buffer's).
    pub at_top: Option<super::super::Current>,
}

impl Ui {
    /// The state of `key`'s buffer.
    pub fn of(&mut self, key: &Key) -> &mut BufferUi {
        self.buffers.entry(key.clone()).or_default()
    }

    /// The state of `key`'s buffer, if any was kept.
    pub fn get(&self, key: &Key) -> Option<&BufferUi> {
        self.buffers.get(key)
    }

    /// A row arrived in `key` (not the focused buffer).
    pub fn raise(&mut self, key: &Key, level: Level) {
        raise(&mut self.of(key).level, level);
    }

    /// The person left `key`, whose last row is `last_seq`.
    pub fn left(&mut self, key: &Key, last_seq: u64) {
        self.of(key).unread_after = Some(last_seq);
    }

    /// The person looks at `key` now.
    pub fn entered(&mut self, key: &Key) {
        self.of(key).level = Level::None;
        self.answer.clear();
    }

    /// Buffers with activity, and their levels.
    pub fn levels(&self) -> impl Iterator<Item = (&Key, Level)> {
        self.buffers
            .iter()
            .filter(|(_, b)| b.level > Level::None)
            .map(|(k, b)| (k, b.level))
    }
}
