//! The PLAIN mechanism (RFC 4616): `authzid NUL authcid NUL password`.
//!
//! Without an explicit authzid the authcid is sent in its place, as most
//! clients do: some servers and test suites refuse an empty authzid.

use super::{Credentials, SaslError};

/// Builds the PLAIN message. NUL separates the fields, so a NUL inside one
/// would shift them; such credentials are refused rather than mangled.
pub(super) fn response(creds: &Credentials) -> Result<Vec<u8>, SaslError> {
    let authzid = creds.authzid.as_deref().unwrap_or(&creds.authcid);
    if authzid.contains('\0') {
        return Err(SaslError::InvalidCredentials("authzid contains NUL"));
    }
    if creds.authcid.contains('\0') {
        return Err(SaslError::InvalidCredentials("authcid contains NUL"));
    }
    if creds.password.contains('\0') {
        return Err(SaslError::InvalidCredentials("password contains NUL"));
    }
    let mut out =
        Vec::with_capacity(authzid.len() + creds.authcid.len() + creds.password.len() + 2);
    out.extend_from_slice(authzid.as_bytes());
    out.push(0);
    out.extend_from_slice(creds.authcid.as_bytes());
    out.push(0);
    out.extend_from_slice(creds.password.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(authcid: &str, password: &str, authzid: Option<&str>) -> Credentials {
        Credentials {
            authcid: authcid.to_owned(),
            password: password.to_owned(),
            authzid: authzid.map(str::to_owned),
        }
    }

    #[test]
    fn without_authzid_sends_the_authcid_as_authzid() {
        assert_eq!(response(&creds("u", "p", None)).unwrap(), b"u\0u\0p");
    }

    #[test]
    fn with_authzid() {
        assert_eq!(response(&creds("u", "p", Some("z"))).unwrap(), b"z\0u\0p");
    }

    #[test]
    fn utf8_passes_through_unchanged() {
        assert_eq!(
            response(&creds("zoë", "pässwörd", None)).unwrap(),
            "zoë\0zoë\0pässwörd".as_bytes()
        );
    }

    #[test]
    fn nul_in_any_field_is_refused() {
        for c in [
            creds("u\0", "p", None),
            creds("u", "p\0", None),
            creds("u", "p", Some("\0z")),
        ] {
            assert!(matches!(
                response(&c),
                Err(SaslError::InvalidCredentials(_))
            ));
        }
    }
}
