//! What the server advertised in RPL_ISUPPORT (005), with RFC defaults.
//!
//! Servers describe their dialect in 005 tokens: which characters start a
//! channel, which mode letters take arguments, how names compare. Parsing a
//! MODE line or a NAMES reply correctly depends on these, so the engine keeps
//! one [`Isupport`] per connection and consults it instead of hard-coding
//! any one server's behaviour.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::casemap::CaseMapping;

/// The four `CHANMODES=A,B,C,D` groups, which decide whether a mode letter
/// consumes a parameter in a MODE line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChanModes {
    /// Group A: list modes (bans, exceptions); always take a parameter,
    /// though a bare `+b` is a list query.
    pub list: String,
    /// Group B: always take a parameter, also when unset (e.g. `k`).
    pub always_arg: String,
    /// Group C: take a parameter only when set (e.g. `l`).
    pub set_arg: String,
    /// Group D: never take a parameter (e.g. `m`, `n`).
    pub no_arg: String,
}

impl Default for ChanModes {
    fn default() -> Self {
        ChanModes {
            list: "beI".to_owned(),
            always_arg: "k".to_owned(),
            set_arg: "l".to_owned(),
            no_arg: "imnpst".to_owned(),
        }
    }
}

impl ChanModes {
    /// Parses a `CHANMODES` value; missing groups are empty and groups past
    /// the fourth are ignored, since their argument rules are unspecified.
    #[must_use]
    pub fn parse(value: &str) -> ChanModes {
        let mut groups = value.split(',').map(str::to_owned);
        ChanModes {
            list: groups.next().unwrap_or_default(),
            always_arg: groups.next().unwrap_or_default(),
            set_arg: groups.next().unwrap_or_default(),
            no_arg: groups.next().unwrap_or_default(),
        }
    }
}

/// How a channel mode letter treats parameters, from PREFIX and CHANMODES.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ModeKind {
    /// A membership mode from PREFIX (`o`, `v`); takes a nick.
    Prefix,
    /// CHANMODES group A (list mode).
    List,
    /// CHANMODES group B (parameter when set and unset).
    AlwaysArg,
    /// CHANMODES group C (parameter only when set).
    SetArg,
    /// CHANMODES group D (no parameter).
    NoArg,
    /// Not advertised; assumed to take no parameter, the only safe guess
    /// that does not shift the remaining parameters.
    Unknown,
}

impl ModeKind {
    /// Whether a change of this kind consumes a parameter from the MODE line.
    #[must_use]
    pub fn takes_arg(self, adding: bool) -> bool {
        match self {
            ModeKind::Prefix | ModeKind::List | ModeKind::AlwaysArg => true,
            ModeKind::SetArg => adding,
            ModeKind::NoArg | ModeKind::Unknown => false,
        }
    }
}

/// One mode letter set or unset, with its parameter if it took one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChange {
    /// `true` for `+`, `false` for `-`.
    pub adding: bool,
    /// The mode letter.
    pub mode: char,
    /// The parameter, when the mode takes one and the line supplied it.
    pub arg: Option<String>,
}

/// A NAMES reply entry split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesEntry<'a> {
    /// Membership mode letters (not prefix symbols), highest rank first.
    pub modes: Vec<char>,
    /// The nick.
    pub nick: &'a str,
    /// The username, when `userhost-in-names` supplied one.
    pub user: Option<&'a str>,
    /// The hostname, when `userhost-in-names` supplied one.
    pub host: Option<&'a str>,
}

