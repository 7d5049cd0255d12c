//! Classifying a body as one JSON-RPC 2.0 message.
//!
//! Decisions, in the order checked (every refusal is HTTP 400 with a
//! JSON-RPC error; it carries the request's id when the body is a request —
//! see [`request_id`] — and has no id member otherwise):
//! - not JSON (or not UTF-8): `-32700 Parse error`;
//! - a batch (a top-level array), or not an object: `-32600`;
//! - `jsonrpc` other than `"2.0"`: `-32600`;
//! - with `method`: it must be a string and `params`, when present and not
//!   null, an object; no `id` makes it a notification, else `id` must be a
//!   string or an integer (a null, fractional or other id is `-32600`);
//! - without `method` but with `result` or `error`: a response;
//! - anything else: `-32600`.

use crate::read::args::SentNumbers;
use crate::rpc::reply::{error_response, INVALID_REQUEST, PARSE_ERROR};
use crate::rpc::RpcResponse;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One JSON-RPC message.
#[derive(Debug, PartialEq)]
pub(crate) enum Message {
    /// A request, to be answered.
    Request {
        /// Its id, echoed in the answer.
        id: Value,
        /// The method name.
        method: String,
        /// Its params object; empty when absent or null.
        params: Map<String, Value>,
    },
    /// A notification (no id): accepted, never answered (the 2026-07-28
    /// era checks its Mcp-Method header against `method` first).
    Notification {
        /// The method name.
        method: String,
    },
    /// A response or error from the client: accepted, never answered.
    Response,
}

/// Parses the body; the 400 answer when it is not one message.
#[cfg(test)]
pub(crate) fn parse(body: &[u8]) -> Result<Message, RpcResponse> {
    classify(decode(body)?)
}

/// A request read from the body without building a `Value` of the whole
/// body: its id, its method borrowed from the body, and its params.
#[derive(Debug, PartialEq)]
pub(crate) struct PlainRequest<'a> {
    /// Its id, a string or an integer, echoed in the answer.
    pub(crate) id: Value,
    /// The method name, as it stands in the body (it has no escapes).
    pub(crate) method: &'a str,
    /// Its params object; empty when absent or null.
    pub(crate) params: Map<String, Value>,
}

/// The usual body read the quick way: one object holding `jsonrpc` "2.0", a
/// `method` string, a request `id`, and `params` an object, null or absent.
///
/// `None` for everything else, which [`decode`] and [`classify`] then read
/// and answer, so no answer depends on this reading: a batch, one of these
/// four members twice, a string with an escape in `jsonrpc` or `method`, a
/// notification, a response, anything malformed. Where it answers, it
/// answers what `classify(decode(body))` does (`Message::Request` with the
/// same parts): both read the params and the id with serde_json's `Value`,
/// and a body this reading takes holds each of the four members once (other
/// members, which neither reading uses, may repeat).
///
/// A whole-body `Value` costs an allocation for each member name and string
/// and a map for the envelope; this reads the envelope into borrowed fields.
pub(crate) fn plain_request(body: &[u8]) -> Option<PlainRequest<'_>> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        jsonrpc: &'a str,
        #[serde(borrow)]
        id: &'a RawValue,
        #[serde(borrow)]
        method: &'a str,
        #[serde(default)]
        params: Option<Map<String, Value>>,
    }
    // serde reads a struct from an array too; an array is a batch here.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    let id: Value = serde_json::from_str(envelope.id.get()).ok()?;
    if !is_request_id(&id) {
        return None;
    }
    Some(PlainRequest {
        id,
        method: envelope.method,
        params: envelope.params.unwrap_or_default(),
    })
}

/// The body as JSON; the `-32700` answer (no id: there is no request) when
/// it is not.
pub(crate) fn decode(body: &[u8]) -> Result<Value, RpcResponse> {
    serde_json::from_slice(body)
        .map_err(|_| error_response(400, None, PARSE_ERROR, "Parse error", None))
}

/// The id of a body that is a JSON-RPC request: an object with `jsonrpc`
/// "2.0", a string `method` and a string or integer `id`. Every error answer
/// to such a body carries this id, even one decided on the headers alone.
pub(crate) fn request_id(value: &Value) -> Option<&Value> {
    let object = value.as_object()?;
    let is_request = object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && object.get("method").is_some_and(Value::is_string);
    object
        .get("id")
        .filter(|id| is_request && is_request_id(id))
}

