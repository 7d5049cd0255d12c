//! Reading a raw IRC line just far enough to know what it is, and masking it
//! at the source.
//!
//! The reader is deliberately forgiving: it never fails on odd spacing, and a
//! line it cannot read at all is returned as it is (nothing in it can be told
//! apart from conversation). Masking is decided by the command after any
//! IRCv3 tags and `:prefix`, compared ignoring ASCII case and as drawn (mIRC
//! formatting codes and default-ignorable characters removed, see `drawn`),
//! as are the targets and a service verb; what is masked is what was written.
//!
//! The masked form drops the tags (they are not shown once a line is masked:
//! the Sending section of the contract says so, and a tag value could carry
//! the same secret) and keeps the `:prefix`. A line that needs no masking is
//! returned unchanged, tags included.

use crate::drawn::drawn;
use crate::service::{
    alias_credentials, login_credentials, mask_alias, mask_service_login, names_login_service,
};
use crate::MASK;
use std::borrow::Cow;

/// A raw line split into the parts masking looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header<'a> {
    /// The `:prefix` word with its colon, when present.
    pub prefix: Option<&'a str>,
    /// The command as written (any case).
    pub command: &'a str,
    /// Everything after the command, untouched.
    pub rest: &'a str,
}

/// Splits off the tags, prefix and command. None when there is no command
/// (an empty line, or tags or a prefix with nothing after them).
pub(crate) fn header(line: &str) -> Option<Header<'_>> {
    let mut rest = line.trim_start_matches(' ');
    if rest.starts_with('@') {
        let (_, after) = rest.split_once(' ')?;
        rest = after.trim_start_matches(' ');
    }
    let mut prefix = None;
    if rest.starts_with(':') {
        let (p, after) = rest.split_once(' ')?;
        prefix = Some(p);
        rest = after.trim_start_matches(' ');
    }
    let (command, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if command.is_empty() {
        return None;
    }
    Some(Header {
        prefix,
        command,
        rest,
    })
}

/// The parameters after the command: space-separated words, the last one
/// (after ` :`) taken whole without its colon.
pub(crate) fn params(rest: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = rest;
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            return out;
        }
        if let Some(trailing) = rest.strip_prefix(':') {
            out.push(trailing);
            return out;
        }
        match rest.split_once(' ') {
            Some((word, after)) => {
                out.push(word);
                rest = after;
            }
            None => {
                out.push(rest);
                return out;
            }
        }
    }
}

/// AUTHENTICATE parameters that are not secret: the mechanism names, the
/// empty payload `+` and the abort `*` (read as drawn).
pub(crate) fn is_mechanism_or_marker(param: &str) -> bool {
    let param = &*drawn(param);
    param == "+"
        || param == "*"
        || param.eq_ignore_ascii_case("PLAIN")
        || param.eq_ignore_ascii_case("EXTERNAL")
        || starts_with_ignore_case(param, "SCRAM-")
}

pub(crate) fn starts_with_ignore_case(text: &str, start: &str) -> bool {
    text.len() >= start.len()
        && text.as_bytes()[..start.len()].eq_ignore_ascii_case(start.as_bytes())
}

/// The characters the contract treats as line breaks (Foundation's
/// newlines), so a secret after one is masked too.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\r' | '\n' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// False when `line` surely holds no line break: none of the ASCII breaks
/// and no lead byte of U+0085 (0xC2) or U+2028/U+2029 (0xE2). A byte scan,
/// far cheaper than decoding every character, which every raw line pays.
fn may_hold_line_break(line: &str) -> bool {
    line.bytes()
        .any(|b| matches!(b, b'\r' | b'\n' | 0x0B | 0x0C | 0xC2 | 0xE2))
}

/// At-source masking of one IRC line as Rete shows or keeps it:
/// `PASS :********`; `AUTHENTICATE ********` for a payload (the mechanism
/// lines PLAIN, EXTERNAL and SCRAM-*, `+` and `*` stay; an AUTHENTICATE with
/// more than one argument is masked); `OPER <name> ********` (`OPER ********`
/// when it has one parameter); a service login with only its credential words
/// masked, as a PRIVMSG, NOTICE or SQUERY to a login service or through the
/// NS, NICKSERV, CS and CHANSERV aliases.
///
/// A masked line loses its IRCv3 tags and keeps its `:prefix`; a line that
/// needs no masking is returned as it is (borrowed). Text holding line breaks
/// is masked piece by piece, so a credential after a break is caught too.
pub fn mask_line(line: &str) -> Cow<'_, str> {
    piece_by_piece(line, mask_one)
}

/// A line an agent sends, as the AI access log (and sending's audit) records
/// it: [`mask_line`]'s rules, except that every AUTHENTICATE is masked, the
/// mechanism line included, as `[:prefix ]AUTHENTICATE ********`. Text
/// holding line breaks is masked piece by piece, the breaks kept.
pub fn mask_sent_line(line: &str) -> Cow<'_, str> {
    piece_by_piece(line, mask_sent_one)
}

