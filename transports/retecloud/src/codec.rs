//! Frames to and from WebSocket text messages, with every bad input given
//! a stable [`ErrorCode`].
//!
//! Decoding runs in stages, each with its own codes, so the answer says what
//! is wrong rather than "bad frame":
//! 1. size: longer than [`MAX_FRAME_BYTES`] → `frame_too_large`, before any
//!    parsing (a peer cannot make us parse a huge message);
//! 2. JSON: not JSON, or not an object → `malformed_frame`;
//! 3. `type`: absent or not a string → `missing_type`; a name this side does
//!    not accept → `unknown_type` (saying so when it is the other side's);
//! 4. shape: a member the type does not have → `unknown_field`, one it
//!    needs → `missing_field`, a wrong type or a duplicate member →
//!    `invalid_field` (the typed parse reads the text itself, not a parsed
//!    `Value`, so a member given twice is seen rather than silently merged);
//! 5. rules: the frame's own `problem` (ids, lines, limits, config values).
//!
//! Error messages name members and expectations only, never a member's
//! value: serde's "invalid type: string \"hunter2\"" is cut to its
//! expectation, so a misplaced password cannot reach an error frame or a log.
//! Encoding checks the same rules and the size, so this side never sends a
//! frame the other side must refuse.

use crate::error_code::ErrorCode;
use crate::frame::{ClientFrame, Problem, RequestId, ServerFrame, CLIENT_TYPES, SERVER_TYPES};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// The largest text message either side accepts or sends, in bytes. Big
/// enough for any IRC line with its tags in a frame (8,703 bytes) many times
/// over; a backlog answer that would not fit holds fewer rows (and says
/// `more`).
pub const MAX_FRAME_BYTES: usize = 65_536;

/// Why a message could not be decoded or a frame encoded.
#[derive(Clone, PartialEq, Eq)]
pub struct FrameError {
    /// The stable code.
    pub code: ErrorCode,
    /// What was wrong, naming members but never quoting a value.
    pub message: String,
    /// The refused frame's `type`, when it had a known one.
    pub frame_type: Option<&'static str>,
    /// The refused frame's request id, when it had a readable one, so the
    /// error can name the request it answers.
    pub id: Option<RequestId>,
}

impl fmt::Debug for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The message holds no value (see the module doc); the id is the
        // client's own label.
        f.debug_struct("FrameError")
            .field("code", &self.code)
            .field("message", &self.message)
            .field("frame_type", &self.frame_type)
            .field("id", &self.id)
            .finish()
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for FrameError {}

impl FrameError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            frame_type: None,
            id: None,
        }
    }

    /// The `error` frame that answers this refusal. Before authentication
    /// every error is fatal; after it, the code decides, so one bad request
    /// (named by its id) fails alone.
    pub fn to_error_frame(&self, authenticated: bool) -> crate::frame::ErrorFrame {
        let mut e = crate::frame::ErrorFrame::new(self.code, self.message.clone());
        e.fatal =
            !authenticated || self.code.is_fatal_by_default() || self.frame_type == Some("auth");
        e.id = self.id.clone();
        e
    }
}

/// A client's frame from a text message (the service's side of the wire).
pub fn decode_client(text: &str) -> Result<ClientFrame, FrameError> {
    decode(
        text,
        &CLIENT_TYPES,
        &SERVER_TYPES,
        "the service sends",
        ClientFrame::problem,
    )
}

/// A service's frame from a text message (the client's side of the wire).
pub fn decode_server(text: &str) -> Result<ServerFrame, FrameError> {
    decode(
        text,
        &SERVER_TYPES,
        &CLIENT_TYPES,
        "a client sends",
        ServerFrame::problem,
    )
}

/// A client's frame as a text message.
pub fn encode_client(frame: &ClientFrame) -> Result<String, FrameError> {
    encode(frame, frame.problem())
}

/// A service's frame as a text message.
pub fn encode_server(frame: &ServerFrame) -> Result<String, FrameError> {
    encode(frame, frame.problem())
}

/// The answer to a binary WebSocket message: frames are text only.
#[cfg(feature = "service")]
pub(crate) fn binary_message_error() -> FrameError {
    FrameError::new(
        ErrorCode::BinaryMessage,
        "frames are WebSocket text messages, not binary",
    )
}

fn encode<T: serde::Serialize>(frame: &T, problem: Option<Problem>) -> Result<String, FrameError> {
    if let Some((code, message)) = problem {
        return Err(FrameError::new(code, message));
    }
    let text = serde_json::to_string(frame).map_err(|_| {
        FrameError::new(
            ErrorCode::Internal,
            "the frame could not be written as JSON",
        )
    })?;
    if text.len() > MAX_FRAME_BYTES {
        return Err(FrameError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "the frame is {} bytes; the limit is {MAX_FRAME_BYTES}",
                text.len()
            ),
        ));
    }
    Ok(text)
}

