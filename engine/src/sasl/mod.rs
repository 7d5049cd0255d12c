//! Client-side SASL for IRC's `AUTHENTICATE` exchange.
//!
//! The engine stays deterministic: every random input (the SCRAM client
//! nonce) is handed in by the caller, and the client only turns decoded
//! server challenges into decoded responses. Framing those as base64
//! `AUTHENTICATE` chunks lives in `chunk.rs`.
//!
//! Passwords never leave through `Debug`, serde or error messages: the
//! serialized state simply lacks them, so a restored client must be given
//! fresh credentials before authenticating again.

mod chunk;
mod external;
mod plain;
mod scram;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use chunk::{encode_authenticate, AuthenticateAssembler, CHUNK_LEN, MAX_PAYLOAD_BASE64};
pub use scram::{KeyDerivation, SaltedPassword, MAX_ITERATIONS, MIN_ITERATIONS};

use scram::{ScramClient, ScramStep};

/// What a step of an exchange asks of the caller.
#[derive(Debug)]
pub enum Step {
    /// Send this decoded response.
    Respond(Vec<u8>),
    /// Run [`KeyDerivation::derive`] (slow: PBKDF2), then hand the result to
    /// [`SaslClient::resume`] for the response.
    Derive(KeyDerivation),
}

/// The SASL mechanisms the engine can perform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mechanism {
    /// `PLAIN` (RFC 4616): the password in clear, only safe over TLS.
    Plain,
    /// `EXTERNAL` (RFC 4422): identity from the TLS client certificate.
    External,
    /// `SCRAM-SHA-256` (RFC 7677): password never sent, server verified.
    ScramSha256,
}

impl Mechanism {
    /// The name sent in `AUTHENTICATE <name>` and listed in the `sasl` cap.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::External => "EXTERNAL",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
        }
    }

    /// Recognises a mechanism name case-insensitively (servers and config
    /// files disagree on case); `None` for mechanisms the engine lacks.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Mechanism> {
        [
            Mechanism::Plain,
            Mechanism::External,
            Mechanism::ScramSha256,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(name))
    }
}

/// Who to authenticate as. The password is skipped by serde and masked in
/// `Debug`, so state dumps and logs cannot leak it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The authentication identity (account name).
    pub authcid: String,
    /// The password; empty after deserialization.
    #[serde(skip)]
    pub password: String,
    /// The identity to act as, when different from `authcid`.
    pub authzid: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("authcid", &self.authcid)
            .field("password", &"********")
            .field("authzid", &self.authzid)
            .finish()
    }
}

/// Why an exchange failed. Messages name the problem, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// A challenge arrived after the exchange had finished or failed.
    #[error("unexpected SASL step: the exchange is already over")]
    UnexpectedStep,
    /// The server sent data where the mechanism expects an empty challenge.
    #[error("unexpected non-empty challenge from the server")]
    UnexpectedChallenge,
    /// A credential field cannot be encoded for the mechanism.
    #[error("invalid credentials: {0}")]
    InvalidCredentials(&'static str),
    /// The caller's SCRAM nonce is empty or not printable ASCII without ','.
    #[error("invalid client nonce: must be non-empty printable ASCII without ','")]
    InvalidClientNonce,
    /// The SCRAM server-first message could not be parsed.
    #[error("malformed SCRAM server-first message: {0}")]
    MalformedServerFirst(&'static str),
    /// The server nonce does not extend the client nonce (possible replay).
    #[error("SCRAM server nonce does not extend the client nonce")]
    NonceMismatch,
    /// The iteration count is outside the accepted range.
    #[error("SCRAM iteration count {0} is outside {MIN_ITERATIONS}..={MAX_ITERATIONS}")]
    BadIterationCount(u64),
    /// The SCRAM server-final message could not be parsed.
    #[error("malformed SCRAM server-final message: {0}")]
    MalformedServerFinal(&'static str),
    /// The server reported an authentication error (`e=` attribute).
    #[error("server reported SCRAM error: {0}")]
    ServerError(String),
    /// The server could not prove it knows the password (possible MITM).
    #[error("SCRAM server signature mismatch")]
    ServerSignatureMismatch,
    /// An `AUTHENTICATE` chunk was longer than 400 bytes.
    #[error("AUTHENTICATE chunk longer than {CHUNK_LEN} bytes")]
    ChunkTooLong,
    /// The reassembled `AUTHENTICATE` payload exceeded the size bound.
    #[error("AUTHENTICATE payload longer than {MAX_PAYLOAD_BASE64} base64 bytes")]
    PayloadTooLarge,
    /// An `AUTHENTICATE` payload was not valid base64.
    #[error("AUTHENTICATE payload is not valid base64")]
    InvalidBase64,
}

/// Progress of a single-message mechanism (PLAIN, EXTERNAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum OneShot {
    /// Waiting for the server's empty challenge.
    Ready,
    /// The response went out; nothing left to do client-side.
    Sent,
    /// A step failed; the exchange cannot continue.
    Failed,
}

/// Mechanism-specific progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Progress {
    /// PLAIN or EXTERNAL.
    OneShot(OneShot),
    /// SCRAM-SHA-256.
    Scram(ScramClient),
}

