//! Rete's redaction rules as pure functions.
//!
//! No secret Rete knows should leave it through any surface. This crate holds
//! the rules every surface applies, with no I/O and no state beyond the
//! [`SecretSet`] a session builds, so the same text is masked the same way
//! whether it reaches the raw buffer, a transcript, the control surface or the
//! terminal.
//!
//! # Layout
//! - `line`: reading a raw IRC line (tags, `:prefix`, command, parameters) and
//!   [`mask_line`], masking at the source (PASS, AUTHENTICATE, OPER, service
//!   logins and the NS/CS aliases); [`mask_sent_line`], the same for a line
//!   an agent sends, with every AUTHENTICATE masked.
//! - `service`: the service-login table, [`mask_service_login`].
//! - `tripwire`: [`is_credential_shaped`], the last check on a raw line before
//!   it is returned.
//! - `json`: ReteCloud frames and log lines, [`mask_json`] and [`mask_frame`].
//! - `frame`: a ReteCloud transport frame as shown, [`mask_retecloud_frame`]
//!   (the JSON rule and the IRC line it carries) and [`mask_irc_echo`].
//! - `display`: [`display_escape`], so text cannot draw on, hide or reorder
//!   the row that shows it, and [`escape_invisible`], the same escapes with
//!   nothing stripped (the AI access log).
//! - `secrets`: [`SecretSet`], the way-out scan for a session's exact secrets.
//! - `secret`: [`Secret`], the one wrapper that holds a secret value with a
//!   `Debug` that never shows it.
#![deny(missing_docs)]

mod display;
mod drawn;
mod frame;
mod json;
mod line;
mod secret;
mod secrets;
mod service;
mod tripwire;

pub use display::{display_escape, escape_invisible};
pub use frame::{mask_irc_echo, mask_retecloud_frame, IRC_ECHO_PREFIX};
pub use json::{mask_frame, mask_json};
pub use line::{mask_line, mask_sent_line};
pub use secret::Secret;
pub use secrets::SecretSet;
pub use service::mask_service_login;
pub use tripwire::{is_credential_shaped, is_server_challenge};

/// What is shown instead of a secret, everywhere. Fixed so that a reader (and
/// the tripwire) can tell a masked credential from a real one.
pub const MASK: &str = "********";
