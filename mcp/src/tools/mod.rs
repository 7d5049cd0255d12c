//! The tools: the spec table and dispatch (`registry`), how a tool
//! declares itself ([`spec`]), the context a call runs in (`context`),
//! session and buffer lookup (`lookup`), and the tools themselves, one
//! module each. The argument and result
//! layers, cursors, message objects, paging and the withholder live in
//! `crate::read`, shared with the live-update registry, and are re-exported
//! here under their old paths.

pub use crate::read::{args, result};
#[doc(hidden)] // For the project's tests and benches.
pub use crate::read::{cursor, paging, withheld};

pub(crate) mod context;
#[doc(hidden)] // For the project's tests and benches.
pub mod engine_state;
#[doc(hidden)] // For the project's tests and benches.
pub mod find_user;
pub(crate) mod list_buffers;
pub(crate) mod list_members;
pub(crate) mod list_sessions;
pub(crate) mod list_subscriptions;
pub(crate) mod lookup;
pub(crate) mod raw_read;
pub(crate) mod raw_since;
#[doc(hidden)] // For the project's tests and benches.
pub mod read_log;
#[doc(hidden)] // For the project's tests and benches.
pub mod read_messages;
#[doc(hidden)] // For the project's tests and benches.
pub mod read_since;
pub(crate) mod read_updates;
pub(crate) mod registry;
#[doc(hidden)] // For the project's tests and benches.
pub mod search;
pub(crate) mod search_raw;
pub(crate) mod send_raw;
#[doc(hidden)] // For the project's tests and benches.
pub mod spec;
#[doc(hidden)] // For the project's tests and benches.
pub mod subscribe;
pub(crate) mod unsubscribe;
pub(crate) mod updates_call;
pub(crate) mod wait_for_updates;

pub use args::Args;
pub use context::{Principal, Reach, Settings, ToolContext};
pub use registry::{ToolBox, TOOLS};
pub use result::ToolOutcome;
