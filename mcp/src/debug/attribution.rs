//! What of the debug capture a scoped grant may see (issue 33): which
//! conversations a raw IRC line or a log line belongs to, and whether every
//! one of them is in the request's [`Reach`].
//!
//! No I/O: a [`RawScreen`] is built once per read from the reach and the
//! session's view (inside the session actor, beside the secret scan), then
//! asked about each line; [`log_lines_visible`] answers for the log ring.
//!
//! # Raw lines
//! The full token's reach, or a grant that covers the session whole
//! ([`Scope::covers_whole_session`]), sees every line of the session. For
//! any other grant a line is visible only when it can be attributed to at
//! least one target and every target it names is in reach:
//! - channels by name: PRIVMSG, NOTICE, TAGMSG, JOIN, PART, KICK, TOPIC,
//!   NAMES, MODE, WHO and INVITE, CHATHISTORY, and the numerics that carry
//!   a channel (topic, names, modes, lists, invites, WHO and WHOX replies,
//!   the join and send refusals: see [`numeric_channels`] and
//!   [`whox_channel`]); a comma list must be in reach
//!   whole, and a STATUSMSG prefix (`@#chan`) is read past;
//! - queries: a PRIVMSG, NOTICE or TAGMSG between us and a nick belongs to
//!   the query named by the other nick — the target of a line we sent (or
//!   of our own echo), the sender of one sent to our nick. A message to our
//!   nick from a server, or to any other non-channel target (`*`, `$mask`,
//!   a nick we no longer hold), cannot be attributed.
//!
//! Everything else cannot be attributed and is withheld: PING, NICK, QUIT,
//! CAP, AUTHENTICATE, a WHO of a nick or mask, WHOIS replies, MOTD, user
//! modes, BATCH. Our
//! nick is the one the session holds when the read is made: a line from
//! before a nick change that named the old nick is withheld, never shown to
//! the wrong grant. A line stored cut is attributed from what was kept, its
//! last (possibly cut) word ignored.
//!
//! # Log lines
//! A log line carries a level, a category and text, never a session or a
//! target, so it cannot be attributed. Only a grant that covers every
//! network whole — no network list (so networks added later too), no
//! channel list, and queries — may read them: it may see every
//! conversation of every session, present or future, so no log line names
//! a target beyond its reach. Any narrower grant has every log line
//! withheld (counted, never shown), whatever its networks.

use crate::debug::raw::ring::RawLine;
use crate::grant::{BufferRef, Scope};
use crate::read::reach::Reach;
use rete_actors::Direction;
use rete_engine::buffer::BufferKind;
use rete_engine::casemap::CaseMapping;
use rete_engine::line::Line;
use rete_engine::view::SessionView;

/// What the attribution needs of a session: its config name (the scope's
/// network), how its server folds case, its channel and STATUSMSG prefixes,
/// and our nick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SessionFacts {
    pub(crate) name: String,
    pub(crate) casemap: CaseMapping,
    pub(crate) chantypes: String,
    pub(crate) statusmsg: String,
    pub(crate) nick: String,
}

impl SessionFacts {
    /// The facts of the session behind `view`, as they are now.
    pub(crate) fn of(view: &SessionView<'_>) -> SessionFacts {
        let isupport = view.isupport();
        SessionFacts {
            name: view.name().to_owned(),
            casemap: isupport.casemapping,
            chantypes: isupport.chantypes.clone(),
            statusmsg: isupport.statusmsg.clone(),
            nick: view.nick().to_owned(),
        }
    }

    /// A session for tests: `name`, rfc1459, `#&` channels, `@+` STATUSMSG
    /// and our nick `nick`.
    #[cfg(test)]
    pub(crate) fn sample(name: &str, nick: &str) -> SessionFacts {
        SessionFacts {
            name: name.into(),
            casemap: CaseMapping::Rfc1459,
            chantypes: "#&".into(),
            statusmsg: "@+".into(),
            nick: nick.into(),
        }
    }

