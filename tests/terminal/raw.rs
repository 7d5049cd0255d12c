//! `/raw` in `reterm` (the binary, line mode, against a real InspIRCd with Atheme): it prints
//! the session's lines out (`>>`: our NICK and USER) and in (`<<`: the 001 welcome), masked at
//! the source, so `/msg NickServ IDENTIFY <password>` shows there as `********` — and the raw
//! lines are never written to a transcript. In full screen `/raw` opens the network's raw
//! buffer, drawn like any other.

use crate::RETERM;
use std::fs;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use support::cli_tests_reterm::{all_files, state_of, RetermProcess};
use support::pty_reterm::PtyReterm;
use support::{Atheme, Inspircd, InspircdConfig};
use tempfile::TempDir;

const NET: &str = "test";
/// reterm's nick, also its services account.
const NICK: &str = "rt";
const PASSWORD: &str = "c0rrect-h0rse-b4ttery";
/// How long reterm gets for one expected line.
const WAIT: Duration = Duration::from_secs(15);
const EXIT_WAIT: Duration = Duration::from_secs(10);
/// What `/raw` prints before each line.
const RAW_PREFIX: &str = "-!- raw test ";

fn home_with_config(port: u16) -> Result<TempDir> {
    let config = format!(
        "logging = true\n\n[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         nick = \"{NICK}\"\nchannels = [\"#rete\"]\nautoconnect = true\n"
    );
    let home = tempfile::Builder::new().prefix("reterm-raw-").tempdir()?;
    let path = home.path().join(".rete").join("reterm.toml");
    fs::create_dir_all(path.parent().context("config dir")?)?;
    fs::write(&path, config)?;
    Ok(home)
}

/// The command of a raw line received (`<< [@tags] :prefix COMMAND …`).
fn received_command(raw: &str) -> Option<&str> {
    let mut words = raw.strip_prefix("<< ")?.split(' ');
    let mut word = words.next()?;
    if word.starts_with('@') {
        word = words.next()?;
    }
    if word.starts_with(':') {
        word = words.next()?;
    }
    Some(word)
}

