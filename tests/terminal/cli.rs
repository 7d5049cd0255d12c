//! End-to-end tests of the `reterm` binary: a real process, driven through stdin and read from
//! stdout, against a real InspIRCd and raw-socket bots from `support`.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The harness re-exports more than these tests use.

use crate::RETERM;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use support::cli_tests_reterm::{
    clock_is_near_now, parse_row, reterm_command, row_matching, state_of, RetermProcess,
};
use support::{Bot, Inspircd, InspircdConfig, Msg};
use tempfile::TempDir;

/// The network name every test config uses.
const NET: &str = "test";
/// reterm's nick.
const NICK: &str = "rt";
/// How long reterm gets for one expected line (connecting includes InspIRCd's 1 Hz
/// registration timer).
const WAIT: Duration = Duration::from_secs(15);
/// How long a bot waits for a line from reterm: reterm paces its lines (a burst of 5, then one
/// every 2 s), so a line typed after a few others can take several seconds to go out.
const BOT_WAIT: Duration = Duration::from_secs(15);
/// How long a quitting reterm may take to exit (its QUIT grace is 2 s).
const EXIT_WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A config with one network `test` on `127.0.0.1:port`.
fn network_config(port: u16, channels: &[&str]) -> String {
    let channels = channels
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {port}\nnick = \"{NICK}\"\n\
         channels = [{channels}]\nautoconnect = true\n"
    )
}

/// `$HOME/.rete/reterm.toml`, where reterm looks without `--config`.
fn config_path(home: &Path) -> PathBuf {
    home.join(".rete").join("reterm.toml")
}

/// A fresh HOME holding `config` at the default path.
fn home_with_config(config: &str) -> Result<TempDir> {
    let home = tempfile::Builder::new().prefix("reterm-home-").tempdir()?;
    let path = config_path(home.path());
    fs::create_dir_all(path.parent().context("config dir")?)?;
    fs::write(&path, config)?;
    Ok(home)
}

/// Matches a row of `buffer` on the test network whose body is exactly `body`.
fn row_is<'a>(buffer: &'a str, body: &'a str) -> impl FnMut(&str) -> bool + 'a {
    row_matching(NET, buffer, move |b| b == body)
}

/// Matches a row of `buffer` on the test network whose body satisfies `body`.
fn row_where<'a>(
    buffer: &'a str,
    body: impl Fn(&str) -> bool + 'a,
) -> impl FnMut(&str) -> bool + 'a {
    row_matching(NET, buffer, body)
}

/// Our own JOIN of `channel` as reterm prints it (`--> rt (user@host) joined`).
fn own_join_row(channel: &str) -> impl FnMut(&str) -> bool + '_ {
    row_where(channel, |b| {
        b.starts_with(&format!("--> {NICK} ")) && b.ends_with(" joined")
    })
}

/// A server-buffer row saying a connection (attempt) ended.
fn is_disconnect_row(line: &str) -> bool {
    parse_row(line).is_some_and(|r| {
        r.network == NET && r.buffer == "(server)" && r.body.starts_with("-!- Disconnected: ")
    })
}

/// A line from `nick` with `command` whose first parameter is `target` (case-insensitive).
fn from_nick<'a>(
    nick: &'a str,
    command: &'a str,
    target: &'a str,
) -> impl FnMut(&str) -> bool + 'a {
    move |l| {
        let m = Msg::parse(l);
        m.source_nick() == Some(nick)
            && m.command == command
            && m.param(0).eq_ignore_ascii_case(target)
    }
}

/// A PRIVMSG from reterm to `target` with exactly `text`.
fn privmsg_from_reterm<'a>(target: &'a str, text: &'a str) -> impl FnMut(&str) -> bool + 'a {
    move |l| {
        let m = Msg::parse(l);
        m.source_nick() == Some(NICK)
            && m.command == "PRIVMSG"
            && m.param(0).eq_ignore_ascii_case(target)
            && m.param(1) == text
    }
}

