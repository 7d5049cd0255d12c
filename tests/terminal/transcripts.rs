//! Transcripts (`logging = true`) of the `reterm` binary, run as a real process against a real
//! InspIRCd: which lines reach `~/.rete/logs/<network>/<buffer>.log`, with which modes, and
//! which never do (masked secrets, `/control` answers, reterm's own output).

// The harness re-exports more than these tests use.

use crate::RETERM;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use support::cli_tests_reterm::{all_files, parse_row, state_of, RetermProcess};
use support::ports::free_port;
use support::{Bot, Inspircd, InspircdConfig, Msg};
use tempfile::TempDir;
use tokio::time::Instant;

/// The network name of most test configs.
const NET: &str = "test";
/// reterm's nick.
const NICK: &str = "rt";
/// How long reterm gets for one expected line (connecting includes InspIRCd's 1 Hz
/// registration timer).
const WAIT: Duration = Duration::from_secs(15);
/// How long a transcript gets to show a line reterm has printed.
const FILE_WAIT: Duration = Duration::from_secs(5);
/// How long a quitting reterm may take to exit (its QUIT grace is 2 s).
const EXIT_WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A config with one network `net` on `127.0.0.1:port`, joining `channels`; `top` goes before
/// the network table (top-level keys and other tables).
fn config(top: &str, net: &str, port: u16, channels: &[&str]) -> String {
    let channels = channels
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{top}\n[[networks]]\nname = \"{net}\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         nick = \"{NICK}\"\nchannels = [{channels}]\nautoconnect = true\n"
    )
}

/// A fresh HOME holding `config` at `~/.rete/reterm.toml`.
fn home_with_config(config: &str) -> Result<TempDir> {
    let home = tempfile::Builder::new()
        .prefix("reterm-transcripts-")
        .tempdir()?;
    let path = home.path().join(".rete").join("reterm.toml");
    fs::create_dir_all(path.parent().context("config dir")?)?;
    fs::write(&path, config)?;
    Ok(home)
}

fn logs_dir(home: &Path) -> PathBuf {
    home.join(".rete").join("logs")
}

/// The permission bits of `path`, in octal (`"600"`).
fn mode(path: &Path) -> Result<String> {
    let bits = fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .permissions()
        .mode()
        & 0o777;
    Ok(format!("{bits:o}"))
}

/// Matches a row of `buffer` on `net` whose body is exactly `body`.
fn row_on<'a>(net: &'a str, buffer: &'a str, body: &'a str) -> impl FnMut(&str) -> bool + 'a {
    move |l| parse_row(l).is_some_and(|r| r.network == net && r.buffer == buffer && r.body == body)
}

