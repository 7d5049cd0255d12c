//! Key bindings: a key press becomes an [`Action`], or nothing. A key that
//! is not bound does nothing, so an escape sequence can never reach a
//! channel as text. The formatting keys are irssi's and WeeChat's: Ctrl-B
//! bold, Ctrl-C colour, Ctrl-_ underline, Ctrl-V reverse, Ctrl-O reset each
//! type their mIRC code into the input line.

use crate::client::editor::Edit;
use crate::client::switch::alt_key_buffer;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What a key asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Change the input line.
    Edit(Edit),
    /// Send the input line (Enter).
    Submit,
    /// Complete the word before the cursor (Tab).
    Complete,
    /// Switch to buffer N (Alt+1…0, Alt+Q…O).
    Buffer(usize),
    /// Next buffer (Ctrl-N).
    Next,
    /// Previous buffer (Ctrl-P).
    Previous,
    /// The buffer with the most important activity (Alt+A).
    MostActive,
    /// Scroll back a page (PgUp).
    PageUp,
    /// Scroll forward a page (PgDn).
    PageDown,
    /// The oldest row of the buffer (Ctrl-Home or Alt-Home).
    Top,
    /// Back to the end (Ctrl-End or Alt-End).
    Bottom,
    /// Scroll the nick list up (F11, as in WeeChat).
    NicklistUp,
    /// Scroll the nick list down (F12).
    NicklistDown,
    /// Show or hide the nick list (Alt+N).
    ToggleNicklist,
    /// Redraw everything (Ctrl-L).
    Redraw,
    /// Answer "no" to a question (Esc).
    Cancel,
    /// Send the agent's line the prompt row shows (Ctrl-G: "go"). A Ctrl
    /// key, so ordinary typing, a paste or an Enter meant for the input
    /// line can never answer for the person.
    Allow,
    /// Refuse the agent's line the prompt row shows (Ctrl-X).
    Deny,
}

/// mIRC bold, typed by Ctrl-B.
pub const BOLD: char = '\u{02}';
/// mIRC colour (digits follow), typed by Ctrl-C.
pub const COLOUR: char = '\u{03}';
/// mIRC reset, typed by Ctrl-O.
pub const RESET: char = '\u{0F}';
/// mIRC reverse, typed by Ctrl-V.
pub const REVERSE: char = '\u{16}';
/// mIRC underline, typed by Ctrl-_.
pub const UNDERLINE: char = '\u{1F}';

/// Keys read one after another, for irssi's meta prefix: Esc then a digit
/// is Alt+digit (a terminal without an Alt key, or a person used to it).
/// The Esc itself still does what Esc does.
#[derive(Debug, Default)]
pub struct Keys {
    /// The last key pressed was a plain Esc.
    after_esc: bool,
}

impl Keys {
    /// The action bound to `key`, the keys before it taken into account.
    pub fn action(&mut self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let after_esc = std::mem::take(&mut self.after_esc);
        match key.code {
            KeyCode::Esc if key.modifiers.is_empty() => self.after_esc = true,
            KeyCode::Char(c) if after_esc && key.modifiers.is_empty() && c.is_ascii_digit() => {
                return action(KeyEvent::new(key.code, KeyModifiers::ALT));
            }
            _ => {}
        }
        action(key)
    }
}

