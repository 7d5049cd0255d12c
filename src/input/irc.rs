//! The everyday IRC commands (`/whois`, `/topic`, `/kick`, `/op`, …):
//! parsed into [`IrcCommand`], which the client turns into one protocol line
//! for the current channel where one is needed.

use super::commands::spec as cmd;
use super::{split_word, usage, InputError};

/// A channel-operator or information command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IrcCommand {
    /// `/whois nick`
    Whois(String),
    /// `/topic [text]`: show the current channel's topic, or set it.
    Topic(Option<String>),
    /// `/kick nick [reason]` in the current channel.
    Kick {
        /// Who.
        nick: String,
        /// Why.
        reason: Option<String>,
    },
    /// `/ban mask` in the current channel.
    Ban(String),
    /// `/unban mask` in the current channel.
    Unban(String),
    /// `/mode [target] changes`: a change starting with `+`/`-` applies to
    /// the current channel.
    Mode(String),
    /// `/op`, `/deop`, `/voice`, `/devoice nick…`: `+o`, `-o`, `+v`, `-v`.
    Rank {
        /// `+` or `-`.
        adding: bool,
        /// `o` or `v`.
        mode: char,
        /// The nicks.
        nicks: Vec<String>,
    },
    /// `/invite nick [#chan]` (default the current channel).
    Invite {
        /// Who.
        nick: String,
        /// Where to, when not the current channel.
        channel: Option<String>,
    },
    /// `/away [message]`: no message comes back.
    Away(Option<String>),
    /// `/names [#chan]`.
    Names(Option<String>),
    /// `/list [arguments]`.
    List(Option<String>),
    /// A server's own query or operator command, sent as typed with its
    /// verb in capitals, as irssi does: `/motd`, `/version`, `/stats u`…
    /// (the verbs of `SERVER_VERBS`).
    Server {
        /// The verb, in capitals.
        verb: String,
        /// The rest of the line, as typed.
        args: Option<String>,
    },
    /// `/ctcp nick VERB [args]`: a CTCP request (`PING` without an argument
    /// carries the time, which the reply echoes).
    Ctcp {
        /// To whom (a nick or a channel).
        target: String,
        /// The request, in capitals.
        verb: String,
        /// Its argument.
        args: Option<String>,
    },
}

/// The server commands passed to the server as typed, as irssi passes them;
/// any other unknown command is an error that sends nothing, so a typo never
/// reaches the server.
pub const SERVER_VERBS: [&str; 19] = [
    "admin", "info", "ison", "links", "lusers", "map", "motd", "rehash", "rules", "servlist",
    "silence", "stats", "time", "trace", "userhost", "users", "version", "who", "whowas",
];

