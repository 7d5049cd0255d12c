//! Turns the raw file shape into a checked [`Config`], applying defaults.
//!
//! Errors here have no file position (the span is gone after serde); they name
//! the network instead, and never include a secret value.

use rete_redact::Secret;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::model::{
    ChannelConfig, CloudNetworkConfig, Config, ControlConfig, DisplayConfig, NetworkConfig,
    SaslConfig,
};
use super::raw::{RawChannel, RawConfig, RawControl, RawDisplay, RawNetwork, RawSasl};

/// Where the file lives, for error messages and for resolving paths in it.
pub(super) struct Context<'a> {
    /// The config file.
    pub path: &'a Path,
    /// `$HOME`, for `~/` in paths; `None` when unset.
    pub home: Option<&'a Path>,
}

/// A config plus the networks whose ids were generated (index, id), which the
/// caller writes back to the file, and what was adjusted to tell the user once.
pub(super) struct Validated {
    pub config: Config,
    pub generated_ids: Vec<(usize, String)>,
    pub notices: Vec<String>,
}

/// Checks `raw`; `new_id` supplies ids for networks that have none.
pub(super) fn validate(
    raw: RawConfig,
    ctx: &Context<'_>,
    mut new_id: impl FnMut() -> String,
) -> Result<Validated, ConfigError> {
    let mut notices = Vec::new();
    let control =
        control(raw.control, ctx, &mut notices).map_err(|m| ConfigError::invalid(ctx.path, m))?;
    let mut networks = Vec::with_capacity(raw.networks.len());
    let mut generated_ids = Vec::new();
    let mut names = HashSet::new();
    let mut ids = HashSet::new();
    for (index, raw_network) in raw.networks.into_iter().enumerate() {
        let label = network_label(index, &raw_network.name);
        let had_id = raw_network.id.is_some();
        let network = network(raw_network, ctx, &mut new_id)
            .map_err(|m| ConfigError::invalid(ctx.path, format!("{label}: {m}")))?;
        if !names.insert(network.name.to_ascii_lowercase()) {
            return Err(ConfigError::invalid(
                ctx.path,
                format!("{label}: duplicate network name \"{}\"", network.name),
            ));
        }
        if !ids.insert(network.id.clone()) {
            return Err(ConfigError::invalid(
                ctx.path,
                format!("{label}: duplicate network id {}", network.id),
            ));
        }
        if !had_id {
            generated_ids.push((index, network.id.clone()));
        }
        networks.push(network);
    }
    Ok(Validated {
        config: Config {
            logging: raw.logging,
            control,
            networks,
            ignores: ignores(raw.ignores).map_err(|m| ConfigError::invalid(ctx.path, m))?,
            display: display(raw.display).map_err(|m| ConfigError::invalid(ctx.path, m))?,
            aliases: aliases(raw.aliases).map_err(|m| ConfigError::invalid(ctx.path, m))?,
        },
        generated_ids,
        notices,
    })
}

/// `[aliases]`: one-word names (kept lower-case) for commands.
fn aliases(
    raw: std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    raw.into_iter()
        .map(|(name, expansion)| {
            if let Some(problem) = super::aliases::alias_name_problem(&name)
                .or_else(|| super::aliases::alias_expansion_problem(&expansion))
            {
                return Err(format!("aliases: {problem}"));
            }
            let expansion = expansion.trim().trim_start_matches('/').to_owned();
            Ok((name.to_lowercase(), expansion))
        })
        .collect()
}

/// `ignores`: each a non-empty mask without spaces.
fn ignores(masks: Vec<String>) -> Result<Vec<String>, String> {
    for mask in &masks {
        if let Some(problem) = super::ignores::mask_problem(mask) {
            return Err(format!("ignores: {problem}"));
        }
    }
    Ok(masks)
}

/// `[display]`, defaults applied; the time format must be one chrono formats.
fn display(raw: RawDisplay) -> Result<DisplayConfig, String> {
    let defaults = DisplayConfig::default();
    let time_format = raw.time_format.unwrap_or(defaults.time_format);
    if let Some(problem) = super::display::time_format_problem(&time_format) {
        return Err(format!("display.{problem}"));
    }
    Ok(DisplayConfig {
        time_format,
        mirc_colours: raw.mirc_colours.unwrap_or(defaults.mirc_colours),
        nicklist: raw.nicklist.unwrap_or(defaults.nicklist),
        highlights: raw.highlights.unwrap_or_default(),
    })
}

/// How errors refer to a network: by name when it has a usable one.
fn network_label(index: usize, name: &str) -> String {
    if name.trim().is_empty() {
        format!("networks[{index}]")
    } else {
        format!("network \"{name}\"")
    }
}

/// The lowest port the control server listens on; a lower one in the file is
/// clamped up to it, as `/set control.port` clamps.
pub const LOWEST_CONTROL_PORT: u16 = 1024;

