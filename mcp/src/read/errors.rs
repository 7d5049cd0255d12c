//! Tool error texts more than one part of the crate answers with.

/// The tool error for a session id no running session has.
pub(crate) const UNKNOWN_SESSION: &str = "unknown session";

/// The tool error for a buffer id no session lists.
pub(crate) const UNKNOWN_BUFFER: &str = "unknown buffer";

/// A debug tool (or subscribe's raw or log filter) while control.debug is off.
pub(crate) const DEBUG_DISABLED: &str = "debug tools are disabled";

/// A raw direction other than in or out (search_raw, subscribe's raw filter).
pub(crate) const INVALID_DIRECTION: &str = "invalid direction: expected \"in\" or \"out\"";
