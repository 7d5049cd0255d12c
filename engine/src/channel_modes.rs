//! A channel's own modes (`+ntkl`): what RPL_CHANNELMODEIS (324) and MODE
//! lines say, other than list modes (bans and the like, CHANMODES group A)
//! and membership modes (PREFIX), which live on each member.
//!
//! The key (`+k`) is a secret in Rete's model: its value is kept apart, in a
//! [`Secret`] that prints as `Secret(********)` and is never serialized, so no
//! Debug output, log line, state dump or saved state shows it. The letter
//! map says only that the channel has a key.

use crate::isupport::{ModeChange, ModeKind};
use rete_redact::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The key mode letter, the same on every server.
pub const KEY_MODE: char = 'k';

/// A channel's modes: letter → parameter (`n` → None, `l` → `Some("10")`,
/// `k` → None with the value in `key`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelModes {
    /// Each mode set, in letter order.
    pub letters: BTreeMap<char, Option<String>>,
    /// The key's value, when the channel has one and the server said it.
    #[serde(skip)]
    pub key: Option<Secret>,
}

impl ChannelModes {
    /// Applies one change of a MODE line or a 324 reply; list and
    /// membership modes are not the channel's own and are ignored.
    pub fn apply(&mut self, change: &ModeChange, kind: ModeKind) {
        if matches!(kind, ModeKind::Prefix | ModeKind::List) {
            return;
        }
        let letter = change.mode;
        if !change.adding {
            self.letters.remove(&letter);
            if letter == KEY_MODE {
                self.key = None;
            }
            return;
        }
        if letter == KEY_MODE {
            self.letters.insert(letter, None);
            self.key = change.arg.clone().map(Secret::new);
            return;
        }
        let arg = match kind {
            ModeKind::AlwaysArg | ModeKind::SetArg => change.arg.clone(),
            _ => None,
        };
        self.letters.insert(letter, arg);
    }

    /// Whether the channel has a key (`+k`), whether or not its value is known.
    #[must_use]
    pub fn has_key(&self) -> bool {
        self.letters.contains_key(&KEY_MODE)
    }

    /// The modes as a 324 reply's mode string and parameters: `+lntk`,
    /// `["10", "secret"]`, the key last so a key that cannot be a middle
    /// parameter can be the trailing one. The key's value is there only when
    /// `with_key`; without it (or unknown) the `k` letter is left out, since
    /// a `k` without its parameter would shift the others.
    #[must_use]
    pub fn to_reply(&self, with_key: bool) -> (String, Vec<String>) {
        let mut letters = String::from("+");
        let mut params = Vec::new();
        for (letter, arg) in &self.letters {
            if *letter == KEY_MODE {
                continue;
            }
            if let Some(a) = arg {
                params.push(a.clone());
            }
            letters.push(*letter);
        }
        if let (Some(k), true) = (&self.key, with_key) {
            letters.push(KEY_MODE);
            params.push(k.expose().to_owned());
        }
        (letters, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isupport::Isupport;

    fn apply(modes: &mut ChannelModes, isupport: &Isupport, text: &str) {
        let mut words = text.split(' ');
        let modestring = words.next().unwrap_or("");
        let args: Vec<&str> = words.collect();
        for c in isupport.parse_mode_changes(modestring, &args) {
            modes.apply(&c, isupport.mode_kind(c.mode));
        }
    }

    #[test]
    fn modes_follow_changes_and_the_key_stays_out_of_debug_and_serde() {
        let mut i = Isupport::default();
        i.apply_tokens(&["CHANMODES=b,k,l,imnt", "PREFIX=(ov)@+"]);
        let mut m = ChannelModes::default();
        apply(&mut m, &i, "+ntklb hunter22 10 *!*@bad");
        apply(&mut m, &i, "+o bob");
        assert_eq!(m.letters.keys().collect::<String>(), "klnt");
        assert_eq!(m.letters.get(&'l'), Some(&Some("10".to_owned())));
        assert!(m.has_key());
        assert_eq!(m.key.as_ref().map(Secret::expose), Some("hunter22"));
        assert_eq!(
            m.to_reply(true),
            (
                "+lntk".to_owned(),
                vec!["10".to_owned(), "hunter22".to_owned()]
            )
        );
        assert_eq!(
            m.to_reply(false),
            ("+lnt".to_owned(), vec!["10".to_owned()])
        );
        let shown = format!("{m:?}");
        assert!(!shown.contains("hunter22"), "{shown}");
        let saved = serde_json::to_string(&m).unwrap();
        assert!(!saved.contains("hunter22"), "{saved}");
        apply(&mut m, &i, "-kl hunter22");
        assert_eq!(m.letters.keys().collect::<String>(), "nt");
        assert_eq!(m.key, None);
    }
}
