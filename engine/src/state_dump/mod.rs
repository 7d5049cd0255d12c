//! The session's state as named sections, for the control surface's
//! `engine_state` debug tool.
//!
//! Each section is the engine's own serialized encoding (JSON with camelCase
//! keys) of one part of a [`Session`], built from what the session holds at
//! one borrow, so every section of one [`Snapshot`] describes the same
//! instant. A section the engine fills also has a headline count and a
//! one-line summary for the index; [`index`] computes those straight from the
//! state, without serializing any section, so it stays cheap however many
//! members or buffers a session holds.
//!
//! Secrets are never serialized: the server password, the SASL password,
//! channel keys and queued outgoing lines are left out (a section says only
//! whether one is set). Everything else may still quote one — a topic can
//! repeat a channel key — so the control surface scans every section for the
//! session's secret values before it returns any.
//!
//! # Layout
//! - [`Section`]: the nineteen names, and which the engine fills.
//! - `link.rs`: connection, registration, sasl, reconnect.
//! - `protocol.rs`: capabilities, isupport, batches, chathistory.
//! - `conversations.rs`: channels, queries, buffers.
//! - `pacing.rs`: whox (the WHO queue) and flood (the throttle).
//! - `config.rs`: the session's configuration, less its secrets.
//!
//! Sections the engine does not fill (it keeps no such state):
//! `silentQueries` (the engine's only hidden queries are its channel WHOs,
//! shown under `whox`, and the lag probe, shown under `connection`),
//! `markread` (no read markers are kept), `silence` (no SILENCE list),
//! `whois` (WHOIS replies are shown, not kept) and `scripts` (the engine runs
//! no scripts).

mod config;
mod conversations;
mod link;
mod pacing;
mod protocol;

#[cfg(test)]
mod tests;

use crate::clock::UnixMillis;
use crate::session::Session;

/// One section name of the contract, in index order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// The connection: state, nick, server, lag, dropped lines.
    Connection,
    /// Registration progress on this connection.
    Registration,
    /// The SASL outcome and account.
    Sasl,
    /// CAP negotiation.
    Capabilities,
    /// What the server advertised in 005.
    Isupport,
    /// Channels, their topics and members.
    Channels,
    /// Query buffers.
    Queries,
    /// Every buffer: kind, rows held, sequence numbers.
    Buffers,
    /// Not filled (see the module docs).
    SilentQueries,
    /// The engine's WHO queue.
    Whox,
    /// Chat history support and what a join asks for.
    Chathistory,
    /// Open IRCv3 batches.
    Batches,
    /// The host's reconnect wait and a refusal that stops it.
    Reconnect,
    /// The outgoing-line throttle.
    Flood,
    /// The session's configuration, secrets left out.
    Config,
    /// Not filled (see the module docs).
    Markread,
    /// Not filled (see the module docs).
    Silence,
    /// Not filled (see the module docs).
    Whois,
    /// Not filled (see the module docs).
    Scripts,
}

impl Section {
    /// Every section, in the contract's order.
    pub const ALL: [Section; 19] = [
        Section::Connection,
        Section::Registration,
        Section::Sasl,
        Section::Capabilities,
        Section::Isupport,
        Section::Channels,
        Section::Queries,
        Section::Buffers,
        Section::SilentQueries,
        Section::Whox,
        Section::Chathistory,
        Section::Batches,
        Section::Reconnect,
        Section::Flood,
        Section::Config,
        Section::Markread,
        Section::Silence,
        Section::Whois,
        Section::Scripts,
    ];

    /// The section's name, as the contract spells it.
    pub fn name(self) -> &'static str {
        match self {
            Section::Connection => "connection",
            Section::Registration => "registration",
            Section::Sasl => "sasl",
            Section::Capabilities => "capabilities",
            Section::Isupport => "isupport",
            Section::Channels => "channels",
            Section::Queries => "queries",
            Section::Buffers => "buffers",
            Section::SilentQueries => "silentQueries",
            Section::Whox => "whox",
            Section::Chathistory => "chathistory",
            Section::Batches => "batches",
            Section::Reconnect => "reconnect",
            Section::Flood => "flood",
            Section::Config => "config",
            Section::Markread => "markread",
            Section::Silence => "silence",
            Section::Whois => "whois",
            Section::Scripts => "scripts",
        }
    }

    /// The section named exactly `name` (no case folding, no trimming).
    pub fn parse(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    /// True when the engine keeps state for this section.
    pub fn is_filled(self) -> bool {
        !matches!(
            self,
            Section::SilentQueries
                | Section::Markread
                | Section::Silence
                | Section::Whois
                | Section::Scripts
        )
    }
}

/// A section's line in the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The section.
    pub section: Section,
    /// Its headline number (what it counts is in each section's docs).
    pub count: u64,
    /// One line, at most [`MAX_SUMMARY_BYTES`] bytes.
    pub summary: String,
}

/// The longest summary, in UTF-8 bytes: an index of every section stays a
/// few kilobytes whatever IRC put in the names it quotes.
pub const MAX_SUMMARY_BYTES: usize = 160;

/// When a snapshot was taken: the protocol state (core) and the buffers
/// (store) are read under one borrow, so the two are always equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakenAt {
    /// When the protocol state was read.
    pub core: UnixMillis,
    /// When the buffer store was read.
    pub store: UnixMillis,
}

