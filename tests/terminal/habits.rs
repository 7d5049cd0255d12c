//! Issue 36: what an irssi or WeeChat user does in the first hour, each habit reterm broke
//! pinned by a test: reterm in a real pseudo-terminal (its screen read by the `vt100`
//! emulator) against a real InspIRCd, with raw-socket bots watching what reached the server.

use crate::RETERM;
use std::fs;
use std::time::Duration;

use anyhow::Result;
use support::pty_reterm::status_row as status;
use support::pty_reterm::PtyReterm;
use support::{Bot, Inspircd, InspircdConfig, Msg};
use tempfile::TempDir;

const NET: &str = "test";
const NICK: &str = "rt";
/// How long reterm gets to show what is expected (connecting includes InspIRCd's 1 Hz
/// registration timer).
const WAIT: Duration = Duration::from_secs(15);
/// How long reterm may take to exit: it waits up to 2 s for QUIT to go out.
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// A home whose config has one network, `test`, joining `channels` at connect.
fn home_with(port: u16, channels: &[&str], extra: &str) -> Result<TempDir> {
    let home = tempfile::Builder::new()
        .prefix("reterm-habits-")
        .tempdir()?;
    let dir = home.path().join(".rete");
    fs::create_dir_all(&dir)?;
    let channels: Vec<String> = channels.iter().map(|c| format!("\"{c}\"")).collect();
    fs::write(
        dir.join("reterm.toml"),
        format!(
            "{extra}[[networks]]\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {port}\n\
             nick = \"{NICK}\"\nchannels = [{}]\nautoconnect = true\n",
            channels.join(", ")
        ),
    )?;
    Ok(home)
}

/// InspIRCd, a bot `alice` in each of `channels` (an op there), and reterm in a 30×100
/// terminal that joined them from its config.
struct Setup {
    ircd: Inspircd,
    _home: TempDir,
    term: PtyReterm,
    alice: Bot,
}

async fn start(channels: &[&str]) -> Result<Setup> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut alice = Bot::connect(ircd.port(), "alice").await?;
    for c in channels {
        alice.join(c).await?;
    }
    let home = home_with(ircd.port(), channels, "")?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 30, 100)?;
    // In any order: the order is what some tests check, on screen.
    let mut left: Vec<&str> = channels.to_vec();
    while !left.is_empty() {
        let line = alice
            .wait_for(
                |l| {
                    let m = Msg::parse(l);
                    m.command == "JOIN" && m.source_nick() == Some(NICK)
                },
                WAIT,
            )
            .await?;
        let joined = Msg::parse(&line).param(0).to_owned();
        left.retain(|c| !c.eq_ignore_ascii_case(&joined));
    }
    term.wait_screen(
        "a channel focused",
        |r| {
            channels
                .iter()
                .any(|c| status(r).contains(&format!("{NET}/{c}]")))
        },
        WAIT,
    )
    .await?;
    Ok(Setup {
        ircd,
        _home: home,
        term,
        alice,
    })
}

/// Waits until the bot sees reterm join `channel`.
async fn wait_join(bot: &mut Bot, channel: &str) -> Result<()> {
    bot.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "JOIN"
                && m.source_nick() == Some(NICK)
                && m.param(0).eq_ignore_ascii_case(channel)
        },
        WAIT,
    )
    .await?;
    Ok(())
}

/// Waits until the bot sees reterm quit; returns the reason.
async fn wait_quit(bot: &mut Bot) -> Result<String> {
    let line = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "QUIT" && m.source_nick() == Some(NICK)
            },
            WAIT,
        )
        .await?;
    Ok(Msg::parse(&line).param(0).to_owned())
}

/// Bug 1: `/reconnect` sent `QUIT :reconnecting` and stayed disconnected (the connect it
/// asked for arrived while the QUIT was on its way and was dropped). Now the link closes and
/// a new one joins the configured channel and the one joined since.
#[tokio::test]
async fn reconnect_reconnects_and_rejoins() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one"]).await?;
    alice.join("#two").await?;
    term.line("/join #two")?;
    wait_join(&mut alice, "#two").await?;
    term.line("/reconnect")?;
    let reason = wait_quit(&mut alice).await?;
    anyhow::ensure!(reason.ends_with("reconnecting"), "quit reason: {reason}");
    wait_join(&mut alice, "#one").await?;
    wait_join(&mut alice, "#two").await?;
    term.wait_screen(
        "#two connected again",
        |r| status(r).contains(&format!("{NET}/#two]")) && !status(r).contains('('),
        WAIT,
    )
    .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Bug 2: `/connect NAME` after `/disconnect` joined nothing (the QUIT forgot every channel).
