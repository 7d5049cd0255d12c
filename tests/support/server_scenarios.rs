//! The scenarios every server and bouncer in the tests must pass, written once and run by
//! `tests/servers_*.rs` against InspIRCd, ngircd and ZNC (in front of either).
//!
//! A [`Target`] says where the session connects (the server, or ZNC in front of it) and
//! where the bots connect (always the server itself). The scenarios run one after another
//! on one server per test binary, each naming itself in its error, so the servers start
//! once. Bots send few lines: ngircd paces every client to about one command a second.

use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use rete_actors::{RawOutHook, ReteOptions, Verdict};
use rete_engine::buffer::BufferKind;
use rete_engine::event::{ConnState, Event};
use rete_engine::ids::BufferId;
use rete_engine::ids::SessionId;
use rete_engine::row::{Payload, Row};
use rete_engine::session::ChannelSpec;
use std::sync::{Arc, Mutex};

use super::bot::{Bot, BotConfig, DEFAULT_TIMEOUT};
use super::inspircd::Inspircd;
use super::live_tests_session::{
    bot_sees_member, eventually, is_status, plain, session_config, spec, Live, WAIT,
};
use super::msg::Msg;
use super::ngircd::Ngircd;
use super::znc::Znc;

/// Our nick. Nine characters at most: ngircd's default nick length.
pub const ME: &str = "rete";
/// The nick `/nick` changes to (kept across reconnects).
pub const RENAMED: &str = "retex";

/// The IRC server under test.
pub enum Server {
    /// InspIRCd 3.
    Inspircd(Inspircd),
    /// ngircd 26.
    Ngircd(Ngircd),
}

impl Server {
    /// The client port.
    pub fn port(&self) -> u16 {
        match self {
            Server::Inspircd(s) => s.port(),
            Server::Ngircd(s) => s.port(),
        }
    }

    /// Kills the server and starts it again on the same port.
    pub async fn restart(&mut self) -> Result<()> {
        match self {
            Server::Inspircd(s) => s.restart().await,
            Server::Ngircd(s) => s.restart().await,
        }
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        match self {
            Server::Inspircd(s) => s.log(),
            Server::Ngircd(s) => s.log(),
        }
    }
}

/// Where the session and the bots connect.
pub struct Target {
    /// The server (bots always connect here).
    pub server: Server,
    /// The server's connection password (every client sends it).
    pub password: String,
    /// ZNC in front of the server, when the session goes through it.
    pub znc: Option<Znc>,
}

impl Target {
    /// A bot on the server.
    pub async fn bot(&self, nick: &str) -> Result<Bot> {
        Bot::connect_with(BotConfig::new(self.server.port(), nick).password(&self.password)).await
    }

    /// A session for `nick` with this login (the right one unless told otherwise).
    pub async fn session(&self, nick: &str, channels: &[&str], wrong_login: bool) -> Result<Live> {
        self.session_with(nick, channels, wrong_login, ReteOptions::default())
            .await
    }

    /// [`Target::session`] with engine options (a raw-out hook).
    pub async fn session_with(
        &self,
        nick: &str,
        channels: &[&str],
        wrong_login: bool,
        options: ReteOptions,
    ) -> Result<Live> {
        let mut config = session_config(nick);
        config.channels = channels
            .iter()
            .map(|c| ChannelSpec {
                name: (*c).to_owned(),
                key: None,
            })
            .collect();
        let (port, login) = match &self.znc {
            Some(znc) if wrong_login => (znc.port(), znc.wrong_login()),
            Some(znc) => (znc.port(), znc.login()),
            None if wrong_login => (self.server.port(), format!("not-{}", self.password)),
            None => (self.server.port(), self.password.clone()),
        };
        config.password = Some(login);
        Live::start_with(options, spec(config, plain(port))).await
    }

    /// Everything the servers said, for failure messages.
    pub fn logs(&self) -> String {
        let znc = self.znc.as_ref().map(Znc::log).unwrap_or_default();
        format!("{}\n{znc}", self.server.log())
    }
}

