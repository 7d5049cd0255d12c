//! The link to the server: connection, registration, sasl and reconnect.

use super::plural;
use crate::session::{RegStep, SaslOutcome, Session};
use serde::Serialize;

/// `connection`. Its count is the lines dropped as unparsable.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Connection<'a> {
    state: &'static str,
    nick: &'a str,
    /// The nick `/nick` last got confirmed, tried first on the next connection.
    preferred_nick: Option<&'a str>,
    /// The nick `/nick` asked for, until the server answers.
    requested_nick: Option<&'a str>,
    server_name: Option<&'a str>,
    user_modes: &'a str,
    last_error: Option<&'a str>,
    unparsable_lines: u64,
    /// The lag as of the latest input (the lag probe is the engine's one
    /// hidden PING; its PONG never becomes a row).
    lag_ms: Option<u64>,
    /// True once QUIT is queued: what is still queued goes out unpaced.
    closing: bool,
}

pub(super) fn connection(s: &Session) -> Connection<'_> {
    let c = &s.connection;
    Connection {
        state: c.state.as_str(),
        nick: &c.nick,
        preferred_nick: s.preferred_nick.as_deref(),
        requested_nick: s.requested_nick.as_deref(),
        server_name: c.server_name.as_deref(),
        user_modes: &c.user_modes,
        last_error: c.last_error.as_deref(),
        unparsable_lines: c.unparsable_lines,
        lag_ms: s.lag.current_ms(s.now.mono),
        closing: s.closing,
    }
}

pub(super) fn connection_headline(s: &Session) -> (u64, String) {
    let c = &s.connection;
    let mut line = format!("{} as {}", c.state.as_str(), c.nick);
    if let Some(server) = &c.server_name {
        line.push_str(&format!(" to {server}"));
    }
    if let Some(lag) = s.lag.current_ms(s.now.mono) {
        line.push_str(&format!(", lag {lag} ms"));
    }
    line.push_str(&format!(
        ", {} unparsable",
        plural(saturating(c.unparsable_lines), "line", "lines")
    ));
    (c.unparsable_lines, line)
}

/// `registration`. Its count is the nicks tried on this connection.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Registration<'a> {
    step: RegStep,
    nick_attempts: u32,
    tried_nicks: &'a [String],
    learned_nicklen: Option<usize>,
    nick_exhausted: bool,
    sasl_refused: bool,
    cap_end_sent: bool,
}

pub(super) fn registration(s: &Session) -> Registration<'_> {
    let r = &s.registration;
    Registration {
        step: r.step,
        nick_attempts: r.nick_attempts,
        tried_nicks: &r.tried_nicks,
        learned_nicklen: r.learned_nicklen,
        nick_exhausted: r.nick_exhausted,
        sasl_refused: r.sasl_refused,
        cap_end_sent: r.cap_end_sent,
    }
}

pub(super) fn registration_headline(s: &Session) -> (u64, String) {
    let r = &s.registration;
    let tried = r.tried_nicks.len();
    let mut line = format!(
        "{}, {} tried",
        step_name(r.step),
        plural(tried, "nick", "nicks")
    );
    if r.nick_exhausted {
        line.push_str(", every fallback refused");
    }
    (tried as u64, line)
}

fn step_name(step: RegStep) -> &'static str {
    match step {
        RegStep::Idle => "idle",
        RegStep::CapLs => "waiting for CAP LS",
        RegStep::CapReq => "waiting for CAP ACK",
        RegStep::Sasl => "authenticating",
        RegStep::AwaitWelcome => "waiting for 001",
        RegStep::Registered => "registered",
    }
}

/// `sasl`. Its count is 1 while logged in, else 0. The password is never
/// part of it: only whether SASL is configured, the mechanism and the
/// account name to authenticate as.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Sasl<'a> {
    configured: bool,
    mechanism: Option<&'static str>,
    authcid: Option<&'a str>,
    authzid: Option<&'a str>,
    outcome: &'static str,
    failure: Option<&'a str>,
    account: Option<&'a str>,
    /// The mechanisms the server offers (the sasl capability's value), when
    /// it offers the capability on this connection.
    offered: Option<&'a str>,
}

pub(super) fn sasl(s: &Session) -> Sasl<'_> {
    let settings = s.config.sasl.as_ref();
    Sasl {
        configured: settings.is_some(),
        mechanism: settings.map(|x| x.mechanism.name()),
        authcid: settings.map(|x| x.credentials.authcid.as_str()),
        authzid: settings.and_then(|x| x.credentials.authzid.as_deref()),
        outcome: outcome_name(&s.sasl.outcome),
        failure: match &s.sasl.outcome {
            SaslOutcome::Failed(why) => Some(why),
            _ => None,
        },
        account: s.sasl.account.as_deref(),
        offered: s.caps.value("sasl"),
    }
}

pub(super) fn sasl_headline(s: &Session) -> (u64, String) {
    let logged_in = u64::from(s.sasl.outcome == SaslOutcome::Succeeded);
    let Some(settings) = &s.config.sasl else {
        return (logged_in, "not configured".to_owned());
    };
    let mut line = format!(
        "{}: {}",
        settings.mechanism.name(),
        outcome_name(&s.sasl.outcome)
    );
    match (&s.sasl.outcome, &s.sasl.account) {
        (SaslOutcome::Failed(why), _) => line.push_str(&format!(" ({why})")),
        (_, Some(account)) => line.push_str(&format!(" as {account}")),
        _ => {}
    }
    (logged_in, line)
}

fn outcome_name(outcome: &SaslOutcome) -> &'static str {
    match outcome {
        SaslOutcome::NotTried => "not_tried",
        SaslOutcome::InProgress => "in_progress",
        SaslOutcome::Succeeded => "succeeded",
        SaslOutcome::Failed(_) => "failed",
    }
}

/// `reconnect`. Its count is the host's wait before its next attempt, in
/// milliseconds (0 when none is scheduled). The engine keeps no timer of its
/// own here: the host reports its backoff, and the engine records a refusal
/// after which the host does not reconnect.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Reconnect<'a> {
    state: &'static str,
    retry_in_ms: Option<u64>,
    registration_refused: Option<&'a str>,
    last_error: Option<&'a str>,
}

pub(super) fn reconnect(s: &Session) -> Reconnect<'_> {
    let c = &s.connection;
    Reconnect {
        state: c.state.as_str(),
        retry_in_ms: c.retry_in.map(millis),
        registration_refused: c.registration_refused.as_deref(),
        last_error: c.last_error.as_deref(),
    }
}

pub(super) fn reconnect_headline(s: &Session) -> (u64, String) {
    let c = &s.connection;
    let wait = c.retry_in.map(millis);
    let line = match (&c.registration_refused, wait) {
        (Some(why), _) => format!("not reconnecting: {why}"),
        (None, Some(ms)) => format!("retrying in {} s", ms.div_ceil(1000)),
        (None, None) => "no retry scheduled".to_owned(),
    };
    (wait.unwrap_or(0), line)
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn saturating(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