/// A client-side SASL exchange: feed it each decoded server challenge and
/// send back what [`SaslClient::step`] returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaslClient {
    mechanism: Mechanism,
    creds: Credentials,
    progress: Progress,
}

impl SaslClient {
    /// Starts an exchange. `client_nonce` is only used by SCRAM; the caller
    /// supplies it (at least 18 random printable characters is customary)
    /// so the engine itself never touches a random source.
    #[must_use]
    pub fn new(mech: Mechanism, creds: Credentials, client_nonce: String) -> Self {
        let progress = match mech {
            Mechanism::Plain | Mechanism::External => Progress::OneShot(OneShot::Ready),
            Mechanism::ScramSha256 => Progress::Scram(ScramClient::new(client_nonce)),
        };
        SaslClient {
            mechanism: mech,
            creds,
            progress,
        }
    }

    /// The mechanism this exchange performs.
    #[must_use]
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// Given the server's decoded challenge (empty for `+`), returns the
    /// decoded response to send. Any error ends the exchange: later steps
    /// return [`SaslError::UnexpectedStep`], and the caller should abort with
    /// `AUTHENTICATE *`.
    ///
    /// # Errors
    /// Unusable credentials or nonce, a malformed or hostile server message
    /// (bad nonce, iteration count, signature), a server-reported `e=`
    /// error, or a step after the exchange ended.
    pub fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslError> {
        match &mut self.progress {
            Progress::OneShot(state) => {
                let result = one_shot_step(*state, self.mechanism, &self.creds, challenge);
                *state = if result.is_ok() {
                    OneShot::Sent
                } else {
                    OneShot::Failed
                };
                result
            }
            Progress::Scram(scram) => scram.step(&self.creds, challenge),
        }
    }

    /// Like [`Self::step`], but SCRAM's key derivation is handed back as
    /// [`Step::Derive`] instead of run here, so the caller can run it off
    /// whatever must keep answering.
    ///
    /// # Errors
    /// As [`Self::step`].
    pub fn step_deferred(&mut self, challenge: &[u8]) -> Result<Step, SaslError> {
        match &mut self.progress {
            Progress::Scram(scram) => Ok(match scram.step_deferred(&self.creds, challenge)? {
                ScramStep::Respond(r) => Step::Respond(r),
                ScramStep::Derive(work) => Step::Derive(work),
            }),
            Progress::OneShot(_) => self.step(challenge).map(Step::Respond),
        }
    }

    /// Finishes the step that returned [`Step::Derive`] with its result.
    ///
    /// # Errors
    /// [`SaslError::UnexpectedStep`] when no derivation is awaited.
    pub fn resume(&mut self, salted: &SaltedPassword) -> Result<Vec<u8>, SaslError> {
        match &mut self.progress {
            Progress::Scram(scram) => scram.resume(salted),
            Progress::OneShot(_) => Err(SaslError::UnexpectedStep),
        }
    }

    /// Whether the client-side work is done. For SCRAM this means the
    /// server's signature was verified; PLAIN and EXTERNAL have nothing to
    /// verify, so they are complete once their response is produced.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        match &self.progress {
            Progress::OneShot(state) => *state == OneShot::Sent,
            Progress::Scram(scram) => scram.is_complete(),
        }
    }
}