/// The server's advertised features, defaulting to RFC 1459 behaviour until a
/// 005 says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isupport {
    /// `NETWORK=`: the network's display name.
    pub network: Option<String>,
    /// `CASEMAPPING=`: how nicks and channels compare.
    pub casemapping: CaseMapping,
    /// `PREFIX=`: `(mode, prefix symbol)` pairs, highest rank first.
    pub prefix: Vec<(char, char)>,
    /// `CHANTYPES=`: characters that start a channel name.
    pub chantypes: String,
    /// `CHANMODES=`: the parameter rules for channel modes.
    pub chanmodes: ChanModes,
    /// `WHOX`: the server supports `WHO <mask> %fields`.
    pub whox: bool,
    /// `LINELEN=`: the maximum line length in bytes, CR LF included.
    pub linelen: usize,
    /// `NICKLEN=`: the maximum nick length, when advertised.
    pub nicklen: Option<usize>,
    /// `CHATHISTORY=`: the most messages one request may return; `Some(0)`
    /// means supported with no advertised limit.
    pub chathistory: Option<u32>,
    /// `MSGREFTYPES=`: message reference kinds CHATHISTORY accepts, in the
    /// server's order of preference.
    pub msgreftypes: Vec<String>,
    /// `STATUSMSG=`: prefix symbols that may precede a channel target to
    /// address only members with that status.
    pub statusmsg: String,
    /// `UTF8ONLY`: the server rejects non-UTF-8 text.
    pub utf8only: bool,
    /// Every token as received (after `\xHH` unescaping), value `""` when
    /// none, so features the engine does not model stay visible.
    pub raw: BTreeMap<String, String>,
}

impl Default for Isupport {
    fn default() -> Self {
        Isupport {
            network: None,
            casemapping: CaseMapping::default(),
            prefix: vec![('o', '@'), ('v', '+')],
            chantypes: "#&".to_owned(),
            chanmodes: ChanModes::default(),
            whox: false,
            linelen: 512,
            nicklen: None,
            chathistory: None,
            msgreftypes: Vec::new(),
            statusmsg: String::new(),
            utf8only: false,
            raw: BTreeMap::new(),
        }
    }
}

impl Isupport {
    /// Applies the tokens of one 005 line: the caller passes the params
    /// between the nick (first) and the trailing "are supported" text (last).
    ///
    /// Handles `-KEY` (removal, restoring the default), `KEY`, `KEY=`,
    /// `KEY=value` and `\xHH` escapes in values. Keys are matched exactly
    /// (servers send them upper-case). A value that does not parse (e.g.
    /// `LINELEN=abc`) is kept in [`Isupport::raw`] but leaves the typed field
    /// unchanged, so one odd token cannot break line splitting.
    pub fn apply_tokens(&mut self, tokens: &[&str]) {
        for token in tokens {
            if let Some(key) = token.strip_prefix('-') {
                self.raw.remove(key);
                self.reset(key);
                continue;
            }
            let (key, value) = match token.split_once('=') {
                Some((key, value)) => (key, unescape_value(value)),
                None => (*token, String::new()),
            };
            if key.is_empty() {
                continue;
            }
            self.set(key, &value);
            self.raw.insert(key.to_owned(), value);
        }
    }

