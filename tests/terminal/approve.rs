//! control.approve on the full screen, end to end: reterm in a real pseudo-terminal (as the
//! unprivileged user, so its control server serves), a real InspIRCd with a raw-socket bot,
//! and send_raw calls from a client process of reterm's own user. The prompt row above the
//! input line names the session and shows the oldest waiting line masked, with how many
//! wait; Ctrl-G allows it (the bot reads it), Ctrl-X denies it (the veto answer, nothing
//! sent), typing never answers, and a client that leaves withdraws its prompt.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::RETERM;
use std::time::Duration;

use anyhow::{ensure, Result};
use support::ports::free_port;
use support::pty_reterm::status_row as above_input;
use support::pty_reterm::PtyReterm;
use support::unprivileged::{self, answer};
use support::{Bot, Inspircd, InspircdConfig, Msg};

const SESSION: &str = "6F1C2B8E-3D4A-4E5F-9A7B-0C1D2E3F4A5B";
const WAIT: Duration = Duration::from_secs(15);
const EXIT_WAIT: Duration = Duration::from_secs(30);
const NOT_SENT: &str = "line not sent: a script blocked it or the connection could not take it";
const PROMPT: &str = "AI access wants to send on test — Ctrl-G allow · Ctrl-X deny";

fn config(control: u16, irc: u16) -> String {
    format!(
        "[control]\nenabled = true\napprove = true\nport = {control}\n\n\
         [[networks]]\nid = \"{SESSION}\"\nname = \"test\"\nhost = \"127.0.0.1\"\nport = {irc}\n\
         nick = \"rt\"\nchannels = [\"#appr\"]\nautoconnect = true\n"
    )
}

