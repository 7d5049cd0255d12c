use std::num::NonZeroUsize;

use super::*;

fn cmd(line: &str) -> Command {
    match parse_input(line) {
        Ok(Input::Command(command)) => command,
        other => panic!("{line:?} gave {other:?}"),
    }
}

fn err(line: &str) -> String {
    match parse_input(line) {
        Err(e) => e.to_string(),
        Ok(other) => panic!("{line:?} should fail, gave {other:?}"),
    }
}

fn s(text: &str) -> String {
    text.to_string()
}

#[test]
fn text_and_empty_lines() {
    assert_eq!(parse_input(""), Ok(Input::Empty));
    assert_eq!(parse_input("  \t "), Ok(Input::Empty));
    assert_eq!(
        parse_input("hello  world "),
        Ok(Input::Text(s("hello  world ")))
    );
    assert_eq!(parse_input(" /join #x"), Ok(Input::Text(s(" /join #x"))));
    assert_eq!(parse_input("//foo bar"), Ok(Input::Text(s("/foo bar"))));
    assert_eq!(parse_input("//"), Ok(Input::Text(s("/"))));
}

#[test]
fn missing_and_unknown_commands() {
    assert_eq!(err("/"), "missing command name after /");
    assert_eq!(err("/ join"), "missing command name after /");
    assert_eq!(err("/foo bar"), "unknown command: /foo");
    assert_eq!(err("/FOO"), "unknown command: /foo");
}

#[test]
fn command_names_are_case_insensitive() {
    assert_eq!(cmd("/JOIN #a"), cmd("/join #a"));
    assert_eq!(cmd("/Buffers"), Command::Buffers);
}

#[test]
fn connect_and_disconnect() {
    assert_eq!(
        cmd("/connect libera"),
        Command::Connect {
            network: s("libera")
        }
    );
    assert_eq!(err("/connect"), "usage: /connect <network>");
    assert_eq!(err("/connect a b"), "usage: /connect <network>");
    assert_eq!(cmd("/disconnect"), Command::Disconnect { network: None });
    assert_eq!(
        cmd("/disconnect  libera "),
        Command::Disconnect {
            network: Some(s("libera"))
        }
    );
    assert_eq!(err("/disconnect a b"), "usage: /disconnect [network]");
}

#[test]
fn join() {
    assert_eq!(
        cmd("/join #rete"),
        Command::Join {
            channel: s("#rete"),
            key: None
        }
    );
    assert_eq!(
        cmd("/join #secret k3y"),
        Command::Join {
            channel: s("#secret"),
            key: Some(Secret::new("k3y"))
        }
    );
    assert_eq!(err("/join"), "usage: /join <channel> [key]");
    assert_eq!(err("/join #a key extra"), "usage: /join <channel> [key]");
}

#[test]
fn part() {
    assert_eq!(
        cmd("/part"),
        Command::Part {
            channel: None,
            reason: None
        }
    );
    assert_eq!(
        cmd("/part #a"),
        Command::Part {
            channel: Some(s("#a")),
            reason: None
        }
    );
    assert_eq!(
        cmd("/part #a gone  fishing"),
        Command::Part {
            channel: Some(s("#a")),
            reason: Some(s("gone  fishing"))
        }
    );
    assert_eq!(
        cmd("/part gone fishing"),
        Command::Part {
            channel: None,
            reason: Some(s("gone fishing"))
        }
    );
    assert_eq!(
        cmd("/part &local"),
        Command::Part {
            channel: Some(s("&local")),
            reason: None
        }
    );
}

#[test]
fn msg_notice_me() {
    assert_eq!(
        cmd("/msg bob  hi  there "),
        Command::Msg {
            target: s("bob"),
            text: s("hi  there ")
        }
    );
    assert_eq!(err("/msg bob"), "usage: /msg <target> <text>");
    assert_eq!(err("/msg bob   "), "usage: /msg <target> <text>");
    assert_eq!(err("/msg"), "usage: /msg <target> <text>");
    assert_eq!(
        cmd("/notice #a hey"),
        Command::Notice {
            target: s("#a"),
            text: s("hey")
        }
    );
    assert_eq!(err("/notice #a"), "usage: /notice <target> <text>");
    assert_eq!(cmd("/me waves"), Command::Me { text: s("waves") });
    assert_eq!(err("/me"), "usage: /me <text>");
}

