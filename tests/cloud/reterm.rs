//! reterm (the binary, line mode) on a `transport = "retecloud"` network,
//! against real processes on loopback: reterm ↔ rete-cloud ↔ InspIRCd.
//! The token is set with `reterm retecloud-token` (read from stdin, never
//! printed, kept 0600 in the secrets file); rows arrive; our line reaches
//! IRC; `/smsg` is refused with one line and sends nothing; `/cloud`
//! changes the nick and the SASL password the service keeps, printing the
//! password nowhere; the service rotates the token while reterm is attached, reterm stores it, and a
//! restarted reterm attaches with it after the old one's grace ran out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::RETERM;
use anyhow::{ensure, Context, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;
use std::time::Duration;
use support::cli_tests_reterm::{all_files, reterm_command, state_of, RetermProcess};
use support::cloud::CloudWorld;
use tokio::io::AsyncWriteExt as _;

const NET: &str = "cloud";
const WAIT: Duration = Duration::from_secs(20);
const EXIT_WAIT: Duration = Duration::from_secs(10);
/// A SASL password set with `/cloud`: never printed or written by reterm.
const CLOUD_PASSWORD: &str = "typed-cloud-pw-8812";

fn home_with_config(url: &str) -> Result<tempfile::TempDir> {
    let config = format!(
        "[[networks]]\nname = \"{NET}\"\ntransport = \"retecloud\"\nurl = \"{url}\"\nnetwork = \"local\"\n"
    );
    let home = tempfile::Builder::new().prefix("reterm-cloud-").tempdir()?;
    let path = home.path().join(".rete").join("reterm.toml");
    fs::create_dir_all(path.parent().context("config dir")?)?;
    fs::write(&path, config)?;
    Ok(home)
}

/// `reterm retecloud-token NAME` with `token` on stdin; returns its stdout and stderr.
async fn set_token(home: &std::path::Path, name: &str, token: &str) -> Result<(bool, String)> {
    let mut child = reterm_command(RETERM, home, &["retecloud-token", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    // A command that refuses before reading (no such network) may have
    // exited already: its status and output say what happened.
    match stdin.write_all(format!("{token}\n").as_bytes()).await {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written?,
    }
    drop(stdin);
    let out = tokio::time::timeout(WAIT, child.wait_with_output()).await??;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

fn secrets(home: &std::path::Path) -> std::path::PathBuf {
    home.join(".rete").join("secrets.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reterm_on_retecloud_token_rows_smsg_refused_and_rotation_across_a_restart() -> Result<()> {
    let mut w = CloudWorld::start(&["--rotate-after-ms", "0", "--grace-ms", "1000"]).await?;
    let home = home_with_config(&w.service.url())?;

    // The token command: refuses what is not a token, stores the token
    // 0600 and never prints it.
    let (ok, text) = set_token(home.path(), NET, "hunter2").await?;
    ensure!(
        !ok && text.contains("not a ReteCloud token") && !text.contains("hunter2"),
        "{text}"
    );
    let (ok, text) = set_token(home.path(), "nosuch", &w.token).await?;
    ensure!(!ok && text.contains("no network named"), "{text}");
    let (ok, text) = set_token(home.path(), NET, &w.token).await?;
    ensure!(ok, "{text}");
    ensure!(
        !text.contains(&w.token),
        "the command printed the token: {text}"
    );
    let file = secrets(home.path());
    ensure!(fs::metadata(&file)?.permissions().mode() & 0o777 == 0o600);
    ensure!(
        !fs::read_to_string(&file)?.contains(&w.token),
        "stored encoded, as the access token"
    );

    // reterm attaches; the service rotates the token at once.
    let before = fs::read(&file)?;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("connected"), WAIT)
        .await
        .with_context(|| reterm.stderr_text())?;
    w.bob.privmsg("#rete", "hello reterm").await?;
    reterm
        .wait_for_line(|l| l.contains("#rete") && l.contains("hello reterm"), WAIT)
        .await?;

    // Our line reaches IRC, and is printed once (from the stream).
    reterm.send("/msg #rete from reterm").await?;
    w.bob
        .wait_for(|l| l.ends_with("PRIVMSG #rete :from reterm"), WAIT)
        .await?;
    reterm
        .wait_for_line(|l| l.contains("<alice> from reterm"), WAIT)
        .await?;

    // /smsg: one clear line, nothing sent.
    reterm.send("/smsg #rete a-secret-text").await?;
    reterm
        .wait_for_line(|l| l.contains("not available on a ReteCloud session"), WAIT)
        .await?;

    // /cloud: a settings change reaches IRC at once, and what the service
    // now holds is printed; a password never is.
    reterm.send("/cloud nick cloudnick").await?;
    w.bob
        .wait_for(
            |l| l.starts_with(":alice!") && l.contains("NICK") && l.contains("cloudnick"),
            WAIT,
        )
        .await?;
    reterm
        .wait_for_line(
            |l| l.contains("ReteCloud settings of local changed: nick cloudnick"),
            WAIT,
        )
        .await?;
    reterm
        .send(&format!("/cloud sasl-password {CLOUD_PASSWORD}"))
        .await?;
    reterm
        .wait_for_line(|l| l.contains("changed: sasl_password set"), WAIT)
        .await?;
    reterm.send("/cloud colour red").await?;
    reterm
        .wait_for_line(|l| l.contains("unknown /cloud setting"), WAIT)
        .await?;

    // The rotated token reached the secrets file.
    support::eventually::eventually("the rotated token stored", WAIT, || {
        let changed = fs::read(&file).is_ok_and(|now| now != before);
        async move { changed.then_some(()) }
    })
    .await?;
    reterm.send("/quit").await?;
    let first_exit = reterm.wait_exit(EXIT_WAIT).await?;
    let exited = &first_exit;
    ensure!(exited.status.success(), "{exited:?}");
    let printed = exited
        .stdout
        .iter()
        .filter(|l| l.contains("from reterm"))
        .count();
    ensure!(
        printed == 1,
        "our line printed {printed} times: {:#?}",
        exited.stdout
    );
    ensure!(
        !w.bob.lines().iter().any(|l| l.contains("a-secret-text")),
        "the /smsg reached IRC"
    );

    // Said while reterm is away: more than the 50 rows a channel's first
    // fetch brings, so only a resume point kept on disk shows them all.
    const MISSED: u32 = 120;
    for i in 1..=MISSED {
        w.bob.privmsg("#rete", &format!("missed {i}")).await?;
    }

    // Past the first token's grace (so presenting it again would be reuse,
    // revoking the chain): a restarted reterm attaches with the stored one,
    // and resumes where the first run stopped.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("connected"), WAIT)
        .await
        .with_context(|| reterm.stderr_text())?;
    let last = format!("missed {MISSED}");
    reterm
        .wait_for_line(|l| l.ends_with(&last), WAIT)
        .await
        .with_context(|| reterm.stderr_text())?;
    let shown: Vec<u32> = reterm
        .lines()
        .iter()
        .filter_map(|l| l.rsplit_once("missed ").and_then(|(_, n)| n.parse().ok()))
        .collect();
    ensure!(
        shown == (1..=MISSED).collect::<Vec<_>>(),
        "the restarted reterm showed {} of the {MISSED} rows missed: {shown:?}",
        shown.len()
    );
    w.bob.privmsg("#rete", "after the restart").await?;
    reterm
        .wait_for_line(|l| l.contains("after the restart"), WAIT)
        .await?;
    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    ensure!(exited.status.success(), "{exited:?}");

    // No token on either run's output, nor in any file but the secrets file
    // (encoded).
    for (run, exited) in [("first", &first_exit), ("second", &exited)] {
        ensure!(
            !exited.stderr.contains("rct1_"),
            "{run} run's stderr: {}",
            exited.stderr
        );
        ensure!(
            !exited.stdout.iter().any(|l| l.contains("rct1_")),
            "a token in the {run} run's output"
        );
    }
    for (path, contents) in all_files(home.path())? {
        ensure!(!contents.contains("rct1_"), "a token in {}", path.display());
        ensure!(
            !contents.contains(CLOUD_PASSWORD),
            "the /cloud password in {}",
            path.display()
        );
    }
    for out in [&first_exit, &exited] {
        ensure!(!out.stderr.contains(CLOUD_PASSWORD), "{}", out.stderr);
        ensure!(!out.stdout.iter().any(|l| l.contains(CLOUD_PASSWORD)));
    }
    Ok(())
}

/// Bob says `early 1` to `early {n}` in #rete, paced so no two share a
/// millisecond (rows are placed by time), and the service has stored them
/// all: a first engine client attaching is shown the last one (fetched).
async fn said_early_and_stored(w: &mut CloudWorld, n: u32) -> Result<()> {
    use support::cloud::{transport, MemoryTokens};
    use support::live_tests_session::{session_config, Live};
    for i in 1..=n {
        w.bob.privmsg("#rete", &format!("early {i}")).await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first = Live::start(rete_actors::SessionSpec {
        config: session_config("alice"),
        transport: transport(&w.service.url(), MemoryTokens::holding(&w.token)),
        autoconnect: true,
        reconnect: rete_transports::Backoff::new(
            Duration::from_millis(100),
            Duration::from_secs(1),
        ),
    })
    .await?;
    let last = format!("early {n}");
    first
        .wait_for("the last early row", move |v| {
            let id = v.find_buffer(rete_engine::buffer::BufferKind::Channel, "#rete")?;
            v.buffer(id)?
                .display()
                .any(|r| matches!(&r.payload, rete_engine::row::Payload::Privmsg { text } if **text == *last))
                .then_some(())
        })
        .await?;
    first.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// The `early N` texts of printed #rete rows, in the order printed.
fn early_rows(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.contains("#rete") && l.contains("<bob> early "))
        .filter_map(|l| l.split("<bob> ").nth(1).map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backlog_prints_older_rows_then_the_count_until_the_service_has_none() -> Result<()> {
    let mut w = CloudWorld::start(&[]).await?;
    said_early_and_stored(&mut w, 80).await?;
    // A second network, reached directly: it has no older rows to fetch.
    let direct = format!(
        "[[networks]]\nname = \"direct\"\nhost = \"127.0.0.1\"\nport = {}\nnick = \"carol\"\nautoconnect = true\n",
        w.ircd.port()
    );
    let home = home_with_config(&w.service.url())?;
    let config = home.path().join(".rete").join("reterm.toml");
    fs::write(&config, format!("{}{direct}", fs::read_to_string(&config)?))?;
    let (ok, text) = set_token(home.path(), NET, &w.token).await?;
    ensure!(ok, "{text}");
    let mut reterm = RetermProcess::spawn(RETERM, home.path(), &[])?;
    reterm
        .wait_for_line(|l| state_of(l, NET) == Some("connected"), WAIT)
        .await
        .with_context(|| reterm.stderr_text())?;
    // The first attach fetched the newest 50.
    reterm
        .wait_for_line(
            |l| l.contains("#rete") && l.contains("<bob> early 80"),
            WAIT,
        )
        .await?;
    let want = |r: std::ops::RangeInclusive<u32>| -> Vec<String> {
        r.map(|i| format!("early {i}")).collect()
    };
    ensure!(
        early_rows(reterm.lines()) == want(31..=80),
        "{:#?}",
        reterm.lines()
    );

    reterm.send("/buffer #rete").await?;
    reterm
        .wait_for_line(|l| l.contains("now in") && l.contains("#rete"), WAIT)
        .await?;
    // Bad numbers: one line each, nothing fetched.
    for bad in ["/backlog abc", "/backlog 0", "/backlog 501"] {
        reterm.send(bad).await?;
        reterm
            .wait_for_line(
                |l| l.contains("/backlog takes a number of rows from 1 to 500"),
                WAIT,
            )
            .await?;
    }

    // 20 older: printed in order, before the count.
    reterm.send("/backlog 20").await?;
    let status = reterm
        .wait_for_line(|l| l.contains("-!- /backlog: "), WAIT)
        .await?;
    ensure!(
        status.contains("20 older rows of #rete from the ReteCloud service")
            && !status.contains("no older"),
        "{status}"
    );
    ensure!(
        early_rows(reterm.lines()) == [want(31..=80), want(11..=30)].concat(),
        "{:#?}",
        reterm.lines()
    );
    // The default asks for 50; the 10 left come, and the service says so.
    reterm.send("/backlog").await?;
    let status = reterm
        .wait_for_line(|l| l.contains("-!- /backlog: "), WAIT)
        .await?;
    ensure!(
        status
            .contains("10 older rows of #rete from the ReteCloud service; it holds no older ones"),
        "{status}"
    );
    reterm.send("/backlog 5").await?;
    let status = reterm
        .wait_for_line(|l| l.contains("-!- /backlog: "), WAIT)
        .await?;
    ensure!(
        status.contains("0 older rows of #rete from the ReteCloud service; it holds no older ones"),
        "{status}"
    );
    let early = early_rows(reterm.lines());
    ensure!(
        early == [want(31..=80), want(11..=30), want(1..=10)].concat(),
        "each row once: {early:#?}"
    );

    // On the directly reached network: a clear refusal.
    reterm.send("/buffer direct").await?;
    reterm
        .wait_for_line(|l| l.contains("now in") && l.contains("direct"), WAIT)
        .await?;
    reterm.send("/backlog").await?;
    reterm
        .wait_for_line(
            |l| l.contains("/backlog is for a network reached through ReteCloud"),
            WAIT,
        )
        .await?;
    reterm.send("/quit").await?;
    let exited = reterm.wait_exit(EXIT_WAIT).await?;
    ensure!(exited.status.success(), "{exited:?}");
    Ok(())
}

/// The numbers of bob's `early N` rows on screen, top to bottom.
fn early_shown(rows: &[String]) -> Vec<u32> {
    rows.iter()
        .filter_map(|r| {
            let n = r.split_once("<bob> early ")?.1;
            n.split(' ').next()?.parse().ok()
        })
        .collect()
}

/// Whether a screen row shows bob's `early {n}`.
fn shows_early(rows: &[String], n: u32) -> bool {
    early_shown(rows).contains(&n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_to_the_top_in_full_screen_fetches_older_rows_once() -> Result<()> {
    use support::pty_reterm::PtyReterm;
    let mut w = CloudWorld::start(&[]).await?;
    said_early_and_stored(&mut w, 80).await?;
    let home = home_with_config(&w.service.url())?;
    let (ok, text) = set_token(home.path(), NET, &w.token).await?;
    ensure!(ok, "{text}");
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 30, 100)?;
    // The channel is focused as it opens; the first attach fetched the
    // newest 50: 31 to 80.
    term.wait_screen(
        "#rete's newest rows",
        |r| r[0].starts_with("#rete") && shows_early(r, 80),
        WAIT,
    )
    .await?;

    // To the top: the oldest row held is on screen, so reterm asks for
    // older ones; they land above it and the screen stays where it was.
    term.keys("\x1b[1;5H")?; // Ctrl-Home
    let rows = term
        .wait_screen(
            "the service's answer",
            |r| r.iter().any(|l| l.contains("holds no older rows")),
            WAIT,
        )
        .await?;
    // (The answer's line under the rows takes one row off the bottom.)
    let shown = early_shown(&rows);
    ensure!(
        shown.first().is_some_and(|top| (31..=32).contains(top)),
        "the view stayed on the rows it showed: {rows:#?}"
    );
    ensure!(
        rows.iter()
            .any(|l| l.contains("#rete: the ReteCloud service holds no older rows")),
        "{rows:#?}"
    );
    // Up a page: the fetched rows, in order, just above.
    term.keys("\x1b[5~")?; // PgUp
    let rows = term
        .wait_screen("the fetched rows", |r| shows_early(r, 30), WAIT)
        .await?;
    let shown = early_shown(&rows);
    ensure!(
        shown.windows(2).all(|p| p[1] == p[0] + 1),
        "in order, each once: {shown:?}"
    );
    term.keys("\x1b[1;5H")?;
    let rows = term
        .wait_screen("the very first row", |r| shows_early(r, 1), WAIT)
        .await?;
    let shown = early_shown(&rows);
    ensure!(
        shown.first() == Some(&1) && shown.windows(2).all(|p| p[1] == p[0] + 1),
        "the oldest first, each once: {rows:#?}"
    );
    // Asked once: the raw buffer shows every frame sent, and two fetches
    // went out, the first attach's and the scroll's, though the top was
    // reached again after the service said it holds nothing older.
    term.resize(60, 250)?;
    term.line("/raw")?;
    let fetches = |r: &[String]| {
        r.iter()
            .filter(|l| l.contains(">> ") && l.contains("{\"type\":\"fetch\""))
            .count()
    };
    let rows = term
        .wait_screen("the fetch frames sent", |r| fetches(r) >= 2, WAIT)
        .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    ensure!(fetches(&term.rows()) == 2, "{rows:#?}");
    term.line("/quit")?;
    ensure!(term.wait_exit(Duration::from_secs(30)).await?);
    Ok(())
}
