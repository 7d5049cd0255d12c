//! The full-screen interface end to end: reterm in a real pseudo-terminal, its screen read by
//! the `vt100` terminal emulator, against a real InspIRCd and raw-socket bots.

use crate::RETERM;
use std::fs;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use support::pty_reterm::status_row as status;
use support::pty_reterm::PtyReterm;
use support::{Bot, Inspircd, InspircdConfig, Msg};

const NICK: &str = "rt";
/// How long reterm gets to draw what is expected (connecting includes InspIRCd's 1 Hz
/// registration timer).
const WAIT: Duration = Duration::from_secs(15);
/// How long /quit may take to end the process: it stops the control server and
/// waits up to 2 s for QUIT to go out, and a loaded CI machine stretches both.
const EXIT_WAIT: Duration = Duration::from_secs(30);

fn config(port: u16) -> String {
    format!(
        "[[networks]]\nname = \"test\"\nhost = \"127.0.0.1\"\nport = {port}\nnick = \"{NICK}\"\n\
         channels = [\"#one\", \"#two\"]\nautoconnect = true\n"
    )
}

/// The buffer numbers in the status bar's activity list.
fn activity(status: &str) -> Vec<usize> {
    let Some(start) = status.find("[Act: ") else {
        return Vec::new();
    };
    let list = &status[start + "[Act: ".len()..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

#[tokio::test]
async fn full_screen_session() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let (alice, bob) = tokio::try_join!(
        Bot::connect(ircd.port(), "alice"),
        Bot::connect(ircd.port(), "bob")
    )?;
    let (mut alice, mut bob) = (alice, bob);
    alice.join("#one").await?;
    alice.send("TOPIC #one :welcome to one").await?;
    alice.join("#two").await?;
    bob.join("#one").await?;

    let home = tempfile::Builder::new()
        .prefix("reterm-screen-")
        .tempdir()?;
    let dir = home.path().join(".rete");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("reterm.toml"), config(ircd.port()))?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 30, 100)?;

    // Joined from the config; the first channel is focused: its topic is the title, and the
    // topic with its setter and a names summary are shown on join.
    let rows = term
        .wait_screen(
            "#one with its topic and names summary",
            |rows| {
                rows[0].starts_with("#one: welcome to one")
                    && rows
                        .iter()
                        .any(|r| r.contains("topic: welcome to one (set by alice)"))
                    && rows.iter().any(|r| r.contains("3 nicks: 1 op, 2 normal"))
            },
            WAIT,
        )
        .await?;
    // The title names the setter and the date the server gave (333).
    let year = chrono::Local::now().format(" %Y ").to_string();
    ensure!(
        rows[0].starts_with("#one: welcome to one (set by alice, ") && rows[0].contains(&year),
        "title: {rows:#?}"
    );
    ensure!(status(&rows).contains("[3:test/#one]"), "status: {rows:#?}");
    ensure!(status(&rows).contains("[rt]"), "status: {rows:#?}");
    // The nick list pane, ops first.
    ensure!(rows[1].ends_with("│@alice"), "{rows:#?}");

    // Alt+2 is the server buffer, Alt+4 #two; Alt+3 back to #one.
    term.keys("\x1b2")?;
    term.wait_screen(
        "the server buffer",
        |r| status(r).contains("[2:test/test]"),
        WAIT,
    )
    .await?;
    term.keys("\x1b4")?;
    term.wait_screen("#two", |r| status(r).contains("[4:test/#two]"), WAIT)
        .await?;
    term.keys("\x1b3")?;
    term.wait_screen("#one again", |r| status(r).contains("[3:test/#one]"), WAIT)
        .await?;

    // Tab completes a nick at the start of the line with ": ".
    bob.privmsg("#one", "hello rt").await?;
    term.wait_text("<bob> hello rt", WAIT).await?;
    term.keys("bo\t")?;
    term.wait_screen(
        "the completed nick",
        |r| r.last().is_some_and(|l| l.ends_with("bob:")),
        WAIT,
    )
    .await?;
    term.line("hi")?;
    bob.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "PRIVMSG" && m.param(0) == "#one" && m.param(1) == "bob: hi"
        },
        WAIT,
    )
    .await?;

    // A highlight in #two while #one is shown: the activity list marks 4, the bell rings and
    // the window title says so.
    let bells_before = term.inspect(|_, n| n.bells);
    alice.privmsg("#two", "rt: are you there?").await?;
    let rows = term
        .wait_screen(
            "activity for #two",
            |r| activity(status(r)).contains(&4),
            WAIT,
        )
        .await?;
    let (bells, title, colour) = term.inspect(|screen, noticed| {
        let row = rows.len() as u16 - 2;
        let bar = status(&rows);
        let list = bar.find("[Act: ").unwrap_or(0) + "[Act: ".len();
        let col = list + bar[list..].find('4').unwrap_or(0);
        let colour = screen.cell(row, col as u16).map(|c| c.fgcolor());
        (noticed.bells, noticed.title.clone(), colour)
    });
    ensure!(bells > bells_before, "no bell on a highlight");
    ensure!(title.contains("highlight"), "title: {title}");
    // LightMagenta, the highlight colour (ANSI 13).
    ensure!(
        colour == Some(vt100::Color::Idx(13)),
        "activity colour: {colour:?}"
    );
    // Alt+A goes to it and clears it.
    term.keys("\x1ba")?;
    let rows = term
        .wait_screen(
            "#two via Alt+A",
            |r| status(r).contains("[4:test/#two]"),
            WAIT,
        )
        .await?;
    ensure!(!activity(status(&rows)).contains(&4), "{rows:#?}");
    ensure!(
        rows.iter()
            .any(|r| r.contains("<alice> rt: are you there?")),
        "{rows:#?}"
    );

    // Scroll back in #one: 60 lines, PgUp shows older ones and -more-, End of buffer returns.
    term.keys("\x1b3")?;
    for i in 0..60 {
        bob.privmsg("#one", &format!("flood line {i:02}")).await?;
    }
    term.wait_text("flood line 59", WAIT).await?;
    term.keys("\x1b[5~")?;
    let rows = term
        .wait_screen("an older page", |r| status(r).contains("-more-"), WAIT)
        .await?;
    ensure!(
        !rows.iter().any(|r| r.contains("flood line 59")),
        "{rows:#?}"
    );
    ensure!(rows.iter().any(|r| r.contains("flood line 3")), "{rows:#?}");
    term.keys("\x1b[1;5H")?; // Ctrl-Home: the oldest rows fill the screen
    let rows = term
        .wait_screen(
            "the top of the buffer",
            |r| r.iter().any(|l| l.contains("rt (rt@127.0.0.1) joined")),
            WAIT,
        )
        .await?;
    ensure!(status(&rows).contains("-more-"), "{rows:#?}");
    ensure!(
        rows.iter().any(|r| r.contains("flood line 00")),
        "a full page from the top: {rows:#?}"
    );
    term.keys("\x1b[1;5F")?; // Ctrl-End
    term.wait_screen(
        "the end again",
        |r| !status(r).contains("-more-") && r.iter().any(|l| l.contains("flood line 59")),
        WAIT,
    )
    .await?;

    // Part, then typed text is refused in reterm and never sent.
    term.line("/part")?;
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PART" && m.source_nick() == Some(NICK)
            },
            WAIT,
        )
        .await?;
    term.wait_text("(not joined)", WAIT).await?;
    term.line("are you still there")?;
    term.wait_text("not in #one — /join #one", WAIT).await?;
    // A later line to #two arrives; the refused one was never sent before it.
    term.keys("\x1b4")?;
    term.wait_screen("#two", |r| status(r).contains("[4:test/#two]"), WAIT)
        .await?;
    term.line("sentinel")?;
    let seen = alice
        .collect_until(
            |l| {
                let m = Msg::parse(l);
                m.command == "PRIVMSG" && m.param(1) == "sentinel"
            },
            WAIT,
        )
        .await?;
    ensure!(
        !seen.iter().any(|l| l.contains("are you still there")),
        "refused text was sent: {seen:#?}"
    );

    // mIRC formatting is drawn (bold, colour 4 = red) and escapes stay escaped.
    alice
        .privmsg("#two", "\u{2}loud\u{2} \u{3}4red\u{3} \u{1b}[2J formatted")
        .await?;
    let rows = term.wait_text("[2J formatted", WAIT).await?;
    let at = rows
        .iter()
        .position(|r| r.contains("[2J formatted"))
        .context("the formatted row")?;
    let line = rows[at].clone();
    ensure!(
        line.contains("<alice> loud red \\u{1B}[2J formatted"),
        "{line}"
    );
    let col =
        |line: &str, needle: &str| line.find(needle).map(|i| line[..i].chars().count() as u16);
    let (bold, red) = term.inspect(|screen, _| {
        let cell = |c: Option<u16>| c.and_then(|c| screen.cell(at as u16, c));
        (
            cell(col(&line, "loud")).map(|c| c.bold()),
            cell(col(&line, "red ")).map(|c| c.fgcolor()),
        )
    });
    ensure!(bold == Some(true), "bold: {bold:?}");
    // mIRC 4 is ANSI 9 (bright red).
    ensure!(red == Some(vt100::Color::Idx(9)), "colour: {red:?}");

    // A word set with /set highlights highlights: the nick is drawn red.
    term.line("/set highlights deploy")?;
    term.wait_text("highlights: deploy", WAIT).await?;
    alice.privmsg("#two", "time to DEPLOY").await?;
    let rows = term.wait_text("<alice> time to DEPLOY", WAIT).await?;
    let at = rows
        .iter()
        .position(|r| r.contains("time to DEPLOY"))
        .context("the row")?;
    let line = rows[at].clone();
    let nick = term.inspect(|screen, _| {
        col(&line, "alice")
            .and_then(|c| screen.cell(at as u16, c))
            .map(|c| c.fgcolor())
    });
    ensure!(
        nick == Some(vt100::Color::Idx(1)),
        "highlighted nick: {nick:?}"
    );

    // A bracketed paste of two lines asks first: Esc drops it, Enter sends both as text.
    term.keys("\x1b[200~first pasted\nsecond pasted\x1b[201~")?;
    term.wait_text("paste 2 lines into this buffer?", WAIT)
        .await?;
    term.keys("\x1b")?;
    term.wait_text("paste dropped", WAIT).await?;
    term.keys("\x1b[200~first pasted\r\nsecond pasted\x1b[201~")?;
    term.wait_text("paste 2 lines into this buffer?", WAIT)
        .await?;
    term.keys("\r")?;
    for want in ["first pasted", "second pasted"] {
        alice
            .wait_for(
                |l| {
                    let m = Msg::parse(l);
                    m.command == "PRIVMSG" && m.param(0) == "#two" && m.param(1) == want
                },
                WAIT,
            )
            .await?;
    }
    // A one-line paste goes into the input line, not out.
    term.keys("\x1b[200~just typed\x1b[201~")?;
    term.wait_screen(
        "the pasted line in the input",
        |r| r.last().is_some_and(|l| l.ends_with("just typed")),
        WAIT,
    )
    .await?;
    term.keys("\x15")?; // Ctrl-U clears it
    term.wait_screen(
        "an empty input line",
        |r| r.last().is_some_and(|l| l.ends_with("[#two]")),
        WAIT,
    )
    .await?;

    // Ctrl-N and Ctrl-P walk the buffer list.
    term.keys("\x0e")?;
    term.wait_screen(
        "Ctrl-N from #two wraps to 1",
        |r| status(r).contains("[1:reterm]"),
        WAIT,
    )
    .await?;
    term.keys("\x10")?;
    term.wait_screen(
        "Ctrl-P back to #two",
        |r| status(r).contains("[4:test/#two]"),
        WAIT,
    )
    .await?;

    // Our user modes show beside the nick.
    term.line("/quote MODE rt +i")?;
    term.wait_screen(
        "user modes in the status bar",
        |r| status(r).contains("[rt(+i)]"),
        WAIT,
    )
    .await?;

    // Resize: the layout follows (status bar and input line move to the new bottom).
    term.resize(20, 70)?;
    let rows = term
        .wait_screen(
            "the resized layout",
            |r| r.len() == 20 && status(r).contains("[4:test/#two]"),
            WAIT,
        )
        .await?;
    ensure!(rows.iter().all(|r| r.chars().count() <= 70), "{rows:#?}");

    term.line("/quit bye")?;
    let ok = term.wait_exit(EXIT_WAIT).await?;
    ensure!(ok, "reterm exited with a failure");
    drop(ircd);
    Ok(())
}

