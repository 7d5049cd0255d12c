//! The command table: one entry per command, the single source of the usage
//! lines in errors and of `/help`.

/// Usage and one-line description of a command.
#[derive(Debug)]
pub(crate) struct CommandSpec {
    /// Lower-case name without `/`.
    pub name: &'static str,
    /// Usage line, e.g. `/join <channel> [key]`.
    pub usage: &'static str,
    /// What it does.
    pub summary: &'static str,
}

/// One constant per command, so the parser refers to usage lines without a
/// lookup that could fail.
pub(crate) mod spec {
    use super::CommandSpec;

    macro_rules! command {
        ($id:ident, $name:literal, $usage:literal, $summary:literal) => {
            pub(crate) const $id: CommandSpec = CommandSpec {
                name: $name,
                usage: $usage,
                summary: $summary,
            };
        };
    }

    command!(
        CONNECT,
        "connect",
        "/connect <network>",
        "connect to a network from the config"
    );
    command!(
        DISCONNECT,
        "disconnect",
        "/disconnect [network]",
        "disconnect (default: the current buffer's network)"
    );
    command!(
        JOIN,
        "join",
        "/join <channel> [key]",
        "join a channel, with its key if it has one"
    );
    command!(
        PART,
        "part",
        "/part [channel] [reason]",
        "leave a channel (default: the current one)"
    );
    command!(
        MSG,
        "msg",
        "/msg <target> <text>",
        "send a message to a nick or channel"
    );
    command!(
        ME,
        "me",
        "/me <text>",
        "send an action to the current buffer"
    );
    command!(
        NOTICE,
        "notice",
        "/notice <target> <text>",
        "send a notice to a nick or channel"
    );
    command!(NICK, "nick", "/nick <newnick>", "change your nick");
    command!(
        QUOTE,
        "quote",
        "/quote <raw line>",
        "send a raw IRC line to the server"
    );
    command!(
        OPER,
        "oper",
        "/oper <name> <password>",
        "become an IRC operator"
    );
    command!(
        SMSG,
        "smsg",
        "/smsg <target> <text>",
        "send a secret message: sent as typed, shown masked"
    );
    command!(
        CLOUD,
        "cloud",
        "/cloud <setting> <value>",
        "change what the ReteCloud service keeps for this network: nick, username, realname, channels, sasl-mechanism, sasl-username, sasl-password, server-password (none clears)"
    );
    command!(
        BACKLOG,
        "backlog",
        "/backlog [rows]",
        "fetch older rows of this buffer from the ReteCloud service (default 50, at most 500)"
    );
    command!(
        BUFFERS,
        "buffers",
        "/buffers",
        "list open buffers with their numbers"
    );
    command!(
        BUFFER,
        "buffer",
        "/buffer <number|name>",
        "switch to a buffer"
    );
    command!(
        WINDOW,
        "window",
        "/window <number|name> | close",
        "the same as /buffer; /window close (or /wc) the same as /close"
    );
    command!(
        QUERY,
        "query",
        "/query <nick> [text]",
        "open a private buffer with a nick (and say text)"
    );
    command!(
        CLOSE,
        "close",
        "/close",
        "leave the current channel or query and close its buffer"
    );
    command!(
        WHOIS,
        "whois",
        "/whois <nick>",
        "ask the server who a nick is"
    );
    command!(
        TOPIC,
        "topic",
        "/topic [text]",
        "show the current channel's topic, or set it"
    );
    command!(
        KICK,
        "kick",
        "/kick <nick> [reason]",
        "kick a nick from the current channel"
    );
    command!(
        BAN,
        "ban",
        "/ban <mask>",
        "ban a mask (+b) in the current channel"
    );
    command!(
        UNBAN,
        "unban",
        "/unban <mask>",
        "remove a ban (-b) in the current channel"
    );
    command!(
        MODE,
        "mode",
        "/mode [target] <changes>",
        "change modes (of the current channel when changes come first)"
    );
    command!(
        OP,
        "op",
        "/op <nick>...",
        "give channel operator status (+o)"
    );
    command!(
        DEOP,
        "deop",
        "/deop <nick>...",
        "take channel operator status (-o)"
    );
    command!(VOICE, "voice", "/voice <nick>...", "give voice (+v)");
    command!(DEVOICE, "devoice", "/devoice <nick>...", "take voice (-v)");
    command!(
        INVITE,
        "invite",
        "/invite <nick> [channel]",
        "invite a nick (to the current channel)"
    );
    command!(
        AWAY,
        "away",
        "/away [message]",
        "mark yourself away; without a message, back"
    );
    command!(
        NAMES,
        "names",
        "/names [channel]",
        "list a channel's members in columns"
    );
    command!(
        LIST,
        "list",
        "/list [arguments]",
        "list the network's channels"
    );
    command!(
        IGNORE,
        "ignore",
        "/ignore [mask]",
        "hide messages from nick or nick!user@host (* and ?), saved in the config; alone, list the masks"
    );
    command!(
        UNIGNORE,
        "unignore",
        "/unignore <mask>",
        "stop ignoring a mask"
    );
    command!(
        RELOAD,
        "reload",
        "/reload",
        "re-read the config: new networks are added, ignores applied"
    );
    command!(
        CLEAR,
        "clear",
        "/clear",
        "clear the current buffer from the screen"
    );
    command!(
        LASTLOG,
        "lastlog",
        "/lastlog [-N] [-case] [-regex] <text>",
        "show the current buffer's rows that contain text (any case unless -case; -N: the last N; -regex: text is a regular expression)"
    );
    command!(
        RECONNECT,
        "reconnect",
        "/reconnect [network]",
        "drop the connection and connect again"
    );
    command!(
        RAW,
        "raw",
        "/raw [network]",
        "the network's raw lines in (<<) and out (>>), masked: its raw buffer (full screen) or the last 200 (line mode)"
    );
    command!(
        QUIT,
        "quit",
        "/quit [reason]",
        "send QUIT (with the reason, else Leaving) to every network and exit"
    );
    command!(
        CTCP,
        "ctcp",
        "/ctcp <nick> <request> [arguments]",
        "send a CTCP request (VERSION, PING, TIME, CLIENTINFO…); the reply shows in the server buffer"
    );
    command!(
        SERVER,
        "motd",
        "/motd, /version, /info, /stats, /who…",
        "sent to the server as typed, verb in capitals: admin info ison links lusers map motd rehash rules servlist silence stats time trace userhost users version who whowas"
    );
    command!(
        ALIAS,
        "alias",
        "/alias [name [command]]",
        "alone: every alias; with a name and a command: /name runs the command (the words typed after it follow, or replace $*), saved to the config"
    );
    command!(
        UNALIAS,
        "unalias",
        "/unalias <name>",
        "forget an alias (also /alias -name)"
    );
    command!(
        SERVER_CMD,
        "server",
        "/server [list] | add [-tls] [-auto] [-nick NICK] <name> <host> [port] | remove <name>",
        "the networks in the config; add one (saved, /connect NAME connects it) or remove one (saved; a running session stays until reterm restarts); also /network"
    );
    command!(
        HELP,
        "help",
        "/help [command]",
        "list commands, or explain one"
    );
    command!(SET, "set", "/set [key [value]]", "alone: list every setting with its value; with a word: the settings whose name holds it; with a value: change a setting: control.enabled|control.debug|control.send|control.approve on|off, control.port <number>; display: time_format <strftime>, mirc_colours|nicklist on|off, highlights <word,word|none>");
    command!(
        CONTROL,
        "control",
        "/control token [regenerate] | register [NAME] [local DIR] | grant … | status | log | allow | deny",
        "AI access: its token, Claude Code connected without it, scoped grants (/help control), its state and log, the oldest line waiting for approval"
    );
}

