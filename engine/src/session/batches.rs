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
        let Some(mut reference) = line.tag("batch").map(|b| b.into_owned()) else {
            return false;
        };
        for _ in 0..MAX_OPEN {
            let Some(batch) = self.open.get(&reference) else {
                return false;
            };
            if HISTORY_TYPES.contains(&batch.kind.as_str()) {
                return true;
            }
            match &batch.parent {
                Some(p) => reference = p.clone(),
                None => return false,
            }
        }
        false
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
}
