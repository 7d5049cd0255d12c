//! The read-only interface to a session.
//!
//! A [`SessionView`] holds a shared borrow of a session and offers getters
//! only. It cannot send a line or change state: every method takes `&self`
//! and returns shared references or owned copies. The control surface's read
//! tools reach the engine through this type alone.

use crate::buffer::{Buffer, BufferKind};
use crate::cap::Capabilities;
use crate::event::ConnState;
use crate::ids::{BufferId, SessionId};
use crate::isupport::Isupport;
use crate::members::Channel;
use crate::session::Session;
use serde::Serialize;

/// A read-only window onto one session.
#[derive(Clone, Copy)]
pub struct SessionView<'a> {
    s: &'a Session,
}

/// A channel member with what is known of the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberView {
    /// The nick.
    pub nick: String,
    /// Channel mode letters, highest rank first ("ov").
    pub modes: String,
    /// The services account, when known.
    pub account: Option<String>,
    /// True while away.
    pub away: bool,
    /// The user (ident), when known.
    pub user: Option<String>,
    /// The host, when known.
    pub host: Option<String>,
}

impl<'a> SessionView<'a> {
    pub(crate) fn new(s: &'a Session) -> SessionView<'a> {
        SessionView { s }
    }

    /// The session id (its configuration id).
    pub fn id(&self) -> &'a SessionId {
        &self.s.config.id
    }

    /// The user's name for the network.
    pub fn name(&self) -> &'a str {
        &self.s.config.name
    }

    /// The network's own name (ISUPPORT NETWORK), "" before it is known.
    pub fn network(&self) -> &'a str {
        self.s.isupport.network.as_deref().unwrap_or("")
    }

    /// The connection state.
    pub fn state(&self) -> ConnState {
        self.s.connection.state
    }

    /// Our current nick.
    pub fn nick(&self) -> &'a str {
        &self.s.connection.nick
    }

    /// Why the server refused the last connection for good, if it did (a
    /// wrong password, SASL refused where it is required, no nick accepted).
    /// A host does not reconnect after such a refusal; see `session/refusal.rs`.
    pub fn registration_refused(&self) -> Option<&'a str> {
        self.s.connection.registration_refused.as_deref()
    }

    /// The server's lag in milliseconds as of the latest input: the last
    /// probe's round trip, or how long an unanswered one has been out.
    pub fn lag_ms(&self) -> Option<u64> {
        self.s.lag.current_ms(self.s.now.mono)
    }

    /// While reconnecting, the host's wait before its next attempt.
    pub fn retry_in(&self) -> Option<std::time::Duration> {
        self.s.connection.retry_in
    }

    /// Why the last connection ended, when it did.
    pub fn last_error(&self) -> Option<&'a str> {
        self.s.connection.last_error.as_deref()
    }

    /// Our user modes on the server (`iw`), without `+`; "" before any.
    pub fn user_modes(&self) -> &'a str {
        &self.s.connection.user_modes
    }

    /// The buffers in listing order: server, channels, queries.
    pub fn buffers(&self) -> impl Iterator<Item = &'a Buffer> + 'a {
        self.s.buffers.listing()
    }

    /// The buffer with this id.
    pub fn buffer(&self, id: &BufferId) -> Option<&'a Buffer> {
        self.s.buffers.get(id)
    }

    /// The server buffer's id.
    pub fn server_buffer(&self) -> &'a BufferId {
        self.s.buffers.server_id()
    }

    /// The id of the channel or query buffer with this name.
    pub fn find_buffer(&self, kind: BufferKind, name: &str) -> Option<&'a BufferId> {
        self.s
            .buffers
            .find(kind, &self.s.isupport.casemapping.fold(name))
    }

    /// The channel state behind a channel buffer.
    pub fn channel(&self, id: &BufferId) -> Option<&'a Channel> {
        let b = self.s.buffers.get(id)?;
        if b.kind() != BufferKind::Channel {
            return None;
        }
        self.s
            .channels
            .get(&self.s.isupport.casemapping.fold(b.name()))
    }

    /// A channel's members, sorted by case-folded nick, with user details.
    /// None when the buffer is not a channel.
    pub fn members(&self, id: &BufferId) -> Option<Vec<MemberView>> {
        let channel = self.channel(id)?;
        Some(
            channel
                .members
                .iter()
                .map(|(folded, m)| {
                    let u = self.s.users.get(folded);
                    MemberView {
                        nick: m.nick.clone(),
                        modes: m.modes.clone(),
                        account: u.and_then(|u| u.account.clone()),
                        away: u.is_some_and(|u| u.away),
                        user: u.and_then(|u| u.user.clone()),
                        host: u.and_then(|u| u.host.clone()),
                    }
                })
                .collect(),
        )
    }

    /// What the server advertised in ISUPPORT.
    pub fn isupport(&self) -> &'a Isupport {
        &self.s.isupport
    }

    /// Capability negotiation state.
    pub fn capabilities(&self) -> &'a Capabilities {
        &self.s.caps
    }

    /// The session's secrets as an opaque scanner, for the way-out scan of
    /// everything the control surface returns. It answers whether a text
    /// holds a secret; it never gives a value back.
    pub fn secrets(&self) -> &'a rete_redact::SecretSet {
        &self.s.secrets
    }

    /// Where registration and SASL stand on this connection, and how many
    /// of the WHO queue's queries timed out: what a host writes to its log
    /// as it changes (compare two, log the difference).
    pub fn progress(&self) -> Progress {
        use crate::session::registration_names as names;
        Progress {
            step: names::step(self.s.registration.step),
            sasl: names::sasl(&self.s.sasl.outcome),
            who_timeouts: self.s.who.timed_out(),
        }
    }

    /// Why SASL failed on this connection (the server's text, or ours when
    /// the exchange could not go on), when it did.
    pub fn sasl_failure(&self) -> Option<&'a str> {
        crate::session::registration_names::failure(&self.s.sasl.outcome)
    }

    /// The configured SASL mechanism's name, when SASL is configured.
    pub fn sasl_mechanism(&self) -> Option<&'static str> {
        self.s.config.sasl.as_ref().map(|s| s.mechanism.name())
    }

    /// The account the server says we are logged in as (900), when known.
    pub fn account(&self) -> Option<&'a str> {
        self.s.sasl.account.as_deref()
    }

    /// The index of the engine's state sections: every section the engine
    /// fills, with its headline count and one-line summary. Serializes
    /// nothing, so it costs the same however much the session holds.
    pub fn state_index(&self) -> Vec<crate::state_dump::IndexEntry> {
        crate::state_dump::index(self.s)
    }

    /// The sections in `wanted`, all read at this one instant; `at` is the
    /// host's wall clock now (the engine reads no clock). Secrets are never
    /// part of a section.
    pub fn state_sections(
        &self,
        wanted: &[crate::state_dump::Section],
        at: crate::clock::UnixMillis,
    ) -> crate::state_dump::Snapshot {
        crate::state_dump::snapshot(self.s, wanted, at)
    }

    /// The whole engine state as JSON sections (no secrets: they are never serialized).
    pub fn state_json(&self) -> serde_json::Value {
        serde_json::to_value(self.s).unwrap_or(serde_json::Value::Null)
    }
}

/// A session's progress as [`SessionView::progress`] reports it; cheap to
/// take and compare after every input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The registration step: idle, cap_ls, cap_req, sasl, await_welcome or
    /// registered.
    pub step: &'static str,
    /// The SASL outcome: not_tried, in_progress, succeeded or failed.
    pub sasl: &'static str,
    /// WHO queries of ours given up at their deadline, since the session
    /// started.
    pub who_timeouts: u64,
}
