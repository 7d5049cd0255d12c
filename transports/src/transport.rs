//! Which wire a session speaks over, and what opening it needs.
//!
//! A session's spec names its transport once; the connection task is the one
//! place that branches on it: IRC over TCP or TLS, or ReteCloud's WebSocket
//! (a bridged session, whose IRC connection the `rete-cloud` service holds).

use crate::connect::ConnectConfig;
use crate::websocket::CloudConfig;

/// How a session reaches its network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// IRC lines straight to a server or bouncer, over TCP or TLS.
    Irc(ConnectConfig),
    /// IRC lines inside ReteCloud frames, through the `rete-cloud` service.
    ReteCloud(CloudConfig),
}

impl Transport {
    /// The kind, as readers see it.
    pub fn kind(&self) -> TransportKind {
        match self {
            Transport::Irc(_) => TransportKind::Irc,
            Transport::ReteCloud(_) => TransportKind::ReteCloud,
        }
    }
}

/// A transport's kind without its settings: what a reader may know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// A direct IRC connection.
    Irc,
    /// Through a ReteCloud service.
    ReteCloud,
}

impl TransportKind {
    /// The name the control surface reports (`list_sessions`' `transport`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Irc => "irc",
            TransportKind::ReteCloud => "retecloud",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_irc_transport_is_reported_as_irc() {
        let t = Transport::Irc(ConnectConfig {
            host: "irc.example.net".into(),
            port: 6697,
            tls: true,
            tls_fingerprint: None,
            client_cert: None,
            connect_timeout: Duration::from_secs(5),
        });
        assert_eq!(t.kind(), TransportKind::Irc);
        assert_eq!(t.kind().as_str(), "irc");
    }

    struct NoStore;
    impl crate::websocket::CloudTokenStore for NoStore {
        fn load(&self) -> Result<Option<rete_cloud_protocol::Token>, crate::TokenStoreError> {
            Ok(None)
        }
        fn store(
            &self,
            _: &rete_cloud_protocol::Token,
            _: u64,
        ) -> Result<crate::TokenStored, crate::TokenStoreError> {
            Ok(crate::TokenStored::Written)
        }
    }

    #[test]
    fn a_retecloud_transport_is_reported_as_retecloud() {
        let t = Transport::ReteCloud(CloudConfig {
            url: "wss://cloud.example.net/".into(),
            network: "libera".into(),
            tls_fingerprint: None,
            connect_timeout: Duration::from_secs(5),
            token_store: std::sync::Arc::new(NoStore),
            resume_store: None,
        });
        assert_eq!(t.kind().as_str(), "retecloud");
    }
}
