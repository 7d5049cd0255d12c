//! Bugs found by using reterm as a new user would, each pinned by a test: a real reterm
//! process in line mode (stdin commands, stdout lines) against a real InspIRCd and
//! raw-socket bots.

use crate::RETERM;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use support::cli_tests_reterm::{parse_row, reterm_command, row_matching, state_of, RetermProcess};
use support::{Bot, Inspircd, InspircdConfig, Msg};
use tempfile::TempDir;

const NET: &str = "test";
const NICK: &str = "rt";
const WAIT: Duration = Duration::from_secs(15);

fn home_with(config: &str) -> Result<TempDir> {
    let home = tempfile::Builder::new().prefix("reterm-fixes-").tempdir()?;
    let dir = home.path().join(".rete");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("reterm.toml"), config)?;
    Ok(home)
}

fn network(port: u16, channels: &str, extra: &str) -> String {
    format!(
        "{extra}[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {port}\nnick = \"{NICK}\"\n\
         channels = [{channels}]\nautoconnect = true\n"
    )
}

/// A row of `buffer` whose body satisfies `body`.
fn row_where<'a>(
    buffer: &'a str,
    body: impl Fn(&str) -> bool + 'a,
) -> impl FnMut(&str) -> bool + 'a {
    row_matching(NET, buffer, body)
}

/// Waits until `bot` sees us send `command` with `param` first.
async fn ours(bot: &mut Bot, command: &str, param: &str) -> Result<String> {
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == command && m.source_nick() == Some(NICK) && m.param(0) == param
        },
        WAIT,
    )
    .await
}

struct Session {
    _ircd: Inspircd,
    home: TempDir,
    reterm: RetermProcess,
    bot: Bot,
}

/// InspIRCd, a bot `bot` in #rete (an op there, having joined first), and reterm in #rete.
async fn start(extra: &str) -> Result<Session> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bot = Bot::connect(ircd.port(), "bot").await?;
    bot.join("#rete").await?;
    let home = home_with(&network(ircd.port(), "\"#rete\"", extra))?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| {
                b.starts_with("--> rt ") && b.ends_with(" joined")
            }),
            WAIT,
        )
        .await?;
    Ok(Session {
        _ircd: ircd,
        home,
        reterm,
        bot,
    })
}

/// `/quote TOPIC #c` and `/quote NAMES #c` are answered with state the engine keeps rather
/// than rows; reterm shows the answer (they printed nothing).
#[tokio::test]
async fn quoted_topic_and_names_are_shown() -> Result<()> {
    let Session {
        _ircd,
        home: _home,
        mut reterm,
        mut bot,
    } = start("").await?;
    bot.send("TOPIC #rete :the rete topic").await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "-!- bot set the topic: the rete topic"),
            WAIT,
        )
        .await?;
    reterm.send("/quote TOPIC #rete").await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "-!- topic: the rete topic (set by bot)"),
            WAIT,
        )
        .await?;
    reterm.send("/quote NAMES #rete").await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "-!- 2 nicks: 1 op, 1 normal"),
            WAIT,
        )
        .await?;
    let columns = reterm
        .lines()
        .iter()
        .any(|l| parse_row(l).is_some_and(|r| r.body == "-!- [@bot] [rt  ]"));
    ensure!(columns, "no names columns: {:#?}", reterm.lines());
    // The /topic and /names commands do the same.
    reterm.send("/topic").await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "-!- topic: the rete topic (set by bot)"),
            WAIT,
        )
        .await?;
    reterm.send("/names").await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "-!- 2 nicks: 1 op, 1 normal"),
            WAIT,
        )
        .await?;
    Ok(())
}

/// Text typed in a channel reterm was kicked from is refused, not sent.
#[tokio::test]
async fn text_after_a_kick_is_refused_and_not_sent() -> Result<()> {
    let Session {
        _ircd,
        home: _home,
        mut reterm,
        mut bot,
    } = start("").await?;
    bot.send(&format!("KICK #rete {NICK} :out")).await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b.starts_with("<-- rt was kicked by bot")),
            WAIT,
        )
        .await?;
    reterm.send("still here?").await?;
    reterm
        .wait_for_line(|l| l == "error: not in #rete — /join #rete", WAIT)
        .await?;
    reterm.send("/msg bot sentinel").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "sentinel", WAIT)
        .await?;
    ensure!(!seen.iter().any(|l| l.contains("still here?")), "{seen:#?}");
    Ok(())
}