/// The single step of PLAIN and EXTERNAL.
fn one_shot_step(
    state: OneShot,
    mechanism: Mechanism,
    creds: &Credentials,
    challenge: &[u8],
) -> Result<Vec<u8>, SaslError> {
    if state != OneShot::Ready {
        return Err(SaslError::UnexpectedStep);
    }
    if !challenge.is_empty() {
        return Err(SaslError::UnexpectedChallenge);
    }
    match mechanism {
        Mechanism::External => Ok(external::response(creds)),
        _ => plain::response(creds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(authzid: Option<&str>) -> Credentials {
        Credentials {
            authcid: "alice".to_owned(),
            password: "s3cret-pw".to_owned(),
            authzid: authzid.map(str::to_owned),
        }
    }

    #[test]
    fn mechanism_names() {
        assert_eq!(Mechanism::Plain.name(), "PLAIN");
        assert_eq!(Mechanism::External.name(), "EXTERNAL");
        assert_eq!(Mechanism::ScramSha256.name(), "SCRAM-SHA-256");
    }

    #[test]
    fn mechanism_from_name_ignores_case() {
        assert_eq!(Mechanism::from_name("plain"), Some(Mechanism::Plain));
        assert_eq!(Mechanism::from_name("External"), Some(Mechanism::External));
        assert_eq!(
            Mechanism::from_name("scram-sha-256"),
            Some(Mechanism::ScramSha256)
        );
        assert_eq!(Mechanism::from_name("SCRAM-SHA-1"), None);
        assert_eq!(Mechanism::from_name(""), None);
    }

    #[test]
    fn credentials_debug_masks_password() {
        let text = format!("{:?}", creds(Some("bob")));
        assert!(!text.contains("s3cret-pw"), "{text}");
        assert!(text.contains("********"));
        assert!(text.contains("alice") && text.contains("bob"));
    }

    #[test]
    fn credentials_serde_drops_password() {
        let json = serde_json::to_string(&creds(None)).unwrap();
        assert!(!json.contains("s3cret-pw"), "{json}");
        let back: Credentials = serde_json::from_str(&json).unwrap();
        assert_eq!(back.authcid, "alice");
        assert_eq!(back.password, "");
    }

    #[test]
    fn client_debug_and_serde_hide_password() {
        for mech in [
            Mechanism::Plain,
            Mechanism::External,
            Mechanism::ScramSha256,
        ] {
            let client = SaslClient::new(mech, creds(None), "nonce123".to_owned());
            let debug = format!("{client:?}");
            let json = serde_json::to_string(&client).unwrap();
            assert!(!debug.contains("s3cret-pw"), "{debug}");
            assert!(!json.contains("s3cret-pw"), "{json}");
            let back: SaslClient = serde_json::from_str(&json).unwrap();
            assert_eq!(back.mechanism(), mech);
        }
    }

    #[test]
    fn plain_exchange() {
        let mut c = SaslClient::new(Mechanism::Plain, creds(None), String::new());
        assert_eq!(c.mechanism(), Mechanism::Plain);
        assert!(!c.is_complete());
        assert_eq!(c.step(b"").unwrap(), b"alice\0alice\0s3cret-pw".to_vec());
        assert!(c.is_complete());
        assert_eq!(c.step(b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn plain_with_authzid() {
        let mut c = SaslClient::new(Mechanism::Plain, creds(Some("bob")), String::new());
        assert_eq!(c.step(b"").unwrap(), b"bob\0alice\0s3cret-pw".to_vec());
    }

    #[test]
    fn plain_rejects_non_empty_challenge_and_then_stops() {
        let mut c = SaslClient::new(Mechanism::Plain, creds(None), String::new());
        assert_eq!(c.step(b"x"), Err(SaslError::UnexpectedChallenge));
        assert!(!c.is_complete());
        assert_eq!(c.step(b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn external_exchange() {
        let mut c = SaslClient::new(Mechanism::External, creds(None), String::new());
        assert_eq!(c.step(b"").unwrap(), Vec::<u8>::new());
        assert!(c.is_complete());
        let mut c = SaslClient::new(Mechanism::External, creds(Some("bob")), String::new());
        assert_eq!(c.step(b"").unwrap(), b"bob".to_vec());
        assert_eq!(c.step(b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn error_messages_never_contain_the_password() {
        let mut c = SaslClient::new(
            Mechanism::Plain,
            Credentials {
                authcid: "a".to_owned(),
                password: "pw\0leak".to_owned(),
                authzid: None,
            },
            String::new(),
        );
        let err = c.step(b"").unwrap_err();
        assert!(!err.to_string().contains("leak"));
        assert!(!format!("{err:?}").contains("leak"));
    }
}
