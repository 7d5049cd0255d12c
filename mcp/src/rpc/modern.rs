//! The 2026-07-28 era: no handshake, every request carries its protocol
//! version and client capabilities in `params._meta`, and the HTTP headers
//! mirror the body so that intermediaries can route without reading it.
//!
//! A request is in this era when its MCP-Protocol-Version header names a
//! version of it, or its body's `params._meta` carries the protocol-version
//! key (see [`is_modern`]); everything else is the handshake era, answered
//! exactly as the contract words it. The gate, the tools, their results and
//! their error strings are the same in both eras.
//!
//! The checks on a request, in order; the first failure answers (HTTP 400
//! unless said otherwise, the request's id always carried):
//! 1. the body is one JSON-RPC message (as in [`super::message`]);
//!    responses get the empty 202, and so do notifications whose routing
//!    headers are not repeated and whose Mcp-Method (decoded) equals their
//!    method (else `-32020`, without an id);
//! 2. `params._meta` is an object holding the protocol-version key and the
//!    client-capabilities key, whose value is an object: else `-32602`;
//! 3. no MCP-Protocol-Version, Mcp-Method or Mcp-Name header is repeated; the
//!    MCP-Protocol-Version header equals `_meta`'s version; Mcp-Method equals
//!    the method; for tools/call with a string name, Mcp-Name equals it: else
//!    `-32020`. Mcp-Method and Mcp-Name are read decoded (see
//!    [`super::header_value`]), as a client may send any value it mirrors in
//!    the `=?base64?…?=` form. Checked before the version, so a client that
//!    disagrees with itself is told so;
//! 4. the version is one of [`MODERN_VERSIONS`]: else `-32022` with
//!    `data.supported` (those versions) and `data.requested`;
//! 5. the method: server/discover, tools/list or tools/call; initialize,
//!    ping and every other method are HTTP 404 with `-32601`.
//!
//! Every result carries `resultType: "complete"`; server/discover and
//! tools/list carry caching hints (`ttlMs`, `cacheScope`).

use crate::rpc::header_value;
use crate::rpc::headers::values;
use crate::rpc::message::{self, Message};
use crate::rpc::methods::{self, MethodError, INSTRUCTIONS, SERVER_NAME};
use crate::rpc::reply::{
    accepted, call_response, error_response, json_response, result_body, INVALID_PARAMS,
    METHOD_NOT_FOUND,
};
use crate::rpc::RpcResponse;
use crate::tools::{ToolBox, ToolContext};
use serde_json::{json, Map, Value};

/// The protocol versions of this era, oldest first.
pub(crate) const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// `_meta` key: the request's protocol version.
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities.
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// Result `_meta` key: the server's name and version.
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Headers that disagree with the body, or one missing or repeated.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// A protocol version this era does not serve.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How long a client may reuse a server/discover answer: it changes only
/// when reterm is upgraded.
const DISCOVER_TTL_MS: u64 = 3_600_000;
/// tools/list is stale at once: the list follows control.debug and
/// control.send, which may change at any moment, and this era has no
/// list-changed notification to tell a client so.
const TOOLS_LIST_TTL_MS: u64 = 0;
/// Both answers may be cached only for this token: "private" (never shared
/// across authorization contexts).
const CACHE_SCOPE: &str = "private";

/// Whether a request is in this era: its MCP-Protocol-Version header names
/// one of [`MODERN_VERSIONS`], or its body's `params._meta` holds
/// [`PROTOCOL_VERSION_KEY`]. A handshake-era client sends neither.
pub(crate) fn is_modern(headers: &[(&str, &str)], body: Option<&Value>) -> bool {
    let params = body
        .and_then(|b| b.get("params"))
        .and_then(Value::as_object);
    is_modern_request(headers, params)
}

/// [`is_modern`] for a request whose params are read already.
pub(crate) fn is_modern_request(
    headers: &[(&str, &str)],
    params: Option<&Map<String, Value>>,
) -> bool {
    values(headers, "mcp-protocol-version").any(|v| MODERN_VERSIONS.contains(&v))
        || params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object)
            .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY))
}