/// Runs one scenario (an expression yielding a future of `Result<()>`), naming it and
/// adding the servers' logs to its error.
#[macro_export]
macro_rules! scenario {
    ($target:expr, $name:literal, $run:expr) => {{
        let result: anyhow::Result<()> = $run.await;
        if let Err(e) = result {
            let logs = $target.logs();
            return Err(e.context(format!("scenario {:?} failed\n{logs}", $name)));
        }
    }};
}

fn payload_text(row: &Row) -> Option<&str> {
    match &row.payload {
        Payload::Privmsg { text } | Payload::Notice { text } | Payload::Action { text } => {
            Some(text)
        }
        _ => None,
    }
}

/// Waits for a row in `id` from `from` whose kind is `kind` and text is `text`.
async fn wait_said(live: &Live, id: &BufferId, from: &str, kind: &str, text: &str) -> Result<Row> {
    let (from, kind, text) = (from.to_owned(), kind.to_owned(), text.to_owned());
    live.wait_row(&format!("{kind} {text:?} from {from}"), id, move |r| {
        r.from.eq_ignore_ascii_case(&from)
            && r.kind().as_str() == kind
            && payload_text(r) == Some(text.as_str())
    })
    .await
}

/// The id of the query buffer with `nick`, once it exists.
async fn query_id(live: &Live, nick: &str) -> Result<BufferId> {
    let nick = nick.to_ascii_lowercase();
    live.wait_for(&format!("the query with {nick}"), move |v| {
        v.find_buffer(BufferKind::Query, &nick).cloned()
    })
    .await
}

/// Waits until `bot` sees a line satisfying `pred`.
async fn bot_sees(bot: &mut Bot, pred: impl FnMut(&str) -> bool) -> Result<String> {
    bot.wait_for(pred, DEFAULT_TIMEOUT).await
}

/// Registers, joins, and sees every kind of message land in the right buffer; sends one.
pub async fn messages(live: &Live, alice: &mut Bot) -> Result<()> {
    alice.join("#scen").await?;
    live.handle
        .sender()
        .command(|c| c.join("#scen", None))
        .await
        .context("joining #scen")?;
    let chan = live.wait_joined("#scen").await?;
    bot_sees_member(alice, ME, "#scen").await?;

    alice.privmsg("#scen", "hello channel").await?;
    alice.send("NOTICE #scen :channel notice").await?;
    alice.send("PRIVMSG #scen :\u{1}ACTION waves\u{1}").await?;
    alice.privmsg(ME, "hello you").await?;
    wait_said(live, &chan, "alice", "privmsg", "hello channel").await?;
    wait_said(live, &chan, "alice", "notice", "channel notice").await?;
    wait_said(live, &chan, "alice", "action", "waves").await?;
    let query = query_id(live, "alice").await?;
    wait_said(live, &query, "alice", "privmsg", "hello you").await?;
    // A private notice goes to the query once one exists.
    alice.send(&format!("NOTICE {ME} :private notice")).await?;
    wait_said(live, &query, "alice", "notice", "private notice").await?;
    // A CTCP VERSION is stored as CTCP, in the server buffer even with a query open (it is the
    // protocol's, not the conversation's), and answered (the protocol's own answer).
    alice
        .send(&format!("PRIVMSG {ME} :\u{1}VERSION\u{1}"))
        .await?;
    let server = live.read(|v| v.server_buffer().clone()).await?;
    live.wait_row(
        "the CTCP VERSION",
        &server,
        |r| matches!(&r.payload, Payload::Ctcp { command, .. } if &**command == "VERSION"),
    )
    .await?;
    bot_sees(alice, |l| {
        let m = Msg::parse(l);
        m.command == "NOTICE" && m.param(1).starts_with("\u{1}VERSION Rete")
    })
    .await?;

    live.handle
        .sender()
        .command(|c| c.privmsg("#scen", "hi alice"))
        .await
        .context("sending to #scen")?;
    bot_sees(alice, |l| {
        let m = Msg::parse(l);
        m.command == "PRIVMSG" && m.param(0) == "#scen" && m.param(1) == "hi alice"
    })
    .await?;
    let nick = live.read(|v| v.nick().to_owned()).await?;
    wait_said(live, &chan, &nick, "privmsg", "hi alice").await?;
    Ok(())
}