fn mask_sent_one(line: &str) -> Cow<'_, str> {
    match header(line) {
        Some(h) if drawn(h.command).eq_ignore_ascii_case("AUTHENTICATE") => {
            Cow::Owned(match h.prefix {
                Some(p) => format!("{p} AUTHENTICATE {MASK}"),
                None => format!("AUTHENTICATE {MASK}"),
            })
        }
        _ => mask_one(line),
    }
}

/// `mask` applied to each part of `line` between line breaks, the breaks
/// kept; borrowed when nothing changed.
fn piece_by_piece<'a>(line: &'a str, mask: fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    if !may_hold_line_break(line) || !line.contains(is_line_break) {
        return mask(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut changed = false;
    let mut start = 0;
    for (i, c) in line.char_indices() {
        if is_line_break(c) {
            let piece = mask(&line[start..i]);
            changed |= matches!(piece, Cow::Owned(_));
            out.push_str(&piece);
            out.push(c);
            start = i + c.len_utf8();
        }
    }
    let piece = mask(&line[start..]);
    changed |= matches!(piece, Cow::Owned(_));
    out.push_str(&piece);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(line)
    }
}

fn mask_one(line: &str) -> Cow<'_, str> {
    let Some(h) = header(line) else {
        return Cow::Borrowed(line);
    };
    // Compared in place rather than upper-cased into a copy: every line a
    // raw tap observes passes here, on the session's path (and the command
    // is borrowed as it is unless it holds something that draws nothing).
    let command = drawn(h.command);
    let is = |name: &str| command.eq_ignore_ascii_case(name);
    let masked = if is("PASS") {
        mask_pass(&h)
    } else if is("AUTHENTICATE") {
        mask_authenticate(&h)
    } else if is("OPER") {
        mask_oper(&h)
    } else if is("PRIVMSG") || is("NOTICE") || is("SQUERY") {
        mask_message(&h)
    } else if ["NS", "NICKSERV", "CS", "CHANSERV"].into_iter().any(is) {
        mask_alias_line(&h)
    } else {
        None
    };
    match masked {
        // Already in its masked form (masking twice): nothing to copy.
        Some(m) if m != line => Cow::Owned(m),
        _ => Cow::Borrowed(line),
    }
}

/// `[:prefix ]COMMAND` followed by `tail`.
fn rebuild(h: &Header<'_>, tail: &str) -> String {
    let mut out = String::with_capacity(h.rest.len() + h.command.len() + 16);
    if let Some(p) = h.prefix {
        out.push_str(p);
        out.push(' ');
    }
    out.push_str(h.command);
    out.push(' ');
    out.push_str(tail);
    out
}

fn mask_pass(h: &Header<'_>) -> Option<String> {
    if params(h.rest).is_empty() {
        return None;
    }
    Some(rebuild(h, &format!(":{MASK}")))
}

fn mask_authenticate(h: &Header<'_>) -> Option<String> {
    match params(h.rest).as_slice() {
        [] => None,
        [one] if is_mechanism_or_marker(one) => None,
        _ => Some(rebuild(h, MASK)),
    }
}

fn mask_oper(h: &Header<'_>) -> Option<String> {
    match params(h.rest).as_slice() {
        [] => None,
        [_] => Some(rebuild(h, MASK)),
        [name, ..] => Some(rebuild(h, &format!("{name} {MASK}"))),
    }
}

fn mask_message(h: &Header<'_>) -> Option<String> {
    // Most messages go to a channel or a person: only a target naming a login
    // service is worth splitting the line for.
    let rest = h.rest.trim_start_matches(' ');
    let target = match rest.strip_prefix(':') {
        Some(trailing) => trailing,
        None => rest.split(' ').next().unwrap_or(""),
    };
    if !names_login_service(target) {
        return None;
    }
    let p = params(h.rest);
    let (target, words) = p.split_first()?;
    // A text sent without its colon is read whole: the server may keep only
    // the first word, but masking more than that is the safe side.
    let text = words.join(" ");
    let masked = mask_service_login(target, &text)?;
    Some(rebuild(h, &format!("{target} :{masked}")))
}

fn mask_alias_line(h: &Header<'_>) -> Option<String> {
    let text = params(h.rest).join(" ");
    let masked = mask_alias(&text)?;
    Some(rebuild(h, &masked))
}

/// The credentials a line Rete sends gives away, as written: the password
/// of a PASS or an OPER (an OPER's one parameter, when it has one), and the
/// password of a service login in any spelling [`mask_line`] masks. Text
/// holding line breaks is read piece by piece. AUTHENTICATE payloads are
/// left out: the SASL password they carry is the session's own already,
/// and a SCRAM exchange's are new on every login.
pub(crate) fn sent_credentials(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in line.split(is_line_break) {
        credentials_of_one(piece, &mut out);
    }
    out
}