/// Every command, in the order `/help` lists them.
pub(crate) const COMMANDS: [&CommandSpec; 48] = [
    &spec::CONNECT,
    &spec::DISCONNECT,
    &spec::JOIN,
    &spec::PART,
    &spec::MSG,
    &spec::ME,
    &spec::NOTICE,
    &spec::NICK,
    &spec::QUOTE,
    &spec::OPER,
    &spec::SMSG,
    &spec::CLOUD,
    &spec::BACKLOG,
    &spec::BUFFERS,
    &spec::BUFFER,
    &spec::WINDOW,
    &spec::QUERY,
    &spec::CLOSE,
    &spec::WHOIS,
    &spec::TOPIC,
    &spec::KICK,
    &spec::BAN,
    &spec::UNBAN,
    &spec::MODE,
    &spec::OP,
    &spec::DEOP,
    &spec::VOICE,
    &spec::DEVOICE,
    &spec::INVITE,
    &spec::AWAY,
    &spec::NAMES,
    &spec::LIST,
    &spec::CTCP,
    &spec::SERVER,
    &spec::IGNORE,
    &spec::UNIGNORE,
    &spec::RELOAD,
    &spec::CLEAR,
    &spec::LASTLOG,
    &spec::RECONNECT,
    &spec::RAW,
    &spec::QUIT,
    &spec::SERVER_CMD,
    &spec::ALIAS,
    &spec::UNALIAS,
    &spec::HELP,
    &spec::SET,
    &spec::CONTROL,
];

