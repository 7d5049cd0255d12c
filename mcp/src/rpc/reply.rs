//! JSON-RPC 2.0 response bodies and the HTTP answers that carry them.

use crate::rpc::RpcResponse;
use serde_json::{json, Value};

/// The body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The body is JSON but not a JSON-RPC message we take.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's params are wrong.
pub const INVALID_PARAMS: i64 = -32602;
/// The contract's code for tools/call arguments that are not an object.
pub const INTERNAL_ERROR: i64 = -32603;

/// The media type of every body we send.
pub const JSON: &str = "application/json";

/// A JSON-RPC error as an HTTP answer with this status. `id` is the
/// request's when the body parsed as a JSON-RPC request, else None and the
/// answer has no `id` member: the MCP schema allows an error without one but
/// rejects `"id": null`.
pub fn error_response(
    status: u16,
    id: Option<&Value>,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> RpcResponse {
    json_response(status, &error_object(id, code, message, data))
}

/// A JSON-RPC error object for request `id`.
pub fn error_body(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
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
pub fn result_body(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A JSON body with this status.
pub fn json_response(status: u16, body: &Value) -> RpcResponse {
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
pub fn accepted() -> RpcResponse {
    RpcResponse {
        status: 202,
        content_type: None,
        body: Vec::new(),
    }
}