fn credentials_of_one(line: &str, out: &mut Vec<String>) {
    let Some(h) = header(line) else {
        return;
    };
    let command = drawn(h.command);
    let is = |name: &str| command.eq_ignore_ascii_case(name);
    let p = params(h.rest);
    let owned = |w: &&str| (*w).to_owned();
    if is("PASS") {
        out.extend(p.iter().map(owned));
    } else if is("OPER") {
        out.extend(p.iter().skip(usize::from(p.len() > 1)).map(owned));
    } else if is("PRIVMSG") || is("NOTICE") || is("SQUERY") {
        if let Some((target, words)) = p.split_first() {
            if names_login_service(target) {
                let text = words.join(" ");
                out.extend(login_credentials(target, &text).iter().map(owned));
            }
        }
    } else if ["NS", "NICKSERV", "CS", "CHANSERV"].into_iter().any(is) {
        let text = p.join(" ");
        out.extend(alias_credentials(&text).iter().map(owned));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_line_masks_every_authenticate_and_the_rest_as_at_the_source() {
        assert_eq!(
            mask_sent_line("AUTHENTICATE PLAIN"),
            "AUTHENTICATE ********"
        );
        assert_eq!(mask_sent_line("authenticate +"), "AUTHENTICATE ********");
        assert_eq!(
            mask_sent_line(":me AUTHENTICATE x"),
            ":me AUTHENTICATE ********"
        );
        assert_eq!(
            mask_sent_line("@a=b AUTHENTICATE x"),
            "AUTHENTICATE ********"
        );
        assert_eq!(mask_sent_line("PASS x"), mask_line("PASS x"));
        assert_eq!(
            mask_sent_line("PRIVMSG #c :hi\r\nAUTHENTICATE PLAIN"),
            "PRIVMSG #c :hi\r\nAUTHENTICATE ********"
        );
        assert!(matches!(mask_sent_line("PRIVMSG #c :hi"), Cow::Borrowed(_)));
    }

    #[test]
    fn header_skips_tags_and_keeps_prefix() {
        let h = header("@a=b;c :nick!u@h PRIVMSG #c :hi").unwrap();
        assert_eq!(h.prefix, Some(":nick!u@h"));
        assert_eq!(h.command, "PRIVMSG");
        assert_eq!(h.rest, "#c :hi");
        assert_eq!(header("@tags-only"), None);
        assert_eq!(header(":prefix-only"), None);
        assert_eq!(header(""), None);
        assert_eq!(header("   "), None);
    }

    #[test]
    fn params_split_words_and_trailing() {
        assert_eq!(params("a  b :c d "), vec!["a", "b", "c d "]);
        assert_eq!(params(""), Vec::<&str>::new());
        assert_eq!(params(":"), vec![""]);
        assert_eq!(params("x"), vec!["x"]);
    }

    #[test]
    fn a_sent_line_gives_its_passwords_alone() {
        let cases: &[(&str, &[&str])] = &[
            ("PASS :pass word", &["pass word"]),
            ("@t=1 :me pass pw12", &["pw12"]),
            ("OPER admin opw1", &["opw1"]),
            ("OPER opw1", &["opw1"]),
            ("PRIVMSG NickServ :IDENTIFY acct nspw", &["nspw"]),
            ("PRIVMSG #rete,NickServ :IDENTIFY nspw", &["nspw"]),
            ("PRIVMSG NickServ@services.example :ID nspw", &["nspw"]),
            ("PRIVMSG NickServ :\u{2}IDENTIFY\u{2} nspw", &["nspw"]),
            (
                "P\u{200B}RIVMSG Nick\u{AD}Serv :REGISTER nspw a@b",
                &["nspw"],
            ),
            ("NS SET PASSWORD newpw", &["newpw"]),
            ("cs identify cspw", &["cspw"]),
            ("PRIVMSG AuthServ :AUTH acct apw1", &["apw1"]),
            ("PING :x\r\nPASS lbpw", &["lbpw"]),
            ("PRIVMSG #rete :IDENTIFY nspw", &[]),
            ("AUTHENTICATE AGFsaWNl", &[]),
            ("JOIN #c key", &[]),
        ];
        for (line, want) in cases {
            assert_eq!(sent_credentials(line), *want, "{line:?}");
        }
    }

    #[test]
    fn unmasked_lines_are_borrowed() {
        for line in ["PRIVMSG #c :PASS hunter2", "NICK rete", "@t=1 JOIN #a key"] {
            assert!(matches!(mask_line(line), Cow::Borrowed(l) if l == line));
        }
    }
}
