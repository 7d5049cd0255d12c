//! The input line: plain text for the current buffer, or a `/command`.
//!
//! Parsing is pure and complete here (arguments split, numbers checked, `/set`
//! values typed), so the client only executes [`Command`]s and never re-parses
//! strings. Errors are one line and name the problem; they never echo the
//! arguments of `/oper`, `/smsg` or a `/cloud` password, which are secrets.

mod cloud;
mod commands;
mod irc;

use std::fmt;
use std::num::NonZeroUsize;

pub use cloud::{DEFAULT_BACKLOG_ROWS, MAX_BACKLOG_ROWS};
pub use commands::{command_names, help_text};
use commands::{CommandSpec, COMMANDS};
pub use irc::IrcCommand;

/// Lowest and highest port `/set control.port` accepts: unprivileged ports
/// only, so the control server never needs root.
pub const CONTROL_PORT_RANGE: std::ops::RangeInclusive<u16> = 1024..=65535;

/// What the user typed, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing but whitespace: do nothing.
    Empty,
    /// Text for the current buffer (`//foo` arrives here as `/foo`).
    Text(String),
    /// A command.
    Command(Command),
}

/// What must reach the server unmodified but never a log or a screen
/// (a password, a channel key, a service login's text): the project's one
/// secret wrapper, whose `Debug` is masked.
pub use rete_redact::Secret;

/// A parsed command; fields are already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/connect NAME`
    Connect {
        /// Network name from the config.
        network: String,
    },
    /// `/disconnect [NAME]`; `None` means the current buffer's network.
    Disconnect {
        /// Network name, if given.
        network: Option<String>,
    },
    /// `/join #chan [key]`
    Join {
        /// Channel to join.
        channel: String,
        /// Channel key, if given.
        key: Option<Secret>,
    },
    /// `/part [#chan] [reason]`; no channel means the current one.
    Part {
        /// Channel to leave, if given.
        channel: Option<String>,
        /// Part message, if given.
        reason: Option<String>,
    },
    /// `/msg target text`
    Msg {
        /// Nick or channel.
        target: String,
        /// Message text.
        text: String,
    },
    /// `/me text` (a CTCP ACTION to the current buffer)
    Me {
        /// Action text.
        text: String,
    },
    /// `/notice target text`
    Notice {
        /// Nick or channel.
        target: String,
        /// Notice text.
        text: String,
    },
    /// `/nick newnick`
    Nick {
        /// The new nick.
        nick: String,
    },
    /// `/quote raw line`: sent to the server as typed.
    Quote {
        /// The raw IRC line.
        line: String,
    },
    /// `/oper name password`
    Oper {
        /// Operator name.
        name: String,
        /// Operator password.
        password: Secret,
    },
    /// `/smsg target text`: sent unmodified, shown masked.
    Smsg {
        /// Nick or channel.
        target: String,
        /// The secret text.
        text: Secret,
    },
    /// `/cloud setting value`: change a setting the ReteCloud service keeps
    /// for the current network (a password's value is masked in `Debug`).
    Cloud(rete_cloud_protocol::config::ConfigEntry),
    /// `/backlog [N]`: fetch up to N (1 to 500, default 50) older rows of
    /// the current buffer from the ReteCloud service.
    Backlog(u32),
    /// `/buffers`: list open buffers.
    Buffers,
    /// `/buffer N|name` (or `/window`): switch buffer.
    Buffer(BufferRef),
    /// `/query nick [text]`: open a query buffer.
    Query {
        /// The nick.
        nick: String,
        /// A first message, if given.
        text: Option<String>,
    },
    /// `/close`: leave (a channel) and close the current buffer.
    Close,
    /// `/clear`: clear the current buffer from the screen.
    Clear,
    /// `/lastlog [-N] [-case] text`: the current buffer's rows containing
    /// text.
    Lastlog(Lastlog),
    /// `/reconnect [network]`.
    Reconnect {
        /// Network name, if given.
        network: Option<String>,
    },
    /// `/raw [network]`: the network's recent raw lines in and out.
    Raw {
        /// Network name, if given (else the current network).
        network: Option<String>,
    },
    /// `/ignore [mask]`: add a mask, or list them.
    Ignore(Option<String>),
    /// `/unignore mask`.
    Unignore(String),
    /// `/reload`: re-read the config.
    Reload,
    /// An everyday IRC command (`/whois`, `/topic`, `/op`, …).
    Irc(IrcCommand),
    /// `/quit [reason]`
    Quit {
        /// Quit message, if given.
        reason: Option<String>,
    },
    /// `/help [command]`; the command is lower-case, without `/`.
    Help {
        /// Command to explain, if given.
        command: Option<String>,
    },
    /// `/set key value`
    Set(Setting),
    /// `/set` alone (every setting with its value) or `/set word` (those
    /// whose name contains the word), as irssi lists them.
    SetShow(Option<String>),
    /// `/control ...`
    Control(ControlCommand),
    /// `/alias`: every alias; `/alias NAME`: that one; `/alias NAME
    /// COMMAND`: save it.
    Alias {
        /// Lower-case, without `/`.
        name: Option<String>,
        /// What it stands for, without `/`.
        expansion: Option<String>,
    },
    /// `/unalias NAME` (or `/alias -NAME`): forget it.
    Unalias(String),
    /// `/server list|add|remove` (or `/network …`).
    Server(ServerCommand),
}

