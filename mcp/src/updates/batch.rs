//! What one collection batch asks of a session, and what it brings back.
//!
//! [`read_batch`] runs inside the session actor, between two engine inputs,
//! so it must be cheap: it clones only the queued rows of the kinds some
//! subscription collects, takes the nick once, and hands back the session's
//! secret scanner (a cheap shared clone). Matching and the secret scan run
//! afterwards, in the registry, off the IRC connection's path.

use super::collector::Range;
use crate::read::withheld::Withholder;
use rete_engine::buffer::BufferKind;
use rete_engine::casemap::CaseMapping;
use rete_engine::ids::BufferId;
use rete_engine::row::{Kind, Row};
use rete_engine::view::SessionView;

/// A set of row kinds, as a bit mask over [`Kind::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KindSet(u32);

impl KindSet {
    /// Adds a kind.
    pub(crate) fn insert(&mut self, kind: Kind) {
        self.0 |= Self::bit(kind);
    }

    /// True when the kind is in the set.
    pub(crate) fn contains(self, kind: Kind) -> bool {
        self.0 & Self::bit(kind) != 0
    }

    fn bit(kind: Kind) -> u32 {
        let index = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        1 << index
    }
}

/// One batch's questions for a session.
#[derive(Clone, Debug, Default)]
pub(crate) struct BatchRequest {
    /// The batch's number, which its answer carries back: an answer to a
    /// batch the registry no longer waits for is ignored, and a starting
    /// point is only taken from a batch numbered after its subscription.
    pub(crate) batch: u64,
    /// The queued ranges, one per buffer.
    pub(crate) ranges: Vec<Range>,
    /// The kinds any subscription collects; other rows are not cloned.
    pub(crate) kinds: KindSet,
    /// Read every buffer's last seq too (a subscription's starting point).
    pub(crate) starts: bool,
}

/// One buffer's part of a batch.
#[derive(Clone, Debug)]
pub(crate) struct BufferRows {
    /// The range that was asked for.
    pub(crate) range: Range,
    /// The buffer's name ("" when the session does not list it).
    pub(crate) name: String,
    /// Its kind, when the session lists it.
    pub(crate) kind: Option<BufferKind>,
    /// The rows of the range still held, of the wanted kinds, in seq order.
    pub(crate) rows: Vec<Row>,
    /// True when rows of the range were evicted before this read.
    pub(crate) lost: bool,
}

/// What one batch brought back.
#[derive(Clone, Debug, Default)]
pub(crate) struct BatchData {
    /// The request's number.
    pub(crate) batch: u64,
    /// The session's nick at the read: mentions are judged against it.
    pub(crate) nick: String,
    /// The session's name in the config, and how its server folds case:
    /// what a scoped subscription's reach judges buffers by.
    pub(crate) network: String,
    pub(crate) casemap: CaseMapping,
    /// The session's secret scanner at the read.
    pub(crate) withholder: Withholder,
    /// One entry per range asked for.
    pub(crate) buffers: Vec<BufferRows>,
    /// Every buffer's last seq, when starts were asked for.
    pub(crate) starts: Option<Vec<(BufferId, u64)>>,
}

