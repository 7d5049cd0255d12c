//! IRCv3 batches: which are open, and which make their lines history.

use super::Session;
use crate::line::Line;
use serde::Serialize;
use std::collections::BTreeMap;

/// An open batch.
#[derive(Clone, Debug, Serialize)]
pub struct OpenBatch {
    /// The batch type (`chathistory`, `netsplit`, `labeled-response`, ...).
    pub kind: String,
    /// The batch's parameters after the type.
    pub params: Vec<String>,
    /// The enclosing batch's reference, for nested batches.
    pub parent: Option<String>,
    /// Set on a history batch of rows from before every row held (see
    /// [`Session::mark_batch_older`]): its number in the session.
    #[serde(skip)]
    pub older: Option<u64>,
}

/// The batches open on this connection, by reference tag.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Batches {
    open: BTreeMap<String, OpenBatch>,
}

/// Batch types whose lines are history, not live.
const HISTORY_TYPES: &[&str] = &[
    "chathistory",
    "draft/chathistory",
    "znc.in/playback",
    "playback",
];

/// A cap on open batches, so a server that never closes them cannot grow memory.
const MAX_OPEN: usize = 64;

impl Batches {
    /// The open batches by reference tag, in tag order.
    pub fn open(&self) -> impl ExactSizeIterator<Item = (&str, &OpenBatch)> + '_ {
        self.open.iter().map(|(r, b)| (r.as_str(), b))
    }

    /// True when the line sits (at any depth) inside a history batch.
    pub fn is_history(&self, line: &Line<'_>) -> bool {
        self.enclosing(line)
            .any(|b| HISTORY_TYPES.contains(&b.kind.as_str()))
    }

    /// The number of the batch of older rows the line sits in (at any
    /// depth), if any (see [`Session::mark_batch_older`]).
    pub fn older_batch(&self, line: &Line<'_>) -> Option<u64> {
        self.enclosing(line).find_map(|b| b.older)
    }

    /// The open batches around the line, innermost first (at most
    /// `MAX_OPEN`, so a cycle of parents ends).
    fn enclosing<'a>(&'a self, line: &Line<'_>) -> impl Iterator<Item = &'a OpenBatch> + 'a {
        let first = line.tag("batch").and_then(|r| self.open.get(r.as_ref()));
        std::iter::successors(first, |b| {
            b.parent.as_deref().and_then(|p| self.open.get(p))
        })
        .take(MAX_OPEN)
    }
}

impl Session {
    /// `BATCH +ref type params...` opens; `BATCH -ref` closes. InspIRCd sends
    /// the closing reference as a trailing parameter (`BATCH :-ref`), which the
    /// tokenizer already presents as a plain parameter.
    pub(super) fn on_batch(&mut self, line: &Line<'_>) {
        let Some(reference) = line.param(0) else {
            return;
        };
        if let Some(r) = reference.strip_prefix('+') {
            if self.batches.open.len() >= MAX_OPEN {
                return;
            }
            let params = line.params();
            let batch = OpenBatch {
                kind: params.get(1).copied().unwrap_or("").to_owned(),
                params: params.iter().skip(2).map(|p| (*p).to_owned()).collect(),
                parent: line.tag("batch").map(|b| b.into_owned()),
                older: None,
            };
            if HISTORY_TYPES.contains(&batch.kind.as_str()) {
                self.note_playback_time(line);
            }
            self.batches.open.insert(r.to_owned(), batch);
        } else if let Some(r) = reference.strip_prefix('-') {
            let closed = self.batches.open.remove(r);
            if closed.is_some_and(|b| HISTORY_TYPES.contains(&b.kind.as_str())) {
                self.note_playback_time(line);
                self.buffers.end_replays();
            }
        }
    }

    /// The history batch `reference`, just opened, holds rows from before
    /// every row this session holds: a host fetched the rows before the
    /// oldest one it has (a ReteCloud session's request for older rows).
    /// Its rows are placed by time as any history is, but at an equal time
    /// they sort before every row held now, rather than after them as
    /// their later arrival would put them. Does nothing unless a history
    /// batch with this reference is open.
    pub fn mark_batch_older(&mut self, reference: &str) {
        let Some(batch) = self.batches.open.get_mut(reference) else {
            return;
        };
        if HISTORY_TYPES.contains(&batch.kind.as_str()) && batch.older.is_none() {
            self.older_batches += 1;
            batch.older = Some(self.older_batches);
        }
    }
}