/// What the server received from the client that registered as `nick`, from its raw I/O log
/// (lines look like `... USERINPUT: C[1RTAAAAAB] I PRIVMSG #rete marker`).
fn lines_received_from(log: &str, nick: &str) -> Result<Vec<String>> {
    let inputs: Vec<(&str, &str)> = log
        .lines()
        .filter_map(|l| l.split_once("USERINPUT: C[")?.1.split_once("] I "))
        .collect();
    let client = inputs
        .iter()
        .find(|(_, line)| *line == format!("NICK {nick}"))
        .map(|(client, _)| *client)
        .with_context(|| format!("no client registered as {nick} in the server log"))?;
    Ok(inputs
        .iter()
        .filter(|(c, _)| *c == client)
        .map(|(_, line)| (*line).to_owned())
        .collect())
}

/// One entry of `/buffers`: `N. [network] name (kind)[ *]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    number: usize,
    label: String,
    current: bool,
}

fn parse_listed(line: &str) -> Option<Listed> {
    let (number, rest) = line.split_once(". ")?;
    let number = number.parse().ok()?;
    let (label, current) = match rest.strip_suffix(" *") {
        Some(label) => (label, true),
        None => (rest, false),
    };
    Some(Listed {
        number,
        label: label.to_owned(),
        current,
    })
}

/// Runs `/buffers` and returns its entries (a `/help buffers` after it marks the end).
async fn list_buffers(reterm: &mut RetermProcess) -> Result<Vec<Listed>> {
    reterm.send("/buffers").await?;
    reterm.send("/help buffers").await?;
    let lines = reterm
        .collect_until(|l| l.starts_with("/buffers "), WAIT)
        .await?;
    Ok(lines.iter().filter_map(|l| parse_listed(l)).collect())
}

/// A running InspIRCd, a bot `bot` in `#rete`, and reterm connected and in `#rete` (which it
/// joined from its config and focused).
struct Session {
    ircd: Inspircd,
    _home: TempDir,
    reterm: RetermProcess,
    bot: Bot,
}

async fn start_session() -> Result<Session> {
    start_session_with(InspircdConfig::new()).await
}

async fn start_session_with(server: InspircdConfig) -> Result<Session> {
    let ircd = Inspircd::start(server).await?;
    let mut bot = Bot::connect(ircd.port(), "bot").await?;
    bot.join("#rete").await?;
    let home = home_with_config(&network_config(ircd.port(), &["#rete"]))?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("connected"), WAIT)
        .await?;
    // Printed after the buffer opened, so the focus has moved to #rete by now.
    reterm.wait_for_line(own_join_row("#rete"), WAIT).await?;
    bot.wait_for(from_nick(NICK, "JOIN", "#rete"), BOT_WAIT)
        .await
        .context("the bot did not see reterm join #rete")?;
    Ok(Session {
        ircd,
        _home: home,
        reterm,
        bot,
    })
}

