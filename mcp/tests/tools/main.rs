//! The control surface's tools, updates and faults through `ToolBox::call` on a real engine, most against a real InspIRCd.
//! One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

mod budget_props;
mod engine_state;
mod faults_ircd_restart;
mod faults_session_crash;
mod generated;
mod grants_debug;
mod held_secrets_live;
mod log;
mod raw;
mod read;
mod redaction_live;
mod search;
mod send;
mod send_invariant;
mod updates_debug;
mod updates_limits;
mod updates_live;
