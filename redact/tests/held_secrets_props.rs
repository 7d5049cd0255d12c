//! Issue 37, as properties over generated spellings: for every kind of credential a line can
//! give away (PASS, OPER, a login to each service of the table, the NS/CS aliases) in every
//! spelling (case, formatting codes and default-ignorable characters inside the command, the
//! target and the verb, comma-separated and `@server` targets, tags and `:prefix`), with the
//! password itself possibly holding an invisible character:
//! - the line as recorded (the tool's result, the raw views), as the audit row draws it and
//!   as the AI access log escapes it never holds the password, and is not credential-shaped;
//! - the password is learned from the line (`SecretSet::with_credentials_of`), so a service
//!   echoing it — as written, in another case, split by a code or an invisible character — is
//!   found by the way-out scan, and masked by the terminal's `SecretSet::mask`.

use proptest::prelude::*;
use rete_redact::{
    display_escape, escape_invisible, is_credential_shaped, mask_line, mask_sent_line, SecretSet,
};

/// Characters that draw nothing: the formatting codes without arguments and a few
/// default-ignorable ones.
const HIDDEN: &[char] = &[
    '\u{2}',
    '\u{F}',
    '\u{1D}',
    '\u{1F}',
    '\u{16}',
    '\u{200B}',
    '\u{AD}',
    '\u{2060}',
    '\u{FEFF}',
    '\u{200D}',
    '\u{E0041}',
    '\u{34F}',
];

/// `text` as drawn, lower-cased: the oracle, written apart from the crate's own.
fn drawn(text: &str) -> String {
    text.chars()
        .filter(|c| !HIDDEN.contains(c))
        .collect::<String>()
        .to_ascii_lowercase()
}

fn holds(text: &str, secret: &str) -> bool {
    drawn(text).contains(&drawn(secret))
}

