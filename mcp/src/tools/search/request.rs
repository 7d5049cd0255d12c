//! search_messages' arguments, checked in one place, and what its cursors
//! are bound to and positioned by.

use super::filters::{parse_from, parse_kinds, parse_time, Filters};
use super::window::Start;
use crate::read::args::{ArgError, Args};
use crate::read::cursor::{self, Kind};
use crate::read::matcher::Mode;
use crate::tools::spec::{ArgSpec, Choice, Flag, Integer, RequiredText, Text, Texts, NEXT_CURSOR};

/// The default and largest page.
pub(crate) const LIMIT_DEFAULT: i64 = 50;
/// See [`LIMIT_DEFAULT`].
pub(crate) const LIMIT_MAX: i64 = 500;
/// The most neighbours per side of a match.
pub(crate) const CONTEXT_MAX: i64 = 10;

const QUERY: RequiredText = RequiredText::new(
    "query",
    "What to find. An empty substring query matches every message.",
);
const MATCH: Choice = Choice::new("match", "substring", "substring, glob or regex.");
const SESSIONS: Texts = Texts::new("sessions", "Only these session ids.");
const BUFFERS: Texts = Texts::new("buffers", "Only these buffer ids.");
const FROM: Text = Text::new("from", "Only messages from this nick, ignoring case.");
const KINDS: Texts = Texts::new(
    "kinds",
    "Only these message kinds (the kind field's values).",
);
const SINCE: Text = Text::new("since", "Only messages at or after this ISO-8601 time.");
const UNTIL: Text = Text::new("until", "Only messages at or before this ISO-8601 time.");
const LIMIT: Integer = Integer::limit(LIMIT_DEFAULT, LIMIT_MAX, "How many matches.");
const COUNT_ONLY: Flag = Flag::new("count_only", false, "Counts only.");
const CONTEXT: Integer = Integer::new(
    "context",
    0,
    0,
    CONTEXT_MAX,
    "Neighbouring messages per match.",
);

/// Every argument search_messages takes, in the order they are read.
pub(crate) const ARGUMENTS: [ArgSpec; 12] = [
    QUERY.spec,
    MATCH.spec,
    SESSIONS.spec,
    BUFFERS.spec,
    FROM.spec,
    KINDS.spec,
    SINCE.spec,
    UNTIL.spec,
    LIMIT.spec,
    COUNT_ONLY.spec,
    CONTEXT.spec,
    NEXT_CURSOR.spec,
];

/// A checked search request.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The query as sent.
    pub query: String,
    /// How it is matched.
    pub mode: Mode,
    /// Session ids as sent, upper-cased, sorted, deduplicated; None when
    /// absent or empty.
    pub(crate) sessions: Option<Vec<String>>,
    /// Buffer ids likewise.
    pub(crate) buffers: Option<Vec<String>>,
    /// from, kinds, since and until.
    pub(crate) filters: Filters,
    /// Matches per page (1…500).
    pub(crate) limit: usize,
    /// Counts only.
    pub(crate) count_only: bool,
    /// Neighbours per side of a match (0…10).
    pub(crate) context: usize,
    /// The cursor as sent.
    pub(crate) cursor: Option<String>,
}

impl Request {
    /// Reads and checks the arguments, in the order they are listed.
    pub fn parse(args: &Args) -> Result<Request, ArgError> {
        let query = QUERY.read(args)?.to_owned();
        let mode = Mode::parse(MATCH.read(args)?)
            .ok_or_else(|| ArgError::new("match must be substring, glob or regex"))?;
        let sessions = id_list(SESSIONS.read(args)?);
        let buffers = id_list(BUFFERS.read(args)?);
        let from = parse_from(FROM.read(args)?);
        let kinds = parse_kinds(KINDS.read(args)?)?;
        let since = parse_time("since", SINCE.read(args)?)?;
        let until = parse_time("until", UNTIL.read(args)?)?;
        let limit = LIMIT.read_count(args)?;
        let count_only = COUNT_ONLY.read(args)?;
        let context = CONTEXT.read_count(args)?;
        let cursor = NEXT_CURSOR.read(args)?.map(str::to_owned);
        Ok(Request {
            query,
            mode,
            sessions,
            buffers,
            filters: Filters {
                from,
                kinds,
                since,
                until,
            },
            limit,
            count_only,
            context,
            cursor,
        })
    }

