//! The search itself: a plain function over owned, copied rows, so it runs
//! off the session actors (and off the async runtime), and benchmarks and
//! tests call it directly.
//!
//! Buffers are walked in the order given (the search order), each newest
//! first over its searched slice. The clock is asked between messages and,
//! for a regex, between fields (see the matcher for how that approximates
//! "inside a match"); never before the first message of the walk, so every
//! call examines at least one message and a cursor always moves.

use super::filters::Filters;
use super::window::CopiedBuffer;
use crate::read::matcher::{Matcher, RowMatch, Scratch};

/// The work one message stands for, in bytes, when the clock is asked
/// before it (filters, the sender and short fields).
pub(crate) const MESSAGE_COST: usize = 64;

/// What to search for.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    /// How fields are matched.
    pub(crate) matcher: Matcher,
    /// What a row must pass before it is matched.
    pub(crate) filters: Filters,
}

/// What a walk is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Goal {
    /// A page of at most this many matches. The walk looks for one match
    /// more, so that truncated means more matches exist (or the walk was
    /// cut before it could tell).
    Page(usize),
    /// Counts over everything copied.
    Count,
}

/// A row in the copied buffers: `buffer` indexes the slice walked, `row`
/// that buffer's `rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    /// Which buffer.
    pub(crate) buffer: usize,
    /// Which row of it.
    pub(crate) row: usize,
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Every searched row was examined.
    Complete,
    /// The page is full: `next` is the first match beyond it, not counted
    /// as examined, where the next page starts.
    Full {
        /// The next page's first match.
        next: Pos,
    },
    /// The time budget ran out before `next`, which was not examined.
    OutOfTime {
        /// The first message not examined.
        next: Pos,
    },
    /// The request was cancelled.
    Cancelled,
}

/// What a walk found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Walk {
    /// The matches in search order (at most the page's limit plus one in
    /// page mode; none when counting).
    pub(crate) hits: Vec<Pos>,
    /// Matches per buffer walked (both modes), indexed like the buffers.
    pub(crate) counts: Vec<u64>,
    /// Messages not fully searched (a regex field too long to try), in
    /// search order.
    pub(crate) regex_skipped: Vec<Pos>,
    /// How it ended.
    pub(crate) end: End,
}

impl Walk {
    /// The first row not examined, if the walk stopped early.
    pub(crate) fn resume(&self) -> Option<Pos> {
        match self.end {
            End::Full { next } | End::OutOfTime { next } => Some(next),
            End::Complete | End::Cancelled => None,
        }
    }
}

