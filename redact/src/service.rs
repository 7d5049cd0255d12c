//! The service-login table: which private messages log in to a service, and
//! which of their words are the credential.
//!
//! Only the credential words are masked; the target and verb stay so the row
//! still says what was done. Target and verb are matched ignoring ASCII case,
//! as drawn (mIRC formatting codes and default-ignorable characters removed:
//! `\x02IDENTIFY\x02` is IDENTIFY to a reader), and the words masked are the
//! words as written. When a rule masks "every argument after the verb" (or
//! everything after `SET PASSWORD`), the whole remainder becomes one mask, so
//! the row does not even tell how many words there were.

use crate::drawn::drawn;
use crate::MASK;
use std::borrow::Cow;

/// What a rule masks, by word position (the verb is word 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Masked {
    /// The one word at this position.
    Word(usize),
    /// Everything from this word to the end of the text, as one mask; the
    /// last word is the password (`IDENTIFY [account] <password>`).
    From(usize),
}

/// The login services the contract lists, each with its verb rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Service {
    NickServ,
    /// Undernet's X: `LOGIN <user> <password>`.
    UndernetX,
    /// QuakeNet's Q: `AUTH <user> <password>`.
    QuakenetQ,
    AuthServ,
}

/// The full service addresses, matched whole. The contract's copy of these
/// two names is damaged (an e-mail obfuscator replaced them); these are the
/// addresses the two networks document for LOGIN and AUTH.
const UNDERNET_X: &str = "X@Channels.undernet.org";
const QUAKENET_Q: &str = "Q@CServe.quakenet.org";

/// The services named by a nick alone, which `nick@server` names too.
const BY_NICK: [(&str, Service); 2] = [
    ("NickServ", Service::NickServ),
    ("AuthServ", Service::AuthServ),
];

impl Service {
    /// The service one target (not a list) names, read as drawn: a name of
    /// the table, or `NickServ@services.example`, the same service
    /// addressed on its server.
    fn lookup(target: &str) -> Option<Service> {
        let target = drawn(target);
        let named = |name: &str| target.eq_ignore_ascii_case(name);
        if named(UNDERNET_X) {
            return Some(Service::UndernetX);
        }
        if named(QUAKENET_Q) {
            return Some(Service::QuakenetQ);
        }
        let nick = target.split_once('@').map_or(&*target, |(nick, _)| nick);
        BY_NICK
            .into_iter()
            .find(|(name, _)| nick.eq_ignore_ascii_case(name))
            .map(|(_, s)| s)
    }

    /// What to mask in a text whose words are `words` (verb first).
    fn rule(self, words: &[Word<'_>]) -> Option<Masked> {
        let verb = &words.first()?.drawn;
        let is = |v: &str| verb.eq_ignore_ascii_case(v);
        match self {
            Service::NickServ if is("IDENTIFY") || is("ID") => Some(Masked::From(1)),
            Service::NickServ if is("REGISTER") => Some(Masked::Word(1)),
            Service::NickServ if is("GHOST") || is("RECOVER") => Some(Masked::Word(2)),
            Service::NickServ if is("GROUP") || is("DROP") => Some(Masked::Word(2)),
            Service::NickServ if is("SET") => words
                .get(1)
                .filter(|w| w.drawn.eq_ignore_ascii_case("PASSWORD"))
                .map(|_| Masked::From(2)),
            Service::UndernetX if is("LOGIN") => Some(Masked::Word(2)),
            Service::QuakenetQ | Service::AuthServ if is("AUTH") => Some(Masked::Word(2)),
            _ => None,
        }
    }
}

/// One word of a text: its byte range, split on spaces and tabs, and how it
/// is drawn.
struct Word<'a> {
    start: usize,
    end: usize,
    drawn: Cow<'a, str>,
}

/// The words of `text`, less those that draw as nothing (a lone formatting
/// code is not a word to a reader, nor to a rule).
fn words(text: &str) -> Vec<Word<'_>> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, b) in text.bytes().enumerate() {
        let blank = b == b' ' || b == b'\t';
        match (blank, start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
        .into_iter()
        .map(|(start, end)| Word {
            start,
            end,
            drawn: drawn(&text[start..end]),
        })
        .filter(|w| !w.drawn.is_empty())
        .collect()
}

/// What one rule hides in a login text: the bytes masked, and the
/// credential, the password itself (which the session then holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hidden {
    masked: (usize, usize),
    credential: (usize, usize),
}

