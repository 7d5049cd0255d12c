//! `config`: what the session was told to do, its secrets left out.

use super::plural;
use crate::session::Session;
use serde::Serialize;

/// The configuration. Its count is the channels configured. The server
/// password, the SASL password and channel keys are never part of it: only
/// whether each is set.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Config<'a> {
    id: &'a str,
    name: &'a str,
    nick: &'a str,
    username: &'a str,
    realname: &'a str,
    has_password: bool,
    sasl_mechanism: Option<&'static str>,
    channels: Vec<Channel<'a>>,
    buffer_capacity: usize,
    max_query_buffers: usize,
    flood_burst: u32,
    flood_interval_ms: u64,
    who_poll_interval_ms: u64,
    chathistory_limit: u32,
    version_reply: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Channel<'a> {
    name: &'a str,
    has_key: bool,
}

pub(super) fn config(s: &Session) -> Config<'_> {
    let c = &s.config;
    Config {
        id: c.id.as_str(),
        name: &c.name,
        nick: &c.nick,
        username: &c.username,
        realname: &c.realname,
        has_password: c.password.is_some(),
        sasl_mechanism: c.sasl.as_ref().map(|x| x.mechanism.name()),
        channels: c
            .channels
            .iter()
            .map(|ch| Channel {
                name: &ch.name,
                has_key: ch.key.is_some(),
            })
            .collect(),
        buffer_capacity: c.buffer_capacity,
        max_query_buffers: c.max_query_buffers,
        flood_burst: c.flood.burst,
        flood_interval_ms: c.flood.interval_ms,
        who_poll_interval_ms: c.who_poll_interval_ms,
        chathistory_limit: c.chathistory_limit,
        version_reply: &c.version_reply,
    }
}

pub(super) fn headline(s: &Session) -> (u64, String) {
    let c = &s.config;
    let n = c.channels.len();
    let line = format!(
        "{} as {}, {} configured",
        c.name,
        c.nick,
        plural(n, "channel", "channels")
    );
    (n as u64, line)
}
