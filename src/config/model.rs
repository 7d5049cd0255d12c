//! The validated configuration, as the rest of `reterm` sees it.
//!
//! Every default is already applied and every value checked, so callers never
//! re-validate. Secrets stay plain `String`s (they must be sent as-is), but the
//! `Debug` impls mask them so a stray `{:?}` in a log cannot leak them.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use rete_redact::Secret;
use serde::{de, Deserialize, Deserializer};

/// Port of the control server when the file does not say.
pub const DEFAULT_CONTROL_PORT: u16 = 7422;

/// The whole config file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// Per-buffer transcripts under `~/.rete/logs`; off unless asked for, since
    /// logs hold other people's messages.
    pub logging: bool,
    /// The AI-access control server.
    pub control: ControlConfig,
    /// Networks in file order (the order `/connect` lists them).
    pub networks: Vec<NetworkConfig>,
    /// `/ignore` masks (`nick!user@host` with `*` and `?`; a bare nick is
    /// `nick!*@*`): their messages are not shown.
    pub ignores: Vec<String>,
    /// How the full screen draws.
    pub display: DisplayConfig,
    /// `[aliases]`: `/NAME args` runs `/EXPANSION args` (`/alias` saves
    /// them); names lower-case.
    pub aliases: std::collections::BTreeMap<String, String>,
}

/// `[display]`: what `/set time_format|mirc_colours|nicklist|highlights`
/// saves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayConfig {
    /// strftime format of row times (checked when loaded).
    pub time_format: String,
    /// Render mIRC formatting (off: strip it).
    pub mirc_colours: bool,
    /// Show the nick list pane beside channels.
    pub nicklist: bool,
    /// Words that highlight like the nick.
    pub highlights: Vec<String>,
}

/// The default row time format.
pub const DEFAULT_TIME_FORMAT: &str = "%H:%M";

impl Default for DisplayConfig {
    fn default() -> Self {
        DisplayConfig {
            time_format: DEFAULT_TIME_FORMAT.to_owned(),
            mirc_colours: true,
            nicklist: true,
            highlights: Vec::new(),
        }
    }
}

/// Settings of the control server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// Whether the server listens at all; off by default because it gives
    /// another program access to the user's IRC sessions.
    pub enabled: bool,
    /// Verbose control-server diagnostics.
    pub debug: bool,
    /// Each line an agent sends with send_raw waits for the person's
    /// answer (beyond the contract; saved, off by default).
    pub approve: bool,
    /// Loopback port to listen on.
    pub port: u16,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            enabled: false,
            debug: false,
            approve: false,
            port: DEFAULT_CONTROL_PORT,
        }
    }
}

/// One IRC network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkConfig {
    /// Stable upper-case UUID: survives renames, so logs and the control
    /// server can refer to a network reliably.
    pub id: String,
    /// Short unique name used by `/connect NAME`.
    pub name: String,
    /// Server host name or address.
    pub host: String,
    /// Server port (default 6697 with TLS, else 6667).
    pub port: u16,
    /// Whether to use TLS.
    pub tls: bool,
    /// Lower-case SHA-256 hex of a self-signed server certificate to accept.
    pub tls_fingerprint: Option<String>,
    /// Client certificate (PEM, with its key) for SASL EXTERNAL; absolute.
    pub tls_cert: Option<PathBuf>,
    /// Nickname to register with.
    pub nick: String,
    /// User name (ident); defaults to the nick.
    pub username: String,
    /// Real name (gecos); defaults to the nick.
    pub realname: String,
    /// Server password (`PASS`).
    pub password: Option<Secret>,
    /// SASL authentication.
    pub sasl: Option<SaslConfig>,
    /// Channels joined after registration.
    pub channels: Vec<ChannelConfig>,
    /// Connect at start-up.
    pub autoconnect: bool,
    /// Query buffers others may open on this network; `None` is the engine's
    /// default. Past it their messages stay in the server buffer.
    pub max_query_buffers: Option<usize>,
    /// Rows each of this network's buffers keeps (its scrollback); `None` is
    /// the engine's default. Past it the oldest row is dropped.
    pub buffer_rows: Option<usize>,
    /// Set when the network is reached through a ReteCloud service
    /// (`transport = "retecloud"`); then `host`, `port` and `tls` are the
    /// URL's, and the IRC settings live in the service.
    pub cloud: Option<CloudNetworkConfig>,
}

/// A network reached through a ReteCloud service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudNetworkConfig {
    /// The service's WebSocket URL (`wss://`, or `ws://` to loopback).
    pub url: String,
    /// The service's id of the network (`rete-cloud network add`).
    pub network: String,
    /// The account on the service, when one reterm uses more than one
    /// there: networks of different accounts keep different tokens. Unset,
    /// every network with this `url` is of one account.
    pub account: Option<String>,
}

impl NetworkConfig {
    /// The secrets-file key of this network's ReteCloud token: one per
    /// service account (its URL, and `account` when given), shared by
    /// every network of the account there. The service gives an account
    /// one token, and each of its sessions is rotated along the same chain,
    /// so two networks keeping a copy each would each go on presenting a
    /// token the other had replaced, until one past its grace revoked the
    /// chain.
    pub fn cloud_token_key(&self) -> String {
        match &self.cloud {
            Some(CloudNetworkConfig {
                url,
                account: Some(account),
                ..
            }) => format!("retecloud-token-{url}#{account}"),
            Some(cloud) => format!("retecloud-token-{}", cloud.url),
            None => self.legacy_cloud_token_key(),
        }
    }

    /// Where the token was kept before it was one per service (by the
    /// network's id): read when the service's key holds none.
    pub fn legacy_cloud_token_key(&self) -> String {
        format!("retecloud-token-{}", self.id)
    }
}

/// SASL mechanisms `reterm` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanismName {
    /// Username and password in clear (over TLS).
    Plain,
    /// Identity from the TLS client certificate.
    External,
    /// Salted challenge-response; the password never crosses the wire.
    ScramSha256,
}

impl SaslMechanismName {
    /// The name as sent in `AUTHENTICATE`.
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanismName::Plain => "PLAIN",
            SaslMechanismName::External => "EXTERNAL",
            SaslMechanismName::ScramSha256 => "SCRAM-SHA-256",
        }
    }

    /// Whether the mechanism cannot work without a password.
    pub fn needs_password(self) -> bool {
        !matches!(self, SaslMechanismName::External)
    }
}

/// Mechanism names are matched case-insensitively, as IRC servers advertise
/// them upper-case but people type them either way.
impl FromStr for SaslMechanismName {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        [
            SaslMechanismName::Plain,
            SaslMechanismName::External,
            SaslMechanismName::ScramSha256,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            format!("unknown SASL mechanism \"{name}\", expected PLAIN, EXTERNAL or SCRAM-SHA-256")
        })
    }
}

impl<'de> Deserialize<'de> for SaslMechanismName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(de::Error::custom)
    }
}

impl fmt::Display for SaslMechanismName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SASL settings of a network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaslConfig {
    /// Which mechanism.
    pub mechanism: SaslMechanismName,
    /// Account name; the nick is used when absent.
    pub username: Option<String>,
    /// Account password (PLAIN and SCRAM).
    pub password: Option<Secret>,
}

/// A channel to join, with its key if it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Channel name including its prefix (`#rete`).
    pub name: String,
    /// Channel key (`+k`).
    pub key: Option<Secret>,
}
