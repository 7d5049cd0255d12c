//! The AI access log: what AI clients did, for the user to look at (reTerm's
//! `/control log`). Memory only, the newest `CAPACITY` rows.
//!
//! It records what an agent asked for, never what Rete answered: a tool
//! call's row holds the name as sent, its arguments made safe to show, and
//! the outcome — `ok` with the reply size, the exact error text, or `stopped
//! by its time budget` with the size. A send_raw whose request gave up
//! (`cancelled`) after its line was handed to the session gets a second row
//! once the line's fate is known, at that time: the line is still sent (or
//! not), and the log says which.
//!
//! # Row format
//! One line per row, no line break inside (every control, format,
//! default-ignorable and bidi character is escaped as `\n`, `\u{1B}`,
//! `\u{202E}`…), fields separated by single spaces:
//!
//! ```text
//! 2026-09-30T12:00:00Z list_sessions() → ok, 57 bytes
//! 2026-09-30T12:00:00Z read_messages(buffer="0F8E…", limit=50) → unknown buffer
//! 2026-09-30T12:00:00Z send_raw(line="PASS :********", session="0F8E…") → sending is disabled
//! 2026-09-30T12:00:25Z send_raw(line="PING :x", session="0F8E…") → cancelled
//! 2026-09-30T12:00:31Z send_raw(line="PING :x", session="0F8E…") → sent after its request was cancelled
//! 2026-09-30T12:00:00Z wait_for_updates(timeout=20) → waiting
//! 2026-09-30T12:00:00Z search_messages(query="x") → stopped by its time budget, 60000 bytes
//! 2026-09-30T12:00:00Z list_sessions(+17 more) → invalid arguments: unknown argument "a"
//! 2026-09-30T12:00:00Z list_sessions([1]) → refused: arguments must be an object
//! 2026-09-30T12:00:00Z refused (bad or missing token, 403); 12 more since the previous row
//! 2026-09-30T12:00:00Z [watcher] read_messages(buffer="0F8E…") → ok, 912 bytes
//! ```
//!
//! The last row is a scoped grant's call (beyond the contract): the grant's
//! name in brackets after the time. The full token's rows name nothing.
//!
//! Arguments appear in name order (the order a JSON object decodes to), as
//! `name=value`. A name is shown bare when it is only ASCII letters, digits,
//! `_`, `-` and `.`, else quoted like a string; names (and the tool's name)
//! are cut to 64 bytes, ending in `…` when cut. A string value is quoted,
//! with `"` and `\` backslash-escaped, its first 200 UTF-8 bytes kept and `…`
//! added when it was cut. A top-level `line` string is masked
//! (`mask_line`) on every tool, and only send_raw's is kept whole up to
//! 4,606 bytes (any other tool's is cut at 200 like every string). An array
//! or object is its compact JSON cut at 200 bytes (then `…`); numbers are
//! their text exactly as sent (`1e3`, `12345678901234567890123`: the RPC layer
//! reads the top-level numbers' text from the body, see [`SentNumbers`]; a
//! number inside an array or object is shown as serde_json's
//! `arbitrary_precision` keeps it, digit for digit with the exponent written
//! `e+N`), booleans and `null` their
//! JSON text. At most 16 arguments are listed; the rest are counted as
//! `+N more`.

use crate::read::args::{cut_utf8, SentNumbers};
use parking_lot::Mutex;
use rete_engine::clock::UnixMillis;
use rete_engine::timefmt::iso_seconds;
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Rows kept; each new row past this evicts the oldest.
pub(crate) const CAPACITY: usize = 2_000;
/// UTF-8 bytes kept of an argument string, or of an array or object's JSON.
pub(crate) const VALUE_CAP: usize = 200;
/// UTF-8 bytes kept of a top-level `line`: the longest line send_raw sends
/// (4094 bytes of tags, `@`, a space and a 510-byte message).
pub(crate) const LINE_CAP: usize = 4_606;
/// UTF-8 bytes kept of an argument name or a tool name.
pub(crate) const NAME_CAP: usize = 64;
/// Arguments listed per row; the rest are counted.
pub(crate) const MAX_LISTED: usize = 16;
/// At most one refusal row per class in this interval.
pub(crate) const REFUSAL_INTERVAL: Duration = Duration::from_secs(10);

