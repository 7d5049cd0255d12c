//! Properties of the read and raw tools' way-out screen, on engines that never connect (no server).
//! One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

mod raw;
mod redaction;
