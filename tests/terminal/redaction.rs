//! A service login typed into `reterm` (the binary, as a real process against a real InspIRCd
//! with Atheme): `/msg NickServ IDENTIFY <password>` reaches NickServ in full, but is shown and
//! written to the transcript only as `IDENTIFY ********`.

use crate::RETERM;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use support::cli_tests_reterm::{all_files, parse_row, state_of, RetermProcess};
use support::{Atheme, Bot, Inspircd, InspircdConfig, Msg};
use tempfile::TempDir;
use tokio::time::Instant;

const NET: &str = "test";
/// reterm's nick, also its services account.
const NICK: &str = "rt";
const PASSWORD: &str = "Tr0ub4dor-and-3";
/// How long reterm gets for one expected line.
const WAIT: Duration = Duration::from_secs(15);
/// How long a transcript gets to show a line reterm has printed.
const FILE_WAIT: Duration = Duration::from_secs(5);
const EXIT_WAIT: Duration = Duration::from_secs(10);

fn home_with_config(port: u16) -> Result<TempDir> {
    let config = format!(
        "logging = true\n\n[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         nick = \"{NICK}\"\nchannels = [\"#rete\"]\nautoconnect = true\n"
    );
    let home = tempfile::Builder::new()
        .prefix("reterm-redaction-")
        .tempdir()?;
    let path = home.path().join(".rete").join("reterm.toml");
    fs::create_dir_all(path.parent().context("config dir")?)?;
    fs::write(&path, config)?;
    Ok(home)
}

/// Waits until the file at `path` holds a line equal to `line`; returns the whole file.
async fn wait_for_logged(path: &Path, line: &str) -> Result<String> {
    let deadline = Instant::now() + FILE_WAIT;
    loop {
        if let Ok(text) = fs::read_to_string(path) {
            if text.lines().any(|l| l == line) {
                return Ok(text);
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "{} never held {line:?}; it holds:\n{}",
                path.display(),
                fs::read_to_string(path).unwrap_or_else(|e| format!("(unreadable: {e})"))
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/msg NickServ IDENTIFY <password>`: NickServ identifies us (WHOIS shows the account, and
/// NickServ says so), while the screen and every transcript show only `IDENTIFY ********`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_is_masked_on_screen_and_in_transcripts_but_reaches_nickserv() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new().services()).await?;
    let atheme = Atheme::start(&ircd).await?;
    atheme
        .register_account(NICK, PASSWORD)
        .await
        .with_context(|| atheme.log())?;

    let home = home_with_config(ircd.port())?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("connected"), WAIT)
        .await?;

    reterm
        .send(&format!("/msg NickServ IDENTIFY {PASSWORD}"))
        .await?;
    let shown = reterm
        .wait_for_line(
            |l| {
                parse_row(l).is_some_and(|r| {
                    r.network == NET
                        && r.buffer.eq_ignore_ascii_case("NickServ")
                        && r.body == format!("<{NICK}> IDENTIFY ********")
                })
            },
            WAIT,
        )
        .await?;
    // NickServ's answer proves it got the real password (it may have been printed already).
    let identified = |l: &str| l.contains("You are now identified");
    if !reterm.lines().iter().any(|l| identified(l)) {
        reterm
            .wait_for_line(identified, WAIT)
            .await
            .with_context(|| atheme.log())?;
    }

    // And the server agrees: a WHOIS of us names our account (330 RPL_WHOISACCOUNT).
    let mut bot = Bot::connect(ircd.port(), "watcher").await?;
    bot.send(&format!("WHOIS {NICK}")).await?;
    let account = bot
        .wait_for(|l| Msg::parse(l).command == "330", WAIT)
        .await?;
    let m = Msg::parse(&account);
    assert_eq!(m.param(1), NICK, "{account}");
    assert_eq!(m.param(2), NICK, "{account}");

    // The query buffer's transcript holds the masked line, as printed.
    let logs = home.path().join(".rete").join("logs");
    let query_log = fs::read_dir(logs.join(NET))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.eq_ignore_ascii_case("NickServ.log"))
        });
    let query_log = match query_log {
        Some(p) => p,
        None => logs.join(NET).join("NickServ.log"),
    };
    wait_for_logged(&query_log, &shown).await?;

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    // The password appears nowhere: not on stdout, not on stderr, not in any transcript.
    for line in &exited.stdout {
        ensure!(!line.contains(PASSWORD), "stdout shows the password");
        if line.contains("IDENTIFY") {
            ensure!(line.contains("IDENTIFY ********"), "unmasked: {line:?}");
        }
    }
    ensure!(
        !exited.stderr.contains(PASSWORD),
        "stderr shows the password"
    );
    let files = all_files(&logs)?;
    ensure!(!files.is_empty(), "no transcripts at all");
    for (path, text) in &files {
        ensure!(
            !text.contains(PASSWORD),
            "{} holds the password",
            path.display()
        );
    }
    Ok(())
}
