//! The stable error codes an `error` frame carries.
//!
//! A code never changes meaning within a protocol version; a peer branches on
//! the code, never on the message (which is for people and may change).

use serde::{Deserialize, Serialize};

/// Why a frame or a request was refused. `is_fatal_by_default` is the
/// protocol's rule for the `fatal` flag; before authentication every error
/// is fatal whatever its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The text message is longer than the frame size limit.
    FrameTooLarge,
    /// A binary WebSocket message: every frame is a text message.
    BinaryMessage,
    /// Not JSON, or JSON that is not an object.
    MalformedFrame,
    /// The object has no string `type` member.
    MissingType,
    /// The `type` names no frame this side accepts.
    UnknownType,
    /// A member the frame type does not have (frames are closed).
    UnknownField,
    /// A member the frame type requires is absent.
    MissingField,
    /// A member has the wrong JSON type or a value outside its rules.
    InvalidField,
    /// A frame other than `auth` came first.
    NotAuthenticated,
    /// No `auth` frame within the time allowed.
    AuthTimeout,
    /// A second `auth` on an authenticated connection.
    AlreadyAuthenticated,
    /// The token is not one the service knows.
    AuthFailed,
    /// The token belongs to a revoked chain (or was reused after its grace
    /// period, which revoked it just now).
    TokenRevoked,
    /// The service does not speak the version `auth` asked for.
    UnsupportedVersion,
    /// The resume point is older than the oldest row the store still holds.
    ResumePointGone,
    /// The resume point is beyond the newest row of the stream (the store
    /// was reset, or the point came from another service).
    ResumePointUnknown,
    /// A stream id the user does not have.
    UnknownStream,
    /// A network id the user does not have.
    UnknownNetwork,
    /// A send's IRC line cannot be sent as it is (CR, LF, NUL, empty, long).
    BadLine,
    /// The network cannot take a line now (not connected).
    SendRefused,
    /// A config_update the service cannot apply; nothing was changed.
    BadConfig,
    /// A token_ack for a generation that is not being rotated.
    RotationNotPending,
    /// Too many requests; the request was not carried out.
    RateLimited,
    /// Nothing was received for longer than the heartbeat allows.
    HeartbeatMissed,
    /// The service is stopping; reconnect and resume.
    ShuttingDown,
    /// The user has as many clients attached as the service allows.
    TooManyConnections,
    /// The service failed; nothing of the request was carried out.
    Internal,
}

impl ErrorCode {
    /// The code as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::BinaryMessage => "binary_message",
            ErrorCode::MalformedFrame => "malformed_frame",
            ErrorCode::MissingType => "missing_type",
            ErrorCode::UnknownType => "unknown_type",
            ErrorCode::UnknownField => "unknown_field",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::InvalidField => "invalid_field",
            ErrorCode::NotAuthenticated => "not_authenticated",
            ErrorCode::AuthTimeout => "auth_timeout",
            ErrorCode::AlreadyAuthenticated => "already_authenticated",
            ErrorCode::AuthFailed => "auth_failed",
            ErrorCode::TokenRevoked => "token_revoked",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::ResumePointGone => "resume_point_gone",
            ErrorCode::ResumePointUnknown => "resume_point_unknown",
            ErrorCode::UnknownStream => "unknown_stream",
            ErrorCode::UnknownNetwork => "unknown_network",
            ErrorCode::BadLine => "bad_line",
            ErrorCode::SendRefused => "send_refused",
            ErrorCode::BadConfig => "bad_config",
            ErrorCode::RotationNotPending => "rotation_not_pending",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::HeartbeatMissed => "heartbeat_missed",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::TooManyConnections => "too_many_connections",
            ErrorCode::Internal => "internal",
        }
    }

    /// Whether an error with this code ends the connection (once
    /// authenticated). Errors that leave the frame stream unreadable or the
    /// connection's identity in doubt are fatal; an error about one request
    /// (which the frame's `id` names) is not, so one bad request fails alone.
    pub fn is_fatal_by_default(self) -> bool {
        matches!(
            self,
            ErrorCode::FrameTooLarge
                | ErrorCode::BinaryMessage
                | ErrorCode::MalformedFrame
                | ErrorCode::MissingType
                | ErrorCode::UnknownType
                | ErrorCode::NotAuthenticated
                | ErrorCode::AuthTimeout
                | ErrorCode::AlreadyAuthenticated
                | ErrorCode::AuthFailed
                | ErrorCode::TokenRevoked
                | ErrorCode::UnsupportedVersion
                | ErrorCode::HeartbeatMissed
                | ErrorCode::ShuttingDown
                | ErrorCode::TooManyConnections
                | ErrorCode::Internal
        )
    }

    /// Every code, for tests and documentation checks.
    pub const ALL: [ErrorCode; 27] = [
        ErrorCode::FrameTooLarge,
        ErrorCode::BinaryMessage,
        ErrorCode::MalformedFrame,
        ErrorCode::MissingType,
        ErrorCode::UnknownType,
        ErrorCode::UnknownField,
        ErrorCode::MissingField,
        ErrorCode::InvalidField,
        ErrorCode::NotAuthenticated,
        ErrorCode::AuthTimeout,
        ErrorCode::AlreadyAuthenticated,
        ErrorCode::AuthFailed,
        ErrorCode::TokenRevoked,
        ErrorCode::UnsupportedVersion,
        ErrorCode::ResumePointGone,
        ErrorCode::ResumePointUnknown,
        ErrorCode::UnknownStream,
        ErrorCode::UnknownNetwork,
        ErrorCode::BadLine,
        ErrorCode::SendRefused,
        ErrorCode::BadConfig,
        ErrorCode::RotationNotPending,
        ErrorCode::RateLimited,
        ErrorCode::HeartbeatMissed,
        ErrorCode::ShuttingDown,
        ErrorCode::TooManyConnections,
        ErrorCode::Internal,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_name_is_the_serde_name() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn request_errors_are_not_fatal() {
        for code in [
            ErrorCode::ResumePointGone,
            ErrorCode::BadLine,
            ErrorCode::BadConfig,
            ErrorCode::InvalidField,
            ErrorCode::UnknownField,
        ] {
            assert!(!code.is_fatal_by_default(), "{code:?}");
        }
        assert!(ErrorCode::AuthFailed.is_fatal_by_default());
        assert!(ErrorCode::FrameTooLarge.is_fatal_by_default());
    }
}
