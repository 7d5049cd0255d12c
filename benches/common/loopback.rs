//! A session of the engine connecting to a fake IRC server on loopback, as
//! the benches that drive a whole `Rete` start it.

use rete_actors::SessionSpec;
use rete_engine::ids::SessionId;
use rete_engine::session::SessionConfig;
use rete_transports::{Backoff, ConnectConfig};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;

/// Accepts the session's connection on `listener` and waits for its USER
/// (registration sent); what it sends after that is read and dropped.
/// Returns the half to answer on.
pub async fn accept_registration(listener: TcpListener) -> OwnedWriteHalf {
    let (stream, _) = listener.accept().await.expect("accept");
    let (read, write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.starts_with("USER ") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    write
}

/// `config` connecting to `127.0.0.1:port` at once, in plain text, and
/// reconnecting after a second.
pub fn session_spec(config: SessionConfig, port: u16) -> SessionSpec {
    SessionSpec {
        config,
        transport: rete_transports::Transport::Irc(ConnectConfig {
            host: "127.0.0.1".into(),
            port,
            tls: false,
            tls_fingerprint: None,
            client_cert: None,
            connect_timeout: Duration::from_secs(5),
        }),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(1)),
    }
}

/// The config of a session named `name` registering as `nick`, its id
/// `id` (a hyphenated UUID).
pub fn config(id: &str, name: &str, nick: &str) -> SessionConfig {
    SessionConfig::new(SessionId::parse(id).expect("id"), name, nick)
}
