//! What a search copies out of a session: per buffer, the part of its
//! newest-10,000 window this call still has to search, under the per-call
//! bound of 100,000 copied messages.
//!
//! Copying runs inside the session actor (through `SessionReader::read`), so
//! it only slices and clones; matching happens later, outside the actor, on
//! the owned rows.
//!
//! The bound's buffer-cut rule: buffers are copied in search order until the
//! bound is spent; the buffer that spends it keeps only its newest messages
//! up to the bound and is marked window_truncated, and no buffer after it is
//! copied (`Copier::spent` then names the first one left out, where the
//! next call starts). A buffer that exactly uses up the bound is complete,
//! and the next one is still left out.
//!
//! The bound counts the messages to be searched. Context neighbours copied
//! beyond them (at most `context` on each side of a buffer's slice, so at
//! most 20 per buffer) are not counted: they are never searched, and
//! counting them would let a buffer's pads cut another buffer's window.

use rete_engine::buffer::Buffer;
use rete_engine::row::Row;
use std::ops::Range;

/// How many of a buffer's newest messages a search covers.
pub(crate) const WINDOW: usize = 10_000;

/// How many messages one call copies at most, across every buffer.
pub(crate) const COPY_BOUND: usize = 100_000;

/// Where a call starts in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// At the buffer's newest message, with a whole window ahead.
    Newest,
    /// At the message with this seq (included), with `remaining` messages
    /// of the walk's window left to search, newest first.
    At {
        /// The next message to examine.
        seq: u64,
        /// How many messages, from it going older, are left.
        remaining: u64,
    },
}

/// One buffer's copied rows, owned, ready to search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CopiedBuffer {
    /// The buffer id.
    pub(crate) id: String,
    /// Rows in display order, oldest first: the searched slice with up to
    /// `context` neighbours on each side.
    pub rows: Vec<Row>,
    /// Which rows are withheld (they hold a session secret); empty when
    /// none is. A withheld row is never matched or returned.
    pub(crate) withheld: Vec<bool>,
    /// The rows to search, as indices into `rows`.
    pub(crate) searched: Range<usize>,
    /// The window was shorter than what the buffer holds (older messages
    /// exist that this walk will not search).
    pub(crate) window_truncated: bool,
}

impl CopiedBuffer {
    /// A buffer of rows that are all searched, none withheld (benchmarks
    /// and tests build these directly).
    pub fn of_rows(id: impl Into<String>, rows: Vec<Row>) -> CopiedBuffer {
        let searched = 0..rows.len();
        CopiedBuffer {
            id: id.into(),
            rows,
            withheld: Vec::new(),
            searched,
            window_truncated: false,
        }
    }

    /// True when row `i` is withheld.
    pub(crate) fn is_withheld(&self, i: usize) -> bool {
        self.withheld.get(i).copied().unwrap_or(false)
    }
}

/// Copies buffers in search order under one call's bound.
#[derive(Clone, Debug)]
pub(crate) struct Copier {
    left: usize,
    context: usize,
    spent: Option<String>,
    exhausted: bool,
}

impl Copier {
    /// A copier with `bound` messages to copy and `context` neighbours.
    pub(crate) fn new(bound: usize, context: usize) -> Copier {
        Copier {
            left: bound,
            context,
            spent: None,
            exhausted: false,
        }
    }

    /// The first buffer left out because the bound was spent, if any.
    pub(crate) fn spent(&self) -> Option<&str> {
        self.spent.as_deref()
    }

    /// True once the bound is spent: later buffers are not copied.
    #[cfg(test)]
    pub(crate) fn is_spent(&self) -> bool {
        self.exhausted
    }