#[test]
fn nick_and_quote() {
    assert_eq!(cmd("/nick rete2"), Command::Nick { nick: s("rete2") });
    assert_eq!(err("/nick"), "usage: /nick <newnick>");
    assert_eq!(err("/nick a b"), "usage: /nick <newnick>");
    assert_eq!(
        cmd("/quote PRIVMSG #a :hi  there"),
        Command::Quote {
            line: s("PRIVMSG #a :hi  there")
        }
    );
    assert_eq!(err("/quote"), "usage: /quote <raw line>");
}

#[test]
fn oper_and_smsg_keep_secrets_out_of_errors_and_debug() {
    assert_eq!(
        cmd("/oper admin hunter2"),
        Command::Oper {
            name: s("admin"),
            password: Secret::new("hunter2")
        }
    );
    assert_eq!(
        cmd("/smsg bob my  pin is 1234"),
        Command::Smsg {
            target: s("bob"),
            text: Secret::new("my  pin is 1234")
        }
    );
    if let Command::Smsg { text, .. } = cmd("/smsg bob my  pin is 1234") {
        assert_eq!(text.expose(), "my  pin is 1234");
    }
    let debug = format!(
        "{:?} {:?}",
        cmd("/oper admin hunter2"),
        cmd("/smsg bob pin1234")
    );
    assert!(
        !debug.contains("hunter2") && !debug.contains("pin1234"),
        "{debug}"
    );
    assert!(debug.contains("********"));

    for (line, secret) in [
        ("/oper admin", "admin"),
        ("/oper admin hunter2 extra", "hunter2"),
        ("/oper", ""),
        ("/smsg pin1234", "pin1234"),
    ] {
        let e = parse_input(line).expect_err(line);
        let shown = format!("{e} {e:?}");
        assert!(secret.is_empty() || !shown.contains(secret), "{shown}");
        assert!(shown.starts_with("usage: /"), "{shown}");
    }
}

#[test]
fn buffers_and_buffer() {
    assert_eq!(cmd("/buffers"), Command::Buffers);
    assert_eq!(err("/buffers 2"), "usage: /buffers");
    let three = NonZeroUsize::new(3).map(BufferRef::Number);
    assert_eq!(Some(cmd("/buffer 3")), three.map(Command::Buffer));
    assert_eq!(
        cmd("/buffer #rete"),
        Command::Buffer(BufferRef::Name(s("#rete")))
    );
    assert_eq!(cmd("/buffer 2x"), Command::Buffer(BufferRef::Name(s("2x"))));
    assert_eq!(err("/buffer 0"), "buffer numbers start at 1");
    assert_eq!(
        err("/buffer 99999999999999999999999"),
        "buffer number is too large"
    );
    assert_eq!(err("/buffer"), "usage: /buffer <number|name>");
    assert_eq!(err("/buffer 1 2"), "usage: /buffer <number|name>");
}

#[test]
fn quit() {
    assert_eq!(cmd("/quit"), Command::Quit { reason: None });
    assert_eq!(cmd("/quit   "), Command::Quit { reason: None });
    assert_eq!(
        cmd("/quit bye all"),
        Command::Quit {
            reason: Some(s("bye all"))
        }
    );
}

#[test]
fn help() {
    assert_eq!(cmd("/help"), Command::Help { command: None });
    assert_eq!(
        cmd("/help JOIN"),
        Command::Help {
            command: Some(s("join"))
        }
    );
    assert_eq!(
        cmd("/help /smsg"),
        Command::Help {
            command: Some(s("smsg"))
        }
    );
    assert_eq!(err("/help frob"), "unknown command: /frob");
    assert_eq!(err("/help a b"), "usage: /help [command]");
}

#[test]
fn set_alone_or_with_one_word_lists_settings() {
    assert_eq!(cmd("/set"), Command::SetShow(None));
    assert_eq!(cmd("/set   "), Command::SetShow(None));
    assert_eq!(
        cmd("/set CONTROL"),
        Command::SetShow(Some("control".into()))
    );
    assert_eq!(
        cmd("/set time_format"),
        Command::SetShow(Some("time_format".into()))
    );
}

