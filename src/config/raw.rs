//! The file's shape as serde reads it, before defaults and checks.
//!
//! Kept apart from the public model so that "absent" (e.g. no `id`, no `port`)
//! stays visible to validation, which needs it to apply defaults and to know
//! which ids to write back.

use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::model::SaslMechanismName;

/// The top level of the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub logging: bool,
    #[serde(default)]
    pub control: RawControl,
    #[serde(default)]
    pub networks: Vec<RawNetwork>,
    #[serde(default)]
    pub ignores: Vec<String>,
    #[serde(default)]
    pub display: RawDisplay,
    #[serde(default)]
    pub aliases: std::collections::BTreeMap<String, String>,
}

/// `[display]`; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDisplay {
    pub time_format: Option<String>,
    pub mirc_colours: Option<bool>,
    pub nicklist: Option<bool>,
    pub highlights: Option<Vec<String>>,
}

/// `[control]`; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawControl {
    pub enabled: Option<bool>,
    pub debug: Option<bool>,
    pub approve: Option<bool>,
    pub port: Option<u16>,
}

/// One `[[networks]]` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    pub id: Option<String>,
    pub name: String,
    pub transport: Option<String>,
    pub url: Option<String>,
    pub network: Option<String>,
    pub account: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    #[serde(default)]
    pub tls: bool,
    pub tls_fingerprint: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub nick: Option<String>,
    pub username: Option<String>,
    pub realname: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    pub password: Option<String>,
    pub sasl: Option<RawSasl>,
    #[serde(default)]
    pub channels: Vec<RawChannel>,
    pub autoconnect: Option<bool>,
    pub max_query_buffers: Option<i64>,
    pub buffer_rows: Option<i64>,
}

/// `sasl = { ... }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSasl {
    pub mechanism: SaslMechanismName,
    pub username: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    pub password: Option<String>,
}

/// A `channels` entry: either `"#name"` or `{ name = "#name", key = "..." }`.
pub(super) struct RawChannel {
    pub name: String,
    pub key: Option<String>,
}

/// The table form of a channel entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChannelTable {
    name: String,
    #[serde(default, deserialize_with = "secret")]
    key: Option<String>,
}

impl<'de> Deserialize<'de> for RawChannel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ChannelVisitor)
    }
}

/// Accepts both channel forms; a hand-written visitor (rather than an
/// untagged enum) keeps serde's precise errors, e.g. for an unknown key.
struct ChannelVisitor;

impl<'de> Visitor<'de> for ChannelVisitor {
    type Value = RawChannel;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a channel name or a table { name = \"#chan\", key = \"...\" }")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<RawChannel, E> {
        Ok(RawChannel {
            name: name.to_string(),
            key: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawChannel, A::Error> {
        let table = RawChannelTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(RawChannel {
            name: table.name,
            key: table.key,
        })
    }
}

/// Reads an optional secret string. serde's stock type errors quote the
/// offending value ("invalid type: integer `1234`"), which would print a
/// mistyped password; this one names only the type.
fn secret<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match toml::Value::deserialize(deserializer)? {
        toml::Value::String(s) => Ok(Some(s)),
        other => Err(de::Error::custom(format!(
            "invalid type: {}, expected a string (value not shown: it is a secret)",
            other.type_str()
        ))),
    }
}