/// Answers one request of this era whose Accept and Content-Type passed.
pub(crate) async fn handle(
    headers: &[(&str, &str)],
    value: Value,
    body: &[u8],
    tools: &ToolBox,
    ctx: &ToolContext,
) -> RpcResponse {
    match message::classify(value) {
        Err(refused) => refused,
        Ok(Message::Response) => accepted(),
        Ok(Message::Notification { method }) => match check_notification(headers, &method) {
            Ok(()) => accepted(),
            Err(refusal) => error_response(400, None, refusal.code, refusal.message, None),
        },
        Ok(Message::Request { id, method, params }) => {
            request(headers, &id, &method, &params, body, tools, ctx).await
        }
    }
}

/// Answers one request of this era, read already, whose Accept and
/// Content-Type passed.
pub(crate) async fn request(
    headers: &[(&str, &str)],
    id: &Value,
    method: &str,
    params: &Map<String, Value>,
    body: &[u8],
    tools: &ToolBox,
    ctx: &ToolContext,
) -> RpcResponse {
    if let Err(refusal) = check_envelope(headers, method, params) {
        return error_response(400, Some(id), refusal.code, refusal.message, refusal.data);
    }
    match method {
        "server/discover" => complete(id, discover()),
        "tools/list" => {
            let mut result = methods::tools_list(tools, ctx);
            result["ttlMs"] = json!(TOOLS_LIST_TTL_MS);
            result["cacheScope"] = json!(CACHE_SCOPE);
            complete(id, result)
        }
        "tools/call" => {
            let numbers = message::sent_numbers(body, params);
            match methods::call_tool(params, &numbers, tools, ctx).await {
                Ok(result) => call_response(id, &result, Some(COMPLETE)),
                Err(MethodError { code, message }) => {
                    error_response(status_of(code), Some(id), code, message, None)
                }
            }
        }
        _ => error_response(404, Some(id), METHOD_NOT_FOUND, "Method not found", None),
    }
}

/// The HTTP status of a method's JSON-RPC error in this era: 400 for bad
/// params; the contract's -32603 (arguments not an object) stays a 200, as
/// the 2026-07-28 revision assigns that code no status.
fn status_of(code: i64) -> u16 {
    if code == INVALID_PARAMS {
        400
    } else {
        200
    }
}

/// The `resultType` of every result this server sends.
const COMPLETE: &str = "complete";

/// A 200 answer whose result says it is complete.
fn complete(id: &Value, mut result: Value) -> RpcResponse {
    result["resultType"] = json!(COMPLETE);
    json_response(200, &result_body(id, result))
}

/// The server/discover result (before its `resultType`).
fn discover() -> Value {
    json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": { "tools": {} },
        "instructions": INSTRUCTIONS,
        "ttlMs": DISCOVER_TTL_MS,
        "cacheScope": CACHE_SCOPE,
        "_meta": {
            SERVER_INFO_KEY: { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") },
        },
    })
}

/// Why a request's envelope was refused.
#[derive(Debug, PartialEq)]
struct Refusal {
    code: i64,
    message: &'static str,
    data: Option<Value>,
}

fn refusal(code: i64, message: &'static str) -> Refusal {
    Refusal {
        code,
        message,
        data: None,
    }
}

/// Checks 2 to 4 of the module's list.
fn check_envelope(
    headers: &[(&str, &str)],
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), Refusal> {
    let meta = params.get("_meta").and_then(Value::as_object);
    let (Some(version), Some(capabilities)) = (
        meta.and_then(|m| m.get(PROTOCOL_VERSION_KEY)),
        meta.and_then(|m| m.get(CLIENT_CAPABILITIES_KEY)),
    ) else {
        return Err(refusal(
            INVALID_PARAMS,
            "Invalid params: _meta must hold io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
        ));
    };
    if !capabilities.is_object() {
        return Err(refusal(
            INVALID_PARAMS,
            "Invalid params: io.modelcontextprotocol/clientCapabilities must be an object",
        ));
    }
    let routing = Routing::read(headers)?;
    // A version that is no string never equals a header, so past this check
    // it is the header's text.
    let Some(version) = routing.version.filter(|h| version.as_str() == Some(*h)) else {
        return Err(refusal(
            HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version must equal _meta's protocol version",
        ));
    };
    routing.check_method(method)?;
    if method == "tools/call" {
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            if routing.name.and_then(header_value::decode).as_deref() != Some(name) {
                return Err(refusal(
                    HEADER_MISMATCH,
                    "Header mismatch: Mcp-Name must equal the tool's name",
                ));
            }
        }
    }
    if !MODERN_VERSIONS.contains(&version) {
        return Err(Refusal {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version",
            data: Some(json!({ "supported": MODERN_VERSIONS, "requested": version })),
        });
    }
    Ok(())
}