/// `/connect` while connected and `/disconnect` while disconnected say that they do nothing.
#[tokio::test]
async fn commands_that_do_nothing_say_so() -> Result<()> {
    let Session {
        _ircd,
        home: _home,
        mut reterm,
        bot: _bot,
    } = start("").await?;
    reterm.send(&format!("/connect {NET}")).await?;
    reterm
        .wait_for_line(|l| l == format!("-!- {NET} is already connected"), WAIT)
        .await?;
    reterm.send("/disconnect").await?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("disconnected"), WAIT)
        .await?;
    reterm.send("/disconnect").await?;
    reterm
        .wait_for_line(|l| l == format!("-!- {NET} is not connected"), WAIT)
        .await?;
    Ok(())
}

/// A password a service echoes back after a login reterm masked is masked in what reterm
/// prints and writes to the transcript for that session.
#[tokio::test]
async fn a_password_a_service_echoes_is_masked() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        bot: _bot,
    } = start("logging = true\n").await?;
    let mut nickserv = Bot::connect(_ircd.port(), "NickServ").await?;
    reterm
        .send("/msg NickServ REGISTER hunter2pw e@example.org")
        .await?;
    let got = nickserv
        .wait_for(|l| Msg::parse(l).command == "PRIVMSG", WAIT)
        .await?;
    ensure!(
        Msg::parse(&got).param(1) == "REGISTER hunter2pw e@example.org",
        "{got}"
    );
    nickserv
        .send(&format!(
            "NOTICE {NICK} :Nickname rt registered with the password hunter2pw."
        ))
        .await?;
    let line = reterm
        .wait_for_line(|l| l.contains("registered with the password"), WAIT)
        .await?;
    ensure!(
        line.ends_with("-NickServ- Nickname rt registered with the password ********."),
        "{line}"
    );
    ensure!(
        !reterm.lines().iter().any(|l| l.contains("hunter2pw")),
        "{:#?}",
        reterm.lines()
    );
    // The transcript holds the masked line, never the password.
    let log = home
        .path()
        .join(".rete/logs")
        .join(NET)
        .join("NickServ.log");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = fs::read_to_string(&log).unwrap_or_default();
        if text.contains("registered with the password") {
            ensure!(!text.contains("hunter2pw"), "{text}");
            break;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "no transcript line in {}",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `--config` in a directory that does not exist is refused; only `~/.rete` is ever created.
#[tokio::test]
async fn config_in_a_missing_directory_is_refused() -> Result<()> {
    let home = tempfile::tempdir()?;
    let path = home.path().join("no/such/dir/x.toml");
    let out = reterm_command(
        RETERM,
        home.path(),
        &["--config", path.to_str().context("path")?],
    )
    .output()
    .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.code() == Some(1),
        "status {:?}, stderr {stderr}",
        out.status
    );
    ensure!(stderr.contains("does not exist"), "{stderr}");
    ensure!(
        !home.path().join("no").exists(),
        "the directory tree was created"
    );
    ensure!(!exists(&path), "the file was created");
    Ok(())
}

fn exists(path: &Path) -> bool {
    path.exists()
}

