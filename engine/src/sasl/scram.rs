//! SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), client side, without
//! channel binding (the GS2 header is always `n`).
//!
//! Iteration counts are accepted from [`MIN_ITERATIONS`] to
//! [`MAX_ITERATIONS`]: zero is meaningless, and the upper bound stops a
//! hostile server from making the client burn CPU in PBKDF2. Low counts are
//! accepted because some IRC services use them; the server chooses its own
//! storage strength.
//!
//! PBKDF2 is the one slow step, so it is handed to the host: on server-first
//! [`ScramClient::step`] returns a [`KeyDerivation`], the host runs
//! [`KeyDerivation::derive`] wherever it likes (the session actor uses a
//! blocking task, so the session keeps answering meanwhile), and
//! [`ScramClient::resume`] builds client-final from the result.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Credentials, SaslError};

/// The smallest iteration count accepted from a server.
pub const MIN_ITERATIONS: u32 = 1;

/// The largest iteration count accepted from a server, bounding the CPU one
/// authentication can cost (about 0.1 s of one core in a release build).
/// It is three times the 64,000 Atheme uses by default and fifty times the
/// 4,096 of RFC 7677's example and Ergo; a server asking for more is refused
/// rather than obeyed, as other clients cap it too.
pub const MAX_ITERATIONS: u32 = 200_000;

type HmacSha256 = Hmac<Sha256>;

/// The server signature the client expects. Masked in `Debug` and never
/// serialized: knowing it in advance would let an impostor pass as the server.
#[derive(Clone, Default, PartialEq, Eq)]
struct ExpectedSignature(Vec<u8>);

impl fmt::Debug for ExpectedSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("********")
    }
}

/// Where the exchange stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Phase {
    /// Waiting for the server's empty initial challenge.
    Initial,
    /// client-first sent; waiting for server-first.
    ClientFirstSent {
        /// `n,,` or `n,a=<authzid>,`, echoed base64-encoded in client-final.
        gs2_header: String,
        /// client-first without the GS2 header, part of the AuthMessage.
        client_first_bare: String,
    },
    /// server-first checked; waiting for the host's PBKDF2 result. Skipped in
    /// serialization like the signature (a restored client fails instead).
    Deriving {
        #[serde(skip)]
        pending: PendingFinal,
    },
    /// client-final sent; waiting for server-final. A restored client lacks
    /// the signature and so fails verification instead of trusting anyone.
    ClientFinalSent {
        #[serde(skip)]
        expected: ExpectedSignature,
    },
    /// The server proved knowledge of the password.
    Verified,
    /// A step failed; the exchange cannot continue.
    Failed,
}

/// What client-final needs besides the salted password.
#[derive(Clone, Default, PartialEq, Eq)]
struct PendingFinal {
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

impl fmt::Debug for PendingFinal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PendingFinal")
    }
}

/// The PBKDF2 work of one SCRAM exchange: the SASLprepped password, the
/// server's salt and its iteration count. The password is masked in `Debug`
/// and the type is never serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyDerivation {
    password: String,
    salt: Vec<u8>,
    iterations: u32,
}

impl fmt::Debug for KeyDerivation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyDerivation")
            .field("password", &"********")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl KeyDerivation {
    /// The iteration count (at most [`MAX_ITERATIONS`]).
    #[must_use]
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Runs PBKDF2-HMAC-SHA-256: the slow part, CPU-bound and pure.
    #[must_use]
    pub fn derive(&self) -> SaltedPassword {
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(
            self.password.as_bytes(),
            &self.salt,
            self.iterations,
            &mut salted,
        );
        SaltedPassword(salted)
    }
}

/// The result of [`KeyDerivation::derive`]: as good as the password for
/// this salt, so masked in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct SaltedPassword([u8; 32]);

impl fmt::Debug for SaltedPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SaltedPassword(********)")
    }
}

/// What a step of the exchange produced.
#[derive(Debug)]
pub(super) enum ScramStep {
    /// Send this response.
    Respond(Vec<u8>),
    /// Run this derivation, then call [`ScramClient::resume`].
    Derive(KeyDerivation),
}

