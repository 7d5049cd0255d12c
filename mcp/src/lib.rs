//! The Rete control surface: an MCP server on 127.0.0.1 that lets an AI agent
//! read a live session, behind a strict HTTP access gate.
#![deny(missing_docs)]

pub mod token;
pub mod http;
pub mod peer;
pub mod access_log;
pub mod rpc;
pub mod tools;