/// Now it joins the configured channels and those the person was in, as after a lost
/// connection.
#[tokio::test]
async fn connect_after_disconnect_joins_configured_and_joined_channels() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one"]).await?;
    alice.join("#two").await?;
    term.line("/join #two")?;
    wait_join(&mut alice, "#two").await?;
    term.line("/disconnect")?;
    wait_quit(&mut alice).await?;
    term.wait_screen(
        "the network disconnected",
        |r| status(r).contains("(disconnected)"),
        WAIT,
    )
    .await?;
    term.line(&format!("/connect {NET}"))?;
    wait_join(&mut alice, "#one").await?;
    wait_join(&mut alice, "#two").await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Bug 3: Ctrl-C quit at once, losing the typed line. It now types mIRC's colour code, as in
/// irssi and WeeChat, beside the other formatting keys (Ctrl-B bold, Ctrl-_ underline, Ctrl-V
/// reverse, Ctrl-O reset); each shows in the input line as its letter in reverse video, and
/// the line goes out with the codes in it.
#[tokio::test]
async fn formatting_keys_type_codes_and_ctrl_c_keeps_the_line() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one"]).await?;
    // Ctrl-B, Ctrl-C, Ctrl-O, Ctrl-_ (0x1F), Ctrl-V as a terminal sends them.
    term.keys("a\x02bold\x02 \x034red\x0f \x1fu\x1f \x16r\x16")?;
    let shown = "[#one] aBboldB C4redO _u_ VrV";
    let rows = term
        .wait_screen(
            "the codes in the input line",
            |r| r.last().is_some_and(|l| l == shown),
            WAIT,
        )
        .await?;
    let last = rows.len() as u16 - 1;
    let reversed: String = term.inspect(|screen, _| {
        (0..shown.len() as u16)
            .filter_map(|col| screen.cell(last, col))
            .filter(|c| c.inverse())
            .map(|c| c.contents().to_owned())
            .collect()
    });
    anyhow::ensure!(reversed == "BBCO__VV", "reversed letters: {reversed:?}");
    anyhow::ensure!(term.is_running(), "Ctrl-C ended reterm");
    term.keys("\r")?;
    alice
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "PRIVMSG"
                    && m.param(0) == "#one"
                    && m.param(1) == "a\x02bold\x02 \x034red\x0f \x1fu\x1f \x16r\x16"
            },
            WAIT,
        )
        .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Bug 3: leaving sent a QUIT without a reason (others saw "Client exited"), and SIGTERM or
/// SIGHUP sent none at all. `/quit`, SIGINT, SIGTERM and SIGHUP each send QUIT with a reason.
#[tokio::test]
async fn every_way_of_leaving_sends_quit_with_a_reason() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut alice = Bot::connect(ircd.port(), "alice").await?;
    alice.join("#one").await?;
    let home = home_with(ircd.port(), &["#one"], "")?;
    for way in ["/quit", "INT", "TERM", "HUP"] {
        let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 30, 100)?;
        wait_join(&mut alice, "#one").await?;
        term.wait_screen(
            "#one focused",
            |r| status(r).contains(&format!("{NET}/#one]")),
            WAIT,
        )
        .await?;
        match way {
            "/quit" => term.line("/quit")?,
            signal => term.signal(signal)?,
        }
        let reason = wait_quit(&mut alice).await?;
        anyhow::ensure!(reason == "Leaving", "{way}: the QUIT reason was {reason:?}");
        term.wait_exit(EXIT_WAIT).await?;
    }
    Ok(())
}

/// How long a reconnect after a server restart may take (the backoff's first delays
/// included).
const RESTART_WAIT: Duration = Duration::from_secs(40);