/// The screen's row count follows the pty (a sanity check of the harness itself).
#[tokio::test]
async fn plain_flag_keeps_line_mode_on_a_terminal() -> Result<()> {
    let home = tempfile::Builder::new().prefix("reterm-plain-").tempdir()?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &["--plain"], 24, 80)?;
    // Line mode prints the first-run line as text, with no status bar.
    let rows = term.wait_text("Created", WAIT).await?;
    ensure!(!rows.iter().any(|r| r.contains("[1:reterm]")), "{rows:#?}");
    term.line("/quit")?;
    ensure!(term.wait_exit(EXIT_WAIT).await?, "exit status");
    Ok(())
}

/// Without `--plain`, the first run lands in reterm's own buffer, number 1.
#[tokio::test]
async fn first_run_shows_reterms_own_buffer() -> Result<()> {
    let home = tempfile::Builder::new().prefix("reterm-first-").tempdir()?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 24, 80)?;
    let rows = term
        .wait_screen(
            "reterm's buffer",
            |r| status(r).contains("[1:reterm]"),
            WAIT,
        )
        .await
        .context("full screen did not start")?;
    ensure!(rows.iter().any(|r| r.contains("Created")), "{rows:#?}");
    // An unbound key sends nothing and types nothing: F5, then Insert.
    term.keys("\x1b[15~\x1b[2~")?;
    term.keys("/help")?;
    let rows = term
        .wait_screen(
            "the typed line",
            |r| r.last().is_some_and(|l| l.ends_with("/help")),
            WAIT,
        )
        .await?;
    ensure!(
        rows.last().is_some_and(|l| l == "[reterm] /help"),
        "{rows:#?}"
    );
    term.keys("\r")?;
    term.wait_text("/quit [reason]", WAIT).await?;
    term.line("/quit")?;
    ensure!(term.wait_exit(EXIT_WAIT).await?, "exit status");
    Ok(())
}