fn control(
    raw: RawControl,
    ctx: &Context<'_>,
    notices: &mut Vec<String>,
) -> Result<ControlConfig, String> {
    let defaults = ControlConfig::default();
    let mut port = raw.port.unwrap_or(defaults.port);
    if port == 0 {
        return Err("control: port must be between 1 and 65535".to_string());
    }
    if port < LOWEST_CONTROL_PORT {
        notices.push(format!(
            "control.port {port} in {} is below {LOWEST_CONTROL_PORT}: using {LOWEST_CONTROL_PORT}",
            ctx.path.display()
        ));
        port = LOWEST_CONTROL_PORT;
    }
    Ok(ControlConfig {
        enabled: raw.enabled.unwrap_or(defaults.enabled),
        debug: raw.debug.unwrap_or(defaults.debug),
        approve: raw.approve.unwrap_or(defaults.approve),
        port,
    })
}

fn network(
    mut raw: RawNetwork,
    ctx: &Context<'_>,
    new_id: &mut impl FnMut() -> String,
) -> Result<NetworkConfig, String> {
    let id = match raw.id.take() {
        Some(id) => normalize_id(&id)?,
        None => new_id(),
    };
    let name = token("name", raw.name.clone())?;
    match raw.transport.as_deref() {
        None | Some("irc") => {}
        Some("retecloud") => return cloud_network(id, name, raw),
        Some(other) => {
            return Err(format!(
                "transport must be \"irc\" or \"retecloud\" (got \"{other}\")"
            ))
        }
    }
    for (key, set) in [
        ("url", raw.url.is_some()),
        ("network", raw.network.is_some()),
        ("account", raw.account.is_some()),
    ] {
        if set {
            return Err(format!("{key} is only for transport = \"retecloud\""));
        }
    }
    let host = token("host", raw.host.unwrap_or_default())?;
    let nick = token("nick", raw.nick.unwrap_or_default())?;
    let username = match raw.username {
        Some(username) => token("username", username)?,
        None => nick.clone(),
    };
    let realname = match raw.realname {
        Some(realname) if realname.trim().is_empty() => return Err("realname is empty".into()),
        Some(realname) => realname,
        None => nick.clone(),
    };
    let port = match raw.port {
        Some(0) => return Err("port must be between 1 and 65535".into()),
        Some(port) => port,
        None if raw.tls => 6697,
        None => 6667,
    };
    let tls_fingerprint = raw
        .tls_fingerprint
        .map(|fp| fingerprint(&fp, raw.tls))
        .transpose()?;
    let tls_cert = raw
        .tls_cert
        .map(|cert| client_cert(cert, raw.tls, ctx))
        .transpose()?;
    let sasl = raw
        .sasl
        .map(|sasl| sasl_config(sasl, tls_cert.is_some()))
        .transpose()?;
    let channels = channels(raw.channels)?;
    let max_query_buffers = at_least("max_query_buffers", raw.max_query_buffers, 1)?;
    let buffer_rows = at_least("buffer_rows", raw.buffer_rows, MIN_BUFFER_ROWS)?;
    Ok(NetworkConfig {
        id,
        name,
        host,
        port,
        tls: raw.tls,
        tls_fingerprint,
        tls_cert,
        nick,
        username,
        realname,
        password: raw.password.map(Secret::new),
        sasl,
        channels,
        autoconnect: raw.autoconnect.unwrap_or(true),
        max_query_buffers,
        buffer_rows,
        cloud: None,
    })
}

/// The fewest rows a buffer may keep: a chat history replay (100 rows at a
/// time) must fit in one.
const MIN_BUFFER_ROWS: usize = 100;

/// An optional count that must be at least `min`, named in the error.
fn at_least(key: &str, value: Option<i64>, min: usize) -> Result<Option<usize>, String> {
    value
        .map(|n| match usize::try_from(n) {
            Ok(n) if n >= min => Ok(n),
            _ => Err(format!("{key} must be at least {min} (got {n})")),
        })
        .transpose()
}

