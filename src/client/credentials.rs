//! Credentials a person sent in a service login (`/msg NickServ REGISTER pw
//! e@x`), remembered for the session so that a service echoing one back
//! ("… with the password pw") is masked in what reterm shows and stores.
//!
//! The engine already stores the login itself masked (by
//! `rete_redact::mask_service_login`); this takes the words that rule masks
//! and hides them, as whole words, in every later row of the session.

use std::borrow::Cow;

/// What a masked word is shown as.
pub const MASK: &str = "********";

/// The credential words of a service login: those `mask_service_login`
/// replaces (none when `text` to `target` is not a login).
pub fn login_credentials(target: &str, text: &str) -> Vec<String> {
    let Some(masked) = rete_redact::mask_service_login(target, text) else {
        return Vec::new();
    };
    let sent: Vec<&str> = text.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
    let shown: Vec<&str> = masked
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let same_start = sent.iter().zip(&shown).take_while(|(a, b)| a == b).count();
    let same_end = sent
        .iter()
        .rev()
        .zip(shown.iter().rev())
        .take_while(|(a, b)| a == b)
        .count()
        .min(sent.len() - same_start)
        .min(shown.len() - same_start);
    sent[same_start..sent.len() - same_end]
        .iter()
        .map(|w| (*w).to_owned())
        .collect()
}

/// The credentials remembered for one session.
#[derive(Clone, Debug, Default)]
pub struct Masks {
    words: Vec<String>,
}

impl Masks {
    /// Remembers more credential words.
    pub fn add(&mut self, words: Vec<String>) {
        for w in words {
            if !w.is_empty() && !self.words.contains(&w) {
                self.words.push(w);
            }
        }
    }

    /// `text` with every remembered credential that stands as a word (not
    /// inside a longer run of letters and digits) shown as [`MASK`].
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for word in &self.words {
            if !out.contains(word.as_str()) {
                continue;
            }
            let mut masked = String::with_capacity(out.len());
            let mut rest: &str = &out;
            while let Some(at) = rest.find(word.as_str()) {
                let before = rest[..at].chars().next_back();
                let after = rest[at + word.len()..].chars().next();
                let bounded = !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric);
                masked.push_str(&rest[..at]);
                masked.push_str(if bounded { MASK } else { word });
                rest = &rest[at + word.len()..];
            }
            masked.push_str(rest);
            out = Cow::Owned(masked);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masked_words_of_a_login_are_its_credentials() {
        assert_eq!(login_credentials("NickServ", "REGISTER pw e@x"), ["pw"]);
        // The whole remainder is one mask: every word of it is a credential.
        assert_eq!(
            login_credentials("NickServ", "IDENTIFY acct s3cret"),
            ["acct", "s3cret"]
        );
        assert_eq!(
            login_credentials("NickServ", "SET PASSWORD a b"),
            ["a", "b"]
        );
        assert!(login_credentials("bob", "REGISTER pw e@x").is_empty());
        assert!(login_credentials("NickServ", "HELP").is_empty());
    }

    #[test]
    fn whole_words_only() {
        let mut m = Masks::default();
        m.add(vec!["pw".into()]);
        assert_eq!(
            m.mask("with the password pw."),
            "with the password ********."
        );
        assert_eq!(m.mask("pwned pw"), "pwned ********");
        assert_eq!(m.mask("nothing here"), "nothing here");
    }
}
