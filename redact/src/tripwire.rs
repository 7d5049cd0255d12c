//! The raw-line tripwire: the last check before a raw line is returned.
//!
//! Source masking should already have hidden every credential; this catches
//! what it could not (a line typed into the raw buffer, sent with `/quote` or
//! by a script) by its shape alone. It reads the command after tags and
//! prefix, so a message that merely mentions PASS is not a PASS command; the
//! command and parameters are read as drawn, so a formatting code or an
//! invisible character can neither hide a PASS nor pass for the mask.

use crate::drawn::drawn;
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
    let command = drawn(h.command);
    let is = |name: &str| command.eq_ignore_ascii_case(name);
    if !(is("PASS") || is("AUTHENTICATE") || is("OPER")) {
        return false;
    }
    let p = params(h.rest);
    let unmasked = |w: &&str| *drawn(w) != *MASK;
    if is("PASS") {
        p.iter().any(unmasked)
    } else if is("AUTHENTICATE") {
        match p.as_slice() {
            [] => false,
            [one] => !is_allowed_authenticate(one),
            _ => true,
        }
    } else {
        match p.as_slice() {
            [] => false,
            [one] => unmasked(one),
            [_, secret @ ..] => secret.iter().any(unmasked),
        }
    }
}

/// True for an AUTHENTICATE from the server that carries a challenge: any
/// parameter but the empty `+`. The raw view withholds these whatever they
/// show (masked at the source, they read `AUTHENTICATE ********`): a
/// challenge cannot be told from a payload by its shape.
pub fn is_server_challenge(line: &str) -> bool {
    let Some(h) = header(line) else {
        return false;
    };
    if !drawn(h.command).eq_ignore_ascii_case("AUTHENTICATE") {
        return false;
    }
    match params(h.rest).as_slice() {
        [] => false,
        [one] => *drawn(one) != *"+",
        _ => true,
    }
}

fn is_allowed_authenticate(param: &str) -> bool {
    let param = &*drawn(param);
    param == "+"
        || param == MASK
        || param.eq_ignore_ascii_case("PLAIN")
        || param.eq_ignore_ascii_case("EXTERNAL")
        || starts_with_ignore_case(param, "SCRAM-")
}
