//! Channel membership and user details: JOIN, PART, KICK, QUIT, NICK, MODE,
//! TOPIC, INVITE, NAMES, WHO/WHOX, and away-notify, account-notify, chghost, setname.

use super::Session;
use crate::event::Event;
use crate::ids::BufferId;
use crate::isupport::ModeKind;
use crate::line::{Line, OutLine};
use crate::members::{add_mode, remove_mode, Membership, User};
use crate::row::Payload;

/// Splits `nick!user@host` into its parts.
pub(crate) fn split_mask(mask: &str) -> (&str, Option<&str>, Option<&str>) {
    let (nick, rest) = match mask.split_once('!') {
        Some((n, r)) => (n, Some(r)),
        None => (mask, None),
    };
    match rest {
        Some(r) => match r.split_once('@') {
            Some((u, h)) => (nick, Some(u), Some(h)),
            None => (nick, Some(r), None),
        },
        None => match nick.split_once('@') {
            Some((n, h)) => (n, None, Some(h)),
            None => (nick, None, None),
        },
    }
}

impl Session {
    fn touch_user(&mut self, nick: &str, user: Option<&str>, host: Option<&str>) -> &mut User {
        let key = self.fold(nick);
        let entry = self.users.entry(key).or_default();
        entry.nick = nick.to_owned();
        if let Some(u) = user {
            entry.user = Some(u.to_owned());
        }
        if let Some(h) = host {
            entry.host = Some(h.to_owned());
        }
        entry
    }

    /// Forgets a user who shares no channel with us any more.
    fn prune_user(&mut self, folded: &str) {
        if !self
            .channels
            .values()
            .any(|c| c.members.contains_key(folded))
        {
            self.users.remove(folded);
        }
    }

    fn member_event(&mut self, chan_key: &str) {
        if let Some(id) = self
            .buffers
            .find(crate::buffer::BufferKind::Channel, chan_key)
        {
            self.events.push_back(Event::Members(id.clone()));
        }
    }

    pub(super) fn on_join(&mut self, line: &Line<'_>) {
        let (Some(source), Some(chan)) = (line.source(), line.param(0)) else {
            return;
        };
        let (nick, user, host) = split_mask(source);
        // extended-join: JOIN <channel> <account|*> :<realname>
        let account = line.param(1).filter(|a| *a != "*").map(str::to_owned);
        let realname = line.param(2).map(str::to_owned);
        let key = self.fold(chan);
        let buffer = self.channel_buffer(chan);
        if self.is_me(nick) {
            // Bridged, a JOIN row of ours may be a replay that follows the
            // service's sync, whose topic is the current one.
            let fresh = !self.batches.is_history(line) && !self.config.bridged;
            self.note_attach_time(line);
            let channel = self.channels.entry(key.clone()).or_default();
            channel.name = chan.to_owned();
            channel.joined = true;
            channel.members.clear();
            channel.names_pending = None;
            if fresh {
                // What the server says on this join (332 and 333, or
                // nothing for a channel without one) replaces the topic an
                // earlier join left: a server restarted since may hold none.
                channel.topic = None;
                channel.topic_set_by = None;
                channel.topic_set_at = None;
            }
            self.wanted_channels
                .entry(key.clone())
                .or_insert_with(|| super::ChannelSpec {
                    name: chan.to_owned(),
                    key: None,
                });
            // Bridged, the service polls WHO, asks for the modes and
            // fetches history; its answer comes to us as rows (or sync).
            self.modes_asked.insert(key.clone());
            if !self.config.bridged {
                self.who.enqueue(&key, chan);
                self.modes_to_ask.push_back((key.clone(), chan.to_owned()));
                self.pump_mode_queries();
                self.request_latest_history(chan);
            }
        }
        let extended = self.caps.has("extended-join");
        let u = self.touch_user(nick, user, host);
        if extended {
            u.account = account.clone();
            if realname.is_some() {
                u.realname = realname;
            }
        }
        if let Some(channel) = self.channels.get_mut(&key) {
            let folded_nick = self.isupport.casemapping.fold(nick);
            channel.members.insert(
                folded_nick,
                Membership {
                    nick: nick.to_owned(),
                    modes: String::new(),
                },
            );
        }
        self.member_event(&key);
        let row = self.row_for(
            line,
            nick,
            Payload::UserJoined {
                account: account.map(Into::into),
                userhost: match (user, host) {
                    (Some(u), Some(h)) => Some(format!("{u}@{h}").into()),
                    _ => None,
                },
            },
        );
        self.push_row(&buffer, row);
        self.pump_who(self.now.mono);
    }

