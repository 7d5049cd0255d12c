//! A network's settings as `config_update` changes them and `config` echoes
//! them.
//!
//! An entry is `{"key": <field>, "value": <value>}`: the bare `key` member
//! names the field (and stays visible when a frame is masked), the `value`
//! member carries it. Secret fields (the SASL and server passwords) are
//! [`Secret`]s going in and only [`SecretState`] coming back, so the echo
//! type cannot carry a password at all.

use crate::secret::Secret;
use serde::{Deserialize, Serialize};

/// One setting a client changes. `null` clears an optional field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "key",
    content = "value",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ConfigEntry {
    /// The nick the service registers with (and changes to now, if connected).
    Nick(String),
    /// The username (ident) for the next connection.
    Username(String),
    /// The realname for the next connection.
    Realname(String),
    /// The channels the service keeps joined; the list replaces the old one.
    Channels(Vec<String>),
    /// The SASL mechanism, or null for no SASL.
    SaslMechanism(Option<SaslMechanism>),
    /// The SASL account name.
    SaslUsername(Option<String>),
    /// The SASL password (secret: echoed back only as `set`/`unset`).
    SaslPassword(Option<Secret>),
    /// The server password (secret: echoed back only as `set`/`unset`).
    ServerPassword(Option<Secret>),
}

/// The SASL mechanisms the service can use for a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    /// PLAIN with the configured account and password.
    #[serde(rename = "PLAIN")]
    Plain,
    /// SCRAM-SHA-256 with the configured account and password.
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    /// EXTERNAL with the service's client certificate.
    #[serde(rename = "EXTERNAL")]
    External,
}

impl SaslMechanism {
    /// The mechanism's name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::External => "EXTERNAL",
        }
    }

    /// The mechanism a person names, ignoring case.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Plain, Self::ScramSha256, Self::External]
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }
}

/// One setting as the service echoes it: a secret is only `set` or `unset`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "key",
    content = "value",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ConfigShown {
    /// The nick.
    Nick(String),
    /// The username.
    Username(String),
    /// The realname.
    Realname(String),
    /// The channels kept joined.
    Channels(Vec<String>),
    /// The SASL mechanism, null for none.
    SaslMechanism(Option<SaslMechanism>),
    /// The SASL account name, null for none.
    SaslUsername(Option<String>),
    /// Whether a SASL password is stored.
    SaslPassword(SecretState),
    /// Whether a server password is stored.
    ServerPassword(SecretState),
}

/// Whether a secret setting holds a value: all an echo says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretState {
    /// A value is stored.
    Set,
    /// No value is stored.
    Unset,
}

/// The most entries one config_update may carry (one per field, and there
/// are eight fields).
pub const MAX_CONFIG_ENTRIES: usize = 8;

/// The most channels a `channels` entry may list.
pub const MAX_CHANNELS: usize = 200;