/// A transcript says when it was opened: its first line this run is `log opened` with the
/// date, shaped as a row of its buffer (and printed like one).
#[tokio::test]
async fn a_transcript_opens_with_the_date() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start("logging = true\n").await?;
    bot.privmsg("#rete", "dated").await?;
    reterm
        .wait_for_line(row_where("#rete", |b| b == "<bot> dated"), WAIT)
        .await?;
    let log = home.path().join(".rete/logs").join(NET).join("#rete.log");
    let deadline = tokio::time::Instant::now() + WAIT;
    let text = loop {
        let text = fs::read_to_string(&log).unwrap_or_default();
        if text.contains("<bot> dated") {
            break text;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "no transcript at {}",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let first = text.lines().next().unwrap_or_default();
    let today = chrono::Utc::now().format("%A, %-d %B %Y").to_string();
    let row = parse_row(first).with_context(|| format!("not a row: {first}"))?;
    ensure!(
        row.buffer == "#rete" && row.body == format!("-!- log opened {today}"),
        "{first}"
    );
    ensure!(
        reterm.lines().iter().any(|l| l == first),
        "not printed: {first}"
    );
    ensure!(text.matches("log opened").count() == 1, "{text}");
    Ok(())
}

/// `/ignore` hides a nick's messages, is saved in the config, and `/unignore` undoes it.
#[tokio::test]
async fn ignore_hides_and_is_saved() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start("").await?;
    reterm.send("/ignore bot").await?;
    reterm
        .wait_for_line(|l| l == "-!- ignoring bot!*@* (saved)", WAIT)
        .await?;
    let config = fs::read_to_string(home.path().join(".rete/reterm.toml"))?;
    ensure!(config.contains("ignores = [\"bot\"]"), "{config}");
    bot.privmsg("#rete", "hidden words").await?;
    // A later event from the bot (a part is not ignored) shows the message was skipped.
    bot.send("PART #rete :bye").await?;
    reterm
        .wait_for_line(row_where("#rete", |b| b.starts_with("<-- bot left")), WAIT)
        .await?;
    ensure!(
        !reterm.lines().iter().any(|l| l.contains("hidden words")),
        "{:#?}",
        reterm.lines()
    );
    reterm.send("/unignore bot").await?;
    reterm
        .wait_for_line(|l| l == "-!- no longer ignoring bot!*@* (saved)", WAIT)
        .await?;
    let config = fs::read_to_string(home.path().join(".rete/reterm.toml"))?;
    ensure!(!config.contains("ignores"), "{config}");
    bot.privmsg(NICK, "shown again").await?;
    reterm
        .wait_for_line(row_where("bot", |b| b == "<bot> shown again"), WAIT)
        .await?;
    // A restart reads the list back.
    reterm.send("/ignore *!*@127.0.0.1").await?;
    reterm
        .wait_for_line(|l| l.starts_with("-!- ignoring *!*@127.0.0.1"), WAIT)
        .await?;
    reterm.send("/reload").await?;
    reterm
        .wait_for_line(|l| l.starts_with("-!- reloaded "), WAIT)
        .await?;
    reterm.send("/ignore").await?;
    reterm
        .wait_for_line(|l| l == "-!- ignoring *!*@127.0.0.1", WAIT)
        .await?;
    Ok(())
}

/// `/close` leaves the channel and drops its buffer from the list; `/lastlog` finds rows.
#[tokio::test]
async fn close_and_lastlog() -> Result<()> {
    let Session {
        _ircd,
        home: _home,
        mut reterm,
        mut bot,
    } = start("").await?;
    bot.privmsg("#rete", "the needle is here").await?;
    bot.privmsg("#rete", "nothing to see").await?;
    reterm
        .wait_for_line(row_where("#rete", |b| b == "<bot> nothing to see"), WAIT)
        .await?;
    reterm.send("/lastlog NEEDLE").await?;
    reterm
        .wait_for_line(|l| l == "-!- lastlog: 1 rows contain NEEDLE", WAIT)
        .await?;
    reterm
        .wait_for_line(
            row_where("#rete", |b| b == "<bot> the needle is here"),
            WAIT,
        )
        .await?;
    reterm.send("/close").await?;
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PART" && m.source_nick() == Some(NICK)
        },
        WAIT,
    )
    .await?;
    reterm
        .wait_for_line(|l| l == "-!- closed #rete", WAIT)
        .await?;
    reterm.send("/buffers").await?;
    reterm.send("/help buffers").await?;
    let listed = reterm
        .collect_until(|l| l.starts_with("/buffers "), WAIT)
        .await?;
    ensure!(
        !listed.iter().any(|l| l.contains("#rete (channel)")),
        "{listed:#?}"
    );
    ensure!(
        listed.iter().any(|l| l.contains("(server) *")),
        "{listed:#?}"
    );
    Ok(())
}

