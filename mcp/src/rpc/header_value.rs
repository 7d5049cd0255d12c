//! The 2026-07-28 encoding of a header value that mirrors body text
//! (`Mcp-Method`, `Mcp-Name`): a value HTTP cannot carry as is is sent as
//! `=?base64?<standard base64 of its UTF-8>?=`; any other value is literal.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// The text a header value stands for: the decoded payload of an
/// `=?base64?…?=` value, else the value itself. None when the wrapper's
/// payload is not canonical base64 of UTF-8 text, so a corrupt header never
/// matches a body value by accident.
pub(crate) fn decode(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    // The STANDARD engine requires padding and rejects non-zero trailing
    // bits, so only the one canonical spelling of each text decodes.
    let bytes = STANDARD.decode(payload).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_values_are_themselves() {
        assert_eq!(decode("list_sessions").as_deref(), Some("list_sessions"));
        assert_eq!(decode("").as_deref(), Some(""));
        assert_eq!(decode("=?base64?").as_deref(), Some("=?base64?"));
    }

    #[test]
    fn wrapped_values_are_decoded() {
        let wrapped = format!("=?base64?{}?=", STANDARD.encode("café ☕"));
        assert_eq!(decode(&wrapped).as_deref(), Some("café ☕"));
        assert_eq!(decode("=?base64??=").as_deref(), Some(""));
    }

    #[test]
    fn a_corrupt_wrapper_matches_nothing() {
        assert_eq!(decode("=?base64?not base64?="), None);
        assert_eq!(decode("=?base64?YQ?="), None, "padding missing");
        assert_eq!(decode("=?base64?YR==?="), None, "non-zero trailing bits");
        assert_eq!(decode("=?base64?/w==?="), None, "not UTF-8");
    }
}
