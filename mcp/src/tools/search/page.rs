//! Turns a walk into the result: matches (or counts), coverage, and the
//! paging fields, within the 60,000-byte budget.
//!
//! Coverage lists the buffers the call examined and the span of time it
//! examined in each (the rows walked, filtered or withheld ones included).
//! When that full list would take more than a quarter of the budget, only
//! this page's buffers are kept (the buffers of the matches on the page, or
//! with count_only the buffers with a non-zero count), with
//! coverage_truncated and coverage_omitted (how many entries were left out).
//! Which way coverage goes is decided once, on the walk as found, and kept
//! when the budget then cuts the page shorter.
//!
//! The budget: each match is offered with the frame measured as if the page
//! were cut (truncated, a cursor as long as any this call can mint, stopped
//! when it applies, the skipped entries so far, and with a partial coverage
//! the entry of every buffer kept so far). A match that does not fit cuts
//! the page there and the cursor resumes at it; a match larger than the
//! whole budget is stepped over into skipped. What the page then covers is
//! recomputed up to the cut, which only shrinks every measured part.

use super::request::{Request, Resume};
use super::walk::{End, Pos, Walk};
use super::window::{CopiedBuffer, Start};
use crate::read::message::message_json;
use crate::read::result::{encoded_len, time, Offer, RowBudget};
use rete_engine::clock::UnixMillis;
use serde_json::{json, Map, Value};
use std::ops::Range;

/// The stopped text.
pub(crate) const STOPPED: &str = "search stopped: time budget exceeded";

/// A finished result and whether it is the time budget's partial result.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    /// The result object.
    pub result: Value,
    /// True when the time budget stopped the walk (a tool error).
    pub(crate) stopped: bool,
}

/// The part of one buffer a call examined.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Examined {
    buffer: usize,
    rows: Range<usize>,
}

/// What the call examined when it stops before `stop` (not examined).
fn examined(buffers: &[CopiedBuffer], stop: Option<Pos>) -> Vec<Examined> {
    let mut out = Vec::new();
    for (b, buffer) in buffers.iter().enumerate() {
        match stop {
            Some(s) if b > s.buffer => break,
            Some(s) if b == s.buffer => {
                let rows = s.row + 1..buffer.searched.end;
                if !rows.is_empty() {
                    out.push(Examined { buffer: b, rows });
                }
                break;
            }
            _ => out.push(Examined {
                buffer: b,
                rows: buffer.searched.clone(),
            }),
        }
    }
    out
}

/// True when `a` comes before `b` in search order.
fn before(a: Pos, b: Pos) -> bool {
    a.buffer < b.buffer || (a.buffer == b.buffer && a.row > b.row)
}

/// One coverage entry, and its withheld count.
fn coverage_entry(buffer: &CopiedBuffer, rows: &Range<usize>) -> (Value, u64) {
    let mut m = Map::new();
    m.insert("buffer".into(), json!(buffer.id));
    // One pass: rows in display order need not be in time order.
    let span = buffer.rows[rows.clone()].iter().map(|r| r.time).fold(
        None,
        |acc: Option<(UnixMillis, UnixMillis)>, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        },
    );
    if let Some((oldest, newest)) = span {
        m.insert("oldest".into(), time(oldest));
        m.insert("newest".into(), time(newest));
    }
    let withheld = if buffer.withheld.is_empty() {
        0
    } else {
        rows.clone().filter(|&i| buffer.is_withheld(i)).count() as u64
    };
    if withheld > 0 {
        m.insert("withheld".into(), json!(withheld));
    }
    if buffer.window_truncated {
        m.insert("window_truncated".into(), json!(true));
    }
    (Value::Object(m), withheld)
}

/// Coverage and the totals that come with it, for one examined set.
struct Covered {
    /// (buffer index, entry) in search order.
    entries: Vec<(usize, Value)>,
    withheld: u64,
    window_truncated: bool,
}

