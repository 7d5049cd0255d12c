//! What the engine paces: its own WHO queue and the outgoing-line throttle.

use super::{iso, plural, wall_of};
use crate::session::Session;
use serde::Serialize;

/// `whox`: the engine's own channel WHOs, one on the wire at a time. Its
/// count is the WHOs not yet answered: the one in flight and those queued.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Whox<'a> {
    /// The channel whose WHO is on the wire.
    silent_who_in_flight: Option<&'a str>,
    /// When it times out and the next one goes.
    silent_who_deadline: Option<String>,
    /// The channels waiting, in sending order.
    silent_who_queued: Vec<&'a str>,
    /// Whether the server offers WHOX (else plain WHO is sent).
    whox_supported: bool,
    /// The token our WHOX queries carry.
    whox_token: &'a str,
    poll_interval_ms: u64,
    /// When the periodic WHO poll of joined channels is next due.
    next_poll: Option<String>,
}

pub(super) fn whox(s: &Session) -> Whox<'_> {
    let w = &s.who;
    Whox {
        silent_who_in_flight: in_flight_name(s),
        silent_who_deadline: w.in_flight_deadline().map(|d| iso(wall_of(s, d))),
        silent_who_queued: w.queued_targets().collect(),
        whox_supported: s.isupport.whox,
        whox_token: w.whox_token(),
        poll_interval_ms: w.poll_interval_ms(),
        next_poll: w.next_poll().map(|d| iso(wall_of(s, d))),
    }
}

pub(super) fn whox_headline(s: &Session) -> (u64, String) {
    let w = &s.who;
    let queued = w.queued_targets().len();
    let line = match (in_flight_name(s), w.in_flight_deadline()) {
        (Some(name), Some(deadline)) => format!(
            "WHO {name} in flight (times out {}), {queued} queued",
            iso(wall_of(s, deadline))
        ),
        _ => format!("no WHO in flight, {queued} queued"),
    };
    let unanswered = queued + usize::from(w.in_flight().is_some());
    (unanswered as u64, line)
}

/// The in-flight channel as the server spells it. The queue keeps only the
/// case-folded key of a WHO on the wire; the channel's own entry has the
/// name (a channel parted meanwhile shows by its key).
fn in_flight_name(s: &Session) -> Option<&str> {
    let key = s.who.in_flight()?;
    Some(s.channels.get(key).map_or(key, |c| c.name.as_str()))
}

/// `flood`: the token bucket every outgoing line passes. Its count is the
/// lines waiting. The lines themselves are never shown: they may hold
/// secrets (PASS, AUTHENTICATE, OPER).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Flood {
    burst: u32,
    interval_ms: u64,
    tokens: u32,
    queued: usize,
    queued_urgent: usize,
}

pub(super) fn flood(s: &Session) -> Flood {
    let o = &s.outbox;
    let cfg = o.config();
    Flood {
        burst: cfg.burst.max(1),
        interval_ms: cfg.interval_ms,
        tokens: o.tokens_at(s.now.mono),
        queued: o.queued(),
        queued_urgent: o.queued_urgent(),
    }
}

pub(super) fn flood_headline(s: &Session) -> (u64, String) {
    let o = &s.outbox;
    let queued = o.queued();
    let line = format!(
        "{} queued, {} of {} tokens",
        plural(queued, "line", "lines"),
        o.tokens_at(s.now.mono),
        o.config().burst.max(1)
    );
    (queued as u64, line)
}