/// Answers a batch request from a session's view.
pub(crate) fn read_batch(view: &SessionView<'_>, request: BatchRequest) -> BatchData {
    let batch = request.batch;
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
        batch,
        nick: view.nick().to_owned(),
        network: view.name().to_owned(),
        casemap: view.isupport().casemapping,
        withholder: Withholder::for_view(view),
        buffers,
        starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::buffer::BufferKind;
    use rete_engine::clock::{Mono, Now, UnixMillis};
    use rete_engine::ids::SessionId;
    use rete_engine::session::{Session, SessionConfig};

    /// A registered session in #rete holding at most `capacity` rows per
    /// buffer, fed `lines` after joining.
    fn session(capacity: usize, lines: &[&str]) -> Session {
        let id = SessionId::parse("6A1E9D4C-0000-4000-8000-000000000001").unwrap();
        let mut config = SessionConfig::new(id, "test", "mriron");
        config.buffer_capacity = capacity;
        let mut s = Session::new(config);
        let now = Now {
            mono: Mono(1),
            wall: UnixMillis(1_790_769_600_000),
        };
        s.handle_connected(now, "127.0.0.1:6667", None, [7; 18]);
        s.handle_line(now, ":irc 001 mriron :Welcome");
        s.handle_line(now, ":mriron!u@h JOIN #rete");
        for line in lines {
            s.handle_line(now, line);
        }
        s
    }

    fn channel(s: &Session) -> (BufferId, u64) {
        let view = s.view();
        let b = view
            .find_buffer(BufferKind::Channel, "#rete")
            .expect("joined")
            .clone();
        let last = view.buffer(&b).map_or(0, |b| b.last_seq());
        (b, last)
    }

    fn request(buffer: &BufferId, from: u64, through: u64, kinds: &[Kind]) -> BatchRequest {
        let mut set = KindSet::default();
        for k in kinds {
            set.insert(*k);
        }
        BatchRequest {
            batch: 1,
            ranges: vec![Range {
                buffer: buffer.clone(),
                from,
                through,
                evicted: false,
            }],
            kinds: set,
            starts: true,
        }
    }

    #[test]
    fn a_batch_reads_the_range_of_wanted_kinds_the_nick_and_the_starts() {
        let s = session(
            100,
            &[
                ":alice!a@h PRIVMSG #rete :one",
                ":bob!b@h JOIN #rete",
                ":alice!a@h NOTICE #rete :two",
                ":alice!a@h PRIVMSG #rete :three",
            ],
        );
        let (b, last) = channel(&s);
        let data = read_batch(
            &s.view(),
            request(&b, last - 3, last - 1, &[Kind::Privmsg, Kind::Notice]),
        );
        assert_eq!(data.nick, "mriron");
        let got = &data.buffers[0];
        assert_eq!(
            (got.name.as_str(), got.kind),
            ("#rete", Some(BufferKind::Channel))
        );
        let texts: Vec<String> = got
            .rows
            .iter()
            .map(|r| {
                let mut t = String::new();
                r.payload.for_each_text(|f| t.push_str(f));
                t
            })
            .collect();
        assert_eq!(
            texts,
            ["one", "two"],
            "the join is not wanted, three is past the range"
        );
        assert!(!got.lost);
        let starts = data.starts.expect("asked for");
        assert!(starts.contains(&(b, last)));
    }

    #[test]
    fn rows_evicted_before_the_read_are_reported_lost() {
        let s = session(
            2,
            &[
                ":alice!a@h PRIVMSG #rete :one",
                ":alice!a@h PRIVMSG #rete :two",
                ":alice!a@h PRIVMSG #rete :three",
            ],
        );
        let (b, last) = channel(&s);
        let data = read_batch(&s.view(), request(&b, last - 2, last, &[Kind::Privmsg]));
        let got = &data.buffers[0];
        assert!(got.lost, "one was evicted at capacity 2");
        assert_eq!(got.rows.len(), 2);
    }

    #[test]
    fn an_evicted_range_or_an_unknown_buffer_reads_no_rows() {
        let s = session(100, &[":alice!a@h PRIVMSG #rete :one"]);
        let (b, last) = channel(&s);
        let mut req = request(&b, last, last, &[Kind::Privmsg]);
        req.ranges[0].evicted = true;
        assert!(read_batch(&s.view(), req).buffers[0].rows.is_empty());
        let gone = BufferId::from_client("0B0B0B0B-0000-5000-8000-0000000000FF");
        let data = read_batch(&s.view(), request(&gone, 1, 5, &[Kind::Privmsg]));
        assert_eq!(data.buffers[0].kind, None);
        assert!(data.buffers[0].rows.is_empty());
    }

    #[test]
    fn kind_sets_hold_what_was_inserted() {
        let mut set = KindSet::default();
        set.insert(Kind::Privmsg);
        set.insert(Kind::Kick);
        assert!(set.contains(Kind::Privmsg) && set.contains(Kind::Kick));
        assert!(!set.contains(Kind::Notice) && !set.contains(Kind::Status));
    }
}