#[test]
fn set_boolean_settings() {
    assert_eq!(
        cmd("/set control.enabled on"),
        Command::Set(Setting::ControlEnabled(true))
    );
    assert_eq!(
        cmd("/set CONTROL.DEBUG Off"),
        Command::Set(Setting::ControlDebug(false))
    );
    assert_eq!(
        cmd("/set control.send on"),
        Command::Set(Setting::ControlSend(true))
    );
    assert_eq!(
        err("/set control.enabled yes"),
        "control.enabled must be on or off"
    );
    assert_eq!(
        err("/set control.debug 1"),
        "control.debug must be on or off"
    );
    assert_eq!(
        err("/set control.send maybe"),
        "control.send must be on or off"
    );
    assert_eq!(
        cmd("/set control.approve ON"),
        Command::Set(Setting::ControlApprove(true))
    );
    assert_eq!(
        err("/set control.approve y"),
        "control.approve must be on or off"
    );
}

#[test]
fn set_port_clamps() {
    let port = |line| match cmd(line) {
        Command::Set(Setting::ControlPort { port, clamped }) => (port, clamped),
        other => panic!("{other:?}"),
    };
    assert_eq!(port("/set control.port 7422"), (7422, false));
    assert_eq!(port("/set control.port 1024"), (1024, false));
    assert_eq!(port("/set control.port 65535"), (65535, false));
    assert_eq!(port("/set control.port 80"), (1024, true));
    assert_eq!(port("/set control.port 0"), (1024, true));
    assert_eq!(port("/set control.port 70000"), (65535, true));
    assert_eq!(
        port("/set control.port 99999999999999999999999"),
        (65535, true)
    );
    assert_eq!(
        err("/set control.port abc"),
        "control.port must be a number"
    );
    // A signed integer is a number.
    assert_eq!(port("/set control.port -5"), (1024, true));
    assert_eq!(port("/set control.port +20300"), (20300, false));
    assert_eq!(port("/set control.port -0"), (1024, true));
    assert_eq!(
        port("/set control.port -99999999999999999999999"),
        (1024, true)
    );
    for bad in ["+", "-", "--5", "+-5", "5-", "1e3", "0x50", "５"] {
        assert_eq!(
            err(&format!("/set control.port {bad}")),
            "control.port must be a number",
            "{bad}"
        );
    }
}

#[test]
fn set_usage_and_unknown_keys() {
    assert_eq!(err("/set control.port 1 2"), "usage: /set [key [value]]");
    assert_eq!(
        err("/set colour red"),
        "unknown setting: colour (known: control.enabled, control.debug, control.send, control.approve, control.port, time_format, mirc_colours, nicklist, highlights)"
    );
}

