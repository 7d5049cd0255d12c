//! The tools: a fixed allowlist ([`registry`]), the argument and result
//! layers every tool shares ([`args`], [`result`], [`schema`]), the context a
//! call runs in ([`context`]), and the tools themselves.

pub mod args;
pub mod context;
pub mod cursor;
pub mod find_user;
pub mod list_buffers;
pub mod list_members;
pub mod list_sessions;
pub mod list_subscriptions;
pub mod lookup;
pub mod message;
pub mod paging;
pub mod read_messages;
pub mod read_since;
pub mod read_updates;
pub mod registry;
pub mod result;
pub mod schema;
pub mod search;
pub mod subscribe;
pub mod unsubscribe;
pub mod updates_call;
pub mod wait_for_updates;
pub mod withheld;

pub use args::{ArgError, Args};
pub use context::{Settings, ToolContext};
pub use registry::{BoxFuture, Tier, Tool, ToolBox};
pub use result::ToolOutcome;