/// Sends `/raw`, then a `/raw` of a network that does not exist: commands run in order, so
/// the error marks the end of the first answer. Returns the raw lines (prefix removed).
async fn raw_lines(reterm: &mut RetermProcess) -> Result<Vec<String>> {
    reterm.send("/raw").await?;
    reterm.send("/raw nosuchnet").await?;
    let batch = reterm
        .collect_until(|l| l.contains("no network named nosuchnet"), WAIT)
        .await?;
    Ok(batch
        .iter()
        .filter_map(|l| l.strip_prefix(RAW_PREFIX))
        .filter(|l| l.starts_with("<< ") || l.starts_with(">> "))
        .map(str::to_owned)
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_shows_lines_in_and_out_masked_and_never_in_a_transcript() -> Result<()> {
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

    // Registration: our NICK and USER out, the server's 001 in.
    let raw = raw_lines(&mut reterm).await?;
    ensure!(
        raw.iter().any(|l| l == &format!(">> NICK {NICK}")),
        "no NICK out in {raw:#?}"
    );
    ensure!(
        raw.iter()
            .any(|l| l.starts_with(&format!(">> USER {NICK} "))),
        "no USER out in {raw:#?}"
    );
    ensure!(
        raw.iter().any(|l| received_command(l) == Some("001")),
        "no 001 in in {raw:#?}"
    );
    let nick_at = raw.iter().position(|l| l.starts_with(">> NICK ")).unwrap();
    let welcome_at = raw
        .iter()
        .position(|l| received_command(l) == Some("001"))
        .unwrap();
    ensure!(nick_at < welcome_at, "not in order: {raw:#?}");

    // A service login: NickServ gets the password (it says we are identified), the raw
    // buffer shows it masked.
    reterm
        .send(&format!("/msg NickServ IDENTIFY {PASSWORD}"))
        .await?;
    reterm
        .wait_for_line(|l| l.contains("You are now identified"), WAIT)
        .await
        .with_context(|| atheme.log())?;
    let raw = raw_lines(&mut reterm).await?;
    ensure!(
        raw.iter()
            .any(|l| l == ">> PRIVMSG NickServ :IDENTIFY ********"),
        "no masked IDENTIFY in {raw:#?}"
    );
    ensure!(
        raw.iter()
            .any(|l| l.starts_with("<< ") && l.contains("You are now identified")),
        "no NickServ answer in {raw:#?}"
    );

    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    assert!(exited.status.success(), "{exited:?}");

    // The password appears nowhere: not on stdout, not on stderr, not in any file.
    for line in &exited.stdout {
        ensure!(
            !line.contains(PASSWORD),
            "stdout shows the password: {line:?}"
        );
    }
    ensure!(
        !exited.stderr.contains(PASSWORD),
        "stderr shows the password"
    );
    let logs = home.path().join(".rete").join("logs");
    let files = all_files(&logs)?;
    ensure!(!files.is_empty(), "no transcripts at all");
    for (path, text) in &files {
        ensure!(
            !text.contains(PASSWORD),
            "{} holds the password",
            path.display()
        );
        // No raw line reached a transcript: neither `/raw`'s output nor a bare wire line.
        for line in text.lines() {
            ensure!(
                !line.contains("-!- raw ")
                    && !line.contains(">> ")
                    && !line.contains("<< ")
                    && !line.contains(&format!("NICK {NICK}"))
                    && !line.contains(&format!("USER {NICK} ")),
                "{} holds a raw line: {line:?}",
                path.display()
            );
        }
    }
    for (path, _) in all_files(home.path())? {
        let text = String::from_utf8_lossy(&fs::read(&path)?).into_owned();
        ensure!(
            !text.contains(PASSWORD),
            "{} holds the password",
            path.display()
        );
    }
    Ok(())
}

/// Full screen: `/raw` opens the network's raw buffer as an entry of the numbered list,
/// titled as such, showing our NICK out and the 001 in; typed text there is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_screen_raw_opens_the_raw_buffer() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let home = tempfile::Builder::new()
        .prefix("reterm-raw-screen-")
        .tempdir()?;
    let dir = home.path().join(".rete");
    fs::create_dir_all(&dir)?;
    fs::write(
        dir.join("reterm.toml"),
        format!(
            "[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {}\n\
             nick = \"{NICK}\"\nchannels = [\"#rete\"]\nautoconnect = true\n",
            ircd.port()
        ),
    )?;
    // Tall and wide, so registration's lines fit on one screen.
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 120, 250)?;
    term.wait_screen("#rete focused", |rows| rows[0].starts_with("#rete"), WAIT)
        .await?;
    term.line("/raw")?;
    let rows = term
        .wait_screen(
            "the raw buffer with NICK out and 001 in",
            |rows| {
                rows[0].starts_with(&format!("{NET}: raw lines"))
                    && rows[rows.len() - 2].contains(&format!(":{NET}/raw]"))
                    && rows.iter().any(|r| r.contains(&format!(">> NICK {NICK}")))
                    && rows
                        .iter()
                        .any(|r| r.contains("<< ") && r.contains(&format!(" 001 {NICK} :Welcome")))
            },
            WAIT,
        )
        .await?;
    // Buffer 1 is reterm's, 2 the server, 3 #rete, 4 the raw buffer.
    let status = &rows[rows.len() - 2];
    ensure!(
        status.contains(&format!("[4:{NET}/raw]")),
        "status bar: {status:?}"
    );

    // It is a numbered buffer entry; text typed there goes nowhere.
    // A line sent from the raw buffer shows there, and the server's answer after it.
    term.line("/quote PING :live-check")?;
    term.wait_screen(
        "our PING and its PONG",
        |rows| {
            let ping = rows.iter().position(|r| r.contains(">> PING :live-check"));
            let pong = rows
                .iter()
                .position(|r| r.contains("<< ") && r.contains("PONG") && r.contains("live-check"));
            matches!((ping, pong), (Some(a), Some(b)) if a < b)
        },
        WAIT,
    )
    .await?;
    term.line("hello")?;
    term.wait_text("this is the raw buffer", WAIT).await?;
    term.line("/buffers")?;
    term.wait_text(&format!("[{NET}] raw (raw lines in and out)"), WAIT)
        .await?;

    // /raw focuses it again; /close takes it out of the list, back to the server buffer.
    term.line("/raw")?;
    term.wait_screen(
        "the raw buffer again",
        |rows| rows[rows.len() - 2].contains(&format!("[4:{NET}/raw]")),
        WAIT,
    )
    .await?;
    term.line("/close")?;
    term.wait_screen(
        "the server buffer after /close",
        |rows| rows[rows.len() - 2].contains(&format!("[2:{NET}/")),
        WAIT,
    )
    .await?;
    // It left the numbered list: 1 reterm, 2 the server, 3 #rete, and no 4.
    term.line("/buffer 4")?;
    term.wait_text("no such buffer: see /buffers", WAIT).await?;

    term.line("/quit")?;
    ensure!(
        term.wait_exit(EXIT_WAIT).await?,
        "reterm did not exit on /quit"
    );
    Ok(())
}