/// A key typed while a resize is still unread is not lost. crossterm's default (mio) event
/// source is edge-triggered and returns the resize before reading the terminal when both are
/// ready in one poll: the key's readiness was consumed and the key sat unread until the next
/// one arrived (a `/quit` typed just after a resize did nothing on a loaded machine). Each
/// round resizes and types one key at once, then waits for that key on the input line.
#[tokio::test]
async fn keys_typed_during_a_resize_arrive() -> Result<()> {
    let home = tempfile::Builder::new()
        .prefix("reterm-resize-")
        .tempdir()?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 24, 80)?;
    term.wait_screen(
        "reterm's buffer",
        |r| status(r).contains("[1:reterm]"),
        WAIT,
    )
    .await
    .context("full screen did not start")?;
    let mut typed = String::from("[reterm] ");
    for round in 0..40u16 {
        term.resize(24 + round % 2, 80)?;
        term.keys("x")?;
        typed.push('x');
        term.wait_screen(
            &format!("key {} typed during a resize", round + 1),
            |r| r.last().is_some_and(|l| l == &typed),
            Duration::from_secs(5),
        )
        .await?;
    }
    term.keys("\x15")?;
    term.line("/quit")?;
    ensure!(term.wait_exit(EXIT_WAIT).await?, "exit status");
    Ok(())
}