#[test]
fn control() {
    assert_eq!(
        cmd("/control token"),
        Command::Control(ControlCommand::Token { regenerate: false })
    );
    assert_eq!(
        cmd("/control Token REGENERATE"),
        Command::Control(ControlCommand::Token { regenerate: true })
    );
    assert_eq!(
        cmd("/control status"),
        Command::Control(ControlCommand::Status)
    );
    assert_eq!(cmd("/control log"), Command::Control(ControlCommand::Log));
    for line in [
        "/control register",
        "/control Register user",
        "/control register --scope USER",
        "/control register --scope=user",
    ] {
        assert_eq!(
            cmd(line),
            Command::Control(ControlCommand::Register { local: None }),
            "{line}"
        );
    }
    for (line, dir) in [
        ("/control register local ~/src/rete", "~/src/rete"),
        ("/control Register LOCAL /tmp/a dir ", "/tmp/a dir"),
        ("/control register --scope local src", "src"),
        ("/control register --scope=Local /x", "/x"),
    ] {
        assert_eq!(
            cmd(line),
            Command::Control(ControlCommand::Register {
                local: Some(dir.to_owned())
            }),
            "{line}"
        );
    }
    for line in ["/control register local", "/control register --scope local"] {
        assert_eq!(
            err(line),
            "name the directory: /control register local DIR (alone, /control register registers for every directory)",
            "{line}"
        );
    }
    for line in [
        "/control register project",
        "/control register --scope project",
        "/control register --scope=Project",
    ] {
        assert_eq!(
            cmd(line),
            Command::Control(ControlCommand::RegisterProject),
            "{line}"
        );
    }
    // A first word that is not a scope names a grant.
    for (line, name, local) in [
        ("/control register bot", "bot", None),
        ("/control register bot user", "bot", None),
        (
            "/control register Bot-2 local ~/src/a",
            "Bot-2",
            Some("~/src/a"),
        ),
        ("/control register bot --scope=local /x", "bot", Some("/x")),
    ] {
        assert_eq!(
            cmd(line),
            Command::Control(ControlCommand::RegisterGrant {
                name: name.to_owned(),
                local: local.map(str::to_owned)
            }),
            "{line}"
        );
    }
    assert_eq!(
        cmd("/control register bot project"),
        Command::Control(ControlCommand::RegisterProject)
    );
    assert_eq!(
        err("/control register bot other"),
        format!("usage: {}", commands::spec::CONTROL.usage)
    );
    assert_eq!(
        cmd("/control grant add bot buffers=#rust*  tier=debug"),
        Command::Control(ControlCommand::GrantAdd(vec![
            "bot".into(),
            "buffers=#rust*".into(),
            "tier=debug".into()
        ]))
    );
    assert_eq!(
        cmd("/control Grant LIST"),
        Command::Control(ControlCommand::GrantList)
    );
    assert_eq!(
        cmd("/control grant revoke bot"),
        Command::Control(ControlCommand::GrantRevoke("bot".into()))
    );
    assert_eq!(
        err("/control grant add"),
        "name the grant: /control grant add NAME [networks=…] [buffers=…] [queries=on|off] [tier=read|debug|send] [expires=8h|never]"
    );
    assert_eq!(
        err("/control grant revoke"),
        "name one grant: /control grant revoke NAME"
    );
    assert_eq!(
        err("/control grant revoke a b"),
        "name one grant: /control grant revoke NAME"
    );
    for line in [
        "/control grant",
        "/control grant list all",
        "/control grant give x",
    ] {
        assert_eq!(
            err(line),
            "usage: /control grant add NAME [networks=…] [buffers=…] [queries=on|off] [tier=read|debug|send] [expires=8h|never] | list | revoke NAME",
            "{line}"
        );
    }
    assert_eq!(
        cmd("/control allow"),
        Command::Control(ControlCommand::Allow)
    );
    assert_eq!(cmd("/control DENY"), Command::Control(ControlCommand::Deny));
    let usage = format!("usage: {}", commands::spec::CONTROL.usage);
    for line in [
        // `everyone` alone names a grant (see above); after a grant's name
        // it is no scope.
        "/control register bot everyone",
        "/control register --scope",
        "/control register user x",
        "/control register project x",
        "/control register --scope=",
    ] {
        assert_eq!(err(line), usage, "{line}");
    }
    for line in [
        "/control",
        "/control foo",
        "/control token now",
        "/control status x",
        "/control log a b",
        "/control allow all",
    ] {
        assert_eq!(err(line), usage, "{line}");
    }
}

#[test]
fn every_listed_command_is_parsed_and_helped() {
    for spec in COMMANDS {
        if let Err(InputError::UnknownCommand(name)) = parse_input(&format!("/{}", spec.name)) {
            panic!("/{name} is in the table but not parsed");
        }
        let help = help_text(Some(spec.name));
        let first = help.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(spec.usage) && first.contains(spec.summary),
            "{help}"
        );
    }
}

#[test]
fn help_text_lists_one_line_per_command() {
    let all = help_text(None);
    assert_eq!(all.lines().count(), COMMANDS.len());
    for (line, spec) in all.lines().zip(COMMANDS) {
        assert!(line.starts_with(spec.usage), "{line}");
    }
    assert_eq!(help_text(Some("/JOIN")), help_text(Some("join")));
    assert!(help_text(Some("join")).starts_with("/join <channel> [key] "));
    assert_eq!(help_text(Some("frob")), "unknown command: /frob");
}

#[test]
fn help_for_a_command_gives_its_aliases_and_examples() {
    let join = help_text(Some("join"));
    let lines: Vec<&str> = join.lines().collect();
    assert!(lines[0].starts_with("/join <channel> [key] "), "{join}");
    assert_eq!(lines[1], "  also: /j");
    assert!(lines[2].starts_with("  /join #rete "), "{join}");
    assert!(lines[2].ends_with(" join #rete"), "{join}");
    let window = help_text(Some("window"));
    assert!(
        window.contains("also: /wc (/window close), /win"),
        "{window}"
    );
    // Every example parses.
    for (_, examples) in super::commands::EXAMPLES {
        for (typed, _) in *examples {
            assert!(parse_input(typed).is_ok(), "{typed}");
        }
    }
}