/// How `/buffer` names a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferRef {
    /// Position in the buffer list, from 1.
    Number(NonZeroUsize),
    /// Buffer name (channel, nick or network).
    Name(String),
}

/// A `/set` with a value of the right type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// `time_format <strftime>`: the rows' time stamps.
    TimeFormat(String),
    /// `mirc_colours on|off`: render mIRC formatting, or strip it.
    MircColours(bool),
    /// `nicklist on|off`: the nick list pane beside channels.
    Nicklist(bool),
    /// `highlights word,word` (or `none`): words that highlight like the nick.
    Highlights(Vec<String>),
    /// `control.enabled on|off`
    ControlEnabled(bool),
    /// `control.debug on|off`
    ControlDebug(bool),
    /// `control.send on|off` (not persisted)
    ControlSend(bool),
    /// `control.approve on|off`: each line an agent sends waits for the
    /// person's answer (persisted).
    ControlApprove(bool),
    /// `control.port N`
    ControlPort {
        /// The port, clamped into [`CONTROL_PORT_RANGE`].
        port: u16,
        /// The typed number was out of range, so the user can be told.
        clamped: bool,
    },
}

/// `/server` (or `/network`) subcommands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerCommand {
    /// `/server` or `/server list`: the networks in the config.
    List,
    /// `/server add [-tls] [-auto] [-nick NICK] NAME HOST [PORT]`.
    Add {
        /// The network's name.
        name: String,
        /// Server host.
        host: String,
        /// Port (default 6697 with -tls, else 6667).
        port: u16,
        /// `-tls`.
        tls: bool,
        /// `-nick NICK`; None: the current network's nick.
        nick: Option<String>,
        /// `-auto`: connect at start-up, and now.
        autoconnect: bool,
    },
    /// `/server remove NAME`.
    Remove(String),
}

/// `/server`'s arguments.
fn server(args: &str) -> Result<ServerCommand, InputError> {
    let spec = &commands::spec::SERVER_CMD;
    let (sub, rest) = split_word(args);
    match sub.to_lowercase().as_str() {
        "" | "list" if rest.trim().is_empty() => Ok(ServerCommand::List),
        "remove" | "rm" | "del" => Ok(ServerCommand::Remove(one_word(rest, spec)?.to_owned())),
        "add" => {
            let mut words = rest.split_whitespace();
            let (mut tls, mut autoconnect, mut nick) = (false, false, None);
            let mut plain = Vec::new();
            while let Some(word) = words.next() {
                match word.to_lowercase().as_str() {
                    "-tls" | "-ssl" => tls = true,
                    "-auto" => autoconnect = true,
                    "-nick" => nick = Some(words.next().ok_or_else(|| usage(spec))?.to_owned()),
                    w if w.starts_with('-') => return Err(usage(spec)),
                    _ => plain.push(word),
                }
            }
            let (name, host, port) = match plain.as_slice() {
                [name, host] => (name, host, None),
                [name, host, port] => (name, host, Some(port)),
                _ => return Err(usage(spec)),
            };
            let port = match port {
                Some(p) => p
                    .trim_start_matches('+')
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or(InputError::Invalid("the port is a number from 1 to 65535"))?,
                None if tls => 6697,
                None => 6667,
            };
            Ok(ServerCommand::Add {
                name: (*name).to_owned(),
                host: (*host).to_owned(),
                port,
                tls,
                nick,
                autoconnect,
            })
        }
        _ => Err(usage(spec)),
    }
}

