//! The raw-line tripwire: credential shapes by command, not by mention.

use rete_redact::{is_credential_shaped, is_server_challenge, mask_line};

const TRIPS: &[&str] = &[
    "PASS hunter22",
    "PASS :hunter22",
    "pass hunter22",
    "@t=1 PASS hunter22",
    ":me PASS hunter22",
    "PASS ******** extra",
    "AUTHENTICATE AGFsaWNl",
    "AUTHENTICATE PLAIN AGFsaWNl",
    "AUTHENTICATE *",
    "@a :srv AUTHENTICATE Zm9vYmFy",
    "OPER admin hunter22",
    "OPER hunter22",
    "oper admin :hunter 22",
    "OPER admin ******** x",
    // read as drawn: an invisible character does not hide the command
    "P\u{200B}ASS hunter22",
    "\u{2}OPER\u{2} admin hunter22",
    "AUTHENTICATE \u{AD}AGFsaWNl",
];

const PASSES: &[&str] = &[
    "PASS :********",
    "PASS ********",
    "PASS",
    "AUTHENTICATE +",
    "AUTHENTICATE ********",
    "AUTHENTICATE PLAIN",
    "AUTHENTICATE plain",
    "AUTHENTICATE EXTERNAL",
    "AUTHENTICATE SCRAM-SHA-256",
    "AUTHENTICATE",
    "OPER admin ********",
    "OPER ********",
    "OPER",
    "PRIVMSG #c :PASS hunter22",
    ":alice!a@h PRIVMSG #c :PASS hunter22",
    "PRIVMSG #c :OPER admin pw",
    "NOTICE * :AUTHENTICATE is fun",
    ":srv 464 rete :Password incorrect",
    "PRIVMSG NickServ :IDENTIFY hunter22",
    "",
    "@only",
];

#[test]
fn credential_shapes_trip() {
    for line in TRIPS {
        assert!(is_credential_shaped(line), "{line:?} should trip");
    }
}

#[test]
fn other_lines_pass() {
    for line in PASSES {
        assert!(!is_credential_shaped(line), "{line:?} should pass");
    }
}

#[test]
fn a_masked_pass_or_oper_never_trips() {
    for line in TRIPS.iter().filter(|l| !l.contains("AUTHENTICATE *")) {
        let masked = mask_line(line);
        assert!(!is_credential_shaped(&masked), "{line:?} → {masked:?}");
    }
}

#[test]
fn a_server_challenge_is_any_authenticate_but_the_empty_one() {
    for line in [
        "AUTHENTICATE ********",
        ":irc.example AUTHENTICATE cj1mb28sbm9uY2U=",
        "@t=1 AUTHENTICATE x",
        "AUTHENTICATE PLAIN",
        "AUTHENTICATE a b",
        "authenticate \u{2}x",
    ] {
        assert!(is_server_challenge(line), "{line:?}");
    }
    for line in [
        "AUTHENTICATE +",
        ":irc.example AUTHENTICATE +",
        "AUTHENTICATE",
        "PRIVMSG #c :AUTHENTICATE x",
        ":srv 903 me :SASL authentication successful",
    ] {
        assert!(!is_server_challenge(line), "{line:?}");
    }
}