    /// The channel a message target names, read past a STATUSMSG prefix
    /// (`@#chan` is `#chan`); None when it names no channel.
    pub(crate) fn channel<'a>(&self, target: &'a str) -> Option<&'a str> {
        let name = target.trim_start_matches(|c| self.statusmsg.contains(c));
        self.is_channel(name).then_some(name)
    }

    /// True when `name` begins with one of the session's channel prefixes.
    pub(crate) fn is_channel(&self, name: &str) -> bool {
        name.chars()
            .next()
            .is_some_and(|c| self.chantypes.contains(c))
    }

    /// True when `scope` covers this session's buffer of `kind` named
    /// `name`.
    pub(crate) fn covers(&self, scope: &Scope, kind: BufferKind, name: &str) -> bool {
        scope.covers(BufferRef {
            network: &self.name,
            kind,
            name,
            casemap: self.casemap,
        })
    }
}

/// Decides, for one read of one session's raw lines, which a request may
/// see. Cheap to ask per line.
#[derive(Clone, Debug)]
pub(crate) struct RawScreen {
    /// None: every line is visible (the full token, or a grant covering the
    /// session whole).
    narrow: Option<(Reach, SessionFacts)>,
}

impl RawScreen {
    /// Every line visible.
    pub(crate) fn everything() -> RawScreen {
        RawScreen { narrow: None }
    }

    /// The screen for `reach` over the session behind `view` (build it
    /// inside the session actor, once per read).
    pub(crate) fn new(reach: &Reach, view: &SessionView<'_>) -> RawScreen {
        RawScreen::for_session(reach, SessionFacts::of(view))
    }

    /// The screen for `reach` over the session `facts` describe.
    pub(crate) fn for_session(reach: &Reach, facts: SessionFacts) -> RawScreen {
        match reach.scope() {
            Some(scope) if !scope.covers_whole_session(&facts.name) => RawScreen {
                narrow: Some((reach.clone(), facts)),
            },
            _ => RawScreen::everything(),
        }
    }

    /// True when `line` (as the tap stored it) may be seen.
    pub(crate) fn raw(&self, line: &RawLine) -> bool {
        self.visible(line.dir, &line.text, line.kept_part())
    }

    /// True when a raw line may be seen: `text` as stored, `kept` the part
    /// of a cut line that was kept (None for a line stored whole).
    pub(crate) fn visible(&self, dir: Direction, text: &str, kept: Option<&str>) -> bool {
        match &self.narrow {
            None => true,
            Some((reach, facts)) => {
                raw_line_visible(reach, facts, dir, kept.unwrap_or(text), kept.is_some())
            }
        }
    }
}

/// True when a raw line of the session `facts` describe may be seen by
/// `reach`; `cut` says `line` is only the start of the original (its last
/// word may be cut short, so it is never read as a target).
pub(crate) fn raw_line_visible(
    reach: &Reach,
    facts: &SessionFacts,
    dir: Direction,
    line: &str,
    cut: bool,
) -> bool {
    let Some(scope) = reach.scope() else {
        return true;
    };
    if scope.covers_whole_session(&facts.name) {
        return true;
    }
    // A cut line's last word may be cut short: it is never read.
    let kept = if cut {
        line.rsplit_once(' ').map_or("", |(head, _)| head)
    } else {
        line
    };
    let Ok(parsed) = Line::parse(kept) else {
        return false;
    };
    let mut targets = Vec::new();
    if !targets_of(&parsed, facts, dir, &mut targets) || targets.is_empty() {
        return false;
    }
    targets
        .iter()
        .all(|(kind, name)| facts.covers(scope, *kind, name))
}

/// True when `reach` may read Rete's log lines, which name no session or
/// target (see the module docs): the full token, or a grant covering every
/// network whole.
pub(crate) fn log_lines_visible(reach: &Reach) -> bool {
    reach.scope().is_none_or(covers_everything)
}

/// True when `scope` covers every conversation of every network.
fn covers_everything(scope: &Scope) -> bool {
    scope.networks.is_empty() && scope.buffers.is_empty() && scope.queries
}