/// Parses `/name args` for the commands of this module.
pub fn parse(name: &str, args: &str) -> Option<Result<IrcCommand, InputError>> {
    let text = || (!args.trim().is_empty()).then(|| args.trim_end().to_string());
    let parsed = match name {
        "whois" => one(args, &cmd::WHOIS).map(IrcCommand::Whois),
        "topic" => Ok(IrcCommand::Topic(text())),
        "kick" => {
            let (nick, reason) = split_word(args);
            if nick.is_empty() {
                Err(usage(&cmd::KICK))
            } else {
                Ok(IrcCommand::Kick {
                    nick: nick.to_string(),
                    reason: (!reason.trim().is_empty()).then(|| reason.to_string()),
                })
            }
        }
        "ban" => one(args, &cmd::BAN).map(IrcCommand::Ban),
        "unban" => one(args, &cmd::UNBAN).map(IrcCommand::Unban),
        "mode" => text()
            .map(IrcCommand::Mode)
            .ok_or_else(|| usage(&cmd::MODE)),
        "op" | "deop" | "voice" | "devoice" => {
            let spec = match name {
                "op" => &cmd::OP,
                "deop" => &cmd::DEOP,
                "voice" => &cmd::VOICE,
                _ => &cmd::DEVOICE,
            };
            let nicks: Vec<String> = args.split_whitespace().map(str::to_string).collect();
            if nicks.is_empty() {
                Err(usage(spec))
            } else {
                Ok(IrcCommand::Rank {
                    adding: !name.starts_with("de"),
                    mode: if name.ends_with("op") { 'o' } else { 'v' },
                    nicks,
                })
            }
        }
        "invite" => {
            let words: Vec<&str> = args.split_whitespace().collect();
            match words.as_slice() {
                [nick] => Ok(IrcCommand::Invite {
                    nick: nick.to_string(),
                    channel: None,
                }),
                [nick, chan] => Ok(IrcCommand::Invite {
                    nick: nick.to_string(),
                    channel: Some(chan.to_string()),
                }),
                _ => Err(usage(&cmd::INVITE)),
            }
        }
        "away" => Ok(IrcCommand::Away(text())),
        "names" => {
            let words: Vec<&str> = args.split_whitespace().collect();
            match words.as_slice() {
                [] => Ok(IrcCommand::Names(None)),
                [chan] => Ok(IrcCommand::Names(Some(chan.to_string()))),
                _ => Err(usage(&cmd::NAMES)),
            }
        }
        "list" => Ok(IrcCommand::List(text())),
        _ if SERVER_VERBS.contains(&name) => Ok(IrcCommand::Server {
            verb: name.to_uppercase(),
            args: text(),
        }),
        "ctcp" => {
            let (target, rest) = split_word(args);
            let (verb, rest) = split_word(rest);
            if verb.is_empty() {
                Err(usage(&cmd::CTCP))
            } else {
                Ok(IrcCommand::Ctcp {
                    target: target.to_string(),
                    verb: verb.to_uppercase(),
                    args: (!rest.trim().is_empty()).then(|| rest.trim_end().to_string()),
                })
            }
        }
        _ => return None,
    };
    Some(parsed)
}

fn one(args: &str, spec: &super::CommandSpec) -> Result<String, InputError> {
    let (word, rest) = split_word(args);
    if word.is_empty() || !rest.is_empty() {
        return Err(usage(spec));
    }
    Ok(word.to_string())
}

