//! Integration-test harness: real InspIRCd 3 and Atheme servers on loopback, and scripted
//! raw-socket bots. A dev-only library (`rete-test-support`), built once for every test binary;
//! a test binary names it `support` (`extern crate rete_test_support as support;` at its root).
//!
//! ```ignore
//! let ircd = Inspircd::start(InspircdConfig::new()).await?;
//! let mut bob = Bot::connect(ircd.port(), "bob").await?;
//! bob.join("#rete").await?;
//! ```
//!
//! Needs the Debian packages `inspircd` (3.15) and `atheme-services` (7.2) and `setpriv`
//! (util-linux); `.ci/install-deps` installs them.
//!
//! # What the servers offer
//!
//! `CAP LS 302` on the test InspIRCd 3.15.0 (observed, with Atheme linked):
//!
//! ```text
//! account-notify account-tag away-notify batch cap-notify chghost echo-message extended-join
//! extended-monitor inspircd.org/poison inspircd.org/standard-replies invite-notify
//! labeled-response message-tags multi-prefix sasl=PLAIN server-time setname userhost-in-names
//! ```
//!
//! `sasl` is only offered while Atheme is linked (InspIRCd hides it while its SASL target
//! server is missing), and then with the mechanisms Atheme announced. InspIRCd 3 has no
//! `draft/chathistory`, `draft/read-marker` or `sts` (sts needs a TLS port and is not loaded).
//!
//! Other facts tests must allow for:
//! - Registration completes on InspIRCd's 1 Hz background timer, so each bot needs up to a
//!   second to get 001: connect several bots concurrently (`tokio::join!`/`try_join!`).
//! - `+H lines:period` (m_chanhistory) replays to a joining client with the `batch` cap inside
//!   `BATCH +ref chathistory #chan` … `BATCH -ref`, each line carrying `time=` (whole
//!   seconds), `msgid=` and `batch=ref` tags.
//! - The connect class has no flood limits, no DNS or ident lookups.

pub mod atheme;
pub mod bot;
pub mod cli_tests_reterm;
pub mod cloud;
pub mod debug_tools;
pub mod eventually;
pub mod faults;
pub mod inspircd;
pub mod live_tests_session;
pub mod msg;
pub mod ngircd;
pub mod pause_proxy;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod pty_reterm;
pub mod sasl_tests_session;
pub mod secret_corpus;
pub mod server_scenarios;
pub mod tls;
pub mod tool_results;
pub mod unprivileged;
pub mod updates_tests_tools;
pub mod znc;

pub use atheme::Atheme;
pub use bot::{Bot, BotConfig, DEFAULT_TIMEOUT};
pub use inspircd::{Inspircd, InspircdConfig};
pub use msg::Msg;
pub use ngircd::{Ngircd, NgircdConfig};
pub use postgres::{Postgres, PostgresConfig};
pub use znc::{Znc, ZncConfig};
