//! What the session actors write to Rete's own log: connects, registration
//! steps, the SASL outcome, reconnect delays and WHO queue timeouts. The
//! control surface's log ring (read_log) and the host's diagnostics read
//! these.
//!
//! Each line goes to an explicit target naming its category (the control
//! surface files `rete::<category>` under that category): `rete::network`
//! or `rete::auth`. The lines are small and carry no secret: a host and
//! port, a peer address, a step's name, a mechanism's name, an account, the
//! server's reason for a failure, a delay — never a password, a payload or a
//! line sent.

use rete_engine::ids::SessionId;
use rete_engine::view::{Progress, SessionView};
use rete_transports::Transport;
use std::time::Duration;

const NETWORK: &str = "rete::network";
const AUTH: &str = "rete::auth";

/// An attempt to connect begins.
pub(crate) fn connecting(id: &SessionId, transport: &Transport, reconnect: bool) {
    match transport {
        Transport::Irc(connect) => tracing::info!(
            target: NETWORK,
            session = %id,
            tls = connect.tls,
            reconnect,
            "connecting to {}:{}",
            connect.host,
            connect.port
        ),
        Transport::ReteCloud(cloud) => tracing::info!(
            target: NETWORK,
            session = %id,
            reconnect,
            network = %cloud.network,
            "connecting to the ReteCloud service at {}",
            cloud.url
        ),
    }
}

/// Whether the session's wire is encrypted, for the connected line.
pub(crate) fn uses_tls(transport: &Transport) -> bool {
    match transport {
        Transport::Irc(connect) => connect.tls,
        Transport::ReteCloud(cloud) => cloud.url.starts_with("wss://"),
    }
}

/// The socket (and TLS) is up; registration starts.
pub(crate) fn connected(id: &SessionId, peer: &str, tls: bool) {
    tracing::info!(target: NETWORK, session = %id, tls, "connected to {peer}");
}

/// The connection ended and the session tries again after `delay`.
pub(crate) fn reconnecting(id: &SessionId, reason: &str, delay: Duration) {
    tracing::warn!(
        target: NETWORK,
        session = %id,
        delay_ms = delay.as_millis() as u64,
        "connection lost ({reason}); reconnecting in {} ms",
        delay.as_millis()
    );
}

/// The connection ended and the session stays down: closed on purpose, or
/// refused in a way retrying cannot fix.
pub(crate) fn stays_down(id: &SessionId, reason: &str, refused: Option<&str>) {
    match refused {
        Some(why) => tracing::error!(
            target: NETWORK,
            session = %id,
            "connection refused for good ({why}); not reconnecting until /connect"
        ),
        None => tracing::info!(target: NETWORK, session = %id, "disconnected ({reason})"),
    }
}

/// Logs what changed between two progress snapshots of one session.
pub(crate) fn progress(id: &SessionId, old: &Progress, new: &Progress, view: &SessionView<'_>) {
    if new.step != old.step && new.step != "idle" {
        if new.step == "registered" {
            tracing::info!(target: NETWORK, session = %id, "registered as {}", view.nick());
        } else {
            tracing::info!(target: NETWORK, session = %id, step = new.step, "registration step {}", new.step);
        }
    }
    if new.sasl != old.sasl {
        let mechanism = view.sasl_mechanism().unwrap_or("?");
        match new.sasl {
            "in_progress" => {
                tracing::info!(target: AUTH, session = %id, "SASL {mechanism} started")
            }
            "succeeded" => tracing::info!(
                target: AUTH,
                session = %id,
                rete_level = "notice",
                account = view.account().unwrap_or(""),
                "SASL {mechanism} succeeded"
            ),
            "failed" => tracing::warn!(
                target: AUTH,
                session = %id,
                "SASL {mechanism} failed: {}",
                view.sasl_failure().unwrap_or("")
            ),
            _ => {}
        }
    }
    if new.who_timeouts > old.who_timeouts {
        tracing::warn!(
            target: NETWORK,
            session = %id,
            timeouts = new.who_timeouts,
            "a WHO query got no end of WHO in time; the queue moved on"
        );
    }
}
