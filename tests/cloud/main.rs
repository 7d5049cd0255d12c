//! ReteCloud: the `rete-cloud` service between InspIRCd and WebSocket clients, and its clients (the facade and the
//! reterm binary). One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

/// The reterm binary cargo built for these tests (the support library cannot name it).
const RETERM: &str = env!("CARGO_BIN_EXE_reterm");

mod client;
mod nodes;
mod postgres;
mod reterm;
mod service;
mod ws_client;