/// `/lastlog`'s search, as irssi's: options first, then the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lastlog {
    /// What the rows contain.
    pub text: String,
    /// `-N`: only the last N rows found.
    pub last: Option<usize>,
    /// `-case`: upper and lower case differ.
    pub case: bool,
    /// `-regex`: the text is a regular expression (the `regex` crate's
    /// syntax), checked when the command is read.
    pub regex: bool,
}

/// What a [`Lastlog`] looks for, ready to test rows against.
pub enum LastlogMatcher {
    /// Plain text.
    Text {
        /// What a row must hold, lower-cased unless `case`.
        text: String,
        /// `-case`: upper and lower case differ.
        case: bool,
    },
    /// A compiled `-regex`.
    Regex(regex::Regex),
}

impl LastlogMatcher {
    /// Whether `row_text` holds what is looked for.
    pub fn matches(&self, row_text: &str) -> bool {
        match self {
            LastlogMatcher::Text { text, case: true } => row_text.contains(text.as_str()),
            LastlogMatcher::Text { text, case: false } => {
                row_text.to_lowercase().contains(text.as_str())
            }
            LastlogMatcher::Regex(re) => re.is_match(row_text),
        }
    }
}

impl Lastlog {
    /// The matcher for this search, or why the `-regex` text is not one.
    pub fn matcher(&self) -> Result<LastlogMatcher, String> {
        if self.regex {
            regex::RegexBuilder::new(&self.text)
                .case_insensitive(!self.case)
                .size_limit(LASTLOG_REGEX_SIZE)
                .build()
                .map(LastlogMatcher::Regex)
                .map_err(|e| format!("lastlog: not a regular expression: {e}"))
        } else if self.case {
            Ok(LastlogMatcher::Text {
                text: self.text.clone(),
                case: true,
            })
        } else {
            Ok(LastlogMatcher::Text {
                text: self.text.to_lowercase(),
                case: false,
            })
        }
    }

    /// Whether `row_text` holds the text looked for.
    pub fn matches(&self, row_text: &str) -> bool {
        self.matcher().is_ok_and(|m| m.matches(row_text))
    }
}

/// The most memory a `/lastlog -regex` pattern may compile to.
const LASTLOG_REGEX_SIZE: usize = 1 << 20;

/// `/lastlog [-N] [-case] [--] text`.
fn lastlog(args: &str) -> Result<Lastlog, InputError> {
    let spec = &commands::spec::LASTLOG;
    let mut search = Lastlog {
        text: String::new(),
        last: None,
        case: false,
        regex: false,
    };
    let mut rest = args;
    loop {
        let (word, after) = split_word(rest);
        let Some(option) = word.strip_prefix('-').filter(|o| !o.is_empty()) else {
            break;
        };
        rest = after;
        if option == "-" {
            break;
        }
        if option.eq_ignore_ascii_case("case") {
            search.case = true;
        } else if option.eq_ignore_ascii_case("regex") {
            search.regex = true;
        } else if let Ok(n) = option.parse::<usize>() {
            search.last = Some(n);
        } else {
            return Err(InputError::Invalid(
                "lastlog options: -N (the last N rows), -case, -regex, -- (the text starts with -)",
            ));
        }
    }
    search.text = required_text(rest, spec)?;
    if search.regex && search.matcher().is_err() {
        return Err(InputError::Invalid(
            "lastlog: the -regex text is not a regular expression",
        ));
    }
    Ok(search)
}

