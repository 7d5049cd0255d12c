//! `/cloud <setting> <value>`: a change to the settings the ReteCloud
//! service keeps for the current network, parsed into the protocol's own
//! [`ConfigEntry`] so nothing re-reads the text. A password's value is a
//! [`Secret`] from here on: errors name the setting, never the value.
//! And `/backlog [rows]`: how many older rows to fetch from the service.

use super::{split_word, usage, CommandSpec, InputError};
use rete_cloud_protocol::config::{ConfigEntry, SaslMechanism};
use rete_cloud_protocol::secret::Secret;

/// `none` clears an optional setting (SASL, the server password).
const NONE: &str = "none";

/// Rows `/backlog` fetches when no number is given.
pub const DEFAULT_BACKLOG_ROWS: u32 = 50;

/// The most rows one `/backlog` fetches: the protocol's `fetch` limit.
pub const MAX_BACKLOG_ROWS: u32 = rete_cloud_protocol::frame::MAX_FETCH_LIMIT;

/// Parses the number of `/backlog` (None: the default).
pub(crate) fn backlog_rows(word: Option<&str>) -> Result<u32, InputError> {
    const WHY: &str = "/backlog takes a number of rows from 1 to 500";
    let Some(word) = word else {
        return Ok(DEFAULT_BACKLOG_ROWS);
    };
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InputError::Invalid(WHY));
    }
    match word.parse::<u32>() {
        Ok(n) if (1..=MAX_BACKLOG_ROWS).contains(&n) => Ok(n),
        _ => Err(InputError::Invalid(WHY)),
    }
}

/// Parses the arguments of `/cloud`.
pub(crate) fn cloud_setting(args: &str, spec: &CommandSpec) -> Result<ConfigEntry, InputError> {
    let (name, value) = split_word(args);
    let name = name.to_ascii_lowercase().replace('_', "-");
    let value = value.trim();
    if name.is_empty() || value.is_empty() {
        return Err(usage(spec));
    }
    let word = || -> Result<String, InputError> {
        match value.split_whitespace().count() {
            1 => Ok(value.to_owned()),
            _ => Err(usage(spec)),
        }
    };
    let optional = |v: String| (!v.eq_ignore_ascii_case(NONE)).then_some(v);
    let secret = || -> Result<Option<Secret>, InputError> {
        let (v, rest) = split_word(value);
        if !rest.is_empty() {
            return Err(InputError::Invalid("a password is one word (or none)"));
        }
        Ok(optional(v.to_owned()).map(Secret::new))
    };
    Ok(match name.as_str() {
        "nick" => ConfigEntry::Nick(word()?),
        "username" => ConfigEntry::Username(word()?),
        "realname" => ConfigEntry::Realname(value.to_owned()),
        "channels" if value.eq_ignore_ascii_case(NONE) => ConfigEntry::Channels(Vec::new()),
        "channels" => ConfigEntry::Channels(
            value
                .split([',', ' '])
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        "sasl-mechanism" => ConfigEntry::SaslMechanism(match optional(word()?) {
            None => None,
            Some(m) => Some(SaslMechanism::from_name(&m).ok_or(InputError::Invalid(
                "sasl-mechanism is PLAIN, SCRAM-SHA-256, EXTERNAL or none",
            ))?),
        }),
        "sasl-username" => ConfigEntry::SaslUsername(optional(word()?)),
        "sasl-password" => ConfigEntry::SaslPassword(secret()?),
        "server-password" => ConfigEntry::ServerPassword(secret()?),
        _ => {
            return Err(InputError::Invalid(
                "unknown /cloud setting (nick, username, realname, channels, sasl-mechanism, sasl-username, sasl-password, server-password)",
            ))
        }
    })
}