/// How a tool call ended, as the log shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome<'a> {
    /// A result of this many bytes (the text item).
    Ok {
        /// The reply size in bytes.
        bytes: usize,
    },
    /// A tool error; its exact text.
    Error(&'a str),
    /// A search or find_user stopped by its time budget, with its size.
    Stopped {
        /// The reply size in bytes.
        bytes: usize,
    },
    /// wait_for_updates started waiting.
    Waiting,
    /// The request was cancelled before the tool finished.
    Cancelled,
    /// A send_raw line handed over before its request was cancelled, and
    /// sent since (the row's time is when it was).
    SentAfterCancel,
    /// A send_raw line handed over before its request was cancelled, and
    /// then not sent; the exact error text its call would have answered.
    NotSentAfterCancel(&'a str),
    /// Refused before reaching a tool, with a JSON-RPC error (arguments that
    /// are not an object).
    Refused(&'a str),
}

/// Why the access gate refused a request; only AI-access refusals are
/// logged here, not malformed requests, unknown paths or deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// A bad or missing token (403).
    Token,
    /// A Host header that is not allowed (403).
    Host,
    /// An Origin header that is not allowed (403).
    Origin,
    /// A CORS preflight (OPTIONS, 403).
    Preflight,
}

impl Refusal {
    /// The class and the answer, as the row shows them.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Refusal::Token => "bad or missing token, 403",
            Refusal::Host => "Host not allowed, 403",
            Refusal::Origin => "Origin not allowed, 403",
            Refusal::Preflight => "CORS preflight, 403",
        }
    }
}

/// The log. Shared by every request (an `Arc` in the tool context) and kept
/// across server restarts and token changes.
#[derive(Default)]
pub struct AccessLog {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    rows: VecDeque<String>,
    refusals: HashMap<Refusal, RefusalWindow>,
}

struct RefusalWindow {
    last_row: Instant,
    since: u64,
}

impl AccessLog {
    /// An empty log.
    pub fn new() -> AccessLog {
        AccessLog::default()
    }

    /// Records a tool call (or the end of a wait). `numbers` holds the text
    /// its top-level numbers were sent as (see [`SentNumbers`]).
    pub fn record_call(
        &self,
        at: UnixMillis,
        tool: &str,
        args: Option<&Value>,
        numbers: &SentNumbers,
        outcome: CallOutcome<'_>,
    ) {
        self.record_call_by(None, at, tool, args, numbers, outcome);
    }

    /// [`record_call`](AccessLog::record_call) for a request made `by` a
    /// scoped grant (its name) or, for None, the full token. A grant's row
    /// names it in brackets after the time: `… [watcher] read_messages(…)`.
    pub(crate) fn record_call_by(
        &self,
        by: Option<&str>,
        at: UnixMillis,
        tool: &str,
        args: Option<&Value>,
        numbers: &SentNumbers,
        outcome: CallOutcome<'_>,
    ) {
        // One string, written in place: each part formatted on its own
        // and then into the row cost five allocations and a copy each.
        let mut row = String::with_capacity(96);
        push_stamp(&mut row, at);
        row.push(' ');
        if let Some(grant) = by {
            row.push('[');
            row.push_str(&rete_redact::escape_invisible(grant));
            row.push_str("] ");
        }
        let kept = cut_utf8(tool, NAME_CAP);
        row.push_str(&rete_redact::escape_invisible(kept));
        if kept.len() < tool.len() {
            row.push('…');
        }
        row.push('(');
        if args.is_some_and(|a| !is_empty_object(a)) {
            row.push_str(&render_sent_args(tool, args, numbers));
        }
        row.push_str(") → ");
        push_outcome(&mut row, outcome);
        self.push(row);
    }

    /// Records that wait_for_updates started waiting; its end is a second
    /// [`record_call`](AccessLog::record_call).
    pub(crate) fn record_wait_start(
        &self,
        by: Option<&str>,
        at: UnixMillis,
        tool: &str,
        args: Option<&Value>,
        numbers: &SentNumbers,
    ) {
        self.record_call_by(by, at, tool, args, numbers, CallOutcome::Waiting);
    }