    /// Updates the typed field a token describes; unknown keys are raw only.
    fn set(&mut self, key: &str, value: &str) {
        match key {
            "NETWORK" => self.network = (!value.is_empty()).then(|| value.to_owned()),
            "CASEMAPPING" => {
                self.casemapping = CaseMapping::from_isupport(value).unwrap_or_default()
            }
            "PREFIX" => {
                if let Some(prefix) = parse_prefix(value) {
                    self.prefix = prefix;
                }
            }
            "CHANTYPES" => self.chantypes = value.to_owned(),
            "CHANMODES" => self.chanmodes = ChanModes::parse(value),
            "WHOX" => self.whox = true,
            "LINELEN" => {
                if let Ok(n) = value.parse() {
                    self.linelen = n;
                }
            }
            "NICKLEN" => {
                if let Ok(n) = value.parse() {
                    self.nicklen = Some(n);
                }
            }
            "CHATHISTORY" => {
                if value.is_empty() {
                    self.chathistory = Some(0);
                } else if let Ok(n) = value.parse() {
                    self.chathistory = Some(n);
                }
            }
            "MSGREFTYPES" => {
                self.msgreftypes = value
                    .split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "STATUSMSG" => self.statusmsg = value.to_owned(),
            "UTF8ONLY" => self.utf8only = true,
            _ => {}
        }
    }

    /// Restores the default of the typed field a removed token described.
    fn reset(&mut self, key: &str) {
        let d = Isupport::default();
        match key {
            "NETWORK" => self.network = d.network,
            "CASEMAPPING" => self.casemapping = d.casemapping,
            "PREFIX" => self.prefix = d.prefix,
            "CHANTYPES" => self.chantypes = d.chantypes,
            "CHANMODES" => self.chanmodes = d.chanmodes,
            "WHOX" => self.whox = d.whox,
            "LINELEN" => self.linelen = d.linelen,
            "NICKLEN" => self.nicklen = d.nicklen,
            "CHATHISTORY" => self.chathistory = d.chathistory,
            "MSGREFTYPES" => self.msgreftypes = d.msgreftypes,
            "STATUSMSG" => self.statusmsg = d.statusmsg,
            "UTF8ONLY" => self.utf8only = d.utf8only,
            _ => {}
        }
    }

    /// Whether a message target is a channel rather than a nick.
    #[must_use]
    pub fn is_channel(&self, name: &str) -> bool {
        name.chars()
            .next()
            .is_some_and(|c| self.chantypes.contains(c))
    }

    /// The membership mode a NAMES/WHO prefix symbol stands for (`@` -> `o`).
    #[must_use]
    pub fn mode_for_prefix(&self, prefix: char) -> Option<char> {
        self.prefix
            .iter()
            .find(|(_, p)| *p == prefix)
            .map(|(m, _)| *m)
    }

    /// The prefix symbol shown for a membership mode (`o` -> `@`).
    #[must_use]
    pub fn prefix_for_mode(&self, mode: char) -> Option<char> {
        self.prefix
            .iter()
            .find(|(m, _)| *m == mode)
            .map(|(_, p)| *p)
    }

    /// The rank of a membership mode, 0 being the highest, for sorting.
    #[must_use]
    pub fn rank_of_mode(&self, mode: char) -> Option<usize> {
        self.prefix.iter().position(|(m, _)| *m == mode)
    }

    /// How a channel mode letter treats parameters. PREFIX wins over
    /// CHANMODES, since servers list membership modes only in PREFIX.
    #[must_use]
    pub fn mode_kind(&self, mode: char) -> ModeKind {
        let groups = &self.chanmodes;
        if self.rank_of_mode(mode).is_some() {
            ModeKind::Prefix
        } else if groups.list.contains(mode) {
            ModeKind::List
        } else if groups.always_arg.contains(mode) {
            ModeKind::AlwaysArg
        } else if groups.set_arg.contains(mode) {
            ModeKind::SetArg
        } else if groups.no_arg.contains(mode) {
            ModeKind::NoArg
        } else {
            ModeKind::Unknown
        }
    }

    /// Splits a NAMES entry with multi-prefix (`@+nick`, or
    /// `@+nick!user@host` from userhost-in-names) into its parts, the mode
    /// letters sorted by rank and without duplicates.
    #[must_use]
    pub fn split_names_entry<'a>(&self, entry: &'a str) -> NamesEntry<'a> {
        let nick_start = entry
            .char_indices()
            .find(|(_, c)| self.mode_for_prefix(*c).is_none())
            .map_or(entry.len(), |(i, _)| i);
        let (prefixes, rest) = entry.split_at(nick_start);
        let mut modes: Vec<char> = prefixes
            .chars()
            .filter_map(|c| self.mode_for_prefix(c))
            .collect();
        modes.sort_by_key(|m| self.rank_of_mode(*m));
        modes.dedup();
        let (nick, user, host) = split_userhost(rest);
        NamesEntry {
            modes,
            nick,
            user,
            host,
        }
    }

    /// Splits a channel MODE change (e.g. `+ov-k` with `alice bob key`) into
    /// one [`ModeChange`] per letter, pairing parameters by the PREFIX and
    /// CHANMODES groups.
    ///
    /// For channel modes only: user modes follow other rules. A mode that
    /// wants a parameter the line lacks gets `None` (a bare `+b` is a ban-list
    /// query); surplus parameters are ignored. Letters before any sign count
    /// as additions.
    #[must_use]
    pub fn parse_mode_changes(&self, modestring: &str, args: &[&str]) -> Vec<ModeChange> {
        let mut args = args.iter();
        let mut adding = true;
        let mut changes = Vec::new();
        for c in modestring.chars() {
            match c {
                '+' => adding = true,
                '-' => adding = false,
                mode => {
                    let arg = if self.mode_kind(mode).takes_arg(adding) {
                        args.next().map(|a| (*a).to_owned())
                    } else {
                        None
                    };
                    changes.push(ModeChange { adding, mode, arg });
                }
            }
        }
        changes
    }
}