/// The parsed server-first message.
#[derive(Debug, PartialEq, Eq)]
struct ServerFirst<'a> {
    nonce: &'a str,
    salt: Vec<u8>,
    iterations: u32,
}

/// The SCRAM-SHA-256 state machine behind [`super::SaslClient`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ScramClient {
    client_nonce: String,
    phase: Phase,
}

impl ScramClient {
    /// A fresh exchange using the caller-supplied nonce.
    pub(super) fn new(client_nonce: String) -> Self {
        ScramClient {
            client_nonce,
            phase: Phase::Initial,
        }
    }

    /// Whether the server signature has been verified.
    pub(super) fn is_complete(&self) -> bool {
        self.phase == Phase::Verified
    }

    /// [`Self::step_deferred`] with the key derivation run inline, for
    /// callers that do not mind blocking for it.
    pub(super) fn step(
        &mut self,
        creds: &Credentials,
        challenge: &[u8],
    ) -> Result<Vec<u8>, SaslError> {
        match self.step_deferred(creds, challenge)? {
            ScramStep::Respond(response) => Ok(response),
            ScramStep::Derive(work) => self.resume(&work.derive()),
        }
    }

    /// Advances the exchange by one server message; any error is final.
    /// Server-first asks for the key derivation instead of a response.
    pub(super) fn step_deferred(
        &mut self,
        creds: &Credentials,
        challenge: &[u8],
    ) -> Result<ScramStep, SaslError> {
        let phase = std::mem::replace(&mut self.phase, Phase::Failed);
        let (next, step) = match phase {
            Phase::Initial => {
                let (next, response) = self.client_first(creds, challenge)?;
                (next, ScramStep::Respond(response))
            }
            Phase::ClientFirstSent {
                gs2_header,
                client_first_bare,
            } => {
                let (pending, work) =
                    self.check_server_first(creds, gs2_header, client_first_bare, challenge)?;
                (Phase::Deriving { pending }, ScramStep::Derive(work))
            }
            Phase::ClientFinalSent { expected } => (
                verify_server_final(&expected, challenge)?,
                ScramStep::Respond(Vec::new()),
            ),
            Phase::Deriving { .. } | Phase::Verified | Phase::Failed => {
                return Err(SaslError::UnexpectedStep)
            }
        };
        self.phase = next;
        Ok(step)
    }

    /// Builds client-final from the derived key; any error is final.
    pub(super) fn resume(&mut self, salted: &SaltedPassword) -> Result<Vec<u8>, SaslError> {
        let phase = std::mem::replace(&mut self.phase, Phase::Failed);
        let Phase::Deriving { pending } = phase else {
            return Err(SaslError::UnexpectedStep);
        };
        if pending.nonce.is_empty() {
            // A restored client lost what client-final needs.
            return Err(SaslError::UnexpectedStep);
        }
        let (next, response) = client_final(&pending, salted)?;
        self.phase = next;
        Ok(response)
    }

    /// Builds client-first: `<gs2-header>n=<saslname>,r=<nonce>`.
    fn client_first(
        &self,
        creds: &Credentials,
        challenge: &[u8],
    ) -> Result<(Phase, Vec<u8>), SaslError> {
        if !challenge.is_empty() {
            return Err(SaslError::UnexpectedChallenge);
        }
        if !is_valid_nonce(&self.client_nonce) {
            return Err(SaslError::InvalidClientNonce);
        }
        let username = prepare(&creds.authcid, "username is not allowed by SASLprep")?;
        let gs2_header = match &creds.authzid {
            Some(authzid) => {
                let authzid = prepare(authzid, "authzid is not allowed by SASLprep")?;
                format!("n,a={},", escape_saslname(&authzid))
            }
            None => "n,,".to_owned(),
        };
        let client_first_bare = format!("n={},r={}", escape_saslname(&username), self.client_nonce);
        let message = format!("{gs2_header}{client_first_bare}").into_bytes();
        let next = Phase::ClientFirstSent {
            gs2_header,
            client_first_bare,
        };
        Ok((next, message))
    }