/// What the rules of `services` hide in `text`: nothing when the text has
/// no word in a masked position (a GROUP or DROP without a password, a bare
/// IDENTIFY) or is not a login at all.
fn hidden(services: impl Iterator<Item = Service>, text: &str) -> Vec<Hidden> {
    let words = words(text);
    let mut out: Vec<Hidden> = Vec::new();
    let mut seen = Vec::new();
    for service in services {
        if seen.contains(&service) {
            continue;
        }
        seen.push(service);
        let Some(rule) = service.rule(&words) else {
            continue;
        };
        let found = match rule {
            Masked::Word(i) => words.get(i).map(|w| Hidden {
                masked: (w.start, w.end),
                credential: (w.start, w.end),
            }),
            Masked::From(i) => words.get(i).zip(words.last()).map(|(first, last)| Hidden {
                masked: (first.start, text.len()),
                credential: (last.start, last.end),
            }),
        };
        out.extend(found);
    }
    out
}

/// `text` with each range of `hidden` shown as one mask (overlapping ranges
/// merged); None when there is none.
fn apply(text: &str, hidden: &[Hidden]) -> Option<String> {
    if hidden.is_empty() {
        return None;
    }
    let mut ranges: Vec<(usize, usize)> = hidden.iter().map(|h| h.masked).collect();
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
            _ => merged.push(r),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in merged {
        out.push_str(&text[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// The services a comma-separated target list names.
fn services(target: &str) -> impl Iterator<Item = Service> + '_ {
    target.split(',').filter_map(Service::lookup)
}

/// The masked text of a PRIVMSG, NOTICE or SQUERY to `target` when it logs in
/// to a service in the contract's table; `target` may be a comma-separated
/// list, and any one login service in it makes the text a login. None when
/// the text is not a login (or has no credential word to mask).
pub fn mask_service_login(target: &str, text: &str) -> Option<String> {
    apply(text, &hidden(services(target), text))
}

/// The passwords a PRIVMSG, NOTICE or SQUERY of `text` to `target` gives a
/// login service, as written (empty when it is not a login).
pub(crate) fn login_credentials<'a>(target: &str, text: &'a str) -> Vec<&'a str> {
    hidden(services(target), text)
        .iter()
        .map(|h| &text[h.credential.0..h.credential.1])
        .collect()
}

/// True when `target` (possibly a comma-separated list) names a login
/// service in the table: the only messages [`mask_service_login`] can mask.
pub(crate) fn names_login_service(target: &str) -> bool {
    services(target).next().is_some()
}

/// The text after a NS, NICKSERV, CS or CHANSERV alias, read with
/// NickServ's verbs (so CS over-masks rather than under-masks).
pub(crate) fn mask_alias(text: &str) -> Option<String> {
    apply(text, &hidden([Service::NickServ].into_iter(), text))
}

/// The passwords the text after an alias gives, as written.
pub(crate) fn alias_credentials(text: &str) -> Vec<&str> {
    hidden([Service::NickServ].into_iter(), text)
        .iter()
        .map(|h| &text[h.credential.0..h.credential.1])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_skip_repeated_blanks_and_lone_codes() {
        let spans = |t| {
            words(t)
                .iter()
                .map(|w| (w.start, w.end))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans(" a  bc\tde "), vec![(1, 2), (4, 6), (7, 9)]);
        assert_eq!(spans("\u{2} a \u{200B}"), vec![(2, 3)]);
        assert!(spans("").is_empty());
        assert_eq!(words("\u{2}ID\u{2}")[0].drawn, "ID");
    }

    #[test]
    fn a_service_on_its_server_is_the_service() {
        assert_eq!(
            Service::lookup("NickServ@services.example"),
            Some(Service::NickServ)
        );
        assert_eq!(Service::lookup("authserv@x"), Some(Service::AuthServ));
        assert_eq!(Service::lookup("Nick\u{2}Serv"), Some(Service::NickServ));
        assert_eq!(Service::lookup("X@elsewhere.org"), None);
        assert_eq!(Service::lookup("bob@NickServ"), None);
    }

    #[test]
    fn the_credential_is_the_password_alone() {
        assert_eq!(
            login_credentials("NickServ", "IDENTIFY alice pw12"),
            ["pw12"]
        );
        assert_eq!(login_credentials("NickServ", "REGISTER pw12 a@b"), ["pw12"]);
        assert_eq!(
            login_credentials("#c,NickServ", "\u{2}ID\u{2} \u{1F}pw12"),
            ["\u{1F}pw12"]
        );
        assert_eq!(login_credentials("AuthServ", "AUTH alice pw12"), ["pw12"]);
        assert!(login_credentials("NickServ", "INFO alice").is_empty());
        assert!(login_credentials("#c", "IDENTIFY pw12").is_empty());
        assert_eq!(alias_credentials("SET PASSWORD new1"), ["new1"]);
    }

    #[test]
    fn lookup_ignores_case_and_needs_the_whole_name() {
        assert_eq!(Service::lookup("nickserv"), Some(Service::NickServ));
        assert_eq!(
            Service::lookup("x@channels.UNDERNET.org"),
            Some(Service::UndernetX)
        );
        assert_eq!(Service::lookup("NickServ2"), None);
        assert_eq!(Service::lookup("X"), None);
    }
}
