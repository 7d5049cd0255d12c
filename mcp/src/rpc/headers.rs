//! The Streamable HTTP rules a POST must meet behind the gate: Accept,
//! Content-Type and (in the handshake era) MCP-Protocol-Version. Checked in
//! that order, before the body is classified, so a refusal never depends on
//! the body — except for its id, which the refusal carries when the body is a
//! JSON-RPC request.
//!
//! Decisions:
//! - Accept: the entries of every Accept header, split at commas; one must
//!   start with `application/json`, ignoring ASCII case. Wildcards (`*/*`,
//!   `application/*`) do not count: the contract refuses curl's default.
//! - Content-Type: exactly one header, whose media type (before any `;`
//!   parameters, trimmed) is `application/json` ignoring ASCII case; so
//!   `application/json; charset=utf-8` passes. Media types are
//!   case-insensitive (RFC 9110 §8.3.1).
//! - MCP-Protocol-Version: absent is fine (initialize, and clients that
//!   never send it); present, it must be exactly one header naming one of
//!   [`SUPPORTED_VERSIONS`]. It is checked for every message of the
//!   handshake era, initialize included; a request naming 2026-07-28 (or
//!   carrying that era's `_meta` envelope) never gets here but is that era's
//!   (see [`super::modern`]), which checks the header against the body.

use crate::rpc::reply::{error_response, INVALID_REQUEST};
use crate::rpc::RpcResponse;
use serde_json::{json, Value};

/// The protocol versions served, oldest first.
pub(crate) const SUPPORTED_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The version answered to an initialize asking for one not served.
pub(crate) const LATEST_VERSION: &str = "2025-11-25";

/// Checks every header rule of the handshake era; the refusal to send when
/// one fails, carrying `id` (the request's, when the body is one).
#[cfg(test)]
pub(crate) fn check(headers: &[(&str, &str)], id: Option<&Value>) -> Result<(), RpcResponse> {
    check_media(headers, id)?;
    check_version(headers, id)
}

/// Accept (406) and Content-Type (415), the rules of both eras.
pub(crate) fn check_media(headers: &[(&str, &str)], id: Option<&Value>) -> Result<(), RpcResponse> {
    if !accepts_json(headers) {
        return Err(error_response(
            406,
            id,
            INVALID_REQUEST,
            "Not Acceptable: Client must accept application/json",
            None,
        ));
    }
    if !is_json_body(headers) {
        return Err(error_response(
            415,
            id,
            INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
            None,
        ));
    }
    Ok(())
}

/// The handshake era's MCP-Protocol-Version rule (400).
pub(crate) fn check_version(
    headers: &[(&str, &str)],
    id: Option<&Value>,
) -> Result<(), RpcResponse> {
    if !version_supported(headers) {
        return Err(error_response(
            400,
            id,
            INVALID_REQUEST,
            "Bad Request: Unsupported protocol version",
            Some(json!({ "supported": SUPPORTED_VERSIONS })),
        ));
    }
    Ok(())
}

pub(crate) fn values<'a>(
    headers: &'a [(&'a str, &'a str)],
    name: &'a str,
) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, v)| v)
}

fn accepts_json(headers: &[(&str, &str)]) -> bool {
    values(headers, "accept")
        .flat_map(|v| v.split(','))
        .any(|entry| starts_with_ignore_case(entry.trim(), "application/json"))
}

fn is_json_body(headers: &[(&str, &str)]) -> bool {
    let mut all = values(headers, "content-type");
    match (all.next(), all.next()) {
        (Some(v), None) => {
            let media = v.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/json")
        }
        _ => false,
    }
}

fn version_supported(headers: &[(&str, &str)]) -> bool {
    let mut all = values(headers, "mcp-protocol-version");
    match (all.next(), all.next()) {
        (None, _) => true,
        (Some(v), None) => SUPPORTED_VERSIONS.contains(&v),
        (Some(_), Some(_)) => false,
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        pairs.to_vec()
    }

    fn status(pairs: &[(&str, &str)]) -> u16 {
        match check(&h(pairs), None) {
            Ok(()) => 200,
            Err(r) => r.status,
        }
    }

    const CT: (&str, &str) = ("Content-Type", "application/json");
    const AC: (&str, &str) = ("Accept", "application/json, text/event-stream");

    #[test]
    fn accept_needs_an_application_json_entry() {
        assert_eq!(status(&[AC, CT]), 200);
        assert_eq!(
            status(&[("accept", "text/event-stream,application/json;q=0.9"), CT]),
            200
        );
        assert_eq!(status(&[("ACCEPT", "Application/JSON"), CT]), 200);
        assert_eq!(
            status(&[("Accept", "text/html"), ("Accept", "application/json"), CT]),
            200
        );
        assert_eq!(status(&[("Accept", "*/*"), CT]), 406);
        assert_eq!(status(&[("Accept", "application/*"), CT]), 406);
        assert_eq!(status(&[("Accept", "text/event-stream"), CT]), 406);
        assert_eq!(status(&[CT]), 406);
    }

    #[test]
    fn content_type_must_be_json_parameters_allowed() {
        assert_eq!(
            status(&[AC, ("content-type", "application/json; charset=utf-8")]),
            200
        );
        assert_eq!(status(&[AC, ("Content-Type", "APPLICATION/JSON")]), 200);
        assert_eq!(status(&[AC, ("Content-Type", "text/plain")]), 415);
        assert_eq!(status(&[AC, ("Content-Type", "application/jsonx")]), 415);
        assert_eq!(
            status(&[AC, ("Content-Type", "application/json, text/plain")]),
            415
        );
        assert_eq!(status(&[AC]), 415);
        assert_eq!(status(&[AC, CT, CT]), 415);
    }

    #[test]
    fn protocol_version_absent_or_supported() {
        for v in SUPPORTED_VERSIONS {
            assert_eq!(status(&[AC, CT, ("MCP-Protocol-Version", v)]), 200);
        }
        assert_eq!(
            status(&[AC, CT, ("mcp-protocol-version", "2026-07-28")]),
            400
        );
        assert_eq!(status(&[AC, CT, ("MCP-Protocol-Version", "")]), 400);
        assert_eq!(
            status(&[
                AC,
                CT,
                ("MCP-Protocol-Version", "2025-06-18"),
                ("MCP-Protocol-Version", "2025-06-18")
            ]),
            400
        );
    }

    #[test]
    fn checks_run_in_order_accept_type_version() {
        assert_eq!(
            status(&[("Accept", "*/*"), ("MCP-Protocol-Version", "x")]),
            406
        );
        assert_eq!(status(&[AC, ("MCP-Protocol-Version", "x")]), 415);
    }

    #[test]
    fn refusals_carry_a_json_rpc_error_body() {
        let r = check(&h(&[AC, CT, ("MCP-Protocol-Version", "1999-01-01")]), None).unwrap_err();
        assert_eq!(r.content_type, Some("application/json"));
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            r#"{"error":{"code":-32600,"data":{"supported":["2024-11-05","2025-03-26","2025-06-18","2025-11-25"]},"message":"Bad Request: Unsupported protocol version"},"jsonrpc":"2.0"}"#
        );
        let r = check(&h(&[("Accept", "*/*"), CT]), Some(&json!("q"))).unwrap_err();
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            r#"{"error":{"code":-32600,"message":"Not Acceptable: Client must accept application/json"},"id":"q","jsonrpc":"2.0"}"#
        );
    }
}
