//! The service-login table: which private messages log in to a service, and
//! which of their words are the credential.
//!
//! Only the credential words are masked; the target and verb stay so the row
//! still says what was done. Target and verb are matched ignoring ASCII case.
//! When a rule masks "every argument after the verb" (or everything after
//! `SET PASSWORD`), the whole remainder becomes one mask, so the row does not
//! even tell how many words there were.

use crate::MASK;

/// What a rule masks, by word position (the verb is word 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Masked {
    /// The one word at this position.
    Word(usize),
    /// Everything from this word to the end of the text, as one mask.
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

impl Service {
    fn lookup(target: &str) -> Option<Service> {
        [
            ("NickServ", Service::NickServ),
            (UNDERNET_X, Service::UndernetX),
            (QUAKENET_Q, Service::QuakenetQ),
            ("AuthServ", Service::AuthServ),
        ]
        .into_iter()
        .find(|(name, _)| target.eq_ignore_ascii_case(name))
        .map(|(_, s)| s)
    }

    /// What to mask in a text whose words are `words` (verb first).
    fn rule(self, words: &[&str]) -> Option<Masked> {
        let verb = words.first()?;
        let is = |v: &str| verb.eq_ignore_ascii_case(v);
        match self {
            Service::NickServ if is("IDENTIFY") || is("ID") => Some(Masked::From(1)),
            Service::NickServ if is("REGISTER") => Some(Masked::Word(1)),
            Service::NickServ if is("GHOST") || is("RECOVER") => Some(Masked::Word(2)),
            Service::NickServ if is("GROUP") || is("DROP") => Some(Masked::Word(2)),
            Service::NickServ if is("SET") => words
                .get(1)
                .filter(|w| w.eq_ignore_ascii_case("PASSWORD"))
                .map(|_| Masked::From(2)),
            Service::UndernetX if is("LOGIN") => Some(Masked::Word(2)),
            Service::QuakenetQ | Service::AuthServ if is("AUTH") => Some(Masked::Word(2)),
            _ => None,
        }
    }
}

/// Byte ranges of the words of `text`, split on spaces and tabs.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
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
}

/// Applies one rule: None when the text has no word in the masked position
/// (a GROUP or DROP without a password, a bare IDENTIFY).
fn apply(text: &str, spans: &[(usize, usize)], rule: Masked) -> Option<String> {
    let (start, end) = match rule {
        Masked::Word(i) => *spans.get(i)?,
        Masked::From(i) => (spans.get(i)?.0, text.len()),
    };
    Some(format!("{}{MASK}{}", &text[..start], &text[end..]))
}

fn mask_with(service: Service, text: &str) -> Option<String> {
    let spans = word_spans(text);
    let words: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
    let rule = service.rule(&words)?;
    apply(text, &spans, rule)
}

/// The masked text of a PRIVMSG, NOTICE or SQUERY to `target` when it logs in
/// to a service in the contract's table; `target` may be a comma-separated
/// list, and any one login service in it makes the text a login. None when
/// the text is not a login (or has no credential word to mask).
pub fn mask_service_login(target: &str, text: &str) -> Option<String> {
    let mut services = target.split(',').filter_map(Service::lookup);
    let first = services.next()?;
    let mut masked = mask_with(first, text);
    // Two different services in one list: mask by each in turn. Their rules
    // never disagree on a verb, so the second pass only adds masks.
    for s in services.filter(|&s| s != first) {
        let base = masked.as_deref().unwrap_or(text);
        if let Some(more) = mask_with(s, base) {
            masked = Some(more);
        }
    }
    masked
}

/// True when `target` (possibly a comma-separated list) names a login
/// service in the table: the only messages [`mask_service_login`] can mask.
pub(crate) fn names_login_service(target: &str) -> bool {
    target.split(',').any(|t| Service::lookup(t).is_some())
}

/// The text after a NS, NICKSERV, CS or CHANSERV alias, read with
/// NickServ's verbs (so CS over-masks rather than under-masks).
pub(crate) fn mask_alias(text: &str) -> Option<String> {
    mask_with(Service::NickServ, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_skip_repeated_blanks() {
        assert_eq!(word_spans(" a  bc\tde "), vec![(1, 2), (4, 6), (7, 9)]);
        assert!(word_spans("").is_empty());
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