/// `/control` subcommands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlCommand {
    /// `/control token [regenerate]`: show (or replace) the access token.
    Token {
        /// Replace the token, invalidating the old one.
        regenerate: bool,
    },
    /// `/control register [user | local DIR]`: connect Claude Code with a
    /// headers helper, at its user scope (every directory) or, with `local`,
    /// at its local scope for the one directory DIR (as typed).
    Register {
        /// The directory of a local-scope registration; None: user scope.
        local: Option<String>,
    },
    /// `/control register NAME [user | local DIR]`: connect Claude Code with
    /// the scoped grant NAME's headers file, as the server `rete-NAME`.
    RegisterGrant {
        /// The grant.
        name: String,
        /// The directory of a local-scope registration; None: user scope.
        local: Option<String>,
    },
    /// `/control register project` (or `--scope project`): refused, never done.
    RegisterProject,
    /// `/control grant add NAME [key=value…]`: the words after `add`, as
    /// typed (rete-mcp's `GrantSpec` reads them).
    GrantAdd(Vec<String>),
    /// `/control grant list`
    GrantList,
    /// `/control grant revoke NAME`
    GrantRevoke(String),
    /// `/control status`
    Status,
    /// `/control log`
    Log,
    /// `/control allow`: send the oldest line waiting for approval.
    Allow,
    /// `/control deny`: refuse the oldest line waiting for approval.
    Deny,
}

/// Why a line is not a valid command. Display is one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// `/` followed by nothing.
    MissingCommand,
    /// The command name is not known (stored as typed, lower-cased).
    UnknownCommand(String),
    /// Wrong arguments; holds the command's usage line.
    Usage(&'static str),
    /// `/set` of a key that does not exist.
    UnknownSetting(String),
    /// A malformed value, e.g. "control.port must be a number".
    Invalid(&'static str),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::MissingCommand => f.write_str("missing command name after /"),
            InputError::UnknownCommand(name) => {
                write!(f, "unknown command: /{}", name.escape_debug())
            }
            InputError::Usage(usage) => write!(f, "usage: {usage}"),
            InputError::UnknownSetting(key) => write!(
                f,
                "unknown setting: {} (known: {})",
                key.escape_debug(),
                SETTING_KEYS.join(", ")
            ),
            InputError::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for InputError {}

/// The keys `/set` knows.
const SETTING_KEYS: [&str; 9] = [
    "control.enabled",
    "control.debug",
    "control.send",
    "control.approve",
    "control.port",
    "time_format",
    "mirc_colours",
    "nicklist",
    "highlights",
];

/// Classifies one input line (without its newline).
pub fn parse_input(line: &str) -> Result<Input, InputError> {
    parse_input_with(line, &std::collections::BTreeMap::new())
}

/// Classifies one input line, with the person's `/alias`es (name, in
/// lower case, to the command it stands for without `/`): `/NAME args`
/// runs `/EXPANSION args`, or with `$*` in the expansion, the arguments
/// there. reterm's own commands are never shadowed by an alias.
pub fn parse_input_with(
    line: &str,
    aliases: &std::collections::BTreeMap<String, String>,
) -> Result<Input, InputError> {
    if let Some(after_slash) = line.strip_prefix('/') {
        let (name, args) = split_word(after_slash);
        let name = name.to_lowercase();
        if let Some(expansion) = aliases.get(&name).filter(|_| !is_command(&name)) {
            let line = if expansion.contains("$*") {
                format!("/{}", expansion.replace("$*", args.trim_end()))
            } else if args.is_empty() {
                format!("/{expansion}")
            } else {
                format!("/{expansion} {args}")
            };
            return parse_input(&line);
        }
    }
    parse_plain(line)
}

/// Whether `name` is one of reterm's commands or its built-in aliases,
/// which no `/alias` replaces.
pub fn is_command(name: &str) -> bool {
    COMMANDS.iter().any(|spec| spec.name == name)
        || irc::SERVER_VERBS.contains(&name)
        || builtin_alias(name).is_some()
        || matches!(name, "window" | "alias" | "unalias" | "network")
}

fn parse_plain(line: &str) -> Result<Input, InputError> {
    if line.trim().is_empty() {
        return Ok(Input::Empty);
    }
    let Some(after_slash) = line.strip_prefix('/') else {
        return Ok(Input::Text(line.to_string()));
    };
    if after_slash.starts_with('/') {
        return Ok(Input::Text(after_slash.to_string()));
    }
    if after_slash.is_empty() || after_slash.starts_with(char::is_whitespace) {
        return Err(InputError::MissingCommand);
    }
    let (name, args) = split_word(after_slash);
    let name = name.to_lowercase();
    if let Some(expansion) = builtin_alias(&name) {
        let line = format!("{expansion} {args}");
        let (name, args) = split_word(&line);
        return parse_command(name, args).map(Input::Command);
    }
    parse_command(&name, args).map(Input::Command)
}

/// irssi's default aliases, which its users type without thinking: `/j`,
/// `/wc`, `/win`, `/q`, `/wi`…; the name, then what it stands for (the
/// arguments typed follow it).
pub const ALIASES: [(&str, &str); 22] = [
    ("b", "ban"),
    ("bye", "quit"),
    ("c", "clear"),
    ("cl", "clear"),
    ("date", "time"),
    ("exit", "quit"),
    ("host", "userhost"),
    ("j", "join"),
    ("k", "kick"),
    ("last", "lastlog"),
    ("leave", "part"),
    ("m", "msg"),
    ("n", "names"),
    ("q", "query"),
    ("signoff", "quit"),
    ("t", "topic"),
    ("w", "who"),
    ("wc", "window close"),
    ("wi", "whois"),
    ("win", "window"),
    ("ww", "whowas"),
    ("wii", "whois"),
];

fn builtin_alias(name: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map(|(_, expansion)| *expansion)
}

/// First whitespace-separated word and the rest with leading whitespace
/// removed (the rest keeps its inner and trailing spacing: it may be message
/// text).
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(end) => (&s[..end], s[end..].trim_start()),
        None => (s, ""),
    }
}