    /// Records a gate refusal, at most one row per class every
    /// [`REFUSAL_INTERVAL`]; refusals in between are counted into the next
    /// row. `now` is a monotonic instant, `at` the wall time shown.
    pub(crate) fn record_refusal(&self, at: UnixMillis, now: Instant, class: Refusal) {
        let mut inner = self.inner.lock();
        let window = inner.refusals.get_mut(&class);
        let since = match window {
            Some(w) if now.saturating_duration_since(w.last_row) < REFUSAL_INTERVAL => {
                w.since += 1;
                return;
            }
            Some(w) => std::mem::take(&mut w.since),
            None => 0,
        };
        inner.refusals.insert(
            class,
            RefusalWindow {
                last_row: now,
                since: 0,
            },
        );
        let mut row = format!("{} refused ({})", iso_seconds(at), class.label());
        if since > 0 {
            let _ = write!(row, "; {since} more since the previous row");
        }
        push_row(&mut inner.rows, row);
    }

    /// Every row, oldest first.
    pub fn rows(&self) -> Vec<String> {
        self.inner.lock().rows.iter().cloned().collect()
    }

    fn push(&self, row: String) {
        push_row(&mut self.inner.lock().rows, row);
    }
}

fn push_row(rows: &mut VecDeque<String>, row: String) {
    if rows.len() >= CAPACITY {
        rows.pop_front();
    }
    rows.push_back(row);
}

/// The wall clock now, for row times: the hosts' one reading of it.
pub use rete_actors::wall_clock::now as wall_now;

/// Appends the row time of `at`, [`iso_seconds`]'s text. Rows come many a
/// second, so each thread keeps the text of the last second it wrote.
fn push_stamp(row: &mut String, at: UnixMillis) {
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> =
            const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let second = at.0.div_euclid(1000);
    LAST.with_borrow_mut(|(last, text)| {
        if *last != second {
            *text = iso_seconds(at);
            *last = second;
        }
        row.push_str(text);
    });
}

fn is_empty_object(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

fn push_outcome(row: &mut String, outcome: CallOutcome<'_>) {
    // Writing to a String cannot fail.
    let _ = match outcome {
        CallOutcome::Ok { bytes } => write!(row, "ok, {bytes} bytes"),
        CallOutcome::Error(text) => {
            row.push_str(&rete_redact::escape_invisible(text));
            Ok(())
        }
        CallOutcome::Stopped { bytes } => {
            write!(row, "stopped by its time budget, {bytes} bytes")
        }
        CallOutcome::Waiting => {
            row.push_str("waiting");
            Ok(())
        }
        CallOutcome::Cancelled => {
            row.push_str("cancelled");
            Ok(())
        }
        CallOutcome::SentAfterCancel => {
            row.push_str("sent after its request was cancelled");
            Ok(())
        }
        CallOutcome::NotSentAfterCancel(text) => {
            row.push_str(&rete_redact::escape_invisible(text));
            row.push_str(", after its request was cancelled");
            Ok(())
        }
        CallOutcome::Refused(text) => {
            row.push_str("refused: ");
            row.push_str(&rete_redact::escape_invisible(text));
            Ok(())
        }
    };
}

/// The tool whose top-level `line` is kept whole.
const SEND_RAW: &str = "send_raw";

/// The arguments of a call to `tool` as the row shows them (see the module
/// docs), numbers as parsed.
#[cfg(test)]
pub(crate) fn render_args(tool: &str, args: Option<&Value>) -> String {
    render_sent_args(tool, args, &SentNumbers::new())
}

/// [`render_args`], with each top-level number shown as `numbers` says it
/// was sent.
pub(crate) fn render_sent_args(tool: &str, args: Option<&Value>, numbers: &SentNumbers) -> String {
    let map = match args {
        None | Some(Value::Null) => return String::new(),
        Some(Value::Object(map)) => map,
        Some(other) => return render_value(other),
    };
    let mut parts: Vec<String> = map
        .iter()
        .take(MAX_LISTED)
        .map(|(name, value)| {
            let shown = if name == "line" {
                let cap = if tool == SEND_RAW {
                    LINE_CAP
                } else {
                    VALUE_CAP
                };
                match value {
                    Value::String(s) => quote(&mask_line(s), cap),
                    other => render_value(other),
                }
            } else {
                match (value, numbers.get(name)) {
                    (Value::Number(_), Some(text)) => escape_invisible(text),
                    _ => render_value(value),
                }
            };
            format!("{}={}", render_name(name), shown)
        })
        .collect();
    if map.len() > MAX_LISTED {
        parts.push(format!("+{} more", map.len() - MAX_LISTED));
    }
    parts.join(", ")
}

/// A tool or argument name cut to [`NAME_CAP`] bytes, `…` added when cut.
fn cut_name(name: &str) -> String {
    let kept = cut_utf8(name, NAME_CAP);
    if kept.len() < name.len() {
        format!("{kept}…")
    } else {
        kept.to_owned()
    }
}

fn render_name(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if bare {
        cut_name(name)
    } else {
        quote(name, NAME_CAP)
    }
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s, VALUE_CAP),
        Value::Array(_) | Value::Object(_) => {
            let json = value.to_string();
            let kept = cut_utf8(&json, VALUE_CAP);
            let mut out = escape_invisible(kept);
            if kept.len() < json.len() {
                out.push('…');
            }
            out
        }
        other => other.to_string(),
    }
}

