//! The Rete control surface: an MCP server on 127.0.0.1 that lets an AI agent
//! read a live session, behind a strict HTTP access gate.
//!
//! `../shared/spec/control-surface.md` is the contract: tool names, arguments,
//! result fields, error strings, status codes and limits match it exactly.
//!
//! A host uses the types re-exported here: it starts a [`ControlServer`] with
//! [`ServerSettings`] (among them its [`TokenStore`]) and an [`AccessLog`],
//! and answers the person's approvals through [`Approvals`]. Everything else
//! is the crate's own; the few internals public beyond these are there for
//! the project's tests, benchmarks and examples, under the modules below.
//!
//! # Layout
//! - [`server`]: [`ControlServer`], the lifecycle an
//!   embedder drives (start, stop, the debug and send switches, token
//!   regeneration, port moves); it refuses to run as root.
//! - `listener`: the control supervisor, the listener actor (connection
//!   slots, overrun accounting) and one task per connection under the
//!   contract's deadlines.
//! - `http`: pure pieces of HTTP: the strict head reader, the gate and
//!   route, responses, the rate-limited refusal log. `peer`: the Linux
//!   check that a client's socket belongs to our user.
//! - `rpc`: stateless JSON-RPC 2.0 over one request body (initialize,
//!   ping, tools/list, tools/call).
//! - [`tools`]: the spec table (`tools::TOOLS`, which is the allowlist),
//!   the declarations a tool is made of ([`tools::spec`]) and one module per
//!   tool. Tools reach sessions only through
//!   [`rete_actors::ReadOnlySessions`].
//! - `read`: the plumbing `tools` and `updates` share (arguments, the
//!   60,000-byte budget, cursors, message objects, paging, the withholder,
//!   the matcher, raw and log lines on the way out); depends on neither, and
//!   is re-exported under [`tools`] (`tools::args`, `tools::result`, …).
//! - [`updates`]: live updates: the subscription registry actor and its
//!   sans-IO parts (filters, inboxes, rendering).
//! - [`debug`]: the debug capture (the raw tap and the log ring) the debug
//!   tier reads, on only while the server runs with control.debug on.
//! - [`send`]: sending — send_raw's line rule (and a grant's, narrower),
//!   its rate limits per session and grant and the limiter actor, and the
//!   [`Sending`](send::Sending) capability a request carries only while
//!   control.send is on.
//! - [`grant`]: scoped grants, extra tokens with less: the scope, the
//!   record a host keeps (a hash), and the shared list the gate reads. What
//!   a grant may see is `read/reach.rs`'s, of the debug capture
//!   `debug/attribution.rs`'s.
//! - [`access_log`]: the AI access log, memory only. `token`: the access
//!   [`Token`] and the [`TokenStore`] the host keeps it in (reterm's
//!   secrets file); rete-mcp opens no file of its own.
//!
//! Data flows one way: `listener` → `http` (gate) → `rpc` → `tools` →
//! `read`/`updates` → the session actors, by read closures only.
#![deny(missing_docs)]

pub mod access_log;
pub mod debug;
pub mod grant;
mod http;
mod listener;
mod peer;
mod read;
mod rpc;
pub mod send;
pub mod server;
mod token;
pub mod tools;
pub mod updates;

pub use access_log::AccessLog;
pub use send::approval::{ApprovalEvent, Approvals, Ending, Prompt};
pub use server::{ControlServer, ServerSettings, StartError};
pub use token::{Token, TokenStore, TokenStoreError};
