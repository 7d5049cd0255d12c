//! The reterm binary: line mode through stdin and stdout, full screen in a real pseudo-terminal, its transcripts, the
//! secret corpus, and its config file. One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

/// The reterm binary cargo built for these tests (the support library cannot name it).
const RETERM: &str = env!("CARGO_BIN_EXE_reterm");

mod approve;
mod cli;
mod config;
mod fixes;
mod habits;
mod raw;
mod redaction;
mod screen;
mod secret_corpus;
mod transcripts;