/// Parses `(modes)prefixes`; `None` when malformed, an empty list for an
/// empty value (the server grants no membership modes).
fn parse_prefix(value: &str) -> Option<Vec<(char, char)>> {
    if value.is_empty() {
        return Some(Vec::new());
    }
    let (modes, prefixes) = value.strip_prefix('(')?.split_once(')')?;
    if modes.chars().count() != prefixes.chars().count() {
        return None;
    }
    Some(modes.chars().zip(prefixes.chars()).collect())
}

/// Decodes the `\xHH` escapes ISUPPORT uses for bytes such as space and `=`;
/// a backslash not followed by `x` and two hex digits is kept literally.
fn unescape_value(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match bytes.get(i..i + 4) {
            Some(&[b'\\', b'x', hi, lo]) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
                out.push(hex_value(hi) << 4 | hex_value(lo));
                i += 4;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one ASCII hex digit (callers check `is_ascii_hexdigit`).
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

/// Splits `nick!user@host` (either part optional) into its pieces.
fn split_userhost(s: &str) -> (&str, Option<&str>, Option<&str>) {
    let (before_host, host) = match s.split_once('@') {
        Some((b, h)) => (b, Some(h)),
        None => (s, None),
    };
    match before_host.split_once('!') {
        Some((nick, user)) => (nick, Some(user), host),
        None => (before_host, None, host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(tokens: &[&str]) -> Isupport {
        let mut i = Isupport::default();
        i.apply_tokens(tokens);
        i
    }

    fn change(adding: bool, mode: char, arg: Option<&str>) -> ModeChange {
        ModeChange {
            adding,
            mode,
            arg: arg.map(str::to_owned),
        }
    }

    #[test]
    fn defaults_before_any_005() {
        let i = Isupport::default();
        assert_eq!(i.network, None);
        assert_eq!(i.casemapping, CaseMapping::Rfc1459);
        assert_eq!(i.prefix, vec![('o', '@'), ('v', '+')]);
        assert_eq!(i.chantypes, "#&");
        assert_eq!(i.chanmodes.list, "beI");
        assert_eq!(i.chanmodes.always_arg, "k");
        assert_eq!(i.chanmodes.set_arg, "l");
        assert_eq!(i.chanmodes.no_arg, "imnpst");
        assert!(!i.whox && !i.utf8only);
        assert_eq!(i.linelen, 512);
        assert_eq!(i.nicklen, None);
        assert_eq!(i.chathistory, None);
        assert!(i.statusmsg.is_empty() && i.msgreftypes.is_empty() && i.raw.is_empty());
    }

    #[test]
    fn typical_line_sets_every_field() {
        let i = with(&[
            "NETWORK=Libera.Chat",
            "CASEMAPPING=ascii",
            "PREFIX=(qaohv)~&@%+",
            "CHANTYPES=#",
            "CHANMODES=eIbq,k,flj,CFLMPQScgimnprstuz",
            "WHOX",
            "LINELEN=4096",
            "NICKLEN=16",
            "CHATHISTORY=100",
            "MSGREFTYPES=msgid,timestamp",
            "STATUSMSG=@+",
            "UTF8ONLY",
        ]);
        assert_eq!(i.network.as_deref(), Some("Libera.Chat"));
        assert_eq!(i.casemapping, CaseMapping::Ascii);
        assert_eq!(
            i.prefix,
            vec![('q', '~'), ('a', '&'), ('o', '@'), ('h', '%'), ('v', '+')]
        );
        assert_eq!(i.chantypes, "#");
        assert_eq!(i.chanmodes.list, "eIbq");
        assert_eq!(i.chanmodes.set_arg, "flj");
        assert!(i.whox && i.utf8only);
        assert_eq!(i.linelen, 4096);
        assert_eq!(i.nicklen, Some(16));
        assert_eq!(i.chathistory, Some(100));
        assert_eq!(i.msgreftypes, vec!["msgid", "timestamp"]);
        assert_eq!(i.statusmsg, "@+");
        assert_eq!(i.raw.len(), 12);
        assert_eq!(i.raw["WHOX"], "");
        assert_eq!(i.raw["PREFIX"], "(qaohv)~&@%+");
    }

    #[test]
    fn tokens_accumulate_across_lines() {
        let mut i = with(&["NETWORK=A"]);
        i.apply_tokens(&["WHOX"]);
        assert_eq!(i.network.as_deref(), Some("A"));
        assert!(i.whox);
        assert_eq!(i.raw.len(), 2);
    }

    #[test]
    fn removal_restores_defaults_and_drops_raw() {
        let mut i = with(&[
            "NETWORK=X",
            "CASEMAPPING=ascii",
            "PREFIX=(qo)~@",
            "CHANTYPES=#",
            "CHANMODES=b,,,",
            "WHOX",
            "LINELEN=1024",
            "NICKLEN=9",
            "CHATHISTORY=50",
            "MSGREFTYPES=msgid",
            "STATUSMSG=@",
            "UTF8ONLY",
            "FOO=bar",
        ]);
        i.apply_tokens(&[
            "-NETWORK",
            "-CASEMAPPING",
            "-PREFIX",
            "-CHANTYPES",
            "-CHANMODES",
            "-WHOX",
            "-LINELEN",
            "-NICKLEN",
            "-CHATHISTORY",
            "-MSGREFTYPES",
            "-STATUSMSG",
            "-UTF8ONLY",
            "-FOO",
        ]);
        assert_eq!(i, Isupport::default());
    }

    #[test]
    fn removing_an_absent_key_is_harmless() {
        let i = with(&["-NOPE"]);
        assert_eq!(i, Isupport::default());
    }

    #[test]
    fn key_with_empty_value_equals_bare_key_in_raw() {
        let i = with(&["EXCEPTS=", "INVEX"]);
        assert_eq!(i.raw["EXCEPTS"], "");
        assert_eq!(i.raw["INVEX"], "");
    }

    #[test]
    fn empty_token_and_empty_key_are_ignored() {
        let i = with(&["", "=x"]);
        assert!(i.raw.is_empty());
    }

    #[test]
    fn hex_escapes_are_decoded() {
        let i = with(&["NETWORK=Rete\\x20Net\\x3D1", "X=a\\x5Cb"]);
        assert_eq!(i.network.as_deref(), Some("Rete Net=1"));
        assert_eq!(i.raw["NETWORK"], "Rete Net=1");
        assert_eq!(i.raw["X"], "a\\b");
        assert_eq!(with(&["Y=k\\x3dv"]).raw["Y"], "k=v");
    }

    #[test]
    fn hex_escapes_may_form_utf8() {
        let i = with(&["NETWORK=caf\\xC3\\xA9"]);
        assert_eq!(i.network.as_deref(), Some("café"));
    }

    #[test]
    fn malformed_escapes_stay_literal() {
        let i = with(&["A=x\\xZZ", "B=tail\\x4", "C=\\y", "D=\\"]);
        assert_eq!(i.raw["A"], "x\\xZZ");
        assert_eq!(i.raw["B"], "tail\\x4");
        assert_eq!(i.raw["C"], "\\y");
        assert_eq!(i.raw["D"], "\\");
    }

    #[test]
    fn unknown_casemapping_falls_back_to_default() {
        let i = with(&["CASEMAPPING=ascii", "CASEMAPPING=rfc7613"]);
        assert_eq!(i.casemapping, CaseMapping::Rfc1459);
        assert_eq!(i.raw["CASEMAPPING"], "rfc7613");
    }

    #[test]
    fn empty_network_is_none() {
        let i = with(&["NETWORK="]);
        assert_eq!(i.network, None);
    }

    #[test]
    fn empty_prefix_means_no_membership_modes() {
        let i = with(&["PREFIX="]);
        assert!(i.prefix.is_empty());
        assert_eq!(i.mode_kind('o'), ModeKind::Unknown);
    }

    #[test]
    fn malformed_prefix_is_ignored() {
        for bad in ["PREFIX=(ov)@", "PREFIX=ov@+", "PREFIX=(ov@+"] {
            let i = with(&[bad]);
            assert_eq!(i.prefix, vec![('o', '@'), ('v', '+')], "{bad}");
        }
    }

    #[test]
    fn empty_chantypes_means_no_channels() {
        let i = with(&["CHANTYPES"]);
        assert!(!i.is_channel("#a"));
    }

    #[test]
    fn short_and_long_chanmodes() {
        let i = with(&["CHANMODES=b,k"]);
        assert_eq!(i.chanmodes.list, "b");
        assert_eq!(i.chanmodes.always_arg, "k");
        assert_eq!(i.chanmodes.set_arg, "");
        assert_eq!(i.chanmodes.no_arg, "");
        let i = with(&["CHANMODES=b,k,l,m,XYZ"]);
        assert_eq!(i.chanmodes.no_arg, "m");
        assert_eq!(i.mode_kind('X'), ModeKind::Unknown);
    }

    #[test]
    fn unparsable_numbers_keep_previous_values() {
        let i = with(&["LINELEN=2048", "LINELEN=abc", "NICKLEN=-1", "CHATHISTORY=x"]);
        assert_eq!(i.linelen, 2048);
        assert_eq!(i.nicklen, None);
        assert_eq!(i.chathistory, None);
        assert_eq!(i.raw["LINELEN"], "abc");
    }

    #[test]
    fn chathistory_without_value_means_unlimited() {
        assert_eq!(with(&["CHATHISTORY"]).chathistory, Some(0));
        assert_eq!(with(&["CHATHISTORY=0"]).chathistory, Some(0));
    }

    #[test]
    fn msgreftypes_skips_empty_items() {
        assert_eq!(with(&["MSGREFTYPES=,msgid,"]).msgreftypes, vec!["msgid"]);
        assert!(with(&["MSGREFTYPES="]).msgreftypes.is_empty());
    }

    #[test]
    fn is_channel_uses_chantypes() {
        let i = Isupport::default();
        assert!(i.is_channel("#rust"));
        assert!(i.is_channel("&local"));
        assert!(!i.is_channel("!safe"));
        assert!(!i.is_channel("alice"));
        assert!(!i.is_channel(""));
        let i = with(&["CHANTYPES=#!"]);
        assert!(i.is_channel("!safe"));
        assert!(!i.is_channel("&local"));
    }

    #[test]
    fn prefix_lookups_and_ranks() {
        let i = with(&["PREFIX=(qaohv)~&@%+"]);
        assert_eq!(i.mode_for_prefix('@'), Some('o'));
        assert_eq!(i.mode_for_prefix('~'), Some('q'));
        assert_eq!(i.mode_for_prefix('!'), None);
        assert_eq!(i.prefix_for_mode('h'), Some('%'));
        assert_eq!(i.prefix_for_mode('b'), None);
        assert_eq!(i.rank_of_mode('q'), Some(0));
        assert_eq!(i.rank_of_mode('v'), Some(4));
        assert_eq!(i.rank_of_mode('x'), None);
    }

    #[test]
    fn mode_kinds_follow_groups() {
        let i = Isupport::default();
        assert_eq!(i.mode_kind('o'), ModeKind::Prefix);
        assert_eq!(i.mode_kind('b'), ModeKind::List);
        assert_eq!(i.mode_kind('k'), ModeKind::AlwaysArg);
        assert_eq!(i.mode_kind('l'), ModeKind::SetArg);
        assert_eq!(i.mode_kind('m'), ModeKind::NoArg);
        assert_eq!(i.mode_kind('Z'), ModeKind::Unknown);
    }

    #[test]
    fn prefix_wins_over_chanmodes() {
        let i = with(&["CHANMODES=o,,,"]);
        assert_eq!(i.mode_kind('o'), ModeKind::Prefix);
    }

    #[test]
    fn takes_arg_table() {
        for adding in [true, false] {
            assert!(ModeKind::Prefix.takes_arg(adding));
            assert!(ModeKind::List.takes_arg(adding));
            assert!(ModeKind::AlwaysArg.takes_arg(adding));
            assert!(!ModeKind::NoArg.takes_arg(adding));
            assert!(!ModeKind::Unknown.takes_arg(adding));
        }
        assert!(ModeKind::SetArg.takes_arg(true));
        assert!(!ModeKind::SetArg.takes_arg(false));
    }

    #[test]
    fn names_entry_plain_nick() {
        let e = Isupport::default().split_names_entry("alice");
        assert_eq!(
            e,
            NamesEntry {
                modes: vec![],
                nick: "alice",
                user: None,
                host: None
            }
        );
    }

    #[test]
    fn names_entry_multi_prefix_sorted_by_rank() {
        let i = with(&["PREFIX=(qaohv)~&@%+"]);
        let e = i.split_names_entry("+@~bob");
        assert_eq!(e.modes, vec!['q', 'o', 'v']);
        assert_eq!(e.nick, "bob");
    }

    #[test]
    fn names_entry_duplicate_prefixes_collapse() {
        let e = Isupport::default().split_names_entry("@@+carol");
        assert_eq!(e.modes, vec!['o', 'v']);
        assert_eq!(e.nick, "carol");
    }

    #[test]
    fn names_entry_with_userhost() {
        let e = Isupport::default().split_names_entry("@+dave!~d@host.example");
        assert_eq!(e.modes, vec!['o', 'v']);
        assert_eq!(e.nick, "dave");
        assert_eq!(e.user, Some("~d"));
        assert_eq!(e.host, Some("host.example"));
    }

    #[test]
    fn names_entry_partial_userhost() {
        let i = Isupport::default();
        let e = i.split_names_entry("eve@h");
        assert_eq!((e.nick, e.user, e.host), ("eve", None, Some("h")));
        let e = i.split_names_entry("eve!u");
        assert_eq!((e.nick, e.user, e.host), ("eve", Some("u"), None));
    }

    #[test]
    fn names_entry_unknown_symbol_is_part_of_nick() {
        let e = Isupport::default().split_names_entry("%frank");
        assert!(e.modes.is_empty());
        assert_eq!(e.nick, "%frank");
    }

    #[test]
    fn names_entry_only_prefixes() {
        let e = Isupport::default().split_names_entry("@");
        assert_eq!(e.modes, vec!['o']);
        assert_eq!(e.nick, "");
    }

    #[test]
    fn mode_changes_pair_arguments() {
        let i = Isupport::default();
        let got = i.parse_mode_changes("+ov-k", &["alice", "bob", "key"]);
        assert_eq!(
            got,
            vec![
                change(true, 'o', Some("alice")),
                change(true, 'v', Some("bob")),
                change(false, 'k', Some("key")),
            ]
        );
    }

    #[test]
    fn mode_changes_set_arg_only_when_adding() {
        let i = Isupport::default();
        let got = i.parse_mode_changes("+l-l+m", &["10", "extra"]);
        assert_eq!(
            got,
            vec![
                change(true, 'l', Some("10")),
                change(false, 'l', None),
                change(true, 'm', None),
            ]
        );
    }

    #[test]
    fn mode_changes_list_query_without_arg() {
        let got = Isupport::default().parse_mode_changes("+b", &[]);
        assert_eq!(got, vec![change(true, 'b', None)]);
    }

    #[test]
    fn mode_changes_unknown_letter_takes_no_arg() {
        let got = Isupport::default().parse_mode_changes("+Zo", &["alice"]);
        assert_eq!(
            got,
            vec![change(true, 'Z', None), change(true, 'o', Some("alice"))]
        );
    }

    #[test]
    fn mode_changes_without_leading_sign_add() {
        let got = Isupport::default().parse_mode_changes("nt", &[]);
        assert_eq!(got, vec![change(true, 'n', None), change(true, 't', None)]);
    }

    #[test]
    fn mode_changes_use_advertised_groups() {
        let i = with(&["CHANMODES=eIbq,k,flj,CFLMPQScgimnprstuz", "PREFIX=(ohv)@%+"]);
        let got = i.parse_mode_changes("-q+jh-f", &["*!*@spam", "3:5", "ann", "x"]);
        assert_eq!(
            got,
            vec![
                change(false, 'q', Some("*!*@spam")),
                change(true, 'j', Some("3:5")),
                change(true, 'h', Some("ann")),
                change(false, 'f', None),
            ]
        );
    }

    #[test]
    fn mode_changes_empty() {
        assert!(Isupport::default()
            .parse_mode_changes("", &["x"])
            .is_empty());
        assert!(Isupport::default().parse_mode_changes("+-", &[]).is_empty());
    }

    #[test]
    fn serde_round_trip() {
        let i = with(&["NETWORK=N", "PREFIX=(qov)~@+", "WHOX", "X=y"]);
        let json = serde_json::to_string(&i).unwrap();
        let back: Isupport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, i);
    }
}
