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
        QUIT,
        "quit",
        "/quit [reason]",
        "disconnect from all networks and exit"
    );
    command!(
        HELP,
        "help",
        "/help [command]",
        "list commands, or explain one"
    );
    command!(SET, "set", "/set <key> <value>", "change a setting: control.enabled|control.debug|control.send on|off, control.port <number>");
    command!(
        CONTROL,
        "control",
        "/control token [regenerate] | status | log",
        "AI-access control server: show/renew its token, its state, its log"
    );
}

/// Every command, in the order `/help` lists them.
pub(crate) const COMMANDS: [&CommandSpec; 17] = [
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
    &spec::BUFFERS,
    &spec::BUFFER,
    &spec::QUIT,
    &spec::HELP,
    &spec::SET,
    &spec::CONTROL,
];

/// Help for `/help`: every command, one per line, or only `cmd` (with or
/// without `/`, any case). An unknown `cmd` yields one line saying so.
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
                .map(|spec| line(spec))
                .unwrap_or_else(|| format!("unknown command: /{}", name.escape_debug()))
        }
    }
}

fn line(spec: &CommandSpec) -> String {
    format!("{:<26} {}", spec.usage, spec.summary)
}
