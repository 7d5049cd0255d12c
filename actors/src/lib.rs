//! The Rete IRC engine for a host application to embed: supervised `ractor` actors around the
//! engine (`rete-engine`, the protocol state machines) and its transports (`rete-transports`).
//! Start with [`Rete`]: it starts the actor tree, adds sessions, and hands out a reader and a sender
//! for each.
//!
//! # Example
//! One network, a reader and a sender: `examples/one_network.rs` in the repository, the program the
//! README shows, which CI runs against InspIRCd. `examples/` also holds one program per other use:
//! several networks driving a line-mode UI from [`Rete::subscribe`] (`line_ui`), a ReteCloud session
//! (`cloud_session`), the live-updates registry without the HTTP server (`live_updates`) and the control
//! server in a host of its own (`control_host`).
//! ```no_run
#![doc = include_str!("../../examples/one_network.rs")]
//! ```
//!
//! # What to build on
//! Stable, the interface a host is written against: [`Rete`] ([`Rete::start`] with [`ReteOptions`],
//! [`Rete::add_session`] with a [`SessionSpec`], [`Rete::subscribe`] for [`SessionEvent`]s,
//! [`Rete::shutdown`]), [`SessionHandle`] and its [`SessionReader`] and [`SessionSender`], [`ReteError`];
//! [`ReadOnlySessions`] and [`SendingSessions`]; the [`RawOutHook`] and [`RawObserver`] a host may set.
//! From `rete-engine`: [`SessionConfig`](rete_engine::session::SessionConfig), the
//! [`SessionView`](rete_engine::view::SessionView) a read sees, the
//! [`Commands`](rete_engine::session::Commands) a sender runs, the
//! [events](rete_engine::event::Event), [buffers](rete_engine::buffer::Buffer) and
//! [rows](rete_engine::row::Row). From `rete-transports`: [`Transport`](rete_transports::Transport),
//! [`ConnectConfig`](rete_transports::ConnectConfig), [`CloudConfig`](rete_transports::CloudConfig),
//! [`CloudTokenStore`](rete_transports::CloudTokenStore), [`Backoff`](rete_transports::Backoff).
//!
//! Public for the project's own hosts and changed with them, not for an embedder to rely on:
//! [`DebugRawSlot`] and [`RawCapture`] (the control surface's debug capture, which `rete-mcp`
//! drives, and the recorder the `rete-cloud` service stores lines with, [`Rete::set_raw_recorder`]),
//! [`raw_tap::RawTap`] (for the benchmarks), and the methods hidden from these docs (test hooks).
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
//! - [`wall_clock`]: the one place the hosts read the wall clock.
//! - `capabilities`: [`ReadOnlySessions`] and [`SendingSessions`], what a
//!   component other than the embedder is handed instead of the [`Rete`].
//!
//! Actors never block or await long inside `handle`: connecting, reading and
//! writing happen in the connection task, which talks to its actor by message.
//!
#![deny(missing_docs)]

mod agent_line;
mod capabilities;
pub mod cloud_backlog;
pub mod cloud_settings;
mod connection;
pub mod hook;
pub mod raw_tap;
pub mod rete;
mod session_actor;
mod session_log;
mod supervisor;
pub mod wall_clock;

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
