#![deny(missing_docs)]
//! The pure pieces of `reterm`, kept in a library so integration tests (and the
//! binary) share one copy: the config file and the input-line parser.

pub mod client;
pub mod config;
pub mod input;
pub mod tui;