fn parse_command(name: &str, args: &str) -> Result<Command, InputError> {
    use commands::spec as cmd;
    let command = match name {
        "connect" => Command::Connect {
            network: one_word(args, &cmd::CONNECT)?.to_string(),
        },
        "disconnect" => Command::Disconnect {
            network: optional_word(args, &cmd::DISCONNECT)?.map(str::to_string),
        },
        "join" => {
            let (channel, rest) = split_word(args);
            let key = optional_word(rest, &cmd::JOIN)?;
            if channel.is_empty() {
                return Err(usage(&cmd::JOIN));
            }
            Command::Join {
                channel: channel.to_string(),
                key: key.map(Secret::new),
            }
        }
        "part" => {
            let (first, rest) = split_word(args);
            let (channel, reason) = if is_channel(first) {
                (Some(first.to_string()), rest)
            } else {
                (None, args)
            };
            Command::Part {
                channel,
                reason: optional_text(reason),
            }
        }
        "msg" => {
            let (target, text) = word_and_text(args, &cmd::MSG)?;
            Command::Msg { target, text }
        }
        "me" => Command::Me {
            text: required_text(args, &cmd::ME)?,
        },
        "notice" => {
            let (target, text) = word_and_text(args, &cmd::NOTICE)?;
            Command::Notice { target, text }
        }
        "nick" => Command::Nick {
            nick: one_word(args, &cmd::NICK)?.to_string(),
        },
        "quote" => Command::Quote {
            line: required_text(args, &cmd::QUOTE)?,
        },
        "oper" => {
            let (name, rest) = split_word(args);
            let password = one_word(rest, &cmd::OPER)?;
            Command::Oper {
                name: name.to_string(),
                password: Secret::new(password),
            }
        }
        "smsg" => {
            let (target, text) = word_and_text(args, &cmd::SMSG)?;
            Command::Smsg {
                target,
                text: Secret::new(text),
            }
        }
        "cloud" => Command::Cloud(cloud::cloud_setting(args, &cmd::CLOUD)?),
        "backlog" => Command::Backlog(cloud::backlog_rows(optional_word(args, &cmd::BACKLOG)?)?),
        "buffers" => {
            no_args(args, &cmd::BUFFERS)?;
            Command::Buffers
        }
        "buffer" => Command::Buffer(buffer_ref(one_word(args, &cmd::BUFFER)?)?),
        "window" => match one_word(args, &cmd::WINDOW)? {
            word if word.eq_ignore_ascii_case("close") => Command::Close,
            word => Command::Buffer(buffer_ref(word)?),
        },
        "query" => {
            let (nick, text) = split_word(args);
            if nick.is_empty() {
                return Err(usage(&cmd::QUERY));
            }
            Command::Query {
                nick: nick.to_string(),
                text: optional_text(text),
            }
        }
        "close" => {
            no_args(args, &cmd::CLOSE)?;
            Command::Close
        }
        "clear" => {
            no_args(args, &cmd::CLEAR)?;
            Command::Clear
        }
        "lastlog" => Command::Lastlog(lastlog(args)?),
        "reconnect" => Command::Reconnect {
            network: optional_word(args, &cmd::RECONNECT)?.map(str::to_string),
        },
        "raw" => Command::Raw {
            network: optional_word(args, &cmd::RAW)?.map(str::to_string),
        },
        "ignore" => Command::Ignore(optional_word(args, &cmd::IGNORE)?.map(str::to_string)),
        "unignore" => Command::Unignore(one_word(args, &cmd::UNIGNORE)?.to_string()),
        "reload" => {
            no_args(args, &cmd::RELOAD)?;
            Command::Reload
        }
        "quit" => Command::Quit {
            reason: optional_text(args),
        },
        "help" => Command::Help {
            command: optional_word(args, &cmd::HELP)?
                .map(help_topic)
                .transpose()?,
        },
        "set" => match split_word(args) {
            ("", _) => Command::SetShow(None),
            (word, rest) if rest.trim().is_empty() => Command::SetShow(Some(word.to_lowercase())),
            _ => Command::Set(setting(args)?),
        },
        "control" => Command::Control(control(args)?),
        "alias" => match split_word(args) {
            ("", _) => Command::Alias {
                name: None,
                expansion: None,
            },
            (name, expansion) => {
                let name = name.trim_start_matches('/').to_lowercase();
                if let Some(name) = name.strip_prefix('-') {
                    Command::Unalias(name.to_owned())
                } else {
                    Command::Alias {
                        name: Some(name),
                        expansion: optional_text(expansion)
                            .map(|e| e.trim().trim_start_matches('/').to_owned()),
                    }
                }
            }
        },
        "server" | "network" => Command::Server(server(args)?),
        "unalias" => Command::Unalias(
            one_word(args, &cmd::UNALIAS)?
                .trim_start_matches('/')
                .to_lowercase(),
        ),
        _ => match irc::parse(name, args) {
            Some(parsed) => Command::Irc(parsed?),
            None => return Err(InputError::UnknownCommand(name.to_string())),
        },
    };
    Ok(command)
}