/// Display settings set with `/set` are saved in `[display]` and read back by `/reload`; a bad
/// time format is refused and changes nothing.
#[tokio::test]
async fn display_settings_are_saved() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        bot: _bot,
    } = start("").await?;
    let path = home.path().join(".rete/reterm.toml");
    reterm.send("/set nicklist off").await?;
    reterm
        .wait_for_line(|l| l == "nicklist is off", WAIT)
        .await?;
    reterm.send("/set time_format %H:%M:%S").await?;
    reterm
        .wait_for_line(|l| l == "time_format is %H:%M:%S", WAIT)
        .await?;
    let before = fs::read_to_string(&path)?;
    ensure!(before.contains("[display]"), "{before}");
    ensure!(before.contains("nicklist = false"), "{before}");
    ensure!(before.contains("time_format = \"%H:%M:%S\""), "{before}");
    reterm.send("/set time_format %Q").await?;
    reterm
        .wait_for_line(
            |l| l.starts_with("error: time_format: not a valid strftime format"),
            WAIT,
        )
        .await?;
    ensure!(
        fs::read_to_string(&path)? == before,
        "a refused setting changed the file"
    );
    // The saved file still loads.
    reterm.send("/reload").await?;
    reterm
        .wait_for_line(|l| l.starts_with("-!- reloaded "), WAIT)
        .await?;
    Ok(())
}

/// irssi's habits (issue 36): `/lastlog -N` and `-case`, the aliases `/j` and `/wc`, a server
/// command passed as typed (`/version`) and `/ctcp`.
#[tokio::test]
async fn lastlog_options_aliases_server_commands_and_ctcp() -> Result<()> {
    let Session {
        _ircd,
        home: _home,
        mut reterm,
        mut bot,
    } = start("").await?;
    for text in ["needle one", "Needle two", "needle three"] {
        bot.privmsg("#rete", text).await?;
    }
    reterm
        .wait_for_line(row_where("#rete", |b| b == "<bot> needle three"), WAIT)
        .await?;
    reterm.send("/lastlog -case needle").await?;
    reterm
        .wait_for_line(|l| l == "-!- lastlog: 2 rows contain needle", WAIT)
        .await?;
    reterm.send("/lastlog -1 NEEDLE").await?;
    reterm
        .wait_for_line(
            |l| l == "-!- lastlog: the last 1 of 3 rows that contain NEEDLE",
            WAIT,
        )
        .await?;
    let shown = reterm
        .wait_for_line(|l| parse_row(l).is_some() || l.starts_with("-!-"), WAIT)
        .await?;
    ensure!(shown.ends_with("<bot> needle three"), "{shown}");

    reterm.send("/ctcp bot version").await?;
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG" && m.param(1) == "\u{1}VERSION\u{1}"
        },
        WAIT,
    )
    .await?;
    // The server's answer to VERSION (351) comes back: the line went out as typed.
    reterm.send("/version").await?;
    reterm
        .wait_for_line(|l| l.contains("InspIRCd"), WAIT)
        .await?;

    bot.join("#habit").await?;
    reterm.send("/j #habit").await?;
    ours(&mut bot, "JOIN", "#habit").await?;
    reterm.send("/win #habit").await?;
    reterm.send("/wc").await?;
    ours(&mut bot, "PART", "#habit").await?;
    reterm
        .wait_for_line(|l| l == "-!- closed #habit", WAIT)
        .await?;
    Ok(())
}

/// `/alias NAME COMMAND` (issue 36): saved to the config's `[aliases]`, `/NAME words` runs the
/// command with the words after it, and `/unalias` forgets it, in the file too.
#[tokio::test]
async fn aliases_are_saved_and_run() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start("").await?;
    let config = home.path().join(".rete").join("reterm.toml");
    reterm.send("/alias hi msg #rete hello").await?;
    reterm
        .wait_for_line(|l| l == "-!- /hi = /msg #rete hello (saved)", WAIT)
        .await?;
    let text = fs::read_to_string(&config)?;
    ensure!(
        text.contains("[aliases]\nhi = \"msg #rete hello\"\n"),
        "{text}"
    );
    reterm.send("/hi everyone").await?;
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG" && m.param(1) == "hello everyone"
        },
        WAIT,
    )
    .await?;
    reterm.send("/alias join part").await?;
    reterm
        .wait_for_line(
            |l| l == "error: /join is a reterm command: an alias cannot replace it",
            WAIT,
        )
        .await?;
    reterm.send("/unalias hi").await?;
    reterm
        .wait_for_line(|l| l == "-!- /hi forgotten (saved)", WAIT)
        .await?;
    ensure!(!fs::read_to_string(&config)?.contains("[aliases]"));
    reterm.send("/hi").await?;
    reterm
        .wait_for_line(|l| l == "error: unknown command: /hi", WAIT)
        .await?;
    Ok(())
}