/// Nick changes: another user's is shown in the channel; ours is confirmed by the server.
pub async fn nick_change(live: &Live, alice: &mut Bot) -> Result<()> {
    let chan = live.channel_id("#scen").await?;
    alice.send("NICK alicia").await?;
    live.wait_row(
        "alice's nick change",
        &chan,
        |r| matches!(&r.payload, Payload::NickChanged { new_nick } if &**new_nick == "alicia"),
    )
    .await?;
    live.handle
        .sender()
        .command(|c| c.nick(RENAMED))
        .await
        .context("/nick")?;
    live.wait_for("our new nick", |v| (v.nick() == RENAMED).then_some(()))
        .await?;
    live.wait_events("the own-nick event", |e| {
        e.contains(&Event::OwnNick(RENAMED.to_owned()))
    })
    .await?;
    alice.send("NICK alice").await?;
    live.wait_member("alice back under her nick", &chan, |m| m.nick == "alice")
        .await?;
    Ok(())
}

/// A topic set by someone else reaches the channel's state.
pub async fn topic(live: &Live, alice: &mut Bot) -> Result<()> {
    let chan = live.channel_id("#scen").await?;
    alice.send("TOPIC #scen :a new topic").await?;
    let id = chan.clone();
    live.wait_for("the new topic", move |v| {
        (v.channel(&id)?.topic.as_deref() == Some("a new topic")).then_some(())
    })
    .await?;
    Ok(())
}

/// Kicked from #kick: we leave it, and text for it is refused here instead of being sent.
pub async fn kick(live: &Live, alice: &mut Bot) -> Result<()> {
    alice.join("#kick").await?;
    live.handle
        .sender()
        .command(|c| c.join("#kick", None))
        .await?;
    let chan = live.wait_joined("#kick").await?;
    let me = live.read(|v| v.nick().to_owned()).await?;
    bot_sees_member(alice, &me, "#kick").await?;
    alice.send(&format!("KICK #kick {me} :out you go")).await?;
    live.wait_row("our kick", &chan, |r| {
        matches!(&r.payload, Payload::UserKicked { reason, .. } if reason.as_deref() == Some("out you go"))
    })
    .await?;
    let id = chan.clone();
    live.wait_for("#kick left", move |v| {
        (!v.channel(&id)?.joined).then_some(())
    })
    .await?;
    let refused = live
        .handle
        .sender()
        .command(|c| c.privmsg("#kick", "let me back"))
        .await;
    let err = match refused {
        Ok(()) => bail!("text for a channel we were kicked from was sent"),
        Err(e) => e.to_string(),
    };
    ensure!(err.contains("you are not in #kick"), "{err}");
    Ok(())
}

/// /part leaves a channel.
pub async fn part(live: &Live, alice: &mut Bot) -> Result<()> {
    alice.join("#gone").await?;
    live.handle
        .sender()
        .command(|c| c.join("#gone", None))
        .await?;
    let chan = live.wait_joined("#gone").await?;
    live.handle
        .sender()
        .command(|c| c.part("#gone", Some("bye")))
        .await?;
    let me = live.read(|v| v.nick().to_owned()).await?;
    bot_sees(alice, |l| {
        let m = Msg::parse(l);
        m.command == "PART" && m.source_nick() == Some(me.as_str())
    })
    .await?;
    live.wait_for("#gone left", move |v| {
        (!v.channel(&chan)?.joined).then_some(())
    })
    .await?;
    Ok(())
}

