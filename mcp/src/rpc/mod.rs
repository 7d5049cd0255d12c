//! The stateless MCP-over-HTTP layer: what happens to a request that passed
//! the access gate, route and method checks. Hand-written JSON-RPC 2.0 on
//! serde_json; no sockets here, so every rule is testable in-process.
//!
//! One request, one answer: there is no session, no `Mcp-Session-Id` and no
//! event stream. Every answer is JSON (`application/json`) or an empty 202.
//!
//! Two protocol eras share the endpoint, chosen per request: the handshake
//! era (2024-11-05 to 2025-11-25, initialize first), exactly as the contract
//! words it, and the stateless 2026-07-28 era ([`modern`]), whose requests
//! each carry their version in `_meta` and mirror it in the headers.
//!
//! - [`headers`]: Accept (406), Content-Type (415), MCP-Protocol-Version (400).
//! - [`message`]: one JSON-RPC message or 400; notifications and responses 202.
//! - [`methods`]: initialize, ping, tools/list, tools/call; else -32601.
//! - [`modern`]: the 2026-07-28 envelope, server/discover, resultType.
//! - [`header_value`]: the `=?base64?…?=` header values of that era.
//! - [`reply`]: the JSON-RPC bodies.

pub(crate) mod header_value;
pub(crate) mod headers;
pub(crate) mod message;
pub(crate) mod methods;
pub(crate) mod modern;
pub(crate) mod reply;

#[cfg(test)]
mod tests;

use crate::tools::{ToolBox, ToolContext};
use message::Message;

/// A request that passed the gate.
pub(crate) struct RpcRequest<'a> {
    /// Header names as sent, values with surrounding spaces and tabs dropped.
    /// Names are matched ignoring ASCII case.
    pub(crate) headers: &'a [(&'a str, &'a str)],
    /// The whole body.
    pub(crate) body: &'a [u8],
}

/// The answer for the listener to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RpcResponse {
    /// The HTTP status: 200, 202, 400, 404 (2026-07-28 era), 406 or 415.
    pub(crate) status: u16,
    /// `application/json` when there is a body; None for the empty 202.
    pub(crate) content_type: Option<&'static str>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

/// Answers one request. Tool calls run to completion here (checking
/// `ctx.cancel`); the listener owns deadlines and drops this future to
/// abandon a request.
pub(crate) async fn handle(req: RpcRequest<'_>, tools: &ToolBox, ctx: &ToolContext) -> RpcResponse {
    // Most bodies are one handshake-era request, read without a `Value` of
    // the whole body; the rest, and every refusal of a body, below.
    if let Some(plain) = message::plain_request(req.body) {
        let (id, method, params) = (&plain.id, plain.method, &plain.params);
        if let Err(refused) = headers::check_media(req.headers, Some(id)) {
            return refused;
        }
        if modern::is_modern_request(req.headers, Some(params)) {
            return modern::request(req.headers, id, method, params, req.body, tools, ctx).await;
        }
        if let Err(refused) = headers::check_version(req.headers, Some(id)) {
            return refused;
        }
        return request(&req, id, method, params, tools, ctx).await;
    }
    // Decoded first so that a refusal on the headers can carry the id.
    let value = message::decode(req.body);
    let id = value.as_ref().ok().and_then(message::request_id);
    if let Err(refused) = headers::check_media(req.headers, id) {
        return refused;
    }
    if modern::is_modern(req.headers, value.as_ref().ok()) {
        return match value {
            Ok(value) => modern::handle(req.headers, value, req.body, tools, ctx).await,
            Err(refused) => refused,
        };
    }
    if let Err(refused) = headers::check_version(req.headers, id) {
        return refused;
    }
    let value = match value {
        Ok(value) => value,
        Err(refused) => return refused,
    };
    match message::classify(value) {
        Err(refused) => refused,
        Ok(Message::Notification { .. }) | Ok(Message::Response) => reply::accepted(),
        Ok(Message::Request { id, method, params }) => {
            request(&req, &id, &method, &params, tools, ctx).await
        }
    }
}

/// Answers a handshake-era request whose headers passed.
async fn request(
    req: &RpcRequest<'_>,
    id: &serde_json::Value,
    method: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    tools: &ToolBox,
    ctx: &ToolContext,
) -> RpcResponse {
    let numbers = if method == "tools/call" {
        message::sent_numbers(req.body, params)
    } else {
        Default::default()
    };
    methods::dispatch(id, method, params, &numbers, tools, ctx).await
}
