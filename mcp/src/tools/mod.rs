//! The tools: the spec table and dispatch (`registry`), how a tool
//! declares itself ([`spec`]), the context a call runs in (`context`),
//! session and buffer lookup (`lookup`), and the tools themselves, one
//! module each. The argument and result
//! layers, cursors, message objects, paging and the withholder live in
//! `crate::read`, shared with the live-update registry, and are re-exported
//! here under their old paths.

pub use crate::read::{args, cursor, message, paging, result, withheld};

pub(crate) mod context;
pub mod engine_state;
pub mod find_user;
pub(crate) mod list_buffers;
pub(crate) mod list_members;
pub(crate) mod list_sessions;
pub(crate) mod list_subscriptions;
pub(crate) mod lookup;
pub(crate) mod raw_read;
pub(crate) mod raw_since;
pub mod read_log;
pub mod read_messages;
pub mod read_since;
pub(crate) mod read_updates;
pub(crate) mod registry;
pub mod search;
pub(crate) mod search_raw;
pub(crate) mod send_raw;
pub mod spec;
pub mod subscribe;
pub(crate) mod unsubscribe;
pub(crate) mod updates_call;
pub(crate) mod wait_for_updates;

pub use args::{ArgError, Args};
pub use context::{Settings, ToolContext};
pub use registry::{BoxFuture, Tier, Tool, ToolBox, ToolResult, TOOLS};
pub use result::ToolOutcome;
