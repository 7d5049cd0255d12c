//! The ReteCloud client transport through the engine's facade, against real
//! processes on loopback: `Rete` ↔ `rete-cloud` ↔ InspIRCd, with a bot.
//! Attach and read; detach, traffic, reattach with exactly the missed rows;
//! a send reaching IRC and shown once; `/smsg` refused; token rotation
//! while attached, stored before it is acknowledged and usable by a new
//! engine; an unknown token stopping the retries with a clear state; the
//! raw tap seeing masked frames (received ones only while shown).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use anyhow::Result;
use rete_actors::{Direction, RawObserver, SessionSpec};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::ids::SessionId;
use rete_engine::row::Payload;
use rete_transports::{Backoff, TransportKind};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::cloud::{transport, CloudWorld, MemoryTokens};
use support::eventually::eventually;

use rete_mcp::tools::{Args, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{session_config, Live, WAIT};

fn spec(url: &str, tokens: Arc<MemoryTokens>) -> SessionSpec {
    SessionSpec {
        config: session_config("alice"),
        transport: transport(url, tokens),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_millis(100), Duration::from_secs(1)),
    }
}

/// The texts of the PRIVMSG rows in #rete from `from`, in display order.
async fn said_by(live: &Live, from: &'static str) -> Result<Vec<String>> {
    live.read(move |v| {
        let Some(id) = v.find_buffer(BufferKind::Channel, "#rete") else {
            return Vec::new();
        };
        v.buffer(id)
            .map(|b| {
                b.display()
                    .filter(|r| &*r.from == from)
                    .filter_map(|r| match &r.payload {
                        Payload::Privmsg { text } => Some(text.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
    .await
}

async fn wait_said(live: &Live, from: &'static str, text: &str) -> Result<Vec<String>> {
    let text = text.to_owned();
    eventually(&format!("{from} saying {text:?}"), WAIT, || {
        let text = text.clone();
        async move {
            let got = said_by(live, from).await?;
            Ok(got.contains(&text).then_some(got))
        }
    })
    .await
}

/// Has a first client attach until it is shown bob's `last` and then go: the
/// proof that the service stored everything up to `last` before the client
/// under test attaches.
async fn stored_before_attaching(w: &CloudWorld, last: &str) -> Result<()> {
    let first = Live::start(spec(&w.service.url(), MemoryTokens::holding(&w.token))).await?;
    wait_said(&first, "bob", last).await?;
    first.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// Attaches the client under test with a raw observer recording its frames
/// from the start; returns once it is connected.
async fn attach_recorded(w: &CloudWorld) -> Result<(Live, Arc<Recorder>)> {
    attach_recorded_with(w, MemoryTokens::holding(&w.token)).await
}

/// [`attach_recorded`] with the token store given.
async fn attach_recorded_with(
    w: &CloudWorld,
    tokens: Arc<MemoryTokens>,
) -> Result<(Live, Arc<Recorder>)> {
    let live = Live::start(spec(&w.service.url(), tokens)).await?;
    let rec = Arc::new(Recorder::default());
    live.rete.set_raw_observer(Some(rec.clone()));
    live.wait_state(ConnState::Connected).await?;
    Ok((live, rec))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_read_send_detach_and_reattach_with_exactly_the_missed_rows() -> Result<()> {
    let mut w = CloudWorld::start(&[]).await?;
    // Said before we attach, and stored by the service before we do (a
    // first client that sees it is the proof; it only then detaches).
    w.bob.privmsg("#rete", "before we came").await?;
    stored_before_attaching(&w, "before we came").await?;
    let tokens = MemoryTokens::holding(&w.token);
    let live = Live::start(spec(&w.service.url(), tokens.clone())).await?;
    assert_eq!(live.handle.reader().transport(), TransportKind::ReteCloud);
    assert_eq!(live.handle.reader().transport().as_str(), "retecloud");

    // Attached: the sync made us a member of #rete, with bob.
    live.wait_state(ConnState::Connected).await?;
    let chan = live.wait_joined("#rete").await?;
    live.wait_member("bob in #rete", &chan, |m| m.nick == "bob")
        .await?;

    // The first attach of a run fetched the channel's recent rows, as
    // history: what bob said before we came is there once, marked.
    let early = eventually("the earlier row fetched", WAIT, || async {
        live.read(|v| {
            let id = v.find_buffer(BufferKind::Channel, "#rete")?;
            let rows: Vec<bool> = v
                .buffer(id)?
                .display()
                .filter(|r| matches!(&r.payload, Payload::Privmsg { text } if &**text == "before we came"))
                .map(|r| r.history)
                .collect();
            (!rows.is_empty()).then_some(rows)
        })
        .await
        .ok()
        .flatten()
    })
    .await?;
    assert_eq!(early, [true], "once, as history");

    // Live rows.
    w.bob.privmsg("#rete", "live 1").await?;
    wait_said(&live, "bob", "live 1").await?;

    // Our line reaches IRC and is shown once (the stream carries it back).
    live.handle
        .sender()
        .command(|c| c.privmsg("#rete", "hello from the cloud"))
        .await?;
    w.bob
        .wait_for(|l| l.ends_with("PRIVMSG #rete :hello from the cloud"), WAIT)
        .await?;
    let ours = wait_said(&live, "alice", "hello from the cloud").await?;
    assert_eq!(ours, ["hello from the cloud"]);

    // Agent lines (send_raw's path): no client-side throttler, so a burst
    // is handed over at once; each counts as sent when the service
    // acknowledges it, and all reach IRC, in order (paced by the
    // service's own throttler: 5 at once, then one per 2 s).
    let sender = live.handle.sender();
    let sends = (1..=8).map(|i| {
        let s = sender.clone();
        let line = format!("PRIVMSG #rete :agent {i}");
        async move { s.agent_line(line.clone(), line).await }
    });
    let results = futures_util::future::join_all(sends).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    w.bob
        .wait_for(|l| l.ends_with("PRIVMSG #rete :agent 8"), 3 * WAIT)
        .await?;
    let agent: Vec<String> = w
        .bob
        .lines()
        .iter()
        .filter_map(|l| l.split(" PRIVMSG #rete :").nth(1))
        .filter(|t| t.starts_with("agent "))
        .map(str::to_owned)
        .collect();
    let want: Vec<String> = (1..=8).map(|i| format!("agent {i}")).collect();
    assert_eq!(agent, want);

    // /smsg refused, nothing sent.
    let refused = live
        .handle
        .sender()
        .command(|c| c.secret_privmsg("#rete", "a secret"))
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("ReteCloud")),
        "{refused:?}"
    );

    // Detach: the service stays in #rete (no QUIT went through it).
    live.handle.sender().disconnect(None);
    live.wait_state(ConnState::Disconnected).await?;
    for i in 1..=5 {
        w.bob.privmsg("#rete", &format!("missed {i}")).await?;
    }
    // Reattach: exactly the missed rows, once each, in order.
    live.handle.sender().connect();
    live.wait_state(ConnState::Connected).await?;
    let got = wait_said(&live, "bob", "missed 5").await?;
    assert_eq!(
        got,
        [
            "before we came",
            "live 1",
            "missed 1",
            "missed 2",
            "missed 3",
            "missed 4",
            "missed 5"
        ]
    );
    w.bob.privmsg("#rete", "after").await?;
    let got = wait_said(&live, "bob", "after").await?;
    assert_eq!(got.len(), 8, "{got:?}");
    let ours = said_by(&live, "alice").await?;
    let mut want_ours = vec!["hello from the cloud".to_owned()];
    want_ours.extend((1..=8).map(|i| format!("agent {i}")));
    assert_eq!(
        ours, want_ours,
        "our lines once each, even after the replay"
    );
    assert!(
        !w.bob.lines().iter().any(|l| l.contains("a secret")),
        "the refused /smsg never reached IRC"
    );
    assert!(
        !w.bob
            .lines()
            .iter()
            .any(|l| l.starts_with(":alice!") && l.contains(" QUIT ")),
        "detaching does not quit the service's connection"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_is_stored_before_it_is_acknowledged_and_works_for_the_next_engine(
) -> Result<()> {
    let w = CloudWorld::start(&["--rotate-after-ms", "0", "--grace-ms", "1000"]).await?;
    let t0 = w.token.clone();

    // A store that fails: the rotation is never acknowledged, so the old
    // token stays the one on disk and keeps working past the grace period
    // (an acknowledged rotation would make it reuse, revoking the chain).
    let failing = MemoryTokens::holding(&t0);
    failing
        .fail
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let live = Live::start(spec(&w.service.url(), failing.clone())).await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_joined("#rete").await?;
    // A rotation came and its store failed: the old token is what stays.
    eventually("a store asked for", WAIT, || {
        let asked = failing.attempts() > 0;
        async move { asked.then_some(()) }
    })
    .await?;
    live.rete.shutdown(Duration::from_secs(2)).await;
    assert_eq!(failing.current().as_deref(), Some(t0.as_str()));
    tokio::time::sleep(Duration::from_millis(1200)).await; // past the grace period

    // A store that works: the new token is stored, then acknowledged. The
    // raw tap (shown) and the store write one journal, so the order is seen.
    let tokens = MemoryTokens::holding(&t0);
    let mut s = spec(&w.service.url(), tokens.clone());
    s.autoconnect = false;
    let live = Live::start(s).await?;
    let rec = Arc::new(Recorder::default());
    let journal = rec.clone();
    tokens.on_store(move || {
        journal
            .0
            .lock()
            .unwrap()
            .push((Direction::In, "STORED".into()))
    });
    live.rete.set_raw_observer(Some(rec.clone()));
    live.handle.sender().set_raw_shown(true);
    live.handle.sender().connect();
    live.wait_state(ConnState::Connected).await?;
    let t1 = eventually("a rotated token stored", WAIT, || {
        let t = tokens.stored().first().cloned();
        async move { t }
    })
    .await?;
    assert_ne!(t1, t0);
    assert!(t1.starts_with("rct1_") && t1.len() == 69);
    // Both are the session's secrets now: withheld by every read tool.
    let (old, new) = (t0.clone(), t1.clone());
    let scanned = live
        .read(move |v| {
            (
                v.secrets().contains_secret(&old),
                v.secrets().contains_secret(&new),
            )
        })
        .await?;
    assert_eq!(scanned, (true, true));
    let acked = eventually("the token_ack frame", WAIT, || {
        let lines = rec.lines();
        async move {
            lines
                .iter()
                .position(|(d, l)| *d == Direction::Out && l.contains("\"token_ack\""))
                .map(|i| (i, lines))
        }
    })
    .await?;
    let (ack_at, lines) = acked;
    let stored_at = lines.iter().position(|(_, l)| l == "STORED").unwrap();
    let rotate_at = lines
        .iter()
        .position(|(d, l)| *d == Direction::In && l.contains("\"token_rotate\""))
        .expect("the token_rotate frame was tapped");
    assert!(
        rotate_at < stored_at && stored_at < ack_at,
        "rotate {rotate_at}, stored {stored_at}, ack {ack_at}"
    );
    assert!(
        !lines
            .iter()
            .any(|(_, l)| l.contains(&t0) || l.contains(&t1)),
        "a token in the raw tap"
    );
    live.rete.shutdown(Duration::from_secs(2)).await;
    tokio::time::sleep(Duration::from_millis(1200)).await; // t0's grace is over

    // A new engine (a restarted client) reading the store attaches with
    // the rotated token: it was acknowledged, so the service took it.
    let again = MemoryTokens::holding(&tokens.current().unwrap());
    let live = Live::start(spec(&w.service.url(), again)).await?;
    live.wait_state(ConnState::Connected).await?;
    live.wait_joined("#rete").await?;
    live.rete.shutdown(Duration::from_secs(2)).await;

    // And t0, replaced and past its grace, is reuse: refused for good.
    let stale = MemoryTokens::holding(&t0);
    let live = Live::start(spec(&w.service.url(), stale)).await?;
    let why = live
        .wait_for("the refusal", |v| {
            v.registration_refused().map(str::to_owned)
        })
        .await?;
    assert!(why.contains("token_revoked"), "{why}");
    Ok(())
}

/// Two sessions of one account (two networks on the service, or two
/// clients) keep one token between them, and the service rotates each on
/// its own: at every `auth` here, and once a second while attached. Each
/// session must present the token the store holds when it reconnects, not
/// the one it last stored itself, which the other session's rotations have
/// replaced: presented past its grace, that one would be reuse and revoke
/// the account. The service is down for longer than the grace, so the
/// reconnects find every token but the newest past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_of_one_account_share_its_token_across_a_restart() -> Result<()> {
    const GRACE_MS: u64 = 1000;
    let grace = GRACE_MS.to_string();
    let args = ["--rotate-after-ms", "0", "--grace-ms", grace.as_str()];
    let mut w = CloudWorld::start(&args).await?;
    let url = w.service.url();
    let shared = MemoryTokens::holding(&w.token);
    let one = Live::start(spec(&url, shared.clone())).await?;
    one.wait_state(ConnState::Connected).await?;
    let two = Live::start(spec(&url, shared.clone())).await?;
    two.wait_state(ConnState::Connected).await?;
    // The second session's own rotation at attach is stored: from then on
    // the two sessions hold different tokens, and at most one is current.
    let before = shared.stored().len();
    eventually("the second session's rotation stored", WAIT, || {
        let n = shared.stored().len();
        async move { (n > before).then_some(()) }
    })
    .await?;

    // Down for longer than the grace: both reconnect once it is back.
    let addr = w.service.addr.clone();
    w.service.child.kill();
    for live in [&one, &two] {
        live.wait_for("the connection lost", |v| {
            (v.state() != ConnState::Connected).then_some(())
        })
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(GRACE_MS + 300)).await;
    w.service = support::cloud::Service::start_at(&w.db, &addr, &args).await?;
    for (name, live) in [("one", &one), ("two", &two)] {
        live.wait_state(ConnState::Connected).await?;
        live.wait_joined("#rete").await?;
        let refused = live
            .read(|v| v.registration_refused().map(str::to_owned))
            .await?;
        assert_eq!(refused, None, "session {name} was refused");
    }
    one.rete.shutdown(Duration::from_secs(2)).await;
    two.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// A request to the service still unanswered when the connection drops
/// (the service frozen, then killed) ends with `NoAnswer` at once, since its
/// answer cannot come on a later connection; it used to wait for good (and
/// a fetch of older rows left its buffer "being fetched" the same way).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_unanswered_when_the_connection_drops_ends_with_no_answer() -> Result<()> {
    use rete_cloud_protocol::config::ConfigEntry;
    let mut w = CloudWorld::start(&[]).await?;
    let (live, rec) = attach_recorded(&w).await?;

    // Frozen: the request reaches its socket and nothing answers it.
    w.service.child.pause()?;
    let sender = live.handle.sender();
    let settings = tokio::spawn({
        let sender = sender.clone();
        async move {
            sender
                .cloud_settings(vec![ConfigEntry::Nick("frozen".into())])
                .await
        }
    });
    eventually("the request sent", WAIT, || {
        let sent = rec.lines();
        async move {
            sent.iter()
                .any(|(d, l)| *d == Direction::Out && l.contains("\"type\":\"config_update\""))
                .then_some(())
        }
    })
    .await?;

    // Killed: the connection drops, and the request ends unanswered.
    let addr = w.service.addr.clone();
    w.service.child.kill();
    let settings = tokio::time::timeout(WAIT, settings).await??;
    assert!(
        matches!(settings, Err(rete_actors::CloudSettingsError::NoAnswer)),
        "{settings:?}"
    );

    // Back where it was: the next request is answered on the new connection.
    w.service = support::cloud::Service::start_at(&w.db, &addr, &[]).await?;
    live.wait_state(ConnState::Connected).await?;
    let shown = sender
        .cloud_settings(vec![ConfigEntry::Nick("thawed".into())])
        .await?;
    assert_eq!(shown, "nick thawed");
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// The session's actor restarts while a rotated token is being stored, so
/// the store's outcome goes to the old actor: the new one stores the token
/// again (the store takes the same generation twice as one write) and
/// connects, rather than wait for that outcome forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_restarted_during_a_token_store_stores_it_again_and_connects() -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let w = CloudWorld::start(&["--rotate-after-ms", "0", "--grace-ms", "60000"]).await?;
    let tokens = MemoryTokens::holding(&w.token);
    let mut s = spec(&w.service.url(), tokens.clone());
    s.autoconnect = false;
    let live = Live::start(s).await?;
    let handle = live.handle.clone();
    let crashed = AtomicBool::new(false);
    // The crash is queued before the store's outcome, so the actor that
    // asked for the store is gone when the outcome is sent to it.
    tokens.on_store(move || {
        if !crashed.swap(true, Ordering::SeqCst) {
            handle.crash_for_test();
        }
    });
    live.handle.sender().connect();
    live.wait_server_row("the restart status", |r| {
        support::live_tests_session::is_status(r, "the session restarted")
    })
    .await?;
    live.wait_state(ConnState::Connected).await?;
    assert_eq!(live.handle.restarts(), 1);
    // The restarted actor asked for the store again (the same token and
    // generation: one write).
    assert!(
        tokens.attempts() >= 2,
        "{} stores asked for",
        tokens.attempts()
    );
    let first = tokens.stored().first().cloned();
    assert!(first.is_some_and(|t| t != w.token), "{:?}", tokens.stored());
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// How an agent's line in flight is interrupted.
#[derive(Clone, Copy, Debug)]
enum Interruption {
    /// The person disconnects the session, then connects it again.
    Disconnect,
    /// The session's actor fails and is restarted (it reconnects itself).
    ActorRestart,
}

/// An agent's line whose `send` frame is out but unacknowledged when the
/// session is interrupted is not answered "not sent": the service may have
/// it. It is resent with the same id on the next connection, reaches IRC
/// once, and is answered sent, with its audit row, when the service
/// acknowledges it.
async fn an_agent_line_in_flight_survives(interruption: Interruption) -> Result<()> {
    use futures_util::FutureExt;
    let mut w = CloudWorld::start(&[]).await?;
    let (live, rec) = attach_recorded(&w).await?;
    let sender = live.handle.sender();
    let line = format!("PRIVMSG #rete :across {interruption:?}");
    let mut sent = a_line_in_flight(&w, &rec, &sender, &line).await?;
    match interruption {
        Interruption::Disconnect => {
            sender.disconnect(None);
            live.wait_state(ConnState::Disconnected).await?;
        }
        Interruption::ActorRestart => {
            live.handle.crash_for_test();
            live.wait_server_row("the restart status", |r| {
                support::live_tests_session::is_status(r, "the session restarted")
            })
            .await?;
        }
    }
    // The actor handled the interruption before the state changed (or the
    // row was written), so an answer it gave there is waiting already.
    assert!(
        (&mut sent).now_or_never().is_none(),
        "answered at the interruption, while the service may have the line"
    );

    w.service.child.resume()?;
    if let Interruption::Disconnect = interruption {
        sender.connect();
    }
    let result = tokio::time::timeout(WAIT, sent).await?;
    assert_eq!(result, Ok(()));
    let audit = format!("AI access sent: {line}");
    live.wait_server_row("the audit row", move |r| {
        support::live_tests_session::is_status(r, &audit)
    })
    .await?;
    // Once on IRC: a later line arrives after it, and it came only once.
    sender
        .agent_line(
            "PRIVMSG #rete :after it".into(),
            "PRIVMSG #rete :after it".into(),
        )
        .await?;
    w.bob
        .wait_for(|l| l.ends_with("PRIVMSG #rete :after it"), 3 * WAIT)
        .await?;
    let copies = w.bob.lines().iter().filter(|l| l.ends_with(&line)).count();
    assert_eq!(copies, 1);
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// What an agent waits on for its line.
type AgentWait<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), rete_actors::AgentLineError>> + Send + 'a>,
>;

/// Freezes the service, then hands `sender` an agent's `line`: returns the
/// agent's wait once the line's `send` frame has reached the service's
/// socket, unanswered.
async fn a_line_in_flight<'a>(
    w: &CloudWorld,
    rec: &Recorder,
    sender: &'a rete_actors::SessionSender,
    line: &str,
) -> Result<AgentWait<'a>> {
    use futures_util::FutureExt;
    w.service.child.pause()?;
    let mut sent: AgentWait<'a> = Box::pin(sender.agent_line(line.to_owned(), line.to_owned()));
    assert!(
        (&mut sent).now_or_never().is_none(),
        "answered before the service saw it"
    );
    eventually("the send frame out", WAIT, || {
        let frames = rec.lines();
        async move {
            frames
                .iter()
                .any(|(d, l)| *d == Direction::Out && l.contains("\"type\":\"send\""))
                .then_some(())
        }
    })
    .await?;
    Ok(sent)
}

/// A session removed while an agent's line waits for the service's
/// acknowledgement: the agent is answered "not sent" at once, not left
/// waiting on a session nothing will ever answer for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_line_in_flight_is_answered_not_sent_when_its_session_is_removed() -> Result<()> {
    let w = CloudWorld::start(&[]).await?;
    let (live, rec) = attach_recorded(&w).await?;
    let sender = live.handle.sender();
    let sent = a_line_in_flight(&w, &rec, &sender, "PRIVMSG #rete :removed meanwhile").await?;
    live.rete.remove_session(live.handle.id()).await?;
    let result = tokio::time::timeout(WAIT, sent).await?;
    assert_eq!(result, Err(rete_actors::AgentLineError::NotSent));
    w.service.child.resume()?;
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// A line kept across the person's disconnect (the service may have it)
/// whose session is then refused for good at the next connect (no token
/// stored any more): the agent is answered "not sent" rather than left
/// waiting for a connect that may never come. (That the client forgets the
/// line is not checked here: the service, thawed, may already have it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_kept_across_a_disconnect_is_not_sent_when_the_next_connect_is_refused() -> Result<()>
{
    use futures_util::FutureExt;
    let w = CloudWorld::start(&[]).await?;
    let tokens = MemoryTokens::holding(&w.token);
    let (live, rec) = attach_recorded_with(&w, tokens.clone()).await?;
    let sender = live.handle.sender();
    let mut sent = a_line_in_flight(&w, &rec, &sender, "PRIVMSG #rete :kept, then refused").await?;
    sender.disconnect(None);
    live.wait_state(ConnState::Disconnected).await?;
    assert!(
        (&mut sent).now_or_never().is_none(),
        "kept at the disconnect"
    );
    // The token is read once the WebSocket is open, so the service must
    // answer the upgrade.
    tokens.forget();
    w.service.child.resume()?;
    sender.connect();
    let result = tokio::time::timeout(WAIT, sent).await?;
    assert_eq!(result, Err(rete_actors::AgentLineError::NotSent));
    live.wait_server_row("the refusal", |r| {
        support::live_tests_session::is_status(r, "no ReteCloud token is set")
    })
    .await?;
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_line_unacknowledged_at_a_disconnect_is_answered_once_the_service_has_it(
) -> Result<()> {
    an_agent_line_in_flight_survives(Interruption::Disconnect).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_line_unacknowledged_at_an_actor_restart_is_answered_once_the_service_has_it(
) -> Result<()> {
    an_agent_line_in_flight_survives(Interruption::ActorRestart).await
}

/// Lines sent faster than the service takes requests (a burst of 300, then
/// fifty a second) are held back by the client, in order, and none is
/// refused `rate_limited`: each wave here fits the client's queue of
/// unacknowledged sends, and all of them come well past the service's burst.
/// (The service's flood throttler is off: it acknowledges a send once the
/// line is written, and at its default pace these 400 lines would take
/// thirteen minutes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_past_the_services_request_allowance_are_paced_not_refused() -> Result<()> {
    let w = CloudWorld::start(&["--flood-interval-ms", "0"]).await?;
    let (live, _rec) = attach_recorded(&w).await?;
    let sender = live.handle.sender();
    for wave in 0..2 {
        let sends = (0..200).map(|i| {
            let s = sender.clone();
            let line = format!("PRIVMSG #rete :wave {wave} line {i}");
            async move { s.agent_line(line.clone(), line).await }
        });
        let results = futures_util::future::join_all(sends).await;
        let refused: Vec<_> = results.iter().filter(|r| r.is_err()).collect();
        assert!(refused.is_empty(), "wave {wave}: {} refused", refused.len());
    }
    let refusals: Vec<String> = live
        .server_rows()
        .await?
        .iter()
        .map(support::live_tests_session::text)
        .filter(|t| t.contains("refused a request"))
        .collect();
    assert!(refusals.is_empty(), "{refusals:?}");
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// A service that drops the client soon after each attach is not retried at
/// the first delay every time: as for an IRC server, the delays keep growing
/// until a connection stays up `HEALTHY_AFTER`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_dropping_us_soon_after_each_attach_is_retried_ever_later() -> Result<()> {
    let mut w = CloudWorld::start(&[]).await?;
    let base = Duration::from_secs(2);
    let mut spec = spec(&w.service.url(), MemoryTokens::holding(&w.token));
    spec.reconnect = Backoff::new(base, Duration::from_secs(60));
    let live = Live::start(spec).await?;
    let addr = w.service.addr.clone();
    let mut delays = Vec::new();
    for cycle in 0..3 {
        live.wait_state(ConnState::Connected).await?;
        // A live row comes after the attach's `ready`: the client has taken
        // it when it shows the row.
        let text = format!("attached {cycle}");
        w.bob.privmsg("#rete", &text).await?;
        wait_said(&live, "bob", &text).await?;
        w.service.child.kill();
        let delay = live.wait_retry_in().await?;
        delays.push(delay);
        w.service = support::cloud::Service::start_at(&w.db, &addr, &[]).await?;
    }
    // Delay n lies in [base * 2^n / 2, base * 2^n]: the third is at least
    // 2 * base, where starting over at each `ready` keeps each at most base.
    assert!(delays[2] >= 2 * base, "delays: {delays:?}");
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_token_stops_the_retries_with_a_clear_state() -> Result<()> {
    let w = CloudWorld::start(&[]).await?;
    let unknown = format!("rct1_{}", "0".repeat(64));
    let tokens = MemoryTokens::holding(&unknown);
    let live = Live::start(spec(&w.service.url(), tokens)).await?;
    let why = live
        .wait_for("the refusal", |v| {
            v.registration_refused().map(str::to_owned)
        })
        .await?;
    assert!(why.contains("auth_failed"), "{why}");
    assert!(!why.contains(&unknown), "the reason holds no token");
    live.wait_state(ConnState::Disconnected).await?;
    // No retry: one connection attempt, however long we look.
    let server_rows = live
        .read(|v| {
            v.buffer(v.server_buffer())
                .map(|b| {
                    b.display()
                        .filter_map(|r| match &r.payload {
                            Payload::ClientStatus { text } => Some(text.to_string()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .await?;
    assert!(
        server_rows
            .iter()
            .any(|t| t.starts_with("Not reconnecting")),
        "{server_rows:?}"
    );
    let attempts = live
        .states()
        .iter()
        .filter(|s| matches!(s, ConnState::Connecting | ConnState::Reconnecting))
        .count();
    assert_eq!(attempts, 1, "{:?}", live.states());
    Ok(())
}

/// The raw tap's display slot, recording.
#[derive(Default)]
struct Recorder(Mutex<Vec<(Direction, String)>>);

impl RawObserver for Recorder {
    fn on_raw(&self, _: &SessionId, direction: Direction, line: &str) {
        self.0.lock().unwrap().push((direction, line.to_owned()));
    }
}

impl Recorder {
    fn lines(&self) -> Vec<(Direction, String)> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_tap_sees_masked_frames_received_ones_only_while_shown() -> Result<()> {
    let mut w = CloudWorld::start(&[]).await?;
    let tokens = MemoryTokens::holding(&w.token);
    let rete = rete_actors::Rete::start(Default::default()).await?;
    let rec = Arc::new(Recorder::default());
    rete.set_raw_observer(Some(rec.clone()));
    let handle = rete.add_session(spec(&w.service.url(), tokens)).await?;
    let reader = handle.reader();
    view_until(&reader, "connected", |v| {
        (v.state() == ConnState::Connected).then_some(())
    })
    .await?;

    // Sent frames always: the auth frame, its token masked.
    let lines = rec.lines();
    let auth = lines
        .iter()
        .find(|(d, l)| *d == Direction::Out && l.contains("\"auth\""))
        .expect("the auth frame was tapped");
    assert!(
        !auth.1.contains(&w.token),
        "the token is masked: {}",
        auth.1
    );
    assert!(
        lines.iter().all(|(d, _)| *d == Direction::Out),
        "no received frame while the raw buffer is not shown: {lines:?}"
    );

    // Shown: received frames too, masked.
    handle.sender().set_raw_shown(true);
    w.bob.privmsg("#rete", "seen raw").await?;
    eventually("the line frame tapped", WAIT, || {
        let got = rec
            .lines()
            .iter()
            .any(|(d, l)| *d == Direction::In && l.contains("seen raw"));
        async move { got.then_some(()) }
    })
    .await?;
    let received = rec.lines().into_iter().filter(|(d, _)| *d == Direction::In);
    for (_, frame) in received {
        assert!(frame.starts_with('{'), "a frame, not an IRC line: {frame}");
    }

    // Hidden again: the next received frame is not tapped.
    handle.sender().set_raw_shown(false);
    let before = rec.lines().len();
    w.bob.privmsg("#rete", "not seen raw").await?;
    let reader = handle.reader();
    eventually("the row", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let id = v.find_buffer(BufferKind::Channel, "#rete")?;
                    v.buffer(id)?
                        .display()
                        .any(|r| matches!(&r.payload, Payload::Privmsg { text } if &**text == "not seen raw"))
                        .then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;
    assert!(
        rec.lines()[before..]
            .iter()
            .all(|(d, l)| *d == Direction::Out && !l.contains("not seen raw")),
        "{:?}",
        &rec.lines()[before..]
    );
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// The control surface's tools on one engine, debug on, with a capture on
/// its raw tap (as reterm's control server holds them).
struct Tools {
    ctx: ToolContext,
}

impl Tools {
    async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        let parsed = Args::from_request(Some(&args)).expect("arguments are an object");
        match ToolBox::new().call(tool, &self.ctx, &parsed).await {
            ToolOutcome::Ok(v) => Ok(v),
            other => anyhow::bail!("{tool}({args}) failed: {other:?}"),
        }
    }

    /// Every raw line after `cursor`, and the cursor after them.
    async fn raw(&self, sid: &str, cursor: Option<&str>) -> Result<(Vec<Value>, String)> {
        let mut lines = Vec::new();
        let mut cursor = cursor.map(str::to_owned);
        loop {
            let mut args = json!({"session": sid, "limit": 2000});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let v = self.ok("raw_since", args).await?;
            lines.extend(v["lines"].as_array().cloned().unwrap_or_default());
            cursor = v["cursor"].as_str().map(str::to_owned);
            if v["truncated"] == json!(false) {
                return Ok((lines, cursor.unwrap_or_default()));
            }
        }
    }

    async fn found(&self, text: &str) -> Result<Value> {
        let text = text.to_owned();
        eventually(&format!("{text:?} found"), WAIT, || {
            let text = text.clone();
            async move {
                let v = self
                    .ok("search_messages", json!({"query": text}))
                    .await
                    .ok()?;
                let hit = v.to_string().contains(&text) || v.get("withheld").is_some();
                hit.then_some(v)
            }
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_sessions_read_tools_and_raw_since_on_a_retecloud_session() -> Result<()> {
    let mut w = CloudWorld::start(&[]).await?;
    let rete = Arc::new(rete_actors::Rete::start(Default::default()).await?);
    let capture = support::debug_tools::capture(&rete, true).await?;
    let tools = Tools {
        ctx: support::debug_tools::debug_context(
            &rete,
            capture.clone(),
            rete_mcp::updates::Updates::unstarted(),
        ),
    };
    let handle = rete
        .add_session(spec(&w.service.url(), MemoryTokens::holding(&w.token)))
        .await?;
    let sid = handle.id().as_str().to_owned();

    // list_sessions: transport retecloud, connected once the sync came.
    let listed = eventually("connected in list_sessions", WAIT, || async {
        let v = tools.ok("list_sessions", json!({})).await.ok()?;
        (v["sessions"][0]["state"] == "connected").then_some(v)
    })
    .await?;
    assert_eq!(listed["sessions"][0]["transport"], "retecloud", "{listed}");

    // Read tools work on the rows the frames carried.
    w.bob.privmsg("#rete", "hello tools").await?;
    let v = tools.found("hello tools").await?;
    assert!(v.to_string().contains("hello tools"), "{v}");

    // The token is a session secret: a row holding it is withheld.
    w.bob.privmsg("#rete", &format!("leak {}", w.token)).await?;
    let v = tools.found("leak").await?;
    assert!(!v.to_string().contains(&w.token), "{v}");
    assert!(v["withheld"].as_u64() >= Some(1), "{v}");

    // raw_since: the frames, masked. Sent ones always (the auth frame, its
    // token masked); received ones not while the raw buffer is hidden.
    let (lines, cursor) = tools.raw(&sid, None).await?;
    let texts: Vec<&str> = lines.iter().filter_map(|l| l["line"].as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with('{') && t.contains("\"auth\"")),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains(&w.token)), "{texts:?}");
    assert!(lines.iter().all(|l| l["dir"] == "out"), "{lines:?}");

    // Shown: the line frames come in too.
    handle.sender().set_raw_shown(true);
    w.bob.privmsg("#rete", "raw shown").await?;
    let (lines, cursor) = eventually("the frame in raw_since", WAIT, || {
        let cursor = cursor.clone();
        let tools = &tools;
        let sid = sid.clone();
        async move {
            let (lines, c) = tools.raw(&sid, Some(&cursor)).await.ok()?;
            lines
                .iter()
                .any(|l| {
                    l["dir"] == "in" && l["line"].as_str().is_some_and(|t| t.contains("raw shown"))
                })
                .then_some((lines, c))
        }
    })
    .await?;
    for l in lines.iter().filter(|l| l["dir"] == "in") {
        let t = l["line"].as_str().unwrap();
        assert!(t.starts_with("{\"type\""), "a frame, not an IRC line: {t}");
    }

    // Hidden again: nothing received reaches raw_since.
    handle.sender().set_raw_shown(false);
    w.bob.privmsg("#rete", "raw hidden").await?;
    tools.found("raw hidden").await?;
    let (lines, _) = tools.raw(&sid, Some(&cursor)).await?;
    assert!(lines.iter().all(|l| l["dir"] == "out"), "{lines:?}");
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_change_reaches_irc_with_its_password_masked_in_every_frame_and_learned(
) -> Result<()> {
    use rete_actors::CloudSettingsError;
    use rete_cloud_protocol::config::ConfigEntry;
    use rete_cloud_protocol::secret::Secret;
    const PASSWORD: &str = "typed-sasl-pw-5141";
    let mut w = CloudWorld::start(&[]).await?;
    let tokens = MemoryTokens::holding(&w.token);
    let rete = rete_actors::Rete::start(Default::default()).await?;
    let rec = Arc::new(Recorder::default());
    rete.set_raw_observer(Some(rec.clone()));
    let handle = rete.add_session(spec(&w.service.url(), tokens)).await?;
    handle.sender().set_raw_shown(true);
    let reader = handle.reader();
    view_until(&reader, "connected", |v| {
        (v.state() == ConnState::Connected).then_some(())
    })
    .await?;
    let sender = handle.sender();

    // The nick: the service changes it on IRC now, and the engine follows.
    let shown = sender
        .cloud_settings(vec![ConfigEntry::Nick("cloudnick".into())])
        .await?;
    assert_eq!(shown, "nick cloudnick");
    w.bob
        .wait_for(
            |l| l.starts_with(":alice!") && l.contains("NICK") && l.contains("cloudnick"),
            WAIT,
        )
        .await?;
    view_until(&reader, "the engine's own nick", |v| {
        (v.nick() == "cloudnick").then_some(())
    })
    .await?;

    // A SASL password: echoed only as set, and a secret of the session.
    let shown = sender
        .cloud_settings(vec![
            ConfigEntry::SaslUsername(Some("alice".into())),
            ConfigEntry::SaslPassword(Some(Secret::new(PASSWORD))),
        ])
        .await?;
    assert_eq!(shown, "sasl_username alice, sasl_password set");
    let frames = rec.lines();
    let update = frames
        .iter()
        .find(|(d, l)| {
            *d == Direction::Out && l.contains("config_update") && l.contains("sasl_password")
        })
        .expect("the config_update frame was tapped");
    assert!(
        update.1.contains("\"key\":\"sasl_password\""),
        "{}",
        update.1
    );
    assert!(
        frames.iter().any(|(d, l)| *d == Direction::In
            && l.contains("\"config\"")
            && l.contains("sasl_password")),
        "the echo was tapped: {frames:?}"
    );
    assert!(
        frames.iter().all(|(_, l)| !l.contains(PASSWORD)),
        "the password in no frame shown: {frames:?}"
    );
    let learned = reader
        .read(|v| {
            v.secrets()
                .contains_secret(&format!("PRIVMSG #rete :{PASSWORD}"))
        })
        .await?;
    assert!(learned, "the session scans for the password it sent");
    let status = reader
        .read(|v| {
            let server = v.buffer(v.server_buffer())?;
            server
                .display()
                .filter_map(|r| match &r.payload {
                    Payload::ClientStatus { text } => Some(text.to_string()),
                    _ => None,
                })
                .find(|t| t.contains("sasl_password set"))
        })
        .await?;
    let status = status.expect("a status line says what changed");
    assert!(!status.contains(PASSWORD), "{status}");

    // Bad input: refused before anything is sent; the service refuses what
    // only it can judge, and nothing changes.
    let before = rec.lines().len();
    let e = sender
        .cloud_settings(vec![ConfigEntry::Nick("two words".into())])
        .await
        .expect_err("a nick with a space");
    assert!(matches!(e, CloudSettingsError::Invalid(_)), "{e:?}");
    let e = sender.cloud_settings(vec![]).await.expect_err("no entries");
    assert!(matches!(e, CloudSettingsError::Invalid(_)), "{e:?}");
    assert!(
        rec.lines()[before..]
            .iter()
            .all(|(d, _)| *d == Direction::In),
        "nothing sent: {:?}",
        &rec.lines()[before..]
    );
    w.bob.privmsg("#rete", "still cloudnick?").await?;
    wait_said_in(&reader, "still cloudnick?").await?;
    assert_eq!(reader.read(|v| v.nick().to_owned()).await?, "cloudnick");
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_rows_come_on_demand_once_each_in_order_until_the_service_has_none() -> Result<()> {
    use rete_actors::{CloudBacklogError, OlderRows};
    let mut w = CloudWorld::start(&[]).await?;
    // Paced, so rows are apart in time, except "old 70" and "old 71": one
    // write, which InspIRCd stamps with one millisecond. The first attach
    // holds 71 to 120, so the first older row fetched, 70, has the very
    // time of the oldest row held, and must still be placed before it.
    for i in 1..=120 {
        match i {
            70 => {
                w.bob
                    .send("PRIVMSG #rete :old 70\r\nPRIVMSG #rete :old 71")
                    .await?
            }
            71 => continue,
            _ => w.bob.privmsg("#rete", &format!("old {i}")).await?,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // All stored before we attach: a first client is shown the last one
    // (fetched), then goes.
    stored_before_attaching(&w, "old 120").await?;
    let (live, rec) = attach_recorded(&w).await?;
    let olds = |r: std::ops::RangeInclusive<u32>| -> Vec<String> {
        r.map(|i| format!("old {i}")).collect()
    };
    // The first attach fetched the newest 50.
    let got = wait_said(&live, "bob", "old 120").await?;
    assert_eq!(got, olds(71..=120));
    let chan = live.channel_id("#rete").await?;
    let sender = live.handle.sender();
    let fetches = || {
        rec.lines()
            .iter()
            .filter(|(d, l)| *d == Direction::Out && l.contains("\"type\":\"fetch\""))
            .count()
    };
    let before = fetches();

    // Bad input: refused, nothing sent.
    for limit in [0, rete_actors::cloud_backlog::MAX_BACKLOG_ROWS + 1] {
        let e = sender.cloud_backlog(chan.clone(), limit).await.unwrap_err();
        assert!(matches!(e, CloudBacklogError::Invalid(_)), "{e:?}");
        assert!(e.to_string().contains("1 to 500"), "{e}");
    }
    let e = sender
        .cloud_backlog(
            rete_engine::ids::BufferId::from_client("no-such-buffer"),
            10,
        )
        .await
        .unwrap_err();
    assert_eq!(e, CloudBacklogError::NoSuchBuffer);
    assert_eq!(fetches(), before, "nothing sent for bad input");

    // 50 older: exactly the ones before, placed before them, as history.
    let older = sender.cloud_backlog(chan.clone(), 50).await?;
    assert_eq!(
        older,
        OlderRows {
            added: 50,
            no_older: false
        }
    );
    assert_eq!(said_by(&live, "bob").await?, olds(21..=120));
    let time_of = |rows: &[rete_engine::row::Row], text: &str| {
        rows.iter()
            .find(|r| matches!(&r.payload, Payload::Privmsg { text: t } if &**t == text))
            .map(|r| r.time)
    };
    let rows = live.display(&chan).await?;
    assert_eq!(
        time_of(&rows, "old 70"),
        time_of(&rows, "old 71"),
        "the fetched row and the oldest held one share a millisecond"
    );
    // The rest: 20 messages (and the service's JOIN, not a message), and
    // the service has nothing older.
    let older = sender.cloud_backlog(chan.clone(), 50).await?;
    assert_eq!(
        older,
        OlderRows {
            added: 20,
            no_older: true
        }
    );
    assert_eq!(said_by(&live, "bob").await?, olds(1..=120));
    let history: Vec<bool> = live
        .display(&chan)
        .await?
        .iter()
        .filter(|r| matches!(&r.payload, Payload::Privmsg { .. }))
        .map(|r| r.history)
        .collect();
    assert_eq!(history, vec![true; 120], "every fetched row is history");
    assert_eq!(fetches(), before + 2);

    // Asked again: answered at once, no request, nothing stored twice.
    let again = sender.cloud_backlog(chan.clone(), 50).await?;
    assert_eq!(
        again,
        OlderRows {
            added: 0,
            no_older: true
        }
    );
    assert_eq!(fetches(), before + 2, "no fetch once none are left");
    assert_eq!(said_by(&live, "bob").await?, olds(1..=120));

    // Live rows go on after it.
    w.bob.privmsg("#rete", "new after all").await?;
    let got = wait_said(&live, "bob", "new after all").await?;
    assert_eq!(got.len(), 121);
    live.rete.shutdown(Duration::from_secs(2)).await;

    // A session on the IRC server itself has no store to ask.
    let irc = Live::start(support::live_tests_session::spec(
        session_config("carol"),
        support::live_tests_session::plain(w.ircd.port()),
    ))
    .await?;
    irc.wait_state(ConnState::Connected).await?;
    let server = irc.read(|v| v.server_buffer().clone()).await?;
    let e = irc
        .handle
        .sender()
        .cloud_backlog(server, 50)
        .await
        .unwrap_err();
    assert_eq!(e, CloudBacklogError::NotCloud);
    assert!(e.to_string().contains("ReteCloud"), "{e}");
    Ok(())
}

/// A page of older rows with no message in it (topic changes: a backlog
/// feeds the engine only PRIVMSG and NOTICE rows) adds nothing, yet the
/// next fetch ends before that page, not where this one did, so scrolling
/// back goes on rather than getting the same page again; the fetch that
/// reaches the stream's start says there is nothing older.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_older_rows_without_messages_still_moves_the_next_fetch_back() -> Result<()> {
    use rete_actors::OlderRows;
    let mut w = CloudWorld::start(&[]).await?;
    // Two messages, six topic changes (bob made #rete, so he may), then
    // the 50 messages the first attach fetches: before the oldest of them
    // the stream holds only topics for six rows.
    let said =
        |r: std::ops::RangeInclusive<u32>| -> Vec<String> { r.map(|i| format!("m {i}")).collect() };
    for text in said(1..=2) {
        w.bob.privmsg("#rete", &text).await?;
    }
    for i in 1..=6 {
        w.bob.send(&format!("TOPIC #rete :topic {i}")).await?;
    }
    for text in said(3..=52) {
        w.bob.privmsg("#rete", &text).await?;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // All stored before we attach (a first client sees the last one).
    stored_before_attaching(&w, "m 52").await?;
    let (live, rec) = attach_recorded(&w).await?;
    assert_eq!(wait_said(&live, "bob", "m 52").await?, said(3..=52));
    let chan = live.channel_id("#rete").await?;
    let sender = live.handle.sender();
    // Where each fetch sent since the recorder started ended.
    let befores = || -> Vec<Option<u64>> {
        rec.lines()
            .iter()
            .filter(|(d, _)| *d == Direction::Out)
            .filter_map(|(_, l)| serde_json::from_str::<Value>(l).ok())
            .filter(|f| f["type"] == "fetch")
            .map(|f| f["before"]["seq"].as_u64())
            .collect()
    };
    let first_fetches = befores().len();

    // Three rows before the oldest message held: topics 4 to 6.
    let none_added = OlderRows {
        added: 0,
        no_older: false,
    };
    assert_eq!(sender.cloud_backlog(chan.clone(), 3).await?, none_added);
    // Again: topics 1 to 3, a page further back, not the same one.
    assert_eq!(sender.cloud_backlog(chan.clone(), 3).await?, none_added);
    // Then the two messages and the service's JOIN: the start.
    assert_eq!(
        sender.cloud_backlog(chan.clone(), 50).await?,
        OlderRows {
            added: 2,
            no_older: true
        }
    );
    let ends = befores().split_off(first_fetches);
    assert_eq!(ends.len(), 3, "{ends:?}");
    let ends: Vec<u64> = ends.into_iter().map(|b| b.expect("a before.seq")).collect();
    assert!(
        ends[0] - ends[1] == 3 && ends[1] - ends[2] == 3,
        "each fetch ends three rows further back: {ends:?}"
    );
    // In order: m 1 and m 2 went in one burst with the topics and m 3, so
    // they may share its millisecond, and still come before it.
    assert_eq!(said_by(&live, "bob").await?, said(1..=52));
    // Nothing older: answered at once.
    assert_eq!(
        sender.cloud_backlog(chan.clone(), 50).await?,
        OlderRows {
            added: 0,
            no_older: true
        }
    );
    assert_eq!(
        befores().len(),
        first_fetches + 3,
        "no fetch once none are left"
    );
    live.rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// Waits until `f`, run on the session's view, gives a value.
async fn view_until<T, F>(reader: &rete_actors::SessionReader, what: &str, f: F) -> Result<T>
where
    T: Send + 'static,
    F: Fn(rete_engine::view::SessionView<'_>) -> Option<T> + Clone + Send + 'static,
{
    eventually(what, WAIT, || {
        let (reader, f) = (reader.clone(), f.clone());
        async move { reader.read(f).await.ok().flatten() }
    })
    .await
}

/// Waits until #rete holds a PRIVMSG with `text`.
async fn wait_said_in(reader: &rete_actors::SessionReader, text: &str) -> Result<()> {
    let text = text.to_owned();
    view_until(reader, &format!("{text:?} in #rete"), move |v| {
        let id = v.find_buffer(BufferKind::Channel, "#rete")?;
        v.buffer(id)?
            .display()
            .any(|r| matches!(&r.payload, Payload::Privmsg { text: t } if **t == *text))
            .then_some(())
    })
    .await
}
