//! The sending interface: what a person (or an embedder acting for one) asks
//! the session to do. It is the only way, besides the protocol's own answers,
//! that a line reaches the wire.

mod reconfigure;

use super::queued_line::QueuedLine;
use super::Session;
use crate::buffer::NewRow;
use crate::clock::Mono;
use crate::event::ConnState;
use crate::line::{Line, OutLine};
use crate::row::Payload;

/// The mask shown instead of a secret message's text (the one mask used
/// everywhere, so a reader can tell a masked credential from a real one).
pub const SECRET_MASK: &str = rete_redact::MASK;

/// How long a secret message's echo-message copy is waited for.
const SECRET_ECHO_MS: u64 = 10_000;

/// Why a command was refused. Nothing was sent or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The session is not registered with a server.
    #[error("not connected")]
    NotConnected,
    /// An argument cannot be sent as given.
    #[error("{0}")]
    Invalid(String),
    /// Text for a channel we were in but are not any more (parted, kicked):
    /// the server would refuse it with 404, so it is not sent or shown.
    #[error("not sent: you are not in {channel} (type /join {channel} to join it again)")]
    NotInChannel {
        /// The channel as given.
        channel: String,
    },
}

/// A secret message sent with `/smsg`, awaiting its echo-message copy.
/// `Debug` masks the text.
#[derive(Clone)]
pub(crate) struct PendingSecret {
    pub target_folded: String,
    pub text: String,
    pub expires: Mono,
}

impl std::fmt::Debug for PendingSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSecret")
            .field("target_folded", &self.target_folded)
            .field("text", &"********")
            .field("expires", &self.expires)
            .finish()
    }
}

/// Borrowed mutable access to a session for sending. Obtained from
/// [`Session::commands`].
pub struct Commands<'a> {
    s: &'a mut Session,
}