fn cover(buffers: &[CopiedBuffer], examined: &[Examined]) -> Covered {
    let mut withheld = 0;
    let mut window_truncated = false;
    let entries = examined
        .iter()
        .map(|e| {
            let (entry, w) = coverage_entry(&buffers[e.buffer], &e.rows);
            withheld += w;
            window_truncated |= buffers[e.buffer].window_truncated;
            (e.buffer, entry)
        })
        .collect();
    Covered {
        entries,
        withheld,
        window_truncated,
    }
}

/// The bytes a JSON list of these items takes inside its brackets.
fn list_len<'a>(items: impl Iterator<Item = &'a Value>) -> usize {
    let mut n = 0usize;
    let mut len = 0usize;
    for v in items {
        len += encoded_len(v);
        n += 1;
    }
    len + n.saturating_sub(1)
}

/// The fields every result has beside its list: coverage (as given), the
/// totals, and stopped.
fn frame(
    covered: &Covered,
    coverage: Vec<Value>,
    omitted: Option<usize>,
    regex_skipped: usize,
    stopped: bool,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("coverage".into(), Value::Array(coverage));
    if let Some(n) = omitted {
        m.insert("coverage_truncated".into(), json!(true));
        m.insert("coverage_omitted".into(), json!(n));
    }
    if covered.withheld > 0 {
        m.insert("withheld".into(), json!(covered.withheld));
    }
    if covered.window_truncated {
        m.insert("window_truncated".into(), json!(true));
    }
    if regex_skipped > 0 {
        m.insert("regex_skipped".into(), json!(regex_skipped));
    }
    if stopped {
        m.insert("stopped".into(), json!(STOPPED));
    }
    m.insert("truncated".into(), json!(false));
    m
}

/// The match object for hit `pos`.
fn match_json(buffers: &[CopiedBuffer], pos: Pos, context: usize) -> Value {
    let buffer = &buffers[pos.buffer];
    let mut m = Map::new();
    m.insert("buffer".into(), json!(buffer.id));
    m.insert("message".into(), message_json(&buffer.rows[pos.row]));
    if context > 0 {
        let lo = pos.row.saturating_sub(context);
        let hi = (pos.row + context + 1).min(buffer.rows.len());
        let around: Vec<Value> = (lo..hi)
            .filter(|&i| i != pos.row && !buffer.is_withheld(i))
            .map(|i| message_json(&buffer.rows[i]))
            .collect();
        if !around.is_empty() {
            m.insert("context".into(), Value::Array(around));
        }
    }
    Value::Object(m)
}

/// Everything a page is assembled from.
pub(crate) struct Parts<'a> {
    /// The copied buffers, in search order.
    pub(crate) buffers: &'a [CopiedBuffer],
    /// What the walk found.
    pub(crate) walk: &'a Walk,
    /// The request.
    pub(crate) request: &'a Request,
    /// The first buffer the copy bound left out, if any.
    pub(crate) left_out: Option<&'a str>,
    /// The byte budget.
    pub(crate) budget: usize,
}

