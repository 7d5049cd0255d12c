//! JSON-RPC 2.0 response bodies and the HTTP answers that carry them.

use crate::read::encoded::Encoded;
use crate::rpc::RpcResponse;
use serde_json::{json, Value};

/// The body is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The body is JSON but not a JSON-RPC message we take.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// The method's params are wrong.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// The contract's code for tools/call arguments that are not an object.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// The media type of every body we send.
pub(crate) const JSON: &str = "application/json";

/// A JSON-RPC error as an HTTP answer with this status. `id` is the
/// request's when the body parsed as a JSON-RPC request, else None and the
/// answer has no `id` member: the MCP schema allows an error without one but
/// rejects `"id": null`.
pub(crate) fn error_response(
    status: u16,
    id: Option<&Value>,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> RpcResponse {
    json_response(status, &error_object(id, code, message, data))
}

/// A JSON-RPC error object for request `id`.
pub(crate) fn error_body(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    error_object(Some(id), code, message, data)
}

fn error_object(id: Option<&Value>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    let mut body = json!({ "jsonrpc": "2.0", "error": error });
    if let Some(id) = id {
        body["id"] = id.clone();
    }
    body
}

/// A JSON-RPC result object for request `id`.
pub(crate) fn result_body(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A tools/call result as it is sent: the one text item (the tool's
/// encoded result or its error text) and whether it is a tool error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallResult {
    /// The text item's content, escaped for the string it is sent in.
    pub(crate) text: Encoded,
    /// True for a tool error (`isError: true`).
    pub(crate) is_error: bool,
}

/// The 200 answer carrying a tools/call result for request `id`, with
/// `resultType` when the era sends one.
///
/// The same bytes as [`json_response`] of [`result_body`] with a
/// `{"content": [{"type": "text", "text": …}], "isError": …}` result, keys
/// in the sorted order a `Value` writes them, but written straight around
/// the text, which is escaped already: it is copied into the body instead
/// of being moved into a `Value` tree of eight allocations and serialized
/// from it.
pub(crate) fn call_response(
    id: &Value,
    result: &CallResult,
    result_type: Option<&str>,
) -> RpcResponse {
    let text = result.text.escaped();
    let mut bytes = Vec::with_capacity(text.len() + 128);
    bytes.extend_from_slice(br#"{"id":"#);
    // Writing JSON to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut bytes, id);
    bytes.extend_from_slice(br#","jsonrpc":"2.0","result":{"content":[{"text":""#);
    bytes.extend_from_slice(text);
    bytes.extend_from_slice(br#"","type":"text"}]"#);
    if result.is_error {
        bytes.extend_from_slice(br#","isError":true"#);
    }
    if let Some(result_type) = result_type {
        bytes.extend_from_slice(br#","resultType":"#);
        let _ = serde_json::to_writer(&mut bytes, result_type);
    }
    bytes.extend_from_slice(b"}}");
    RpcResponse {
        status: 200,
        content_type: Some(JSON),
        body: bytes,
    }
}

/// A JSON body with this status.
pub(crate) fn json_response(status: u16, body: &Value) -> RpcResponse {
    // The same compact bytes as `Display`, written straight into the Vec
    // rather than through a formatter (measured: half the cost). Writing a
    // Value to a Vec cannot fail.
    let mut bytes = Vec::with_capacity(256);
    let _ = serde_json::to_writer(&mut bytes, body);
    RpcResponse {
        status,
        content_type: Some(JSON),
        body: bytes,
    }
}

/// 202 with an empty body: a notification or a response was accepted.
pub(crate) fn accepted() -> RpcResponse {
    RpcResponse {
        status: 202,
        content_type: None,
        body: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer as the `Value` envelope would have written it.
    fn through_value(
        id: &Value,
        text: &str,
        result: &CallResult,
        result_type: Option<&str>,
    ) -> Vec<u8> {
        let mut value = json!({ "content": [{ "type": "text", "text": text }] });
        if result.is_error {
            value["isError"] = json!(true);
        }
        if let Some(t) = result_type {
            value["resultType"] = json!(t);
        }
        json_response(200, &result_body(id, value)).body
    }

    #[test]
    fn a_call_response_has_the_bytes_of_its_value_envelope() {
        let texts = [
            String::new(),
            r#"{"sessions":[],"untrusted":true}"#.to_owned(),
            "quote \" backslash \\ line\nbreak tab\t nul\u{0} esc\u{1b} bidi\u{202e} é 😀"
                .to_owned(),
            "x".repeat(70_000),
        ];
        for id in [
            json!(1),
            json!("a\"b"),
            json!(-7),
            json!(12345678901234567890u64),
        ] {
            for text in &texts {
                for is_error in [false, true] {
                    for result_type in [None, Some("complete")] {
                        let result = CallResult {
                            text: Encoded::text(text),
                            is_error,
                        };
                        let sent = call_response(&id, &result, result_type);
                        assert_eq!(sent.status, 200);
                        assert_eq!(sent.content_type, Some(JSON));
                        assert_eq!(
                            String::from_utf8_lossy(&sent.body),
                            String::from_utf8_lossy(&through_value(
                                &id,
                                text,
                                &result,
                                result_type
                            )),
                        );
                    }
                }
            }
        }
    }
}
