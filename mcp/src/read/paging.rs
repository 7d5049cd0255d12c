//! What the paging read tools share: cursors bound to the tool and the ids
//! it reads, and filling a page of rows where a withheld or oversized row is
//! covered (so paging moves past it) without being returned.

use crate::read::cursor::{self, Kind};
use crate::read::result::{encoded_len, Offer, RowBudget, ToolOutcome};
use crate::read::withheld::Withholder;
use serde_json::{json, Value};

/// What a cursor is minted for: the tool, and the session and buffer (when
/// the tool reads one). A cursor opens only with an equal binding, so one
/// minted by another tool, or for another session or buffer, is
/// `invalid cursor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    kind: Kind,
    tool: &'static str,
    session: String,
    buffer: String,
}

impl Binding {
    /// A binding to one tool of cursor `kind` and one session and buffer
    /// (`buffer` is "" for a tool that reads a whole session).
    pub fn new(kind: Kind, tool: &'static str, session: &str, buffer: &str) -> Binding {
        Binding {
            kind,
            tool,
            session: session.to_owned(),
            buffer: buffer.to_owned(),
        }
    }

    fn parts(&self) -> [&[u8]; 3] {
        [
            self.tool.as_bytes(),
            self.session.as_bytes(),
            self.buffer.as_bytes(),
        ]
    }

    /// A cursor at `position`.
    pub(crate) fn mint(&self, position: &[u8]) -> String {
        cursor::mint(self.kind, &self.parts(), position)
    }

    /// The position of a cursor minted under this binding, or the tool error
    /// `invalid cursor`.
    pub(crate) fn open(&self, cursor: &str) -> Result<Vec<u8>, ToolOutcome> {
        cursor::open(cursor, self.kind, &self.parts()).map_err(ToolOutcome::error)
    }

    /// A cursor at a sequence number.
    pub(crate) fn mint_seq(&self, seq: u64) -> String {
        self.mint(&cursor::pack(&[seq]))
    }

    /// The sequence number of a cursor minted by `Binding::mint_seq`.
    pub fn open_seq(&self, cursor: &str) -> Result<u64, ToolOutcome> {
        let position = self.open(cursor)?;
        let values = cursor::unpack(&position, 1).map_err(ToolOutcome::error)?;
        values
            .first()
            .copied()
            .ok_or_else(|| ToolOutcome::error(cursor::INVALID))
    }

    /// A string exactly as long as a cursor with a position of
    /// `position_len` bytes, to size a page's frame before the cursor is
    /// known.
    pub(crate) fn placeholder(&self, position_len: usize) -> String {
        self.mint(&vec![0; position_len])
    }
}

/// The longest position a cursor can carry and stay within
/// [`cursor::MAX_LEN`]: 384 decoded bytes, less the version, kind, binding
/// digest and tag.
pub(crate) const MAX_POSITION: usize = cursor::MAX_LEN / 4 * 3 - 2 - 16 - 16;

/// A page's skipped list as the frame counts it: what was skipped so far
/// and room for one more sequence number, so the page still fits if the next
/// row offered is skipped too.
fn skipped_with_room(skipped: &[Value]) -> Value {
    let mut list = skipped.to_vec();
    list.push(json!(u64::MAX));
    Value::Array(list)
}

/// How a page of message rows was filled. The rows offered are covered in
/// offer order up to the cut: the first `covered` were returned, withheld or
/// skipped, and none after them was looked at.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Filled {
    /// (offer index, message object) of each returned row, in offer order.
    pub(crate) rows: Vec<(usize, Value)>,
    /// Sequence numbers of rows too large for any page.
    pub(crate) skipped: Vec<Value>,
    /// Rows withheld.
    pub(crate) withheld: u64,
    /// How many offered rows were covered (a prefix of the offers).
    pub(crate) covered: usize,
    /// True when the budget cut the offers before the last.
    pub(crate) cut: bool,
}

