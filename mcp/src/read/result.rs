//! What a tool answers, how a result is encoded, and the 60,000-byte budget.
//!
//! A success is compact JSON with keys sorted: `serde_json::Map` is a
//! `BTreeMap` unless serde_json's `preserve_order` feature is on somewhere in
//! the build, and `keys_are_sorted` below fails if that ever happens.

pub(crate) use crate::read::encoded::Encoded;
use rete_engine::clock::UnixMillis;
use serde_json::Value;

/// Every tool result is at most this many bytes of JSON: the text item's
/// content, before the JSON-RPC envelope escapes it.
pub const BUDGET: usize = 60_000;

/// The error text sent for anything unexpected; its cause is only logged.
pub(crate) const INTERNAL_ERROR: &str = "internal error";

/// How a tool call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// The result object, encoded as the one text item.
    Ok(Value),
    /// The result object already encoded, by a tool that writes it itself
    /// instead of building a [`Value`] (list_sessions): answered exactly as
    /// `Ok` of the same object would be. [`crate::tools::ToolBox::call`]
    /// hands it back decoded, as `Ok`; only the JSON-RPC layer, which sends
    /// the text, sees it.
    Encoded(Encoded),
    /// A tool error with its exact contract text (`isError: true`).
    Error(String),
    /// Stopped by its time budget: a tool error whose text is this partial
    /// result, logged as "stopped by its time budget".
    Stopped(Value),
    /// The request was cancelled (client gone, deadline, server stopping).
    /// Nobody reads the answer; the access log records it as cancelled.
    Cancelled,
}

/// What the body of a tool that builds its result as a [`Value`] ends
/// with: the result object, or how it ended without one (an exact tool
/// error, a stop by its time budget, a cancel), so that `?` ends the call.
pub type ToolResult = Result<Value, ToolOutcome>;

impl From<ToolResult> for ToolOutcome {
    fn from(result: ToolResult) -> ToolOutcome {
        match result {
            Ok(value) => ToolOutcome::Ok(value),
            Err(ended) => ended,
        }
    }
}

impl ToolOutcome {
    /// The outcome as a run's result: `Ok` is the result object, anything
    /// else ends the run as it is.
    pub(crate) fn into_result(self) -> ToolResult {
        match self {
            ToolOutcome::Ok(result) => Ok(result),
            ended => Err(ended),
        }
    }

    /// `internal error`, logging `cause` (never sent to the client).
    pub(crate) fn internal(cause: impl std::fmt::Display) -> ToolOutcome {
        tracing::warn!("control tool failed: {cause}");
        ToolOutcome::Error(INTERNAL_ERROR.to_owned())
    }

    /// An error with its exact text.
    pub(crate) fn error(text: impl Into<String>) -> ToolOutcome {
        ToolOutcome::Error(text.into())
    }
}

impl From<crate::read::args::ArgError> for ToolOutcome {
    fn from(e: crate::read::args::ArgError) -> ToolOutcome {
        ToolOutcome::Error(e.to_string())
    }
}

/// A value as compact JSON with sorted keys.
pub fn encode(value: &Value) -> String {
    // The same compact serialization as `Display`, without going through a
    // formatter; it cannot fail for a Value.
    serde_json::to_string(value).unwrap_or_default()
}

/// A row's encoded size in bytes, for [`RowBudget`].
pub(crate) trait Measured {
    /// The bytes the row takes in its result.
    fn encoded_len(&self) -> usize;
}

impl Measured for Value {
    fn encoded_len(&self) -> usize {
        encoded_len(self)
    }
}

impl Measured for Encoded {
    fn encoded_len(&self) -> usize {
        self.len()
    }
}

/// The encoded size of a value in bytes: what [`encode`] would produce,
/// counted without building the string (every row offered to a page is
/// measured, so this is on the read tools' hot path).
pub(crate) fn encoded_len(value: &Value) -> usize {
    let mut count = ByteCount(0);
    // Writing a Value to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// An `io::Write` that only counts what is written.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Adds a page's losses to its result, each only when there is one:
/// `skipped` (rows too large for any page) and `withheld` (rows a secret
/// kept back), as every paged read reports them.
pub(crate) fn add_losses(result: &mut Value, skipped: Vec<Value>, withheld: u64) {
    if !skipped.is_empty() {
        result["skipped"] = Value::Array(skipped);
    }
    if withheld > 0 {
        result["withheld"] = Value::from(withheld);
    }
}

/// A time as ISO-8601 to the whole second, the contract's one time format.
pub(crate) fn time(t: UnixMillis) -> Value {
    Value::String(rete_engine::timefmt::iso_seconds(t))
}

/// What [`RowBudget::offer`] did with a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// The row is on the page.
    Taken,
    /// The row does not fit after the rows already taken: the page is full
    /// and truncated; the row (and every later one) is not taken.
    Full,
    /// The row alone is larger than the whole budget: it can never be
    /// returned, so the caller steps over it and reports it with
    /// [`RowBudget::skip`].
    TooLarge,
}

