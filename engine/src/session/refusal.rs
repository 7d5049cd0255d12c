//! Registration refusals that retrying cannot fix.
//!
//! A wrong server or bouncer password, SASL credentials refused by a server
//! that requires SASL, or a server that takes none of our nicks fail the same
//! way on every attempt, and reconnecting every few seconds is what gets an
//! address banned by fail2ban-style modules. Such a refusal is recorded in
//! [`Connection::registration_refused`](super::Connection); the host reads it
//! when the link closes and stays disconnected. Network errors and anything
//! after 001 keep the ordinary reconnect backoff.
//!
//! What the servers in the tests say for a wrong password:
//! - ZNC 1.8: `464 nick :Invalid Password`, then it closes the link;
//! - ngircd 26: `ERROR :Access denied: Bad password?`;
//! - InspIRCd 3: `ERROR :Closing link: (user@host) [Access denied by configuration]`.

use super::registration::RegStep;
use super::Session;
use crate::line::Line;

/// Words in an `ERROR` before 001 that mean the login itself was refused.
const CREDENTIAL_WORDS: &[&str] = &[
    "password",
    "passwd",
    "access denied",
    "credential",
    "authenticat",
    "sasl",
];

impl Session {
    /// 464 ERR_PASSWDMISMATCH.
    pub(super) fn on_password_mismatch(&mut self, line: &Line<'_>) {
        if self.registration.step != RegStep::Registered {
            let text = line.params().last().copied().unwrap_or("");
            self.refuse_registration(format!("the server refused the password ({text})"));
        }
        self.push_server_reply("464", line);
    }

    /// `ERROR` before 001 whose text says the login was refused.
    pub(super) fn note_error_before_welcome(&mut self, text: &str) {
        let registering = !matches!(self.registration.step, RegStep::Registered | RegStep::Idle);
        if registering && self.connection.registration_refused.is_none() {
            let lower = text.to_ascii_lowercase();
            if CREDENTIAL_WORDS.iter().any(|w| lower.contains(w)) {
                self.refuse_registration(format!("the server refused the login ({text})"));
            }
        }
    }

    /// The link closed before 001: a refusal if the nicks ran out or SASL
    /// credentials were refused, since the server then closed on us for it.
    pub(super) fn note_closed_before_welcome(&mut self) {
        if matches!(self.registration.step, RegStep::Registered | RegStep::Idle)
            || self.connection.registration_refused.is_some()
        {
            return;
        }
        if self.registration.nick_exhausted {
            let tried = self.registration.tried_nicks.join(", ");
            self.refuse_registration(format!("the server accepted none of the nicks {tried}"));
        } else if self.registration.sasl_refused {
            self.refuse_registration(
                "SASL authentication failed and the server closed the link, so it requires SASL"
                    .to_owned(),
            );
        }
    }

    fn refuse_registration(&mut self, why: String) {
        self.connection.registration_refused = Some(why);
    }
}
