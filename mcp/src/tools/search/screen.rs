//! The way-out scan for search: a row that contains one of the session's
//! secret values is withheld (never matched, never returned, counted).
//!
//! This is search's own copy of the rule, kept private until the shared
//! read-side screen lands (the lead merges the two). The engine's
//! `SessionView` does not expose the session's secret values yet, so
//! [`Screen::for_view`] finds none and nothing is withheld in a live
//! session today; the matching rule itself is complete and tested.

use rete_engine::row::{Payload, Row};
use rete_engine::view::SessionView;

/// Secrets shorter than this are not scanned for (the contract's rule: a
/// two-byte channel key would withhold nearly everything).
const MIN_SECRET_BYTES: usize = 4;

/// One session's secret values, screening its rows.
#[derive(Clone, Debug, Default)]
pub struct Screen {
    secrets: Vec<String>,
}

impl Screen {
    /// A screen for these secret values (short ones are dropped).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Screen {
        Screen {
            secrets: secrets
                .into_iter()
                .filter(|s| s.len() >= MIN_SECRET_BYTES)
                .collect(),
        }
    }

    /// The screen for a session, from what its view exposes (nothing yet;
    /// see the module docs).
    pub fn for_view(_view: &SessionView<'_>) -> Screen {
        Screen::default()
    }

    /// True when any string of the message object holds a secret.
    pub fn withholds(&self, row: &Row) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        let mut hit = self.holds(&row.from) || row.msgid.as_deref().is_some_and(|m| self.holds(m));
        row.payload.for_each_text(|t| hit = hit || self.holds(t));
        if let Payload::UserJoined {
            userhost: Some(h), ..
        } = &row.payload
        {
            hit = hit || self.holds(h);
        }
        hit
    }

    fn holds(&self, text: &str) -> bool {
        self.secrets.iter().any(|s| text.contains(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_engine::clock::UnixMillis;

    fn row(from: &str, payload: Payload) -> Row {
        Row {
            seq: 1,
            time: UnixMillis(0),
            msgid: Some("id-1".into()),
            from: from.into(),
            history: false,
            payload,
        }
    }

    #[test]
    fn any_field_holding_a_secret_withholds_the_row() {
        let s = Screen::new(["hunter22".to_owned(), "abc".to_owned()]);
        let say = |t: &str| row("bob", Payload::Privmsg { text: t.into() });
        assert!(s.withholds(&say("my password is hunter22!")));
        assert!(!s.withholds(&say("hunter2")));
        assert!(
            !s.withholds(&say("abc")),
            "short secrets are not scanned for"
        );
        let join = row(
            "bob",
            Payload::UserJoined {
                account: None,
                userhost: Some("hunter22@host".into()),
            },
        );
        assert!(s.withholds(&join));
        assert!(!Screen::default().withholds(&say("hunter22")));
    }
}