    /// What a cursor is bound to: everything but limit, count_only and the
    /// cursor, with lists order-insensitive and from lowercased.
    fn binding(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut part = |bytes: &[u8]| {
            out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
            out.extend_from_slice(bytes);
        };
        part(self.query.as_bytes());
        part(self.mode.as_str().as_bytes());
        for list in [&self.sessions, &self.buffers] {
            match list {
                None => part(b"-"),
                Some(ids) => {
                    part(b"+");
                    part(&(ids.len() as u64).to_be_bytes());
                    for id in ids {
                        part(id.as_bytes());
                    }
                }
            }
        }
        match &self.filters.from {
            None => part(b"-"),
            Some(f) => {
                part(b"+");
                part(f.as_bytes());
            }
        }
        match &self.filters.kinds {
            None => part(b"-"),
            Some(kinds) => {
                part(b"+");
                let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                part(names.join(",").as_bytes());
            }
        }
        for t in [self.filters.since, self.filters.until] {
            match t {
                None => part(b"-"),
                Some(s) => {
                    part(b"+");
                    part(&s.to_be_bytes());
                }
            }
        }
        part(&(self.context as u64).to_be_bytes());
        out
    }

    /// A cursor that starts the next call at `resume`.
    pub(crate) fn mint(&self, resume: &Resume) -> String {
        let binding = self.binding();
        cursor::mint(
            Kind::Search,
            &[b"search_messages", &binding],
            &resume.encode(),
        )
    }

    /// The position a cursor names, when it was minted for this request.
    pub(crate) fn open(&self, text: &str) -> Result<Resume, &'static str> {
        let binding = self.binding();
        let position = cursor::open(text, Kind::Search, &[b"search_messages", &binding])?;
        Resume::decode(&position)
    }
}

/// Ids as a sorted, deduplicated, upper-cased list; absent or empty is None
/// (an empty list is no filter, as for subscribe).
fn id_list(ids: Option<Vec<&str>>) -> Option<Vec<String>> {
    let mut ids: Vec<String> = ids?.iter().map(|s| s.to_ascii_uppercase()).collect();
    ids.sort();
    ids.dedup();
    (!ids.is_empty()).then_some(ids)
}

/// Where a call starts: a buffer and the place in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The buffer id.
    pub(crate) buffer: String,
    /// Where in it.
    pub(crate) start: Start,
}

impl Resume {
    fn encode(&self) -> Vec<u8> {
        let (seq, remaining) = match self.start {
            Start::Newest => (0, 0),
            Start::At { seq, remaining } => (seq, remaining),
        };
        let mut out = cursor::pack(&[seq, remaining]);
        out.extend_from_slice(self.buffer.as_bytes());
        out
    }