fn usage(spec: &CommandSpec) -> InputError {
    InputError::Usage(spec.usage)
}

/// Channel prefixes of RFC 2811; enough to tell `/part #chan` from
/// `/part some reason`.
fn is_channel(word: &str) -> bool {
    word.starts_with(['#', '&', '+', '!'])
}

fn no_args(args: &str, spec: &CommandSpec) -> Result<(), InputError> {
    if args.trim().is_empty() {
        Ok(())
    } else {
        Err(usage(spec))
    }
}

fn one_word<'a>(args: &'a str, spec: &CommandSpec) -> Result<&'a str, InputError> {
    optional_word(args, spec)?.ok_or_else(|| usage(spec))
}

fn optional_word<'a>(args: &'a str, spec: &CommandSpec) -> Result<Option<&'a str>, InputError> {
    let (word, rest) = split_word(args);
    if !rest.is_empty() {
        return Err(usage(spec));
    }
    Ok((!word.is_empty()).then_some(word))
}

fn word_and_text(args: &str, spec: &CommandSpec) -> Result<(String, String), InputError> {
    let (word, text) = split_word(args);
    if word.is_empty() || text.trim().is_empty() {
        return Err(usage(spec));
    }
    Ok((word.to_string(), text.to_string()))
}

fn required_text(args: &str, spec: &CommandSpec) -> Result<String, InputError> {
    optional_text(args).ok_or_else(|| usage(spec))
}

