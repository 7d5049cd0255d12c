//! Sending: what send_raw needs besides the tool itself — the line rule, a
//! scoped grant's rule (what it may send, and to whom), the per-session
//! (and per-grant) rate limits and the limiter actor that holds them, the
//! person's approval (opt-in), and the [`Sending`] capability a request
//! carries only while control.send is on.
//!
//! The read tools never see this module's types: the only path from the
//! control surface to a session's sender is a [`Sending`] in the request's
//! context, which the listener puts there only while sending is on.

pub mod approval;
pub(crate) mod caps;
pub mod grant_rule;
#[doc(hidden)] // For the project's tests and benches.
pub mod limiter;
pub(crate) mod line_rule;

use limiter::Limiter;
use rete_actors::SendingSessions;

/// The capability to send on sessions, with the limits every line passes.
#[derive(Clone)]
pub struct Sending {
    /// The sessions' senders.
    pub sessions: SendingSessions,
    /// The rate limits, shared by every request of this server.
    pub limiter: Limiter,
    /// Where each line waits for the person's answer, while control.approve
    /// is on for this request; `None` sends without asking.
    pub approval: Option<approval::Approvals>,
}