    /// How many messages a join asks for with CHATHISTORY LATEST: the
    /// configured limit within the server's, or None when the server offers
    /// no chat history (capability and ISUPPORT both needed) or the limit is 0.
    pub(crate) fn latest_history_limit(&self) -> Option<u32> {
        if !self.caps.has_chathistory() {
            return None;
        }
        let max = self.isupport.raw.get("CHATHISTORY")?;
        let server_max: u32 = max.parse().unwrap_or(0);
        let limit = match server_max {
            0 => self.config.chathistory_limit,
            m => m.min(self.config.chathistory_limit),
        };
        (limit > 0).then_some(limit)
    }

    fn request_latest_history(&mut self, chan: &str) {
        let Some(limit) = self.latest_history_limit() else {
            return;
        };
        self.send(
            OutLine::new("CHATHISTORY")
                .param("LATEST")
                .param(chan)
                .param("*")
                .param(limit.to_string()),
        );
    }

    fn leave_channel(&mut self, key: &str) {
        if let Some(channel) = self.channels.get_mut(key) {
            channel.joined = false;
            let gone: Vec<String> = std::mem::take(&mut channel.members).into_keys().collect();
            channel.names_pending = None;
            for nick in gone {
                self.prune_user(&nick);
            }
        }
        self.who.remove(key);
        self.modes_asked.remove(key);
        self.modes_to_ask.retain(|(k, _)| k != key);
    }

    fn remove_member(&mut self, key: &str, nick: &str) {
        let folded = self.fold(nick);
        if let Some(channel) = self.channels.get_mut(key) {
            channel.members.remove(&folded);
        }
        self.prune_user(&folded);
    }

    pub(super) fn on_part(&mut self, line: &Line<'_>) {
        let (Some(nick), Some(chans)) = (line.source_nick(), line.param(0)) else {
            return;
        };
        let reason = line.param(1).filter(|r| !r.is_empty());
        for chan in chans.split(',') {
            let key = self.fold(chan);
            let buffer = self.channel_buffer(chan);
            if self.is_me(nick) {
                self.leave_channel(&key);
            } else {
                self.remove_member(&key, nick);
            }
            self.member_event(&key);
            let row = self.row_for(
                line,
                nick,
                Payload::UserParted {
                    reason: reason.map(Into::into),
                },
            );
            self.push_row(&buffer, row);
        }
    }

    pub(super) fn on_kick(&mut self, line: &Line<'_>) {
        let (Some(chan), Some(victim)) = (line.param(0), line.param(1)) else {
            return;
        };
        let kicker = line.source_nick().unwrap_or("");
        let reason = line.param(2).filter(|r| !r.is_empty());
        let key = self.fold(chan);
        let buffer = self.channel_buffer(chan);
        if self.is_me(victim) {
            self.leave_channel(&key);
            // Not rejoined after a reconnect; a later `/join` adds it back.
            self.wanted_channels.remove(&key);
            self.status(&format!("Kicked from {chan} by {kicker}"));
        } else {
            self.remove_member(&key, victim);
        }
        self.member_event(&key);
        let row = self.row_for(
            line,
            kicker,
            Payload::UserKicked {
                victim: victim.into(),
                reason: reason.map(Into::into),
            },
        );
        self.push_row(&buffer, row);
    }

    /// The buffers that should show an event about `nick`: each channel they
    /// are in, and their query.
    fn buffers_of(&self, folded_nick: &str) -> Vec<(String, BufferId)> {
        let mut out: Vec<(String, BufferId)> = self
            .channels
            .iter()
            .filter(|(_, c)| c.members.contains_key(folded_nick))
            .filter_map(|(k, _)| {
                self.buffers
                    .find(crate::buffer::BufferKind::Channel, k)
                    .map(|id| (k.clone(), id.clone()))
            })
            .collect();
        if let Some(id) = self
            .buffers
            .find(crate::buffer::BufferKind::Query, folded_nick)
        {
            out.push((String::new(), id.clone()));
        }
        out
    }

    pub(super) fn on_quit(&mut self, line: &Line<'_>) {
        let Some(nick) = line.source_nick() else {
            return;
        };
        let reason = line.param(0).filter(|r| !r.is_empty());
        let folded = self.fold(nick);
        for (key, buffer) in self.buffers_of(&folded) {
            if let Some(channel) = self.channels.get_mut(&key) {
                channel.members.remove(&folded);
                self.member_event(&key);
            }
            let row = self.row_for(
                line,
                nick,
                Payload::UserQuit {
                    reason: reason.map(Into::into),
                },
            );
            self.push_row(&buffer, row);
        }
        self.users.remove(&folded);
        self.take_back_nick_freed_by(nick);
    }