/// The action bound to `key`, if any. Releases and repeats of non-editing
/// keys are ignored by the caller's terminal mode; only presses count here.
pub fn action(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let edit = |e| Some(Action::Edit(e));
    let code = |c: char| edit(Edit::Insert(c.to_string()));
    match key.code {
        KeyCode::Char(c) if ctrl && !alt => match c.to_ascii_lowercase() {
            'a' => edit(Edit::Home),
            'e' => edit(Edit::End),
            'k' => edit(Edit::KillToEnd),
            'u' => edit(Edit::KillToStart),
            'w' => edit(Edit::KillWord),
            'y' => edit(Edit::Yank),
            'f' => edit(Edit::Right),
            'b' => code(BOLD),
            'c' => code(COLOUR),
            'o' => code(RESET),
            'v' => code(REVERSE),
            // A terminal sends Ctrl-_ as 0x1F, which crossterm reads as
            // Ctrl-7; the kitty keyboard protocol names it.
            '_' | '7' | '/' => code(UNDERLINE),
            'd' => edit(Edit::Delete),
            'h' => edit(Edit::Backspace),
            'n' => Some(Action::Next),
            'p' => Some(Action::Previous),
            'l' => Some(Action::Redraw),
            'g' => Some(Action::Allow),
            'x' => Some(Action::Deny),
            _ => None,
        },
        KeyCode::Char(c) if alt && !ctrl => match c {
            'b' | 'B' => edit(Edit::WordLeft),
            'f' | 'F' => edit(Edit::WordRight),
            'a' | 'A' => Some(Action::MostActive),
            'n' | 'N' => Some(Action::ToggleNicklist),
            c => alt_key_buffer(c).map(Action::Buffer),
        },
        KeyCode::Char(c) if !ctrl && !alt => edit(Edit::Insert(c.to_string())),
        KeyCode::Enter if key.modifiers.is_empty() => Some(Action::Submit),
        KeyCode::Tab if key.modifiers.is_empty() => Some(Action::Complete),
        KeyCode::Backspace => edit(Edit::Backspace),
        KeyCode::Delete => edit(Edit::Delete),
        KeyCode::Left if ctrl || alt => edit(Edit::WordLeft),
        KeyCode::Right if ctrl || alt => edit(Edit::WordRight),
        KeyCode::Left => edit(Edit::Left),
        KeyCode::Right => edit(Edit::Right),
        KeyCode::Home if ctrl || alt => Some(Action::Top),
        KeyCode::End if ctrl || alt => Some(Action::Bottom),
        KeyCode::Home => edit(Edit::Home),
        KeyCode::End => edit(Edit::End),
        KeyCode::Up => edit(Edit::HistoryUp),
        KeyCode::Down => edit(Edit::HistoryDown),
        KeyCode::PageUp => Some(Action::PageUp),
        KeyCode::PageDown => Some(Action::PageDown),
        KeyCode::Esc => Some(Action::Cancel),
        KeyCode::F(11) => Some(Action::NicklistUp),
        KeyCode::F(12) => Some(Action::NicklistDown),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_then_a_digit_is_alt_and_digit() {
        let mut keys = Keys::default();
        let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert_eq!(keys.action(press(KeyCode::Esc)), Some(Action::Cancel));
        assert_eq!(
            keys.action(press(KeyCode::Char('3'))),
            Some(Action::Buffer(3))
        );
        // Only the key right after the Esc.
        assert_eq!(
            keys.action(press(KeyCode::Char('3'))),
            Some(Action::Edit(Edit::Insert("3".to_owned())))
        );
        assert_eq!(keys.action(press(KeyCode::Esc)), Some(Action::Cancel));
        assert_eq!(
            keys.action(press(KeyCode::Char('x'))),
            Some(Action::Edit(Edit::Insert("x".to_owned())))
        );
        assert_eq!(keys.action(press(KeyCode::Esc)), Some(Action::Cancel));
        assert_eq!(
            keys.action(press(KeyCode::Char('0'))),
            Some(Action::Buffer(10))
        );
    }

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Option<Action> {
        action(KeyEvent::new(code, modifiers))
    }

    const NONE: KeyModifiers = KeyModifiers::NONE;
    const CTRL: KeyModifiers = KeyModifiers::CONTROL;
    const ALT: KeyModifiers = KeyModifiers::ALT;

    #[test]
    fn every_editing_key() {
        let cases = [
            (KeyCode::Left, NONE, Edit::Left),
            (KeyCode::Right, NONE, Edit::Right),
            (KeyCode::Home, NONE, Edit::Home),
            (KeyCode::End, NONE, Edit::End),
            (KeyCode::Char('a'), CTRL, Edit::Home),
            (KeyCode::Char('e'), CTRL, Edit::End),
            (KeyCode::Char('k'), CTRL, Edit::KillToEnd),
            (KeyCode::Char('u'), CTRL, Edit::KillToStart),
            (KeyCode::Char('w'), CTRL, Edit::KillWord),
            (KeyCode::Char('y'), CTRL, Edit::Yank),
            (KeyCode::Char('f'), CTRL, Edit::Right),
            (KeyCode::Char('b'), ALT, Edit::WordLeft),
            (KeyCode::Char('f'), ALT, Edit::WordRight),
            (KeyCode::Delete, NONE, Edit::Delete),
            (KeyCode::Backspace, NONE, Edit::Backspace),
            (KeyCode::Up, NONE, Edit::HistoryUp),
            (KeyCode::Down, NONE, Edit::HistoryDown),
            (KeyCode::Char('x'), NONE, Edit::Insert("x".into())),
            (
                KeyCode::Char('X'),
                KeyModifiers::SHIFT,
                Edit::Insert("X".into()),
            ),
        ];
        for (code, modifiers, edit) in cases {
            assert_eq!(
                key(code, modifiers),
                Some(Action::Edit(edit.clone())),
                "{code:?} {modifiers:?}"
            );
        }
    }

    #[test]
    fn formatting_keys_type_their_codes_and_ctrl_c_is_colour_not_quit() {
        let cases = [
            ('b', BOLD),
            ('c', COLOUR),
            ('o', RESET),
            ('v', REVERSE),
            ('7', UNDERLINE),
            ('_', UNDERLINE),
        ];
        for (c, typed) in cases {
            assert_eq!(
                key(KeyCode::Char(c), CTRL),
                Some(Action::Edit(Edit::Insert(typed.to_string()))),
                "Ctrl-{c}"
            );
        }
    }

    #[test]
    fn switching_and_scrolling() {
        assert_eq!(key(KeyCode::Char('2'), ALT), Some(Action::Buffer(2)));
        assert_eq!(key(KeyCode::Char('0'), ALT), Some(Action::Buffer(10)));
        assert_eq!(key(KeyCode::Char('w'), ALT), Some(Action::Buffer(12)));
        assert_eq!(key(KeyCode::Char('n'), CTRL), Some(Action::Next));
        assert_eq!(key(KeyCode::Char('p'), CTRL), Some(Action::Previous));
        assert_eq!(key(KeyCode::Char('a'), ALT), Some(Action::MostActive));
        assert_eq!(key(KeyCode::PageUp, NONE), Some(Action::PageUp));
        assert_eq!(key(KeyCode::PageDown, NONE), Some(Action::PageDown));
        assert_eq!(key(KeyCode::Home, CTRL), Some(Action::Top));
        assert_eq!(key(KeyCode::End, ALT), Some(Action::Bottom));
    }

    #[test]
    fn only_ctrl_keys_answer_an_approval() {
        assert_eq!(key(KeyCode::Char('g'), CTRL), Some(Action::Allow));
        assert_eq!(key(KeyCode::Char('x'), CTRL), Some(Action::Deny));
        for (c, modifiers) in [('g', NONE), ('x', NONE), ('g', ALT), ('x', CTRL | ALT)] {
            assert!(
                !matches!(
                    key(KeyCode::Char(c), modifiers),
                    Some(Action::Allow | Action::Deny)
                ),
                "{c} {modifiers:?}"
            );
        }
        assert_ne!(key(KeyCode::Enter, NONE), Some(Action::Allow));
    }

    #[test]
    fn unbound_keys_do_nothing() {
        for (code, modifiers) in [
            (KeyCode::F(5), NONE),
            (KeyCode::Insert, NONE),
            (KeyCode::Char('z'), CTRL),
            (KeyCode::Char('p'), ALT),
            (KeyCode::Char('x'), CTRL | ALT),
            (KeyCode::Enter, ALT),
            (KeyCode::Null, NONE),
        ] {
            assert_eq!(key(code, modifiers), None, "{code:?} {modifiers:?}");
        }
        let release = KeyEvent::new_with_kind(KeyCode::Char('a'), NONE, KeyEventKind::Release);
        assert_eq!(action(release), None);
    }
}
