//! Driving one engine session through the `Rete` facade for the SASL tests, and reading what
//! it shows: status rows, server replies, and the serialized state (to look for leaks).

use std::time::Duration;

use anyhow::Result;
use rete_actors::{Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_engine::event::ConnState;
use rete_engine::ids::SessionId;
use rete_engine::row::Payload;
use rete_engine::sasl::{Credentials, Mechanism};
use rete_engine::session::{SaslSettings, SessionConfig};
use rete_engine::view::SessionView;
use rete_transports::{Backoff, ConnectConfig};

/// How long a test waits for the engine to reach an expected state. Generous: registration
/// on InspIRCd completes on a 1 Hz timer, and Atheme answers SASL over the server link.
pub const WAIT: Duration = Duration::from_secs(15);
/// The prefix of the engine's SASL verdict status line ("succeeded" or "failed: why").
pub const VERDICT: &str = "SASL authentication ";

pub use super::eventually::eventually;

/// A plain connection to `127.0.0.1:port`.
pub fn plain(port: u16) -> ConnectConfig {
    ConnectConfig {
        host: "127.0.0.1".to_owned(),
        port,
        tls: false,
        tls_fingerprint: None,
        client_cert: None,
        connect_timeout: Duration::from_secs(5),
    }
}

/// A session config for `nick` that authenticates with `mechanism`.
pub fn sasl_config(
    nick: &str,
    mechanism: Mechanism,
    credentials: Credentials,
) -> Result<SessionConfig> {
    let id = SessionId::parse(&uuid::Uuid::new_v4().to_string())?;
    let mut config = SessionConfig::new(id, "sasl-test", nick);
    config.sasl = Some(SaslSettings {
        mechanism,
        credentials,
    });
    Ok(config)
}

/// Starts an engine with one autoconnecting session.
pub async fn start_session(
    config: SessionConfig,
    connect: ConnectConfig,
) -> Result<(Rete, SessionHandle)> {
    let rete = Rete::start(ReteOptions::default()).await?;
    let spec = SessionSpec {
        config,
        transport: rete_transports::Transport::Irc(connect),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_millis(200), Duration::from_secs(2)),
    };
    let session = rete.add_session(spec).await?;
    Ok((rete, session))
}

/// Waits until the session is registered and its SASL attempt has a verdict in the server
/// buffer. On timeout the error carries the last snapshot and `describe()` (server output).
pub async fn await_sasl_verdict(
    session: &SessionHandle,
    describe: impl FnOnce() -> String,
) -> Result<Snapshot> {
    let reader = session.reader();
    let found = eventually("registration and a SASL verdict", WAIT, || {
        let reader = reader.clone();
        async move {
            let snap = reader.read(Snapshot::of).await?;
            let done = snap.state == ConnState::Connected && snap.has_status(VERDICT);
            Ok(done.then_some(snap))
        }
    })
    .await;
    match found {
        Ok(snap) => Ok(snap),
        Err(e) => {
            let last = reader.read(Snapshot::of).await;
            Err(e.context(format!("last engine snapshot: {last:#?}\n{}", describe())))
        }
    }
}

/// What a test needs to see of a session at one instant.
#[derive(Debug)]
pub struct Snapshot {
    /// The connection state.
    pub state: ConnState,
    /// The client's own status lines in the server buffer.
    pub statuses: Vec<String>,
    /// Server replies in the server buffer: (command, text).
    pub replies: Vec<(String, String)>,
    /// Every row of every buffer, serialized.
    pub rows_json: Vec<String>,
    /// The whole serialized engine state.
    pub state_json: serde_json::Value,
}

impl Snapshot {
    /// Reads everything at once, inside the session actor.
    pub fn of(view: SessionView<'_>) -> Self {
        let mut statuses = Vec::new();
        let mut replies = Vec::new();
        if let Some(server) = view.buffer(view.server_buffer()) {
            for row in server.since(0) {
                match &row.payload {
                    Payload::ClientStatus { text } => statuses.push(text.to_string()),
                    Payload::ServerReply { command, text } => {
                        replies.push((command.to_string(), text.to_string()));
                    }
                    _ => {}
                }
            }
        }
        let rows_json = view
            .buffers()
            .flat_map(|b| b.since(0))
            .map(|row| serde_json::to_string(row).unwrap_or_default())
            .collect();
        Self {
            state: view.state(),
            statuses,
            replies,
            rows_json,
            state_json: view.state_json(),
        }
    }

    /// Whether a status line starts with `prefix`.
    pub fn has_status(&self, prefix: &str) -> bool {
        self.statuses.iter().any(|s| s.starts_with(prefix))
    }

    /// The status lines that start with `prefix`.
    pub fn statuses_with(&self, prefix: &str) -> Vec<&str> {
        self.statuses
            .iter()
            .filter(|s| s.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// The texts of the server replies with this command or numeric.
    pub fn replies_to(&self, command: &str) -> Vec<&str> {
        self.replies
            .iter()
            .filter(|(c, _)| c == command)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    /// The engine's SASL outcome ("succeeded", "failed", ...).
    pub fn sasl_outcome(&self) -> &str {
        self.state_json["sasl"]["outcome"]["state"]
            .as_str()
            .unwrap_or("")
    }

    /// The account the engine believes it is logged in as.
    pub fn sasl_account(&self) -> Option<&str> {
        self.state_json["sasl"]["account"].as_str()
    }

    /// Fails when `secret` shows up in any row or in the serialized state.
    pub fn assert_no_secret(&self, secret: &str) {
        for row in &self.rows_json {
            assert!(!row.contains(secret), "a row leaks the password: {row}");
        }
        let state = self.state_json.to_string();
        assert!(
            !state.contains(secret),
            "the serialized engine state leaks the password"
        );
    }
}