    pub(super) fn on_nick(&mut self, line: &Line<'_>) {
        let (Some(old), Some(new)) = (line.source_nick(), line.param(0)) else {
            return;
        };
        let (old_f, new_f) = (self.fold(old), self.fold(new));
        let mut shown_in = self.buffers_of(&old_f);
        if self.is_me(old) {
            self.note_confirmed_nick(new);
            self.connection.nick = new.to_owned();
            self.events.push_back(Event::OwnNick(new.to_owned()));
            shown_in.push((String::new(), self.buffers.server_id().clone()));
        }
        for channel in self.channels.values_mut() {
            if let Some(mut m) = channel.members.remove(&old_f) {
                m.nick = new.to_owned();
                channel.members.insert(new_f.clone(), m);
            }
        }
        if let Some(mut u) = self.users.remove(&old_f) {
            u.nick = new.to_owned();
            self.users.insert(new_f.clone(), u);
        }
        self.buffers.rename_query(&old_f, &new_f, new);
        for (key, buffer) in shown_in {
            if !key.is_empty() {
                self.member_event(&key);
            }
            let row = self.row_for(
                line,
                old,
                Payload::NickChanged {
                    new_nick: new.into(),
                },
            );
            self.push_row(&buffer, row);
        }
        if !self.is_me(new) {
            self.take_back_nick_freed_by(old);
        }
    }

    pub(super) fn on_mode(&mut self, line: &Line<'_>) {
        let Some(target) = line.param(0) else {
            return;
        };
        let params = line.params();
        let modes_text = params.get(1..).unwrap_or_default().join(" ");
        let from = line.source_nick().unwrap_or("");
        let from = if line.source().is_some_and(|s| s.contains('!')) {
            from
        } else {
            ""
        };
        if !self.isupport.is_channel(target) {
            if self.is_me(target) {
                apply_user_modes(&mut self.connection.user_modes, line.param(1).unwrap_or(""));
            }
            let row = self.row_for(
                line,
                from,
                Payload::ModeChanged {
                    modes: modes_text.into(),
                },
            );
            let id = self.buffers.server_id().clone();
            self.push_row(&id, row);
            return;
        }
        let key = self.fold(target);
        let changes = self.isupport.parse_mode_changes(
            line.param(1).unwrap_or(""),
            params.get(2..).unwrap_or_default(),
        );
        let isupport = &self.isupport;
        let mut changed = false;
        if let Some(channel) = self.channels.get_mut(&key) {
            for change in changes {
                let kind = isupport.mode_kind(change.mode);
                if kind != ModeKind::Prefix {
                    channel.modes.apply(&change, kind);
                    continue;
                }
                let Some(nick) = change.arg.as_deref() else {
                    continue;
                };
                if let Some(m) = channel.members.get_mut(&isupport.casemapping.fold(nick)) {
                    if change.adding {
                        add_mode(&mut m.modes, change.mode, |c| isupport.rank_of_mode(c));
                    } else {
                        remove_mode(&mut m.modes, change.mode);
                    }
                    changed = true;
                }
            }
        }
        if changed {
            self.member_event(&key);
        }
        let buffer = self.channel_buffer(target);
        let row = self.row_for(
            line,
            from,
            Payload::ModeChanged {
                modes: modes_text.into(),
            },
        );
        self.push_row(&buffer, row);
    }

    pub(super) fn on_topic(&mut self, line: &Line<'_>) {
        let Some(chan) = line.param(0) else {
            return;
        };
        let topic = line.param(1).unwrap_or("");
        let setter = line.source_nick().unwrap_or("");
        let key = self.fold(chan);
        let buffer = self.channel_buffer(chan);
        let row = self.row_for(
            line,
            setter,
            Payload::TopicChanged {
                topic: topic.into(),
            },
        );
        if let Some(channel) = self.channels.get_mut(&key) {
            channel.topic = Some(topic.to_owned());
            channel.topic_set_by = Some(setter.to_owned());
            channel.topic_set_at = Some(row.time);
        }
        self.events.push_back(Event::Topic(buffer.clone()));
        self.push_row(&buffer, row);
    }

    pub(super) fn on_invite(&mut self, line: &Line<'_>) {
        let (Some(target), Some(chan)) = (line.param(0), line.param(1)) else {
            return;
        };
        let from = line.source_nick().unwrap_or("");
        // Our own invitation goes to the server buffer; invite-notify about
        // someone else goes to that channel's buffer.
        let buffer = if self.is_me(target) {
            self.buffers.server_id().clone()
        } else {
            self.channel_buffer(chan)
        };
        let row = self.row_for(
            line,
            from,
            Payload::Invited {
                target: target.into(),
                channel: chan.into(),
            },
        );
        self.push_row(&buffer, row);
    }

