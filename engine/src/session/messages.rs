//! PRIVMSG and NOTICE: which buffer a message belongs in, CTCP, and the
//! protocol's own automatic answers (CTCP VERSION and PING).

use super::Session;
use crate::buffer::BufferKind;
use crate::ids::BufferId;
use crate::line::{Line, OutLine};
use crate::row::Payload;

/// At most this many automatic CTCP answers may wait in the outbox, so a CTCP
/// flood cannot fill it.
const MAX_QUEUED_FOR_CTCP: usize = 3;

/// A CTCP body split from `\x01COMMAND args\x01`.
pub(crate) fn split_ctcp(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix('\u{1}')?;
    let inner = inner.strip_suffix('\u{1}').unwrap_or(inner);
    Some(match inner.split_once(' ') {
        Some((c, a)) => (c, a),
        None => (inner, ""),
    })
}

impl Session {
    pub(super) fn on_message(&mut self, line: &Line<'_>, cmd: &str) {
        let (Some(target), Some(text)) = (line.param(0), line.param(1)) else {
            return;
        };
        let is_notice = cmd == "NOTICE";
        let source = line.source().unwrap_or("");
        let from_user = source.contains('!') || source.contains('@');
        let nick = line.source_nick().unwrap_or("");
        let ctcp = split_ctcp(text);
        // A CTCP request (VERSION, PING, …; not ACTION) is the protocol's,
        // not a conversation: kept where a notice without a query goes.
        let quiet = is_notice || ctcp.is_some_and(|(c, _)| !c.eq_ignore_ascii_case("ACTION"));
        let buffer = self.message_buffer(target, nick, from_user, quiet, !is_notice && quiet);
        // A login to a service is stored with its credential masked: our own
        // echo-message copy and replayed history alike. Only we can send to a
        // service, so the sender is not checked: history sent under an
        // earlier nick is masked too.
        let login = rete_redact::mask_service_login(target, text);
        let shown = login.as_deref().unwrap_or(text);
        // Our own message as the server echoes it (or a bouncer replays it)
        // has every credential we sent masked, wherever it went: a login to
        // `#rete,NickServ` comes back to `#rete` as a plain message.
        let ours = from_user && self.is_me(nick);
        let shown = if ours {
            self.sent_credentials.mask(shown)
        } else {
            std::borrow::Cow::Borrowed(shown)
        };
        let shown = &*shown;

        let payload = match split_ctcp(shown) {
            Some((c, a)) if c.eq_ignore_ascii_case("ACTION") => Payload::Action { text: a.into() },
            Some((c, a)) => {
                if !is_notice && from_user && !self.is_me(nick) {
                    self.answer_ctcp(nick, c, a);
                }
                Payload::Ctcp {
                    command: c.to_ascii_uppercase().into(),
                    args: a.into(),
                    reply: is_notice,
                }
            }
            None if is_notice => Payload::Notice { text: shown.into() },
            None if ours && self.take_pending_secret(target, text) => Payload::Privmsg {
                text: super::SECRET_MASK.into(),
            },
            None => Payload::Privmsg { text: shown.into() },
        };
        let from = if from_user { nick } else { "" };
        let row = self.row_for(line, from, payload);
        self.push_row(&buffer, row);
    }

    /// Where a message goes:
    /// - to a channel (or `@#channel` STATUSMSG): that channel's buffer;
    /// - from a server, or before registration: the server buffer;
    /// - our own message echoed back (echo-message): the query with its target;
    /// - a private PRIVMSG: the query with its sender;
    /// - a private NOTICE (a CTCP reply among them): that query when it
    ///   exists, else the server buffer (services talk in notices; they need
    ///   not open a buffer each); `quiet` says it is one;
    /// - a private CTCP request (`request`): the server buffer, opening
    ///   nothing and taking no query's activity.
    fn message_buffer(
        &mut self,
        target: &str,
        nick: &str,
        from_user: bool,
        quiet: bool,
        request: bool,
    ) -> BufferId {
        let chan = target.trim_start_matches(|c| self.isupport.statusmsg.contains(c));
        if self.isupport.is_channel(chan) {
            return self.channel_buffer(chan);
        }
        if !from_user || target == "*" || request {
            return self.buffers.server_id().clone();
        }
        let ours = self.is_me(nick);
        let partner = if ours { target } else { nick };
        let folded = self.fold(partner);
        if let Some(id) = self.buffers.find(BufferKind::Query, &folded) {
            return id.clone();
        }
        if quiet {
            return self.buffers.server_id().clone();
        }
        // Ours too: the person's own sends opened their query already, so an
        // echo without one is another client's (a bouncer's) or made up.
        if self.buffers.query_count() >= self.config.max_query_buffers {
            return self.query_refused(nick);
        }
        self.query_buffer(partner)
    }

    /// A private message from `nick` with every allowed query buffer taken:
    /// it goes to the server buffer, and the first such message on a
    /// connection adds one line saying why.
    fn query_refused(&mut self, nick: &str) -> BufferId {
        if !self.query_cap_reported {
            self.query_cap_reported = true;
            let max = self.config.max_query_buffers;
            self.status(&format!(
                "{max} query buffers are open, the most allowed: private messages from others without one (first: {nick}) are kept here in the server buffer"
            ));
        }
        self.buffers.server_id().clone()
    }

    /// The protocol's own answers: CTCP VERSION and PING. Nothing else that
    /// arrives from IRC ever causes a line to be sent (see ARCHITECTURE.md).
    /// A reply goes from spare capacity only (`Priority::Spare`), behind
    /// every line of the person's, so a CTCP flood never delays theirs.
    fn answer_ctcp(&mut self, nick: &str, command: &str, args: &str) {
        if self.queued_lines() >= MAX_QUEUED_FOR_CTCP {
            return;
        }
        let reply = if command.eq_ignore_ascii_case("VERSION") {
            format!("\u{1}VERSION {}\u{1}", self.config.version_reply)
        } else if command.eq_ignore_ascii_case("PING") {
            // Echo the token back, stripped of anything that could break the line.
            let token: String = args.chars().filter(|c| !c.is_control()).take(64).collect();
            format!("\u{1}PING {token}\u{1}")
        } else {
            return;
        };
        self.send_spare(OutLine::new("NOTICE").param(nick).param(reply));
    }
}

#[cfg(test)]
mod tests {
    use super::split_ctcp;

    #[test]
    fn ctcp_splits() {
        assert_eq!(
            split_ctcp("\u{1}ACTION waves\u{1}"),
            Some(("ACTION", "waves"))
        );
        assert_eq!(split_ctcp("\u{1}VERSION\u{1}"), Some(("VERSION", "")));
        assert_eq!(split_ctcp("\u{1}PING 123"), Some(("PING", "123")));
        assert_eq!(split_ctcp("hello"), None);
    }
}