/// `/server add` saves a network to the config and starts it (issue 36); `/server` lists the
/// networks; `/server remove` takes it out of the file again.
#[tokio::test]
async fn server_add_list_and_remove() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        bot: _bot,
    } = start("").await?;
    let config = home.path().join(".rete").join("reterm.toml");
    let port = _ircd.port();
    reterm
        .send(&format!(
            "/server add -auto -nick rt2 other 127.0.0.1 {port}"
        ))
        .await?;
    reterm
        .wait_for_line(|l| l == "-!- added network other", WAIT)
        .await?;
    let text = fs::read_to_string(&config)?;
    ensure!(
        text.contains(&format!(
            "name = \"other\"\nhost = \"127.0.0.1\"\nport = {port}\nnick = \"rt2\"\nautoconnect = true\n"
        )),
        "{text}"
    );
    // It connects: its server buffer greets rt2.
    reterm
        .wait_for_line(|l| l.starts_with("[other]") && l.contains("Welcome"), WAIT)
        .await?;
    reterm.send("/server").await?;
    reterm
        .wait_for_line(
            |l| l == format!("-!- other: 127.0.0.1:{port}, nick rt2, autoconnect"),
            WAIT,
        )
        .await?;
    reterm.send("/server add other 127.0.0.1").await?;
    reterm
        .wait_for_line(|l| l == "error: there is a network other already", WAIT)
        .await?;
    reterm.send("/server remove other").await?;
    reterm
        .wait_for_line(|l| l.starts_with("-!- other removed from the config"), WAIT)
        .await?;
    ensure!(!fs::read_to_string(&config)?.contains("\"other\""));
    Ok(())
}

/// Issue 36: `/reload` reported a changed nick, channel list or realname as
/// "applied when reterm restarts". Now it asks for the nick at once, joins
/// and parts at once, and registers with the new realname at the next
/// connection; a changed server still waits for a restart, and says so.
#[tokio::test]
async fn reload_applies_nick_channels_and_login_to_the_running_network() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start("").await?;
    bot.join("#more").await?;
    let path = home.path().join(".rete/reterm.toml");
    let text = fs::read_to_string(&path)?;
    let edited = text
        .replace(
            &format!("nick = \"{NICK}\""),
            "nick = \"rt2\"\nrealname = \"New Name\"",
        )
        .replace(
            "channels = [\"#rete\"]",
            "channels = [\"#rete\", \"#more\"]",
        )
        .replace("host = \"127.0.0.1\"", "host = \"localhost\"");
    ensure!(
        edited.matches("rt2").count() == 1
            && edited.contains("#more")
            && edited.contains("localhost"),
        "{text}"
    );
    fs::write(&path, &edited)?;
    reterm.send("/reload").await?;
    // The channels are set before the nick.
    ours(&mut bot, "JOIN", "#more").await?;
    ours(&mut bot, "NICK", "rt2").await?;
    let said = reterm
        .collect_until(|l| l.starts_with("-!- reloaded "), WAIT)
        .await?;
    ensure!(
        said.iter().any(|l| l
            == "-!- test: applied the nick, the channels, the login (from the next connection)"),
        "{said:#?}"
    );
    ensure!(
        said.iter()
            .any(|l| l == "-!- changed in the file, applied when reterm restarts: test (server)"),
        "{said:#?}"
    );
    // The realname is the next connection's.
    reterm.send("/reconnect").await?;
    reterm
        .wait_for_line(
            row_where("#more", |b| {
                b.starts_with("--> rt2 ") && b.ends_with(" joined")
            }),
            WAIT,
        )
        .await?;
    bot.send("WHOIS rt2").await?;
    let whois = bot
        .wait_for(|l| Msg::parse(l).command == "311", WAIT)
        .await?;
    ensure!(Msg::parse(&whois).param(5) == "New Name", "{whois}");
    Ok(())
}
