//! A person's change to a ReteCloud network's settings (`config_update`):
//! what the caller of
//! [`SessionSender::cloud_settings`](crate::SessionSender::cloud_settings)
//! waits for, and why a change did not happen.
//!
//! The service applies an update whole or not at all, and answers with the
//! settings it now holds (secrets only as `set`/`unset`). The answer is
//! awaited, never assumed: a change is not queued across reconnects,
//! because the person asked for it now and should see whether it happened.

use rete_cloud_protocol::config::{ConfigShown, SecretState};
use tokio::sync::oneshot;

/// Why a settings change was not made (or may not have been).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloudSettingsError {
    /// The session talks to an IRC server directly, not through ReteCloud.
    #[error("this session does not run through ReteCloud")]
    NotCloud,
    /// The session is not attached to the service now.
    #[error("not attached to the ReteCloud service")]
    NotAttached,
    /// The change breaks a rule of the protocol (checked before sending;
    /// nothing was sent).
    #[error("{0}")]
    Invalid(String),
    /// The service refused it; nothing was changed.
    #[error("the service refused the change ({code}): {message}")]
    Refused {
        /// The stable error code.
        code: &'static str,
        /// The service's reason (it never holds a secret value).
        message: String,
    },
    /// The connection closed before the service answered: the change may
    /// or may not have been made.
    #[error("the connection to the service closed before it answered; the change may or may not have been made")]
    NoAnswer,
}

/// What the session actor answers a settings change with: the settings
/// as the service now shows them, in one line (see [`shown_text`]).
pub(crate) type SettingsReply = oneshot::Sender<Result<String, CloudSettingsError>>;

/// The echoed settings in one line for the person, e.g.
/// `nick rete2, sasl_password set`. Holds no secret: the echo type
/// cannot carry one.
pub(crate) fn shown_text(entries: &[ConfigShown]) -> String {
    let state = |s: &SecretState| match s {
        SecretState::Set => "set",
        SecretState::Unset => "unset",
    };
    let none = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    entries
        .iter()
        .map(|e| match e {
            ConfigShown::Nick(v) => format!("nick {v}"),
            ConfigShown::Username(v) => format!("username {v}"),
            ConfigShown::Realname(v) => format!("realname {v}"),
            ConfigShown::Channels(v) if v.is_empty() => "channels none".into(),
            ConfigShown::Channels(v) => format!("channels {}", v.join(",")),
            ConfigShown::SaslMechanism(m) => {
                format!("sasl_mechanism {}", m.map(|m| m.as_str()).unwrap_or("none"))
            }
            ConfigShown::SaslUsername(v) => format!("sasl_username {}", none(v)),
            ConfigShown::SaslPassword(s) => format!("sasl_password {}", state(s)),
            ConfigShown::ServerPassword(s) => format!("server_password {}", state(s)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_cloud_protocol::config::SaslMechanism;

    #[test]
    fn the_echo_reads_as_one_line_with_secrets_as_set_or_unset() {
        let shown = shown_text(&[
            ConfigShown::Nick("rete2".into()),
            ConfigShown::Channels(vec!["#a".into(), "#b".into()]),
            ConfigShown::SaslMechanism(Some(SaslMechanism::ScramSha256)),
            ConfigShown::SaslUsername(None),
            ConfigShown::SaslPassword(SecretState::Set),
            ConfigShown::ServerPassword(SecretState::Unset),
        ]);
        assert_eq!(
            shown,
            "nick rete2, channels #a,#b, sasl_mechanism SCRAM-SHA-256, sasl_username none, \
             sasl_password set, server_password unset"
        );
    }
}