/// Fills one list in a result with rows while the whole result stays within
/// the budget.
///
/// The result is an object whose list holds compact rows. With `n` rows its
/// size is exactly `frame + sum(row sizes) + (n - 1)` commas, where `frame`
/// is the size of the same result with the list empty. The caller measures
/// the frame with [`encoded_len`] as the page would be if it were cut
/// (`"truncated":true`, any cursor and skipped entries), so a page never
/// overshoots; the price is that a last row that would fit only without the
/// `truncated` flag is cut, and the page then truly says truncated.
#[derive(Debug)]
pub(crate) struct RowBudget<R = Value> {
    budget: usize,
    rows: Vec<R>,
    rows_len: usize,
    skipped: Vec<Value>,
    truncated: bool,
}

/// A filled list: the rows that fit, what was stepped over, and whether rows
/// were cut.
#[derive(Debug, PartialEq)]
pub(crate) struct Filled<R = Value> {
    /// The rows on the page, in the order offered.
    pub(crate) rows: Vec<R>,
    /// Keys (sequence numbers, pairs) of rows too large for any page.
    pub(crate) skipped: Vec<Value>,
    /// True when a row did not fit.
    pub(crate) truncated: bool,
}

impl<R: Measured> Default for RowBudget<R> {
    fn default() -> RowBudget<R> {
        RowBudget::new()
    }
}

impl<R: Measured> RowBudget<R> {
    /// A list under the contract's budget.
    pub(crate) fn new() -> RowBudget<R> {
        RowBudget::with_budget(BUDGET)
    }

    /// A list under another budget (tests, or a part of the budget).
    pub(crate) fn with_budget(budget: usize) -> RowBudget<R> {
        RowBudget {
            budget,
            rows: Vec::new(),
            rows_len: 0,
            skipped: Vec::new(),
            truncated: false,
        }
    }

    /// Offers the next row. `frame` is the encoded size of the finished
    /// result with this list empty, counted as if the page were cut.
    /// Once a row is refused as [`Offer::Full`], every later row is too, so
    /// the page is a prefix of what was offered.
    pub(crate) fn offer(&mut self, row: R, frame: usize) -> Offer {
        if self.truncated {
            return Offer::Full;
        }
        let len = row.encoded_len();
        if frame.saturating_add(len) > self.budget {
            return Offer::TooLarge;
        }
        let comma = usize::from(!self.rows.is_empty());
        let total = frame
            .saturating_add(self.rows_len)
            .saturating_add(comma)
            .saturating_add(len);
        if total > self.budget {
            self.truncated = true;
            return Offer::Full;
        }
        self.rows.push(row);
        self.rows_len += comma + len;
        Offer::Taken
    }

    /// Records a row stepped over because it is larger than the budget.
    pub(crate) fn skip(&mut self, key: Value) {
        self.skipped.push(key);
    }

    /// Marks the page cut for a reason other than size (a row limit).
    pub(crate) fn mark_truncated(&mut self) {
        self.truncated = true;
    }

    /// The keys skipped so far, for the caller's frame.
    pub(crate) fn skipped(&self) -> &[Value] {
        &self.skipped
    }