/// The server restarts: the session reconnects under the nick chosen with /nick, rejoins
/// #scen, and neither the kicked #kick nor the parted #gone.
pub async fn server_restart(target: &mut Target, live: &Live) -> Result<()> {
    target.server.restart().await?;
    live.wait_events("the reconnecting state", |e| {
        e.contains(&Event::State(ConnState::Reconnecting))
    })
    .await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_joined("#scen").await?;
    ensure!(
        live.read(|v| v.nick().to_owned()).await? == RENAMED,
        "the /nick nick was not kept: {}",
        live.dump().await
    );
    // Rejoins go out together right after 001; #scen is joined, so the others had their turn.
    let joined: Vec<String> = live
        .read(|v| {
            v.buffers()
                .filter(|b| b.kind() == BufferKind::Channel)
                .filter(|b| v.channel(b.id()).is_some_and(|c| c.joined))
                .map(|b| b.name().to_owned())
                .collect()
        })
        .await?;
    ensure!(joined == ["#scen"], "joined after the restart: {joined:?}");
    Ok(())
}

/// The configured nick is taken: the session registers under a fallback that fits the
/// server's nick length, announced only once the server accepted it.
pub async fn nick_in_use(target: &Target) -> Result<()> {
    // Nine characters, so a fallback with a tail needs truncating on ngircd (NICKLEN 9).
    let holder = target.bot("ninenicks").await?;
    let live = target.session("ninenicks", &[], false).await?;
    live.wait_state(ConnState::Connected).await?;
    let nick = live.read(|v| v.nick().to_owned()).await?;
    ensure!(
        nick != "ninenicks" && nick.starts_with("ninenick"),
        "registered as {nick}"
    );
    let own: Vec<Event> = live
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::OwnNick(_)))
        .collect();
    ensure!(own == [Event::OwnNick(nick.clone())], "{own:?}");
    holder.quit().await;
    Ok(())
}

/// A nick no server takes (a leading digit): one NICK, one line saying what to do, still
/// connected and not registered; `/nick` then registers.
pub async fn nick_refused(target: &Target) -> Result<()> {
    let live = target.session("1rete", &[], false).await?;
    live.wait_server_row("the give-up line", |r| {
        is_status(r, "No nick was accepted") && is_status(r, "/nick")
    })
    .await?;
    let texts: Vec<String> = live
        .server_rows()
        .await?
        .iter()
        .map(super::live_tests_session::text)
        .collect();
    ensure!(
        texts
            .iter()
            .any(|t| t.contains("is invalid on this server")),
        "{texts:#?}"
    );
    ensure!(!live.events().contains(&Event::Registered));
    live.handle
        .sender()
        .command(|c| c.nick("rescued"))
        .await
        .context("/nick while registering")?;
    live.wait_state(ConnState::Connected).await?;
    ensure!(live.read(|v| v.nick().to_owned()).await? == "rescued");
    Ok(())
}

/// A wrong password: refused once, not retried, and the session says how to retry.
pub async fn wrong_password(target: &Target) -> Result<()> {
    let live = target.session("guesser", &[], true).await?;
    live.wait_server_row("the not-reconnecting line", |r| {
        is_status(r, "Not reconnecting")
    })
    .await?;
    live.wait_events("the disconnected state", |e| {
        e.last() == Some(&Event::State(ConnState::Disconnected))
    })
    .await?;
    // A retry always passes through Reconnecting (set when the actor schedules it).
    ensure!(
        !live.states().contains(&ConnState::Reconnecting),
        "retried: {:?}",
        live.states()
    );
    ensure!(!live.events().contains(&Event::Registered));
    Ok(())
}

/// The whole suite for a server the session connects to directly.
pub async fn direct_suite(target: &mut Target) -> Result<()> {
    scenario!(target, "wrong password", wrong_password(target));
    scenario!(target, "nick in use", nick_in_use(target));
    scenario!(target, "nick refused", nick_refused(target));
    let live = target.session(ME, &[], false).await?;
    live.wait_state(ConnState::Connected).await?;
    let mut alice = target.bot("alice").await?;
    scenario!(target, "messages", messages(&live, &mut alice));
    scenario!(target, "nick change", nick_change(&live, &mut alice));
    scenario!(target, "topic", topic(&live, &mut alice));
    scenario!(target, "kick", kick(&live, &mut alice));
    scenario!(target, "part", part(&live, &mut alice));
    alice.quit().await;
    scenario!(target, "server restart", server_restart(target, &live));
    Ok(())
}

