//! Which nick to try next while registering, when the server refuses one.
//!
//! The order: the nick last chosen with `/nick` (kept across reconnects),
//! the configured nick, then the configured nick with a varied tail (`_`,
//! `__`, `___`, `1` … `9`). Every candidate is cut to fit the server's nick
//! length: NICKLEN from ISUPPORT when known (it survives a reconnect), else a
//! limit learned from a 432 for a nick longer than the 9 characters every
//! server allows. The tries are bounded: a server that refuses everything
//! (a nick starting with a digit, a short NICKLEN, its own rules) gets at
//! most [`MAX_NICK_TRIES`] NICK lines, and the session then waits for the
//! person to pick one with `/nick`.

/// NICK lines registration sends on its own before it gives up, the first
/// one included.
pub(crate) const MAX_NICK_TRIES: usize = 6;

/// The nick length every server accepts (RFC 1459), so a 432 for a nick this
/// short is about its characters, not its length.
const SAFE_NICK_LEN: usize = 9;

/// Tails added to the configured nick, in order.
const TAILS: &[&str] = &[
    "_", "__", "___", "1", "2", "3", "4", "5", "6", "7", "8", "9",
];

/// The next nick to send, or `None` when the tries are used up or nothing
/// untried is left. `tried` holds every nick sent on this connection.
pub(crate) fn next_nick(
    configured: &str,
    preferred: Option<&str>,
    tried: &[String],
    limit: Option<usize>,
) -> Option<String> {
    if tried.len() >= MAX_NICK_TRIES {
        return None;
    }
    let wanted = preferred
        .filter(|p| !p.eq_ignore_ascii_case(configured))
        .map(|p| fit(p, "", limit));
    let configured_first = std::iter::once(fit(configured, "", limit));
    let varied = TAILS.iter().map(|tail| fit(configured, tail, limit));
    wanted
        .into_iter()
        .chain(configured_first)
        .chain(varied)
        .flatten()
        .find(|nick| !tried.iter().any(|t| t.eq_ignore_ascii_case(nick)))
}

/// A 432 for `refused`: the nick length it suggests the server allows, when
/// the refused nick was longer than every server's minimum.
pub(crate) fn limit_after_erroneous(refused: &str, limit: Option<usize>) -> Option<usize> {
    let len = refused.chars().count();
    if len <= SAFE_NICK_LEN {
        return limit;
    }
    let learned = len - 1;
    Some(limit.map_or(learned, |l| l.min(learned)))
}

/// `base` cut so that `base + tail` fits `limit` characters. `None` when
/// nothing of `base` would be left, or the result could never be a nick (a
/// leading digit or `-`, which servers refuse whatever follows).
fn fit(base: &str, tail: &str, limit: Option<usize>) -> Option<String> {
    let keep = match limit {
        Some(l) => l.checked_sub(tail.chars().count())?,
        None => usize::MAX,
    };
    let head: String = base.chars().take(keep).collect();
    if head.is_empty() || head.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return None;
    }
    Some(head + tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every nick registration would send if the server refused them all.
    fn all(configured: &str, preferred: Option<&str>, limit: Option<usize>) -> Vec<String> {
        let mut tried = Vec::new();
        while let Some(n) = next_nick(configured, preferred, &tried, limit) {
            tried.push(n);
        }
        tried
    }

    #[test]
    fn configured_then_tails_bounded() {
        assert_eq!(
            all("rete", None, None),
            ["rete", "rete_", "rete__", "rete___", "rete1", "rete2"]
        );
    }

    #[test]
    fn the_nick_chosen_with_slash_nick_goes_first() {
        assert_eq!(
            all("rete", Some("zed"), None),
            ["zed", "rete", "rete_", "rete__", "rete___", "rete1"]
        );
        // Equal to the configured one (any case): tried once.
        assert_eq!(all("rete", Some("RETE"), None)[..2], ["rete", "rete_"]);
    }

    #[test]
    fn nicklen_truncates_then_varies_the_tail() {
        assert_eq!(
            all("retebotlong", None, Some(9)),
            [
                "retebotlo",
                "retebotl_",
                "retebot__",
                "retebo___",
                "retebotl1",
                "retebotl2"
            ]
        );
    }

    #[test]
    fn a_nick_starting_with_a_digit_has_no_fallback() {
        assert_eq!(all("1rete", None, None), Vec::<String>::new());
        assert_eq!(all("-x", None, None), Vec::<String>::new());
        // The preferred nick is still tried when it is valid.
        assert_eq!(all("1rete", Some("ok"), None), ["ok"]);
    }

    #[test]
    fn a_limit_too_short_for_any_tail_ends_early() {
        assert_eq!(
            all("ab", None, Some(2)),
            ["ab", "a_", "a1", "a2", "a3", "a4"]
        );
        assert_eq!(all("ab", None, Some(1)), ["a"]);
        assert_eq!(all("ab", None, Some(0)), Vec::<String>::new());
    }

    #[test]
    fn erroneous_long_nick_teaches_a_limit() {
        assert_eq!(limit_after_erroneous("retebot12_", None), Some(9));
        assert_eq!(limit_after_erroneous("retebot12_", Some(5)), Some(5));
        // Nine characters or fewer: the characters were wrong, not the length.
        assert_eq!(limit_after_erroneous("1abc", None), None);
        assert_eq!(limit_after_erroneous("abcdefghi", Some(30)), Some(30));
    }
}
