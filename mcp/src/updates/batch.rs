//! What one collection batch asks of a session, and what it brings back.
//!
//! [`read_batch`] runs inside the session actor, between two engine inputs,
//! so it must be cheap: it clones only the queued rows of the kinds some
//! subscription collects, takes the nick once, and hands back the session's
//! secret scanner (a cheap shared clone). Matching and the secret scan run
//! afterwards, in the registry, off the IRC connection's path.

use super::collector::Range;
use crate::tools::withheld::Withholder;
use rete_engine::buffer::BufferKind;
use rete_engine::ids::BufferId;
use rete_engine::row::{Kind, Row};
use rete_engine::view::SessionView;

/// A set of row kinds, as a bit mask over [`Kind::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindSet(u32);

impl KindSet {
    /// Adds a kind.
    pub fn insert(&mut self, kind: Kind) {
        self.0 |= Self::bit(kind);
    }

    /// True when the kind is in the set.
    pub fn contains(self, kind: Kind) -> bool {
        self.0 & Self::bit(kind) != 0
    }

    fn bit(kind: Kind) -> u32 {
        let index = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        1 << index
    }
}

/// One batch's questions for a session.
#[derive(Clone, Debug, Default)]
pub struct BatchRequest {
    /// The queued ranges, one per buffer.
    pub ranges: Vec<Range>,
    /// The kinds any subscription collects; other rows are not cloned.
    pub kinds: KindSet,
    /// Read every buffer's last seq too (a subscription's starting point).
    pub starts: bool,
}

/// One buffer's part of a batch.
#[derive(Clone, Debug)]
pub struct BufferRows {
    /// The range that was asked for.
    pub range: Range,
    /// The buffer's name ("" when the session does not list it).
    pub name: String,
    /// Its kind, when the session lists it.
    pub kind: Option<BufferKind>,
    /// The rows of the range still held, of the wanted kinds, in seq order.
    pub rows: Vec<Row>,
    /// True when rows of the range were evicted before this read.
    pub lost: bool,
}

/// What one batch brought back.
#[derive(Clone, Debug, Default)]
pub struct BatchData {
    /// The session's nick at the read: mentions are judged against it.
    pub nick: String,
    /// The session's secret scanner at the read.
    pub withholder: Withholder,
    /// One entry per range asked for.
    pub buffers: Vec<BufferRows>,
    /// Every buffer's last seq, when starts were asked for.
    pub starts: Option<Vec<(BufferId, u64)>>,
}

/// Answers a batch request from a session's view.
pub fn read_batch(view: &SessionView<'_>, request: BatchRequest) -> BatchData {
    let buffers = request
        .ranges
        .into_iter()
        .map(|range| match view.buffer(&range.buffer) {
            None => BufferRows {
                range,
                name: String::new(),
                kind: None,
                rows: Vec::new(),
                lost: false,
            },
            Some(buffer) => {
                let lost = buffer.evicted_after(range.from.saturating_sub(1));
                let rows = if range.evicted {
                    Vec::new()
                } else {
                    buffer
                        .since(range.from.saturating_sub(1))
                        .take_while(|r| r.seq <= range.through)
                        .filter(|r| request.kinds.contains(r.kind()))
                        .cloned()
                        .collect()
                };
                BufferRows {
                    name: buffer.name().to_owned(),
                    kind: Some(buffer.kind()),
                    rows,
                    lost,
                    range,
                }
            }
        })
        .collect();
    let starts = request.starts.then(|| {
        view.buffers()
            .map(|b| (b.id().clone(), b.last_seq()))
            .collect()
    });
    BatchData {
        nick: view.nick().to_owned(),
        withholder: Withholder::for_view(view),
        buffers,
        starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_sets_hold_what_was_inserted() {
        let mut set = KindSet::default();
        set.insert(Kind::Privmsg);
        set.insert(Kind::Kick);
        assert!(set.contains(Kind::Privmsg) && set.contains(Kind::Kick));
        assert!(!set.contains(Kind::Notice) && !set.contains(Kind::Status));
    }
}