/// Classifies a decoded body as one message; the 400 answer when it is not.
pub(crate) fn classify(value: Value) -> Result<Message, RpcResponse> {
    let mut object = match value {
        Value::Object(o) => o,
        Value::Array(_) => return Err(invalid(None, "Invalid Request: batches are not supported")),
        _ => return Err(invalid(None, "Invalid Request: not a JSON-RPC message")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(None, "Invalid Request: jsonrpc must be \"2.0\""));
    }
    if let Some(method) = object.get("method") {
        let Some(method) = method.as_str().map(str::to_owned) else {
            return Err(invalid(None, "Invalid Request: method must be a string"));
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p,
            Some(_) => {
                let id = object.get("id").filter(|id| is_request_id(id));
                return Err(invalid(id, "Invalid Request: params must be an object"));
            }
        };
        let id = match object.remove("id") {
            None => None,
            Some(id) if is_request_id(&id) => Some(id),
            Some(_) => {
                return Err(invalid(
                    None,
                    "Invalid Request: id must be a string or an integer",
                ))
            }
        };
        return Ok(match id {
            None => Message::Notification { method },
            Some(id) => Message::Request { id, method, params },
        });
    }
    if object.contains_key("result") || object.contains_key("error") {
        return Ok(Message::Response);
    }
    Err(invalid(None, "Invalid Request: not a JSON-RPC message"))
}

/// The text of each top-level number in a tools/call's `arguments`, exactly
/// as sent, read from the body a second time with the arguments borrowed raw.
/// Empty when there is nothing such to read (the call is then logged with
/// its numbers as parsed).
///
/// `params` is the request's params as parsed: when its `arguments` hold no
/// top-level number there is nothing to read, and the body is not parsed
/// again (most calls send none).
pub(crate) fn sent_numbers(body: &[u8], params: &Map<String, Value>) -> SentNumbers {
    let has_numbers = params
        .get("arguments")
        .and_then(Value::as_object)
        .is_some_and(|arguments| arguments.values().any(Value::is_number));
    if !has_numbers {
        return SentNumbers::new();
    }
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }
    let Ok(Call {
        params: Some(Params {
            arguments: Some(raw),
        }),
    }) = serde_json::from_slice::<Call<'_>>(body)
    else {
        return SentNumbers::new();
    };
    let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get()) else {
        return SentNumbers::new();
    };
    members
        .into_iter()
        .filter(|(_, v)| {
            v.get()
                .starts_with(|c: char| c == '-' || c.is_ascii_digit())
        })
        .map(|(k, v)| (k, v.get().to_owned()))
        .collect()
}

fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