    fn update_user(&mut self, nick: &str, f: impl FnOnce(&mut User)) {
        let folded = self.fold(nick);
        if let Some(u) = self.users.get_mut(&folded) {
            f(u);
            for (key, _) in self.buffers_of(&folded) {
                if !key.is_empty() {
                    self.member_event(&key);
                }
            }
        }
    }

    pub(super) fn on_away(&mut self, line: &Line<'_>) {
        let Some(nick) = line.source_nick() else {
            return;
        };
        let away = line.param(0).is_some();
        self.update_user(nick, |u| u.away = away);
    }

    pub(super) fn on_account(&mut self, line: &Line<'_>) {
        let Some(nick) = line.source_nick() else {
            return;
        };
        let account = line.param(0).filter(|a| *a != "*").map(str::to_owned);
        self.update_user(nick, |u| u.account = account);
    }

    pub(super) fn on_chghost(&mut self, line: &Line<'_>) {
        let (Some(nick), Some(user), Some(host)) =
            (line.source_nick(), line.param(0), line.param(1))
        else {
            return;
        };
        self.update_user(nick, |u| {
            u.user = Some(user.to_owned());
            u.host = Some(host.to_owned());
        });
    }

    pub(super) fn on_setname(&mut self, line: &Line<'_>) {
        let (Some(nick), Some(real)) = (line.source_nick(), line.param(0)) else {
            return;
        };
        self.update_user(nick, |u| u.realname = Some(real.to_owned()));
    }

    pub(super) fn on_error(&mut self, line: &Line<'_>) {
        let text = line.param(0).unwrap_or("");
        self.note_error_before_welcome(text);
        let row = self.row_for(line, "", Payload::ServerError { text: text.into() });
        let id = self.buffers.server_id().clone();
        self.push_row(&id, row);
    }

    /// RPL_NOTOPIC, RPL_TOPIC, RPL_TOPICWHOTIME, RPL_NAMREPLY, RPL_ENDOFNAMES,
    /// RPL_WHOREPLY, RPL_WHOSPCRPL and RPL_ENDOFWHO: state, not rows — except
    /// WHO replies to a WHO the person typed, which they want to see.
    pub(super) fn on_channel_numeric(&mut self, line: &Line<'_>, code: &str) {
        match code {
            // The server holds no topic: none is kept either.
            "331" => {
                let Some(chan) = line.param(1) else {
                    return;
                };
                let key = self.fold(chan);
                if let Some(c) = self.channels.get_mut(&key) {
                    c.topic = None;
                    c.topic_set_by = None;
                    c.topic_set_at = None;
                }
                if let Some(id) = self.buffers.find(crate::buffer::BufferKind::Channel, &key) {
                    self.events.push_back(Event::Topic(id.clone()));
                }
            }
            "332" => {
                let (Some(chan), Some(topic)) = (line.param(1), line.param(2)) else {
                    return;
                };
                let key = self.fold(chan);
                if let Some(c) = self.channels.get_mut(&key) {
                    c.topic = Some(topic.to_owned());
                }
                if let Some(id) = self.buffers.find(crate::buffer::BufferKind::Channel, &key) {
                    self.events.push_back(Event::Topic(id.clone()));
                }
            }
            // RPL_TOPICWHOTIME: <me> <chan> <setter> <set time in Unix seconds>
            "333" => {
                let (Some(chan), Some(setter)) = (line.param(1), line.param(2)) else {
                    return;
                };
                let set_at = line
                    .param(3)
                    .and_then(|t| t.parse::<i64>().ok())
                    .and_then(|secs| secs.checked_mul(1000))
                    .map(crate::clock::UnixMillis);
                let key = self.fold(chan);
                if let Some(c) = self.channels.get_mut(&key) {
                    c.topic_set_by = Some(split_mask(setter).0.to_owned());
                    c.topic_set_at = set_at;
                }
            }
            "353" => self.on_names(line),
            "366" => {
                let Some(chan) = line.param(1) else { return };
                let key = self.fold(chan);
                if let Some(c) = self.channels.get_mut(&key) {
                    if let Some(members) = c.names_pending.take() {
                        c.members = members;
                    }
                }
                self.member_event(&key);
            }
            "352" => self.on_who_reply(line),
            "354" => self.on_whox_reply(line),
            "315" => {
                let target = line.param(1).unwrap_or("");
                let key = self.fold(target);
                if !self.who.on_end_of_who(&key) && !self.bridged_who(&key) {
                    self.push_server_reply(code, line);
                }
                self.pump_who(self.now.mono);
            }
            _ => {}
        }
    }