/// Bug 4: after the server restarted, the rejoin showed the old topic again and kept it in
/// the title, though the server held none. What the server says on join replaces it.
#[tokio::test]
async fn a_rejoin_after_a_server_restart_forgets_the_old_topic() -> Result<()> {
    let mut ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut alice = Bot::connect(ircd.port(), "alice").await?;
    alice.join("#one").await?;
    alice.send("TOPIC #one :welcome to one").await?;
    let home = home_with(ircd.port(), &["#one"], "")?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 30, 100)?;
    term.wait_screen(
        "#one with its topic in the title and on join",
        |r| {
            r[0].starts_with("#one: welcome to one")
                && r.iter().any(|l| l.contains("2 nicks: 1 op, 1 normal"))
        },
        WAIT,
    )
    .await?;
    ircd.restart().await?;
    // Rejoined alone: the names summary of the new join is the last thing it shows.
    let rows = term
        .wait_screen(
            "the rejoin's names summary",
            |r| r.iter().any(|l| l.contains("1 nick: 1 op")),
            RESTART_WAIT,
        )
        .await?;
    anyhow::ensure!(rows[0].trim_end() == "#one", "title: {rows:#?}");
    let topic_notes = rows
        .iter()
        .filter(|l| l.contains("topic: welcome to one"))
        .count();
    anyhow::ensure!(topic_notes == 1, "the old topic shown again: {rows:#?}");
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// The rows of the last `/buffers` answer on screen (`N. label`, each after its row's time
/// stamp and `-!- `), from `1. reterm` on.
fn last_buffer_list(rows: &[String]) -> Vec<String> {
    let entries: Vec<&str> = rows
        .iter()
        .map(|r| r.split_once("-!- ").map_or("", |(_, text)| text))
        .collect();
    let Some(start) = entries.iter().rposition(|e| *e == "1. reterm") else {
        return Vec::new();
    };
    entries[start..]
        .iter()
        .take_while(|e| {
            e.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .map(|e| e.to_string())
        .collect()
}

/// Bug 5: buffer numbers shifted under the fingers. The configured channels were numbered by
/// name rather than the config's order, an incoming CTCP opened a query, and a new query or
/// channel was inserted inside its network's group (before the `/raw` buffer, a channel
/// before the queries). Now the configured channels keep the config's order, a CTCP request
/// shows in the server buffer and opens nothing, and every new buffer goes at the end.
#[tokio::test]
async fn new_buffers_go_at_the_end_and_numbers_never_shift() -> Result<()> {
    let Setup {
        ircd,
        _home,
        mut term,
        alice: _alice,
    } = start(&["#zeta", "#alpha"]).await?;
    let mut bob = Bot::connect(ircd.port(), "bob").await?;
    term.line("/raw")?;
    term.wait_screen(
        "the raw buffer",
        |r| status(r).contains(&format!("{NET}/raw]")),
        WAIT,
    )
    .await?;
    // A CTCP request: answered, and (the raw buffer shows both lines) handled.
    bob.privmsg(NICK, "\u{1}VERSION\u{1}").await?;
    bob.wait_for(
        |l| {
            let m = Msg::parse(l);
            m.command == "NOTICE" && m.param(1).starts_with("\u{1}VERSION")
        },
        WAIT,
    )
    .await?;
    // A private message opens a query.
    bob.privmsg(NICK, "hello there").await?;
    // (Joined without spaces, as the raw line may wrap, its continuation indented.)
    term.wait_screen(
        "bob's message in the raw buffer",
        |r| r.concat().replace(' ', "").contains("PRIVMSGrt:hellothere"),
        WAIT,
    )
    .await?;
    // The raw line and the query come by different paths (the raw tap, the event stream):
    // the query must exist before #new is joined, or the order checked below is a race.
    term.line("/buffers")?;
    term.wait_screen(
        "the buffer list with bob's query",
        |r| {
            last_buffer_list(r)
                .iter()
                .any(|l| l.contains("bob (query)"))
        },
        WAIT,
    )
    .await?;
    term.line("/join #new")?;
    term.wait_screen(
        "#new joined",
        |r| status(r).contains(&format!("{NET}/#new]")),
        WAIT,
    )
    .await?;
    term.line("/buffers")?;
    let rows = term
        .wait_screen(
            "the buffer list with #new",
            |r| last_buffer_list(r).iter().any(|l| l.contains("#new")),
            WAIT,
        )
        .await?;
    let list = last_buffer_list(&rows);
    let want = [
        "1. reterm",
        "2. [test] test (server)",
        "3. [test] #zeta (channel)",
        "4. [test] #alpha (channel)",
        "5. [test] raw (raw lines in and out)",
        "6. [test] bob (query)",
        "7. [test] #new (channel) *",
    ];
    anyhow::ensure!(list == want, "buffer list: {list:#?}\nscreen: {rows:#?}");
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Bug 7: a server's error about a command landed in the server buffer only, far from where
/// the person typed it. 482 (not an operator) and 401 (no such nick) now show in the
/// channel the commands came from, and stay in the server buffer's history.
#[tokio::test]
async fn errors_show_where_the_command_was_typed() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        alice: _alice,
    } = start(&["#one"]).await?;
    // alice joined first and holds the channel's operator status; #one is +t.
    term.line("/topic a topic of mine")?;
    term.wait_screen(
        "482 in #one",
        |r| status(r).contains(&format!("{NET}/#one]")) && r.iter().any(|l| l.contains("482 #one")),
        WAIT,
    )
    .await?;
    term.line("/msg nobody are you there")?;
    term.wait_screen(
        "401 in #one",
        |r| {
            status(r).contains(&format!("{NET}/#one]"))
                && r.iter().any(|l| l.contains("401 nobody"))
        },
        WAIT,
    )
    .await?;
    // The server buffer keeps both.
    term.keys("\x1b2")?;
    term.wait_screen(
        "both errors in the server buffer",
        |r| {
            status(r).contains(&format!("[2:{NET}/{NET}]"))
                && r.iter().any(|l| l.contains("482"))
                && r.iter().any(|l| l.contains("401"))
        },
        WAIT,
    )
    .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Bug 8: emoji were mangled: a ZWJ sequence was shown with `\u{200D}` escapes, a skin tone
/// was overwritten by the next character (the cluster was given two columns, the terminal
/// drew four), and what spilled past a line stayed. Now the screen is laid out by grapheme
/// cluster in the cells a terminal gives each character, emoji sequences drawn as they came,
/// and Ctrl-L repaints every cell.
#[tokio::test]
async fn emoji_sequences_are_drawn_whole_and_ctrl_l_repaints() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one"]).await?;
    let family = "👨\u{200D}👩\u{200D}👧";
    let thumb = "👍\u{1F3FD}";
    let flag = "🇫🇷";
    alice
        .privmsg("#one", &format!("{family} {thumb} {flag} \u{202E}end"))
        .await?;
    let want = format!("<alice> {family} {thumb} {flag} \\u{{202E}}end");
    let rows = term.wait_text("end", WAIT).await?;
    let row = rows
        .iter()
        .find(|r| r.contains("<alice>"))
        .cloned()
        .unwrap_or_default();
    anyhow::ensure!(row.ends_with(&want), "drawn: {row:?}, want {want:?}");
    // Something left on the terminal outside reterm's text: Ctrl-L repaints every cell.
    term.scribble("\x1b[5;40HSTRAY");
    anyhow::ensure!(term.rows().iter().any(|r| r.contains("STRAY")));
    term.keys("\x0c")?;
    term.wait_screen(
        "the stray cells gone, the rows drawn again",
        |r| !r.iter().any(|l| l.contains("STRAY")) && r.iter().any(|l| l.ends_with(&want)),
        WAIT,
    )
    .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// The rows that hold `text`.
fn count(rows: &[String], text: &str) -> usize {
    rows.iter().filter(|r| r.contains(text)).count()
}

/// What an irssi user reaches for: `/set` alone lists every setting with its value, and
/// `/set word` the settings whose name holds the word (both answered "usage" before).
#[tokio::test]
async fn set_alone_lists_every_setting_and_a_word_finds_them() -> Result<()> {
    let home = tempfile::Builder::new().prefix("reterm-set-").tempdir()?;
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 40, 100)?;
    term.wait_screen(
        "reterm's buffer",
        |r| status(r).contains("[1:reterm]"),
        WAIT,
    )
    .await?;
    let names = [
        "time_format",
        "mirc_colours",
        "nicklist",
        "highlights",
        "control.enabled",
        "control.debug",
        "control.send",
        "control.approve",
        "control.port",
    ];
    term.line("/set")?;
    let rows = term
        .wait_screen(
            "every setting",
            |r| names.iter().all(|n| count(r, &format!("{n} = ")) == 1),
            WAIT,
        )
        .await?;
    anyhow::ensure!(count(&rows, "highlights = none") == 1, "{rows:#?}");
    term.line("/set CONTROL")?;
    let rows = term
        .wait_screen(
            "the control settings again",
            |r| count(r, "control.port = ") == 2,
            WAIT,
        )
        .await?;
    for n in names {
        let want = if n.starts_with("control.") { 2 } else { 1 };
        anyhow::ensure!(count(&rows, &format!("{n} = ")) == want, "{n}: {rows:#?}");
    }
    term.line("/set zzz")?;
    term.wait_text("no setting's name holds zzz", WAIT).await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// Esc then a digit is Alt+digit, as irssi's meta prefix: pressed one after the other (two
/// reads, not one escape sequence), Esc and 2 switch to buffer 2; the digit after that is typed.
#[tokio::test]
async fn esc_then_a_digit_switches_like_alt_and_the_digit() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        alice: _alice,
    } = start(&["#one"]).await?;
    term.keys("\x1b")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    term.keys("2")?;
    term.wait_screen(
        "the server buffer, buffer 2",
        |r| status(r).contains(&format!("[2:{NET}/{NET}]")),
        WAIT,
    )
    .await?;
    term.keys("3")?;
    term.wait_screen(
        "3 typed in the input line",
        |r| r.last().is_some_and(|l| l.trim_end().ends_with('3')),
        WAIT,
    )
    .await?;
    term.keys("\x15")?; // Ctrl-U empties the input line
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// The status bar says when the person is away, as irssi's `(zZzZ)` beside the nick: from the
/// server's 306 until its 305.
#[tokio::test]
async fn the_status_bar_says_away() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        alice: _alice,
    } = start(&["#one"]).await?;
    ensure_not_away(&term.rows())?;
    term.line("/away lunch")?;
    term.wait_screen(
        "(zZzZ) in the status bar",
        |r| status(r).contains("(zZzZ)]"),
        WAIT,
    )
    .await?;
    term.line("/away")?;
    term.wait_screen(
        "no (zZzZ) in the status bar",
        |r| status(r).contains(&format!("[{NICK}")) && !status(r).contains("zZzZ"),
        WAIT,
    )
    .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