fn invalid(id: Option<&Value>, message: &str) -> RpcResponse {
    error_response(400, id, INVALID_REQUEST, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code(body: &str) -> (u16, i64) {
        let r = parse(body.as_bytes()).unwrap_err();
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(v.get("id").is_none(), "{v}");
        assert_eq!(v["jsonrpc"], json!("2.0"));
        (r.status, v["error"]["code"].as_i64().unwrap())
    }

    #[test]
    fn requests_notifications_responses() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap(),
            Message::Request {
                id: json!(1),
                method: "ping".into(),
                params: Map::new()
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}"#).unwrap(),
            Message::Request {
                id: json!("a"),
                method: "m".into(),
                params: json!({"x": 1}).as_object().unwrap().clone()
            }
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#),
            Ok(Message::Request { .. })
        ));
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Message::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap(),
            Message::Response
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#).unwrap(),
            Message::Response
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(code(""), (400, -32700));
        assert_eq!(code("{"), (400, -32700));
        assert_eq!(code("\u{fffd}"), (400, -32700));
        assert_eq!(parse(b"\xff\xfe").unwrap_err().status, 400, "not UTF-8");
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            (400, -32600)
        );
        assert_eq!(code("[]"), (400, -32600));
        assert_eq!(code("1"), (400, -32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), (400, -32600));
        assert_eq!(code(r#"{"id":1,"method":"ping"}"#), (400, -32600));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            (400, -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            (400, -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (400, -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (400, -32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            (400, -32600)
        );
    }

    #[test]
    fn a_refused_request_keeps_its_id() {
        let r = parse(br#"{"jsonrpc":"2.0","id":"x","method":"ping","params":[1]}"#).unwrap_err();
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!((r.status, v["id"].clone()), (400, json!("x")));
        assert_eq!(v["error"]["code"], json!(-32600));
    }

    #[test]
    fn request_ids() {
        let id = |s: &str| request_id(&serde_json::from_str(s).unwrap()).cloned();
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":3,"method":"m"}"#),
            Some(json!(3))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":5}"#),
            Some(json!("a"))
        );
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":1,"method":2}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(id(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#), None);
    }

    #[test]
    fn the_usual_requests_are_read_without_a_whole_body_value() {
        fn plain(body: &str) -> Option<PlainRequest<'_>> {
            plain_request(body.as_bytes())
        }
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#;
        assert_eq!(
            plain(call),
            Some(PlainRequest {
                id: json!(7),
                method: "tools/call",
                params: json!({"name": "list_sessions", "arguments": {}})
                    .as_object()
                    .unwrap()
                    .clone(),
            })
        );
        let ping = plain(r#" {"method":"ping","id":"a","jsonrpc":"2.0","params":null} "#).unwrap();
        assert_eq!(
            (ping.id, ping.method, ping.params),
            (json!("a"), "ping", Map::new())
        );
        let extra = plain(r#"{"jsonrpc":"2.0","id":-3,"method":"ping","result":1,"x":[1]}"#);
        assert_eq!(extra.map(|p| p.id), Some(json!(-3)));
    }

    #[test]
    fn every_other_body_is_left_to_the_value_reading() {
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#" ["2.0",1,"ping",null]"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            "",
        ] {
            assert_eq!(plain_request(body.as_bytes()), None, "{body}");
        }
        assert_eq!(
            plain_request(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}"),
            None
        );
    }

    mod generated {
        use super::*;
        use proptest::prelude::*;

        /// A member's value, as text: the well-formed ones and near misses.
        fn value() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                r#""2.0""#,
                r#""1.0""#,
                r#""2\u002e0""#,
                r#""ping""#,
                r#""tools/call""#,
                r#""p\"ing""#,
                "1",
                "-1",
                "0",
                "1.0",
                "1e2",
                "18446744073709551615",
                "18446744073709551616",
                "-9223372036854775809",
                "null",
                "true",
                "{}",
                "[]",
                r#"{"a":1,"a":2}"#,
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
                r#"{"name":"list_sessions","arguments":{"limit":5}}"#,
                "[1]",
                r#""""#,
            ])
            .prop_map(str::to_owned)
        }

        fn name() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec![
                "jsonrpc",
                "id",
                "method",
                "params",
                "result",
                "error",
                "x",
                r"js\u006fnrpc",
            ])
        }

        /// A member the usual request has, with a value that is usually
        /// right for it.
        fn usual(
            name: &'static str,
            right: &'static str,
        ) -> impl Strategy<Value = (&'static str, String)> {
            prop_oneof![3 => Just(right.to_owned()), 1 => value()].prop_map(move |v| (name, v))
        }

        /// A body: the usual request's members, some with other values, in
        /// any order, and members of any name (repeats too) added; usually
        /// an object, sometimes inside an array or with bytes around it.
        fn body() -> impl Strategy<Value = String> {
            (
                (
                    usual("jsonrpc", r#""2.0""#),
                    usual("id", "1"),
                    usual("method", r#""tools/call""#),
                    usual("params", r#"{"name":"list_sessions","arguments":{}}"#),
                ),
                prop::collection::vec((name(), value()), 0..3),
                prop::sample::select(vec!["", "", "", " ", "[", "x"]),
            )
                .prop_flat_map(|((a, b, c, d), extra, wrap)| {
                    let mut members = vec![a, b, c, d];
                    members.extend(extra);
                    (Just(members).prop_shuffle(), Just(wrap))
                })
                .prop_map(|(members, wrap)| {
                    let inner: Vec<String> = members
                        .iter()
                        .map(|(n, v)| format!(r#""{n}":{v}"#))
                        .collect();
                    let object = format!("{{{}}}", inner.join(","));
                    match wrap {
                        "[" => format!("[{object}]"),
                        w => format!("{w}{object}{w}"),
                    }
                })
        }

        /// Where the quick reading answers, the `Value` reading answers the
        /// same request; and the bodies generated take both ways often.
        #[test]
        fn the_quick_reading_agrees_with_the_value_reading() {
            use proptest::test_runner::{Config, TestRunner};
            let cases = Config::default().cases.max(2_000);
            let mut runner = TestRunner::new(Config {
                cases,
                ..Config::default()
            });
            let (quick, left) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
            runner
                .run(&body(), |body| {
                    match plain_request(body.as_bytes()) {
                        Some(plain) => {
                            quick.set(quick.get() + 1);
                            prop_assert_eq!(
                                parse(body.as_bytes()),
                                Ok(Message::Request {
                                    id: plain.id,
                                    method: plain.method.to_owned(),
                                    params: plain.params,
                                })
                            );
                        }
                        None => left.set(left.get() + 1),
                    }
                    Ok(())
                })
                .unwrap();
            let (quick, left, tenth) = (quick.get(), left.get(), cases / 10);
            assert!(quick > tenth && left > tenth, "quick {quick}, left {left}");
        }
    }
}
