//! The Rete control surface: an MCP server on 127.0.0.1 that lets an AI agent
//! read a live session, behind a strict HTTP access gate.
#![deny(missing_docs)]

pub mod access_log;
pub mod http;
mod listener;
pub mod peer;
mod read;
pub mod rpc;
pub mod server;
pub mod token;
pub mod tools;
pub mod updates;
