//! The raw-line tripwire: the last check before a raw line is returned.
//!
//! Source masking should already have hidden every credential; this catches
//! what it could not (a line typed into the raw buffer, sent with `/quote` or
//! by a script) by its shape alone. It reads the command after tags and
//! prefix, so a message that merely mentions PASS is not a PASS command.

use crate::line::{header, params, starts_with_ignore_case};
use crate::MASK;

/// True when a raw line still has the shape of a credential: a PASS whose
/// password is not the mask, an AUTHENTICATE with more than one parameter or
/// whose parameter is anything but `+`, the mask, PLAIN, EXTERNAL or
/// SCRAM-…, or an OPER with an unmasked password (the one parameter of a
/// one-parameter OPER counts as its password).
///
/// The contract's list leaves out the abort `AUTHENTICATE *`, so it trips
/// too: withholding a line that carries nothing is the safe failure.
pub fn is_credential_shaped(line: &str) -> bool {
    let Some(h) = header(line) else {
        return false;
    };
    let p = params(h.rest);
    if h.command.eq_ignore_ascii_case("PASS") {
        p.iter().any(|w| *w != MASK)
    } else if h.command.eq_ignore_ascii_case("AUTHENTICATE") {
        match p.as_slice() {
            [] => false,
            [one] => !is_allowed_authenticate(one),
            _ => true,
        }
    } else if h.command.eq_ignore_ascii_case("OPER") {
        match p.as_slice() {
            [] => false,
            [one] => *one != MASK,
            [_, secret @ ..] => secret.iter().any(|w| *w != MASK),
        }
    } else {
        false
    }
}

fn is_allowed_authenticate(param: &str) -> bool {
    param == "+"
        || param == MASK
        || param.eq_ignore_ascii_case("PLAIN")
        || param.eq_ignore_ascii_case("EXTERNAL")
        || starts_with_ignore_case(param, "SCRAM-")
}
