//! The one place that decides whether a row or a member is withheld from a
//! release read, so list_members, read_messages and read_since cannot drift
//! apart on what leaves Rete.
//!
//! The contract withholds two things: raw IRC lines (only the debug tools
//! return them) and anything containing one of the session's secret values.
//! Message buffers hold no raw lines: [`Payload`] has no raw variant, so
//! there is nothing of that class to withhold on these tools. What remains is
//! the secret scan: [`Withholder`] is built once per read from the secret
//! values the session holds, and drops any row or member that contains one.
//!
//! [`Withholder::for_view`] is where a read takes the session's secrets: the
//! opaque `SecretSet` the engine keeps (server password, SASL password,
//! channel keys), which can say whether a text holds one but never what it is.

use rete_engine::row::{Payload, Row};
use rete_engine::view::{MemberView, SessionView};
use rete_redact::SecretSet;

/// Decides, for one session, what a release read must not return.
#[derive(Clone, Debug, Default)]
pub struct Withholder {
    /// The session's secret values as an opaque scanner (values under 4
    /// bytes are not scanned for; see `rete_redact::SecretSet`).
    secrets: SecretSet,
}

impl Withholder {
    /// A scan for these secret values.
    pub fn new<I, S>(secrets: I) -> Withholder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Withholder {
            secrets: SecretSet::new(secrets),
        }
    }

    /// The scan for the session behind `view`: the secret values it holds
    /// (server password, SASL password, channel keys).
    pub fn for_view(view: &SessionView<'_>) -> Withholder {
        Withholder {
            secrets: view.secrets().clone(),
        }
    }

    /// True when `row` must not be returned: one of its fields contains a
    /// secret.
    pub fn row(&self, row: &Row) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        let mut hit = self.hits(&row.from) || row.msgid.as_deref().is_some_and(|m| self.hits(m));
        row.payload.for_each_text(|t| hit = hit || self.hits(t));
        if let Payload::UserJoined {
            userhost: Some(uh), ..
        } = &row.payload
        {
            hit = hit || self.hits(uh);
        }
        hit
    }

    /// True when `member` must not be returned: one of its fields contains a
    /// secret.
    pub(crate) fn member(&self, member: &MemberView) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        self.hits(&member.nick)
            || self.hits(&member.modes)
            || [&member.account, &member.user, &member.host]
                .into_iter()
                .flatten()
                .any(|f| self.hits(f))
    }

    /// True when `value` must not be returned: a string, a key or a number
    /// anywhere in it contains a secret (engine_state's sections). Strings
    /// are scanned as they decode, not as JSON escapes them, so a secret
    /// with a quote or a backslash in it is still found.
    pub(crate) fn value(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        if self.secrets.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => self.hits(s),
            Value::Number(n) => self.hits(&n.to_string()),
            Value::Array(items) => items.iter().any(|v| self.value(v)),
            Value::Object(map) => map.iter().any(|(k, v)| self.hits(k) || self.value(v)),
            Value::Null | Value::Bool(_) => false,
        }
    }

    /// True when a raw line must not be returned: it contains a secret,
    /// still has the shape of a credential (the raw-line tripwire), or was
    /// stored cut (`kept` is the part kept) inside a secret, with four or
    /// more bytes of its start at the end of what was kept.
    pub(crate) fn raw_line(&self, text: &str, kept: Option<&str>) -> bool {
        rete_redact::is_credential_shaped(text)
            || self.hits(text)
            || kept.is_some_and(|k| self.secrets.cut_ends_in_secret(k))
    }

    fn hits(&self, field: &str) -> bool {
        self.secrets.contains_secret(field)
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
            msgid: None,
            from: from.into(),
            history: false,
            payload,
        }
    }

    fn member(nick: &str, host: Option<&str>) -> MemberView {
        MemberView {
            nick: nick.into(),
            modes: String::new(),
            account: None,
            away: false,
            user: None,
            host: host.map(Into::into),
        }
    }

    #[test]
    fn nothing_is_withheld_without_secrets() {
        let w = Withholder::default();
        let r = row(
            "alice",
            Payload::Privmsg {
                text: "hunter22".into(),
            },
        );
        assert!(!w.row(&r));
        assert!(!w.member(&member("alice", Some("hunter22"))));
    }

    #[test]
    fn a_secret_anywhere_in_a_row_withholds_it() {
        let w = Withholder::new(["hunter22"]);
        let says = row(
            "alice",
            Payload::Privmsg {
                text: "pw is hunter22!".into(),
            },
        );
        assert!(w.row(&says));
        assert!(w.row(&row("hunter22", Payload::UserQuit { reason: None })));
        let joined = row(
            "bob",
            Payload::UserJoined {
                account: None,
                userhost: Some("u@hunter22.example".into()),
            },
        );
        assert!(w.row(&joined));
        assert!(!w.row(&row(
            "alice",
            Payload::Privmsg {
                text: "hunter2".into()
            }
        )));
    }

    #[test]
    fn raw_lines_are_screened_by_secret_shape_and_cut() {
        let w = Withholder::new(["hunter22"]);
        assert!(w.raw_line("JOIN #c hunter22", None));
        assert!(w.raw_line("PASS hunter2", None), "the tripwire");
        assert!(w.raw_line("OPER admin pw", None));
        assert!(!w.raw_line("PASS :********", None));
        assert!(!w.raw_line("PRIVMSG #c :PASS it on", None));
        assert!(w.raw_line("x…[+9 bytes]", Some("x hunt")));
        assert!(!w.raw_line("x…[+9 bytes]", Some("x hun")), "three bytes");
        assert!(!Withholder::default().raw_line("JOIN #c hunter22", None));
    }

    #[test]
    fn members_are_scanned_on_every_field() {
        let w = Withholder::new(["s3cret"]);
        assert!(w.member(&member("bob", Some("s3cret.host"))));
        assert!(!w.member(&member("bob", Some("host"))));
    }

    #[test]
    fn a_secret_anywhere_in_a_value_withholds_it() {
        use serde_json::json;
        let w = Withholder::new(["k\"ey-12", "987654"]);
        assert!(w.value(&json!({"a": [{"topic": "the k\"ey-12 is"}]})));
        assert!(w.value(&json!({"k\"ey-12": 1})));
        assert!(w.value(&json!({"count": 19876543})));
        assert!(!w.value(&json!({"a": [true, null, "key-12", 98765]})));
        assert!(!Withholder::default().value(&json!("k\"ey-12")));
    }

    #[test]
    fn short_secrets_are_not_scanned_and_debug_hides_values() {
        let w = Withholder::new(["abc", "wxyz"]);
        assert!(!w.row(&row("x", Payload::Privmsg { text: "abc".into() })));
        assert!(w.row(&row(
            "x",
            Payload::Privmsg {
                text: "wxyz".into()
            }
        )));
        let shown = format!("{w:?}");
        assert!(!shown.contains("wxyz"), "{shown}");
        assert_eq!(shown, "Withholder { secrets: SecretSet { len: 1 } }");
    }
}