    fn on_names(&mut self, line: &Line<'_>) {
        // 353 <me> <symbol> <channel> :<entries>
        let (Some(chan), Some(entries)) = (line.param(2), line.param(3)) else {
            return;
        };
        let key = self.fold(chan);
        if !self.channels.contains_key(&key) {
            self.push_server_reply("353", line);
            return;
        }
        let mut parsed = Vec::new();
        for entry in entries.split(' ').filter(|e| !e.is_empty()) {
            let e = self.isupport.split_names_entry(entry);
            parsed.push((
                e.modes.iter().collect::<String>(),
                e.nick.to_owned(),
                e.user.map(str::to_owned),
                e.host.map(str::to_owned),
            ));
        }
        for (modes, nick, user, host) in parsed {
            self.touch_user(&nick, user.as_deref(), host.as_deref());
            let folded = self.fold(&nick);
            if let Some(c) = self.channels.get_mut(&key) {
                c.names_pending
                    .get_or_insert_with(Default::default)
                    .insert(folded, Membership { nick, modes });
            }
        }
    }

    /// A reply to a WHO: ours when it names a channel our in-flight WHO asked about.
    fn is_our_who(&self, target: &str) -> bool {
        let key = self.fold(target);
        self.who.in_flight() == Some(key.as_str()) || self.bridged_who(&key)
    }

    /// Bridged, a WHO about a channel we are in is the service's poll: its
    /// replies update the members, as our own poll's would, and are not shown.
    fn bridged_who(&self, key: &str) -> bool {
        self.config.bridged && self.channels.get(key).is_some_and(|c| c.joined)
    }

    fn on_who_reply(&mut self, line: &Line<'_>) {
        // 352 <me> <channel> <user> <host> <server> <nick> <flags> :<hops> <realname>
        let p = line.params();
        if p.len() < 7 {
            return;
        }
        let ours = self.is_our_who(p[1]);
        let realname = p
            .get(7)
            .and_then(|r| r.split_once(' '))
            .map(|(_, r)| r.to_owned());
        let away = p[6].starts_with('G');
        self.update_user(p[5], |u| {
            u.user = Some(p[2].to_owned());
            u.host = Some(p[3].to_owned());
            u.away = away;
            if realname.is_some() {
                u.realname = realname;
            }
        });
        if !ours {
            self.push_server_reply("352", line);
        }
    }

    fn on_whox_reply(&mut self, line: &Line<'_>) {
        // 354 <me> <token> <channel> <user> <host> <nick> <flags> <account> :<realname>
        let p = line.params();
        if p.len() < 9 || p[1] != self.who.whox_token() {
            self.push_server_reply("354", line);
            return;
        }
        let away = p[6].starts_with('G');
        let account = (p[7] != "0").then(|| p[7].to_owned());
        let realname = p[8].to_owned();
        self.update_user(p[5], |u| {
            u.user = Some(p[3].to_owned());
            u.host = Some(p[4].to_owned());
            u.away = away;
            u.account = account;
            u.realname = Some(realname);
        });
    }

    /// Sends the next queued WHO of ours, if none is in flight.
    pub(super) fn pump_who(&mut self, now: crate::clock::Mono) {
        if self.registration.step != super::registration::RegStep::Registered {
            return;
        }
        let whox = self.isupport.whox;
        if let Some(req) = self.who.poll_send(now, whox) {
            let mut out = OutLine::new("WHO").param(req.target);
            if let Some(token) = req.whox_token {
                out = out.param(format!("%tcuhnfar,{token}"));
            }
            self.send_silent_who(out);
        }
    }
}

/// Applies a user-mode string such as `+iw-x` to our mode letters.
fn apply_user_modes(modes: &mut String, change: &str) {
    let mut adding = true;
    for c in change.chars() {
        match c {
            '+' => adding = true,
            '-' => adding = false,
            c if adding => {
                if !modes.contains(c) {
                    modes.push(c);
                }
            }
            c => modes.retain(|m| m != c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_split() {
        assert_eq!(split_mask("a!b@c"), ("a", Some("b"), Some("c")));
        assert_eq!(split_mask("a@c"), ("a", None, Some("c")));
        assert_eq!(split_mask("irc.example"), ("irc.example", None, None));
    }

    #[test]
    fn user_modes_apply() {
        let mut m = String::from("i");
        apply_user_modes(&mut m, "+wx-i");
        assert_eq!(m, "wx");
    }
}