fn ensure_not_away(rows: &[String]) -> Result<()> {
    anyhow::ensure!(!status(rows).contains("zZzZ"), "{rows:#?}");
    Ok(())
}

/// A time format with seconds (`%S`) makes the status bar's clock tick every second, with
/// nothing else happening; it used to move only at the minute.
#[tokio::test]
async fn a_clock_with_seconds_ticks() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        alice: _alice,
    } = start(&["#one"]).await?;
    term.line("/set time_format %H:%M:%S")?;
    term.wait_screen(
        "seconds in the clock",
        |r| status(r).get(9..10) == Some("]"),
        WAIT,
    )
    .await?;
    let clock = |r: &[String]| status(r).get(..10).unwrap_or("").to_owned();
    let first = clock(&term.rows());
    let ticked = term
        .wait_screen(
            "the clock moved on",
            |r| {
                let now = clock(r);
                now.len() == 10 && now != first
            },
            Duration::from_secs(3),
        )
        .await;
    anyhow::ensure!(ticked.is_ok(), "the clock stayed at {first}");
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// The unread marker sits above the first unread line that is not the person's own: a line
/// they sent to a channel from another buffer is not news to them.
#[tokio::test]
async fn the_unread_marker_is_above_the_first_line_not_ones_own() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one", "#two"]).await?;
    alice.privmsg("#one", "seen before").await?;
    term.line("/buffer #one")?;
    term.wait_screen(
        "#one focused, its line seen",
        |r| {
            status(r).contains(&format!("{NET}/#one]"))
                && r.iter().any(|l| l.contains("seen before"))
        },
        WAIT,
    )
    .await?;
    term.line("/buffer #two")?;
    term.wait_screen(
        "#two focused",
        |r| status(r).contains(&format!("{NET}/#two]")),
        WAIT,
    )
    .await?;
    term.line("/msg #one a line of my own")?;
    alice
        .wait_for(|l| l.contains("a line of my own"), WAIT)
        .await?;
    alice.privmsg("#one", "news from alice").await?;
    term.wait_screen("#one has activity", |r| status(r).contains("[Act: "), WAIT)
        .await?;
    term.line("/buffer #one")?;
    let rows = term
        .wait_screen(
            "#one again, with the marker",
            |r| {
                r.iter().any(|l| l.contains("news from alice"))
                    && r.iter().any(|l| l.contains("unread"))
            },
            WAIT,
        )
        .await?;
    let at = |text: &str| rows.iter().position(|l| l.contains(text));
    let (own, marker, news) = (
        at("a line of my own"),
        at("── unread ──"),
        at("news from alice"),
    );
    anyhow::ensure!(
        own.is_some() && own < marker && marker < news,
        "own {own:?}, marker {marker:?}, news {news:?}: {rows:#?}"
    );
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}

