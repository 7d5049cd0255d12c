//! Everything one frame shows, gathered before drawing so that the engine is
//! read once per frame (inside its actor) and the terminal written outside.

use crate::client::activity::Level;
use crate::client::names::Listed;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// Columns of the nick list pane.
pub const NICKLIST_WIDTH: u16 = 18;
/// Narrower terminals get no nick list: the messages need the room.
pub const NICKLIST_MIN_TERMINAL: u16 = 60;

/// One frame.
#[derive(Clone, Debug, Default)]
pub struct Screen {
    /// The top line: the channel's topic, or the buffer's name.
    pub title: String,
    /// The buffer's visible lines, oldest first.
    pub lines: Vec<Line<'static>>,
    /// The nick list pane, when shown for this buffer.
    pub nicklist: Option<Vec<Listed>>,
    /// Nicks of the list scrolled past at its top (F11 and F12, as in
    /// WeeChat); the pane says how many more there are above and below.
    pub nicklist_scroll: usize,
    /// The status bar.
    pub status: Status,
    /// The approval prompt (an agent's line waiting for the person), drawn
    /// on a row of its own above the input line.
    pub approval: Option<String>,
    /// The input line.
    pub input: InputLine,
}

/// The status bar: `[12:34] [nick(+i)] [2:net/#chan] [Act: 3,5]`.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The time now, formatted.
    pub clock: String,
    /// Our nick and user modes on the current buffer's network, `rt(+iw)`
    /// ("" for reterm's buffer).
    pub nick: String,
    /// The current buffer's number.
    pub number: usize,
    /// `net/#chan`, or `reterm`.
    pub label: String,
    /// Connection state when not connected.
    pub state: Option<String>,
    /// The server's lag in milliseconds, once measured (the engine's probe).
    pub lag_ms: Option<u64>,
    /// Buffers with activity: (number, level), in number order.
    pub activity: Vec<(usize, Level)>,
    /// The view is scrolled back: rows are hidden below.
    pub more_below: bool,
}

/// The input line.
#[derive(Clone, Debug, Default)]
pub struct InputLine {
    /// `[#chan] `.
    pub prompt: String,
    /// What is typed.
    pub text: String,
    /// Cursor, a byte offset into `text`.
    pub cursor: usize,
    /// A question replacing the line (the paste guard's).
    pub question: Option<String>,
}

/// Where each part of the layout goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    /// The title line.
    pub title: Rect,
    /// The buffer's rows.
    pub body: Rect,
    /// The nick list, when there is one.
    pub nicks: Option<Rect>,
    /// The status bar.
    pub status: Rect,
    /// The approval prompt's row, when one waits.
    pub approval: Option<Rect>,
    /// The input line.
    pub input: Rect,
}

/// Splits the terminal: title, body (and nick list), status bar, input line.
pub fn areas(area: Rect, nicklist: bool) -> Areas {
    areas_with(area, nicklist, false)
}

/// The same, with a row for the approval prompt between the status bar and
/// the input line when `approval` (the body gives it up).
pub fn areas_with(area: Rect, nicklist: bool, approval: bool) -> Areas {
    let line = |y: u16| Rect::new(area.x, y, area.width, 1.min(area.height));
    let extra = u16::from(approval);
    let body_height = area.height.saturating_sub(3 + extra);
    let body = Rect::new(area.x, area.y + 1.min(area.height), area.width, body_height);
    let (body, nicks) = if nicklist && area.width >= NICKLIST_MIN_TERMINAL {
        let main = Rect {
            width: area.width - NICKLIST_WIDTH,
            ..body
        };
        let side = Rect {
            x: area.x + main.width,
            width: NICKLIST_WIDTH,
            ..body
        };
        (main, Some(side))
    } else {
        (body, None)
    };
    Areas {
        title: line(area.y),
        body,
        nicks,
        status: line(area.y + area.height.saturating_sub(2 + extra)),
        approval: approval.then(|| line(area.y + area.height.saturating_sub(2))),
        input: line(area.y + area.height.saturating_sub(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_rows_and_the_nick_list() {
        let a = areas(Rect::new(0, 0, 80, 24), true);
        assert_eq!(a.title, Rect::new(0, 0, 80, 1));
        assert_eq!(a.body, Rect::new(0, 1, 62, 21));
        assert_eq!(a.nicks, Some(Rect::new(62, 1, 18, 21)));
        assert_eq!(a.status, Rect::new(0, 22, 80, 1));
        assert_eq!(a.input, Rect::new(0, 23, 80, 1));
        let narrow = areas(Rect::new(0, 0, 40, 10), true);
        assert_eq!((narrow.nicks, narrow.body.width), (None, 40));
        let tiny = areas(Rect::new(0, 0, 10, 2), false);
        assert_eq!(tiny.body.height, 0);
        assert_eq!(a.approval, None);
        let asking = areas_with(Rect::new(0, 0, 80, 24), false, true);
        assert_eq!(asking.body, Rect::new(0, 1, 80, 20));
        assert_eq!(asking.status, Rect::new(0, 21, 80, 1));
        assert_eq!(asking.approval, Some(Rect::new(0, 22, 80, 1)));
        assert_eq!(asking.input, Rect::new(0, 23, 80, 1));
    }
}