impl IrcCommand {
    /// The protocol line, with `channel` the current channel (`None` when
    /// the current buffer is not one). Errors name what is missing.
    pub fn line(&self, channel: Option<&str>) -> Result<String, &'static str> {
        let here = || channel.ok_or("this command needs a channel buffer (or name the channel)");
        Ok(match self {
            IrcCommand::Whois(nick) => format!("WHOIS {nick}"),
            IrcCommand::Topic(None) => format!("TOPIC {}", here()?),
            IrcCommand::Topic(Some(text)) => format!("TOPIC {} :{text}", here()?),
            IrcCommand::Kick { nick, reason } => match reason {
                Some(r) => format!("KICK {} {nick} :{r}", here()?),
                None => format!("KICK {} {nick}", here()?),
            },
            IrcCommand::Ban(mask) => format!("MODE {} +b {mask}", here()?),
            IrcCommand::Unban(mask) => format!("MODE {} -b {mask}", here()?),
            IrcCommand::Mode(args) if args.starts_with(['+', '-']) => {
                format!("MODE {} {args}", here()?)
            }
            IrcCommand::Mode(args) => format!("MODE {args}"),
            IrcCommand::Rank {
                adding,
                mode,
                nicks,
            } => {
                let sign = if *adding { '+' } else { '-' };
                let modes: String = std::iter::repeat_n(*mode, nicks.len()).collect();
                format!("MODE {} {sign}{modes} {}", here()?, nicks.join(" "))
            }
            IrcCommand::Invite {
                nick,
                channel: Some(c),
            } => format!("INVITE {nick} {c}"),
            IrcCommand::Invite {
                nick,
                channel: None,
            } => format!("INVITE {nick} {}", here()?),
            IrcCommand::Away(Some(text)) => format!("AWAY :{text}"),
            IrcCommand::Away(None) => "AWAY".to_string(),
            IrcCommand::Names(Some(c)) => format!("NAMES {c}"),
            IrcCommand::Names(None) => format!("NAMES {}", here()?),
            IrcCommand::List(Some(args)) => format!("LIST {args}"),
            IrcCommand::List(None) => "LIST".to_string(),
            IrcCommand::Server {
                verb,
                args: Some(args),
            } => format!("{verb} {args}"),
            IrcCommand::Server { verb, args: None } => verb.clone(),
            IrcCommand::Ctcp { target, verb, args } => {
                let args = match (args, verb.as_str()) {
                    (Some(args), _) => Some(args.clone()),
                    (None, "PING") => {
                        Some((rete_actors::wall_clock::now().unsigned() / 1_000).to_string())
                    }
                    (None, _) => None,
                };
                match args {
                    Some(args) => format!("PRIVMSG {target} :\u{1}{verb} {args}\u{1}"),
                    None => format!("PRIVMSG {target} :\u{1}{verb}\u{1}"),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(input: &str, chan: Option<&str>) -> Result<String, String> {
        let (name, args) = split_word(input);
        match parse(name, args).expect("known") {
            Ok(c) => c.line(chan).map_err(str::to_string),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn commands_become_lines_for_the_current_channel() {
        let c = Some("#rete");
        assert_eq!(line("whois bob", c).unwrap(), "WHOIS bob");
        assert_eq!(line("topic", c).unwrap(), "TOPIC #rete");
        assert_eq!(
            line("topic new  topic", c).unwrap(),
            "TOPIC #rete :new  topic"
        );
        assert_eq!(
            line("kick bob go away", c).unwrap(),
            "KICK #rete bob :go away"
        );
        assert_eq!(line("ban *!*@h", c).unwrap(), "MODE #rete +b *!*@h");
        assert_eq!(line("unban *!*@h", c).unwrap(), "MODE #rete -b *!*@h");
        assert_eq!(line("mode +m", c).unwrap(), "MODE #rete +m");
        assert_eq!(line("mode bob +i", c).unwrap(), "MODE bob +i");
        assert_eq!(line("op a b", c).unwrap(), "MODE #rete +oo a b");
        assert_eq!(line("devoice a", c).unwrap(), "MODE #rete -v a");
        assert_eq!(line("invite bob", c).unwrap(), "INVITE bob #rete");
        assert_eq!(line("invite bob #x", None).unwrap(), "INVITE bob #x");
        assert_eq!(line("away lunch", None).unwrap(), "AWAY :lunch");
        assert_eq!(line("away", None).unwrap(), "AWAY");
        assert_eq!(line("names", c).unwrap(), "NAMES #rete");
        assert_eq!(line("list >10", None).unwrap(), "LIST >10");
    }

    #[test]
    fn server_commands_go_to_the_server_as_typed() {
        assert_eq!(line("motd", None).unwrap(), "MOTD");
        assert_eq!(line("version", None).unwrap(), "VERSION");
        assert_eq!(line("info", None).unwrap(), "INFO");
        assert_eq!(line("stats u", None).unwrap(), "STATS u");
        assert_eq!(line("who #rete o", None).unwrap(), "WHO #rete o");
        assert_eq!(line("whowas bob", None).unwrap(), "WHOWAS bob");
        assert_eq!(
            line("version irc.example.net", None).unwrap(),
            "VERSION irc.example.net"
        );
        assert!(parse("frobnicate", "").is_none());
    }

    #[test]
    fn ctcp_sends_a_request() {
        assert_eq!(
            line("ctcp bob version", None).unwrap(),
            "PRIVMSG bob :\u{1}VERSION\u{1}"
        );
        assert_eq!(
            line("ctcp #rete CLIENTINFO x y", None).unwrap(),
            "PRIVMSG #rete :\u{1}CLIENTINFO x y\u{1}"
        );
        let ping = line("ctcp bob ping", None).unwrap();
        let stamp = ping
            .strip_prefix("PRIVMSG bob :\u{1}PING ")
            .and_then(|s| s.strip_suffix('\u{1}'))
            .unwrap();
        assert!(stamp.parse::<u64>().unwrap() > 1_700_000_000, "{ping}");
        assert_eq!(
            line("ctcp bob", None).unwrap_err(),
            "usage: /ctcp <nick> <request> [arguments]"
        );
    }

    #[test]
    fn missing_arguments_and_channels_are_errors() {
        assert_eq!(line("whois", None).unwrap_err(), "usage: /whois <nick>");
        assert_eq!(line("op", None).unwrap_err(), "usage: /op <nick>...");
        assert!(line("topic", None).unwrap_err().contains("needs a channel"));
        assert!(line("kick bob", None)
            .unwrap_err()
            .contains("needs a channel"));
    }
}
