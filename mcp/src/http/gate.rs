//! The access gate and the route, judged on a complete request head.
//!
//! The gate runs before the route, so an unauthenticated request gets the
//! same empty 403 for every path; which gate rule failed is only ever told
//! to the rate-limited debug log, through the refusal class.
//!
//! Order of the gate's rules (it matters only for the logged class, the
//! client always sees 403): Authorization, Host, Origin, OPTIONS. Then the
//! route: path before method, so `GET /other` is 404, not 405.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::head::{HeadError, Header, RequestHead};
use crate::grant::{Grants, Principal};

/// Every reason a connection is refused, one per log class of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// Authorization missing, repeated, or not `Bearer <token>`: 403.
    Token,
    /// Host missing, repeated, or not this server: 403.
    Host,
    /// Origin repeated or not this server: 403.
    Origin,
    /// An OPTIONS request (no CORS preflight is ever allowed): 403.
    Options,
    /// A path other than `/mcp`: 404.
    UnknownPath,
    /// A method other than POST: 405 with `Allow: POST`.
    Method,
    /// A head rule answered 400.
    BadRequest,
    /// A head rule answered 411.
    LengthRequired,
    /// A head rule answered 413.
    PayloadTooLarge,
    /// A head rule answered 431.
    HeadTooLarge,
    /// The head did not arrive within 2 s of accept: closed unanswered.
    HeadDeadline,
    /// The request did not arrive within 10 s of accept: closed unanswered.
    ReadDeadline,
    /// The handler did not answer in time: 504.
    HandlerDeadline,
    /// A handler still running 60 s past its deadline; its 504 was already
    /// sent, so nothing more is answered.
    HandlerOverran,
    /// Linux: the client socket belongs to another user: closed unanswered.
    PeerOtherUser,
    /// Linux: the client socket's owner could not be found: closed unanswered.
    PeerUnchecked,
}

impl Refusal {
    /// The status answered, or `None` when the connection is closed
    /// unanswered (deadlines, peer checks, an overrun whose 504 already went).
    pub(crate) fn status(self) -> Option<u16> {
        match self {
            Refusal::Token | Refusal::Host | Refusal::Origin | Refusal::Options => Some(403),
            Refusal::UnknownPath => Some(404),
            Refusal::Method => Some(405),
            Refusal::BadRequest => Some(400),
            Refusal::LengthRequired => Some(411),
            Refusal::PayloadTooLarge => Some(413),
            Refusal::HeadTooLarge => Some(431),
            Refusal::HandlerDeadline => Some(504),
            Refusal::HeadDeadline
            | Refusal::ReadDeadline
            | Refusal::HandlerOverran
            | Refusal::PeerOtherUser
            | Refusal::PeerUnchecked => None,
        }
    }

    /// The class name the contract lists, the only thing a log line may say
    /// about a refused request besides its status and count.
    pub(crate) fn class_name(self) -> &'static str {
        match self {
            Refusal::Token => "bad or missing token",
            Refusal::Host => "Host",
            Refusal::Origin => "Origin",
            Refusal::Options => "OPTIONS",
            Refusal::UnknownPath => "unknown path",
            Refusal::Method => "method",
            Refusal::BadRequest => "400",
            Refusal::LengthRequired => "411",
            Refusal::PayloadTooLarge => "413",
            Refusal::HeadTooLarge => "431",
            Refusal::HeadDeadline => "head deadline",
            Refusal::ReadDeadline => "read deadline",
            Refusal::HandlerDeadline => "handler deadline",
            Refusal::HandlerOverran => "handler overran",
            Refusal::PeerOtherUser => "peer is another user",
            Refusal::PeerUnchecked => "peer user could not be checked",
        }
    }
}

impl From<HeadError> for Refusal {
    fn from(err: HeadError) -> Self {
        match err {
            HeadError::BadRequest => Refusal::BadRequest,
            HeadError::LengthRequired => Refusal::LengthRequired,
            HeadError::PayloadTooLarge => Refusal::PayloadTooLarge,
            HeadError::HeaderTooLarge => Refusal::HeadTooLarge,
        }
    }
}

