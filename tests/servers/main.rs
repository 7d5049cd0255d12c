//! The shared server scenarios (`support::server_scenarios`) against each real server: InspIRCd 3, ngircd 26, and ZNC 1.8
//! in front of either. One binary, built once; nextest runs each test in a process of its own.

// The harness crate, named `support` in every module (an `extern crate` at the root joins the extern prelude).
extern crate rete_test_support as support;

mod inspircd;
mod ngircd;
mod znc;