    /// Checks server-first and says what to derive.
    fn check_server_first(
        &self,
        creds: &Credentials,
        gs2_header: String,
        client_first_bare: String,
        challenge: &[u8],
    ) -> Result<(PendingFinal, KeyDerivation), SaslError> {
        let server_first = std::str::from_utf8(challenge)
            .map_err(|_| SaslError::MalformedServerFirst("not UTF-8"))?;
        let parsed = parse_server_first(server_first)?;
        if !extends_nonce(parsed.nonce, &self.client_nonce) {
            return Err(SaslError::NonceMismatch);
        }
        let password = prepare(&creds.password, "password is not allowed by SASLprep")?;
        let pending = PendingFinal {
            gs2_header,
            client_first_bare,
            server_first: server_first.to_owned(),
            nonce: parsed.nonce.to_owned(),
        };
        let work = KeyDerivation {
            password,
            salt: parsed.salt,
            iterations: parsed.iterations,
        };
        Ok((pending, work))
    }
}

/// Builds client-final with the client proof, and the signature the server
/// must answer with.
fn client_final(
    pending: &PendingFinal,
    salted: &SaltedPassword,
) -> Result<(Phase, Vec<u8>), SaslError> {
    let salted = &salted.0;
    let client_key = hmac(salted, b"Client Key")?;
    let stored_key = Sha256::digest(&client_key);
    let without_proof = format!(
        "c={},r={}",
        STANDARD.encode(&pending.gs2_header),
        pending.nonce
    );
    let auth_message = format!(
        "{},{},{without_proof}",
        pending.client_first_bare, pending.server_first
    );
    let client_signature = hmac(&stored_key, auth_message.as_bytes())?;
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&client_signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let server_key = hmac(salted, b"Server Key")?;
    let expected = ExpectedSignature(hmac(&server_key, auth_message.as_bytes())?);
    let message = format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes();
    Ok((Phase::ClientFinalSent { expected }, message))
}

/// Checks server-final (`v=<signature>` or `e=<error>`).
fn verify_server_final(expected: &ExpectedSignature, challenge: &[u8]) -> Result<Phase, SaslError> {
    let text =
        std::str::from_utf8(challenge).map_err(|_| SaslError::MalformedServerFinal("not UTF-8"))?;
    let first = text.split(',').next().unwrap_or("");
    if let Some(error) = first.strip_prefix("e=") {
        return Err(SaslError::ServerError(error.to_owned()));
    }
    let signature = first
        .strip_prefix("v=")
        .ok_or(SaslError::MalformedServerFinal("missing v= attribute"))?;
    let signature = STANDARD
        .decode(signature)
        .map_err(|_| SaslError::MalformedServerFinal("signature is not base64"))?;
    // An empty expectation (a restored client) must never match.
    if expected.0.is_empty() || !bool::from(signature.ct_eq(&expected.0)) {
        return Err(SaslError::ServerSignatureMismatch);
    }
    Ok(Phase::Verified)
}

/// Parses `r=<nonce>,s=<salt>,i=<count>[,extensions]` in the RFC's fixed
/// order; a leading `m=` (mandatory extension) cannot be honoured.
fn parse_server_first(text: &str) -> Result<ServerFirst<'_>, SaslError> {
    let mut attrs = text.split(',');
    let first = attrs.next().unwrap_or("");
    if let Some(error) = first.strip_prefix("e=") {
        return Err(SaslError::ServerError(error.to_owned()));
    }
    if first.starts_with("m=") {
        return Err(SaslError::MalformedServerFirst(
            "unsupported mandatory extension",
        ));
    }
    let nonce = first
        .strip_prefix("r=")
        .filter(|n| is_valid_nonce(n))
        .ok_or(SaslError::MalformedServerFirst(
            "missing or invalid r= nonce",
        ))?;
    let salt = attrs
        .next()
        .and_then(|a| a.strip_prefix("s="))
        .ok_or(SaslError::MalformedServerFirst("missing s= salt"))?;
    let salt = STANDARD
        .decode(salt)
        .map_err(|_| SaslError::MalformedServerFirst("salt is not base64"))?;
    if salt.is_empty() {
        return Err(SaslError::MalformedServerFirst("empty salt"));
    }
    let iterations: u64 = attrs
        .next()
        .and_then(|a| a.strip_prefix("i="))
        .ok_or(SaslError::MalformedServerFirst(
            "missing i= iteration count",
        ))?
        .parse()
        .map_err(|_| SaslError::MalformedServerFirst("iteration count is not a number"))?;
    let iterations = u32::try_from(iterations)
        .ok()
        .filter(|i| (MIN_ITERATIONS..=MAX_ITERATIONS).contains(i))
        .ok_or(SaslError::BadIterationCount(iterations))?;
    Ok(ServerFirst {
        nonce,
        salt,
        iterations,
    })
}