/// A page of matches.
pub(crate) fn matches_page(p: &Parts<'_>) -> Page {
    let walk = p.walk;
    let stopped = matches!(walk.end, End::OutOfTime { .. });
    let walk_stop = walk.resume();
    let first = cover(p.buffers, &examined(p.buffers, walk_stop));
    let skipped_before = |stop: Option<Pos>| {
        walk.regex_skipped
            .iter()
            .filter(|&&s| stop.is_none_or(|x| before(s, x)))
            .count()
    };
    let full_len = list_len(first.entries.iter().map(|(_, v)| v));
    let partial = full_len > p.budget / 4;
    let placeholder = longest_cursor(p);

    // The frame as if cut, without the matches, skipped or (partial) coverage.
    let omitted_max = partial.then_some(first.entries.len());
    let base_coverage = if partial {
        Vec::new()
    } else {
        first.entries.iter().map(|(_, v)| v.clone()).collect()
    };
    let mut base = frame(
        &first,
        base_coverage,
        omitted_max,
        skipped_before(walk_stop),
        stopped,
    );
    base.insert("matches".into(), json!([]));
    base.insert("truncated".into(), json!(true));
    base.insert("next_cursor".into(), json!(placeholder));
    let base_len = encoded_len(&Value::Object(base));
    let skipped_frame = encoded_len(&json!({"skipped": []})) - 2 + 1; // `"skipped":[]` and a comma

    let limit = p.request.limit.min(walk.hits.len());
    let mut page = RowBudget::with_budget(p.budget);
    let mut kept: Vec<usize> = Vec::new();
    let mut kept_len = 0usize;
    let mut skipped_len = 0usize;
    let mut cut: Option<Pos> = None;
    for &hit in &walk.hits[..limit] {
        let entry_len = if partial && !kept.contains(&hit.buffer) {
            entry_of(&first, hit.buffer).map_or(0, encoded_len) + usize::from(!kept.is_empty())
        } else {
            0
        };
        let skipped_part = if page.skipped().is_empty() {
            0
        } else {
            skipped_frame + skipped_len
        };
        let frame_len = base_len + kept_len + entry_len + skipped_part;
        match page.offer(match_json(p.buffers, hit, p.request.context), frame_len) {
            Offer::Taken => {
                if entry_len > 0 {
                    kept.push(hit.buffer);
                    kept_len += entry_len;
                }
            }
            Offer::Full => {
                cut = Some(hit);
                break;
            }
            Offer::TooLarge => {
                let key = json!({"buffer": p.buffers[hit.buffer].id, "seq": p.buffers[hit.buffer].rows[hit.row].seq});
                skipped_len += encoded_len(&key) + usize::from(!page.skipped().is_empty());
                page.skip(key);
            }
        }
    }
    let filled = page.finish();

    // Where the next call starts.
    let stop = cut.or(walk_stop);
    let resume = match stop {
        Some(pos) => Some(resume_at(p.buffers, pos)),
        None => p.left_out.map(|id| Resume {
            buffer: id.to_owned(),
            start: Start::Newest,
        }),
    };
    let covered = cover(p.buffers, &examined(p.buffers, stop));
    let (coverage, omitted) = if partial {
        let keep: Vec<Value> = covered
            .entries
            .iter()
            .filter(|(b, _)| kept.contains(b))
            .map(|(_, v)| v.clone())
            .collect();
        let omitted = covered.entries.len() - keep.len();
        (keep, Some(omitted))
    } else {
        (
            covered.entries.iter().map(|(_, v)| v.clone()).collect(),
            None,
        )
    };
    let mut result = frame(&covered, coverage, omitted, skipped_before(stop), stopped);
    result.insert("matches".into(), Value::Array(filled.rows));
    if !filled.skipped.is_empty() {
        result.insert("skipped".into(), Value::Array(filled.skipped));
    }
    if let Some(resume) = resume {
        result.insert("truncated".into(), json!(true));
        result.insert("next_cursor".into(), json!(p.request.mint(&resume)));
    }
    Page {
        result: Value::Object(result),
        stopped,
    }
}

fn entry_of(covered: &Covered, buffer: usize) -> Option<&Value> {
    covered
        .entries
        .iter()
        .find(|(b, _)| *b == buffer)
        .map(|(_, v)| v)
}

/// The start of the next call for a stop at `pos` (not yet examined).
fn resume_at(buffers: &[CopiedBuffer], pos: Pos) -> Resume {
    let buffer = &buffers[pos.buffer];
    Resume {
        buffer: buffer.id.clone(),
        start: Start::At {
            seq: buffer.rows[pos.row].seq,
            remaining: (pos.row + 1 - buffer.searched.start) as u64,
        },
    }
}

/// A cursor at least as long as any this call can mint: the position's
/// size depends only on the buffer id's length.
fn longest_cursor(p: &Parts<'_>) -> String {
    let longest = p
        .buffers
        .iter()
        .map(|b| b.id.as_str())
        .chain(p.left_out)
        .max_by_key(|id| id.len())
        .unwrap_or("");
    p.request.mint(&Resume {
        buffer: longest.to_owned(),
        start: Start::At {
            seq: u64::MAX,
            remaining: u64::MAX,
        },
    })
}

