//! The words after `/control grant add`: `NAME [networks=a,b]
//! [buffers=#rust*,#x] [queries=on|off] [tier=read|debug|send]
//! [expires=8h|never]`, read into a [`GrantSpec`] or refused with a reason
//! the person is shown. Nothing is half-read: any bad word refuses it all.

use super::scope::Scope;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a grant lasts when `expires=` is not given.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(8 * 60 * 60);

/// The longest grant name: it names a file (`~/.rete/grants/NAME.json`).
pub const MAX_NAME_LEN: usize = 32;

/// What a grant may do beyond reading its scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The read tools and subscriptions, within its scope.
    #[default]
    Read,
    /// Read, and the debug tools (raw and log lines naming only its scope).
    Debug,
    /// Debug, and sending PRIVMSG, NOTICE and TAGMSG to its scope (while
    /// control.send is on).
    Send,
}

impl Tier {
    /// The word that names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Debug => "debug",
            Tier::Send => "send",
        }
    }
}

/// A grant as the person asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSpec {
    /// Its name: 1 to 32 of letters, digits, `-` and `_`.
    pub name: String,
    /// What it covers.
    pub scope: Scope,
    /// What it may do.
    pub tier: Tier,
    /// How long it lasts; None for never.
    pub expires: Option<Duration>,
}

/// Why the words do not describe a grant: the text the person is shown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(String);

fn refuse<T>(why: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(why.into()))
}

impl GrantSpec {
    /// Reads `NAME key=value…`.
    pub fn parse(words: &[&str]) -> Result<GrantSpec, SpecError> {
        let Some((name, settings)) = words.split_first() else {
            return refuse("a grant needs a name");
        };
        check_name(name)?;
        let mut spec = GrantSpec {
            name: (*name).to_owned(),
            scope: Scope::default(),
            tier: Tier::default(),
            expires: Some(DEFAULT_EXPIRY),
        };
        let mut seen: Vec<&str> = Vec::new();
        for word in settings {
            let Some((key, value)) = word.split_once('=') else {
                return refuse(format!("`{word}` is not key=value"));
            };
            if seen.contains(&key) {
                return refuse(format!("`{key}` is given twice"));
            }
            seen.push(key);
            match key {
                "networks" => spec.scope.networks = list(key, value)?,
                "buffers" => {
                    let globs = list(key, value)?;
                    if let Some(bad) = globs.iter().find(|g| !g.starts_with(['#', '&', '!', '+'])) {
                        return refuse(format!(
                            "buffers are channels: `{bad}` does not start with #, &, ! or +"
                        ));
                    }
                    spec.scope.buffers = globs;
                }
                "queries" => spec.scope.queries = on_off(value)?,
                "tier" => {
                    spec.tier = match value {
                        "read" => Tier::Read,
                        "debug" => Tier::Debug,
                        "send" => Tier::Send,
                        _ => return refuse(format!("tier is read, debug or send, not `{value}`")),
                    }
                }
                "expires" => spec.expires = expiry(value)?,
                _ => {
                    return refuse(format!(
                        "unknown setting `{key}` (networks, buffers, queries, tier, expires)"
                    ))
                }
            }
        }
        Ok(spec)
    }
}

fn check_name(name: &str) -> Result<(), SpecError> {
    let fits = (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fits {
        Ok(())
    } else {
        refuse(format!(
            "a grant's name is 1 to {MAX_NAME_LEN} of letters, digits, - and _"
        ))
    }
}

fn list(key: &str, value: &str) -> Result<Vec<String>, SpecError> {
    let items: Vec<String> = value.split(',').map(str::to_owned).collect();
    if items
        .iter()
        .any(|i| i.is_empty() || i.chars().any(char::is_whitespace))
    {
        return refuse(format!("{key}= takes names separated by commas"));
    }
    Ok(items)
}

fn on_off(value: &str) -> Result<bool, SpecError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => refuse(format!("queries is on or off, not `{value}`")),
    }
}

/// `never`, or a number and a unit: `90s`, `30m`, `8h`, `7d`.
fn expiry(value: &str) -> Result<Option<Duration>, SpecError> {
    if value == "never" {
        return Ok(None);
    }
    let bad = || {
        SpecError(format!(
            "expires is never or a number with s, m, h or d, not `{value}`"
        ))
    };
    let unit = value.chars().last().ok_or_else(bad)?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 60 * 60,
        'd' => 24 * 60 * 60,
        _ => return Err(bad()),
    };
    let count: u64 = value[..value.len() - 1].parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let total = count.checked_mul(seconds).ok_or_else(bad)?;
    Ok(Some(Duration::from_secs(total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_alone_is_read_only_channels_everywhere_for_eight_hours() {
        let spec = GrantSpec::parse(&["watcher"]).unwrap();
        assert_eq!(spec.name, "watcher");
        assert_eq!(spec.scope, Scope::default());
        assert!(!spec.scope.queries);
        assert_eq!(spec.tier, Tier::Read);
        assert_eq!(spec.expires, Some(DEFAULT_EXPIRY));
    }

    #[test]
    fn every_setting_is_read() {
        let spec = GrantSpec::parse(&[
            "rust-bot",
            "networks=libera,oftc",
            "buffers=#rust*,&local",
            "queries=on",
            "tier=send",
            "expires=never",
        ])
        .unwrap();
        assert_eq!(spec.scope.networks, ["libera", "oftc"]);
        assert_eq!(spec.scope.buffers, ["#rust*", "&local"]);
        assert!(spec.scope.queries);
        assert_eq!(spec.tier, Tier::Send);
        assert_eq!(spec.expires, None);
        assert_eq!(
            GrantSpec::parse(&["a", "expires=90s"]).unwrap().expires,
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            GrantSpec::parse(&["a", "expires=2d"]).unwrap().expires,
            Some(Duration::from_secs(2 * 86_400))
        );
    }

    #[test]
    fn bad_words_refuse_the_whole_grant_with_a_reason() {
        for (words, why) in [
            (vec![], "a grant needs a name"),
            (
                vec!["a b"],
                "a grant's name is 1 to 32 of letters, digits, - and _",
            ),
            (
                vec!["../x"],
                "a grant's name is 1 to 32 of letters, digits, - and _",
            ),
            (vec!["a", "tier"], "`tier` is not key=value"),
            (
                vec!["a", "tier=admin"],
                "tier is read, debug or send, not `admin`",
            ),
            (vec!["a", "queries=yes"], "queries is on or off, not `yes`"),
            (
                vec!["a", "buffers=rust"],
                "buffers are channels: `rust` does not start with #, &, ! or +",
            ),
            (
                vec!["a", "networks=a,,b"],
                "networks= takes names separated by commas",
            ),
            (
                vec!["a", "expires=0h"],
                "expires is never or a number with s, m, h or d, not `0h`",
            ),
            (
                vec!["a", "expires=8w"],
                "expires is never or a number with s, m, h or d, not `8w`",
            ),
            (
                vec!["a", "expires=h"],
                "expires is never or a number with s, m, h or d, not `h`",
            ),
            (vec!["a", "tier=read", "tier=send"], "`tier` is given twice"),
            (
                vec!["a", "colour=red"],
                "unknown setting `colour` (networks, buffers, queries, tier, expires)",
            ),
        ] {
            assert_eq!(
                GrantSpec::parse(&words).unwrap_err().to_string(),
                why,
                "{words:?}"
            );
        }
        assert!(GrantSpec::parse(&[&"x".repeat(33)]).is_err());
        assert!(GrantSpec::parse(&[&"x".repeat(32)]).is_ok());
    }
}
