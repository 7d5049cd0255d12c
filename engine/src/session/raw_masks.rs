//! `/smsg` texts the raw views must not show.
//!
//! A `/smsg` goes out as a plain PRIVMSG, and the server's echo-message copy
//! comes back as one: the engine stores both masked, but the raw tap sees the
//! lines themselves. So for a while after sending, a line whose text is a
//! `/smsg` text just sent is shown with that text masked, in and out. The
//! window is longer than the echo's 10 seconds, since the line may wait in
//! the flood throttle first; past it, a copy shows in clear ("What redaction
//! does not do").

use std::borrow::Cow;

use crate::clock::Mono;

/// How long after sending a `/smsg` text is masked in raw lines.
const RAW_MASK_MS: u64 = 60_000;

/// The `/smsg` texts sent in the last minute. `Debug` shows only how many.
#[derive(Clone, Default)]
pub(crate) struct RawMasks {
    texts: Vec<(String, Mono)>,
}

impl std::fmt::Debug for RawMasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawMasks({})", self.texts.len())
    }
}

impl RawMasks {
    /// Masks `text` in raw lines from `now` for a minute.
    pub(crate) fn add(&mut self, text: &str, now: Mono) {
        self.texts.push((text.to_owned(), now.plus_ms(RAW_MASK_MS)));
    }

    /// `line` as the raw views may show it: when its last parameter is a
    /// `/smsg` text still masked, that parameter is the mask. Borrowed (and
    /// nothing is searched) when no text is masked, which is almost always.
    pub(crate) fn shown<'a>(&mut self, line: &'a str, now: Mono) -> Cow<'a, str> {
        if self.texts.is_empty() {
            return Cow::Borrowed(line);
        }
        self.texts.retain(|(_, until)| *until > now);
        for (text, _) in &self.texts {
            if let Some(head) = line.strip_suffix(text.as_str()) {
                // The whole last parameter: after " :", or a last word
                // with no trailing parameter begun before it.
                if head.ends_with(" :") || (head.ends_with(' ') && !head.contains(" :")) {
                    return Cow::Owned(format!("{head}{}", super::SECRET_MASK));
                }
            }
        }
        Cow::Borrowed(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_text_is_masked_in_and_out_for_a_minute() {
        let mut m = RawMasks::default();
        let t0 = Mono(1_000);
        assert!(matches!(
            m.shown("PRIVMSG bob :s3cret words", t0),
            Cow::Borrowed(_)
        ));
        m.add("s3cret words", t0);
        assert_eq!(
            m.shown("PRIVMSG bob :s3cret words", t0),
            "PRIVMSG bob :********"
        );
        assert_eq!(
            m.shown("@time=x :me!u@h PRIVMSG bob :s3cret words", t0.plus_ms(5)),
            "@time=x :me!u@h PRIVMSG bob :********"
        );
        m.add("oneword", t0);
        assert_eq!(m.shown("PRIVMSG bob oneword", t0), "PRIVMSG bob ********");
        // Only a whole last parameter: other text stays as it is.
        assert_eq!(
            m.shown("PRIVMSG bob :not oneword", t0),
            "PRIVMSG bob :not oneword"
        );
        assert_eq!(
            m.shown("PRIVMSG bob :xoneword", t0),
            "PRIVMSG bob :xoneword"
        );
        let later = t0.plus_ms(RAW_MASK_MS);
        assert_eq!(
            m.shown("PRIVMSG bob :s3cret words", later),
            "PRIVMSG bob :s3cret words"
        );
        assert!(m.texts.is_empty());
        assert_eq!(format!("{m:?}"), "RawMasks(0)");
    }
}