/// A nick list longer than its pane says `+N` for the nicks cut off, and F12 / F11 scroll it.
#[tokio::test]
async fn a_cut_nick_list_says_how_many_more_and_scrolls() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let mut bots = Vec::new();
    for i in 0..12 {
        let mut bot = Bot::connect(ircd.port(), &format!("nick{i:02}")).await?;
        bot.join("#many").await?;
        bots.push(bot);
    }
    let home = home_with(ircd.port(), &["#many"], "")?;
    // 10 rows: title, 6 body rows, approval-free status and input lines.
    let mut term = PtyReterm::spawn(RETERM, home.path(), &[], 10, 100)?;
    wait_join(&mut bots[0], "#many").await?;
    let pane = |r: &[String]| -> Vec<String> {
        r.iter()
            .filter_map(|l| {
                l.rfind('│')
                    .map(|at| l[at + '│'.len_utf8()..].trim().to_owned())
            })
            .collect()
    };
    let rows = term
        .wait_screen(
            "+N at the bottom of the nick list",
            |r| pane(r).last().is_some_and(|l| l.starts_with('+')),
            WAIT,
        )
        .await?;
    let first = pane(&rows);
    anyhow::ensure!(first.iter().any(|l| l.ends_with("nick00")), "{rows:#?}");
    term.keys("\x1b[24~")?; // F12
    let rows = term
        .wait_screen(
            "+N at the top of the nick list",
            |r| pane(r).first().is_some_and(|l| l.starts_with('+')),
            WAIT,
        )
        .await?;
    anyhow::ensure!(
        !pane(&rows).iter().any(|l| l.ends_with("nick00")),
        "{rows:#?}"
    );
    term.keys("\x1b[23~")?; // F11
    term.wait_screen(
        "back at the top",
        |r| pane(r).iter().any(|l| l.ends_with("nick00")),
        WAIT,
    )
    .await?;
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    drop(bots);
    Ok(())
}