/// The targets a line names, pushed onto `out`; false when it names
/// something that cannot be attributed (a user mode, a server notice, a
/// command this module does not know).
fn targets_of<'a>(
    line: &Line<'a>,
    facts: &SessionFacts,
    dir: Direction,
    out: &mut Vec<(BufferKind, &'a str)>,
) -> bool {
    let command = line.command();
    if command.eq_ignore_ascii_case("PRIVMSG")
        || command.eq_ignore_ascii_case("NOTICE")
        || command.eq_ignore_ascii_case("TAGMSG")
    {
        let Some(list) = line.param(0) else {
            return false;
        };
        return list
            .split(',')
            .all(|target| message_target(line, facts, dir, target, out));
    }
    let channels_at: &[usize] = match command.to_ascii_uppercase().as_str() {
        "JOIN" | "PART" | "KICK" | "TOPIC" | "NAMES" | "MODE" | "WHO" => &[0],
        "INVITE" | "CHATHISTORY" => &[1],
        "354" => whox_channel(line, facts),
        numeric => numeric_channels(numeric),
    };
    if channels_at.is_empty() {
        return false;
    }
    channels_at.iter().all(|&i| {
        line.param(i).is_some_and(|list| {
            list.split(',')
                .all(|name| facts.is_channel(name) && push(out, BufferKind::Channel, name))
        })
    })
}

/// Where a numeric carries channels (after our nick, its first
/// parameter); empty for every numeric that carries none.
fn numeric_channels(numeric: &str) -> &'static [usize] {
    match numeric {
        // 324 modes, 328 URL, 329 created, 331/332 topic, 333 topic setter,
        // 366 end of names, 367/368 bans, 346/347 invites, 348/349
        // exceptions, 403 no such channel, 404 cannot send, 405 too many
        // channels, 442 not on it, 471/473/474/475/476/477 join refusals,
        // 482 not an operator, 728/729 quiets (the mode letter follows).
        "324" | "328" | "329" | "331" | "332" | "333" | "366" | "367" | "368" | "346" | "347"
        | "348" | "349" | "403" | "404" | "405" | "442" | "471" | "473" | "474" | "475" | "476"
        | "477" | "482" | "728" | "729" => &[1],
        // 352 WHO reply: `352 me #chan user host server nick …` (a `*`
        // there, for a WHO of a nick sharing no channel, is no channel);
        // 315 end of WHO: `315 me #chan :…`.
        "352" | "315" => &[1],
        // 353 names: `353 me = #chan :…`; 341 inviting, 441 not in
        // channel, 443 already on it: `me nick #chan`.
        "353" | "341" | "441" | "443" => &[2],
        // 470 forwarded: `470 me #from #to`, both.
        "470" => &[1, 2],
        _ => &[],
    }
}

/// Where a WHOX reply (354) carries its channel. Its fields come in a
/// fixed order whatever was asked: the token (`t`, digits) if asked, then
/// the channel (`c`) if asked. So the channel is the first field, or the
/// second after a token; a reply with neither names no channel.
fn whox_channel(line: &Line<'_>, facts: &SessionFacts) -> &'static [usize] {
    let is_token = |p: &str| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit());
    match (line.param(1), line.param(2)) {
        (Some(first), _) if facts.is_channel(first) => &[1],
        (Some(token), Some(second)) if is_token(token) && facts.is_channel(second) => &[2],
        _ => &[],
    }
}

/// One target of a PRIVMSG, NOTICE or TAGMSG: a channel (past any
/// STATUSMSG prefix), or the query with the other nick.
fn message_target<'a>(
    line: &Line<'a>,
    facts: &SessionFacts,
    dir: Direction,
    target: &'a str,
    out: &mut Vec<(BufferKind, &'a str)>,
) -> bool {
    if let Some(channel) = facts.channel(target) {
        return push(out, BufferKind::Channel, channel);
    }
    if !is_nick(target) {
        return false;
    }
    let ours = |nick: &str| {
        !facts.nick.is_empty() && facts.casemap.fold(nick) == facts.casemap.fold(&facts.nick)
    };
    // Only a `nick!user@host` source is a person's.
    let sender = line
        .source()
        .and_then(|s| s.split_once('!'))
        .map(|(nick, _)| nick);
    let other = match (dir, sender) {
        // We sent it: the query is the target's.
        (Direction::Out, _) => target,
        // Our own line echoed back: the target's too.
        (Direction::In, Some(nick)) if ours(nick) => target,
        // Someone's line to our nick: the sender's.
        (Direction::In, Some(nick)) if ours(target) && is_nick(nick) => nick,
        _ => return false,
    };
    push(out, BufferKind::Query, other)
}