#[test]
fn errors_are_single_lines() {
    for line in ["/", "/foo\u{1b}[2J", "/set x\ny 1", "/join", "/buffer 0"] {
        let e = err(line);
        assert!(!e.contains(['\n', '\u{1b}']), "{e}");
    }
}

#[test]
fn client_commands() {
    let n = |i| BufferRef::Number(NonZeroUsize::new(i).unwrap());
    assert_eq!(cmd("/window 3"), Command::Buffer(n(3)));
    assert_eq!(
        cmd("/window #rete"),
        Command::Buffer(BufferRef::Name(s("#rete")))
    );
    assert_eq!(err("/window"), "usage: /window <number|name> | close");
    assert_eq!(
        cmd("/query bob hi there"),
        Command::Query {
            nick: s("bob"),
            text: Some(s("hi there"))
        }
    );
    assert_eq!(
        cmd("/query bob"),
        Command::Query {
            nick: s("bob"),
            text: None
        }
    );
    assert_eq!(err("/query"), "usage: /query <nick> [text]");
    assert_eq!(cmd("/close"), Command::Close);
    assert_eq!(err("/close now"), "usage: /close");
    assert_eq!(cmd("/clear"), Command::Clear);
    assert_eq!(
        cmd("/lastlog some text"),
        Command::Lastlog(Lastlog {
            text: s("some text"),
            last: None,
            case: false,
            regex: false
        })
    );
    assert_eq!(
        err("/lastlog"),
        "usage: /lastlog [-N] [-case] [-regex] <text>"
    );
    assert_eq!(cmd("/reconnect"), Command::Reconnect { network: None });
    assert_eq!(
        cmd("/reconnect libera"),
        Command::Reconnect {
            network: Some(s("libera"))
        }
    );
    assert_eq!(cmd("/ignore"), Command::Ignore(None));
    assert_eq!(cmd("/ignore *!*@h"), Command::Ignore(Some(s("*!*@h"))));
    assert_eq!(err("/ignore a b"), "usage: /ignore [mask]");
    assert_eq!(cmd("/unignore a"), Command::Unignore(s("a")));
    assert_eq!(cmd("/reload"), Command::Reload);
    assert_eq!(cmd("/raw"), Command::Raw { network: None });
    assert_eq!(
        cmd("/raw libera"),
        Command::Raw {
            network: Some("libera".into())
        }
    );
    assert_eq!(
        cmd("/op a b"),
        Command::Irc(IrcCommand::Rank {
            adding: true,
            mode: 'o',
            nicks: vec![s("a"), s("b")]
        })
    );
}

#[test]
fn display_settings() {
    assert_eq!(
        cmd("/set time_format %H:%M:%S"),
        Command::Set(Setting::TimeFormat(s("%H:%M:%S")))
    );
    assert_eq!(
        cmd("/set time_format %d %b %H:%M"),
        Command::Set(Setting::TimeFormat(s("%d %b %H:%M")))
    );
    assert_eq!(
        cmd("/set mirc_colours off"),
        Command::Set(Setting::MircColours(false))
    );
    assert_eq!(
        cmd("/set nicklist on"),
        Command::Set(Setting::Nicklist(true))
    );
    assert_eq!(
        cmd("/set highlights deploy,urgent"),
        Command::Set(Setting::Highlights(vec![s("deploy"), s("urgent")]))
    );
    assert_eq!(
        cmd("/set highlights none"),
        Command::Set(Setting::Highlights(vec![]))
    );
    assert_eq!(err("/set nicklist maybe"), "nicklist must be on or off");
}

#[test]
fn completion_offers_every_command() {
    let names = command_names();
    assert_eq!(names.len(), COMMANDS.len());
    assert!(names.iter().any(|n| n == "window") && names.iter().any(|n| n == "ignore"));
}

