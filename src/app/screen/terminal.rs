//! The terminal in full-screen mode: raw mode, the alternate screen and
//! bracketed paste while reterm runs, restored on the way out (also when it
//! panics); key presses read on a thread of their own, which blocks in the
//! kernel while nothing is typed.

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, Event};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, Clear, ClearType, EnterAlternateScreen,
    LeaveAlternateScreen, SetTitle,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{self, Stdout, Write as _};
use tokio::sync::mpsc;

/// A cell content no frame draws (a noncharacter), so a repaint compares
/// every cell as changed.
const NEVER_DRAWN: &str = "\u{FFFF}";

/// The terminal while reterm owns it.
pub struct Term {
    /// ratatui's terminal over crossterm.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Term {
    /// Takes the terminal over.
    pub fn enter() -> io::Result<Term> {
        enable_raw_mode()?;
        let mut out = io::stdout();
        execute!(out, EnterAlternateScreen, EnableBracketedPaste)?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(out))?;
        Ok(Term { terminal })
    }

    /// Rings the bell and sets the window title (a highlight).
    pub fn alert(&mut self, title: &str) {
        let out = self.terminal.backend_mut();
        let _ = execute!(out, SetTitle(title));
        let _ = out.write_all(b"\x07");
        let _ = out.flush();
    }

    /// Makes the next frame repaint every cell (Ctrl-L): the terminal is
    /// cleared, and ratatui's record of what it shows is made to match no
    /// cell, so each one is written again, blanks included; whatever else
    /// is on the terminal goes. (`Terminal::clear` first asks the terminal
    /// where its cursor is, an answer the key thread reads instead, and then
    /// gives up without clearing.)
    pub fn repaint(&mut self) {
        let _ = execute!(self.terminal.backend_mut(), Clear(ClearType::All));
        for cell in &mut self.terminal.current_buffer_mut().content {
            cell.set_symbol(NEVER_DRAWN);
        }
        // The marked buffer becomes the one the next frame is compared with.
        self.terminal.swap_buffers();
    }

    /// Sets the window title.
    pub fn title(&mut self, title: &str) {
        let _ = execute!(self.terminal.backend_mut(), SetTitle(title));
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        restore();
        let _ = self.terminal.show_cursor();
    }
}

/// Gives the terminal back as it was.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), DisableBracketedPaste, LeaveAlternateScreen);
}

/// Terminal events (keys, pastes, resizes) from a reading thread. The thread
/// ends when the receiver is gone and the next event arrives, or with the
/// process.
pub fn input() -> io::Result<mpsc::UnboundedReceiver<Event>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("reterm-keys".into())
        .spawn(move || {
            while let Ok(event) = crossterm::event::read() {
                if tx.send(event).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}