/// Every JOIN line the session sent, in order.
#[derive(Default)]
pub struct JoinRecorder {
    joins: Mutex<Vec<String>>,
}

impl JoinRecorder {
    fn since(&self, from: usize) -> Vec<String> {
        self.joins
            .lock()
            .map(|j| j.get(from..).unwrap_or_default().to_vec())
            .unwrap_or_default()
    }
}

impl RawOutHook for JoinRecorder {
    fn on_raw_out(&self, _session: &SessionId, line: &str) -> Verdict {
        if let Some(rest) = line.strip_prefix("JOIN ") {
            if let Ok(mut joins) = self.joins.lock() {
                joins.push(rest.to_owned());
            }
        }
        Verdict::Allow
    }
}

/// ZNC restarts: the session reconnects to it and asks again for the channels it wants:
/// #scen, and neither the kicked #kick nor the parted #gone. (Which channels ZNC itself
/// rejoins upstream is ZNC's business: it may have saved its channel list.)
pub async fn znc_restart(target: &mut Target, live: &Live, joins: &JoinRecorder) -> Result<()> {
    let Some(znc) = target.znc.as_mut() else {
        bail!("no ZNC in this target");
    };
    let before = joins.since(0).len();
    znc.restart().await?;
    live.wait_events("the reconnecting state", |e| {
        e.contains(&Event::State(ConnState::Reconnecting))
    })
    .await?;
    live.wait_state(ConnState::Connected).await?;
    // The rejoins go out together right after 001; whether ZNC can act on them at once
    // (it may not be back on the server yet) is ZNC's business.
    let asked = eventually("the JOIN for #scen", WAIT, || {
        let asked = joins.since(before);
        async move { asked.iter().any(|j| j == "#scen").then_some(asked) }
    })
    .await?;
    ensure!(
        !asked.iter().any(|j| j == "#kick" || j == "#gone"),
        "a kicked or parted channel asked for again: {asked:?}"
    );
    Ok(())
}

/// The suite through ZNC: what ZNC leaves to its client (registration and nick handling
/// are ZNC's own), then detach and reattach.
pub async fn znc_suite(target: &mut Target, keeps_buffer: bool) -> Result<()> {
    scenario!(target, "wrong ZNC password", wrong_password(target));
    scenario!(target, "reattach", znc_reattach(target, keeps_buffer));
    let joins = Arc::new(JoinRecorder::default());
    let options = ReteOptions {
        raw_out_hook: Some(joins.clone()),
    };
    let live = target.session_with(ME, &[], false, options).await?;
    live.wait_state(ConnState::Connected).await?;
    let mut alice = target.bot("alice").await?;
    scenario!(target, "messages", messages(&live, &mut alice));
    scenario!(target, "nick change", nick_change(&live, &mut alice));
    scenario!(target, "topic", topic(&live, &mut alice));
    scenario!(target, "kick", kick(&live, &mut alice));
    scenario!(target, "part", part(&live, &mut alice));
    alice.quit().await;
    scenario!(target, "ZNC restart", znc_restart(target, &live, &joins));
    Ok(())
}

/// Which rows of `id` say what, in display order: (text, history).
pub async fn said_rows(live: &Live, id: &BufferId) -> Result<Vec<(String, bool)>> {
    Ok(live
        .display(id)
        .await?
        .iter()
        .filter_map(|r| payload_text(r).map(|t| (t.to_owned(), r.history)))
        .collect())
}

