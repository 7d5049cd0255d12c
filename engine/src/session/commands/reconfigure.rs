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
        let new_secrets = password
            .into_iter()
            .chain(sasl.as_ref().map(|s| s.credentials.password.as_str()));
        self.s.secrets = self.s.secrets.extended(new_secrets);
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
        for c in channels {
            check_word("channel", c)?;
            if !self.s.isupport.is_channel(c) {
                return Err(CommandError::Invalid(format!("{c} is not a channel name")));
            }
        }
        let wanted: Vec<String> = channels.iter().map(|c| self.s.fold(c)).collect();
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
            if !self.s.wanted_channels.contains_key(&self.s.fold(c)) {
                self.join(c, None)?;
            }
        }
        self.s.config.channels = channels
            .iter()
            .map(|c| ChannelSpec {
                name: (*c).to_owned(),
                key: None,
            })
            .collect();
        Ok(())
    }
}
