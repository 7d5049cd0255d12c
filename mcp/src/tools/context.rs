//! What a tool call may reach: the engine's read side (and, only while
//! control.send is on, the sending capability), the request's cancellation,
//! and the switches in force for this request.

use crate::access_log::AccessLog;
use crate::debug::Capture;
pub use crate::grant::Principal;
pub use crate::read::reach::Reach;
use crate::send::Sending;
use crate::updates::Updates;
use rete_actors::ReadOnlySessions;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The switches that decide which tiers are served. The listener snapshots
/// them once per request, which is how "takes effect on the next request"
/// holds without a restart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// control.debug: the four debug tools are listed and callable.
    pub debug: bool,
    /// control.send: send_raw is listed and callable.
    pub send: bool,
}

/// Everything a tool call runs with. Built by the listener per request.
#[derive(Clone)]
pub struct ToolContext {
    /// The running sessions, as readers only: this type cannot send, add or
    /// remove a session, or stop the engine.
    pub sessions: ReadOnlySessions,
    /// The capability to make a session act, present only while
    /// control.send is on for this request (send_raw will use it).
    pub send: Option<Sending>,
    /// Cancelled when the request is given up (client gone, deadline, server
    /// stopping); tools check it between sessions, buffers and messages.
    pub cancel: CancellationToken,
    /// The switches in force for this request.
    pub settings: Settings,
    /// What this request may see: everything for the full token.
    pub reach: Reach,
    /// Who made the request: the full token, or a scoped grant (whose tier
    /// already narrowed `settings`, and whose name the access log shows).
    pub principal: Principal,
    /// The AI access log, which outlives the server (a restart or a new token
    /// does not clear it), so it is shared rather than owned by a request.
    pub access_log: Arc<AccessLog>,
    /// The subscription registry of the server serving this request.
    pub updates: Updates,
    /// The debug capture of the server serving this request (off unless
    /// control.debug is on).
    pub capture: Capture,
}
