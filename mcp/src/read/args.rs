//! The shared argument layer: reads a tool's `arguments` object with the
//! contract's exact `invalid arguments: <detail>` errors, so every tool
//! refuses the same mistakes with the same words.
//!
//! Rules every getter follows:
//! - JSON `null` counts as absent.
//! - An integer is any JSON number without a fractional part (`50`, `50.0`,
//!   `1e3`), saturating to the `i64` range; `clamp` then bounds it per tool.
//! - `Args::expect_only` is called first by every tool: an argument the tool
//!   does not take is refused whatever its value, `null` included. When several
//!   are unknown, the first in byte order of their names is reported.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The text of each top-level argument that is a number, exactly as the
/// client wrote it (`1e3`, `1E+3`), by argument name: what the AI access log
/// shows. The parsed value keeps the digits but writes an exponent as `e+N`.
pub type SentNumbers = BTreeMap<String, String>;

/// How many UTF-8 bytes of a client-chosen name an error echoes back.
pub(crate) const ECHO_CAP: usize = 64;

/// A refused argument. Displays as `invalid arguments: <detail>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    detail: String,
}

impl ArgError {
    /// An error with this detail (the text after `invalid arguments: `).
    pub(crate) fn new(detail: impl Into<String>) -> ArgError {
        ArgError {
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid arguments: {}", self.detail)
    }
}

impl std::error::Error for ArgError {}

/// A tool's arguments: the JSON object the client sent (absent or `null`
/// arguments are an empty object). Nested objects (subscribe's `raw`, `log`)
/// are `Args` too, carrying a prefix so their errors name `raw.<name>`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    map: Map<String, Value>,
    prefix: String,
    numbers: SentNumbers,
}

/// The `arguments` value was present and neither an object nor `null`; the
/// RPC layer answers this with a JSON-RPC error before any tool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAnObject;

impl Args {
    /// Arguments from an object.
    pub(crate) fn new(map: Map<String, Value>) -> Args {
        Args {
            map,
            prefix: String::new(),
            numbers: SentNumbers::new(),
        }
    }

    /// These arguments with the text their numbers were sent as.
    pub(crate) fn with_sent_numbers(mut self, numbers: SentNumbers) -> Args {
        self.numbers = numbers;
        self
    }

    /// The text each top-level number argument was sent as.
    pub(crate) fn sent_numbers(&self) -> &SentNumbers {
        &self.numbers
    }

    /// Arguments from the request's `arguments` member: absent or `null` is
    /// empty, an object is taken, anything else is [`NotAnObject`].
    pub fn from_request(value: Option<&Value>) -> Result<Args, NotAnObject> {
        match value {
            None | Some(Value::Null) => Ok(Args::default()),
            Some(Value::Object(map)) => Ok(Args::new(map.clone())),
            Some(_) => Err(NotAnObject),
        }
    }

    /// The raw object, for tools that log or echo what was sent.
    pub(crate) fn as_map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// True when `name` was sent with a non-null value.
    #[cfg(test)]
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// True when `name` was sent at all, `null` included (for rules such as
    /// subscribe's raw/log, which refuse even a `null`).
    pub(crate) fn was_sent(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Refuses any argument not in `allowed`, whatever its value.
    pub(crate) fn expect_only(&self, allowed: &[&str]) -> Result<(), ArgError> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(name) => {
                let shown = format!("{}{}", self.prefix, cut_utf8(name, ECHO_CAP));
                Err(ArgError::new(format!(
                    "unknown argument {}",
                    json_string(&shown)
                )))
            }
        }
    }

    /// A required string.
    pub(crate) fn required_str(&self, name: &str) -> Result<&str, ArgError> {
        self.opt_str(name)?
            .ok_or_else(|| ArgError::new(format!("missing {}", self.named(name))))
    }

    /// An optional string.
    pub(crate) fn opt_str(&self, name: &str) -> Result<Option<&str>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong_type(name, "a string")),
        }
    }

    /// An optional integer: any number without a fraction, saturated to `i64`.
    pub(crate) fn opt_int(&self, name: &str) -> Result<Option<i64>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => int_of(n)
                .map(Some)
                .ok_or_else(|| self.wrong_type(name, "an integer")),
            Some(_) => Err(self.wrong_type(name, "an integer")),
        }
    }

    /// An optional boolean.
    pub(crate) fn opt_bool(&self, name: &str) -> Result<Option<bool>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.wrong_type(name, "a boolean")),
        }
    }

    /// An optional array of strings (every entry a string; `null` entries are
    /// not strings).
    pub(crate) fn opt_str_array(&self, name: &str) -> Result<Option<Vec<&str>>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str())
                .collect::<Option<Vec<&str>>>()
                .map(Some)
                .ok_or_else(|| self.wrong_type(name, "an array of strings")),
            Some(_) => Err(self.wrong_type(name, "an array of strings")),
        }
    }

    /// An optional nested object, whose own errors name `<name>.<inner>`.
    pub(crate) fn opt_object(&self, name: &str) -> Result<Option<Args>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Args {
                map: map.clone(),
                prefix: format!("{}.", self.named(name)),
                numbers: SentNumbers::new(),
            })),
            Some(_) => Err(self.wrong_type(name, "an object")),
        }
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn named(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }

    fn wrong_type(&self, name: &str, what: &str) -> ArgError {
        ArgError::new(format!("{} must be {}", self.named(name), what))
    }
}