/// Fills a page from `rows` (in offer order) under `budget` bytes.
/// `frame(skipped)` is the encoded size of the result with no messages, cut,
/// and with `skipped` as its skipped list: what was skipped so far plus room
/// for one more, so a page never outgrows the budget when a row is skipped
/// after others were taken. It is measured again only when a row is skipped.
pub(crate) fn fill<'a, I, F>(rows: I, withhold: &Withholder, budget: usize, frame: F) -> Filled
where
    I: IntoIterator<Item = &'a rete_engine::row::Row>,
    F: Fn(Value) -> usize,
{
    let mut page = RowBudget::with_budget(budget);
    let mut out = Filled::default();
    let mut taken = Vec::new();
    let mut size = frame(skipped_with_room(&[]));
    for (i, row) in rows.into_iter().enumerate() {
        if withhold.row(row) {
            out.withheld += 1;
            out.covered = i + 1;
            continue;
        }
        match page.offer(crate::read::message::message_json(row), size) {
            Offer::Taken => taken.push(i),
            Offer::TooLarge => {
                page.skip(json!(row.seq));
                size = frame(skipped_with_room(page.skipped()));
            }
            Offer::Full => {
                out.cut = true;
                break;
            }
        }
        out.covered = i + 1;
    }
    let filled = page.finish();
    out.skipped = filled.skipped;
    out.rows = taken.into_iter().zip(filled.rows).collect();
    out
}

/// The encoded size of `value`, for frames.
pub(crate) fn frame_len(value: &Value) -> usize {
    encoded_len(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::cursor::INVALID;
    use crate::read::result::encode;
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::{Payload, Row};

    fn b(kind: Kind, tool: &'static str, s: &str, buf: &str) -> Binding {
        Binding::new(kind, tool, s, buf)
    }

    #[test]
    fn cursors_open_only_under_their_binding() {
        let a = b(Kind::Since, "read_since", "S", "B");
        let c = a.mint_seq(9);
        assert_eq!(a.open_seq(&c), Ok(9));
        let err = Err(ToolOutcome::error(INVALID));
        assert_eq!(b(Kind::Since, "read_since", "S", "B2").open_seq(&c), err);
        assert_eq!(b(Kind::Since, "read_since", "S2", "B").open_seq(&c), err);
        assert_eq!(
            b(Kind::Messages, "read_messages", "S", "B").open_seq(&c),
            err
        );
        assert_eq!(b(Kind::Since, "read_since", "S", "B").open_seq("x"), err);
        let other = a.mint(&[1, 2, 3]);
        assert_eq!(a.open_seq(&other), err, "a position of another shape");
        assert_eq!(a.placeholder(8).len(), c.len());
    }

    #[test]
    fn the_longest_position_fits_a_cursor() {
        let a = b(Kind::Members, "list_members", "S", "B");
        assert!(a.placeholder(MAX_POSITION).len() <= cursor::MAX_LEN);
        assert!(a.placeholder(MAX_POSITION + 3).len() > cursor::MAX_LEN);
    }

    fn row(seq: u64, text: &str) -> Row {
        Row {
            seq,
            time: UnixMillis(1_790_769_600_000),
            msgid: None,
            from: "a".into(),
            history: false,
            payload: Payload::Privmsg { text: text.into() },
        }
    }

    fn frame(skipped: Value) -> usize {
        frame_len(&json!({"messages": [], "skipped": skipped, "truncated": true}))
    }

    #[test]
    fn withheld_and_oversized_rows_are_covered_not_returned() {
        let rows = [
            row(1, "a"),
            row(2, &"x".repeat(500)),
            row(3, "s3cret"),
            row(4, "b"),
        ];
        let w = Withholder::new(["s3cret"]);
        let f = fill(&rows, &w, 400, frame);
        assert_eq!(f.covered, 4);
        assert!(!f.cut);
        assert_eq!(f.withheld, 1);
        assert_eq!(f.skipped, vec![json!(2)]);
        assert_eq!(f.rows.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 3]);
    }

    #[test]
    fn a_cut_leaves_the_rest_uncovered_and_the_page_within_budget() {
        let rows: Vec<Row> = (1..=20).map(|s| row(s, &"y".repeat(40))).collect();
        let budget = 600;
        let f = fill(&rows, &Withholder::default(), budget, frame);
        assert!(f.cut);
        assert_eq!(f.covered, f.rows.len());
        assert!(f.covered > 1 && f.covered < 20);
        let page = json!({
            "messages": f.rows.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
            "truncated": true,
        });
        assert!(encode(&page).len() <= budget);
    }
}