#[tokio::test]
async fn the_prompt_row_and_its_keys_answer_lines_in_order() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bot = Bot::connect(ircd.port(), "apprwatch").await?;
    bot.join("#appr").await?;
    let control = free_port()?;
    let home = unprivileged::home(&config(control, ircd.port()))?;
    let mut term = PtyReterm::spawn_unprivileged(RETERM, home.path(), &[], 24, 120)?;
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "JOIN" && l.starts_with(":rt!")
        },
        WAIT,
    )
    .await?;
    // The channel opening takes the focus from the server buffer; a line typed before that
    // would be answered in the server buffer, off screen. The top row names the focus.
    term.wait_screen("#appr focused", |rows| rows[0].starts_with("#appr"), WAIT)
        .await?;
    term.line("/control status")?;
    term.wait_text(&format!("AI access on, port {control} · approve"), WAIT)
        .await?;
    term.line("/set control.send on")?;
    term.wait_text("control.send is on until reterm quits", WAIT)
        .await?;

    // The first line waits: the prompt row is right above the input line, under the status bar.
    let first = unprivileged::send_raw(home.path(), control, SESSION, "PRIVMSG apprwatch :first")?;
    let rows = term
        .wait_screen(
            "the first prompt",
            |r| above_input(r).starts_with(PROMPT),
            WAIT,
        )
        .await?;
    ensure!(
        above_input(&rows) == format!("{PROMPT} (1 waiting): PRIVMSG apprwatch :first"),
        "{rows:#?}"
    );
    ensure!(
        rows[rows.len() - 3].contains("[rt"),
        "the status bar above it: {rows:#?}"
    );
    // It rings, as a highlight does, and says why in the title.
    let (bells, title) = term.inspect(|_, noticed| (noticed.bells, noticed.title.clone()));
    ensure!(
        bells >= 1 && title == "reterm: AI access asks to send on test",
        "{bells} {title}"
    );

    // A second waits behind it, masked; the row still shows the oldest, and says two wait.
    let second = unprivileged::send_raw(
        home.path(),
        control,
        SESSION,
        "PRIVMSG NickServ :IDENTIFY hunter8zz",
    )?;
    term.wait_screen(
        "two waiting",
        |r| above_input(r) == format!("{PROMPT} (2 waiting): PRIVMSG apprwatch :first"),
        WAIT,
    )
    .await?;

    // Typing, a g or an x included, goes to the input line and answers nothing.
    term.keys("gx")?;
    let rows = term
        .wait_screen(
            "the typed text",
            |r| r.last().is_some_and(|l| l.ends_with("gx")),
            WAIT,
        )
        .await?;
    ensure!(above_input(&rows).contains("(2 waiting)"), "{rows:#?}");
    term.keys("\x15")?; // Ctrl-U clears it.

    // Ctrl-G allows the line shown: the bot reads it, the call says sent.
    term.keys("\x07")?;
    let rows = term
        .wait_screen(
            "the second prompt",
            |r| {
                above_input(r)
                    == format!("{PROMPT} (1 waiting): PRIVMSG NickServ :IDENTIFY ********")
            },
            WAIT,
        )
        .await?;
    ensure!(
        rows.iter()
            .any(|r| r.contains("allowed: AI access line on test: PRIVMSG apprwatch :first")),
        "{rows:#?}"
    );
    bot.wait_for(|l| Msg::parse(l).param(1) == "first", WAIT)
        .await?;
    let (is_error, text) = answer(first).await?;
    ensure!(!is_error && text.contains("\"sent\":true"), "{text}");

    // Ctrl-X denies the next: the veto answer, and the row goes.
    term.keys("\x18")?;
    let rows = term
        .wait_screen(
            "no prompt",
            |r| !r.iter().any(|l| l.starts_with(PROMPT)),
            WAIT,
        )
        .await?;
    ensure!(
        rows.iter()
            .any(|r| r
                .contains("denied: AI access line on test: PRIVMSG NickServ :IDENTIFY ********")),
        "{rows:#?}"
    );
    ensure!(answer(second).await? == (true, NOT_SENT.to_owned()));
    // With nothing waiting the keys say so.
    term.keys("\x07")?;
    term.wait_text("no AI access line waits for approval", WAIT)
        .await?;

    // A client that leaves while its line waits withdraws the prompt.
    let mut gone =
        unprivileged::send_raw(home.path(), control, SESSION, "PRIVMSG apprwatch :gone")?;
    term.wait_screen(
        "the third prompt",
        |r| above_input(r).ends_with("(1 waiting): PRIVMSG apprwatch :gone"),
        WAIT,
    )
    .await?;
    gone.kill().await?;
    term.wait_screen(
        "the prompt withdrawn",
        |r| !r.iter().any(|l| l.starts_with(PROMPT)),
        WAIT,
    )
    .await?;
    // reterm's buffer (Alt+1) keeps the record: each line asked, and why this one went.
    term.keys("\x1b1")?;
    let rows = term
        .wait_text(
            "the agent's call gave up, not sent: AI access line on test: PRIVMSG apprwatch :gone",
            WAIT,
        )
        .await?;
    ensure!(
        rows.iter()
            .any(|r| r
                .contains("AI access wants to send on test: PRIVMSG NickServ :IDENTIFY ********")),
        "{rows:#?}"
    );

    // A marker after it all: the bot read neither refused line; the secret was never drawn.
    let mut marker = Bot::connect(ircd.port(), "apprmark").await?;
    marker.privmsg("apprwatch", "marker").await?;
    let seen = bot
        .collect_until(|l| Msg::parse(l).param(1) == "marker", WAIT)
        .await?;
    ensure!(
        !seen
            .iter()
            .any(|l| l.contains("IDENTIFY") || l.ends_with(":gone")),
        "{seen:#?}"
    );
    ensure!(!term.rows().iter().any(|r| r.contains("hunter8zz")));

    term.line("/quit")?;
    ensure!(
        term.wait_exit(EXIT_WAIT).await?,
        "reterm exited with a failure"
    );
    Ok(())
}