impl ConfigEntry {
    /// The field's wire name, for duplicate checks and error messages.
    pub fn key(&self) -> &'static str {
        match self {
            ConfigEntry::Nick(_) => "nick",
            ConfigEntry::Username(_) => "username",
            ConfigEntry::Realname(_) => "realname",
            ConfigEntry::Channels(_) => "channels",
            ConfigEntry::SaslMechanism(_) => "sasl_mechanism",
            ConfigEntry::SaslUsername(_) => "sasl_username",
            ConfigEntry::SaslPassword(_) => "sasl_password",
            ConfigEntry::ServerPassword(_) => "server_password",
        }
    }

    /// The echo of this entry once applied: a secret becomes `set` or
    /// `unset`, everything else is shown as given.
    pub fn shown(&self) -> ConfigShown {
        let state = |s: &Option<Secret>| match s {
            Some(_) => SecretState::Set,
            None => SecretState::Unset,
        };
        match self {
            ConfigEntry::Nick(v) => ConfigShown::Nick(v.clone()),
            ConfigEntry::Username(v) => ConfigShown::Username(v.clone()),
            ConfigEntry::Realname(v) => ConfigShown::Realname(v.clone()),
            ConfigEntry::Channels(v) => ConfigShown::Channels(v.clone()),
            ConfigEntry::SaslMechanism(v) => ConfigShown::SaslMechanism(*v),
            ConfigEntry::SaslUsername(v) => ConfigShown::SaslUsername(v.clone()),
            ConfigEntry::SaslPassword(v) => ConfigShown::SaslPassword(state(v)),
            ConfigEntry::ServerPassword(v) => ConfigShown::ServerPassword(state(v)),
        }
    }

    /// Why the service cannot apply this entry, or None. Never quotes a
    /// secret's value.
    pub fn problem(&self) -> Option<String> {
        match self {
            ConfigEntry::Nick(n) => word_problem("nick", n, 64),
            ConfigEntry::Username(u) => word_problem("username", u, 64),
            ConfigEntry::Realname(r) => text_problem("realname", r, 256),
            ConfigEntry::Channels(list) => {
                if list.len() > MAX_CHANNELS {
                    return Some(format!("channels lists more than {MAX_CHANNELS}"));
                }
                list.iter().find_map(|c| channel_problem(c))
            }
            ConfigEntry::SaslMechanism(_) => None,
            ConfigEntry::SaslUsername(u) => u
                .as_deref()
                .and_then(|u| word_problem("sasl_username", u, 256)),
            ConfigEntry::SaslPassword(p) | ConfigEntry::ServerPassword(p) => {
                let p = p.as_ref()?.expose();
                if p.is_empty() {
                    Some(format!("{} is empty (use null to clear it)", self.key()))
                } else if p.len() > 512 {
                    Some(format!("{} is longer than 512 bytes", self.key()))
                } else if p.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                    Some(format!("{} holds a CR, LF or NUL", self.key()))
                } else {
                    None
                }
            }
        }
    }
}

/// A word sent as one IRC parameter: non-empty, no space, no line break.
fn word_problem(field: &str, value: &str, max: usize) -> Option<String> {
    if value.is_empty() {
        Some(format!("{field} is empty"))
    } else if value.len() > max {
        Some(format!("{field} is longer than {max} bytes"))
    } else if value.starts_with(':')
        || value
            .bytes()
            .any(|b| matches!(b, b' ' | b'\r' | b'\n' | 0 | b','))
    {
        Some(format!(
            "{field} must be one word (no space, comma, leading colon or line break)"
        ))
    } else {
        None
    }
}

/// A trailing IRC parameter: any text but a line break or NUL.
fn text_problem(field: &str, value: &str, max: usize) -> Option<String> {
    if value.len() > max {
        Some(format!("{field} is longer than {max} bytes"))
    } else if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        Some(format!("{field} holds a CR, LF or NUL"))
    } else {
        None
    }
}

fn channel_problem(name: &str) -> Option<String> {
    let shown: String = name.chars().take(64).collect();
    if !name.starts_with(['#', '&', '+', '!']) {
        Some(format!(
            "channel {shown:?} does not start with #, &, + or !"
        ))
    } else if name.len() > 200
        || name
            .bytes()
            .any(|b| matches!(b, b' ' | b',' | 7 | b'\r' | b'\n' | 0))
    {
        Some(format!("channel {shown:?} is not a channel name"))
    } else {
        None
    }
}