/// A long message wraps between words, its lines after the first indented under the text
/// (after `HH:MM <alice> `), as irssi wraps it; no word is cut in two.
#[tokio::test]
async fn long_lines_wrap_at_words_under_the_text() -> Result<()> {
    let Setup {
        ircd: _ircd,
        _home,
        mut term,
        mut alice,
    } = start(&["#one"]).await?;
    let words: Vec<String> = (1..=40).map(|i| format!("word{i:02}")).collect();
    alice.privmsg("#one", &words.join(" ")).await?;
    let rows = term
        .wait_screen(
            "the long line",
            |r| r.iter().any(|l| l.contains("word40")),
            WAIT,
        )
        .await?;
    let first = rows
        .iter()
        .position(|l| l.contains("<alice> word01"))
        .ok_or_else(|| anyhow::anyhow!("no first line: {rows:#?}"))?;
    let last = rows
        .iter()
        .position(|l| l.contains("word40"))
        .unwrap_or(first);
    anyhow::ensure!(last > first, "{rows:#?}");
    let indent = rows[first].find("word01").unwrap_or(0);
    for row in &rows[first + 1..=last] {
        anyhow::ensure!(
            row.len() > indent
                && row[..indent].trim().is_empty()
                && row[indent..].starts_with("word"),
            "not under the text: {row:?} in {rows:#?}"
        );
    }
    let text: String = rows[first..=last]
        .iter()
        .map(|r| r.split('│').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    for word in &words {
        anyhow::ensure!(text.contains(word.as_str()), "{word} cut: {rows:#?}");
    }
    term.line("/quit")?;
    term.wait_exit(EXIT_WAIT).await?;
    Ok(())
}