fn optional_text(args: &str) -> Option<String> {
    (!args.trim().is_empty()).then(|| args.to_string())
}

fn buffer_ref(word: &str) -> Result<BufferRef, InputError> {
    if !word.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(BufferRef::Name(word.to_string()));
    }
    match word.parse::<NonZeroUsize>() {
        Ok(n) => Ok(BufferRef::Number(n)),
        Err(_) if word.bytes().all(|b| b == b'0') => {
            Err(InputError::Invalid("buffer numbers start at 1"))
        }
        Err(_) => Err(InputError::Invalid("buffer number is too large")),
    }
}

/// `/help /JOIN` and `/help join` mean the same; unknown names are errors so
/// a typo is not answered with silence.
fn help_topic(word: &str) -> Result<String, InputError> {
    let name = word.strip_prefix('/').unwrap_or(word).to_lowercase();
    if COMMANDS.iter().any(|spec| spec.name == name) {
        Ok(name)
    } else {
        Err(InputError::UnknownCommand(name))
    }
}

fn setting(args: &str) -> Result<Setting, InputError> {
    let (key, rest) = split_word(args);
    // A time format may hold spaces: the rest of the line is the value.
    if key.eq_ignore_ascii_case("time_format") && !rest.trim().is_empty() {
        return Ok(Setting::TimeFormat(rest.trim_end().to_string()));
    }
    let (value, extra) = split_word(rest);
    if key.is_empty() || value.is_empty() || !extra.is_empty() {
        return Err(usage(&commands::spec::SET));
    }
    match key.to_lowercase().as_str() {
        "control.enabled" => {
            on_off(value, "control.enabled must be on or off").map(Setting::ControlEnabled)
        }
        "control.debug" => {
            on_off(value, "control.debug must be on or off").map(Setting::ControlDebug)
        }
        "control.send" => on_off(value, "control.send must be on or off").map(Setting::ControlSend),
        "control.approve" => {
            on_off(value, "control.approve must be on or off").map(Setting::ControlApprove)
        }
        "control.port" => port(value),
        "mirc_colours" => on_off(value, "mirc_colours must be on or off").map(Setting::MircColours),
        "nicklist" => on_off(value, "nicklist must be on or off").map(Setting::Nicklist),
        "highlights" if value.eq_ignore_ascii_case("none") => Ok(Setting::Highlights(Vec::new())),
        "highlights" => Ok(Setting::Highlights(
            value
                .split(',')
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect(),
        )),
        _ => Err(InputError::UnknownSetting(key.to_string())),
    }
}

fn on_off(value: &str, error: &'static str) -> Result<bool, InputError> {
    match value.to_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(InputError::Invalid(error)),
    }
}

/// Any signed integer (`-5`, `+20300`, a run of digits) is a number;
/// out-of-range numbers are clamped (and say so) rather than rejected, as the
/// nearest valid port is the likely intent. Other text is refused, so the
/// setting keeps its value.
fn port(value: &str) -> Result<Setting, InputError> {
    let (negative, digits) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InputError::Invalid("control.port must be a number"));
    }
    let magnitude = i128::from(digits.parse::<u64>().unwrap_or(u64::MAX));
    let requested = if negative { -magnitude } else { magnitude };
    let (low, high) = (*CONTROL_PORT_RANGE.start(), *CONTROL_PORT_RANGE.end());
    let port = u16::try_from(requested.clamp(i128::from(low), i128::from(high))).unwrap_or(high);
    Ok(Setting::ControlPort {
        port,
        clamped: i128::from(port) != requested,
    })
}

