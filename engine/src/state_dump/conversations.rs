//! Where conversations live: channels, queries and buffers.

use super::{iso, plural, some_names};
use crate::buffer::{Buffer, BufferKind};
use crate::session::Session;
use serde::Serialize;

/// `channels`. Its count is the channels we are in now.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Channels<'a> {
    joined: usize,
    /// Every channel the session holds state for, by case-folded name.
    channels: Vec<Channel<'a>>,
    /// Users sharing a channel with us, whose details are kept once.
    known_users: usize,
    /// Channels to be in (joined again after a reconnect). A key is never
    /// shown, only whether one is given.
    wanted: Vec<Wanted<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Channel<'a> {
    name: &'a str,
    joined: bool,
    topic: Option<&'a str>,
    topic_set_by: Option<&'a str>,
    topic_set_at: Option<String>,
    member_count: usize,
    members: Vec<Member<'a>>,
    /// True while a NAMES reply is being collected.
    names_pending: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Member<'a> {
    nick: &'a str,
    modes: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wanted<'a> {
    name: &'a str,
    has_key: bool,
}

pub(super) fn channels(s: &Session) -> Channels<'_> {
    let channels = s
        .channels
        .values()
        .map(|c| Channel {
            name: &c.name,
            joined: c.joined,
            topic: c.topic.as_deref(),
            topic_set_by: c.topic_set_by.as_deref(),
            topic_set_at: c.topic_set_at.map(iso),
            member_count: c.members.len(),
            members: c
                .members
                .values()
                .map(|m| Member {
                    nick: &m.nick,
                    modes: &m.modes,
                })
                .collect(),
            names_pending: c.names_pending.is_some(),
        })
        .collect();
    Channels {
        joined: joined_count(s),
        channels,
        known_users: s.users.len(),
        wanted: s
            .wanted_channels
            .values()
            .map(|w| Wanted {
                name: &w.name,
                has_key: w.key.is_some(),
            })
            .collect(),
    }
}

pub(super) fn channels_headline(s: &Session) -> (u64, String) {
    let joined = joined_count(s);
    let names = s
        .channels
        .values()
        .filter(|c| c.joined)
        .map(|c| c.name.as_str());
    let mut line = plural(joined, "channel joined", "channels joined");
    if joined > 0 {
        line.push_str(&format!(": {}", some_names(names, 4)));
    }
    let left = s.channels.len() - joined;
    if left > 0 {
        line.push_str(&format!("; {left} left"));
    }
    (joined as u64, line)
}

fn joined_count(s: &Session) -> usize {
    s.channels.values().filter(|c| c.joined).count()
}

/// `queries`. Its count is the query buffers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Queries<'a> {
    /// How many query buffers private messages from others may open.
    max_query_buffers: usize,
    /// True once this connection said the cap was reached.
    cap_reported: bool,
    queries: Vec<BufferEntry<'a>>,
}

pub(super) fn queries(s: &Session) -> Queries<'_> {
    Queries {
        max_query_buffers: s.config.max_query_buffers,
        cap_reported: s.query_cap_reported,
        queries: s
            .buffers
            .listing()
            .filter(|b| b.kind() == BufferKind::Query)
            .map(buffer_entry)
            .collect(),
    }
}

pub(super) fn queries_headline(s: &Session) -> (u64, String) {
    let n = s.buffers.query_count();
    let names = s
        .buffers
        .listing()
        .filter(|b| b.kind() == BufferKind::Query)
        .map(Buffer::name);
    let mut line = format!("{n} of at most {}", s.config.max_query_buffers);
    if n > 0 {
        line.push_str(&format!(": {}", some_names(names, 4)));
    }
    (n as u64, line)
}

/// `buffers`. Its count is the buffers, the server buffer included.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Buffers<'a> {
    rows: usize,
    buffers: Vec<BufferEntry<'a>>,
}

/// One buffer's identity and sequence numbers; never its rows.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BufferEntry<'a> {
    id: &'a str,
    name: &'a str,
    kind: &'static str,
    rows: usize,
    capacity: usize,
    last_seq: u64,
    evicted_through: u64,
}

fn buffer_entry(b: &Buffer) -> BufferEntry<'_> {
    BufferEntry {
        id: b.id().as_str(),
        name: b.name(),
        kind: b.kind().as_str(),
        rows: b.len(),
        capacity: b.capacity(),
        last_seq: b.last_seq(),
        evicted_through: b.evicted_through(),
    }
}

pub(super) fn buffers(s: &Session) -> Buffers<'_> {
    Buffers {
        rows: row_count(s),
        buffers: s.buffers.listing().map(buffer_entry).collect(),
    }
}

pub(super) fn buffers_headline(s: &Session) -> (u64, String) {
    let n = s.buffers.len();
    let line = format!(
        "{} holding {}",
        plural(n, "buffer", "buffers"),
        plural(row_count(s), "row", "rows")
    );
    (n as u64, line)
}

fn row_count(s: &Session) -> usize {
    s.buffers.listing().map(Buffer::len).sum()
}
