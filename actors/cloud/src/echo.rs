//! The echo the service stores for our own PRIVMSG and NOTICE when the IRC
//! server does not echo them (no `echo-message`), so every attached client
//! sees every message, whoever sent it (PROTOCOL.md §4).
//!
//! The writer thread keeps one [`Identity`] per session, fed the session's
//! received lines in order: our nick (001, our NICK), our `user@host` (the
//! source of any line from us, such as our JOIN; 396 and CHGHOST change
//! it), and whether this connection's server acknowledged `echo-message`.
//! Each outgoing PRIVMSG or NOTICE then becomes, when the server will not
//! echo it, the line the server would have sent: the client's own tags
//! (`+…`), a `time` tag with the moment it was handed to the connection,
//! and our full prefix, `:nick!user@host` (just `:nick` before any line has
//! shown our user and host). With `echo-message` on nothing is made: the
//! server's copy is the row, so a message is never stored twice.
//!
//! Every outgoing message counts, the engine's own CTCP replies included,
//! because a server with `echo-message` would echo those too: the stream
//! holds the same rows either way.

use rete_engine::clock::UnixMillis;
use rete_engine::line::Line;
use rete_engine::timefmt::iso_millis;

/// What the writer knows of our side of one connection.
#[derive(Clone, Debug, Default)]
pub(super) struct Identity {
    /// Our nick on this connection (empty before 001).
    pub nick: String,
    /// `user@host`, once a line showed it.
    userhost: Option<String>,
    /// The server acknowledged `echo-message` on this connection.
    echo_message: bool,
    /// A connection started and nothing was received on it yet: the first
    /// line received says the network is back on IRC (see `hub`'s away
    /// markers).
    pub fresh: bool,
}

fn is_us(l: &Line<'_>, nick: &str) -> bool {
    !nick.is_empty()
        && l.source_nick()
            .is_some_and(|n| n.eq_ignore_ascii_case(nick))
}

impl Identity {
    /// A new connection: nothing acknowledged yet.
    pub(super) fn on_connecting(&mut self) {
        self.echo_message = false;
        self.userhost = None;
        self.fresh = true;
    }

    /// Learns from one received line.
    pub(super) fn on_received(&mut self, line: &str) {
        let Ok(l) = Line::parse(line) else { return };
        if is_us(&l, &self.nick) {
            if let Some((_, uh)) = l.source().and_then(|s| s.split_once('!')) {
                if uh.contains('@') {
                    self.userhost = Some(uh.to_owned());
                }
            }
        }
        match l.command() {
            "001" => {
                if let Some(n) = l.param(0) {
                    self.nick = n.to_owned();
                }
            }
            "NICK" if is_us(&l, &self.nick) => {
                if let Some(n) = l.param(0) {
                    self.nick = n.to_owned();
                }
            }
            // RPL_HOSTHIDDEN: `396 nick host :is now your displayed host`.
            "396" => {
                if let (Some(host), Some(uh)) = (l.param(1), self.userhost.as_mut()) {
                    if let Some((user, _)) = uh.split_once('@') {
                        *uh = format!("{user}@{host}");
                    }
                }
            }
            "CHGHOST" if is_us(&l, &self.nick) => {
                if let (Some(user), Some(host)) = (l.param(0), l.param(1)) {
                    self.userhost = Some(format!("{user}@{host}"));
                }
            }
            "CAP" => self.on_cap(&l),
            _ => {}
        }
    }

    fn on_cap(&mut self, l: &Line<'_>) {
        let (Some(sub), Some(list)) = (l.param(1), l.params().last()) else {
            return;
        };
        let names = list.split(' ').filter(|w| !w.is_empty());
        match sub {
            "ACK" => {
                for name in names {
                    match name {
                        "echo-message" => self.echo_message = true,
                        "-echo-message" => self.echo_message = false,
                        _ => {}
                    }
                }
            }
            "DEL" if names.into_iter().any(|n| n == "echo-message") => {
                self.echo_message = false;
            }
            _ => {}
        }
    }

    /// The row to store for an outgoing PRIVMSG or NOTICE, when the server
    /// will not echo it.
    pub(super) fn echo_of(&self, out: &str, time: u64) -> Option<String> {
        if self.echo_message || self.nick.is_empty() {
            return None;
        }
        let (tags, rest) = match out.strip_prefix('@') {
            Some(t) => t.split_once(' ')?,
            None => ("", out),
        };
        let rest = rest.trim_start_matches(' ');
        // A source a client put on its line is not ours to repeat.
        let rest = match rest.strip_prefix(':') {
            Some(r) => r.split_once(' ')?.1.trim_start_matches(' '),
            None => rest,
        };
        let kept: Vec<&str> = tags.split(';').filter(|t| t.starts_with('+')).collect();
        let mut line = String::with_capacity(out.len() + 64);
        line.push('@');
        for t in kept {
            line.push_str(t);
            line.push(';');
        }
        line.push_str("time=");
        line.push_str(&iso_millis(UnixMillis(time as i64)));
        line.push_str(" :");
        line.push_str(&self.nick);
        if let Some(uh) = &self.userhost {
            line.push('!');
            line.push_str(uh);
        }
        line.push(' ');
        line.push_str(rest);
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn echoes_with_our_prefix_unless_the_server_echoes() {
        let mut me = Identity::default();
        me.on_connecting();
        assert_eq!(me.echo_of("PRIVMSG #a :hi", 0), None, "no nick before 001");
        me.on_received(":irc.test 001 alice :Welcome");
        assert_eq!(
            me.echo_of("PRIVMSG #a :hi", 0).unwrap(),
            "@time=1970-01-01T00:00:00.000Z :alice PRIVMSG #a :hi"
        );
        me.on_received(":alice!al@127.0.0.1 JOIN #a");
        me.on_received(":irc.test 396 alice cloak.test :is now your displayed host");
        assert_eq!(
            me.echo_of("@+draft/reply=x;label=3 NOTICE bob :yo", 1_000)
                .unwrap(),
            "@+draft/reply=x;time=1970-01-01T00:00:01.000Z :alice!al@cloak.test NOTICE bob :yo"
        );
        me.on_received(":alice!al@cloak.test NICK :alice_");
        assert!(me
            .echo_of("PRIVMSG b :x", 0)
            .unwrap()
            .contains(":alice_!al@cloak.test "));
        me.on_received(":irc.test CAP alice_ ACK :server-time echo-message");
        assert_eq!(me.echo_of("PRIVMSG b :x", 0), None, "the server echoes");
        me.on_connecting();
        assert!(me.echo_of("PRIVMSG b :x", 0).is_some(), "a new connection");
    }
}
