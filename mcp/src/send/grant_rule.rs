//! What a scoped grant may send (issue 33): only PRIVMSG, NOTICE and TAGMSG
//! (message tags allowed as for the full token), and only to targets in
//! its reach. Checked after the line rule, with the session's facts read
//! inside its actor; the full token is never asked.
//!
//! A target is read as the session reads it: a channel by its prefix
//! (CHANTYPES, past a STATUSMSG prefix such as `@#chan`), matched against
//! the grant's channel globs; anything else is a nick, whose query the
//! grant covers only with queries on; a comma list must be in reach whole.
//! A target that is neither (a server mask, `*`) is out of reach. One
//! answer, [`TARGET_OUT_OF_REACH`], serves every target not in reach,
//! whether or not it exists, so a refusal cannot tell a grant what does.

use crate::debug::attribution::{is_nick, SessionFacts};
use crate::read::reach::Reach;
use rete_engine::buffer::BufferKind;

/// The answer to a grant's line whose command is not PRIVMSG, NOTICE or
/// TAGMSG.
pub const COMMAND_NOT_ALLOWED: &str =
    "not allowed for this grant: only PRIVMSG, NOTICE and TAGMSG may be sent";

/// The answer to a grant's line with no target, or a target out of the
/// grant's reach.
pub const TARGET_OUT_OF_REACH: &str = "not allowed for this grant: target out of reach";

/// Why a grant's line was refused. `Display` is the error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GrantRefused {
    /// Not PRIVMSG, NOTICE or TAGMSG.
    #[error("{}", COMMAND_NOT_ALLOWED)]
    Command,
    /// No target, or one the grant does not reach.
    #[error("{}", TARGET_OUT_OF_REACH)]
    Target,
}

/// Checks a line (one the line rule let through) that `reach` would send on
/// the session `facts` describe. The full token's reach lets every line
/// through.
pub(crate) fn check(reach: &Reach, facts: &SessionFacts, line: &str) -> Result<(), GrantRefused> {
    let Some(scope) = reach.scope() else {
        return Ok(());
    };
    let mut words = message(line).split(' ').filter(|w| !w.is_empty());
    let command = words.next().unwrap_or("");
    if !["PRIVMSG", "NOTICE", "TAGMSG"]
        .iter()
        .any(|c| c.eq_ignore_ascii_case(command))
    {
        return Err(GrantRefused::Command);
    }
    let targets = match words.next() {
        Some(t) if !t.starts_with(':') => t,
        _ => return Err(GrantRefused::Target),
    };
    let in_reach = |target: &str| match facts.channel(target) {
        Some(channel) => facts.covers(scope, BufferKind::Channel, channel),
        None => is_nick(target) && facts.covers(scope, BufferKind::Query, target),
    };
    if targets.split(',').all(in_reach) {
        Ok(())
    } else {
        Err(GrantRefused::Target)
    }
}

/// The line after its `@tags` word and a `:source` word, if any.
fn message(line: &str) -> &str {
    let mut rest = line.trim_start_matches(' ');
    for mark in ['@', ':'] {
        if rest.starts_with(mark) {
            rest = rest
                .split_once(' ')
                .map_or("", |(_, r)| r)
                .trim_start_matches(' ');
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::Scope;

    fn facts() -> SessionFacts {
        SessionFacts::sample("libera", "me")
    }

    fn grant(buffers: &[&str], queries: bool) -> Reach {
        Reach::within(Scope {
            networks: vec!["libera".into()],
            buffers: buffers.iter().map(|s| s.to_string()).collect(),
            queries,
        })
    }

    fn verdict(reach: &Reach, line: &str) -> Result<(), GrantRefused> {
        check(reach, &facts(), line)
    }

    #[test]
    fn messages_to_channels_in_reach_pass() {
        let r = grant(&["#rust*"], false);
        for line in [
            "PRIVMSG #rust :hi",
            "privmsg #RUST-fr :hi",
            "NOTICE #rust :hi",
            "@+typing=active TAGMSG #rust",
            "@label=1 PRIVMSG #rust,#rust-fr :both",
            "PRIVMSG @#rust :to ops",
            ":me PRIVMSG #rust :with a source",
            "PRIVMSG   #rust   :spaced",
        ] {
            assert_eq!(verdict(&r, line), Ok(()), "{line:?}");
        }
    }

    #[test]
    fn any_other_command_is_refused_whatever_its_target() {
        // A grant that covers the session whole may still send only these.
        let whole = grant(&[], true);
        for line in [
            "JOIN #rust",
            "PART #rust",
            "QUIT :bye",
            "KICK #rust bob",
            "MODE #rust +o bob",
            "TOPIC #rust :new",
            "NICK other",
            "PING x",
            "WHOIS bob",
            "PRIVMSGX #rust :x",
            "@a=b JOIN #rust",
            ":src",
        ] {
            assert_eq!(
                verdict(&whole, line),
                Err(GrantRefused::Command),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_target_out_of_reach_is_refused_with_one_answer() {
        let r = grant(&["#rust"], false);
        for line in [
            "PRIVMSG #python :x",
            "PRIVMSG #rust,#python :x",
            "PRIVMSG bob :x",
            "PRIVMSG NickServ :IDENTIFY pw",
            "PRIVMSG #rust,bob :x",
            "PRIVMSG $*.example :mask",
            "PRIVMSG * :x",
            "PRIVMSG :x",
            "PRIVMSG",
            "TAGMSG",
            "PRIVMSG #rust, :x",
        ] {
            assert_eq!(verdict(&r, line), Err(GrantRefused::Target), "{line:?}");
        }
        assert_eq!(GrantRefused::Target.to_string(), TARGET_OUT_OF_REACH);
        assert_eq!(GrantRefused::Command.to_string(), COMMAND_NOT_ALLOWED);
    }

    #[test]
    fn queries_need_queries_on() {
        let with = grant(&["#rust"], true);
        assert_eq!(verdict(&with, "PRIVMSG bob :hi"), Ok(()));
        assert_eq!(verdict(&with, "NOTICE bob,#rust :hi"), Ok(()));
        assert_eq!(verdict(&with, "PRIVMSG $* :hi"), Err(GrantRefused::Target));
        let other_network = Reach::within(Scope {
            networks: vec!["oftc".into()],
            buffers: vec![],
            queries: true,
        });
        assert_eq!(
            verdict(&other_network, "PRIVMSG bob :hi"),
            Err(GrantRefused::Target)
        );
    }

    #[test]
    fn the_full_token_is_never_asked() {
        assert_eq!(verdict(&Reach::everything(), "QUIT :bye"), Ok(()));
    }
}
