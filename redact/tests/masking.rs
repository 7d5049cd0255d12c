//! The masking corpus: every row of the service table, the line commands,
//! tags, prefixes, comma targets, case, and the lines left alone.

use rete_redact::{mask_line, mask_service_login, MASK};
use std::borrow::Cow;

/// (line in, line shown). An unchanged line is written the same twice.
const LINES: &[(&str, &str)] = &[
    // PASS
    ("PASS hunter22", "PASS :********"),
    ("PASS :hunter 22", "PASS :********"),
    ("pass hunter22", "pass :********"),
    ("@label=1 PASS hunter22", "PASS :********"),
    (":me PASS hunter22", ":me PASS :********"),
    ("@a=b :me PASS hunter22", ":me PASS :********"),
    ("PASS", "PASS"),
    ("PASS :********", "PASS :********"),
    // AUTHENTICATE
    ("AUTHENTICATE PLAIN", "AUTHENTICATE PLAIN"),
    ("AUTHENTICATE EXTERNAL", "AUTHENTICATE EXTERNAL"),
    ("AUTHENTICATE SCRAM-SHA-256", "AUTHENTICATE SCRAM-SHA-256"),
    ("AUTHENTICATE SCRAM-SHA-512", "AUTHENTICATE SCRAM-SHA-512"),
    ("AUTHENTICATE +", "AUTHENTICATE +"),
    ("AUTHENTICATE *", "AUTHENTICATE *"),
    ("AUTHENTICATE AGFsaWNlAHMzY3JldA==", "AUTHENTICATE ********"),
    ("authenticate AGFsaWNlAHMzY3JldA==", "authenticate ********"),
    (
        "AUTHENTICATE :AGFsaWNlAHMzY3JldA==",
        "AUTHENTICATE ********",
    ),
    ("AUTHENTICATE PLAIN AGFsaWNl", "AUTHENTICATE ********"),
    ("AUTHENTICATE + extra", "AUTHENTICATE ********"),
    ("@t=1 AUTHENTICATE Zm9v", "AUTHENTICATE ********"),
    ("AUTHENTICATE", "AUTHENTICATE"),
    // OPER
    ("OPER admin hunter22", "OPER admin ********"),
    ("OPER admin :hunter 22", "OPER admin ********"),
    ("oper admin hunter22", "oper admin ********"),
    ("OPER hunter22", "OPER ********"),
    ("OPER admin pw extra", "OPER admin ********"),
    (":me OPER admin pw", ":me OPER admin ********"),
    ("@x OPER admin pw", "OPER admin ********"),
    ("OPER", "OPER"),
    // NickServ, every verb
    (
        "PRIVMSG NickServ :IDENTIFY hunter22",
        "PRIVMSG NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ :IDENTIFY alice hunter22",
        "PRIVMSG NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ :ID hunter22",
        "PRIVMSG NickServ :ID ********",
    ),
    (
        "PRIVMSG NickServ :REGISTER hunter22 a@example.org",
        "PRIVMSG NickServ :REGISTER ******** a@example.org",
    ),
    (
        "PRIVMSG NickServ :GHOST alice hunter22",
        "PRIVMSG NickServ :GHOST alice ********",
    ),
    (
        "PRIVMSG NickServ :RECOVER alice hunter22",
        "PRIVMSG NickServ :RECOVER alice ********",
    ),
    (
        "PRIVMSG NickServ :SET PASSWORD newpass1",
        "PRIVMSG NickServ :SET PASSWORD ********",
    ),
    (
        "PRIVMSG NickServ :GROUP alice hunter22",
        "PRIVMSG NickServ :GROUP alice ********",
    ),
    (
        "PRIVMSG NickServ :DROP alice hunter22",
        "PRIVMSG NickServ :DROP alice ********",
    ),
    // the @-address services and AuthServ
    (
        "PRIVMSG X@Channels.undernet.org :LOGIN alice hunter22",
        "PRIVMSG X@Channels.undernet.org :LOGIN alice ********",
    ),
    (
        "PRIVMSG Q@CServe.quakenet.org :AUTH alice hunter22",
        "PRIVMSG Q@CServe.quakenet.org :AUTH alice ********",
    ),
    (
        "PRIVMSG AuthServ :AUTH alice hunter22",
        "PRIVMSG AuthServ :AUTH alice ********",
    ),
    (
        "PRIVMSG x@channels.undernet.org :login alice hunter22",
        "PRIVMSG x@channels.undernet.org :login alice ********",
    ),
    // NOTICE, SQUERY, case, tags, prefix, comma targets, no colon
    (
        "NOTICE NickServ :IDENTIFY hunter22",
        "NOTICE NickServ :IDENTIFY ********",
    ),
    (
        "SQUERY NickServ :IDENTIFY hunter22",
        "SQUERY NickServ :IDENTIFY ********",
    ),
    (
        "privmsg nickserv :identify hunter22",
        "privmsg nickserv :identify ********",
    ),
    (
        "PRIVMSG NICKSERV :Identify hunter22",
        "PRIVMSG NICKSERV :Identify ********",
    ),
    (
        "@label=x PRIVMSG NickServ :IDENTIFY hunter22",
        "PRIVMSG NickServ :IDENTIFY ********",
    ),
    (
        ":rete!u@h PRIVMSG NickServ :IDENTIFY hunter22",
        ":rete!u@h PRIVMSG NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG #chan,NickServ :IDENTIFY hunter22",
        "PRIVMSG #chan,NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ IDENTIFY hunter22",
        "PRIVMSG NickServ :IDENTIFY ********",
    ),
    // aliases
    ("NS IDENTIFY hunter22", "NS IDENTIFY ********"),
    ("ns identify hunter22", "ns identify ********"),
    (
        "NICKSERV IDENTIFY alice hunter22",
        "NICKSERV IDENTIFY ********",
    ),
    ("NS :IDENTIFY hunter22", "NS IDENTIFY ********"),
    ("CS IDENTIFY hunter22", "CS IDENTIFY ********"),
    (
        "CHANSERV GHOST alice hunter22",
        "CHANSERV GHOST alice ********",
    ),
    (
        "@t=1 :me NS SET PASSWORD newpass1",
        ":me NS SET PASSWORD ********",
    ),
    ("NS INFO alice", "NS INFO alice"),
    // left alone
    ("PRIVMSG NickServ :GROUP", "PRIVMSG NickServ :GROUP"),
    (
        "PRIVMSG NickServ :DROP alice",
        "PRIVMSG NickServ :DROP alice",
    ),
    (
        "PRIVMSG NickServ :SET EMAIL a@example.org",
        "PRIVMSG NickServ :SET EMAIL a@example.org",
    ),
    ("PRIVMSG NickServ :IDENTIFY", "PRIVMSG NickServ :IDENTIFY"),
    (
        "PRIVMSG NickServ :INFO alice",
        "PRIVMSG NickServ :INFO alice",
    ),
    (
        "PRIVMSG #chan :IDENTIFY hunter22",
        "PRIVMSG #chan :IDENTIFY hunter22",
    ),
    (
        "PRIVMSG ChanServ :IDENTIFY hunter22",
        "PRIVMSG ChanServ :IDENTIFY hunter22",
    ),
    (
        "PRIVMSG AuthServ :LOGIN alice hunter22",
        "PRIVMSG AuthServ :LOGIN alice hunter22",
    ),
    (
        "PRIVMSG NickServ2 :IDENTIFY hunter22",
        "PRIVMSG NickServ2 :IDENTIFY hunter22",
    ),
    ("PRIVMSG #c :PASS hunter22", "PRIVMSG #c :PASS hunter22"),
    ("JOIN #chan key", "JOIN #chan key"),
    (
        "@tag=v :srv 001 rete :Welcome",
        "@tag=v :srv 001 rete :Welcome",
    ),
    ("", ""),
    ("@only-tags", "@only-tags"),
    // classified as drawn: formatting codes and invisible characters in the
    // command, the target or the verb hide nothing; the words as written
    // are masked (issue 37)
    (
        "PRIVMSG NickServ :\u{2}IDENTIFY\u{2} hunter22",
        "PRIVMSG NickServ :\u{2}IDENTIFY\u{2} ********",
    ),
    (
        "PRIVMSG NickServ :\u{2} IDENTIFY hunter22",
        "PRIVMSG NickServ :\u{2} IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ :I\u{200B}DENTIFY hunter22",
        "PRIVMSG NickServ :I\u{200B}DENTIFY ********",
    ),
    (
        "PRIVMSG Nick\u{AD}Serv :IDENTIFY hunter22",
        "PRIVMSG Nick\u{AD}Serv :IDENTIFY ********",
    ),
    (
        "PRIV\u{2060}MSG NickServ :IDENTIFY hunter22",
        "PRIV\u{2060}MSG NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ :IDENTIFY \u{1F}hunter22\u{1F}",
        "PRIVMSG NickServ :IDENTIFY ********",
    ),
    (
        "PRIVMSG NickServ :SET \u{2}PASSWORD\u{2} newpass1",
        "PRIVMSG NickServ :SET \u{2}PASSWORD\u{2} ********",
    ),
    ("\u{2}PASS\u{2} hunter22", "\u{2}PASS\u{2} :********"),
    ("O\u{FEFF}PER admin hunter22", "O\u{FEFF}PER admin ********"),
    (
        "NS \u{1D}IDENTIFY\u{1D} hunter22",
        "NS \u{1D}IDENTIFY\u{1D} ********",
    ),
    ("\u{3}04NS\u{3} ID hunter22", "\u{3}04NS\u{3} ID ********"),
    // a service addressed on its server is that service
    (
        "PRIVMSG NickServ@services.example :IDENTIFY hunter22",
        "PRIVMSG NickServ@services.example :IDENTIFY ********",
    ),
    (
        "PRIVMSG #rete,nickserv@services.example :ID hunter22",
        "PRIVMSG #rete,nickserv@services.example :ID ********",
    ),
    (
        "PRIVMSG AuthServ@services.example :AUTH alice hunter22",
        "PRIVMSG AuthServ@services.example :AUTH alice ********",
    ),
    (
        "PRIVMSG bob@NickServ :IDENTIFY hunter22",
        "PRIVMSG bob@NickServ :IDENTIFY hunter22",
    ),
    (
        "PRIVMSG X@elsewhere.org :LOGIN alice hunter22",
        "PRIVMSG X@elsewhere.org :LOGIN alice hunter22",
    ),
    // a credential after a line break is masked too
    ("NICK a\nPASS hunter22", "NICK a\nPASS :********"),
    ("PASS one\r\nOPER a b", "PASS :********\r\nOPER a ********"),
];