/// The RFC's `printable` nonce alphabet: ASCII 0x21..=0x7E except `,`.
fn is_valid_nonce(nonce: &str) -> bool {
    !nonce.is_empty()
        && nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// The server must append its own part to our nonce, or it may be replaying
/// an old exchange.
fn extends_nonce(server: &str, client: &str) -> bool {
    server.len() > client.len() && server.starts_with(client)
}

/// SASLprep, with an error naming only which field failed.
fn prepare(s: &str, what: &'static str) -> Result<String, SaslError> {
    stringprep::saslprep(s)
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| SaslError::InvalidCredentials(what))
}

/// Escapes `,` and `=` in a saslname, which would otherwise split attributes.
fn escape_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// HMAC-SHA-256 of `data` under `key`.
fn hmac(key: &[u8], data: &[u8]) -> Result<Vec<u8>, SaslError> {
    // HMAC accepts keys of any length, so this error cannot occur; it is
    // mapped rather than unwrapped to keep library code panic-free.
    let mut mac = HmacSha256::new_from_slice(key)
        .map_err(|_| SaslError::InvalidCredentials("HMAC key rejected"))?;
    mac.update(data);
    Ok(mac.finalize().into_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const RFC_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const RFC_SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const RFC_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const RFC_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn creds(user: &str, password: &str, authzid: Option<&str>) -> Credentials {
        Credentials {
            authcid: user.to_owned(),
            password: password.to_owned(),
            authzid: authzid.map(str::to_owned),
        }
    }

    fn rfc_creds() -> Credentials {
        creds("user", "pencil", None)
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    /// A client that has sent client-first for the RFC user.
    fn after_client_first() -> ScramClient {
        let mut c = ScramClient::new(RFC_NONCE.to_owned());
        c.step(&rfc_creds(), b"").unwrap();
        c
    }

    #[test]
    fn rfc7677_vector() {
        let creds = rfc_creds();
        let mut c = ScramClient::new(RFC_NONCE.to_owned());
        assert_eq!(text(c.step(&creds, b"").unwrap()), RFC_CLIENT_FIRST);
        assert!(!c.is_complete());
        let client_final = c.step(&creds, RFC_SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(text(client_final), RFC_CLIENT_FINAL);
        assert!(!c.is_complete());
        assert_eq!(c.step(&creds, RFC_SERVER_FINAL.as_bytes()).unwrap(), b"");
        assert!(c.is_complete());
        assert_eq!(c.step(&creds, b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn rfc7677_vector_through_sasl_client() {
        let mut c = super::super::SaslClient::new(
            super::super::Mechanism::ScramSha256,
            rfc_creds(),
            RFC_NONCE.to_owned(),
        );
        assert_eq!(text(c.step(b"").unwrap()), RFC_CLIENT_FIRST);
        assert_eq!(
            text(c.step(RFC_SERVER_FIRST.as_bytes()).unwrap()),
            RFC_CLIENT_FINAL
        );
        assert!(!c.is_complete());
        assert!(c.step(RFC_SERVER_FINAL.as_bytes()).unwrap().is_empty());
        assert!(c.is_complete());
    }

    #[test]
    fn saslprep_maps_password_before_hashing() {
        // U+00AD SOFT HYPHEN is mapped to nothing, so this is "pencil".
        let creds = creds("user", "pen\u{AD}cil", None);
        let mut c = ScramClient::new(RFC_NONCE.to_owned());
        c.step(&creds, b"").unwrap();
        let client_final = c.step(&creds, RFC_SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(text(client_final), RFC_CLIENT_FINAL);
    }

    #[test]
    fn prohibited_password_is_refused_without_echo() {
        let creds = creds("user", "bell\u{7}pw", None);
        let mut c = after_client_first();
        let err = c.step(&creds, RFC_SERVER_FIRST.as_bytes()).unwrap_err();
        assert!(matches!(err, SaslError::InvalidCredentials(_)));
        assert!(!err.to_string().contains("bell"));
        assert_eq!(c.step(&creds, b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn authzid_goes_in_gs2_header_and_channel_binding() {
        let creds = creds("user", "pencil", Some("admin"));
        let mut c = ScramClient::new(RFC_NONCE.to_owned());
        let first = text(c.step(&creds, b"").unwrap());
        assert_eq!(first, "n,a=admin,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let fin = text(c.step(&creds, RFC_SERVER_FIRST.as_bytes()).unwrap());
        // base64("n,a=admin,")
        assert!(fin.starts_with("c=bixhPWFkbWluLA==,r="), "{fin}");
    }

    #[test]
    fn saslname_escaping() {
        assert_eq!(escape_saslname("a,b=c"), "a=2Cb=3Dc");
        assert_eq!(escape_saslname("=2C"), "=3D2C");
        let creds = creds("a,b=c", "pw", Some("x=y"));
        let mut c = ScramClient::new("abc".to_owned());
        assert_eq!(
            text(c.step(&creds, b"").unwrap()),
            "n,a=x=3Dy,n=a=2Cb=3Dc,r=abc"
        );
    }

    #[test]
    fn invalid_client_nonces() {
        for nonce in ["", "a,b", "sp ace", "é"] {
            let mut c = ScramClient::new(nonce.to_owned());
            assert_eq!(
                c.step(&rfc_creds(), b""),
                Err(SaslError::InvalidClientNonce),
                "{nonce:?}"
            );
        }
    }

    #[test]
    fn non_empty_first_challenge_is_refused() {
        let mut c = ScramClient::new(RFC_NONCE.to_owned());
        assert_eq!(
            c.step(&rfc_creds(), b"r=x"),
            Err(SaslError::UnexpectedChallenge)
        );
    }

    #[test]
    fn nonce_not_extending_ours() {
        for server_first in [
            "r=someoneElsesNonce123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "r=rOprNGfwEbeRWgbNEk,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        ] {
            let mut c = after_client_first();
            assert_eq!(
                c.step(&rfc_creds(), server_first.as_bytes()),
                Err(SaslError::NonceMismatch),
                "{server_first}"
            );
            assert_eq!(c.step(&rfc_creds(), b""), Err(SaslError::UnexpectedStep));
        }
    }

    #[test]
    fn tampered_server_signature() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        let tampered = "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
        assert_eq!(
            c.step(&rfc_creds(), tampered.as_bytes()),
            Err(SaslError::ServerSignatureMismatch)
        );
        assert!(!c.is_complete());
        assert_eq!(
            c.step(&rfc_creds(), RFC_SERVER_FINAL.as_bytes()),
            Err(SaslError::UnexpectedStep)
        );
    }

    #[test]
    fn truncated_server_signature() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            c.step(&rfc_creds(), b"v=6rriTRBi23WpRR/w"),
            Err(SaslError::ServerSignatureMismatch)
        );
    }

    #[test]
    fn server_final_error_attribute() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        let err = c.step(&rfc_creds(), b"e=invalid-proof").unwrap_err();
        assert_eq!(err, SaslError::ServerError("invalid-proof".to_owned()));
        assert!(err.to_string().contains("invalid-proof"));
        assert!(!c.is_complete());
    }

    #[test]
    fn server_first_error_attribute() {
        let mut c = after_client_first();
        assert_eq!(
            c.step(&rfc_creds(), b"e=unknown-user"),
            Err(SaslError::ServerError("unknown-user".to_owned()))
        );
    }

    #[test]
    fn malformed_server_final() {
        for bad in [&b"x=abc"[..], b"", b"v=!!notbase64", b"\xff"] {
            let mut c = after_client_first();
            c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
            assert!(
                matches!(
                    c.step(&rfc_creds(), bad),
                    Err(SaslError::MalformedServerFinal(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn server_final_extensions_are_ignored() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        let with_ext = format!("{RFC_SERVER_FINAL},x=ext");
        c.step(&rfc_creds(), with_ext.as_bytes()).unwrap();
        assert!(c.is_complete());
    }

    #[test]
    fn malformed_server_first() {
        let n = "r=rOprNGfwEbeRWgbNEkqOsrv";
        for bad in [
            String::new(),
            "garbage".to_owned(),
            n.to_owned(),
            format!("{n},s=W22ZaJ0SNY7soEsUEjb6gQ=="),
            format!("{n},i=4096,s=W22ZaJ0SNY7soEsUEjb6gQ=="),
            format!("s=W22ZaJ0SNY7soEsUEjb6gQ==,{n},i=4096"),
            format!("{n},s=***,i=4096"),
            format!("{n},s=,i=4096"),
            format!("{n},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=many"),
            format!("{n},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=-1"),
            format!("{n},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999999999999999"),
            format!("m=ext,{n},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
            "r=,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".to_owned(),
        ] {
            let mut c = after_client_first();
            let got = c.step(&rfc_creds(), bad.as_bytes());
            assert!(
                matches!(got, Err(SaslError::MalformedServerFirst(_))),
                "{bad:?} gave {got:?}"
            );
        }
        let mut c = after_client_first();
        assert!(matches!(
            c.step(&rfc_creds(), b"r=\xff"),
            Err(SaslError::MalformedServerFirst(_))
        ));
    }

    #[test]
    fn iteration_bounds() {
        let first = |i: &str| format!("r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={i}");
        assert_eq!(
            parse_server_first(&first("0")),
            Err(SaslError::BadIterationCount(0))
        );
        assert_eq!(
            parse_server_first(&first("200001")),
            Err(SaslError::BadIterationCount(200_001))
        );
        // A million, which the cap used to allow, is refused.
        assert_eq!(
            parse_server_first(&first("1000000")),
            Err(SaslError::BadIterationCount(1_000_000))
        );
        assert_eq!(
            parse_server_first(&first("4294967296")),
            Err(SaslError::BadIterationCount(4_294_967_296))
        );
        assert_eq!(parse_server_first(&first("1")).unwrap().iterations, 1);
        assert_eq!(
            parse_server_first(&first("200000")).unwrap().iterations,
            MAX_ITERATIONS
        );
    }

    #[test]
    fn bad_iterations_stop_the_exchange() {
        let mut c = after_client_first();
        let server_first = "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0";
        assert_eq!(
            c.step(&rfc_creds(), server_first.as_bytes()),
            Err(SaslError::BadIterationCount(0))
        );
        assert_eq!(c.step(&rfc_creds(), b""), Err(SaslError::UnexpectedStep));
    }

    #[test]
    fn server_first_extensions_are_ignored() {
        let parsed = parse_server_first("r=abc,s=AAAA,i=5,x=ext,y=more").unwrap();
        assert_eq!(
            parsed,
            ServerFirst {
                nonce: "abc",
                salt: vec![0, 0, 0],
                iterations: 5
            }
        );
    }

    #[test]
    fn debug_masks_expected_signature() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        let debug = format!("{c:?}");
        assert!(debug.contains("********"), "{debug}");
        let sig = STANDARD
            .decode("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(!debug.contains(&format!("{sig:?}")));
    }

    #[test]
    fn restored_client_never_trusts_server_final() {
        let mut c = after_client_first();
        c.step(&rfc_creds(), RFC_SERVER_FIRST.as_bytes()).unwrap();
        let json = serde_json::to_string(&c).unwrap();
        let mut restored: ScramClient = serde_json::from_str(&json).unwrap();
        assert_eq!(
            restored.step(&rfc_creds(), RFC_SERVER_FINAL.as_bytes()),
            Err(SaslError::ServerSignatureMismatch)
        );
    }

    #[test]
    fn nonce_validity() {
        assert!(is_valid_nonce("abc!~"));
        assert!(!is_valid_nonce(""));
        assert!(!is_valid_nonce("a,b"));
        assert!(!is_valid_nonce("a b"));
        assert!(!is_valid_nonce("\u{7f}"));
        assert!(extends_nonce("abcd", "abc"));
        assert!(!extends_nonce("abc", "abc"));
        assert!(!extends_nonce("xbcd", "abc"));
    }
}
