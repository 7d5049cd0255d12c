//! The secret corpus through everything (issue 19): a live session against a real InspIRCd
//! (with a server password and an operator block) and Atheme (SASL PLAIN, NickServ), in a real
//! `reterm` running in a pseudo-terminal as the unprivileged user with AI access on, debug and
//! sending on, and transcripts on.
//!
//! The corpus is two kinds of secret:
//! - **held**: the values the session's way-out scan knows (the server password, the SASL
//!   password, the two channel keys). Bots say them everywhere an outside party can put text:
//!   in the channel and a query, as notices, actions and CTCP (one CTCP makes us answer with
//!   it), in URLs, in three cases, with formatting codes inside, in topics, in nicks they take,
//!   in part, quit and kick reasons. The control surface must return none of it.
//! - **own**: what Rete itself sends and must mask at the source: the PASS and SASL lines of
//!   registration, `/oper`, `/msg NickServ IDENTIFY`, `/smsg`, the agent's send_raw lines
//!   (OPER, two NickServ spellings, PASS, a second line after a line break) and the control
//!   token. They must appear nowhere: not in any answer, transcript or screen.
//!
//! Every tool of the spec table `TOOLS` (so a new tool is called too) and every kind of
//! subscription (read in digest and full mode, with read_updates and wait_for_updates) is
//! called by an MCP client, the official Python SDK through the real HTTP server
//! (`tests/control/corpus_agent.py`, as reterm's own user). Every answer, every transcript
//! file, every buffer of reterm's screen (scrolled back to its first row), the raw buffer and
//! `/control log` (the AI access log, which is memory only: the screen is its only surface)
//! are scanned for each secret in every case and with formatting stripped (see
//! `support::secret_corpus`). Each scan also checks it looked at something: every tool
//! answered, subscriptions delivered message, raw and log events, secrets were withheld, and
//! every screen and file scanned was non-empty.
//!
//! What others say is shown to the person as said ("What redaction does not do"), so
//! transcripts and screens are scanned for held secrets before the bots plant them, and for
//! own secrets throughout; a channel key is also shown in the raw buffer's JOIN by design.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::RETERM;
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use support::cli_tests_reterm::all_files;
use support::ports::free_port;
use support::pty_reterm::PtyReterm;
use support::secret_corpus::{with_formatting, Scanned, Secret};
use support::unprivileged;
use support::{Atheme, Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;

const SESSION: &str = "5A0C7E21-9B3D-4C6F-8E1A-2B4D6F8A0C2E";
const NET: &str = "corpus";
const NICK: &str = "rt";
const CHANNEL: &str = "#corpus";
/// Joined with its key and never spoken in: its transcript must stay clean throughout.
const QUIET: &str = "#quiet";
const PLANTER: &str = "planter";
const SASL_ACCOUNT: &str = "rtacct";
const NS_ACCOUNT: &str = "rtns";
const OPER_NAME: &str = "rtoper";

const SERVER_PW: &str = "SrvPw-Corpus-7731";
const SASL_PW: &str = "SaslPw-Corpus-4420";
/// Nick-shaped, like the passwords, so a bot can take a nick holding it.
const KEY: &str = "ChanKey-Corpus-9";
const QUIET_KEY: &str = "QuietKey-Corpus-5";
const OPER_PW: &str = "OperPw-Corpus-5512";
const NS_PW: &str = "NsIdent-Corpus-3390";
const SMSG: &str = "SmsgText-Corpus-8841";
/// Given to a service bot (`AuthServ`) that echoes it back: "you are now identified with …".
const AUTH_PW: &str = "AuthEcho-Corpus-6604";

const WAIT: Duration = Duration::from_secs(20);
/// A scrolled screen that has not changed in this long is at its first row.
const SETTLE: Duration = Duration::from_millis(700);
const AGENT_WAIT: Duration = Duration::from_secs(300);
const ROWS: u16 = 100;
const COLS: u16 = 250;

/// The held secrets: what the session's way-out scan knows.
fn held() -> Vec<Secret> {
    vec![
        Secret::new("server password", SERVER_PW),
        Secret::sasl("SASL password", SASL_ACCOUNT, SASL_PW),
        Secret::new("channel key", KEY),
        Secret::new("quiet channel key", QUIET_KEY),
    ]
}

/// The own secrets: what Rete sends and masks at the source, and the token.
fn own(token: &str) -> Vec<Secret> {
    vec![
        Secret::new("OPER password", OPER_PW),
        Secret::new("NickServ password", NS_PW),
        Secret::new("/smsg text", SMSG),
        Secret::new("AuthServ password (echoed back)", AUTH_PW),
        Secret::new("control token", token),
    ]
}

fn config(control: u16, irc: u16) -> String {
    format!(
        "logging = true\n\n[control]\nenabled = true\ndebug = true\nport = {control}\n\n\
         [[networks]]\nid = \"{SESSION}\"\nname = \"{NET}\"\nhost = \"127.0.0.1\"\nport = {irc}\n\
         nick = \"{NICK}\"\npassword = \"{SERVER_PW}\"\nautoconnect = true\n\
         sasl = {{ mechanism = \"PLAIN\", username = \"{SASL_ACCOUNT}\", password = \"{SASL_PW}\" }}\n\
         channels = [{{ name = \"{CHANNEL}\", key = \"{KEY}\" }}, {{ name = \"{QUIET}\", key = \"{QUIET_KEY}\" }}]\n"
    )
}

/// The operator block reterm's `/oper` and the agent's OPER log in with (InspIRCd 3 compares
/// a password without a hash attribute in clear).
fn oper_config() -> [String; 3] {
    [
        r#"<class name="corpusclass" commands="*" privs="*" usermodes="*" chanmodes="*">"#.into(),
        r#"<type name="CorpusOper" classes="corpusclass">"#.into(),
        format!(r#"<oper name="{OPER_NAME}" password="{OPER_PW}" host="*@*" type="CorpusOper">"#),
    ]
}

/// Registers `account` with `password` through a bot that knows the server password.
async fn register(port: u16, account: &str, password: &str) -> Result<()> {
    let mut bot = Bot::connect_with(BotConfig::new(port, account).password(SERVER_PW)).await?;
    bot.privmsg(
        "NickServ",
        &format!("REGISTER {password} {account}@rete.example"),
    )
    .await?;
    let reply = bot
        .wait_for(
            |l| Msg::parse(l).source_nick() == Some("NickServ"),
            DEFAULT_TIMEOUT,
        )
        .await?;
    ensure!(
        reply.contains("is now registered"),
        "NickServ refused to register {account}"
    );
    bot.quit().await;
    Ok(())
}

async fn bot(port: u16, nick: &str) -> Result<Bot> {
    Bot::connect_with(BotConfig::new(port, nick).password(SERVER_PW)).await
}

/// Waits until the server has handled everything `bot` sent (a PING round trip).
async fn synced(bot: &mut Bot, tag: &str) -> Result<()> {
    bot.send(&format!("PING :{tag}")).await?;
    let tag = tag.to_owned();
    bot.wait_for(
        move |l| {
            let m = Msg::parse(l);
            m.command == "PONG" && l.ends_with(tag.as_str())
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}

/// A WHOIS of reterm's nick from `bot`: the reply lines up to the end (318).
async fn whois(bot: &mut Bot) -> Result<Vec<String>> {
    bot.send(&format!("WHOIS {NICK}")).await?;
    let mut lines = Vec::new();
    loop {
        let l = bot
            .wait_for(|l| Msg::parse(l).command.starts_with('3'), WAIT)
            .await?;
        let end = Msg::parse(&l).command == "318";
        lines.push(l);
        if end {
            return Ok(lines);
        }
    }
}

/// Every line a bot says with `h` in it: the ways an outside party can put a held secret in
/// front of the session (the target is a channel or our nick).
fn planted_texts(h: &str) -> Vec<String> {
    let mut texts = vec![
        format!("the secret is {h}"),
        h.to_ascii_uppercase(),
        h.to_ascii_lowercase(),
        format!("pre{h}post"),
        format!("see https://example.org/login?user={NICK}&pw={h}#top"),
    ];
    texts.extend(with_formatting(h));
    texts
}

/// The bots' script: every held secret in every place. Returns the user that stays in the
/// channel with a secret in its nick.
async fn plant_held(port: u16, planter: &mut Bot) -> Result<Bot> {
    for h in [SERVER_PW, SASL_PW, KEY, QUIET_KEY] {
        for text in planted_texts(h) {
            planter.privmsg(CHANNEL, &text).await?;
            planter.privmsg(NICK, &text).await?;
        }
        planter
            .send(&format!("NOTICE {CHANNEL} :notice {h}"))
            .await?;
        planter.send(&format!("NOTICE {NICK} :{h}")).await?;
        planter
            .privmsg(CHANNEL, &format!("\u{1}ACTION whispers {h}\u{1}"))
            .await?;
        // A CTCP PING we answer with its argument, and one we do not know.
        planter
            .privmsg(NICK, &format!("\u{1}PING {h}\u{1}"))
            .await?;
        planter
            .privmsg(NICK, &format!("\u{1}CORPUS {h}\u{1}"))
            .await?;
        planter
            .send(&format!("TOPIC {CHANNEL} :topic holding {h}"))
            .await?;
        synced(planter, "said").await?;

        // Nicks holding it: a user joins as one, another changes to one.
        let mut joiner = bot(port, &format!("j{h}")).await?;
        joiner.send(&format!("JOIN {CHANNEL} {KEY}")).await?;
        let mut changer = bot(port, "nickplanter").await?;
        changer.send(&format!("JOIN {CHANNEL} {KEY}")).await?;
        synced(&mut changer, "joined").await?;
        changer.send(&format!("NICK n{h}")).await?;
        changer
            .send(&format!("PART {CHANNEL} :parting with {h}"))
            .await?;
        synced(&mut changer, "parted").await?;
        synced(&mut joiner, "joined").await?;
        planter
            .send(&format!("KICK {CHANNEL} j{h} :kicked for {h}"))
            .await?;
        synced(planter, "kicked").await?;
        joiner.send(&format!("QUIT :quitting with {h}")).await?;
        changer.send(&format!("QUIT :quitting with {h}")).await?;
        joiner.wait_closed(DEFAULT_TIMEOUT).await?;
        changer.wait_closed(DEFAULT_TIMEOUT).await?;
    }
    // A user that stays, holding a secret in its nick, so list_members and find_user meet it.
    let mut stayer = bot(port, &format!("s{KEY}")).await?;
    stayer.send(&format!("JOIN {CHANNEL} {KEY}")).await?;
    synced(&mut stayer, "stays").await?;
    planter.privmsg(CHANNEL, "corpus-done").await?;
    synced(planter, "done").await?;
    Ok(stayer)
}

/// The agent's own send_raw lines.
fn agent_lines() -> Vec<String> {
    vec![
        format!("OPER {OPER_NAME} {OPER_PW}"),
        format!("PRIVMSG NickServ :IDENTIFY {NS_ACCOUNT} {NS_PW}"),
        format!("NS IDENTIFY {NS_ACCOUNT} {NS_PW}"),
        // A comma target: the channel's echo-message copy carries it in a plain message.
        format!("PRIVMSG {CHANNEL},NickServ :IDENTIFY {NS_ACCOUNT} {NS_PW}"),
        format!("PASS {SERVER_PW}"),
        format!("PING :split\r\nPRIVMSG NickServ :IDENTIFY {NS_ACCOUNT} {NS_PW}"),
    ]
}

/// The agent script and the helpers it imports, copied where reterm's user can read them.
fn agent_dir() -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("corpus-agent-").tempdir()?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/control");
    for f in ["corpus_agent.py", "sdk.py", "identity.py", "masking.py"] {
        fs::copy(src.join(f), dir.path().join(f))?;
        fs::set_permissions(dir.path().join(f), fs::Permissions::from_mode(0o644))?;
    }
    Ok(dir)
}

/// Runs one phase of the agent as reterm's user; returns what it was answered.
async fn agent(home: &Path, dir: &Path, control: u16, phase: &str) -> Result<Value> {
    let python = std::env::var("RETE_VENV").unwrap_or_else(|_| "/opt/rete-venv".into());
    let mut argv = unprivileged::setpriv_prefix();
    argv.push(format!("{python}/bin/python"));
    argv.push(dir.join("corpus_agent.py").display().to_string());
    argv.push(phase.to_owned());
    let tools: Vec<&str> = rete_mcp::tools::TOOLS
        .iter()
        .map(|t| t.spec().name)
        .collect();
    let input = json!({"port": control, "tools": tools, "lines": agent_lines()});
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the agent")?;
    let mut stdin = child.stdin.take().context("agent stdin")?;
    stdin.write_all(input.to_string().as_bytes()).await?;
    drop(stdin);
    let out = tokio::time::timeout(AGENT_WAIT, child.wait_with_output())
        .await
        .context("the agent ran too long")??;
    // Its stderr can only hold a traceback of our own script; its stdout only a count.
    ensure!(
        out.status.success(),
        "the {phase} agent failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = home.join(format!("corpus-{phase}.json"));
    let text = fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    Ok(serde_json::from_str(&text)?)
}

/// Scans every answer of an agent phase.
fn scan_calls(secrets: &[Secret], phase: &str, answers: &Value, scanned: &mut Scanned) {
    for (i, call) in answers["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let tool = call["tool"].as_str().unwrap_or("?");
        let text = call["text"].as_str().unwrap_or_default();
        scanned.answer(secrets, &format!("{phase} call #{i} {tool}"), text);
    }
}

/// The screen's rows joined, without the input line (which echoes what was typed).
fn screen_text(rows: &[String]) -> String {
    rows[..rows.len().saturating_sub(1)].join("\n")
}

/// Scans what `term` shows, scrolled back a page at a time to the first row, then returns it
/// to the end. Returns how many non-blank rows it saw.
async fn scan_scrollback(
    term: &mut PtyReterm,
    secrets: &[Secret],
    place: &str,
    scanned: &mut Scanned,
) -> Result<usize> {
    let mut seen = 0;
    let mut rows = term.rows();
    for page in 0..400 {
        let text = screen_text(&rows);
        seen += text.lines().filter(|l| !l.trim().is_empty()).count();
        scanned.text(secrets, &format!("{place}, page {page}"), &text);
        term.keys("\u{1b}[5~")?; // PgUp
        let before = rows.clone();
        match term
            .wait_screen("a scrolled page", |r| r != before.as_slice(), SETTLE)
            .await
        {
            Ok(r) => rows = r,
            Err(_) => break,
        }
    }
    term.keys("\u{1b}[1;5F")?; // Ctrl-End: back to the newest row.
    Ok(seen)
}

/// Switches to buffer `n`; false when there is none.
async fn show_buffer(term: &mut PtyReterm, n: usize) -> Result<bool> {
    term.line(&format!("/buffer {n}"))?;
    let tag = format!("[{n}:");
    let shown = term
        .wait_screen(
            "the buffer",
            |r| r.iter().rev().take(3).any(|l| l.contains(&tag)),
            Duration::from_secs(2),
        )
        .await;
    Ok(shown.is_ok())
}

/// Every buffer of reterm's screen, the raw buffer and the AI access log, scanned.
async fn scan_screens(
    term: &mut PtyReterm,
    all: &[Secret],
    raw: &[Secret],
    stage: &str,
    scanned: &mut Scanned,
) -> Result<()> {
    let mut buffers = 0;
    for n in 1..=20 {
        if !show_buffer(term, n).await? {
            break;
        }
        let seen = scan_scrollback(
            term,
            all,
            &format!("{stage}: screen of buffer {n}"),
            scanned,
        )
        .await?;
        ensure!(seen > 0, "{stage}: buffer {n} showed nothing");
        buffers += 1;
    }
    ensure!(buffers >= 5, "{stage}: only {buffers} buffers on screen");
    show_buffer(term, 2).await?;
    term.line("/raw")?;
    term.wait_text("PING", WAIT).await?;
    let seen = scan_scrollback(term, raw, &format!("{stage}: raw buffer"), scanned).await?;
    ensure!(seen > 20, "{stage}: the raw buffer showed {seen} rows");
    term.line("/close")?;
    term.line("/control log")?;
    term.wait_text("send_raw", WAIT).await?;
    let seen = scan_scrollback(term, all, &format!("{stage}: /control log"), scanned).await?;
    ensure!(seen > 5, "{stage}: /control log showed {seen} rows");
    Ok(())
}

/// Every transcript file, scanned (all but `skip`, which hold what others said).
fn scan_transcripts(
    logs: &Path,
    secrets: &[Secret],
    stage: &str,
    skip: &[&str],
    scanned: &mut Scanned,
) -> Result<usize> {
    let files = all_files(logs)?;
    let mut n = 0;
    for (path, text) in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if skip
            .iter()
            .any(|s| name.eq_ignore_ascii_case(&format!("{s}.log")))
        {
            continue;
        }
        ensure!(!text.is_empty(), "{} is empty", path.display());
        scanned.text(secrets, &format!("{stage}: {}", path.display()), text);
        n += 1;
    }
    Ok(n)
}

fn transcript_names(logs: &Path) -> Result<BTreeSet<String>> {
    Ok(all_files(logs)?
        .iter()
        .filter_map(|(p, _)| {
            p.file_name()
                .and_then(|n| n.to_str())
                .map(str::to_lowercase)
        })
        .collect())
}

/// What every tool answered: each of `TOOLS` at least once without an error and non-empty,
/// tools/list naming exactly them; subscriptions delivered message, raw and log events; and
/// the held secrets reached the surface (something was withheld).
fn check_coverage(answers: &Value) -> Result<()> {
    let calls = answers["calls"].as_array().context("no calls")?;
    let names: BTreeSet<&str> = rete_mcp::tools::TOOLS
        .iter()
        .map(|t| t.spec().name)
        .collect();
    let listed = calls
        .iter()
        .find(|c| c["tool"] == "tools/list")
        .and_then(|c| serde_json::from_str::<Vec<String>>(c["text"].as_str()?).ok())
        .context("no tools/list")?;
    ensure!(
        listed.iter().map(String::as_str).collect::<BTreeSet<_>>() == names,
        "tools/list {listed:?} is not TOOLS {names:?}"
    );
    for name in &names {
        ensure!(
            calls.iter().any(|c| c["tool"] == *name
                && c["is_error"] == false
                && c["text"].as_str().is_some_and(|t| t.len() > 2)),
            "{name} never answered without an error"
        );
    }
    let text = |c: &Value| c["text"].as_str().unwrap_or_default().to_owned();
    let events = |kind: &str| {
        calls
            .iter()
            .filter(|c| c["tool"] == "read_updates" || c["tool"] == "wait_for_updates")
            .filter_map(|c| serde_json::from_str::<Value>(&text(c)).ok())
            .flat_map(|v| v["updates"].as_array().cloned().unwrap_or_default())
            .flat_map(|u| u["events"].as_array().cloned().unwrap_or_default())
            .filter(|e| e["type"] == kind)
            .count()
    };
    for kind in ["message", "raw", "log"] {
        ensure!(events(kind) > 0, "no subscription delivered a {kind} event");
    }
    let withheld: u64 = calls
        .iter()
        .filter_map(|c| serde_json::from_str::<Value>(&text(c)).ok())
        .map(|v| sum_withheld(&v))
        .sum();
    ensure!(withheld >= 20, "only {withheld} withheld in all answers");
    Ok(())
}

fn sum_withheld(v: &Value) -> u64 {
    match v {
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("withheld", Value::Number(n)) => n.as_u64().unwrap_or(0),
                _ => sum_withheld(v),
            })
            .sum(),
        Value::Array(a) => a.iter().map(sum_withheld).sum(),
        _ => 0,
    }
}

fn token(home: &Path) -> Result<String> {
    use base64::Engine as _;
    let text = fs::read_to_string(home.join(".rete/secrets.json"))?;
    let v: Value = serde_json::from_str(&text)?;
    let b64 = v["mcp-token-reterm"].as_str().context("no token")?;
    Ok(String::from_utf8(
        base64::engine::general_purpose::STANDARD.decode(b64)?,
    )?)
}

fn fail_on_leaks(scanned: &Scanned, what: &str) -> Result<()> {
    if scanned.leaks.is_empty() {
        return Ok(());
    }
    bail!(
        "{} leak(s) {what}:\n{}",
        scanned.leaks.len(),
        scanned.report()
    )
}

/// The control token, once read, so a failure message can be scrubbed of it.
static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// `text` with every corpus value (as planted, and case-folded either way) masked: a
/// failure's message can quote a bot's last lines or a screen, which hold planted secrets.
fn scrubbed(text: &str) -> String {
    let mut values: Vec<String> = [
        SERVER_PW, SASL_PW, KEY, QUIET_KEY, OPER_PW, NS_PW, SMSG, AUTH_PW,
    ]
    .iter()
    .map(|v| v.to_string())
    .chain(TOKEN.get().cloned())
    .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = text.to_owned();
    for v in values {
        for form in [v.clone(), v.to_ascii_lowercase(), v.to_ascii_uppercase()] {
            out = out.replace(&form, "********");
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_of_the_corpus_leaves_through_any_surface() -> Result<()> {
    corpus_run()
        .await
        .map_err(|e| anyhow::anyhow!(scrubbed(&format!("{e:#}"))))
}

async fn corpus_run() -> Result<()> {
    let mut ircd_config = InspircdConfig::new().password(SERVER_PW).services();
    for line in oper_config() {
        ircd_config = ircd_config.extra(&line);
    }
    let ircd = Inspircd::start(ircd_config).await?;
    let atheme = Atheme::start(&ircd).await?;
    register(ircd.port(), SASL_ACCOUNT, SASL_PW)
        .await
        .with_context(|| atheme.log())?;
    register(ircd.port(), NS_ACCOUNT, NS_PW)
        .await
        .with_context(|| atheme.log())?;

    let mut planter = bot(ircd.port(), PLANTER).await?;
    planter.join(CHANNEL).await?;
    planter.join(QUIET).await?;
    planter.send(&format!("MODE {CHANNEL} +k {KEY}")).await?;
    planter
        .send(&format!("MODE {QUIET} +k {QUIET_KEY}"))
        .await?;
    synced(&mut planter, "keyed").await?;

    let control = free_port()?;
    let home = unprivileged::home(&config(control, ircd.port()))?;
    let logs = home.path().join(".rete").join("logs");
    let mut term = PtyReterm::spawn_unprivileged(RETERM, home.path(), &[], ROWS, COLS)?;
    for channel in [CHANNEL, QUIET] {
        planter
            .wait_for(
                |l| {
                    let m = Msg::parse(l);
                    m.command == "JOIN"
                        && l.starts_with(&format!(":{NICK}!"))
                        && m.param(0).eq_ignore_ascii_case(channel)
                },
                WAIT,
            )
            .await
            .with_context(|| atheme.log())?;
    }
    // SASL logged us in: the server names the account.
    ensure!(
        whois(&mut planter)
            .await?
            .iter()
            .any(|l| { Msg::parse(l).command == "330" && Msg::parse(l).param(2) == SASL_ACCOUNT }),
        "SASL did not log in"
    );

    // The person's own secrets: /oper (the server makes us an operator), a NickServ login
    // (the account changes), /smsg (the planter reads it in full).
    term.line(&format!("/oper {OPER_NAME} {OPER_PW}"))?;
    term.line(&format!("/msg NickServ IDENTIFY {NS_ACCOUNT} {NS_PW}"))?;
    term.line(&format!("/smsg {PLANTER} {SMSG}"))?;
    // A service that echoes the password it was given: the echo is withheld from every tool
    // and masked on screen, in transcripts and in the raw buffer.
    let mut authserv = bot(ircd.port(), "AuthServ").await?;
    term.line(&format!("/msg AuthServ AUTH rtauth {AUTH_PW}"))?;
    authserv
        .wait_for(|l| l.ends_with(AUTH_PW), WAIT)
        .await
        .context("the AuthServ login never arrived")?;
    authserv
        .send(&format!(
            "NOTICE {NICK} :you are now identified with {AUTH_PW}"
        ))
        .await?;
    synced(&mut authserv, "echoed").await?;
    planter
        .wait_for(|l| l.ends_with(SMSG), WAIT)
        .await
        .context("the /smsg text never arrived")?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let w = whois(&mut planter).await?;
        let oper = w.iter().any(|l| Msg::parse(l).command == "313");
        let account = w
            .iter()
            .any(|l| Msg::parse(l).command == "330" && Msg::parse(l).param(2) == NS_ACCOUNT);
        if oper && account {
            break;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "/oper or IDENTIFY did not take: {}",
            atheme.log()
        );
        synced(&mut planter, "whois-again").await?;
    }
    term.line("/control status")?;
    term.wait_text(&format!("AI access on, port {control}"), WAIT)
        .await?;
    term.line("/set control.send on")?;
    term.wait_text("control.send is on until reterm quits", WAIT)
        .await?;
    let token = token(home.path())?;
    let _ = TOKEN.set(token.clone());
    let held = held();
    let own = own(&token);
    let all: Vec<Secret> = held.iter().chain(own.iter()).cloned().collect();

    // The agent subscribes (every kind) and sends its own secret lines.
    let dir = agent_dir()?;
    let planted = agent(home.path(), dir.path(), control, "plant").await?;
    let mut scanned = Scanned::default();
    scan_calls(&all, "plant", &planted, &mut scanned);
    let refused = planted["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["tool"] == "send_raw" && c["is_error"] == true)
        .count();
    ensure!(
        refused == 1,
        "{refused} send_raw lines refused, not the split one alone"
    );

    // Before anyone else says a secret: every screen and transcript, for every secret (the raw
    // buffer shows the channel keys in our JOIN, by design).
    let raw_screen: Vec<Secret> = all
        .iter()
        .filter(|s| !s.name.contains("channel key"))
        .cloned()
        .collect();
    scan_screens(
        &mut term,
        &all,
        &raw_screen,
        "before planting",
        &mut scanned,
    )
    .await?;
    let files = scan_transcripts(&logs, &all, "before planting", &[], &mut scanned)?;
    ensure!(files >= 3, "only {files} transcripts before planting");
    fail_on_leaks(&scanned, "before the bots spoke")?;

    // The bots plant the held secrets; the session has them once it shows the last line.
    term.line(&format!("/buffer {CHANNEL}"))?;
    let stayer = plant_held(ircd.port(), &mut planter).await?;
    term.wait_text("corpus-done", WAIT).await?;

    let read = agent(home.path(), dir.path(), control, "read").await?;
    let status = read["wrong_token_status"].as_u64().unwrap_or(0);
    ensure!(status == 403 || status == 401, "a wrong token got {status}");
    let mut both = planted["calls"].as_array().cloned().unwrap_or_default();
    both.extend(read["calls"].as_array().cloned().unwrap_or_default());
    check_coverage(&json!({ "calls": both }))?;
    scan_calls(&all, "read", &read, &mut scanned);
    // Everything the agent did is in the access log now; screens hold what others said, so
    // they are scanned for own secrets only (the access log for every one).
    scan_screens(&mut term, &own, &own, "after planting", &mut scanned).await?;
    term.line("/control log")?;
    term.wait_text("read_log", WAIT).await?;
    scan_scrollback(
        &mut term,
        &all,
        "after planting: /control log",
        &mut scanned,
    )
    .await?;
    // The server buffer holds the planted CTCP requests (they open no query).
    let planted_in: Vec<String> = vec![
        CHANNEL.into(),
        PLANTER.into(),
        NET.into(),
        "(server)".into(),
    ];
    let skip: Vec<&str> = planted_in.iter().map(String::as_str).collect();
    scan_transcripts(&logs, &own, "after planting", &[], &mut scanned)?;
    let quiet = scan_transcripts(
        &logs,
        &all,
        "after planting (unplanted)",
        &skip,
        &mut scanned,
    )?;
    ensure!(
        quiet >= 2,
        "only {quiet} unplanted transcripts: {:?}",
        transcript_names(&logs)?
    );

    term.line("/quit")?;
    ensure!(term.wait_exit(WAIT).await?, "reterm did not exit cleanly");
    scan_transcripts(&logs, &own, "after quitting", &[], &mut scanned)?;
    ensure!(
        scanned.texts > 100 && scanned.bytes > 100_000,
        "scanned only {} texts, {} bytes",
        scanned.texts,
        scanned.bytes
    );
    // Counts only: what was looked at, never what it held.
    eprintln!(
        "scanned {} texts ({} bytes) for {} secrets",
        scanned.texts,
        scanned.bytes,
        all.len()
    );
    fail_on_leaks(&scanned, "in all")?;
    drop((planter, stayer, authserv));
    Ok(())
}
