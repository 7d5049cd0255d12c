//! Which wire a session speaks over, and what opening it needs.
//!
//! A session's spec names its transport once; the connection task is the one
//! place that branches on it. Only IRC over TCP or TLS exists today; a
//! bridged transport (ReteCloud's WebSocket) becomes another variant here.

use crate::connect::ConnectConfig;

/// How a session reaches its network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// IRC lines straight to a server or bouncer, over TCP or TLS.
    Irc(ConnectConfig),
}

impl Transport {
    /// The kind, as readers see it.
    pub fn kind(&self) -> TransportKind {
        match self {
            Transport::Irc(_) => TransportKind::Irc,
        }
    }
}

/// A transport's kind without its settings: what a reader may know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// A direct IRC connection.
    Irc,
}

impl TransportKind {
    /// The name the control surface reports (`list_sessions`' `transport`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Irc => "irc",
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
}