/// A JSON number as an integer: `None` when it has a fractional part.
/// Numbers beyond the `i64` range saturate to its ends.
///
/// serde_json keeps every number's text as sent (its `arbitrary_precision`
/// feature), so a number beyond even `f64` (`1e400`) parses, and the text is
/// read exactly here rather than through a lossy `f64`.
fn int_of(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| integer_of_text(&n.to_string()))
}

/// The integer a JSON number's text denotes, saturated to `i64`; `None` when
/// it has a non-zero fraction (or is not a JSON number).
pub(crate) fn integer_of_text(text: &str) -> Option<i64> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], saturating_exponent(&rest[i + 1..])?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // All the digits, and where the decimal point falls among them.
    let digits = format!("{int}{frac}");
    let significant = digits.trim_start_matches('0');
    let point = int.len() as i64 - (digits.len() - significant.len()) as i64 + exponent;
    let significant = significant.trim_end_matches('0');
    if significant.is_empty() {
        return Some(0);
    }
    if point < significant.len() as i64 {
        // A non-zero digit falls after the point.
        return None;
    }
    let saturated = if negative { i64::MIN } else { i64::MAX };
    if point > 19 {
        return Some(saturated);
    }
    // At most 19 digits: fits an i128 with room to spare.
    let zeros = (point - significant.len() as i64) as u32;
    let magnitude: i128 = significant.parse::<i128>().ok()? * 10i128.pow(zeros);
    let value = if negative { -magnitude } else { magnitude };
    Some(i64::try_from(value).unwrap_or(saturated))
}

/// An exponent's digits (with an optional sign), saturated far beyond any
/// digit count a request can carry.
fn saturating_exponent(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    const FAR: i64 = 1 << 40;
    let magnitude = digits
        .bytes()
        .try_fold(0i64, |acc, b| {
            let next = acc * 10 + i64::from(b - b'0');
            (next < FAR).then_some(next)
        })
        .unwrap_or(FAR);
    Some(if negative { -magnitude } else { magnitude })
}

/// Bounds an integer argument: `min` below, `max` above (limits use 1…max,
/// context 0…10). The contract clamps rather than refuses.
pub(crate) fn clamp(value: i64, min: i64, max: i64) -> i64 {
    value.clamp(min, max)
}