/// A notification of this era is accepted only when its headers agree with
/// it: none repeated, and Mcp-Method its method, since an intermediary
/// routes it by them. Its `_meta` is not checked: the envelope's version and
/// capabilities decide how a request is answered, and a notification gets
/// no answer.
fn check_notification(headers: &[(&str, &str)], method: &str) -> Result<(), Refusal> {
    Routing::read(headers)?.check_method(method)
}

/// The routing headers of a request, each sent at most once.
struct Routing<'a> {
    version: Option<&'a str>,
    method: Option<&'a str>,
    name: Option<&'a str>,
}

impl<'a> Routing<'a> {
    /// The three headers, or `-32020` when one is repeated.
    fn read(headers: &'a [(&'a str, &'a str)]) -> Result<Routing<'a>, Refusal> {
        let one = |name: &'static str| -> Result<Option<&'a str>, Refusal> {
            let mut all = values(headers, name);
            match (all.next(), all.next()) {
                (first, None) => Ok(first),
                (Some(_), Some(_)) | (None, Some(_)) => Err(refusal(
                    HEADER_MISMATCH,
                    "Header mismatch: a routing header is repeated",
                )),
            }
        };
        Ok(Routing {
            version: one("mcp-protocol-version")?,
            method: one("mcp-method")?,
            name: one("mcp-name")?,
        })
    }

    /// `-32020` unless Mcp-Method, decoded, is `method`.
    fn check_method(&self, method: &str) -> Result<(), Refusal> {
        if self.method.and_then(header_value::decode).as_deref() != Some(method) {
            return Err(refusal(
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method must equal the method",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        pairs.to_vec()
    }

    fn params(name: Option<&str>) -> Map<String, Value> {
        let mut p =
            json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}});
        if let Some(name) = name {
            p["name"] = json!(name);
        }
        p.as_object().unwrap().clone()
    }

    #[test]
    fn the_era_follows_the_header_or_the_envelope() {
        let body = |v: Value| Some(v);
        assert!(is_modern(
            &h(&[("mcp-protocol-version", "2026-07-28")]),
            None
        ));
        assert!(!is_modern(
            &h(&[("MCP-Protocol-Version", "2025-11-25")]),
            None
        ));
        assert!(!is_modern(
            &h(&[("MCP-Protocol-Version", "1999-01-01")]),
            None
        ));
        assert!(!is_modern(&[], None));
        let envelope = json!({"params": {"_meta": {PROTOCOL_VERSION_KEY: "x"}}});
        assert!(is_modern(&[], body(envelope).as_ref()));
        let handshake_meta = json!({"params": {"_meta": {"progressToken": 1}}});
        assert!(!is_modern(&[], body(handshake_meta).as_ref()));
    }

    #[test]
    fn headers_are_checked_against_the_body() {
        let good = h(&[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "list_sessions"),
        ]);
        assert_eq!(
            check_envelope(&good, "tools/call", &params(Some("list_sessions"))),
            Ok(())
        );
        let code = |headers: &[(&str, &str)], method: &str, name: Option<&str>| {
            check_envelope(headers, method, &params(name))
                .err()
                .map(|r| r.code)
        };
        assert_eq!(code(&good, "tools/list", None), Some(HEADER_MISMATCH));
        assert_eq!(
            code(&good, "tools/call", Some("list_buffers")),
            Some(HEADER_MISMATCH)
        );
        let mut twice = good.clone();
        twice.push(("mcp-name", "list_sessions"));
        assert_eq!(
            code(&twice, "tools/call", Some("list_sessions")),
            Some(HEADER_MISMATCH)
        );
        // Without a name, tools/call is refused later, by the method (-32602).
        assert_eq!(code(&good[..2], "tools/call", None), None);
        assert_eq!(
            check_envelope(&good, "tools/call", &Map::new()).map_err(|r| r.code),
            Err(INVALID_PARAMS)
        );
    }

    #[test]
    fn an_unsupported_version_names_the_served_ones() {
        let mut p = params(None);
        p["_meta"][PROTOCOL_VERSION_KEY] = json!("2030-01-01");
        let headers = h(&[
            ("MCP-Protocol-Version", "2030-01-01"),
            ("Mcp-Method", "tools/list"),
        ]);
        let r = check_envelope(&headers, "tools/list", &p).unwrap_err();
        assert_eq!(r.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            r.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2030-01-01"}))
        );
    }
}