/// The gate: exactly one Authorization header whose value is exactly
/// "Bearer " + token (compared in constant time, length included); exactly
/// one Host header equal to `127.0.0.1:<port>` or `localhost:<port>`; no
/// Origin header or exactly one equal to `http://127.0.0.1:<port>` or
/// `http://localhost:<port>`; method not OPTIONS (case-sensitive, so
/// "options" passes here and gets 405 from [`route`]). Values were already
/// trimmed by the head reader, so an empty `token` can never match.
/// The listener prepares a [`Gate`] once instead; this form is for tests.
#[cfg(test)]
pub(crate) fn judge(head: &RequestHead, token: &str, port: u16) -> Result<Principal, Refusal> {
    Gate::new(token, port, Grants::default()).judge(head)
}

/// What the gate compares a head with, prepared once per listener so that a
/// request pays for one digest (its own), not two. It holds the digest of
/// "Bearer " + token, never the token, and has no `Debug`.
///
/// Beyond the contract, a value that is not the full token may be a scoped
/// grant's (issue 33): the grants are asked, and a live grant's token passes
/// as that grant. An ended or revoked grant's token is refused like any
/// other wrong token.
pub(crate) struct Gate {
    bearer: [u8; 32],
    has_token: bool,
    port: u16,
    grants: Grants,
}

impl Gate {
    /// The gate for `token` on `port`, and for the live grants of `grants`.
    pub(crate) fn new(token: &str, port: u16, grants: Grants) -> Gate {
        let bearer = Sha256::new()
            .chain_update(b"Bearer ")
            .chain_update(token.as_bytes())
            .finalize()
            .into();
        Gate {
            bearer,
            has_token: !token.is_empty(),
            port,
            grants,
        }
    }

    /// [`judge`], against this gate's token, grants and port: who the
    /// request is from.
    pub(crate) fn judge(&self, head: &RequestHead) -> Result<Principal, Refusal> {
        let principal = match head.header("authorization") {
            Header::One(offered) if self.bearer_matches(offered) => Principal::Full,
            Header::One(offered) => offered
                .strip_prefix("Bearer ")
                .filter(|t| !t.is_empty())
                .and_then(|t| self.grants.recognise(t, crate::grant::now_ms()))
                .map(Principal::Grant)
                .ok_or(Refusal::Token)?,
            _ => return Err(Refusal::Token),
        };
        // Compared without building the two names per request.
        let host_ok = |v: &str| {
            v.strip_prefix("127.0.0.1:")
                .or_else(|| v.strip_prefix("localhost:"))
                .is_some_and(|p| is_port(p, self.port))
        };
        match head.header("host") {
            Header::One(host) if host_ok(host) => {}
            _ => return Err(Refusal::Host),
        }
        match head.header("origin") {
            Header::Absent => {}
            Header::One(origin) if origin.strip_prefix("http://").is_some_and(host_ok) => {}
            _ => return Err(Refusal::Origin),
        }
        if head.method() == "OPTIONS" {
            return Err(Refusal::Options);
        }
        Ok(principal)
    }

    /// Compares SHA-256 digests so the time taken depends on neither where
    /// the first difference lies nor how long the offered value is.
    fn bearer_matches(&self, offered: &str) -> bool {
        let got = Sha256::digest(offered.as_bytes());
        self.has_token && bool::from(got.as_slice().ct_eq(&self.bearer))
    }
}

/// True when `text` is exactly `port` in decimal, as `format!` writes it
/// (no sign, no leading zero).
fn is_port(text: &str, port: u16) -> bool {
    let mut digits = [0u8; 5];
    let mut n = port;
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    text.as_bytes() == &digits[start..]
}

/// After the gate: path exactly "/mcp" (query ignored) else UnknownPath
/// (404); method POST else Method (405 with Allow: POST).
pub(crate) fn route(head: &RequestHead) -> Result<(), Refusal> {
    if head.path() != "/mcp" {
        return Err(Refusal::UnknownPath);
    }
    if head.method() != "POST" {
        return Err(Refusal::Method);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