/// Our own JOIN of `channel` on `net`, as reterm prints it.
fn own_join<'a>(net: &'a str, channel: &'a str) -> impl FnMut(&str) -> bool + 'a {
    move |l| {
        parse_row(l).is_some_and(|r| {
            r.network == net
                && r.buffer == channel
                && r.body.starts_with(&format!("--> {NICK} "))
                && r.body.ends_with(" joined")
        })
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

/// Polls `check` every 50 ms until it returns `Some` or `timeout` passes.
async fn eventually<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the file at `path` holds a line equal to `line`; returns the whole file.
async fn wait_for_logged(path: &Path, line: &str) -> Result<String> {
    let found = eventually(FILE_WAIT, || {
        let text = fs::read_to_string(path).ok()?;
        text.lines().any(|l| l == line).then_some(text)
    })
    .await;
    match found {
        Some(text) => Ok(text),
        None => bail!(
            "{} never held {line:?}; it holds:\n{}",
            path.display(),
            fs::read_to_string(path).unwrap_or_else(|e| format!("(unreadable: {e})"))
        ),
    }
}

/// A running InspIRCd, a bot in `channel`, and reterm (with `top` in its config) connected on
/// network `net` and in `channel`.
struct Session {
    _ircd: Inspircd,
    home: TempDir,
    reterm: RetermProcess,
    bot: Bot,
}

async fn start_session(top: &str, net: &str, channel: &str) -> Result<Session> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bot = Bot::connect(ircd.port(), "bot").await?;
    bot.join(channel).await?;
    let home = home_with_config(&config(top, net, ircd.port(), &[channel]))?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, net) == Some("connected"), WAIT)
        .await?;
    reterm.wait_for_line(own_join(net, channel), WAIT).await?;
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.source_nick() == Some(NICK) && m.command == "JOIN"
        },
        WAIT,
    )
    .await
    .context("the bot did not see reterm join")?;
    Ok(Session {
        _ircd: ircd,
        home,
        reterm,
        bot,
    })
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// A bot's message and our own line land in `#rete.log` as the very lines printed, every line
/// there is a printed row of #rete, and the files and directories are private.
#[tokio::test]
async fn channel_rows_land_in_the_channel_transcript_with_private_modes() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start_session("logging = true", NET, "#rete").await?;

    bot.privmsg("#rete", "hello from bot").await?;
    let theirs = reterm
        .wait_for_line(row_on(NET, "#rete", "<bot> hello from bot"), WAIT)
        .await?;
    reterm.send("our own line").await?;
    let ours = reterm
        .wait_for_line(row_on(NET, "#rete", "<rt> our own line"), WAIT)
        .await?;

    let logs = logs_dir(home.path());
    let chan_log = logs.join(NET).join("#rete.log");
    wait_for_logged(&chan_log, &theirs).await?;
    let text = wait_for_logged(&chan_log, &ours).await?;
    let printed = reterm.lines().to_vec();
    for line in text.lines() {
        ensure!(
            parse_row(line).is_some_and(|r| r.network == NET && r.buffer == "#rete"),
            "not a #rete row in the transcript: {line:?}"
        );
        ensure!(
            printed.iter().any(|p| p == line),
            "transcript line never printed: {line:?}"
        );
    }
    // The join came before both messages, and order is kept.
    let lines: Vec<&str> = text.lines().collect();
    let at = |want: &str| lines.iter().position(|l| *l == want);
    ensure!(at(&theirs) < at(&ours), "{lines:?}");
    ensure!(
        lines.iter().any(|l| own_join(NET, "#rete")(l)),
        "own join missing: {lines:?}"
    );

    // The server buffer has its own transcript, with its rows only.
    let server_log = logs.join(NET).join("(server).log");
    let server = eventually(FILE_WAIT, || fs::read_to_string(&server_log).ok())
        .await
        .context("no (server).log")?;
    ensure!(
        server
            .lines()
            .all(|l| parse_row(l).is_some_and(|r| r.buffer == "(server)")),
        "{server}"
    );

    assert_eq!(mode(&chan_log)?, "600", "#rete.log");
    assert_eq!(mode(&server_log)?, "600", "(server).log");
    assert_eq!(mode(&logs.join(NET))?, "700", "network dir");
    assert_eq!(mode(&logs)?, "700", "logs dir");

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");
    Ok(())
}

/// `/smsg` text is written only as `********`; `/control token`, `/control status`, `/help`
/// and `/buffers` answers are never written, whether AI access could start or (as root) not.
#[tokio::test]
async fn secrets_and_reterm_answers_never_reach_a_transcript() -> Result<()> {
    let top = format!(
        "logging = true\n\n[control]\nenabled = true\nport = {}\n",
        free_port()?
    );
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start_session(&top, NET, "#rete").await?;

    reterm.send("/smsg bot secret-text").await?;
    bot.wait_for(privmsg_from_reterm("bot", "secret-text"), WAIT)
        .await?;
    let masked = reterm
        .wait_for_line(row_on(NET, "bot", "<rt> ********"), WAIT)
        .await?;
    let bot_log = logs_dir(home.path()).join(NET).join("bot.log");
    wait_for_logged(&bot_log, &masked).await?;

    // The answer is the connect command with the token, or why AI access is off (as root).
    reterm.send("/control token").await?;
    let answer = reterm
        .wait_for_line(
            |l| {
                l.starts_with("claude mcp add ")
                    || l.starts_with("AI access is not available")
                    || l.starts_with("AI access is off")
            },
            WAIT,
        )
        .await?;
    reterm.send("/control status").await?;
    reterm.send("/buffers").await?;
    reterm.send("/help").await?;
    reterm.send("/nosuchcommand").await?;
    let error = reterm
        .wait_for_line(|l| l.starts_with("error: "), WAIT)
        .await?;
    // A row after the answers: once it is in the transcript, anything written before it is too.
    bot.privmsg("#rete", "after the answers").await?;
    let after = reterm
        .wait_for_line(row_on(NET, "#rete", "<bot> after the answers"), WAIT)
        .await?;
    wait_for_logged(&logs_dir(home.path()).join(NET).join("#rete.log"), &after).await?;

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    let not_rows: Vec<&String> = exited
        .stdout
        .iter()
        .filter(|l| parse_row(l).is_none() && !l.trim().is_empty())
        .collect();
    ensure!(not_rows.iter().any(|l| **l == answer), "{not_rows:?}");
    let files = all_files(&logs_dir(home.path()))?;
    ensure!(!files.is_empty(), "no transcripts at all");
    for (path, text) in &files {
        ensure!(
            !text.contains("secret-text"),
            "{} holds the secret",
            path.display()
        );
        for line in text.lines() {
            ensure!(
                parse_row(line).is_some(),
                "{} holds a line that is not a row: {line:?}",
                path.display()
            );
        }
        // Every line is a row (checked above), so none of reterm's own answers is there; and
        // no long word of the token answer (the token itself) hides inside a row either.
        for word in answer.split_whitespace().filter(|w| w.len() >= 16) {
            ensure!(!text.contains(word), "{} holds {word:?}", path.display());
        }
        ensure!(!text.contains(&error), "{}", path.display());
    }
    let bot_text = fs::read_to_string(&bot_log)?;
    assert_eq!(
        bot_text
            .lines()
            .filter(|l| l.ends_with("<rt> ********"))
            .count(),
        1,
        "{bot_text}"
    );
    Ok(())
}