/// `s` cut to `cap` bytes, quoted, with `"` and `\` backslash-escaped and
/// invisible characters escaped; `…` before the closing quote when cut.
fn quote(s: &str, cap: usize) -> String {
    let kept = cut_utf8(s, cap);
    let quoted = kept.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::with_capacity(quoted.len() + 2);
    out.push('"');
    // The escapes add backslashes only after the quoting above, so none of
    // them is doubled.
    out.push_str(&rete_redact::escape_invisible(&quoted));
    if kept.len() < s.len() {
        out.push('…');
    }
    out.push('"');
    out
}

/// `s` with every character that draws nothing, moves the cursor or
/// reorders text escaped (`\n`, `\r`, `\t`, else `\u{HEX}`), by
/// [`rete_redact::escape_invisible`]'s table.
pub(crate) fn escape_invisible(s: &str) -> String {
    rete_redact::escape_invisible(s).into_owned()
}

/// A raw line as the log shows it: PASS, OPER and service logins masked by
/// the shared rule, every AUTHENTICATE masked, each part between line breaks
/// on its own ([`rete_redact::mask_sent_line`]).
pub(crate) fn mask_line(line: &str) -> String {
    rete_redact::mask_sent_line(line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Whether the log shows `c` escaped.
    fn is_invisible(c: char) -> bool {
        escape_invisible(&c.to_string()) != c.to_string()
    }

    const AT: UnixMillis = UnixMillis(1_790_769_600_000);

    fn one_row(args: Value, outcome: CallOutcome<'_>) -> String {
        let log = AccessLog::new();
        log.record_call(AT, "tool", Some(&args), &SentNumbers::new(), outcome);
        log.rows().remove(0)
    }

    #[test]
    fn call_rows_show_time_name_arguments_and_outcome() {
        assert_eq!(
            one_row(json!({}), CallOutcome::Ok { bytes: 57 }),
            "2026-09-30T12:00:00Z tool() → ok, 57 bytes"
        );
        assert_eq!(
            one_row(
                json!({"limit": 50, "buffer": "B", "peek": true, "x": null}),
                CallOutcome::Error("unknown buffer")
            ),
            "2026-09-30T12:00:00Z tool(buffer=\"B\", limit=50, peek=true, x=null) → unknown buffer"
        );
        assert_eq!(
            one_row(json!({}), CallOutcome::Stopped { bytes: 60000 }),
            "2026-09-30T12:00:00Z tool() → stopped by its time budget, 60000 bytes"
        );
        assert_eq!(
            one_row(json!({}), CallOutcome::Cancelled),
            "2026-09-30T12:00:00Z tool() → cancelled"
        );
        assert_eq!(
            one_row(json!({}), CallOutcome::SentAfterCancel),
            "2026-09-30T12:00:00Z tool() → sent after its request was cancelled"
        );
        assert_eq!(
            one_row(
                json!({}),
                CallOutcome::NotSentAfterCancel("session not connected")
            ),
            "2026-09-30T12:00:00Z tool() → session not connected, after its request was cancelled"
        );
        let log = AccessLog::new();
        log.record_call(
            AT,
            "x",
            None,
            &SentNumbers::new(),
            CallOutcome::Refused("arguments must be an object"),
        );
        log.record_call(
            AT,
            "x",
            Some(&json!([1])),
            &SentNumbers::new(),
            CallOutcome::Refused("arguments must be an object"),
        );
        assert_eq!(
            log.rows(),
            [
                "2026-09-30T12:00:00Z x() → refused: arguments must be an object",
                "2026-09-30T12:00:00Z x([1]) → refused: arguments must be an object",
            ]
        );
    }

    #[test]
    fn waits_log_twice() {
        let log = AccessLog::new();
        let args = json!({"timeout": 20});
        log.record_wait_start(
            None,
            AT,
            "wait_for_updates",
            Some(&args),
            &SentNumbers::new(),
        );
        log.record_call(
            AT,
            "wait_for_updates",
            Some(&args),
            &SentNumbers::new(),
            CallOutcome::Ok { bytes: 30 },
        );
        assert_eq!(
            log.rows(),
            [
                "2026-09-30T12:00:00Z wait_for_updates(timeout=20) → waiting",
                "2026-09-30T12:00:00Z wait_for_updates(timeout=20) → ok, 30 bytes",
            ]
        );
    }

    #[test]
    fn strings_are_cut_at_200_bytes_with_an_ellipsis() {
        let exact = "a".repeat(200);
        assert_eq!(
            render_args("tool", Some(&json!({ "q": exact }))),
            format!("q=\"{exact}\"")
        );
        let long = "a".repeat(201);
        assert_eq!(
            render_args("tool", Some(&json!({ "q": long }))),
            format!("q=\"{}…\"", "a".repeat(200))
        );
        // A character straddling byte 200 is dropped whole.
        let straddle = format!("{}é", "a".repeat(199));
        assert_eq!(
            render_args("tool", Some(&json!({ "q": straddle }))),
            format!("q=\"{}…\"", "a".repeat(199))
        );
    }

    #[test]
    fn a_top_level_line_is_kept_to_4606_bytes_and_masked() {
        let long = format!("PRIVMSG #c :{}", "x".repeat(5000));
        let shown = render_args("send_raw", Some(&json!({ "line": long })));
        assert_eq!(shown.len(), "line=\"".len() + LINE_CAP + "…\"".len());
        let fits = format!("PRIVMSG #c :{}", "x".repeat(4000));
        assert_eq!(
            render_args("send_raw", Some(&json!({ "line": fits }))),
            format!("line=\"{fits}\"")
        );
        // Kept whole only on send_raw: any other tool's line is cut at 200
        // bytes like every string, and masked all the same.
        assert_eq!(
            render_args("read_messages", Some(&json!({ "line": fits }))),
            format!("line=\"{}…\"", &fits[..VALUE_CAP])
        );
        assert_eq!(
            render_args(
                "send_raw_",
                Some(&json!({"line": format!("PASS {}", "p".repeat(300))}))
            ),
            "line=\"PASS :********\""
        );
        assert_eq!(
            render_args(
                "tool",
                Some(&json!({"line": "PASS hunter2", "session": "S"}))
            ),
            "line=\"PASS :********\", session=\"S\""
        );
        // A line nested in an object is shown as sent.
        assert_eq!(
            render_args("tool", Some(&json!({"raw": {"line": "PASS hunter2"}}))),
            "raw={\"line\":\"PASS hunter2\"}"
        );
        // Only a string line is masked; another argument name is not.
        assert_eq!(
            render_args("tool", Some(&json!({"text": "PASS hunter2"}))),
            "text=\"PASS hunter2\""
        );
    }

    #[test]
    fn arrays_and_objects_are_cut_as_a_whole() {
        let many: Vec<String> = (0..100).map(|i| format!("s{i}")).collect();
        let shown = render_args("tool", Some(&json!({ "kinds": many })));
        let json = serde_json::to_string(&many).unwrap();
        assert_eq!(shown, format!("kinds={}…", &json[..200]));
        assert_eq!(
            render_args("tool", Some(&json!({"kinds": ["privmsg", "join"]}))),
            "kinds=[\"privmsg\",\"join\"]"
        );
    }

    #[test]
    fn at_most_16_arguments_are_listed() {
        let mut map = serde_json::Map::new();
        for i in 0..20 {
            map.insert(format!("a{i:02}"), json!(i));
        }
        let shown = render_args("tool", Some(&Value::Object(map)));
        assert!(shown.starts_with("a00=0, a01=1,"), "{shown}");
        assert!(shown.ends_with("a15=15, +4 more"), "{shown}");
    }

    #[test]
    fn names_cut_at_64_bytes_end_with_an_ellipsis() {
        let long = "n".repeat(70);
        let log = AccessLog::new();
        log.record_call(
            AT,
            &long,
            Some(&json!({ long.clone(): 1 })),
            &SentNumbers::new(),
            CallOutcome::Ok { bytes: 1 },
        );
        let cut = "n".repeat(64);
        assert_eq!(
            log.rows(),
            [format!(
                "2026-09-30T12:00:00Z {cut}…({cut}…=1) → ok, 1 bytes"
            )]
        );
        // A quoted name ends its cut inside the quotes; 64 bytes exactly is not cut.
        let quoted = format!("{} ", "q".repeat(69));
        assert_eq!(
            render_args("tool", Some(&json!({ quoted: 1 }))),
            format!("\"{}…\"=1", "q".repeat(64))
        );
        let exact = "e".repeat(64);
        assert_eq!(
            render_args("tool", Some(&json!({ exact.clone(): 1 }))),
            format!("{exact}=1")
        );
    }

    #[test]
    fn numbers_are_shown_as_sent() {
        let body = r#"{"a":1e3,"b":12345678901234567890123,"c":50.0,"d":-0,"e":1E+400,"f":[1E-2]}"#;
        let v: Value = serde_json::from_str(body).unwrap();
        let sent: SentNumbers = [
            ("a", "1e3"),
            ("b", "12345678901234567890123"),
            ("c", "50.0"),
            ("d", "-0"),
            ("e", "1E+400"),
        ]
        .into_iter()
        .map(|(k, t)| (k.to_owned(), t.to_owned()))
        .collect();
        // Top-level numbers exactly as sent; one inside an array as the
        // parser writes it (digit for digit, the exponent as e+N or e-N).
        assert_eq!(
            render_sent_args("tool", Some(&v), &sent),
            "a=1e3, b=12345678901234567890123, c=50.0, d=-0, e=1E+400, f=[1e-2]"
        );
        // Without the sent text, never through an f64 either.
        assert_eq!(
            render_args("tool", Some(&v)),
            "a=1e+3, b=12345678901234567890123, c=50.0, d=-0, e=1e+400, f=[1e-2]"
        );
    }

    #[test]
    fn invisible_characters_are_escaped() {
        let row = one_row(
            json!({"q": "a\nb\u{1b}[31m\u{202e}c\u{200b}\u{ad}\u{fe0f}\u{e0041}\u{2028}\t\"\\"}),
            CallOutcome::Ok { bytes: 1 },
        );
        assert_eq!(
            row,
            "2026-09-30T12:00:00Z tool(q=\"a\\nb\\u{1B}[31m\\u{202E}c\\u{200B}\\u{AD}\\u{FE0F}\\u{E0041}\\u{2028}\\t\\\"\\\\\") → ok, 1 bytes"
        );
        assert!(!row.contains('\n'));
        // In names, tool names, arrays and error texts too.
        let log = AccessLog::new();
        log.record_call(
            AT,
            "to\u{202e}ol\n",
            Some(&json!({"we\u{200f}ird": ["\u{61c}", "\u{7f}"]})),
            &SentNumbers::new(),
            CallOutcome::Error("x\u{180e}"),
        );
        assert_eq!(
            log.rows()[0],
            "2026-09-30T12:00:00Z to\\u{202E}ol\\n(\"we\\u{200F}ird\"=[\"\\u{61C}\",\"\\u{7F}\"]) → x\\u{180E}"
        );
        for c in [
            '\u{2060}', '\u{206f}', '\u{feff}', '\u{85}', '\u{200c}', '\u{2066}',
        ] {
            assert!(is_invisible(c), "{:X}", u32::from(c));
        }
        for c in ['a', 'é', '€', ' ', '\u{3000}', '漢'] {
            assert!(!is_invisible(c), "{:X}", u32::from(c));
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_2000() {
        let log = AccessLog::new();
        for i in 0..(CAPACITY + 5) {
            log.record_call(
                AT,
                &format!("t{i}"),
                None,
                &SentNumbers::new(),
                CallOutcome::Ok { bytes: 0 },
            );
        }
        let rows = log.rows();
        assert_eq!(rows.len(), CAPACITY);
        assert!(rows[0].contains(" t5()"), "{}", rows[0]);
        assert!(rows[CAPACITY - 1].contains(&format!(" t{}()", CAPACITY + 4)));
    }

    #[test]
    fn refusals_are_rate_limited_per_class() {
        let log = AccessLog::new();
        let t0 = Instant::now();
        let s = |n| t0 + Duration::from_secs(n);
        log.record_refusal(AT, s(0), Refusal::Token);
        log.record_refusal(AT, s(1), Refusal::Token);
        log.record_refusal(AT, s(2), Refusal::Token);
        log.record_refusal(AT, s(3), Refusal::Host);
        log.record_refusal(AT, s(9), Refusal::Token);
        log.record_refusal(AT, s(10), Refusal::Token);
        log.record_refusal(AT, s(30), Refusal::Token);
        assert_eq!(
            log.rows(),
            [
                "2026-09-30T12:00:00Z refused (bad or missing token, 403)",
                "2026-09-30T12:00:00Z refused (Host not allowed, 403)",
                "2026-09-30T12:00:00Z refused (bad or missing token, 403); 3 more since the previous row",
                "2026-09-30T12:00:00Z refused (bad or missing token, 403)",
            ]
        );
    }

    #[test]
    fn masking_pass_oper_authenticate() {
        assert_eq!(mask_line("PASS hunter2"), "PASS :********");
        // The command keeps the case it was sent in (the shared rule).
        assert_eq!(mask_line("pass :hunter2"), "pass :********");
        assert_eq!(mask_line("OPER admin s3cret"), "OPER admin ********");
        assert_eq!(mask_line("OPER s3cret"), "OPER ********");
        assert_eq!(mask_line("AUTHENTICATE PLAIN"), "AUTHENTICATE ********");
        assert_eq!(mask_line("AUTHENTICATE dGVzdA=="), "AUTHENTICATE ********");
        assert_eq!(mask_line("@label=1 PASS x"), "PASS :********");
        assert_eq!(mask_line(":me PASS x"), ":me PASS :********");
        assert_eq!(mask_line("@a=b :me oper n p"), ":me oper n ********");
        assert_eq!(
            mask_line("PRIVMSG NickServ :IDENTIFY hunter2"),
            "PRIVMSG NickServ :IDENTIFY ********"
        );
        assert_eq!(mask_line("PRIVMSG #c :PASS x"), "PRIVMSG #c :PASS x");
        assert_eq!(mask_line("JOIN #c key"), "JOIN #c key");
        assert_eq!(mask_line(""), "");
        assert_eq!(mask_line("@only-tags"), "@only-tags");
        // A secret after a line break is masked too, the break kept.
        assert_eq!(
            mask_line("PRIVMSG #c :hi\r\nPASS x\u{2028}OPER a b"),
            "PRIVMSG #c :hi\r\nPASS :********\u{2028}OPER a ********"
        );
    }

    #[test]
    fn a_grants_row_names_the_grant_and_the_full_tokens_names_nothing() {
        let log = AccessLog::new();
        let args = json!({"limit": 5});
        log.record_call_by(
            Some("watcher"),
            AT,
            "read_messages",
            Some(&args),
            &SentNumbers::new(),
            CallOutcome::Ok { bytes: 9 },
        );
        log.record_call(
            AT,
            "list_sessions",
            None,
            &SentNumbers::new(),
            CallOutcome::Ok { bytes: 2 },
        );
        let rows = log.rows();
        assert!(
            rows[0].ends_with(" [watcher] read_messages(limit=5) → ok, 9 bytes"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].ends_with("Z list_sessions() → ok, 2 bytes"),
            "{}",
            rows[1]
        );
    }
}
