//! The highlight rule: the person's current nick, bounded by the engine's
//! mention rule ([`rete_engine::mention`], the one the control surface's
//! mention events use, so `mriron` is not said in `mrironman`), or one of
//! their configured words, ignoring case.

use rete_engine::mention::mentions;
use rete_engine::row::{Payload, Row};

/// True when `row` is someone else's message that says `nick` or a `word`.
pub fn is_highlight(row: &Row, nick: &str, words: &[String]) -> bool {
    if row.from.eq_ignore_ascii_case(nick) {
        return false;
    }
    let text = match &row.payload {
        Payload::Privmsg { text } | Payload::Notice { text } | Payload::Action { text } => text,
        _ => return false,
    };
    mentions(text, nick) || words.iter().any(|w| mentions(text, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    fn said(from: &str, text: &str) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(0),
            msgid: None,
            from: from.into(),
            history: false,
            payload: Payload::Privmsg { text: text.into() },
        }
    }

    #[test]
    fn nick_is_bounded_by_nick_characters() {
        assert!(is_highlight(&said("bob", "MrIron: hi"), "mriron", &[]));
        assert!(is_highlight(&said("bob", "hi @mriron!"), "mriron", &[]));
        assert!(!is_highlight(&said("bob", "mrironman"), "mriron", &[]));
        assert!(!is_highlight(&said("bob", "mriron_ x"), "mriron", &[]));
    }

    #[test]
    fn words_and_own_rows() {
        let words = vec!["deploy".to_owned()];
        assert!(is_highlight(&said("bob", "Deploy now"), "me", &words));
        assert!(!is_highlight(&said("me", "me deploy"), "me", &words));
    }
}