/// `word` with its case changed per `case` bits and a hidden character put at `at` (if any).
fn spell(word: &str, case: u32, hide: Option<(usize, usize)>) -> String {
    let mut out: String = word
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if case >> (i % 32) & 1 == 1 {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    if let Some((at, which)) = hide {
        let at = at % (out.len() + 1);
        out.insert(at, HIDDEN[which % HIDDEN.len()]);
    }
    out
}

#[derive(Clone, Debug)]
enum Kind {
    Pass,
    OperOne,
    Oper,
    Identify,
    IdentifyAccount,
    Register,
    Ghost,
    SetPassword,
    AuthServ,
    Alias(&'static str),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Pass),
        Just(Kind::OperOne),
        Just(Kind::Oper),
        Just(Kind::Identify),
        Just(Kind::IdentifyAccount),
        Just(Kind::Register),
        Just(Kind::Ghost),
        Just(Kind::SetPassword),
        Just(Kind::AuthServ),
        Just(Kind::Alias("NS")),
        Just(Kind::Alias("NICKSERV")),
        Just(Kind::Alias("CS")),
        Just(Kind::Alias("CHANSERV")),
    ]
}

/// A spelling: cases and hidden characters for the command, target and verb, and where the
/// target sits.
#[derive(Clone, Debug)]
struct Spelling {
    case: [u32; 3],
    hide: [Option<(usize, usize)>; 3],
    hide_secret: Option<(usize, usize)>,
    at_server: bool,
    comma: u8,
    notice: u8,
    tags: bool,
    prefix: bool,
}

fn spelling() -> impl Strategy<Value = Spelling> {
    let hide = || proptest::option::of((0usize..12, 0usize..HIDDEN.len()));
    (
        any::<[u32; 3]>(),
        [hide(), hide(), hide()],
        hide(),
        any::<bool>(),
        0u8..3,
        0u8..3,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(case, hide, hide_secret, at_server, comma, notice, tags, prefix)| Spelling {
                case,
                hide,
                hide_secret,
                at_server,
                comma,
                notice,
                tags,
                prefix,
            },
        )
}

/// The line Rete sends for `kind` spelled `s`, with `secret` as the password.
fn line(kind: &Kind, s: &Spelling, secret: &str) -> String {
    let command = |w: &str| spell(w, s.case[0], s.hide[0]);
    let verb = |w: &str| spell(w, s.case[2], s.hide[2]);
    let service = |name: &str| {
        let mut t = spell(name, s.case[1], s.hide[1]);
        if s.at_server {
            t.push_str("@services.example");
        }
        match s.comma {
            0 => t,
            1 => format!("#rete,{t}"),
            _ => format!("{t},#other"),
        }
    };
    let message = ["PRIVMSG", "NOTICE", "SQUERY"][usize::from(s.notice)];
    let body = match kind {
        Kind::Pass => format!("{} :{secret}", command("PASS")),
        Kind::OperOne => format!("{} {secret}", command("OPER")),
        Kind::Oper => format!("{} admin {secret}", command("OPER")),
        Kind::Identify => format!(
            "{} {} :{} {secret}",
            command(message),
            service("NickServ"),
            verb("IDENTIFY")
        ),
        Kind::IdentifyAccount => format!(
            "{} {} :{} acct {secret}",
            command(message),
            service("NickServ"),
            verb("ID")
        ),
        Kind::Register => format!(
            "{} {} :{} {secret} e@x.org",
            command(message),
            service("NickServ"),
            verb("REGISTER")
        ),
        Kind::Ghost => format!(
            "{} {} :{} nick {secret}",
            command(message),
            service("NickServ"),
            verb("GHOST")
        ),
        Kind::SetPassword => format!(
            "{} {} :SET {} {secret}",
            command(message),
            service("NickServ"),
            verb("PASSWORD")
        ),
        Kind::AuthServ => format!(
            "{} {} :{} acct {secret}",
            command(message),
            service("AuthServ"),
            verb("AUTH")
        ),
        Kind::Alias(alias) => format!("{} {} {secret}", command(alias), verb("IDENTIFY")),
    };
    let mut out = String::new();
    if s.tags {
        out.push_str("@label=1;+x=y ");
    }
    if s.prefix {
        out.push_str(":me!u@h ");
    }
    out.push_str(&body);
    out
}

/// A password: a digit first, so it is never part of a fixed word of the line.
fn secret() -> impl Strategy<Value = String> {
    "[0-9][a-zA-Z0-9!#%&*+=^_~-]{5,14}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn no_spelling_of_a_credential_is_shown_and_each_is_held(
        kind in kind(),
        s in spelling(),
        plain in secret(),
        echo_case in any::<u32>(),
        echo_hide in (1usize..12, 0usize..HIDDEN.len()),
    ) {
        let secret = match s.hide_secret {
            Some(h) => spell_keep_case(&plain, h),
            None => plain.clone(),
        };
        let line = line(&kind, &s, &secret);
        let recorded = mask_sent_line(&line);
        for (what, shown) in [
            ("recorded", recorded.to_string()),
            ("raw view", mask_line(&line).into_owned()),
            ("audit row", display_escape(&recorded).into_owned()),
            ("access log", escape_invisible(&recorded).into_owned()),
        ] {
            prop_assert!(!holds(&shown, &secret), "{} shows it: {:?} → {:?}", what, line, shown);
        }
        prop_assert!(!is_credential_shaped(&mask_line(&line)), "{:?}", line);

        let held = SecretSet::empty().with_credentials_of(&line);
        prop_assert!(held.is_some(), "nothing learned from {:?}", line);
        let held = held.unwrap_or_default();
        let echoes = [
            format!("you are now identified with {secret}."),
            format!("with {}", spell(&plain, echo_case, None)),
            format!("pw={}", spell_keep_case(&plain, echo_hide)),
        ];
        for echo in &echoes {
            prop_assert!(held.contains_secret(echo), "{:?} not caught after {:?}", echo, line);
            let masked = held.mask(echo);
            prop_assert!(!holds(&masked, &plain), "the terminal shows {:?}", masked);
        }
    }
}

/// `word` with a hidden character put inside it (never first, so it stays inside).
fn spell_keep_case(word: &str, (at, which): (usize, usize)) -> String {
    let mut out = word.to_owned();
    let at = 1 + at % word.len().max(1);
    let at = at.min(out.len());
    out.insert(at, HIDDEN[which % HIDDEN.len()]);
    out
}