/// A `transport = "retecloud"` network: a `url` and the service's
/// `network`; the IRC settings (server, password, SASL, channels) live in
/// the service, so giving them here is an error rather than ignored.
fn cloud_network(id: String, name: String, raw: RawNetwork) -> Result<NetworkConfig, String> {
    let refused = [
        ("host", raw.host.is_some()),
        ("port", raw.port.is_some()),
        ("tls", raw.tls),
        ("tls_cert", raw.tls_cert.is_some()),
        ("username", raw.username.is_some()),
        ("realname", raw.realname.is_some()),
        ("password", raw.password.is_some()),
        ("sasl", raw.sasl.is_some()),
        ("channels", !raw.channels.is_empty()),
    ];
    if let Some((key, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(format!(
            "{key} is not used with transport = \"retecloud\": the service holds the IRC settings"
        ));
    }
    let url = raw
        .url
        .ok_or("url is required with transport = \"retecloud\"")?;
    let parsed = rete_transports::websocket::parse_url(&url).map_err(|e| format!("url: {e}"))?;
    let network = raw.network.ok_or(
        "network (the service's id of the network) is required with transport = \"retecloud\"",
    )?;
    let valid_id = (1..=64).contains(&network.len())
        && network
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".:_-".contains(&b));
    if !valid_id {
        return Err("network must be 1 to 64 of A-Z a-z 0-9 . _ : -".into());
    }
    let account = raw.account.map(|a| token("account", a)).transpose()?;
    let tls_fingerprint = raw
        .tls_fingerprint
        .map(|fp| fingerprint(&fp, parsed.tls))
        .transpose()
        .map_err(|e| e.replace("needs tls = true", "needs a wss:// url"))?;
    // The service's 001 names the nick; this one is used only before it.
    let nick = match raw.nick {
        Some(n) => token("nick", n)?,
        None => name.clone(),
    };
    let max_query_buffers = at_least("max_query_buffers", raw.max_query_buffers, 1)?;
    let buffer_rows = at_least("buffer_rows", raw.buffer_rows, MIN_BUFFER_ROWS)?;
    Ok(NetworkConfig {
        id,
        name,
        host: parsed.host,
        port: parsed.port,
        tls: parsed.tls,
        tls_fingerprint,
        tls_cert: None,
        username: nick.clone(),
        realname: nick.clone(),
        nick,
        password: None,
        sasl: None,
        channels: Vec::new(),
        autoconnect: raw.autoconnect.unwrap_or(true),
        max_query_buffers,
        buffer_rows,
        cloud: Some(CloudNetworkConfig {
            url,
            network,
            account,
        }),
    })
}

/// Ids are accepted in any case (people paste them) but stored upper-case so
/// equality and logs are uniform.
fn normalize_id(id: &str) -> Result<String, String> {
    uuid::Uuid::try_parse(id.trim())
        .map(|uuid| uuid.hyphenated().to_string().to_ascii_uppercase())
        .map_err(|_| format!("id \"{id}\" is not a UUID"))
}

/// A required single-word value (name, host, nick, username).
fn token(key: &str, value: String) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err(format!("{key} is missing or empty"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{key} must not contain spaces"));
    }
    Ok(value)
}

/// Accepts `ab12...` or `AB:12:...`; stored as 64 lower-case hex digits.
fn fingerprint(value: &str, tls: bool) -> Result<String, String> {
    if !tls {
        return Err("tls_fingerprint needs tls = true".into());
    }
    let hex: String = value.chars().filter(|&c| c != ':').collect();
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("tls_fingerprint must be a SHA-256 digest: 64 hex digits".into());
    }
    Ok(hex.to_ascii_lowercase())
}

/// `~/x` is taken from `$HOME`; a relative path from the config file's folder,
/// so the file means the same whatever the working directory.
fn client_cert(cert: PathBuf, tls: bool, ctx: &Context<'_>) -> Result<PathBuf, String> {
    if !tls {
        return Err("tls_cert needs tls = true".into());
    }
    if cert.as_os_str().is_empty() {
        return Err("tls_cert is empty".into());
    }
    if let Ok(rest) = cert.strip_prefix("~") {
        let home = ctx
            .home
            .ok_or("tls_cert starts with ~ but HOME is not set")?;
        return Ok(home.join(rest));
    }
    if cert.is_absolute() {
        return Ok(cert);
    }
    let base = ctx.path.parent().unwrap_or(Path::new(""));
    Ok(base.join(cert))
}

fn sasl_config(raw: RawSasl, has_cert: bool) -> Result<SaslConfig, String> {
    if raw.mechanism.needs_password() && raw.password.is_none() {
        return Err(format!("sasl {} needs a password", raw.mechanism));
    }
    if !raw.mechanism.needs_password() && !has_cert {
        return Err(format!("sasl {} needs tls_cert", raw.mechanism));
    }
    if raw.username.as_deref().is_some_and(|u| u.trim().is_empty()) {
        return Err("sasl username is empty".into());
    }
    Ok(SaslConfig {
        mechanism: raw.mechanism,
        username: raw.username,
        password: raw.password.map(Secret::new),
    })
}

fn channels(raw: Vec<RawChannel>) -> Result<Vec<ChannelConfig>, String> {
    let mut seen = HashSet::new();
    raw.into_iter()
        .map(|channel| {
            let name = channel.name;
            if name.is_empty() {
                return Err("channel name is empty".to_string());
            }
            if name
                .chars()
                .any(|c| c == ',' || c.is_whitespace() || c.is_control())
            {
                return Err(format!(
                    "channel name \"{}\" must not contain spaces or commas",
                    name.escape_debug()
                ));
            }
            if !seen.insert(name.to_ascii_lowercase()) {
                return Err(format!("channel \"{name}\" is listed twice"));
            }
            if channel
                .key
                .as_deref()
                .is_some_and(|k| k.is_empty() || k.chars().any(|c| c == ',' || c.is_whitespace()))
            {
                return Err(format!(
                    "key of channel \"{name}\" must be non-empty, without spaces or commas"
                ));
            }
            Ok(ChannelConfig {
                name,
                key: channel.key.map(Secret::new),
            })
        })
        .collect()
}