/// Examples `/help CMD` shows under the command's line: what is typed, and
/// what it does.
pub(crate) const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "connect",
        &[(
            "/connect libera",
            "connect to the network named libera in the config",
        )],
    ),
    (
        "disconnect",
        &[("/disconnect", "leave the current buffer's network (QUIT)")],
    ),
    (
        "join",
        &[
            ("/join #rete", "join #rete"),
            ("/j #secret hunter2", "join a channel with its key"),
        ],
    ),
    (
        "part",
        &[
            ("/part", "leave the current channel"),
            ("/part #rete bye all", "leave #rete saying why"),
        ],
    ),
    (
        "msg",
        &[(
            "/msg alice hello",
            "a private message; the line shows in alice's query",
        )],
    ),
    ("me", &[("/me waves", "* rt waves")]),
    (
        "query",
        &[
            ("/query alice", "open (and switch to) a query with alice"),
            ("/q alice hi", "open it and say hi"),
        ],
    ),
    (
        "close",
        &[(
            "/close",
            "leave the channel or query and close its buffer (also /wc)",
        )],
    ),
    (
        "window",
        &[
            ("/win 3", "switch to buffer 3 (Alt+3, or Esc then 3)"),
            ("/window close", "the same as /close"),
        ],
    ),
    (
        "buffer",
        &[
            ("/buffer 2", "switch to buffer 2"),
            ("/buffer #rete", "switch by name"),
        ],
    ),
    (
        "whois",
        &[(
            "/whois alice",
            "who alice is; the answer shows where you typed it",
        )],
    ),
    (
        "topic",
        &[
            ("/topic", "show the channel's topic"),
            ("/topic release on Friday", "set it"),
        ],
    ),
    (
        "kick",
        &[(
            "/kick spammer go away",
            "kick from the current channel, saying why",
        )],
    ),
    (
        "mode",
        &[
            ("/mode +m", "moderate the current channel"),
            ("/mode alice +i", "a mode on a nick"),
        ],
    ),
    (
        "away",
        &[
            (
                "/away lunch",
                "away, with a message; the status bar shows (zZzZ)",
            ),
            ("/away", "back"),
        ],
    ),
    (
        "ctcp",
        &[
            ("/ctcp alice VERSION", "ask alice's client what it is"),
            ("/ctcp alice PING", "measure the round trip"),
        ],
    ),
    (
        "motd",
        &[
            ("/motd", "the server's message of the day"),
            ("/stats u", "the server's uptime"),
            ("/version", "the server's version"),
        ],
    ),
    (
        "lastlog",
        &[
            (
                "/lastlog alice",
                "the rows of this buffer that mention alice",
            ),
            ("/lastlog -5 -case Error", "the last five, case counting"),
        ],
    ),
    (
        "ignore",
        &[
            ("/ignore spammer", "hide spammer (spammer!*@*)"),
            ("/ignore *!*@bad.host", "hide a host"),
        ],
    ),
    (
        "set",
        &[
            ("/set", "every setting"),
            ("/set time", "the settings named time…"),
            ("/set time_format %H:%M:%S", "a clock with seconds"),
        ],
    ),
    (
        "control",
        &[
            (
                "/control register",
                "connect Claude Code, for every directory",
            ),
            ("/control register local ~/src/app", "for ~/src/app only"),
            (
                "/control grant add NAME [networks=a,b] [buffers=#x*,#y] [queries=on|off] [tier=read|debug|send] [expires=8h|never]",
                "defaults: every network and channel, no queries, tier read, 8 hours",
            ),
            (
                "/control grant add bot buffers=#rust*",
                "a grant for #rust… only, its token in ~/.rete/grants/bot.json",
            ),
            (
                "/control grant add ops networks=libera tier=send expires=2h",
                "libera's channels, may send, for 2 hours",
            ),
            ("/control register bot", "connect Claude Code as rete-bot"),
            ("/control grant list", "every grant, its scope and last use"),
            (
                "/control grant revoke bot",
                "its token is refused from now on, and rete-bot leaves Claude Code",
            ),
            ("/control status", "AI access and where Claude Code has it"),
        ],
    ),
    (
        "quit",
        &[("/quit see you", "QUIT with a reason, then exit")],
    ),
];

/// Help for `/help`: every command, one per line, or only `cmd` (with or
/// without `/`, any case) with its aliases and examples. An unknown `cmd`
/// yields one line saying so.
pub fn help_text(cmd: Option<&str>) -> String {
    match cmd {
        None => COMMANDS
            .iter()
            .map(|spec| line(spec))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(cmd) => {
            let name = cmd.trim().trim_start_matches('/').to_lowercase();
            COMMANDS
                .iter()
                .find(|spec| spec.name == name)
                .map(|spec| full_help(spec))
                .unwrap_or_else(|| format!("unknown command: /{}", name.escape_debug()))
        }
    }
}

/// Every command's name, for tab completion.
pub fn command_names() -> Vec<String> {
    COMMANDS.iter().map(|spec| spec.name.to_owned()).collect()
}

/// The command's line, then its aliases and examples, each on a line.
fn full_help(spec: &CommandSpec) -> String {
    let mut text = line(spec);
    let aliases: Vec<String> = super::ALIASES
        .iter()
        .filter(|(_, expansion)| expansion.split_whitespace().next() == Some(spec.name))
        .map(|(alias, expansion)| match expansion.split_once(' ') {
            Some((_, rest)) => format!("/{alias} (/{} {rest})", spec.name),
            None => format!("/{alias}"),
        })
        .collect();
    if !aliases.is_empty() {
        text.push_str(&format!("\n  also: {}", aliases.join(", ")));
    }
    let examples = EXAMPLES
        .iter()
        .find(|(name, _)| *name == spec.name)
        .map_or(&[][..], |(_, examples)| *examples);
    for (typed, does) in examples {
        text.push_str(&format!("\n  {typed:<34} {does}"));
    }
    text
}

fn line(spec: &CommandSpec) -> String {
    format!("{:<26} {}", spec.usage, spec.summary)
}