/// The requested sections at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// When it was taken.
    pub taken_at: TakenAt,
    /// The filled sections asked for, in the order asked, each once, as
    /// compact JSON text. Text rather than a `serde_json::Value`: encoding
    /// straight to text is several times cheaper than building a tree (a
    /// channel of thousands of members is an object each), and the snapshot
    /// is taken inside the session actor, between two of its inputs.
    pub sections: Vec<(Section, String)>,
    /// The sections asked for that the engine does not fill.
    pub unavailable: Vec<Section>,
}

/// The index: every section the engine fills, in the contract's order.
pub fn index(s: &Session) -> Vec<IndexEntry> {
    Section::ALL
        .into_iter()
        .filter_map(|section| {
            let (count, summary) = headline(s, section)?;
            Some(IndexEntry {
                section,
                count,
                summary: one_line(summary),
            })
        })
        .collect()
}

/// The sections in `wanted` as `s` holds them now; `at` is the host's clock
/// at this instant (the engine has none). Repeated names are taken once.
pub fn snapshot(s: &Session, wanted: &[Section], at: UnixMillis) -> Snapshot {
    let mut sections: Vec<(Section, String)> = Vec::with_capacity(wanted.len());
    let mut unavailable = Vec::new();
    for &section in wanted {
        if sections.iter().any(|(x, _)| *x == section) || unavailable.contains(&section) {
            continue;
        }
        match encode(s, section) {
            Some(value) => sections.push((section, value)),
            None => unavailable.push(section),
        }
    }
    Snapshot {
        taken_at: TakenAt {
            core: at,
            store: at,
        },
        sections,
        unavailable,
    }
}

/// A filled section's count and summary; None for the unfilled ones.
fn headline(s: &Session, section: Section) -> Option<(u64, String)> {
    Some(match section {
        Section::Connection => link::connection_headline(s),
        Section::Registration => link::registration_headline(s),
        Section::Sasl => link::sasl_headline(s),
        Section::Reconnect => link::reconnect_headline(s),
        Section::Capabilities => protocol::capabilities_headline(s),
        Section::Isupport => protocol::isupport_headline(s),
        Section::Batches => protocol::batches_headline(s),
        Section::Chathistory => protocol::chathistory_headline(s),
        Section::Channels => conversations::channels_headline(s),
        Section::Queries => conversations::queries_headline(s),
        Section::Buffers => conversations::buffers_headline(s),
        Section::Whox => pacing::whox_headline(s),
        Section::Flood => pacing::flood_headline(s),
        Section::Config => config::headline(s),
        Section::SilentQueries
        | Section::Markread
        | Section::Silence
        | Section::Whois
        | Section::Scripts => return None,
    })
}

/// A filled section's encoding; None for the unfilled ones.
fn encode(s: &Session, section: Section) -> Option<String> {
    let value = match section {
        Section::Connection => to_value(link::connection(s)),
        Section::Registration => to_value(link::registration(s)),
        Section::Sasl => to_value(link::sasl(s)),
        Section::Reconnect => to_value(link::reconnect(s)),
        Section::Capabilities => to_value(protocol::capabilities(s)),
        Section::Isupport => to_value(protocol::isupport(s)),
        Section::Batches => to_value(protocol::batches(s)),
        Section::Chathistory => to_value(protocol::chathistory(s)),
        Section::Channels => to_value(conversations::channels(s)),
        Section::Queries => to_value(conversations::queries(s)),
        Section::Buffers => to_value(conversations::buffers(s)),
        Section::Whox => to_value(pacing::whox(s)),
        Section::Flood => to_value(pacing::flood(s)),
        Section::Config => to_value(config::config(s)),
        Section::SilentQueries
        | Section::Markread
        | Section::Silence
        | Section::Whois
        | Section::Scripts => return None,
    };
    Some(value)
}

/// A section struct as compact JSON text. The structs hold only strings,
/// numbers, maps with string keys and lists, which always serialize; `null`
/// keeps this total.
fn to_value(section: impl serde::Serialize) -> String {
    serde_json::to_string(&section).unwrap_or_else(|_| "null".to_owned())
}

/// A summary as one line of at most [`MAX_SUMMARY_BYTES`] bytes: control
/// characters (a name from IRC may hold any) become spaces, and a longer
/// text is cut on a character boundary and ends with `…`.
fn one_line(text: String) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() > MAX_SUMMARY_BYTES {
        let mut end = MAX_SUMMARY_BYTES - '…'.len_utf8();
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    line
}

/// A time as the sections write it: ISO-8601 to the whole second, UTC.
fn iso(t: UnixMillis) -> String {
    crate::timefmt::iso_seconds(t)
}

/// The wall-clock time of a monotonic instant, read against the session's
/// latest input (which carries both clocks).
fn wall_of(s: &Session, at: crate::clock::Mono) -> UnixMillis {
    let now = s.now;
    let ahead = i64::try_from(at.ms_since(now.mono)).unwrap_or(i64::MAX);
    let behind = i64::try_from(now.mono.ms_since(at)).unwrap_or(i64::MAX);
    UnixMillis(now.wall.0.saturating_add(ahead).saturating_sub(behind))
}

/// "1 channel" / "2 channels".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Up to `most` names joined with ", ", then "…" when more were left out.
fn some_names<'a>(names: impl Iterator<Item = &'a str>, most: usize) -> String {
    let mut out = String::new();
    for (i, name) in names.enumerate() {
        if i == most {
            out.push_str(", …");
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}