/// Searches `buffers` for `query`.
///
/// `out_of_time` is asked before every message but the first (told
/// [`MESSAGE_COST`]), and by a regex before each field (told the field's
/// length), so a clock can read the time only once enough work was done;
/// `cancelled` is asked between buffers and messages.
pub(crate) fn walk(
    buffers: &[CopiedBuffer],
    query: &Query,
    goal: Goal,
    out_of_time: &mut dyn FnMut(usize) -> bool,
    cancelled: &dyn Fn() -> bool,
) -> Walk {
    let mut out = Walk {
        hits: Vec::new(),
        counts: vec![0; buffers.len()],
        regex_skipped: Vec::new(),
        end: End::Complete,
    };
    let mut scratch = Scratch::default();
    let mut examined_any = false;
    let mut never = |_| false;
    for (b, buffer) in buffers.iter().enumerate() {
        if cancelled() {
            out.end = End::Cancelled;
            return out;
        }
        for r in buffer.searched.clone().rev() {
            let pos = Pos { buffer: b, row: r };
            if examined_any && (cancelled() || out_of_time(MESSAGE_COST)) {
                out.end = if cancelled() {
                    End::Cancelled
                } else {
                    End::OutOfTime { next: pos }
                };
                return out;
            }
            if buffer.is_withheld(r) {
                examined_any = true;
                continue;
            }
            let row = &buffer.rows[r];
            if !query.filters.admits(row) {
                examined_any = true;
                continue;
            }
            let clock: &mut dyn FnMut(usize) -> bool = if examined_any {
                out_of_time
            } else {
                &mut never
            };
            match query.matcher.match_row(row, &mut scratch, clock) {
                RowMatch::Match => {
                    if let Goal::Page(limit) = goal {
                        if out.hits.len() == limit {
                            out.end = End::Full { next: pos };
                            return out;
                        }
                        out.hits.push(pos);
                    }
                    out.counts[b] += 1;
                }
                RowMatch::NoMatch => {}
                RowMatch::NotFullySearched => out.regex_skipped.push(pos),
                RowMatch::OutOfTime => {
                    out.end = End::OutOfTime { next: pos };
                    return out;
                }
            }
            examined_any = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::matcher::Mode;
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::{Payload, Row};

    pub(crate) fn rows(texts: &[&str]) -> Vec<Row> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| Row {
                seq: i as u64 + 1,
                time: UnixMillis(i as i64 * 1000),
                msgid: None,
                from: "bob".into(),
                history: false,
                payload: Payload::Privmsg { text: (*t).into() },
            })
            .collect()
    }

    fn query(mode: Mode, q: &str) -> Query {
        Query {
            matcher: Matcher::new(mode, q).unwrap(),
            filters: Filters::default(),
        }
    }

    fn run(buffers: &[CopiedBuffer], q: &Query, goal: Goal) -> Walk {
        walk(buffers, q, goal, &mut |_| false, &|| false)
    }

    fn p(buffer: usize, row: usize) -> Pos {
        Pos { buffer, row }
    }

    #[test]
    fn buffers_in_order_newest_first() {
        let bufs = vec![
            CopiedBuffer::of_rows("A", rows(&["hit 1", "no", "hit 2"])),
            CopiedBuffer::of_rows("B", rows(&["hit 3"])),
        ];
        let w = run(&bufs, &query(Mode::Substring, "HIT"), Goal::Page(10));
        assert_eq!(w.hits, vec![p(0, 2), p(0, 0), p(1, 0)]);
        assert_eq!(w.counts, vec![2, 1]);
        assert_eq!(w.end, End::Complete);
    }

    #[test]
    fn a_full_page_names_the_next_match() {
        let bufs = vec![CopiedBuffer::of_rows(
            "A",
            rows(&["x", "hit", "hit", "no", "hit"]),
        )];
        let w = run(&bufs, &query(Mode::Substring, "hit"), Goal::Page(2));
        assert_eq!(w.hits, vec![p(0, 4), p(0, 2)]);
        assert_eq!(w.end, End::Full { next: p(0, 1) });
        // Exactly `limit` matches and no more: complete, not full.
        let w = run(&bufs, &query(Mode::Substring, "hit"), Goal::Page(3));
        assert_eq!(w.end, End::Complete);
    }

    #[test]
    fn counting_covers_everything() {
        let bufs = vec![
            CopiedBuffer::of_rows("A", rows(&["hit", "hit"])),
            CopiedBuffer::of_rows("B", rows(&["no"])),
        ];
        let w = run(&bufs, &query(Mode::Substring, "hit"), Goal::Count);
        assert!(w.hits.is_empty());
        assert_eq!(w.counts, vec![2, 0]);
    }

    #[test]
    fn only_the_searched_slice_is_matched() {
        let mut b = CopiedBuffer::of_rows("A", rows(&["hit pad", "hit", "hit pad"]));
        b.searched = 1..2;
        let w = run(&[b], &query(Mode::Substring, "hit"), Goal::Page(10));
        assert_eq!(w.hits, vec![p(0, 1)]);
    }

    #[test]
    fn withheld_and_filtered_rows_never_match() {
        let mut b = CopiedBuffer::of_rows("A", rows(&["hit", "hit", "hit"]));
        b.withheld = vec![false, true, false];
        let mut q = query(Mode::Substring, "hit");
        q.filters.since = Some(1);
        let w = run(&[b], &q, Goal::Page(10));
        assert_eq!(w.hits, vec![p(0, 2)]);
    }

    #[test]
    fn the_clock_is_not_asked_before_the_first_message() {
        let bufs = vec![
            CopiedBuffer::of_rows("E", vec![]),
            CopiedBuffer::of_rows("A", rows(&["a", "hit", "c"])),
        ];
        let mut asked = 0;
        let w = walk(
            &bufs,
            &query(Mode::Substring, "hit"),
            Goal::Page(10),
            &mut |_| {
                asked += 1;
                true
            },
            &|| false,
        );
        assert_eq!(asked, 1);
        assert_eq!(w.end, End::OutOfTime { next: p(1, 1) });
        assert!(w.hits.is_empty());
    }

    #[test]
    fn a_regex_stops_between_fields_and_resumes_at_that_message() {
        let bufs = vec![CopiedBuffer::of_rows("A", rows(&["zzz", "b", "c"]))];
        let mut calls = 0;
        // Allow the first message, then two more field checks.
        let w = walk(
            &bufs,
            &query(Mode::Regex, "zzz"),
            Goal::Page(10),
            &mut |_| {
                calls += 1;
                calls > 2
            },
            &|| false,
        );
        // Message c (row 2) is examined without the clock; before row 1 the
        // clock says fine, before its first field fine, then out of time.
        assert_eq!(w.end, End::OutOfTime { next: p(0, 1) });
    }

    #[test]
    fn regex_skipped_messages_are_listed() {
        let long = "y".repeat(5000);
        let bufs = vec![CopiedBuffer::of_rows("A", rows(&["x", &long]))];
        let mut q = query(Mode::Regex, "x");
        let w = run(&bufs, &q, Goal::Page(10));
        assert_eq!(w.regex_skipped, vec![p(0, 1)]);
        assert_eq!(w.hits, vec![p(0, 0)]);
        q.matcher = Matcher::new(Mode::Substring, "x").unwrap();
        assert!(run(&bufs, &q, Goal::Page(10)).regex_skipped.is_empty());
    }

    #[test]
    fn cancellation_is_seen_between_buffers() {
        let bufs = vec![CopiedBuffer::of_rows("A", rows(&["hit"]))];
        let w = walk(
            &bufs,
            &query(Mode::Substring, "hit"),
            Goal::Page(10),
            &mut |_| false,
            &|| true,
        );
        assert_eq!(w.end, End::Cancelled);
        assert_eq!(w.resume(), None);
    }
}