#[test]
fn cloud_settings_parse_into_protocol_entries_and_keep_passwords_secret() {
    use rete_cloud_protocol::config::{ConfigEntry, SaslMechanism};
    use rete_cloud_protocol::secret::Secret as CloudSecret;
    assert_eq!(
        cmd("/cloud nick rete2"),
        Command::Cloud(ConfigEntry::Nick(s("rete2")))
    );
    assert_eq!(
        cmd("/cloud realname Rete  for Rust"),
        Command::Cloud(ConfigEntry::Realname(s("Rete  for Rust")))
    );
    assert_eq!(
        cmd("/cloud channels #a,#b #c"),
        Command::Cloud(ConfigEntry::Channels(vec![s("#a"), s("#b"), s("#c")]))
    );
    assert_eq!(
        cmd("/cloud channels none"),
        Command::Cloud(ConfigEntry::Channels(vec![]))
    );
    assert_eq!(
        cmd("/cloud SASL_mechanism scram-sha-256"),
        Command::Cloud(ConfigEntry::SaslMechanism(Some(SaslMechanism::ScramSha256)))
    );
    assert_eq!(
        cmd("/cloud sasl-username none"),
        Command::Cloud(ConfigEntry::SaslUsername(None))
    );
    assert_eq!(
        cmd("/cloud sasl-password hunter2pw"),
        Command::Cloud(ConfigEntry::SaslPassword(Some(CloudSecret::new(
            "hunter2pw"
        ))))
    );
    assert_eq!(
        cmd("/cloud server-password none"),
        Command::Cloud(ConfigEntry::ServerPassword(None))
    );
    let debug = format!("{:?}", cmd("/cloud sasl-password hunter2pw"));
    assert!(!debug.contains("hunter2pw"), "{debug}");

    assert_eq!(err("/cloud"), "usage: /cloud <setting> <value>");
    assert_eq!(err("/cloud nick"), "usage: /cloud <setting> <value>");
    assert_eq!(
        err("/cloud nick two words"),
        "usage: /cloud <setting> <value>"
    );
    assert!(err("/cloud colour red").starts_with("unknown /cloud setting"));
    assert!(err("/cloud sasl-mechanism DIGEST-MD5").starts_with("sasl-mechanism is PLAIN"));
    // A password of two words is refused without echoing either.
    let e = err("/cloud sasl-password hunter2pw extra");
    assert!(!e.contains("hunter2pw") && !e.contains("extra"), "{e}");
}

#[test]
fn backlog_takes_a_number_of_rows_from_1_to_the_protocols_limit() {
    assert_eq!(cmd("/backlog"), Command::Backlog(50));
    assert_eq!(cmd("/backlog 1"), Command::Backlog(1));
    assert_eq!(cmd("/BACKLOG 500"), Command::Backlog(500));
    let why = "/backlog takes a number of rows from 1 to 500";
    for bad in [
        "/backlog 0",
        "/backlog 501",
        "/backlog abc",
        "/backlog -5",
        "/backlog 99999999999",
    ] {
        assert_eq!(err(bad), why, "{bad}");
    }
    assert_eq!(err("/backlog 5 more"), "usage: /backlog [rows]");
    assert!(help_text(Some("backlog")).contains("ReteCloud"));
}

#[test]
fn irssi_aliases_stand_for_their_commands() {
    for (alias, full) in [
        ("/j #rete key", "/join #rete key"),
        ("/J #rete", "/join #rete"),
        ("/win 3", "/window 3"),
        ("/win #rete", "/buffer #rete"),
        ("/wc", "/close"),
        ("/window close", "/close"),
        ("/q bob hi there", "/query bob hi there"),
        ("/wi bob", "/whois bob"),
        ("/leave #rete bye", "/part #rete bye"),
        ("/bye gone", "/quit gone"),
        ("/m bob hi", "/msg bob hi"),
        ("/t", "/topic"),
        ("/w #rete", "/who #rete"),
        ("/last -5 word", "/lastlog -5 word"),
    ] {
        assert_eq!(cmd(alias), cmd(full), "{alias}");
    }
    assert_eq!(err("/wc now"), "usage: /window <number|name> | close");
    assert_eq!(err("/j"), "usage: /join <channel> [key]");
}

#[test]
fn server_commands_and_ctcp_parse() {
    assert_eq!(
        cmd("/MOTD"),
        Command::Irc(IrcCommand::Server {
            verb: s("MOTD"),
            args: None
        })
    );
    assert_eq!(
        cmd("/stats u"),
        Command::Irc(IrcCommand::Server {
            verb: s("STATS"),
            args: Some(s("u"))
        })
    );
    assert_eq!(
        cmd("/ctcp bob version"),
        Command::Irc(IrcCommand::Ctcp {
            target: s("bob"),
            verb: s("VERSION"),
            args: None
        })
    );
    // Anything else unknown is still an error that sends nothing.
    assert_eq!(err("/frobnicate x"), "unknown command: /frobnicate");
}