fn push<'a>(out: &mut Vec<(BufferKind, &'a str)>, kind: BufferKind, name: &'a str) -> bool {
    out.push((kind, name));
    true
}

/// True when `name` could be a nick: not empty, and none of the characters
/// that mark a mask, a server or a user@host (`*?.!@$`).
pub(crate) fn is_nick(name: &str) -> bool {
    !name.is_empty() && !name.contains(['*', '?', '.', '!', '@', '$', ':', ','])
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{In, Out};

    fn facts() -> SessionFacts {
        SessionFacts::sample("libera", "me")
    }

    fn grant(networks: &[&str], buffers: &[&str], queries: bool) -> Reach {
        Reach::within(Scope {
            networks: networks.iter().map(|s| s.to_string()).collect(),
            buffers: buffers.iter().map(|s| s.to_string()).collect(),
            queries,
        })
    }

    /// `#rust*` and queries, on libera.
    fn rust() -> Reach {
        grant(&["libera"], &["#rust*"], true)
    }

    fn sees(reach: &Reach, dir: Direction, line: &str) -> bool {
        raw_line_visible(reach, &facts(), dir, line, false)
    }

    #[test]
    fn everything_and_a_whole_session_grant_see_every_line() {
        for reach in [Reach::everything(), grant(&["libera"], &[], true)] {
            for line in ["PING :x", ":srv 372 me :motd", "", "QUIT :bye"] {
                assert!(sees(&reach, In, line), "{line:?}");
            }
            let screen = RawScreen::for_session(&reach, facts());
            assert!(screen.visible(In, "PING :x", None));
        }
        // Whole on another network is not whole here.
        let other = grant(&["oftc"], &[], true);
        assert!(!sees(&other, In, "PING :x"));
        assert!(!RawScreen::for_session(&other, facts()).visible(In, "PING :x", None));
    }

    #[test]
    fn channel_lines_are_seen_only_when_the_channel_is_in_reach() {
        let r = rust();
        for line in [
            ":a!u@h PRIVMSG #rust :hi",
            "@time=x :a!u@h NOTICE #RUST-beginners :hi",
            "@+typing=active :a!u@h TAGMSG #rust",
            "PRIVMSG #rust :ours",
            ":a!u@h JOIN #rust * :Real",
            "JOIN #rust,#rust-fr key",
            ":a!u@h PART #rust :bye",
            ":op!u@h KICK #rust a :out",
            ":op!u@h MODE #rust +o a",
            ":a!u@h TOPIC #rust :new",
            ":a!u@h INVITE me #rust",
            "PRIVMSG @#rust :to ops",
            ":srv 332 me #rust :topic",
            ":srv 333 me #rust a 1",
            ":srv 353 me = #rust :@a b",
            ":srv 366 me #rust :End",
            ":srv 324 me #rust +nt",
            ":srv 367 me #rust *!*@x a 1",
            ":srv 341 me a #rust",
            ":srv 482 me #rust :not op",
            ":srv 473 me #rust :invite only",
            "CHATHISTORY LATEST #rust * 50",
            "WHO #rust %tcuhnfar,417",
            ":srv 352 me #rust u h srv a H :0 A",
            ":srv 315 me #rust :End of /WHO list.",
            ":srv 354 me 417 #rust u h a H 0 :A",
            ":srv 354 me #rust a",
        ] {
            assert!(sees(&r, In, line), "{line:?}");
            let elsewhere = line.replace("#rust", "#python").replace("#RUST", "#python");
            assert!(!sees(&r, In, &elsewhere), "{elsewhere:?}");
        }
    }

    #[test]
    fn a_list_of_targets_must_be_in_reach_whole() {
        let r = rust();
        assert!(sees(&r, Out, "JOIN #rust,#rust-fr"));
        assert!(!sees(&r, Out, "JOIN #rust,#python"));
        assert!(!sees(&r, Out, "PRIVMSG #rust,#python :x"));
        assert!(sees(&r, Out, "PRIVMSG #rust,bob :x"));
        let no_queries = grant(&["libera"], &["#rust*"], false);
        assert!(!sees(&no_queries, Out, "PRIVMSG #rust,bob :x"));
        assert!(!sees(&r, In, ":srv 470 me #rust #python :forwarded"));
        assert!(sees(&r, In, ":srv 470 me #rust #rust-2 :forwarded"));
    }

    #[test]
    fn queries_belong_to_the_other_nick_and_need_queries_on() {
        let with = rust();
        let without = grant(&["libera"], &["#rust*"], false);
        for (dir, line) in [
            (In, ":bob!u@h PRIVMSG me :hi"),
            (In, ":bob!u@h NOTICE ME :hi"),
            (Out, "PRIVMSG bob :hi"),
            (Out, "@+typing=active TAGMSG bob"),
            (In, ":me!u@h PRIVMSG bob :echo"),
        ] {
            assert!(sees(&with, dir, line), "{line:?}");
            assert!(!sees(&without, dir, line), "{line:?}");
        }
        // Not a conversation with a nick: a server notice, a mask, someone
        // else's nick (ours before a change), a bare source.
        for line in [
            ":irc.example NOTICE me :*** Looking up your hostname",
            ":irc.example NOTICE * :*** hi",
            ":bob!u@h PRIVMSG $*.example :broadcast",
            ":bob!u@h PRIVMSG oldme :hi",
            ":bob PRIVMSG me :no user@host",
            "PRIVMSG me :no source",
        ] {
            assert!(!sees(&with, In, line), "{line:?}");
        }
        assert!(!sees(&with, Out, "PRIVMSG $* :mask"));
    }

    #[test]
    fn lines_that_name_no_target_are_withheld() {
        let r = rust();
        for line in [
            "PING :x",
            "PONG :x",
            ":bob!u@h NICK bobby",
            ":bob!u@h QUIT :bye",
            "CAP LS 302",
            "AUTHENTICATE +",
            ":srv 311 me bob u h * :Bob",
            ":srv 319 me bob :#rust",
            ":srv 372 me :- motd",
            "WHO bob",
            "WHO *.example",
            ":srv 352 me * u h srv bob H :0 Bob",
            ":srv 315 me bob :End of /WHO list.",
            ":srv 354 me 417 u h bob",
            ":srv 354 me 4170 #rust a",
            ":srv 354 me bob :#rust",
            ":me MODE me +i",
            "JOIN 0",
            ":srv 472 me x :unknown mode",
            "BATCH +a chathistory #rust",
            "PRIVMSG",
            "",
            "@tags-only",
        ] {
            assert!(!sees(&r, In, line), "{line:?}");
        }
    }

    #[test]
    fn a_cut_line_is_attributed_from_what_was_kept_never_its_last_word() {
        let r = grant(&["libera"], &["*N"], false);
        // "#se…[+N bytes]" would match `*N`: the cut word is not read.
        let screen = RawScreen::for_session(&r, facts());
        assert!(!screen.visible(In, "PRIVMSG #se…[+40 bytes]", Some("PRIVMSG #se")));
        assert!(screen.visible(In, "PRIVMSG #aN :x…[+40 bytes]", Some("PRIVMSG #aN :x")));
        // A whole word before the cut is read.
        assert!(screen.visible(In, "PRIVMSG #aN x…[+40 bytes]", Some("PRIVMSG #aN x")));
        assert!(!screen.visible(In, "PRIV…[+40 bytes]", Some("PRIV")));
    }

    #[test]
    fn casemapping_and_chantypes_are_the_sessions() {
        let r = grant(&["libera"], &["#a[b]"], false);
        assert!(sees(&r, In, ":x!u@h PRIVMSG #A{B} :hi"));
        let mut f = facts();
        f.chantypes = "#".into();
        assert!(!raw_line_visible(
            &grant(&[], &["&*"], true),
            &f,
            Out,
            "JOIN &local",
            false
        ));
        assert!(raw_line_visible(
            &grant(&[], &["&*"], true),
            &facts(),
            Out,
            "JOIN &local",
            false
        ));
    }

    #[test]
    fn only_a_grant_covering_everything_reads_the_log() {
        assert!(log_lines_visible(&Reach::everything()));
        assert!(log_lines_visible(&grant(&[], &[], true)));
        assert!(!log_lines_visible(&grant(&["libera"], &[], true)));
        assert!(!log_lines_visible(&grant(&[], &["#rust"], true)));
        assert!(!log_lines_visible(&grant(&[], &[], false)));
    }
}