    fn decode(position: &[u8]) -> Result<Resume, &'static str> {
        if position.len() <= 16 {
            return Err(cursor::INVALID);
        }
        let (numbers, id) = position.split_at(16);
        let numbers = cursor::unpack(numbers, 2)?;
        let buffer = String::from_utf8(id.to_vec()).map_err(|_| cursor::INVALID)?;
        // Seqs start at 1, so 0 stands for "from the newest".
        let start = match (numbers[0], numbers[1]) {
            (0, _) => Start::Newest,
            (seq, remaining) => Start::At { seq, remaining },
        };
        Ok(Resume { buffer, start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::row::Kind as RowKind;
    use serde_json::{json, Value};

    fn args(v: Value) -> Args {
        Args::from_request(Some(&v)).unwrap()
    }

    /// The registry's name checks from the tool's spec, then the parse.
    fn parse(v: Value) -> Result<Request, String> {
        let a = args(v);
        let settings = crate::tools::Settings::default();
        match crate::tools::search::TOOL.spec.check_names(&a, &settings) {
            Err(crate::tools::ToolOutcome::Error(text)) => return Err(text),
            Err(other) => return Err(format!("{other:?}")),
            Ok(()) => {}
        }
        Request::parse(&a).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults() {
        let r = parse(json!({"query": "x"})).unwrap();
        assert_eq!(r.mode, Mode::Substring);
        assert_eq!(r.limit, 50);
        assert_eq!(r.context, 0);
        assert!(!r.count_only);
        assert_eq!(r.sessions, None);
        assert_eq!(r.filters, Filters::default());
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(
            parse(json!({})).unwrap_err(),
            "invalid arguments: missing query"
        );
        assert_eq!(
            parse(json!({"query": "x", "match": "fuzzy"})).unwrap_err(),
            "invalid arguments: match must be substring, glob or regex"
        );
        assert_eq!(
            parse(json!({"query": "x", "since": "later"})).unwrap_err(),
            "invalid arguments: since is not an ISO-8601 time"
        );
        assert_eq!(
            parse(json!({"query": "x", "until": 5})).unwrap_err(),
            "invalid arguments: until must be a string"
        );
        assert_eq!(
            parse(json!({"query": "x", "kinds": ["privmsg", "hug"]})).unwrap_err(),
            "invalid arguments: unknown kind: \"hug\""
        );
        assert_eq!(
            parse(json!({"query": "x", "limit": 2.5})).unwrap_err(),
            "invalid arguments: limit must be an integer"
        );
        assert_eq!(
            parse(json!({"query": "x", "page": 1})).unwrap_err(),
            "invalid arguments: unknown argument \"page\""
        );
    }

    #[test]
    fn numbers_are_clamped() {
        let r = parse(json!({"query": "x", "limit": 0, "context": 99})).unwrap();
        assert_eq!((r.limit, r.context), (1, 10));
        let r = parse(json!({"query": "x", "limit": 1e9, "context": -4})).unwrap();
        assert_eq!((r.limit, r.context), (500, 0));
    }

    #[test]
    fn lists_are_normalised() {
        let r = parse(
            json!({"query": "x", "buffers": ["b", "A", "a"], "sessions": [],
            "kinds": ["notice", "privmsg"]}),
        )
        .unwrap();
        assert_eq!(r.buffers, Some(vec!["A".to_owned(), "B".to_owned()]));
        assert_eq!(r.sessions, None);
        assert_eq!(
            r.filters.kinds,
            Some(vec![RowKind::Privmsg, RowKind::Notice])
        );
    }

    fn resume() -> Resume {
        Resume {
            buffer: "0F0F0F0F-0000-4000-8000-000000000001".into(),
            start: Start::At {
                seq: 42,
                remaining: 7,
            },
        }
    }

    #[test]
    fn cursors_survive_order_case_and_limit_changes() {
        let a = parse(
            json!({"query": "q", "sessions": ["s1", "s2"], "buffers": ["B1", "b2"],
            "from": "Alice", "kinds": ["notice", "privmsg"], "since": "2026-01-01T00:00:00Z",
            "context": 2, "limit": 5}),
        )
        .unwrap();
        let b = parse(
            json!({"query": "q", "sessions": ["S2", "S1"], "buffers": ["B2", "B1"],
            "from": "ALICE", "kinds": ["privmsg", "notice"], "since": "2026-01-01T01:00:00+01:00",
            "context": 2, "limit": 50}),
        )
        .unwrap();
        let c = a.mint(&resume());
        assert!(c.len() <= cursor::MAX_LEN);
        assert_eq!(b.open(&c), Ok(resume()));
        let fresh = Resume {
            buffer: "X".into(),
            start: Start::Newest,
        };
        assert_eq!(a.open(&a.mint(&fresh)), Ok(fresh));
    }

    #[test]
    fn cursors_are_bound_to_everything_else() {
        let base = json!({"query": "q", "context": 1});
        let c = parse(base.clone()).unwrap().mint(&resume());
        let others = [
            json!({"query": "Q", "context": 1}),
            json!({"query": "q", "context": 1, "match": "glob"}),
            json!({"query": "q", "context": 2}),
            json!({"query": "q", "context": 1, "sessions": ["s"]}),
            json!({"query": "q", "context": 1, "buffers": ["b"]}),
            json!({"query": "q", "context": 1, "from": "x"}),
            json!({"query": "q", "context": 1, "kinds": ["join"]}),
            json!({"query": "q", "context": 1, "since": "2026-01-01"}),
            json!({"query": "q", "context": 1, "until": "2026-01-01"}),
        ];
        for other in others {
            let r = parse(other.clone()).unwrap();
            assert_eq!(r.open(&c), Err(cursor::INVALID), "{other}");
        }
        let same =
            parse(json!({"query": "q", "context": 1, "limit": 9, "count_only": true})).unwrap();
        assert_eq!(same.open(&c), Ok(resume()));
        // A sessions list is not the same as a buffers list of the same ids.
        let s = parse(json!({"query": "q", "sessions": ["x"]})).unwrap();
        let b = parse(json!({"query": "q", "buffers": ["x"]})).unwrap();
        assert_eq!(b.open(&s.mint(&resume())), Err(cursor::INVALID));
    }

    #[test]
    fn other_cursor_kinds_do_not_open() {
        let r = parse(json!({"query": "q"})).unwrap();
        let other = cursor::mint(Kind::FindUser, &[b"search_messages"], &[1, 2, 3]);
        assert_eq!(r.open(&other), Err(cursor::INVALID));
        assert_eq!(r.open("garbage"), Err(cursor::INVALID));
    }
}