#[test]
fn mask_line_corpus() {
    for (input, shown) in LINES {
        assert_eq!(mask_line(input), *shown, "masking {input:?}");
    }
}

#[test]
fn unchanged_lines_are_borrowed_and_masked_lines_owned() {
    for (input, shown) in LINES {
        let borrowed = matches!(mask_line(input), Cow::Borrowed(_));
        assert_eq!(borrowed, input == shown, "{input:?}");
    }
}

#[test]
fn masking_twice_changes_nothing_more() {
    for (input, _) in LINES {
        let once = mask_line(input).into_owned();
        assert_eq!(mask_line(&once), once, "{input:?}");
    }
}

#[test]
fn service_login_returns_only_the_masked_text() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("NickServ", "IDENTIFY pw", Some("IDENTIFY ********")),
        ("nickserv", "id pw", Some("id ********")),
        ("NickServ", "  IDENTIFY  pw  ", Some("  IDENTIFY  ********")),
        ("NickServ", "REGISTER pw", Some("REGISTER ********")),
        ("NickServ", "REGISTER", None),
        ("NickServ", "GHOST alice", None),
        ("NickServ", "GHOST alice pw", Some("GHOST alice ********")),
        (
            "NickServ",
            "RECOVER alice pw x",
            Some("RECOVER alice ******** x"),
        ),
        ("NickServ", "SET PASSWORD", None),
        ("NickServ", "set password pw", Some("set password ********")),
        ("NickServ", "SET EMAIL a@b", None),
        ("NickServ", "GROUP", None),
        ("NickServ", "GROUP alice", None),
        ("NickServ", "DROP alice pw", Some("DROP alice ********")),
        ("AuthServ", "AUTH alice pw", Some("AUTH alice ********")),
        ("AuthServ", "AUTH alice", None),
        ("AuthServ", "IDENTIFY pw", None),
        (
            "Q@CServe.quakenet.org",
            "AUTH alice pw",
            Some("AUTH alice ********"),
        ),
        ("Q@CServe.quakenet.org", "LOGIN alice pw", None),
        (
            "X@Channels.undernet.org",
            "LOGIN alice pw",
            Some("LOGIN alice ********"),
        ),
        ("X@Channels.undernet.org", "AUTH alice pw", None),
        ("X", "LOGIN alice pw", None),
        ("#a,nickserv,#b", "IDENTIFY pw", Some("IDENTIFY ********")),
        (
            "AuthServ,NickServ",
            "AUTH alice pw",
            Some("AUTH alice ********"),
        ),
        ("#a,#b", "IDENTIFY pw", None),
        ("NickServ", "\u{1}ACTION IDENTIFY pw\u{1}", None),
        ("NickServ", "", None),
    ];
    for (target, text, want) in cases {
        assert_eq!(
            mask_service_login(target, text).as_deref(),
            *want,
            "{target} {text:?}"
        );
    }
}

/// The audit row of a send_raw line is the line masked, then drawn (codes
/// stripped, invisible characters escaped): masking reads the line as drawn,
/// so stripping the codes afterwards cannot uncover the password.
#[test]
fn an_audit_row_never_shows_a_password_its_codes_hid() {
    use rete_redact::{display_escape, mask_sent_line};
    for (line, row) in [
        (
            "PRIVMSG NickServ :\u{2}IDENTIFY\u{2} hunter22",
            "PRIVMSG NickServ :IDENTIFY ********",
        ),
        (
            "PRIVMSG NickServ :IDENTIFY hun\u{2}ter22",
            "PRIVMSG NickServ :IDENTIFY ********",
        ),
        (
            "PRIVMSG Nick\u{200B}Serv :ID hunter22",
            "PRIVMSG Nick\\u{200B}Serv :ID ********",
        ),
    ] {
        assert_eq!(display_escape(&mask_sent_line(line)), row, "{line:?}");
    }
}

#[test]
fn mask_is_eight_asterisks() {
    assert_eq!(MASK, "********");
}