/// A count_only result: counts for every buffer searched, no matches and
/// never a cursor.
///
/// The counts come first: every searched buffer's, else (short of room) the
/// non-zero ones, else as many non-zero ones as fit (truncated). They are
/// measured against a frame whose coverage is already bounded: when the full
/// coverage would take more than a quarter of the budget, only the entries of
/// buffers with a shown non-zero count are kept, in search order, in what the
/// counts leave of that quarter, and coverage_omitted counts the rest.
pub(crate) fn counts_page(p: &Parts<'_>) -> Page {
    let walk = p.walk;
    let stopped = matches!(walk.end, End::OutOfTime { .. });
    let stop = walk.resume();
    let covered = cover(p.buffers, &examined(p.buffers, stop));
    let counted: Vec<usize> = counted_buffers(p.buffers, stop);
    let regex_skipped = walk.regex_skipped.len();

    let full_len = list_len(covered.entries.iter().map(|(_, v)| v));
    let partial = full_len > p.budget / 4;
    let all_entries = || covered.entries.iter().map(|(_, v)| v.clone()).collect();
    // The frame with the coverage it keeps in any case: all of it, or none
    // (with the largest omitted count, so its digits are never short).
    let base_coverage = if partial { Vec::new() } else { all_entries() };
    let mut result = frame(
        &covered,
        base_coverage,
        partial.then_some(covered.entries.len()),
        regex_skipped,
        stopped,
    );
    result.insert("counts".into(), json!({}));
    // Measured with "truncated":false, the longer of the two.
    let frame_len = encoded_len(&Value::Object(result.clone()));

    let entry = |b: usize| {
        // `"<id>":<n>` as it encodes inside the object.
        encoded_len(&json!(p.buffers[b].id)) + 1 + walk.counts[b].to_string().len()
    };
    let counts_len = |list: &[usize]| {
        list.iter().map(|&b| entry(b)).sum::<usize>() + list.len().saturating_sub(1)
    };
    let fits = |list: &[usize]| frame_len + counts_len(list) <= p.budget;
    let mut truncated = stopped || p.left_out.is_some();
    let shown: Vec<usize> = if fits(&counted) {
        counted
    } else {
        let nonzero: Vec<usize> = counted
            .into_iter()
            .filter(|&b| walk.counts[b] > 0)
            .collect();
        if fits(&nonzero) {
            nonzero
        } else {
            truncated = true;
            let mut keep = Vec::new();
            for b in nonzero {
                keep.push(b);
                if !fits(&keep) {
                    keep.pop();
                    break;
                }
            }
            keep
        }
    };
    if partial {
        // What the counts leave, and never more than a quarter of the budget.
        let room = p
            .budget
            .saturating_sub(frame_len + counts_len(&shown))
            .min(p.budget / 4);
        let mut kept = Vec::new();
        let mut kept_len = 0usize;
        for (b, v) in &covered.entries {
            if walk.counts[*b] == 0 || !shown.contains(b) {
                continue;
            }
            let len = encoded_len(v) + usize::from(!kept.is_empty());
            if kept_len + len > room {
                break;
            }
            kept_len += len;
            kept.push(v.clone());
        }
        let omitted = covered.entries.len() - kept.len();
        result.insert("coverage_omitted".into(), json!(omitted));
        result.insert("coverage".into(), Value::Array(kept));
    }
    let counts: Map<String, Value> = shown
        .into_iter()
        .map(|b| (p.buffers[b].id.clone(), json!(walk.counts[b])))
        .collect();
    result.insert("counts".into(), Value::Object(counts));
    result.insert("truncated".into(), json!(truncated));
    Page {
        result: Value::Object(result),
        stopped,
    }
}

