//! Tests against a real InspIRCd (with Atheme where a test links it) or a scripted server: the harness itself, the engine
//! through `Rete`, SASL, and the embedding examples. One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

mod embed_examples;
mod engine_backpressure;
mod engine_history;
mod engine_members;
mod engine_messages;
mod engine_outgoing;
mod engine_recovery;
mod engine_registration;
mod engine_sasl;
mod engine_tls;
mod harness;
mod sasl_external;
mod sasl_scram;
