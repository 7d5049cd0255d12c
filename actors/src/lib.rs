//! The Rete actor tree: supervised `ractor` actors around the engine.
//!
//! # Layout
//! - [`rete`]: the facade a host embeds ([`Rete`], [`SessionHandle`],
//!   [`SessionReader`], [`SessionSender`]).
//! - `supervisor`: the root supervisor; restarts a failed session actor with
//!   backoff, its engine state intact.
//! - `session_actor`: one actor per session; feeds the engine and drains it.
//! - `connection`: the connection task, the only code that touches a socket.
//! - `session_log`: what the session actors write to Rete's own log
//!   (connects, registration steps, SASL outcome, reconnect delays, WHO
//!   timeouts), secret-free, under `rete::network` and `rete::auth`.
//! - [`hook`]: the raw-out hook an embedder registers.
//! - `capabilities`: [`ReadOnlySessions`] and [`SendingSessions`], what a
//!   component other than the embedder is handed instead of the [`Rete`].
//!
//! Actors never block or await long inside `handle`: connecting, reading and
//! writing happen in the connection task, which talks to its actor by message.
//!
//! # Example
//! ```no_run
//! use rete_actors::{Rete, ReteOptions, SessionSpec};
//! use rete_engine::ids::SessionId;
//! use rete_engine::session::{ChannelSpec, SessionConfig};
//! use rete_transports::{Backoff, ConnectConfig, Transport};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let rete = Rete::start(ReteOptions::default()).await?;
//! let id = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")?;
//! let mut config = SessionConfig::new(id, "local", "rete");
//! config.channels = vec![ChannelSpec { name: "#rete".into(), key: None }];
//! let session = rete
//!     .add_session(SessionSpec {
//!         config,
//!         transport: Transport::Irc(ConnectConfig {
//!             host: "127.0.0.1".into(),
//!             port: 6667,
//!             tls: false,
//!             tls_fingerprint: None,
//!             client_cert: None,
//!             connect_timeout: Duration::from_secs(15),
//!         }),
//!         autoconnect: true,
//!         reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
//!     })
//!     .await?;
//! let names: Vec<String> = session
//!     .reader()
//!     .read(|view| view.buffers().map(|b| b.name().to_owned()).collect())
//!     .await?;
//! session.sender().command(|c| c.privmsg("#rete", "hello")).await?;
//! rete.shutdown(Duration::from_secs(2)).await;
//! # let _ = names;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod agent_line;
mod capabilities;
#[cfg(feature = "cloud")]
pub mod cloud;
pub mod cloud_backlog;
pub mod cloud_settings;
mod connection;
pub mod hook;
pub mod raw_tap;
pub mod rete;
mod session_actor;
mod session_log;
mod supervisor;

pub use agent_line::AgentLineError;
pub use capabilities::{ReadOnlySessions, SendingSessions};
pub use cloud_backlog::{CloudBacklogError, OlderRows};
pub use cloud_settings::CloudSettingsError;
pub use connection::MAX_LINES_IN_FLIGHT;
pub use hook::{RawOutHook, Verdict};
pub use raw_tap::{DebugRawSlot, Direction, RawCapture, RawObserver};
pub use rete::{
    Rete, ReteError, ReteOptions, SessionHandle, SessionReader, SessionSender, SessionSpec,
};
pub use session_actor::SessionEvent;
