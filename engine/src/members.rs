//! Channels, their members, and what is known of each user.
//!
//! Per-channel facts (mode letters) live on the membership; per-user facts
//! (account, away, user, host) live once in the [`Users`] table, keyed by the
//! case-folded nick, because away-notify, account-notify and chghost speak of
//! a user, not of one channel.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One user's membership in one channel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The nick as last seen (display case).
    pub nick: String,
    /// Channel mode letters (prefix modes), highest rank first: "ov".
    pub modes: String,
}

/// What is known of a user across channels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The nick as last seen (display case).
    pub nick: String,
    /// The user (ident) part of the hostmask.
    pub user: Option<String>,
    /// The host part of the hostmask.
    pub host: Option<String>,
    /// The services account; None when unknown or logged out.
    pub account: Option<String>,
    /// True while the user is marked away.
    pub away: bool,
    /// The realname (gecos), when known.
    pub realname: Option<String>,
}

/// A channel the session is in (or was in: `joined` says).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Channel {
    /// The channel name as the server spells it.
    pub name: String,
    /// True while we are in the channel.
    pub joined: bool,
    /// The topic, when known.
    pub topic: Option<String>,
    /// Who set the topic, when known.
    pub topic_set_by: Option<String>,
    /// When the topic was set (RPL_TOPICWHOTIME on join, or the TOPIC
    /// line's time), when known.
    #[serde(default)]
    pub topic_set_at: Option<crate::clock::UnixMillis>,
    /// The channel's own modes (324 and MODE lines), the key's value kept
    /// apart as a secret (see [`crate::channel_modes`]).
    #[serde(default)]
    pub modes: crate::channel_modes::ChannelModes,
    /// When the server says the channel was created (RPL_CREATIONTIME,
    /// Unix seconds), when known.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Members by case-folded nick, so iteration is sorted.
    pub members: BTreeMap<String, Membership>,
    /// NAMES replies being collected until RPL_ENDOFNAMES replaces `members`.
    #[serde(skip)]
    pub names_pending: Option<BTreeMap<String, Membership>>,
}

/// Every user the session shares a channel with, by case-folded nick.
pub type Users = BTreeMap<String, User>;

/// Adds mode letter `mode` to `modes`, keeping `rank` order (lower = higher).
pub fn add_mode(modes: &mut String, mode: char, rank: impl Fn(char) -> Option<usize>) {
    if modes.contains(mode) {
        return;
    }
    let mut letters: Vec<char> = modes.chars().collect();
    letters.push(mode);
    letters.sort_by_key(|&c| rank(c).unwrap_or(usize::MAX));
    *modes = letters.into_iter().collect();
}

/// Removes mode letter `mode` from `modes`.
pub fn remove_mode(modes: &mut String, mode: char) {
    modes.retain(|c| c != mode);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_keep_rank_order() {
        let rank = |c| "qaohv".find(c);
        let mut m = String::new();
        add_mode(&mut m, 'v', rank);
        add_mode(&mut m, 'o', rank);
        add_mode(&mut m, 'o', rank);
        assert_eq!(m, "ov");
        remove_mode(&mut m, 'o');
        assert_eq!(m, "v");
    }
}