/// Detach from ZNC, let `alice` talk, reattach: the playback lands in order, marked
/// history, and nothing is stored twice. With `keeps_buffer` (AutoClearChanBuffer =
/// false) ZNC replays everything on each attach, which must add nothing already held.
pub async fn znc_reattach(target: &Target, keeps_buffer: bool) -> Result<()> {
    let mut alice = target.bot("alice").await?;
    alice.join("#play").await?;
    let live = target.session(ME, &[], false).await?;
    live.wait_state(ConnState::Connected).await?;
    let chan = live.wait_joined("#play").await?;
    alice.privmsg("#play", "live one").await?;
    wait_said(&live, &chan, "alice", "privmsg", "live one").await?;

    let mut expected = vec![("live one".to_owned(), false)];
    for round in 1..=2 {
        live.handle.sender().disconnect(None);
        live.wait_state(ConnState::Disconnected).await?;
        znc_answers_for_us(&mut alice, &format!("detached {round}")).await?;
        let lines = [format!("away {round}a"), format!("away {round}b")];
        for l in &lines {
            alice.privmsg("#play", l).await?;
        }
        alice
            .send(&format!("NOTICE #play :away notice {round}"))
            .await?;
        alice.privmsg(ME, &format!("away private {round}")).await?;
        alice
            .send(&format!("NOTICE {ME} :away private notice {round}"))
            .await?;
        // ZNC reads its upstream in order, so once it answers this it has stored them.
        znc_answers_for_us(&mut alice, &format!("stored {round}")).await?;
        expected.extend(lines.iter().map(|l| (l.clone(), true)));
        expected.push((format!("away notice {round}"), true));
        live.handle.sender().connect();
        live.wait_state(ConnState::Connected).await?;
        let last = format!("away notice {round}");
        wait_said(&live, &chan, "alice", "notice", &last).await?;
        // ZNC sends the whole playback batch at once; a PING round trip through the
        // session's own connection is not available, so wait until alice's newest live line.
        let marker = format!("after {round}");
        alice.privmsg("#play", &marker).await?;
        wait_said(&live, &chan, "alice", "privmsg", &marker).await?;
        expected.push((marker, false));
        // Private lines are replayed too, into the query, as history; a notice like a privmsg.
        let query = query_id(&live, "alice").await?;
        let private_notice = format!("away private notice {round}");
        wait_said(&live, &query, "alice", "notice", &private_notice).await?;
        let private = said_rows(&live, &query).await?;
        for text in [format!("away private {round}"), private_notice] {
            let copies: Vec<_> = private.iter().filter(|(t, _)| *t == text).collect();
            ensure!(
                copies == [&(text.clone(), true)],
                "{text:?} in the query: {private:#?}"
            );
        }
        let got = said_rows(&live, &chan).await?;
        ensure!(
            got == expected,
            "round {round} (ZNC keeps its buffer: {keeps_buffer}):\n got {got:#?}\nwant {expected:#?}"
        );
    }
    alice.quit().await;
    Ok(())
}

/// Sends us a CTCP PING and waits for ZNC's own answer. ZNC answers a CTCP
/// PING itself only while no client is attached, and reads its upstream
/// connection in order: the answer proves both that ZNC has seen our detach
/// and that it has read everything `bot` sent before. (A PONG from the server
/// to `bot` proves neither: the server may not have written to ZNC yet.)
async fn znc_answers_for_us(bot: &mut Bot, token: &str) -> Result<()> {
    let token = token.replace(' ', "-");
    bot.send(&format!("PRIVMSG {ME} :\u{1}PING {token}\u{1}"))
        .await?;
    bot_sees(bot, |l| {
        let m = Msg::parse(l);
        m.command == "NOTICE" && m.param(1) == format!("\u{1}PING {token}\u{1}")
    })
    .await
    .with_context(|| format!("ZNC answering CTCP PING {token} while we are detached"))?;
    Ok(())
}

/// Waits until `nick` is on the server (ZNC connected upstream), asking with WHOIS.
pub async fn wait_on_server(target: &Target, nick: &str) -> Result<()> {
    let mut bot = target.bot("watcher").await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        bot.send(&format!("WHOIS {nick}")).await?;
        let reply = bot
            .wait_for(
                |l| matches!(Msg::parse(l).command, "311" | "401"),
                DEFAULT_TIMEOUT,
            )
            .await?;
        if Msg::parse(&reply).command == "311" {
            bot.quit().await;
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "{nick} did not reach the server within {WAIT:?}:\n{}",
                target.logs()
            );
        }
        // ZNC connects on its own schedule; ask again shortly.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