    /// How many rows are on the page.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// True once a row did not fit.
    #[cfg(test)]
    pub(crate) fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The page.
    pub(crate) fn finish(self) -> Filled<R> {
        Filled {
            rows: self.rows,
            skipped: self.skipped,
            truncated: self.truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    #[test]
    fn keys_are_sorted_and_compact() {
        let mut m = Map::new();
        m.insert("zeta".into(), json!(1));
        m.insert("alpha".into(), json!({"y": [1, 2], "b": null}));
        m.insert("Mid".into(), json!("x"));
        assert_eq!(
            encode(&Value::Object(m)),
            r#"{"Mid":"x","alpha":{"b":null,"y":[1,2]},"zeta":1}"#
        );
    }

    #[test]
    fn encoded_len_is_the_length_of_the_encoding() {
        let v = json!({"a": "é\"\n\u{1}", "b": [1, 2.5, null, true], "c": {}});
        assert_eq!(encoded_len(&v), encode(&v).len());
    }

    #[test]
    fn encoded_rows_fill_as_their_values_do() {
        let f = frame();
        let mut values = RowBudget::with_budget(200);
        let mut texts = RowBudget::with_budget(200);
        for n in [10, 500, 40, 40, 40, 40, 0] {
            let value = row(n);
            let text = Encoded::of(&value);
            assert_eq!(values.offer(value, f), texts.offer(text, f), "row of {n}");
        }
        let (values, texts) = (values.finish(), texts.finish());
        assert_eq!(values.truncated, texts.truncated);
        let decoded: Vec<Value> = texts.rows.iter().map(|r| r.decode().unwrap()).collect();
        assert_eq!(values.rows, decoded);
    }

    #[test]
    fn times_are_whole_seconds() {
        assert_eq!(
            time(UnixMillis(1_790_769_600_999)),
            json!("2026-09-30T12:00:00Z")
        );
    }

    #[test]
    fn internal_errors_hide_their_cause() {
        assert_eq!(
            ToolOutcome::internal("disk on fire at /secret/path"),
            ToolOutcome::Error("internal error".into())
        );
    }

    fn row(n: usize) -> Value {
        // {"v":"xxx…"} is n + 8 bytes.
        json!({ "v": "x".repeat(n) })
    }

    fn assemble(filled: &Filled) -> Value {
        let mut out = json!({ "rows": filled.rows, "untrusted": true });
        if filled.truncated {
            out["truncated"] = json!(true);
        }
        out
    }

    fn frame() -> usize {
        encoded_len(&json!({"rows": [], "truncated": true, "untrusted": true}))
    }

    #[test]
    fn fills_exactly_up_to_the_budget() {
        let budget = 200;
        let f = frame();
        // Three rows of 40 bytes + 2 commas fill `f + 122` bytes; size a
        // fourth row to land exactly on the budget.
        let mut b = RowBudget::with_budget(budget);
        for _ in 0..3 {
            assert_eq!(b.offer(row(32), f), Offer::Taken);
        }
        let last = budget - f - 122 - 1 - 8;
        assert_eq!(b.offer(row(last), f), Offer::Taken);
        assert_eq!(b.offer(row(0), f), Offer::Full);
        assert_eq!(b.offer(row(0), f), Offer::Full, "cut stays cut");
        let filled = b.finish();
        assert!(filled.truncated);
        assert_eq!(filled.rows.len(), 4);
        assert_eq!(encode(&assemble(&filled)).len(), budget);
    }

    #[test]
    fn one_byte_over_is_cut() {
        let f = frame();
        let mut b = RowBudget::with_budget(200);
        assert_eq!(b.offer(row(200 - f - 8 + 1 - 1), f), Offer::Taken);
        let mut b2 = RowBudget::with_budget(200);
        assert_eq!(b2.offer(row(200 - f - 8 + 1), f), Offer::TooLarge);
        assert!(!b2.is_truncated());
        assert_eq!(b.offer(row(0), f), Offer::Full);
    }

    #[test]
    fn oversized_rows_are_skipped_and_paging_continues() {
        let f = frame();
        let mut b = RowBudget::with_budget(200);
        assert_eq!(b.offer(row(10), f), Offer::Taken);
        assert_eq!(b.offer(row(500), f), Offer::TooLarge);
        b.skip(json!(7));
        assert_eq!(b.offer(row(10), f), Offer::Taken);
        let filled = b.finish();
        assert_eq!(filled.skipped, vec![json!(7)]);
        assert!(!filled.truncated);
        assert_eq!(filled.rows.len(), 2);
    }

    #[test]
    fn the_real_budget_holds_many_rows_within_60000_bytes() {
        let f = frame();
        let mut b = RowBudget::new();
        let mut offered = 0;
        while b.offer(row(100), f) == Offer::Taken {
            offered += 1;
        }
        let filled = b.finish();
        assert_eq!(filled.rows.len(), offered);
        let size = encode(&assemble(&filled)).len();
        assert!(size <= BUDGET, "{size}");
        assert!(size > BUDGET - 109, "{size}");
    }
}