#[test]
fn lastlog_takes_irssis_options() {
    let search = |line: &str| match cmd(line) {
        Command::Lastlog(search) => search,
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(
        search("/lastlog -5 -case Word up"),
        Lastlog {
            text: s("Word up"),
            last: Some(5),
            case: true,
            regex: false
        }
    );
    assert_eq!(
        search("/lastlog -CASE -- -5"),
        Lastlog {
            text: s("-5"),
            last: None,
            case: true,
            regex: false
        }
    );
    assert_eq!(search("/lastlog - x").text, "- x");
    assert_eq!(
        err("/lastlog -bogus a.b"),
        "lastlog options: -N (the last N rows), -case, -regex, -- (the text starts with -)"
    );
    assert_eq!(
        err("/lastlog -3"),
        "usage: /lastlog [-N] [-case] [-regex] <text>"
    );
    // -regex: the text is a regular expression, any case unless -case.
    let re = search("/lastlog -regex ^say h.llo");
    assert!(re.regex && re.matches("say HeLLo there"));
    assert!(!re.matches("they say hello"), "anchored");
    let re_case = search("/lastlog -regex -case h[ae]llo");
    assert!(re_case.matches("hallo") && !re_case.matches("HALLO"));
    assert_eq!(
        err("/lastlog -regex (unclosed"),
        "lastlog: the -regex text is not a regular expression"
    );
    let any = search("/lastlog hello");
    assert!(any.matches("say HELLO there"));
    let case = search("/lastlog -case hello");
    assert!(!case.matches("say HELLO there"));
    assert!(case.matches("say hello there"));
}

#[test]
fn the_persons_aliases_run_their_commands() {
    let aliases: std::collections::BTreeMap<String, String> = [
        ("hi", "msg #rete hello"),
        ("op2", "mode $* +o"),
        ("join", "part"),
    ]
    .into_iter()
    .map(|(a, b)| (s(a), s(b)))
    .collect();
    let with = |line: &str| parse_input_with(line, &aliases).unwrap();
    assert_eq!(with("/HI"), parse_input("/msg #rete hello").unwrap());
    assert_eq!(
        with("/hi there"),
        parse_input("/msg #rete hello there").unwrap()
    );
    assert_eq!(with("/op2 bob"), parse_input("/mode bob +o").unwrap());
    // reterm's own commands are never replaced.
    assert_eq!(with("/join #x"), parse_input("/join #x").unwrap());
    assert_eq!(with("hi"), Input::Text(s("hi")));
    assert_eq!(
        cmd("/alias hi /msg #rete hello"),
        Command::Alias {
            name: Some(s("hi")),
            expansion: Some(s("msg #rete hello"))
        }
    );
    assert_eq!(
        cmd("/alias"),
        Command::Alias {
            name: None,
            expansion: None
        }
    );
    assert_eq!(cmd("/alias -HI"), Command::Unalias(s("hi")));
    assert_eq!(cmd("/unalias hi"), Command::Unalias(s("hi")));
}

#[test]
fn server_add_remove_and_list() {
    assert_eq!(cmd("/server"), Command::Server(ServerCommand::List));
    assert_eq!(cmd("/network list"), Command::Server(ServerCommand::List));
    assert_eq!(
        cmd("/server add -tls libera irc.libera.chat"),
        Command::Server(ServerCommand::Add {
            name: s("libera"),
            host: s("irc.libera.chat"),
            port: 6697,
            tls: true,
            nick: None,
            autoconnect: false,
        })
    );
    assert_eq!(
        cmd("/server add oftc irc.oftc.net 6668 -nick me -auto"),
        Command::Server(ServerCommand::Add {
            name: s("oftc"),
            host: s("irc.oftc.net"),
            port: 6668,
            tls: false,
            nick: Some(s("me")),
            autoconnect: true,
        })
    );
    assert_eq!(
        cmd("/server remove oftc"),
        Command::Server(ServerCommand::Remove(s("oftc")))
    );
    assert!(err("/server add x").starts_with("usage: /server "));
    assert_eq!(
        err("/server add x h 0"),
        "the port is a number from 1 to 65535"
    );
}
