//! A host's request for older rows of one buffer of a ReteCloud session
//! ("load older messages"): what the caller of
//! [`SessionSender::cloud_backlog`](crate::SessionSender::cloud_backlog)
//! waits for, and why no rows came.
//!
//! The rows come from the service's store with a `fetch` before the oldest
//! row this session knows of in that buffer, and are stored as history
//! (placed by time, rows already held dropped), as the first attach's
//! fetch stores them. An IRC session has no such store: no server in
//! reach offers CHATHISTORY, so it refuses.

use tokio::sync::oneshot;

/// The most rows one request may ask for: the protocol's `fetch` limit.
pub const MAX_BACKLOG_ROWS: u32 = rete_cloud_protocol::frame::MAX_FETCH_LIMIT;

/// What a request for older rows gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OlderRows {
    /// Rows stored in the buffer (messages and notices not held before).
    pub added: usize,
    /// The service holds no older rows of this buffer: asking again gives
    /// nothing (the host can stop asking).
    pub no_older: bool,
}

/// Why no older rows were fetched (or may not have been).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloudBacklogError {
    /// The session talks to an IRC server directly: there is no store to
    /// fetch older rows from.
    #[error("this session does not run through ReteCloud: older rows come only from the ReteCloud service")]
    NotCloud,
    /// The session is not attached to the service now.
    #[error("not attached to the ReteCloud service")]
    NotAttached,
    /// The session has no such buffer.
    #[error("this session has no such buffer")]
    NoSuchBuffer,
    /// A request for older rows of this buffer is waiting for its answer.
    #[error("older rows of this buffer are being fetched already")]
    Busy,
    /// The request breaks a rule of the protocol (checked before sending;
    /// nothing was sent).
    #[error("{0}")]
    Invalid(String),
    /// The service refused the fetch.
    #[error("the service refused the fetch ({code}): {message}")]
    Refused {
        /// The stable error code.
        code: &'static str,
        /// The service's reason.
        message: String,
    },
    /// The connection closed before the service answered.
    #[error("the connection to the service closed before it answered")]
    NoAnswer,
}

/// What the session actor answers a request for older rows with.
pub(crate) type BacklogReply = oneshot::Sender<Result<OlderRows, CloudBacklogError>>;