/// Without `logging` in the config nothing is written and no logs directory appears.
#[tokio::test]
async fn logging_off_by_default_creates_no_logs_directory() -> Result<()> {
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start_session("", NET, "#rete").await?;

    bot.privmsg("#rete", "nobody logs this").await?;
    reterm
        .wait_for_line(row_on(NET, "#rete", "<bot> nobody logs this"), WAIT)
        .await?;
    reterm.send("said, not logged").await?;
    reterm
        .wait_for_line(row_on(NET, "#rete", "<rt> said, not logged"), WAIT)
        .await?;
    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    let rete_dir: Vec<String> = fs::read_dir(home.path().join(".rete"))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert_eq!(rete_dir, ["reterm.toml"]);
    Ok(())
}

/// A network named `../up` and a channel `#x/../../y` stay one directory and one file inside
/// the logs directory, with `/` and the leading `.` encoded.
#[tokio::test]
async fn names_with_path_characters_stay_inside_the_logs_directory() -> Result<()> {
    let net = "../up";
    let channel = "#x/../../y";
    let Session {
        _ircd,
        home,
        mut reterm,
        mut bot,
    } = start_session("logging = true", net, channel).await?;

    bot.privmsg(channel, "escape attempt").await?;
    let line = reterm
        .wait_for_line(row_on(net, channel, "<bot> escape attempt"), WAIT)
        .await?;
    let net_dir = logs_dir(home.path()).join("%2E.%2Fup");
    wait_for_logged(&net_dir.join("#x%2F..%2F..%2Fy.log"), &line).await?;

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    // Everything in HOME is the config or a transcript in the network's own directory.
    let config = home.path().join(".rete").join("reterm.toml");
    for (path, _) in all_files(home.path())? {
        ensure!(
            path == config || path.parent() == Some(net_dir.as_path()),
            "written outside the network's logs directory: {}",
            path.display()
        );
    }
    // Nothing next to HOME either (a `..` resolved against the logs directory's parents).
    let parent = home.path().parent().context("home has a parent")?;
    ensure!(!parent.join("up").exists() && !parent.join("y.log").exists());
    Ok(())
}

/// A transcript that cannot be written is reported once per file, that buffer's transcript
/// stops, and reterm carries on.
#[tokio::test]
async fn an_unwritable_transcript_is_reported_once_and_reterm_carries_on() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bot = Bot::connect(ircd.port(), "bot").await?;
    bot.join("#rete").await?;
    let home = home_with_config(&config("logging = true", NET, ircd.port(), &["#rete"]))?;
    // A plain file where the network's directory should be.
    let logs = logs_dir(home.path());
    fs::create_dir_all(&logs)?;
    fs::write(logs.join(NET), "not a directory")?;

    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm.wait_for_line(own_join(NET, "#rete"), WAIT).await?;
    for i in 0..3 {
        let text = format!("message {i}");
        bot.privmsg("#rete", &text).await?;
        reterm
            .wait_for_line(row_on(NET, "#rete", &format!("<bot> {text}")), WAIT)
            .await?;
    }
    reterm.send("still here").await?;
    reterm
        .wait_for_line(row_on(NET, "#rete", "<rt> still here"), WAIT)
        .await?;
    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    let errors: Vec<&String> = exited
        .stdout
        .iter()
        .filter(|l| l.starts_with("error: transcript "))
        .collect();
    let about = |file: &str| errors.iter().filter(|l| l.contains(file)).count();
    assert_eq!(about("#rete.log"), 1, "{errors:?}");
    assert_eq!(about("(server).log"), 1, "{errors:?}");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(fs::read_to_string(logs.join(NET))?, "not a directory");
    Ok(())
}
