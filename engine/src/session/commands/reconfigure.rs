//! Changing a live session's settings, for a host that keeps them elsewhere
//! (rete-cloud's `config_update`): the registration settings the next
//! connection uses, and the whole list of channels to be in.

use super::{check_word, CommandError, Commands};
use crate::line::OutLine;
use crate::session::{ChannelSpec, SaslSettings};

impl Commands<'_> {
    /// Sets the username, realname, server password and SASL settings that
    /// the next registration uses; the connection now keeps its own. The
    /// new secrets join the ones the session withholds (an old one stays:
    /// it may still be in its buffers).
    pub fn set_login(
        &mut self,
        username: &str,
        realname: &str,
        password: Option<&str>,
        sasl: Option<SaslSettings>,
    ) -> Result<(), CommandError> {
        check_word("username", username)?;
        if realname.is_empty() || realname.contains(['\r', '\n', '\0']) {
            return Err(CommandError::Invalid(
                "the realname is empty or holds a line break or NUL".into(),
            ));
        }
        if password.is_some_and(|p| p.is_empty() || p.contains(['\r', '\n', '\0'])) {
            return Err(CommandError::Invalid(
                "the password is empty or holds a line break or NUL".into(),
            ));
        }
        for secret in password
            .into_iter()
            .chain(sasl.as_ref().map(|s| s.credentials.password.as_str()))
        {
            // Into the base set too, so a later transport secret (a rotated
            // ReteCloud token) does not drop it.
            self.s.learn_secret(secret);
        }
        let config = &mut self.s.config;
        config.username = username.to_owned();
        config.realname = realname.to_owned();
        config.password = password.map(str::to_owned);
        config.sasl = sasl;
        Ok(())
    }

    /// Makes `channels` exactly the channels to be in: when connected, the
    /// new ones are joined and the others parted at once; either way a
    /// reconnect joins exactly these. Nothing changes when one name is bad.
    pub fn set_channels(&mut self, channels: &[&str]) -> Result<(), CommandError> {
        let specs: Vec<ChannelSpec> = channels
            .iter()
            .map(|c| ChannelSpec {
                name: (*c).to_owned(),
                key: None,
            })
            .collect();
        self.set_channel_specs(&specs)
    }

    /// [`set_channels`](Self::set_channels) with each channel's key (the
    /// new ones are joined with it). Nothing changes when one name or key
    /// is bad.
    pub fn set_channel_specs(&mut self, channels: &[ChannelSpec]) -> Result<(), CommandError> {
        for c in channels {
            check_word("channel", &c.name)?;
            if let Some(k) = &c.key {
                check_word("key", k)?;
            }
            if !self.s.isupport.is_channel(&c.name) {
                return Err(CommandError::Invalid(format!(
                    "{} is not a channel name",
                    c.name
                )));
            }
        }
        let wanted: Vec<String> = channels.iter().map(|c| self.s.fold(&c.name)).collect();
        let gone: Vec<String> = self
            .s
            .wanted_channels
            .iter()
            .filter(|(folded, _)| !wanted.contains(folded))
            .map(|(_, spec)| spec.name.clone())
            .collect();
        for name in &gone {
            let folded = self.s.fold(name);
            self.s.wanted_channels.remove(&folded);
            if self.connected().is_ok() {
                self.send_checked(OutLine::new("PART").param(name.as_str()))?;
            }
        }
        for c in channels {
            if !self.s.wanted_channels.contains_key(&self.s.fold(&c.name)) {
                self.join(&c.name, c.key.as_deref())?;
            }
        }
        self.s.config.channels = channels.to_vec();
        Ok(())
    }

    /// Makes `nick` the nick registrations ask for first (over one taken
    /// with `/nick` before), and when connected or registering asks the
    /// server for it now.
    pub fn set_nick(&mut self, nick: &str) -> Result<(), CommandError> {
        check_word("nick", nick)?;
        if self.connected().is_ok() || self.s.registering() {
            self.nick(nick)?;
        }
        self.s.config.nick = nick.to_owned();
        self.s.preferred_nick = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::clock::{Mono, Now, UnixMillis};
    use crate::ids::SessionId;
    use crate::session::{ChannelSpec, Session, SessionConfig};

    fn now(ms: u64) -> Now {
        Now {
            mono: Mono(ms),
            wall: UnixMillis(1_790_769_600_000 + ms as i64),
        }
    }

    fn sent(s: &mut Session, at: &mut u64) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..200 {
            match s.poll_transmit(Mono(*at)) {
                Some(l) => out.push(l),
                None if s.queued_lines() > 0 => *at += 2_000,
                None => break,
            }
        }
        out
    }

    /// A session connected and past 001, its lines so far taken.
    fn registered() -> (Session, u64) {
        let mut s = session();
        let mut at = 1_000;
        s.handle_connected(now(at), "127.0.0.1:6667", None, [7; 18]);
        sent(&mut s, &mut at);
        s.handle_line(now(at), ":srv 001 rete :Welcome");
        sent(&mut s, &mut at);
        (s, at)
    }

    fn session() -> Session {
        let id = SessionId::parse("6f0c3c2e-8d1a-4a51-9b7e-4d2f5a6b7c8d").unwrap();
        let mut c = SessionConfig::new(id, "test", "rete");
        c.channels = vec![ChannelSpec {
            name: "#old".into(),
            key: None,
        }];
        Session::new(c)
    }

    #[test]
    fn login_settings_apply_from_the_next_registration() {
        let mut s = session();
        let mut at = 1_000;
        s.commands()
            .set_login("newident", "New Real", Some("pass word"), None)
            .unwrap();
        // Held at once, and still once the transport's own secrets change (a
        // rotated token), before any line sent it.
        s.set_transport_secrets(["rct1_token_one"]);
        assert!(s.view().secrets().contains_secret("xx pass word xx"));
        s.handle_connected(now(at), "127.0.0.1:6667", None, [7; 18]);
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "PASS :pass word"), "{out:?}");
        assert!(
            out.iter()
                .any(|l| l.starts_with("USER newident ") && l.ends_with(":New Real")),
            "{out:?}"
        );
        assert!(s.view().secrets().contains_secret("xx pass word xx"));
        assert!(s.commands().set_login("a b", "r", None, None).is_err());
        assert!(s
            .commands()
            .set_login("u", "r", Some("a\r\nb"), None)
            .is_err());
    }

    #[test]
    fn channels_are_joined_and_parted_at_once_and_kept_across_reconnects() {
        let mut s = session();
        let mut at = 1_000;
        s.handle_connected(now(at), "127.0.0.1:6667", None, [7; 18]);
        sent(&mut s, &mut at);
        s.handle_line(now(at), ":srv 001 rete :Welcome");
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "JOIN #old"), "{out:?}");
        s.handle_line(now(at), ":rete!r@h JOIN #old");
        sent(&mut s, &mut at);
        // A bad name changes nothing.
        assert!(s.commands().set_channels(&["#new", "bad name"]).is_err());
        assert!(sent(&mut s, &mut at).iter().all(|l| !l.contains("#new")));
        s.commands().set_channels(&["#new"]).unwrap();
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "PART #old"), "{out:?}");
        assert!(out.iter().any(|l| l == "JOIN #new"), "{out:?}");
        s.handle_disconnected(now(at), "gone");
        s.handle_connected(now(at), "127.0.0.1:6667", None, [7; 18]);
        sent(&mut s, &mut at);
        s.handle_line(now(at), ":srv 001 rete :Welcome");
        let joins: Vec<String> = sent(&mut s, &mut at)
            .into_iter()
            .filter(|l| l.starts_with("JOIN"))
            .collect();
        assert_eq!(joins, ["JOIN #new"]);
    }

    #[test]
    fn a_nick_set_is_asked_for_now_and_first_at_the_next_registration() {
        let (mut s, mut at) = registered();
        // A nick taken with /nick, which the next connection would try first.
        s.commands().nick("other").unwrap();
        sent(&mut s, &mut at);
        s.handle_line(now(at), ":rete!r@h NICK :other");
        assert!(s.commands().set_nick("a b").is_err());
        s.commands().set_nick("renamed").unwrap();
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "NICK renamed"), "{out:?}");
        s.handle_disconnected(now(at), "gone");
        s.handle_connected(now(at), "127.0.0.1:6667", None, [7; 18]);
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "NICK renamed"), "{out:?}");
    }

    #[test]
    fn channels_set_with_a_key_are_joined_with_it() {
        let (mut s, mut at) = registered();
        s.handle_line(now(at), ":rete!r@h JOIN #old");
        let specs = [
            ChannelSpec {
                name: "#old".into(),
                key: None,
            },
            ChannelSpec {
                name: "#locked".into(),
                key: Some("sesame".into()),
            },
        ];
        s.commands().set_channel_specs(&specs).unwrap();
        let out = sent(&mut s, &mut at);
        assert!(out.iter().any(|l| l == "JOIN #locked sesame"), "{out:?}");
        assert!(!out.iter().any(|l| l.starts_with("PART")), "{out:?}");
        assert!(s.view().secrets().contains_secret("a sesame b"));
    }
}
