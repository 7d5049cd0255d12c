//! Turning a configured network into the engine's session spec.

use rete_actors::SessionSpec;
use rete_engine::ids::SessionId;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{ChannelSpec, SaslSettings, SessionConfig};
use rete_transports::{Backoff, ConnectConfig};
use reterm::config::{NetworkConfig, SaslMechanismName};
use std::time::Duration;

/// How long one connection attempt may take (resolve, TCP, TLS).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Reconnect delays: the first retry within a second, then doubling up to a minute.
const RECONNECT_BASE: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(60);

/// The engine's view of one `[[networks]]` table.
pub fn session_spec(net: &NetworkConfig) -> anyhow::Result<SessionSpec> {
    let id = SessionId::parse(&net.id)
        .map_err(|_| anyhow::anyhow!("network {}: id is not a UUID", net.name))?;
    let mut config = SessionConfig::new(id, &net.name, &net.nick);
    config.username = net.username.clone();
    config.realname = net.realname.clone();
    config.password = net.password.as_ref().map(|p| p.expose().to_owned());
    if let Some(max) = net.max_query_buffers {
        config.max_query_buffers = max;
    }
    if let Some(rows) = net.buffer_rows {
        config.buffer_capacity = rows;
    }
    config.channels = net
        .channels
        .iter()
        .map(|c| ChannelSpec {
            name: c.name.clone(),
            key: c.key.as_ref().map(|k| k.expose().to_owned()),
        })
        .collect();
    config.sasl = net.sasl.as_ref().map(|s| SaslSettings {
        mechanism: match s.mechanism {
            SaslMechanismName::Plain => Mechanism::Plain,
            SaslMechanismName::External => Mechanism::External,
            SaslMechanismName::ScramSha256 => Mechanism::ScramSha256,
        },
        credentials: Credentials {
            authcid: s.username.clone().unwrap_or_else(|| net.nick.clone()),
            password: s
                .password
                .as_ref()
                .map(|p| p.expose().to_owned())
                .unwrap_or_default(),
            authzid: None,
        },
    });
    if let Some(cloud) = &net.cloud {
        let session = config.id.to_string();
        let path = reterm::secrets::secrets_path()?;
        let store = super::cloud_token::SecretsFileToken {
            path,
            key: net.cloud_token_key(),
            legacy_key: net.legacy_cloud_token_key(),
        };
        return Ok(SessionSpec {
            config,
            transport: rete_transports::Transport::ReteCloud(rete_transports::CloudConfig {
                url: cloud.url.clone(),
                network: cloud.network.clone(),
                tls_fingerprint: net.tls_fingerprint.clone(),
                connect_timeout: CONNECT_TIMEOUT,
                token_store: std::sync::Arc::new(store),
                // Without a home the points live in memory: a restart
                // starts live, with each channel's newest rows.
                resume_store: std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(|home| {
                        let file = super::cloud_resume::ResumeFile::of(
                            std::path::Path::new(&home),
                            &session,
                        );
                        std::sync::Arc::new(file)
                            as std::sync::Arc<dyn rete_transports::CloudResumeStore>
                    }),
            }),
            autoconnect: net.autoconnect,
            reconnect: Backoff::new(RECONNECT_BASE, RECONNECT_MAX),
        });
    }
    let connect = ConnectConfig {
        host: net.host.clone(),
        port: net.port,
        tls: net.tls,
        tls_fingerprint: net.tls_fingerprint.clone(),
        client_cert: net.tls_cert.clone(),
        connect_timeout: CONNECT_TIMEOUT,
    };
    Ok(SessionSpec {
        config,
        transport: rete_transports::Transport::Irc(connect),
        autoconnect: net.autoconnect,
        reconnect: Backoff::new(RECONNECT_BASE, RECONNECT_MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::session_spec;

    fn network(extra: &str) -> reterm::config::NetworkConfig {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reterm.toml");
        let text = format!(
            "[[networks]]\nid = \"0F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B\"\nname = \"a\"\n\
             host = \"irc.example\"\nnick = \"me\"\n{extra}"
        );
        std::fs::write(&path, text).expect("write config");
        let loaded = reterm::config::load_or_create(&path).expect("load");
        loaded.config.networks[0].clone()
    }

    #[test]
    fn max_query_buffers_reaches_the_engine_and_defaults_to_its_own() {
        let spec = session_spec(&network("max_query_buffers = 7\n")).expect("spec");
        assert_eq!(spec.config.max_query_buffers, 7);
        let default = rete_engine::session::SessionConfig::new(
            rete_engine::ids::SessionId::parse("0F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B").expect("id"),
            "a",
            "me",
        )
        .max_query_buffers;
        let spec = session_spec(&network("")).expect("spec");
        assert_eq!(spec.config.max_query_buffers, default);
    }

    #[test]
    fn buffer_rows_reaches_the_engine_and_defaults_to_its_own() {
        let spec = session_spec(&network("buffer_rows = 1000\n")).expect("spec");
        assert_eq!(spec.config.buffer_capacity, 1000);
        let spec = session_spec(&network("")).expect("spec");
        assert_eq!(
            spec.config.buffer_capacity,
            rete_engine::buffer::DEFAULT_CAPACITY
        );
    }
}