/// The buffers a count walk reached: every one before the stop, and the
/// one it stopped in.
fn counted_buffers(buffers: &[CopiedBuffer], stop: Option<Pos>) -> Vec<usize> {
    let end = stop.map_or(buffers.len(), |s| s.buffer + 1);
    (0..end.min(buffers.len())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::args::Args;
    use crate::read::result::{encode, BUDGET};
    use crate::tools::search::walk::{walk, Goal, Query};
    use rete_engine::clock::UnixMillis;
    use rete_engine::row::{Payload, Row};

    fn rows(n: usize, text: impl Fn(usize) -> String) -> Vec<Row> {
        (0..n)
            .map(|i| Row {
                seq: i as u64 + 1,
                time: UnixMillis(1_790_769_600_000 + i as i64 * 1000),
                msgid: None,
                from: "bob".into(),
                history: false,
                payload: Payload::Privmsg {
                    text: text(i).into(),
                },
            })
            .collect()
    }

    fn id(n: usize) -> String {
        format!("00000000-0000-4000-8000-{n:012}")
    }

    fn request(v: Value) -> Request {
        Request::parse(&Args::from_request(Some(&v)).unwrap()).unwrap()
    }

    fn run(buffers: &[CopiedBuffer], req: &Request, left_out: Option<&str>, budget: usize) -> Page {
        let q = Query {
            matcher: crate::read::matcher::Matcher::new(req.mode, &req.query).unwrap(),
            filters: req.filters.clone(),
        };
        let goal = if req.count_only {
            Goal::Count
        } else {
            Goal::Page(req.limit)
        };
        let w = walk(buffers, &q, goal, &mut |_| false, &|| false);
        let parts = Parts {
            buffers,
            walk: &w,
            request: req,
            left_out,
            budget,
        };
        let page = if req.count_only {
            counts_page(&parts)
        } else {
            matches_page(&parts)
        };
        assert!(
            encode(&page.result).len() <= budget,
            "{}",
            encode(&page.result).len()
        );
        page
    }

    fn seqs(page: &Page) -> Vec<u64> {
        page.result["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["message"]["seq"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn a_complete_walk_is_not_truncated_and_lists_coverage() {
        let bufs = vec![
            CopiedBuffer::of_rows(id(1), rows(3, |i| format!("hit {i}"))),
            CopiedBuffer::of_rows(id(2), vec![]),
        ];
        let page = run(&bufs, &request(json!({"query": "hit"})), None, BUDGET);
        assert!(!page.stopped);
        assert_eq!(seqs(&page), vec![3, 2, 1]);
        assert_eq!(page.result["truncated"], json!(false));
        assert!(page.result.get("next_cursor").is_none());
        assert_eq!(
            page.result["coverage"],
            json!([
                {"buffer": id(1), "oldest": "2026-09-30T12:00:00Z", "newest": "2026-09-30T12:00:02Z"},
                {"buffer": id(2)}
            ])
        );
        assert_eq!(page.result["matches"][0]["buffer"], json!(id(1)));
    }

    #[test]
    fn a_full_page_continues_at_the_next_match() {
        let bufs = vec![CopiedBuffer::of_rows(id(1), rows(10, |i| format!("m{i}")))];
        let req = request(json!({"query": "m", "limit": 4}));
        let page = run(&bufs, &req, None, BUDGET);
        assert_eq!(seqs(&page), vec![10, 9, 8, 7]);
        assert_eq!(page.result["truncated"], json!(true));
        let cursor = page.result["next_cursor"].as_str().unwrap();
        assert_eq!(
            req.open(cursor),
            Ok(Resume {
                buffer: id(1),
                start: Start::At {
                    seq: 6,
                    remaining: 6
                }
            })
        );
        // Coverage stops before the next page's first match.
        assert_eq!(
            page.result["coverage"][0]["oldest"],
            json!("2026-09-30T12:00:06Z")
        );
    }

    #[test]
    fn the_byte_budget_cuts_and_the_cursor_resumes_at_the_cut() {
        let bufs = vec![CopiedBuffer::of_rows(id(1), rows(20, |_| "x".repeat(300)))];
        let req = request(json!({"query": "x", "limit": 20}));
        let page = run(&bufs, &req, None, 2_000);
        let got = seqs(&page);
        assert!(got.len() >= 2 && got.len() < 20, "{got:?}");
        let next = *got.last().unwrap() - 1;
        let cursor = page.result["next_cursor"].as_str().unwrap();
        assert_eq!(
            req.open(cursor).unwrap().start,
            Start::At {
                seq: next,
                remaining: next
            }
        );
    }

    #[test]
    fn a_match_larger_than_the_budget_is_skipped() {
        let bufs = vec![CopiedBuffer::of_rows(
            id(1),
            rows(3, |i| {
                if i == 1 {
                    "x".repeat(5_000)
                } else {
                    "x".into()
                }
            }),
        )];
        let page = run(&bufs, &request(json!({"query": "x"})), None, 2_000);
        assert_eq!(seqs(&page), vec![3, 1]);
        assert_eq!(page.result["skipped"], json!([{"buffer": id(1), "seq": 2}]));
        assert_eq!(page.result["truncated"], json!(false));
    }

    #[test]
    fn context_brings_neighbours_in_display_order_without_withheld_ones() {
        let mut b = CopiedBuffer::of_rows(
            id(1),
            rows(7, |i| {
                if i == 3 {
                    "hit".into()
                } else {
                    format!("n{i}")
                }
            }),
        );
        b.withheld = vec![false, false, true, false, false, false, false];
        let page = run(
            &[b],
            &request(json!({"query": "hit", "context": 2})),
            None,
            BUDGET,
        );
        let ctx: Vec<u64> = page.result["matches"][0]["context"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(ctx, vec![2, 5, 6]);
        assert_eq!(page.result["withheld"], json!(1));
        assert_eq!(page.result["coverage"][0]["withheld"], json!(1));
        let none = run(
            &[CopiedBuffer::of_rows(id(1), rows(1, |_| "hit".into()))],
            &request(json!({"query": "hit", "context": 2})),
            None,
            BUDGET,
        );
        assert!(none.result["matches"][0].get("context").is_none());
    }

    #[test]
    fn the_copy_bound_pages_to_the_first_buffer_left_out() {
        let bufs = vec![CopiedBuffer::of_rows(id(1), rows(2, |_| "no".into()))];
        let req = request(json!({"query": "hit"}));
        let page = run(&bufs, &req, Some(&id(2)), BUDGET);
        assert!(!page.stopped);
        assert_eq!(page.result["truncated"], json!(true));
        assert!(page.result.get("stopped").is_none());
        let cursor = page.result["next_cursor"].as_str().unwrap();
        assert_eq!(
            req.open(cursor),
            Ok(Resume {
                buffer: id(2),
                start: Start::Newest
            })
        );
    }

    #[test]
    fn a_large_coverage_keeps_only_the_pages_buffers() {
        // 300 buffers of ~100-byte entries: over a quarter of 60,000.
        let bufs: Vec<CopiedBuffer> = (0..300)
            .map(|n| {
                CopiedBuffer::of_rows(
                    id(n),
                    rows(1, |_| {
                        if n % 100 == 7 {
                            "hit".into()
                        } else {
                            "no".into()
                        }
                    }),
                )
            })
            .collect();
        let page = run(&bufs, &request(json!({"query": "hit"})), None, BUDGET);
        assert_eq!(page.result["coverage_truncated"], json!(true));
        assert_eq!(page.result["coverage_omitted"], json!(297));
        let kept: Vec<&str> = page.result["coverage"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["buffer"].as_str().unwrap())
            .collect();
        assert_eq!(kept, vec![id(7), id(107), id(207)]);
        // A small coverage is kept whole.
        let page = run(&bufs[..10], &request(json!({"query": "hit"})), None, BUDGET);
        assert!(page.result.get("coverage_truncated").is_none());
        assert_eq!(page.result["coverage"].as_array().unwrap().len(), 10);
    }

    #[test]
    fn counts_list_every_searched_buffer_and_drop_zeros_when_short_of_room() {
        let bufs = vec![
            CopiedBuffer::of_rows(id(1), rows(3, |_| "hit".into())),
            CopiedBuffer::of_rows(id(2), rows(3, |_| "no".into())),
        ];
        let req = request(json!({"query": "hit", "count_only": true, "cursor": "ignored"}));
        let page = run(&bufs, &req, None, BUDGET);
        assert_eq!(page.result["counts"], json!({id(1): 3, id(2): 0}));
        assert!(page.result.get("matches").is_none());
        assert!(page.result.get("next_cursor").is_none());
        assert_eq!(page.result["truncated"], json!(false));
        // With a cut by the copy bound: truncated, still no cursor.
        let page = run(&bufs, &req, Some(&id(3)), BUDGET);
        assert_eq!(page.result["truncated"], json!(true));
        assert!(page.result.get("next_cursor").is_none());
        // 1 buffer with matches and 30 without, in 1,000 bytes: the zeros
        // do not fit and are dropped, which is not a cut.
        let mut many = vec![CopiedBuffer::of_rows(id(1), rows(3, |_| "hit".into()))];
        many.extend((2..32).map(|n| CopiedBuffer::of_rows(id(n), rows(1, |_| "no".into()))));
        let plain = request(json!({"query": "hit", "count_only": true}));
        assert_eq!(
            run(&many, &plain, None, BUDGET).result["counts"]
                .as_object()
                .unwrap()
                .len(),
            31
        );
        let page = run(&many, &plain, None, 1_000);
        assert_eq!(page.result["counts"], json!({id(1): 3}));
        assert_eq!(page.result["truncated"], json!(false));
        assert_eq!(page.result["coverage_omitted"], json!(30));
    }

    #[test]
    fn counts_over_hundreds_of_buffers_keep_every_count_and_bound_the_coverage() {
        // One row in each buffer, all counted: the counts alone fit, the
        // coverage of every buffer would not (issue 10: 540 buffers built a
        // 93,684-byte result; 400 kept 349 counts; 300 said
        // coverage_truncated with coverage_omitted 0).
        let req = request(json!({"query": "", "count_only": true}));
        for n in [120, 300, 400, 540, 1_000] {
            let bufs: Vec<CopiedBuffer> = (0..n)
                .map(|i| CopiedBuffer::of_rows(id(i), rows(1, |_| "x".into())))
                .collect();
            let page = run(&bufs, &req, None, BUDGET);
            let len = encode(&page.result).len();
            assert!(len <= BUDGET, "{n}: {len}");
            assert_eq!(page.result["truncated"], json!(false), "{n}");
            let counts = page.result["counts"].as_object().unwrap();
            assert_eq!(counts.len(), n, "{n}: every count is kept");
            let kept = page.result["coverage"].as_array().unwrap().len();
            let full = list_len(
                cover(&bufs, &examined(&bufs, None))
                    .entries
                    .iter()
                    .map(|(_, v)| v),
            );
            if full > BUDGET / 4 {
                assert_eq!(page.result["coverage_truncated"], json!(true), "{n}");
                let omitted = page.result["coverage_omitted"].as_u64().unwrap() as usize;
                assert_eq!(kept + omitted, n, "{n}: omitted counts what was left out");
                assert!(omitted > 0, "{n}");
                let coverage_len = encoded_len(&page.result["coverage"]);
                assert!(coverage_len <= BUDGET / 4 + 2, "{n}: {coverage_len}");
            } else {
                assert!(page.result.get("coverage_truncated").is_none(), "{n}");
                assert_eq!(kept, n);
            }
        }
    }

    #[test]
    fn counts_that_do_not_fit_are_cut_and_truncated() {
        let bufs: Vec<CopiedBuffer> = (0..4)
            .map(|n| CopiedBuffer::of_rows(id(n), rows(1, |_| "hit".into())))
            .collect();
        let req = request(json!({"query": "hit", "count_only": true}));
        let all = run(&bufs, &req, None, BUDGET);
        // Short of room even for the counts with no coverage at all: the
        // coverage gives way first, then the counts are cut.
        let mut bare = all.result.clone();
        bare["coverage"] = json!([]);
        bare["coverage_truncated"] = json!(true);
        bare["coverage_omitted"] = json!(4);
        let tight = encode(&bare).len() - 30;
        let page = run(&bufs, &req, None, tight);
        let n = page.result["counts"].as_object().unwrap().len();
        assert!((1..4).contains(&n), "{n}");
        assert_eq!(page.result["truncated"], json!(true));
    }
}