/// Why a list of entries cannot be applied as one change, or None: it must
/// hold one to [`MAX_CONFIG_ENTRIES`] entries, each field at most once, each
/// valid. All or nothing: the service applies none of a refused list.
pub fn entries_problem(entries: &[ConfigEntry]) -> Option<String> {
    if entries.is_empty() {
        return Some("entries is empty".into());
    }
    if entries.len() > MAX_CONFIG_ENTRIES {
        return Some(format!("entries holds more than {MAX_CONFIG_ENTRIES}"));
    }
    for (i, e) in entries.iter().enumerate() {
        if entries[..i].iter().any(|earlier| earlier.key() == e.key()) {
            return Some(format!("{} is given twice", e.key()));
        }
        if let Some(p) = e.problem() {
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mechanism_names_are_the_wire_names() {
        for m in [
            SaslMechanism::Plain,
            SaslMechanism::ScramSha256,
            SaslMechanism::External,
        ] {
            let wire = serde_json::to_value(m).unwrap();
            assert_eq!(wire, json!(m.as_str()));
            assert_eq!(
                SaslMechanism::from_name(&m.as_str().to_lowercase()),
                Some(m)
            );
        }
        assert_eq!(SaslMechanism::from_name("DIGEST-MD5"), None);
    }

    #[test]
    fn entries_are_key_and_value() {
        let e: ConfigEntry =
            serde_json::from_value(json!({"key": "nick", "value": "rete"})).unwrap();
        assert_eq!(e, ConfigEntry::Nick("rete".into()));
        let e: ConfigEntry =
            serde_json::from_value(json!({"key": "sasl_password", "value": "hunter2"})).unwrap();
        assert_eq!(e, ConfigEntry::SaslPassword(Some(Secret::new("hunter2"))));
        assert!(!format!("{e:?}").contains("hunter2"));
        let e: ConfigEntry =
            serde_json::from_value(json!({"key": "sasl_password", "value": null})).unwrap();
        assert_eq!(e, ConfigEntry::SaslPassword(None));
        let e: ConfigEntry =
            serde_json::from_value(json!({"key": "sasl_mechanism", "value": "SCRAM-SHA-256"}))
                .unwrap();
        assert_eq!(
            e,
            ConfigEntry::SaslMechanism(Some(SaslMechanism::ScramSha256))
        );
    }

    #[test]
    fn unknown_keys_and_members_are_refused() {
        assert!(
            serde_json::from_value::<ConfigEntry>(json!({"key": "colour", "value": "red"}))
                .is_err()
        );
        assert!(serde_json::from_value::<ConfigEntry>(
            json!({"key": "nick", "value": "a", "extra": 1})
        )
        .is_err());
        assert!(serde_json::from_value::<ConfigEntry>(json!({"key": "nick", "value": 5})).is_err());
    }

    #[test]
    fn a_secret_is_echoed_only_as_set_or_unset() {
        let shown = ConfigEntry::SaslPassword(Some(Secret::new("hunter2"))).shown();
        let text = serde_json::to_string(&shown).unwrap();
        assert_eq!(text, r#"{"key":"sasl_password","value":"set"}"#);
        let shown = ConfigEntry::ServerPassword(None).shown();
        assert_eq!(
            serde_json::to_string(&shown).unwrap(),
            r#"{"key":"server_password","value":"unset"}"#
        );
    }

    #[test]
    fn problems() {
        assert!(entries_problem(&[]).is_some());
        let twice = [ConfigEntry::Nick("a".into()), ConfigEntry::Nick("b".into())];
        assert_eq!(
            entries_problem(&twice).as_deref(),
            Some("nick is given twice")
        );
        assert!(entries_problem(&[ConfigEntry::Nick("a b".into())]).is_some());
        assert!(entries_problem(&[ConfigEntry::Channels(vec!["rete".into()])]).is_some());
        assert!(entries_problem(&[ConfigEntry::Channels(vec!["#a,#b".into()])]).is_some());
        let p =
            entries_problem(&[ConfigEntry::SaslPassword(Some(Secret::new("pw\r\nQUIT")))]).unwrap();
        assert!(!p.contains("QUIT"), "{p}");
        let ok = [
            ConfigEntry::Nick("rete".into()),
            ConfigEntry::Channels(vec!["#rete".into(), "&local".into()]),
            ConfigEntry::SaslPassword(Some(Secret::new("hunter2"))),
        ];
        assert_eq!(entries_problem(&ok), None);
    }
}