fn control(args: &str) -> Result<ControlCommand, InputError> {
    let spec = &commands::spec::CONTROL;
    let (sub, rest) = split_word(args);
    if sub.eq_ignore_ascii_case("register") {
        return register(rest.trim(), spec);
    }
    if sub.eq_ignore_ascii_case("grant") {
        return grant(rest.trim());
    }
    let rest = optional_word(rest, spec)?.map(str::to_lowercase);
    match (sub.to_lowercase().as_str(), rest.as_deref()) {
        ("token", None) => Ok(ControlCommand::Token { regenerate: false }),
        ("token", Some("regenerate")) => Ok(ControlCommand::Token { regenerate: true }),
        ("status", None) => Ok(ControlCommand::Status),
        ("log", None) => Ok(ControlCommand::Log),
        ("allow", None) => Ok(ControlCommand::Allow),
        ("deny", None) => Ok(ControlCommand::Deny),
        _ => Err(usage(spec)),
    }
}

/// `/control grant`'s subcommands.
fn grant(args: &str) -> Result<ControlCommand, InputError> {
    const USAGE: &str =
        "/control grant add NAME [networks=…] [buffers=…] [queries=on|off] [tier=read|debug|send] [expires=8h|never] | list | revoke NAME";
    let (sub, rest) = split_word(args);
    let words: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
    match (sub.to_lowercase().as_str(), words.as_slice()) {
        ("add", []) => Err(InputError::Invalid(
            "name the grant: /control grant add NAME [networks=…] [buffers=…] [queries=on|off] [tier=read|debug|send] [expires=8h|never]",
        )),
        ("add", _) => Ok(ControlCommand::GrantAdd(words)),
        ("list", []) => Ok(ControlCommand::GrantList),
        ("revoke", [name]) => Ok(ControlCommand::GrantRevoke(name.clone())),
        ("revoke", _) => Err(InputError::Invalid(
            "name one grant: /control grant revoke NAME",
        )),
        _ => Err(InputError::Usage(USAGE)),
    }
}

/// `/control register`'s arguments: nothing or `user` (or `--scope user`),
/// `local DIR` (or `--scope local DIR`), or the project scope, refused; or
/// a grant's name first, then any of those.
fn register(args: &str, spec: &CommandSpec) -> Result<ControlCommand, InputError> {
    let (first, rest) = split_word(args);
    let scope_word = first.starts_with('-')
        || ["", "user", "local", "project"]
            .iter()
            .any(|w| w.eq_ignore_ascii_case(first));
    if !scope_word {
        return match register(rest.trim(), spec)? {
            ControlCommand::Register { local } => Ok(ControlCommand::RegisterGrant {
                name: first.to_owned(),
                local,
            }),
            ControlCommand::RegisterProject => Ok(ControlCommand::RegisterProject),
            _ => Err(usage(spec)),
        };
    }
    let (scope, rest) = if first.eq_ignore_ascii_case("--scope") {
        split_word(rest.trim_start())
    } else if let Some(scope) = first
        .get(.."--scope=".len())
        .filter(|head| head.eq_ignore_ascii_case("--scope="))
        .and_then(|head| first.get(head.len()..))
    {
        (scope, rest)
    } else {
        (first, rest)
    };
    let rest = rest.trim();
    match (scope.to_lowercase().as_str(), rest.is_empty()) {
        ("", true) if first.is_empty() => Ok(ControlCommand::Register { local: None }),
        ("user", true) => Ok(ControlCommand::Register { local: None }),
        ("local", false) => Ok(ControlCommand::Register {
            local: Some(rest.to_owned()),
        }),
        ("local", true) => Err(InputError::Invalid(
            "name the directory: /control register local DIR (alone, /control register registers for every directory)",
        )),
        ("project", true) => Ok(ControlCommand::RegisterProject),
        _ => Err(usage(spec)),
    }
}

#[cfg(test)]
mod tests;
