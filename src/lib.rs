#![deny(missing_docs)]
//! The pure pieces of `reterm`, kept in a library so integration tests (and the
//! binary) share one copy: the config file, the input-line parser and the
//! secrets file.

pub mod client;
pub mod config;
pub mod input;
pub mod secrets;
pub mod tui;