/// The answer to a text message of `size` bytes, over [`MAX_FRAME_BYTES`].
pub(crate) fn message_too_large(size: usize) -> FrameError {
    FrameError::new(
        ErrorCode::FrameTooLarge,
        format!("the message is {size} bytes; the limit is {MAX_FRAME_BYTES}"),
    )
}

fn decode<T: DeserializeOwned>(
    text: &str,
    ours: &[&'static str],
    theirs: &[&'static str],
    theirs_are: &str,
    problem: fn(&T) -> Option<Problem>,
) -> Result<T, FrameError> {
    if text.len() > MAX_FRAME_BYTES {
        return Err(message_too_large(text.len()));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        FrameError::new(
            ErrorCode::MalformedFrame,
            format!("not JSON ({})", syntax_message(&e)),
        )
    })?;
    let Value::Object(map) = &value else {
        return Err(FrameError::new(
            ErrorCode::MalformedFrame,
            "a frame is a JSON object",
        ));
    };
    let Some(Value::String(name)) = map.get("type") else {
        return Err(FrameError::new(
            ErrorCode::MissingType,
            "a frame needs a string member type",
        ));
    };
    let id = match map.get("id") {
        Some(Value::String(s)) => Some(RequestId(s.clone()))
            .filter(|r| r.0.len() <= 64 && r.0.bytes().all(|b| b.is_ascii_graphic())),
        _ => None,
    };
    let Some(frame_type) = ours.iter().copied().find(|t| *t == name) else {
        let shown = shown_name(name);
        let message = if theirs.contains(&name.as_str()) {
            format!("type {shown} is a frame {theirs_are}")
        } else {
            format!("unknown type {shown}")
        };
        return Err(FrameError::new(ErrorCode::UnknownType, message));
    };
    let refused = |code, message| FrameError {
        code,
        message,
        frame_type: Some(frame_type),
        id: id.clone(),
    };
    let frame: T = serde_json::from_str(text).map_err(|e| {
        let (code, message) = shape_error(&e.to_string());
        refused(code, format!("{frame_type}: {message}"))
    })?;
    if let Some((code, message)) = problem(&frame) {
        return Err(refused(code, format!("{frame_type}: {message}")));
    }
    Ok(frame)
}

/// A name taken from the peer's frame, quoted and cut so it cannot make an
/// error message long or draw on a terminal.
fn shown_name(name: &str) -> String {
    let cut: String = name.chars().take(40).collect();
    if cut.len() < name.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// serde_json's syntax message ("expected value at line 1 column 5") holds
/// no input text; kept as it is.
fn syntax_message(e: &serde_json::Error) -> String {
    format!("{} at line {} column {}", classify(e), e.line(), e.column())
}

fn classify(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Eof => "ends too early",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected value",
        serde_json::error::Category::Io => "unreadable",
    }
}

/// The code and a value-free message for a typed parse's error.
fn shape_error(serde_message: &str) -> (ErrorCode, String) {
    // Drop serde_json's " at line L column C" tail; positions say nothing a
    // peer can use once the frame parsed as JSON.
    let msg = serde_message
        .split(" at line ")
        .next()
        .unwrap_or(serde_message);
    let names_only = |m: &str| {
        let head = m.split(", expected").next().unwrap_or(m);
        head.chars().take(120).collect::<String>()
    };
    if msg.starts_with("unknown field") {
        (ErrorCode::UnknownField, names_only(msg))
    } else if msg.starts_with("missing field") {
        (ErrorCode::MissingField, names_only(msg))
    } else if msg.starts_with("duplicate field") {
        (ErrorCode::InvalidField, names_only(msg))
    } else if msg.starts_with("unknown variant") {
        // The variant is a value (a config key, a SASL mechanism, where a
        // password might have been put by mistake): name what is allowed.
        match msg.split_once(", expected ") {
            Some((_, expected)) => (
                ErrorCode::InvalidField,
                format!("unknown variant, expected {expected}"),
            ),
            None => (ErrorCode::InvalidField, "unknown variant".into()),
        }
    } else if let Some(kind) = ["invalid type", "invalid value", "invalid length"]
        .into_iter()
        .find(|k| msg.starts_with(k))
    {
        // "invalid type: string \"hunter2\", expected u64": keep only the
        // expectation, which comes from our types, not from the input.
        match msg.split_once(", expected ") {
            Some((_, expected)) => (
                ErrorCode::InvalidField,
                format!("{kind}, expected {expected}"),
            ),
            None => (ErrorCode::InvalidField, kind.to_string()),
        }
    } else {
        (
            ErrorCode::InvalidField,
            "a member does not fit the frame's type".into(),
        )
    }
}

#[cfg(test)]
mod tests;