/// The longest prefix of `s` of at most `max` UTF-8 bytes that ends on a
/// character boundary.
pub(crate) fn cut_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` as a JSON string literal, quotes included: how error texts echo a
/// client-chosen name.
pub(crate) fn json_string(s: &str) -> String {
    // Serializing a &str cannot fail; the fallback keeps this total.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Args {
        Args::from_request(Some(&v)).unwrap()
    }

    fn err<T: fmt::Debug>(r: Result<T, ArgError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn request_arguments_must_be_an_object_or_null() {
        assert_eq!(Args::from_request(None), Ok(Args::default()));
        assert_eq!(Args::from_request(Some(&Value::Null)), Ok(Args::default()));
        assert_eq!(Args::from_request(Some(&json!([]))), Err(NotAnObject));
        assert_eq!(Args::from_request(Some(&json!("x"))), Err(NotAnObject));
        assert_eq!(Args::from_request(Some(&json!(1))), Err(NotAnObject));
    }

    #[test]
    fn missing_and_null_required() {
        assert_eq!(
            err(args(json!({})).required_str("session")),
            "invalid arguments: missing session"
        );
        assert_eq!(
            err(args(json!({"session": null})).required_str("session")),
            "invalid arguments: missing session"
        );
        assert_eq!(
            args(json!({"session": "S"})).required_str("session"),
            Ok("S")
        );
    }

    #[test]
    fn null_optional_is_absent() {
        let a = args(json!({"cursor": null, "limit": null, "peek": null, "kinds": null}));
        assert_eq!(a.opt_str("cursor"), Ok(None));
        assert_eq!(a.opt_int("limit"), Ok(None));
        assert_eq!(a.opt_bool("peek"), Ok(None));
        assert_eq!(a.opt_str_array("kinds"), Ok(None));
        assert_eq!(a.opt_object("raw"), Ok(None));
        assert!(!a.has("cursor"));
        assert!(a.was_sent("cursor"));
    }

    #[test]
    fn wrong_types() {
        let a = args(json!({"s": 1, "i": "1", "b": 0, "a": ["x", 1], "a2": "x", "o": []}));
        assert_eq!(err(a.opt_str("s")), "invalid arguments: s must be a string");
        assert_eq!(
            err(a.required_str("s")),
            "invalid arguments: s must be a string"
        );
        assert_eq!(
            err(a.opt_int("i")),
            "invalid arguments: i must be an integer"
        );
        assert_eq!(
            err(a.opt_bool("b")),
            "invalid arguments: b must be a boolean"
        );
        assert_eq!(
            err(a.opt_str_array("a")),
            "invalid arguments: a must be an array of strings"
        );
        assert_eq!(
            err(a.opt_str_array("a2")),
            "invalid arguments: a2 must be an array of strings"
        );
        assert_eq!(
            err(a.opt_object("o")),
            "invalid arguments: o must be an object"
        );
        let nulls = args(json!({"a": [null]}));
        assert_eq!(
            err(nulls.opt_str_array("a")),
            "invalid arguments: a must be an array of strings"
        );
    }

    #[test]
    fn right_types() {
        let a = args(json!({"s": "", "b": true, "a": ["x", "y"], "e": []}));
        assert_eq!(a.opt_str("s"), Ok(Some("")));
        assert_eq!(a.opt_bool("b"), Ok(Some(true)));
        assert_eq!(a.opt_str_array("a"), Ok(Some(vec!["x", "y"])));
        assert_eq!(a.opt_str_array("e"), Ok(Some(vec![])));
    }

    #[test]
    fn integers_accept_any_whole_number_and_saturate() {
        let parse = |text: &str| {
            let v: Value = serde_json::from_str(&format!("{{\"n\":{text}}}")).unwrap();
            args(v).opt_int("n")
        };
        assert_eq!(parse("50"), Ok(Some(50)));
        assert_eq!(parse("50.0"), Ok(Some(50)));
        assert_eq!(parse("1e3"), Ok(Some(1000)));
        assert_eq!(parse("-0.0"), Ok(Some(0)));
        assert_eq!(parse("-7"), Ok(Some(-7)));
        assert_eq!(parse("9223372036854775807"), Ok(Some(i64::MAX)));
        assert_eq!(parse("9223372036854775808"), Ok(Some(i64::MAX)));
        assert_eq!(parse("18446744073709551616"), Ok(Some(i64::MAX)));
        assert_eq!(parse("1e300"), Ok(Some(i64::MAX)));
        assert_eq!(parse("-9223372036854775809"), Ok(Some(i64::MIN)));
        assert_eq!(parse("-1e300"), Ok(Some(i64::MIN)));
        assert_eq!(
            parse("50.5").unwrap_err().to_string(),
            "invalid arguments: n must be an integer"
        );
        assert_eq!(
            parse("1e-3").unwrap_err().to_string(),
            "invalid arguments: n must be an integer"
        );
    }

    #[test]
    fn numbers_beyond_f64_saturate_and_are_read_exactly() {
        let parse = |text: &str| {
            let v: Value = serde_json::from_str(&format!("{{\"n\":{text}}}")).unwrap();
            args(v).opt_int("n")
        };
        assert_eq!(parse("1e400"), Ok(Some(i64::MAX)));
        assert_eq!(parse("-1e400"), Ok(Some(i64::MIN)));
        assert_eq!(parse("1E+99999999999999999999999"), Ok(Some(i64::MAX)));
        assert_eq!(parse("12345678901234567890123"), Ok(Some(i64::MAX)));
        assert_eq!(parse("-12345678901234567890123.000"), Ok(Some(i64::MIN)));
        assert_eq!(parse("1.5e1"), Ok(Some(15)));
        assert_eq!(parse("100e-2"), Ok(Some(1)));
        assert_eq!(parse("0.00e-99999999999999999999"), Ok(Some(0)));
        assert_eq!(parse("9223372036854775807.0"), Ok(Some(i64::MAX)));
        assert_eq!(parse("-9223372036854775808e0"), Ok(Some(i64::MIN)));
        assert_eq!(parse("922337203685477580.7e1"), Ok(Some(i64::MAX)));
        for fractional in [
            "1e-400",
            "1.0000000000000000000001",
            "12345678901234567890.5",
            "5e-1",
        ] {
            assert_eq!(
                parse(fractional).unwrap_err().to_string(),
                "invalid arguments: n must be an integer",
                "{fractional}"
            );
        }
    }

    #[test]
    fn clamps() {
        assert_eq!(clamp(-3, 0, 10), 0);
        assert_eq!(clamp(11, 0, 10), 10);
    }

    #[test]
    fn unknown_arguments_are_refused_whatever_their_value() {
        let a = args(json!({"session": "S", "zeta": null}));
        assert_eq!(
            err(a.expect_only(&["session"])),
            "invalid arguments: unknown argument \"zeta\""
        );
        assert_eq!(a.expect_only(&["session", "zeta"]), Ok(()));
        assert_eq!(args(json!({})).expect_only(&[]), Ok(()));
        // The first unknown name in byte order is the one reported.
        let two = args(json!({"b": 1, "a": 1}));
        assert_eq!(
            err(two.expect_only(&[])),
            "invalid arguments: unknown argument \"a\""
        );
    }

    #[test]
    fn unknown_argument_names_are_cut_and_escaped() {
        let long = "é".repeat(40); // 80 bytes; 64 is a boundary (32 chars)
        let a = args(json!({ long.clone(): 1 }));
        let expected = format!("invalid arguments: unknown argument \"{}\"", "é".repeat(32));
        assert_eq!(err(a.expect_only(&[])), expected);
        let odd = format!("{}€", "a".repeat(62)); // € straddles byte 64
        let a = args(json!({ odd: 1 }));
        assert_eq!(
            err(a.expect_only(&[])),
            format!("invalid arguments: unknown argument \"{}\"", "a".repeat(62))
        );
        let a = args(json!({"a\"b\n\u{1b}": 1}));
        assert_eq!(
            err(a.expect_only(&[])),
            "invalid arguments: unknown argument \"a\\\"b\\n\\u001b\""
        );
    }

    #[test]
    fn nested_objects_prefix_their_names() {
        let a = args(json!({"raw": {"sessions": "x", "extra": 1, "direction": 2}}));
        let raw = a.opt_object("raw").unwrap().unwrap();
        assert_eq!(
            err(raw.expect_only(&["sessions", "direction"])),
            "invalid arguments: unknown argument \"raw.extra\""
        );
        assert_eq!(
            err(raw.opt_str_array("sessions")),
            "invalid arguments: raw.sessions must be an array of strings"
        );
        assert_eq!(
            err(raw.opt_str("direction")),
            "invalid arguments: raw.direction must be a string"
        );
        assert_eq!(
            err(raw.required_str("nothing")),
            "invalid arguments: missing raw.nothing"
        );
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut_utf8("abc", 5), "abc");
        assert_eq!(cut_utf8("abc", 2), "ab");
        assert_eq!(cut_utf8("aé", 2), "a");
        assert_eq!(cut_utf8("€", 2), "");
        assert_eq!(cut_utf8("", 0), "");
    }
}