    /// Copies `buffer` from `start`, or returns None (recording it as the
    /// first left out) when the bound is already spent. `withholds` screens
    /// each copied row.
    pub(crate) fn copy(
        &mut self,
        buffer: &Buffer,
        start: Start,
        withholds: &dyn Fn(&Row) -> bool,
    ) -> Option<CopiedBuffer> {
        if self.exhausted {
            if self.spent.is_none() {
                self.spent = Some(buffer.id().as_str().to_owned());
            }
            return None;
        }
        let len = buffer.len();
        // `end`: one past the display position of the first message to
        // examine; `window`: how many messages from it going older.
        let (end, window) = match start {
            Start::Newest => (len, WINDOW),
            Start::At { seq, remaining } => match buffer.display_position(seq) {
                Some(pos) => (pos + 1, usize::try_from(remaining).unwrap_or(usize::MAX)),
                // The message to resume at is gone (evicted): so is the
                // rest of this buffer's walk, which was older still.
                None => (0, 0),
            },
        };
        let wanted = end.min(window);
        let take = wanted.min(self.left);
        let mut window_truncated = end > wanted;
        if take < wanted || take == self.left {
            self.exhausted = true;
        }
        if take < wanted {
            window_truncated = true;
        }
        self.left -= take;
        let first = end - take;
        let older = self.context.min(first);
        let newer = self.context.min(len - end);
        let from = first - older;
        let rows: Vec<Row> = buffer
            .display()
            .skip(from)
            .take(older + take + newer)
            .cloned()
            .collect();
        let mut withheld: Vec<bool> = rows.iter().map(withholds).collect();
        if !withheld.contains(&true) {
            withheld = Vec::new();
        }
        Some(CopiedBuffer {
            id: buffer.id().as_str().to_owned(),
            rows,
            withheld,
            searched: older..older + take,
            window_truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::buffer::{BufferKind, NewRow};
    use rete_engine::clock::UnixMillis;
    use rete_engine::ids::{BufferId, BufferKindTag, SessionId};
    use rete_engine::row::Payload;

    pub(crate) fn buffer(name: &str, n: usize) -> Buffer {
        let s = SessionId::parse("00000000-0000-4000-8000-000000000001").unwrap();
        let id = BufferId::derive(&s, BufferKindTag::Channel, name);
        let mut b = Buffer::new(id, name.into(), BufferKind::Channel, 50_000);
        for i in 0..n {
            b.push(NewRow {
                time: UnixMillis(1_000 * i as i64),
                server_time: false,
                msgid: None,
                from: "alice".into(),
                in_history_batch: false,
                older_batch: None,
                payload: Payload::Privmsg {
                    text: format!("m{i}").into(),
                },
            });
        }
        b
    }

    fn none(_: &Row) -> bool {
        false
    }

    fn seqs(c: &CopiedBuffer) -> Vec<u64> {
        c.rows[c.searched.clone()].iter().map(|r| r.seq).collect()
    }

    #[test]
    fn a_fresh_buffer_copies_its_newest_window() {
        let b = buffer("#a", 12);
        let mut c = Copier::new(100, 0);
        let got = c.copy(&b, Start::Newest, &none).unwrap();
        assert_eq!(seqs(&got), (1..=12).collect::<Vec<_>>());
        assert!(!got.window_truncated);
        assert!(!c.is_spent());
    }

    #[test]
    fn the_window_is_the_newest_ten_thousand() {
        let b = buffer("#big", WINDOW + 5);
        let mut c = Copier::new(COPY_BOUND, 0);
        let got = c.copy(&b, Start::Newest, &none).unwrap();
        assert_eq!(got.searched.len(), WINDOW);
        assert_eq!(seqs(&got).first(), Some(&6));
        assert!(got.window_truncated);
    }

    #[test]
    fn resuming_takes_what_is_left_of_the_window() {
        let b = buffer("#a", 20);
        let mut c = Copier::new(100, 0);
        let got = c
            .copy(
                &b,
                Start::At {
                    seq: 15,
                    remaining: 4,
                },
                &none,
            )
            .unwrap();
        assert_eq!(seqs(&got), vec![12, 13, 14, 15]);
        assert!(
            got.window_truncated,
            "messages older than the window remain"
        );
        let all = c
            .copy(
                &b,
                Start::At {
                    seq: 3,
                    remaining: 10,
                },
                &none,
            )
            .unwrap();
        assert_eq!(seqs(&all), vec![1, 2, 3]);
        assert!(!all.window_truncated);
    }

    #[test]
    fn a_resume_point_that_is_gone_ends_the_buffer() {
        let b = buffer("#a", 5);
        let mut c = Copier::new(100, 0);
        let got = c
            .copy(
                &b,
                Start::At {
                    seq: 99,
                    remaining: 4,
                },
                &none,
            )
            .unwrap();
        assert!(got.searched.is_empty());
    }

    #[test]
    fn the_buffer_that_spends_the_bound_is_cut_and_later_ones_are_left_out() {
        let (a, b, d) = (buffer("#a", 6), buffer("#b", 6), buffer("#d", 6));
        let mut c = Copier::new(10, 0);
        let first = c.copy(&a, Start::Newest, &none).unwrap();
        assert_eq!(first.searched.len(), 6);
        assert!(!first.window_truncated);
        let second = c.copy(&b, Start::Newest, &none).unwrap();
        assert_eq!(seqs(&second), vec![3, 4, 5, 6], "keeps its newest");
        assert!(second.window_truncated);
        assert!(c.is_spent());
        assert!(c.copy(&d, Start::Newest, &none).is_none());
        assert_eq!(c.spent(), Some(d.id().as_str()));
        assert!(c.copy(&a, Start::Newest, &none).is_none());
        assert_eq!(c.spent(), Some(d.id().as_str()), "the first left out");
    }

    #[test]
    fn exactly_spending_the_bound_leaves_the_next_buffer_out() {
        let (a, b) = (buffer("#a", 5), buffer("#b", 1));
        let mut c = Copier::new(5, 0);
        let first = c.copy(&a, Start::Newest, &none).unwrap();
        assert_eq!(first.searched.len(), 5);
        assert!(!first.window_truncated);
        assert!(c.copy(&b, Start::Newest, &none).is_none());
        assert_eq!(c.spent(), Some(b.id().as_str()));
    }

    #[test]
    fn context_pads_are_copied_beside_the_slice() {
        let b = buffer("#a", 20);
        let mut c = Copier::new(100, 3);
        let got = c
            .copy(
                &b,
                Start::At {
                    seq: 10,
                    remaining: 4,
                },
                &none,
            )
            .unwrap();
        let all: Vec<u64> = got.rows.iter().map(|r| r.seq).collect();
        assert_eq!(all, (4..=13).collect::<Vec<_>>());
        assert_eq!(seqs(&got), vec![7, 8, 9, 10]);
        // At the edges the pads are shorter.
        let edge = c.copy(&b, Start::Newest, &none).unwrap();
        assert_eq!(edge.searched, 0..20);
        assert_eq!(edge.rows.len(), 20);
    }

    #[test]
    fn screened_rows_are_marked() {
        let b = buffer("#a", 4);
        let mut c = Copier::new(100, 0);
        let hide = |r: &Row| r.seq == 2;
        let got = c.copy(&b, Start::Newest, &hide).unwrap();
        assert_eq!(got.withheld, vec![false, true, false, false]);
        assert!(got.is_withheld(1));
        let clean = c.copy(&b, Start::Newest, &none).unwrap();
        assert!(clean.withheld.is_empty());
        assert!(!clean.is_withheld(1));
    }
}