impl<'a> Commands<'a> {
    pub(super) fn new(s: &'a mut Session) -> Commands<'a> {
        Commands { s }
    }

    /// Refuses text for a channel we have left or were kicked from. A
    /// channel never joined is not checked: servers may take messages from
    /// outside (`-n`).
    fn still_in_channel(&self, target: &str) -> Result<(), CommandError> {
        let chan = target.trim_start_matches(|c| self.s.isupport.statusmsg.contains(c));
        if !self.s.isupport.is_channel(chan) {
            return Ok(());
        }
        match self.s.channels.get(&self.s.fold(chan)) {
            Some(c) if !c.joined => Err(CommandError::NotInChannel {
                channel: chan.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    fn connected(&self) -> Result<(), CommandError> {
        if self.s.connection.state == ConnState::Connected {
            Ok(())
        } else {
            Err(CommandError::NotConnected)
        }
    }

    /// Joins a channel (and keeps it joined across reconnects).
    pub fn join(&mut self, channel: &str, key: Option<&str>) -> Result<(), CommandError> {
        check_word("channel", channel)?;
        if let Some(k) = key {
            check_word("key", k)?;
        }
        if !self.s.isupport.is_channel(channel) {
            return Err(CommandError::Invalid(format!(
                "{channel} is not a channel name"
            )));
        }
        if let Some(k) = key {
            self.s.learn_channel_key(k);
        }
        let folded = self.s.fold(channel);
        self.s.wanted_channels.insert(
            folded,
            super::ChannelSpec {
                name: channel.to_owned(),
                key: key.map(str::to_owned),
            },
        );
        if self.connected().is_ok() {
            let mut out = OutLine::new("JOIN").param(channel);
            if let Some(k) = key {
                out = out.param(k);
            }
            self.send_checked(out)?;
        }
        Ok(())
    }

    /// Leaves a channel (and stops rejoining it).
    pub fn part(&mut self, channel: &str, reason: Option<&str>) -> Result<(), CommandError> {
        check_word("channel", channel)?;
        self.connected()?;
        let folded = self.s.fold(channel);
        self.s.wanted_channels.remove(&folded);
        let mut out = OutLine::new("PART").param(channel);
        if let Some(r) = reason.filter(|r| !r.is_empty()) {
            out = out.param(r);
        }
        self.send_checked(out)
    }

    /// Sends a PRIVMSG, split to fit the line length.
    pub fn privmsg(&mut self, target: &str, text: &str) -> Result<(), CommandError> {
        self.message("PRIVMSG", target, text, |t| Payload::Privmsg {
            text: t.into(),
        })
    }

    /// Sends a NOTICE.
    pub fn notice(&mut self, target: &str, text: &str) -> Result<(), CommandError> {
        self.message("NOTICE", target, text, |t| Payload::Notice {
            text: t.into(),
        })
    }

    /// Sends a CTCP ACTION (`/me`).
    pub fn action(&mut self, target: &str, text: &str) -> Result<(), CommandError> {
        check_word("target", target)?;
        check_text(text)?;
        self.connected()?;
        self.still_in_channel(target)?;
        let body = format!("\u{1}ACTION {text}\u{1}");
        self.send_checked(OutLine::new("PRIVMSG").param(target).param(body))?;
        self.local_echo(target, Payload::Action { text: text.into() });
        Ok(())
    }

    /// Sends a PRIVMSG whose text is shown and stored only as a mask. The
    /// server's echo-message copy is recognised once, within 10 seconds, and
    /// stored masked too.
    pub fn secret_privmsg(&mut self, target: &str, text: &str) -> Result<(), CommandError> {
        if self.s.config.bridged {
            // The service would store the text as a row and replay it to
            // every client: it cannot be kept secret there.
            return Err(CommandError::Invalid(
                "/smsg is not available on a ReteCloud session: the service stores every message it relays; nothing was sent".into(),
            ));
        }
        check_word("target", target)?;
        check_text(text)?;
        self.connected()?;
        self.still_in_channel(target)?;
        self.send_checked(OutLine::new("PRIVMSG").param(target).param(text))?;
        let now = self.s.now.mono;
        self.s.raw_masks.add(text, now);
        if self.s.caps.has("echo-message") {
            let target_folded = self.s.fold(target);
            let expires = self.s.now.mono.plus_ms(SECRET_ECHO_MS);
            self.s.pending_secrets.push(PendingSecret {
                target_folded,
                text: text.to_owned(),
                expires,
            });
        } else {
            self.local_echo(
                target,
                Payload::Privmsg {
                    text: SECRET_MASK.into(),
                },
            );
        }
        Ok(())
    }

    /// Changes our nick. Also works while registering, which is how a person
    /// picks a nick after the server refused every fallback. Once the server
    /// confirms it, it is tried first on later connections.
    pub fn nick(&mut self, nick: &str) -> Result<(), CommandError> {
        check_word("nick", nick)?;
        if self.connected().is_err() && !self.s.registering() {
            return Err(CommandError::NotConnected);
        }
        self.send_checked(OutLine::new("NICK").param(nick))?;
        self.s.requested_nick = Some(nick.to_owned());
        Ok(())
    }

    /// Authenticates as an IRC operator.
    pub fn oper(&mut self, name: &str, password: &str) -> Result<(), CommandError> {
        check_word("name", name)?;
        check_word("password", password)?;
        self.connected()?;
        self.send_checked(OutLine::new("OPER").param(name).param(password))
    }

    /// Sends a raw line as typed. It must parse as an IRC line. A WHO sent
    /// this way is the person's own and never enters the engine's WHO queue.
    pub fn quote(&mut self, raw: &str) -> Result<(), CommandError> {
        let raw = raw.trim_start();
        if raw.is_empty() {
            return Err(CommandError::Invalid("the line is empty".into()));
        }
        if raw.contains(['\r', '\n', '\0']) {
            return Err(CommandError::Invalid(
                "the line contains a line break or NUL".into(),
            ));
        }
        if Line::parse(raw).is_err() {
            return Err(CommandError::Invalid("the line is not an IRC line".into()));
        }
        self.connected()?;
        self.s.outbox.push(
            QueuedLine::plain(raw.to_owned()),
            crate::flood::Priority::Normal,
        );
        Ok(())
    }

    /// Queues a line an agent sent (send_raw), already checked by the
    /// control surface's line rule, and returns its ticket. It is paced like
    /// any other command, whatever its verb: PING, PONG, QUIT or PASS from
    /// an agent waits its turn. [`Session::poll_transmit_ticketed`] hands the
    /// ticket back with the line.
    pub fn agent_line(&mut self, raw: &str) -> Result<super::Ticket, CommandError> {
        if raw.is_empty() || raw.contains(['\r', '\n', '\0']) {
            return Err(CommandError::Invalid(
                "the line is empty or contains a line break or NUL".into(),
            ));
        }
        self.connected()?;
        if self.s.closing {
            return Err(CommandError::Invalid("the session is disconnecting".into()));
        }
        self.s.next_ticket += 1;
        let ticket = self.s.next_ticket;
        self.s.outbox.push(
            QueuedLine(raw.to_owned(), super::queued_line::Origin::Agent(ticket)),
            crate::flood::Priority::Normal,
        );
        Ok(ticket)
    }

    /// Says goodbye; the host closes the connection once the line is out.
    /// What the person queued goes out unpaced before the QUIT, but an
    /// agent's line is not theirs to hurry: every one still queued is taken
    /// out unsent ([`Session::poll_unsent_agent_line`]), so agent lines are
    /// only ever sent at the throttler's pace.
    ///
    /// The channels we are in stay wanted: the next connect (a `/connect`
    /// after a `/disconnect`, a `/reconnect`) joins them again, as after a
    /// lost connection.
    pub fn quit(&mut self, reason: Option<&str>) -> Result<(), CommandError> {
        self.connected()?;
        let mut out = OutLine::new("QUIT");
        if let Some(r) = reason.filter(|r| !r.is_empty()) {
            out = out.param(r);
        }
        self.send_checked(out)?;
        self.s.closing = true;
        let unsent = self
            .s
            .outbox
            .take_where(|queued| matches!(queued.1, super::queued_line::Origin::Agent(_)));
        for queued in unsent {
            if let super::queued_line::Origin::Agent(ticket) = queued.1 {
                self.s.unsent_agent_lines.push_back(ticket);
            }
        }
        Ok(())
    }

    fn message(
        &mut self,
        command: &str,
        target: &str,
        text: &str,
        payload: impl Fn(&str) -> Payload,
    ) -> Result<(), CommandError> {
        check_word("target", target)?;
        check_text(text)?;
        self.connected()?;
        self.still_in_channel(target)?;
        let budget = self.text_budget(command, target);
        for piece in split_text(text, budget) {
            self.send_checked(OutLine::new(command).param(target).param(piece))?;
            // A service login is stored with its credential masked.
            let login = rete_redact::mask_service_login(target, piece);
            self.local_echo(target, payload(login.as_deref().unwrap_or(piece)));
        }
        Ok(())
    }

    /// Bytes of text that fit in one line once the server prefixes our
    /// `nick!user@host` when relaying it.
    fn text_budget(&self, command: &str, target: &str) -> usize {
        let linelen = self.s.isupport.linelen.max(512);
        // ":nick!user@host CMD target :text\r\n"; the host is unknown, so
        // assume the longest one usual servers allow.
        let overhead = 1
            + self.s.connection.nick.len()
            + 1
            + 10
            + 1
            + 63
            + 1
            + command.len()
            + 1
            + target.len()
            + 2
            + 2;
        linelen.saturating_sub(overhead).max(64)
    }

    fn send_checked(&mut self, out: OutLine) -> Result<(), CommandError> {
        let wire = out
            .to_wire()
            .map_err(|e| CommandError::Invalid(e.to_string()))?;
        self.s
            .outbox
            .push(QueuedLine::plain(wire), crate::flood::Priority::Normal);
        Ok(())
    }

    /// Without echo-message, the client stores its own message at once;
    /// with it, the server's copy is stored when it comes back, and a query
    /// is opened now so that copy has its buffer: an arriving line opens a
    /// query only within `max_query_buffers`, ours included, since a server
    /// can claim we sent to anyone.
    fn local_echo(&mut self, target: &str, payload: Payload) {
        // Bridged, the service's stream carries our message back (the
        // server's echo, or the service's own where the server has none).
        if self.s.caps.has("echo-message") || self.s.config.bridged {
            if !self.s.isupport.is_channel(target) {
                self.s.query_buffer(target);
            }
            return;
        }
        let buffer = if self.s.isupport.is_channel(target) {
            self.s.channel_buffer(target)
        } else {
            self.s.query_buffer(target)
        };
        let row = NewRow {
            time: self.s.now_wall(),
            server_time: false,
            msgid: None,
            from: self.s.connection.nick.as_str().into(),
            in_history_batch: false,
            payload,
            older_batch: None,
        };
        self.s.push_row(&buffer, row);
    }
}

impl Session {
    /// An echo-message copy of a `/smsg` we sent: masked once, then forgotten.
    pub(super) fn take_pending_secret(&mut self, target: &str, text: &str) -> bool {
        let now = self.now.mono;
        self.pending_secrets.retain(|p| p.expires > now);
        let folded = self.fold(target);
        match self
            .pending_secrets
            .iter()
            .position(|p| p.target_folded == folded && p.text == text)
        {
            Some(i) => {
                self.pending_secrets.remove(i);
                true
            }
            None => false,
        }
    }
}

fn check_word(what: &str, value: &str) -> Result<(), CommandError> {
    if value.is_empty() || value.contains([' ', '\r', '\n', '\0']) || value.starts_with(':') {
        return Err(CommandError::Invalid(format!("{what} must be one word")));
    }
    Ok(())
}

fn check_text(text: &str) -> Result<(), CommandError> {
    if text.is_empty() {
        return Err(CommandError::Invalid("nothing to send".into()));
    }
    if text.contains(['\r', '\n', '\0']) {
        return Err(CommandError::Invalid(
            "the text contains a line break or NUL".into(),
        ));
    }
    Ok(())
}

/// Splits text into pieces of at most `max` bytes, on char boundaries,
/// preferring the last space in each piece.
pub(crate) fn split_text(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(space) = rest[..cut].rfind(' ').filter(|&s| s > max / 2) {
            cut = space + 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_prefers_spaces_and_char_boundaries() {
        assert_eq!(split_text("hello", 10), vec!["hello"]);
        let parts = split_text("aaaa bbbb cccc", 10);
        assert_eq!(parts, vec!["aaaa bbbb ", "cccc"]);
        let s = "é".repeat(10); // 20 bytes
        let parts = split_text(&s, 5);
        assert!(parts.iter().all(|p| p.len() <= 5));
        assert_eq!(parts.concat(), s);
    }
}
