//! The EXTERNAL mechanism (RFC 4422 appendix A): the identity comes from the
//! TLS client certificate, so the only thing sent is an optional authzid.

use super::Credentials;

/// The authzid, or empty to let the server derive it from the certificate.
pub(super) fn response(creds: &Credentials) -> Vec<u8> {
    creds.authzid.clone().unwrap_or_default().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_without_authzid_and_ignores_password() {
        let c = Credentials {
            authcid: "user".to_owned(),
            password: "pw".to_owned(),
            authzid: None,
        };
        assert!(response(&c).is_empty());
    }

    #[test]
    fn sends_authzid() {
        let c = Credentials {
            authzid: Some("acct".to_owned()),
            ..Credentials::default()
        };
        assert_eq!(response(&c), b"acct");
    }
}
