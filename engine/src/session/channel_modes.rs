//! RPL_CHANNELMODEIS (324) and RPL_CREATIONTIME (329): a channel's own modes
//! and when it was created, asked with `MODE #channel` after our JOIN (one
//! channel at a time, only while nothing else waits in the outbox and the
//! flood bucket is full, so the queries use spare capacity alone and never
//! hold back a person's lines) and kept on the channel, so a view (and the ReteCloud
//! service's sync lines) can say them.
//!
//! The answer to that automatic query makes no row: nobody asked to see
//! it, and a keyed channel's 324 holds its key, a secret. A 324 nobody
//! asked for automatically (someone typed `/mode #channel`) is shown as
//! any server reply is. Bridged to a ReteCloud service the query is the
//! service's, and its answer (a row, or a sync line) reaches us after our
//! JOIN all the same.

use super::Session;
use crate::line::Line;

impl Session {
    /// Sends the next channel's `MODE #channel` query when nothing else is
    /// queued (see `modes_to_ask`); `poll_timeout` is due while one waits.
    pub(super) fn pump_mode_queries(&mut self) {
        if !self.mode_query_ready() {
            return;
        }
        if let Some((_, name)) = self.modes_to_ask.pop_front() {
            self.send(crate::line::OutLine::new("MODE").param(name));
        }
    }

    /// Whether `pump_mode_queries` would send one now: something to ask,
    /// nothing queued and a full flood bucket, so a query only ever takes
    /// spare capacity and a person still has the rest of the burst.
    pub(super) fn mode_query_ready(&self) -> bool {
        self.mode_query_due(self.now.mono)
            .is_some_and(|due| due <= self.now.mono)
    }

    /// When the next mode query may go (None: nothing to ask, something
    /// queued, or not registered); `poll_timeout` wakes the session then.
    pub(super) fn mode_query_due(&self, now: crate::clock::Mono) -> Option<crate::clock::Mono> {
        (!self.modes_to_ask.is_empty()
            && self.outbox.queued() == 0
            && self.registration.step == super::registration::RegStep::Registered)
            .then(|| self.outbox.full_at(now))
    }

    /// `324 <me> <channel> <modes> [params...]`: the channel's modes, whole.
    pub(super) fn on_channel_mode_is(&mut self, cmd: &str, line: &Line<'_>) {
        let Some(chan) = line.param(1) else {
            return;
        };
        let key = self.fold(chan);
        let params = line.params();
        let changes = self.isupport.parse_mode_changes(
            line.param(2).unwrap_or("+"),
            params.get(3..).unwrap_or_default(),
        );
        let isupport = &self.isupport;
        if let Some(channel) = self.channels.get_mut(&key) {
            channel.modes = crate::channel_modes::ChannelModes::default();
            for change in changes.iter().filter(|c| c.adding) {
                channel.modes.apply(change, isupport.mode_kind(change.mode));
            }
        }
        if !self.modes_asked.contains(&key) {
            self.push_server_reply(cmd, line);
        }
    }

    /// `329 <me> <channel> <unix seconds>`: when the channel was created;
    /// the last line of the answer to our MODE query.
    pub(super) fn on_creation_time(&mut self, cmd: &str, line: &Line<'_>) {
        let Some(chan) = line.param(1) else {
            return;
        };
        let key = self.fold(chan);
        let at = line.param(2).and_then(|t| t.parse::<i64>().ok());
        if let Some(channel) = self.channels.get_mut(&key) {
            channel.created_at = at;
        }
        if !self.modes_asked.remove(&key) {
            self.push_server_reply(cmd, line);
        }
    }
}