// ---------------------------------------------------------------------------------------------
// 1. Command line
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn help_version_and_unknown_flag() -> Result<()> {
    let home = tempfile::tempdir()?;

    let help = reterm_command(RETERM, home.path(), &["--help"])
        .output()
        .await?;
    assert_eq!(help.status.code(), Some(0), "--help: {help:?}");
    let text = String::from_utf8(help.stdout)?;
    assert!(text.starts_with("usage: reterm [--config PATH]"), "{text}");
    assert!(text.contains("--version"), "{text}");

    let version = reterm_command(RETERM, home.path(), &["--version"])
        .output()
        .await?;
    assert_eq!(version.status.code(), Some(0), "--version: {version:?}");
    assert_eq!(
        String::from_utf8(version.stdout)?,
        format!("reterm {}\n", env!("CARGO_PKG_VERSION"))
    );

    let bad = reterm_command(RETERM, home.path(), &["--frobnicate"])
        .output()
        .await?;
    assert_eq!(bad.status.code(), Some(2), "unknown flag: {bad:?}");
    let err = String::from_utf8(bad.stderr)?;
    assert!(
        err.starts_with("reterm: unknown argument: --frobnicate\n"),
        "{err}"
    );
    assert!(err.contains("usage: reterm"), "{err}");
    assert!(bad.stdout.is_empty());

    let missing = reterm_command(RETERM, home.path(), &["--config"])
        .output()
        .await?;
    assert_eq!(
        missing.status.code(),
        Some(2),
        "--config without path: {missing:?}"
    );

    // None of these may touch HOME.
    assert_eq!(fs::read_dir(home.path())?.count(), 0, "HOME was written to");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. First run
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn first_run_creates_a_private_config_from_the_template() -> Result<()> {
    let home = tempfile::tempdir()?;
    // stdin is closed: end of input quits right after start-up.
    let out = reterm_command(RETERM, home.path(), &[]).output().await?;
    let stdout = String::from_utf8(out.stdout)?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let path = config_path(home.path());
    assert!(
        stdout.lines().any(|l| l
            == format!(
                "Created {} — add a [[networks]] table, then /connect NAME",
                path.display()
            )),
        "{stdout}"
    );
    let dir_mode = fs::metadata(path.parent().context("dir")?)?
        .permissions()
        .mode()
        & 0o777;
    let file_mode = fs::metadata(&path)?.permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700, "~/.rete mode {dir_mode:o}");
    assert_eq!(file_mode, 0o600, "reterm.toml mode {file_mode:o}");

    // The template, plus the id generated for its example network.
    let text = fs::read_to_string(&path)?;
    let id_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("id = ")).collect();
    assert_eq!(id_lines.len(), 1, "{text}");
    let without_id: String = text
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("id = "))
        .collect();
    assert_eq!(without_id, reterm::config::template());
    // The example network is not autoconnected: nothing was dialled.
    assert!(!stdout.contains("-!- connecting"), "{stdout}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 3. Bad config files
// ---------------------------------------------------------------------------------------------

/// Runs reterm on a config that must be refused; returns stderr after checking the exit code
/// and that nothing was created or changed.
async fn refused_config(config: &str) -> Result<String> {
    let home = home_with_config(config)?;
    let out = reterm_command(RETERM, home.path(), &[]).output().await?;
    let stderr = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let path = config_path(home.path());
    assert_eq!(
        fs::read_to_string(&path)?,
        config,
        "the bad config was rewritten"
    );
    let in_dir: Vec<_> = fs::read_dir(path.parent().context("dir")?)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    assert_eq!(in_dir, ["reterm.toml"], "files next to the config");
    let in_home: Vec<_> = fs::read_dir(home.path())?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    assert_eq!(in_home, [".rete"], "files in HOME");
    Ok(stderr.replace(&path.display().to_string(), "PATH"))
}

/// `PATH:line:col: ` at the start of `stderr` (after `reterm: `): returns (line, col).
fn position(stderr: &str) -> Option<(usize, usize)> {
    let rest = stderr.strip_prefix("reterm: PATH:")?;
    let mut parts = rest.splitn(3, ':');
    let line = parts.next()?.parse().ok()?;
    let col = parts.next()?.parse().ok()?;
    parts.next()?.starts_with(' ').then_some((line, col))
}

#[tokio::test]
async fn malformed_config_exits_1_naming_the_position() -> Result<()> {
    let config = "[control]\nport = 7422\n\n[[networks]\nname = \"x\"\n";
    let stderr = refused_config(config).await?;
    let (line, col) = position(&stderr).with_context(|| format!("no position in: {stderr}"))?;
    assert_eq!(line, 4, "{stderr}");
    assert!(col >= 1, "{stderr}");
    Ok(())
}

#[tokio::test]
async fn unknown_key_exits_1_naming_the_position() -> Result<()> {
    let config =
        "[[networks]]\nname = \"x\"\nhost = \"127.0.0.1\"\nnick = \"n\"\ncolour = \"blue\"\n";
    let stderr = refused_config(config).await?;
    assert_eq!(position(&stderr), Some((5, 1)), "{stderr}");
    assert!(stderr.contains("colour"), "{stderr}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 4. A session
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn session_channels_queries_and_buffers() -> Result<()> {
    let Session {
        ircd: _ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session().await?;

    // Plain text goes to the focused channel.
    reterm.send("hello from reterm").await?;
    bot.wait_for(privmsg_from_reterm("#rete", "hello from reterm"), BOT_WAIT)
        .await?;
    reterm
        .wait_for_line(row_is("#rete", "<rt> hello from reterm"), WAIT)
        .await?;

    // The bot's message, with network, buffer, time, nick and text.
    bot.privmsg("#rete", "hello from bot").await?;
    let line = reterm
        .wait_for_line(|l| l.ends_with("<bot> hello from bot"), WAIT)
        .await?;
    let row = parse_row(&line).with_context(|| format!("not a row: {line}"))?;
    assert_eq!(
        (row.network, row.buffer, row.body),
        (NET, "#rete", "<bot> hello from bot")
    );
    assert!(!row.history, "{line}");
    assert!(
        clock_is_near_now(row.clock, Duration::from_secs(10)),
        "time in {line}"
    );
    // Our own line came back (echo-message) before the bot's: it was printed exactly once.
    let own = reterm
        .lines()
        .iter()
        .filter(|l| l.ends_with("<rt> hello from reterm"))
        .count();
    assert_eq!(own, 1, "own line printed {own} times");

    // /msg opens a query; the bot's reply lands in it.
    reterm.send("/msg bot hi").await?;
    bot.wait_for(privmsg_from_reterm("bot", "hi"), BOT_WAIT)
        .await?;
    reterm.wait_for_line(row_is("bot", "<rt> hi"), WAIT).await?;
    bot.privmsg(NICK, "psst").await?;
    reterm
        .wait_for_line(row_is("bot", "<bot> psst"), WAIT)
        .await?;

    // /me goes to the focused channel (still #rete: /msg does not move the focus).
    reterm.send("/me waves").await?;
    bot.wait_for(
        privmsg_from_reterm("#rete", "\u{1}ACTION waves\u{1}"),
        BOT_WAIT,
    )
    .await?;
    reterm
        .wait_for_line(row_is("#rete", "* rt waves"), WAIT)
        .await?;

    // /join moves the focus to the new channel.
    bot.join("#second").await?;
    reterm.send("/join #second").await?;
    bot.wait_for(from_nick(NICK, "JOIN", "#second"), BOT_WAIT)
        .await?;
    reterm.wait_for_line(own_join_row("#second"), WAIT).await?;
    reterm.send("in second").await?;
    bot.wait_for(privmsg_from_reterm("#second", "in second"), BOT_WAIT)
        .await?;

    // /part leaves the focused channel.
    reterm.send("/part").await?;
    bot.wait_for(from_nick(NICK, "PART", "#second"), BOT_WAIT)
        .await?;
    reterm
        .wait_for_line(row_where("#second", |b| b.starts_with("<-- rt left")), WAIT)
        .await?;

    // /buffers: numbered from 1, every buffer once, the focused one marked.
    let listed = list_buffers(&mut reterm).await?;
    let numbers: Vec<usize> = listed.iter().map(|b| b.number).collect();
    assert_eq!(
        numbers,
        (1..=listed.len()).collect::<Vec<_>>(),
        "{listed:?}"
    );
    let labels: Vec<&str> = listed.iter().map(|b| b.label.as_str()).collect();
    for want in [
        "[test] #rete (channel)",
        "[test] #second (channel)",
        "[test] bot (query)",
    ] {
        assert_eq!(
            labels.iter().filter(|l| **l == want).count(),
            1,
            "{want} in {labels:?}"
        );
    }
    assert_eq!(
        labels.iter().filter(|l| l.ends_with(" (server)")).count(),
        1,
        "{labels:?}"
    );
    let marked: Vec<&str> = listed
        .iter()
        .filter(|b| b.current)
        .map(|b| b.label.as_str())
        .collect();
    assert_eq!(marked, ["[test] #second (channel)"], "{listed:?}");

    // /buffer N switches to entry N.
    reterm.send("/buffer 1").await?;
    reterm
        .wait_for_line(|l| l == format!("-!- now in {}", listed[0].label), WAIT)
        .await?;
    let rete = listed
        .iter()
        .find(|b| b.label == "[test] #rete (channel)")
        .context("#rete listed")?;
    reterm.send(&format!("/buffer {}", rete.number)).await?;
    reterm
        .wait_for_line(|l| l == "-!- now in [test] #rete (channel)", WAIT)
        .await?;
    reterm.send("back in rete").await?;
    bot.wait_for(privmsg_from_reterm("#rete", "back in rete"), BOT_WAIT)
        .await?;

    // /nick: the bot sees the change, reterm says so.
    reterm.send("/nick newname").await?;
    let nick = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.source_nick() == Some(NICK) && m.command == "NICK"
            },
            BOT_WAIT,
        )
        .await?;
    assert_eq!(Msg::parse(&nick).param(0), "newname", "{nick}");
    reterm
        .wait_for_line(|l| l == format!("[{NET}] -!- you are now newname"), WAIT)
        .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 5. Bad input
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn bad_input_is_an_error_and_sends_nothing() -> Result<()> {
    // The server logs every line it receives, so "sent nothing" covers lines no bot would see.
    let Session {
        ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session_with(InspircdConfig::new().raw_io_log()).await?;

    reterm.send("/frobnicate").await?;
    reterm
        .wait_for_line(|l| l == "error: unknown command: /frobnicate", WAIT)
        .await?;
    reterm.send("/join").await?;
    reterm
        .wait_for_line(|l| l == "error: usage: /join <channel> [key]", WAIT)
        .await?;

    // Text in the server buffer is refused.
    let listed = list_buffers(&mut reterm).await?;
    let server = listed
        .iter()
        .find(|b| b.label.ends_with(" (server)"))
        .context("server buffer listed")?;
    reterm.send(&format!("/buffer {}", server.number)).await?;
    reterm
        .wait_for_line(|l| l == format!("-!- now in {}", server.label), WAIT)
        .await?;
    reterm.send("into the void").await?;
    reterm
        .wait_for_line(
            |l| l == "error: this is the server buffer: /join a channel or /buffer one to talk",
            WAIT,
        )
        .await?;

    // A marker through #rete: everything the bot got from reterm before it must be nothing.
    reterm.send("/buffer #rete").await?;
    reterm
        .wait_for_line(|l| l == "-!- now in [test] #rete (channel)", WAIT)
        .await?;
    reterm.send("marker").await?;
    let seen = bot
        .collect_until(privmsg_from_reterm("#rete", "marker"), BOT_WAIT)
        .await?;
    let from_reterm: Vec<&String> = seen
        .iter()
        .filter(|l| Msg::parse(l).source_nick() == Some(NICK))
        .collect();
    assert_eq!(
        from_reterm.len(),
        1,
        "the bot saw from reterm: {from_reterm:?}"
    );
    let sent = lines_received_from(&ircd.log(), NICK)?;
    assert!(sent.iter().any(|l| l == "PRIVMSG #rete marker"), "{sent:?}");
    let joins: Vec<&String> = sent.iter().filter(|l| l.starts_with("JOIN")).collect();
    assert_eq!(joins, ["JOIN #rete"], "{sent:?}");
    let stray: Vec<&String> = sent
        .iter()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("frobnicate") || l.contains("void")
        })
        .collect();
    assert!(stray.is_empty(), "sent: {stray:?}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 6. Server restart
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn survives_a_server_restart() -> Result<()> {
    let Session {
        mut ircd,
        _home,
        mut reterm,
        bot,
    } = start_session().await?;

    ircd.stop();
    drop(bot);
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("disconnected"), WAIT)
        .await?;
    let reconnecting = reterm
        .wait_for_line(
            |l| state_of(l, NET).is_some_and(|s| s.starts_with("reconnecting")),
            WAIT,
        )
        .await?;
    assert_reconnect_line(&reconnecting);
    // Three failed attempts while the server is down push the next retry 4-8 s out, so the
    // new bot is in #rete before reterm comes back and sees its JOIN (not only NAMES).
    let mut failures = reterm
        .lines()
        .iter()
        .filter(|l| is_disconnect_row(l))
        .count();
    while failures < 4 {
        reterm.wait_for_line(is_disconnect_row, WAIT).await?;
        failures += 1;
    }
    assert!(
        reterm.is_running(),
        "reterm exited while the server was down"
    );

    ircd.restart().await?;
    let mut bot = Bot::connect(ircd.port(), "bot").await?;
    bot.join("#rete").await?;
    reterm
        .wait_for_line(
            |l| state_of(l, NET) == Some("connected"),
            Duration::from_secs(30),
        )
        .await?;
    reterm.wait_for_line(own_join_row("#rete"), WAIT).await?;
    bot.wait_for(from_nick(NICK, "JOIN", "#rete"), BOT_WAIT)
        .await
        .context("the bot did not see reterm rejoin #rete")?;

    // Messages flow both ways again, in the same (still focused) #rete buffer.
    bot.privmsg("#rete", "welcome back").await?;
    reterm
        .wait_for_line(row_is("#rete", "<bot> welcome back"), WAIT)
        .await?;
    reterm.send("glad to be back").await?;
    bot.wait_for(privmsg_from_reterm("#rete", "glad to be back"), BOT_WAIT)
        .await?;
    Ok(())
}

/// A reconnecting line says when (now) and the wait before the next
/// attempt, in whole seconds within the session's backoff.
fn assert_reconnect_line(line: &str) {
    let clock = line.get(NET.len() + 3..NET.len() + 11).unwrap_or_default();
    assert!(clock_is_near_now(clock, Duration::from_secs(120)), "{line}");
    let secs: u64 = state_of(line, NET)
        .and_then(|s| s.strip_prefix("reconnecting in "))
        .and_then(|s| s.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no delay in {line:?}"));
    assert!((1..=300).contains(&secs), "{line}");
}

// ---------------------------------------------------------------------------------------------
// 7. Unreachable server
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn unreachable_server_is_reported_and_retried() -> Result<()> {
    // A loopback port nothing listens on: connecting is refused at once.
    let port = support::ports::free_port()?;
    let home = home_with_config(&network_config(port, &["#rete"]))?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;

    let first = reterm.wait_for_line(is_disconnect_row, WAIT).await?;
    let reason = parse_row(&first)
        .and_then(|r| r.body.strip_prefix("-!- Disconnected: "))
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.to_ascii_lowercase().contains("refused"),
        "reason does not say why: {first}"
    );
    let reconnecting = reterm
        .wait_for_line(
            |l| state_of(l, NET).is_some_and(|s| s.starts_with("reconnecting")),
            WAIT,
        )
        .await?;
    assert_reconnect_line(&reconnecting);
    // A second attempt fails the same way: reterm keeps trying.
    let second = reterm.wait_for_line(is_disconnect_row, WAIT).await?;
    assert!(second.to_ascii_lowercase().contains("refused"), "{second}");
    assert!(reterm.is_running(), "reterm exited");
    assert!(
        !reterm
            .lines()
            .iter()
            .any(|l| state_of(l, NET) == Some("connected")),
        "connected to nothing?"
    );

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 8. Secret messages
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn smsg_reaches_the_bot_but_is_never_shown() -> Result<()> {
    let Session {
        ircd: _ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session().await?;

    reterm.send("/smsg bot secret-text").await?;
    bot.wait_for(privmsg_from_reterm("bot", "secret-text"), BOT_WAIT)
        .await?;
    reterm
        .wait_for_line(row_is("bot", "<rt> ********"), WAIT)
        .await?;
    // The bot's reply comes after the echo of the secret: everything about it is printed.
    bot.privmsg(NICK, "got it").await?;
    reterm
        .wait_for_line(row_is("bot", "<bot> got it"), WAIT)
        .await?;

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    let shown: Vec<&String> = exited
        .stdout
        .iter()
        .filter(|l| l.contains("secret-text"))
        .collect();
    assert!(shown.is_empty(), "secret shown: {shown:?}");
    assert!(!exited.stderr.contains("secret-text"), "secret on stderr");
    let masked = exited
        .stdout
        .iter()
        .filter(|l| l.ends_with("<rt> ********"))
        .count();
    assert_eq!(masked, 1, "masked line printed {masked} times");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 9. /set and /control
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn set_persists_control_settings_and_control_reports_off() -> Result<()> {
    let home = tempfile::tempdir()?;
    let path = config_path(home.path());
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| l.starts_with("Created "), WAIT)
        .await?;
    let created = fs::read_to_string(&path)?;
    let original_port = "port = 7422       # the port on 127.0.0.1";
    ensure!(
        created.contains(original_port),
        "template changed? {created}"
    );

    // Out of range: clamped, said so, saved (the line's comment kept).
    reterm.send("/set control.port 99999").await?;
    reterm
        .wait_for_line(
            |l| l == "control.port is 65535 (clamped to 1024…65535)",
            WAIT,
        )
        .await?;
    let clamped = fs::read_to_string(&path)?;
    assert_eq!(
        clamped,
        created.replace(original_port, "port = 65535       # the port on 127.0.0.1")
    );
    let mode = fs::metadata(&path)?.permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode after /set {mode:o}");

    // Not a number: an error, the file untouched.
    reterm.send("/set control.port abc").await?;
    reterm
        .wait_for_line(|l| l == "error: control.port must be a number", WAIT)
        .await?;
    assert_eq!(fs::read_to_string(&path)?, clamped);

    // control.send lasts only while reterm runs: never written.
    reterm.send("/set control.send on").await?;
    reterm
        .wait_for_line(|l| l == "control.send is on until reterm quits", WAIT)
        .await?;
    assert_eq!(fs::read_to_string(&path)?, clamped);

    reterm.send("/control status").await?;
    reterm
        .wait_for_line(|l| l == "AI access is off — /set control.enabled on", WAIT)
        .await?;

    // control.approve is saved (its comment kept); with nothing waiting the answers say so.
    let original_approve = "approve = false   # ask me before each line an agent sends";
    ensure!(
        clamped.contains(original_approve),
        "template changed? {clamped}"
    );
    reterm.send("/set control.approve maybe").await?;
    reterm
        .wait_for_line(|l| l == "error: control.approve must be on or off", WAIT)
        .await?;
    reterm.send("/set control.approve on").await?;
    reterm
        .wait_for_line(|l| l == "control.approve is on", WAIT)
        .await?;
    let approving = clamped.replace(
        original_approve,
        "approve = true   # ask me before each line an agent sends",
    );
    assert_eq!(fs::read_to_string(&path)?, approving);
    for command in ["/control allow", "/control deny"] {
        reterm.send(command).await?;
        reterm
            .wait_for_line(|l| l == "-!- no AI access line waits for approval", WAIT)
            .await?;
    }

    reterm.close_stdin();
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    let last = fs::read_to_string(&path)?;
    assert_eq!(last, approving);
    // No `send` key anywhere (the template's comments may mention the switch).
    assert!(
        !last.lines().any(|l| l.trim_start().starts_with("send")),
        "{last}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 10. /quit
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn quit_sends_the_reason_and_exits_0() -> Result<()> {
    let Session {
        ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session_with(InspircdConfig::new().raw_io_log()).await?;

    reterm.send("/quit bye").await?;
    let quit = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.source_nick() == Some(NICK) && m.command == "QUIT"
            },
            BOT_WAIT,
        )
        .await?;
    assert_eq!(Msg::parse(&quit).param(0), "bye", "{quit}");
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    let sent = lines_received_from(&ircd.log(), NICK)?;
    let quits: Vec<&String> = sent.iter().filter(|l| l.starts_with("QUIT")).collect();
    assert_eq!(quits, ["QUIT bye"], "{sent:?}");
    Ok(())
}

#[tokio::test]
async fn end_of_input_quits_the_networks_and_exits_0() -> Result<()> {
    let Session {
        ircd: _ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session().await?;

    reterm.close_stdin();
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.source_nick() == Some(NICK) && m.command == "QUIT"
        },
        BOT_WAIT,
    )
    .await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    Ok(())
}

/// `/quit` right after more lines than the flood burst allows still delivers the paced
/// lines and the quit reason: once QUIT is queued, what is queued goes out unpaced.
#[tokio::test]
async fn quit_right_after_a_burst_still_delivers_the_burst_and_the_reason() -> Result<()> {
    let Session {
        ircd: _ircd,
        _home,
        mut reterm,
        mut bot,
    } = start_session().await?;

    let texts: Vec<String> = (1..=8).map(|i| format!("line {i}")).collect();
    for text in &texts {
        reterm.send(text).await?;
    }
    reterm.send("/quit bye").await?;
    for text in &texts {
        bot.wait_for(privmsg_from_reterm("#rete", text), BOT_WAIT)
            .await?;
    }
    let quit = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.source_nick() == Some(NICK) && m.command == "QUIT"
            },
            BOT_WAIT,
        )
        .await?;
    assert_eq!(Msg::parse(&quit).param(0), "bye", "{quit}");
    let exited = reterm.wait_exit(Duration::from_secs(30)).await?;
    assert!(exited.status.success(), "{exited:?}");
    Ok(())
}
