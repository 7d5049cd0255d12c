//! Client-side ignores: masks (`nick!user@host` with `*` and `?`, ASCII
//! case ignored; a bare `nick` means `nick!*@*`) whose messages reterm does
//! not show. The server still sends them; nothing is asked of it.

use rete_engine::row::{Payload, Row};
use wildmatch::WildMatch;

/// The compiled `/ignore` list.
#[derive(Clone, Debug, Default)]
pub struct Ignores {
    masks: Vec<(String, WildMatch)>,
}

impl Ignores {
    /// Compiles `masks` as the config holds them.
    pub fn new(masks: &[String]) -> Ignores {
        Ignores {
            masks: masks
                .iter()
                .map(|m| (m.clone(), WildMatch::new_case_insensitive(&full(m))))
                .collect(),
        }
    }

    /// Whether there is nothing to ignore (so no lookup is needed).
    pub fn is_empty(&self) -> bool {
        self.masks.is_empty()
    }

    /// Whether a row of someone speaking (message, notice, action, CTCP)
    /// from `nick!user@host` is ignored. Joins, parts and the like are kept:
    /// they say who is in the channel.
    pub fn hides(&self, row: &Row, user: Option<&str>, host: Option<&str>) -> bool {
        if self.masks.is_empty() || row.from.is_empty() {
            return false;
        }
        let spoken = matches!(
            row.payload,
            Payload::Privmsg { .. }
                | Payload::Notice { .. }
                | Payload::Action { .. }
                | Payload::Ctcp { .. }
        );
        if !spoken {
            return false;
        }
        let who = format!("{}!{}@{}", row.from, user.unwrap_or(""), host.unwrap_or(""));
        self.masks.iter().any(|(_, m)| m.matches(&who))
    }
}

/// A bare nick becomes `nick!*@*`; `nick!user` gets `@*`.
pub fn full(mask: &str) -> String {
    match (mask.contains('!'), mask.contains('@')) {
        (false, false) => format!("{mask}!*@*"),
        (true, false) => format!("{mask}@*"),
        (false, true) => format!("*!{mask}"),
        (true, true) => mask.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    fn said(from: &str) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(0),
            msgid: None,
            from: from.into(),
            history: false,
            payload: Payload::Privmsg { text: "hi".into() },
        }
    }

    #[test]
    fn nicks_and_hosts_ignoring_case() {
        let i = Ignores::new(&["Spam".into(), "*!*@bad.host".into()]);
        assert!(i.hides(&said("spam"), None, None));
        assert!(i.hides(&said("eve"), Some("e"), Some("BAD.host")));
        assert!(!i.hides(&said("eve"), Some("e"), Some("good.host")));
        assert!(!i.hides(&said("spammer"), None, None));
        let mut join = said("spam");
        join.payload = Payload::UserJoined {
            account: None,
            userhost: None,
        };
        assert!(!i.hides(&join, None, None));
        assert!(!Ignores::default().hides(&said("spam"), None, None));
        assert_eq!(full("u@h"), "*!u@h");
        assert_eq!(full("n!u"), "n!u@*");
    }
}
