//! Live updates against a real InspIRCd with bots, through `ToolBox::call` on a real
//! subscription registry (`rete_mcp::updates::Updates::start`) with a shifted clock:
//! the mention rule's positive and negative examples and a nick change, queries (a brand-new
//! query buffer included), digests and full reads, peek, the counters (backfilled from a `+H`
//! join replay, withheld, dropped at the 500-event cap and at the one-hour age, evicted when a
//! session's sequences restart), the starting point, wait_for_updates answering as soon as a
//! message arrives (latency printed) and counting a subscription made while it waits, and a
//! flood into an uncovered buffer costing no read at all.
//!
//! The limits that need no server (16 subscriptions, 2 waits, idle expiry, cancellation) are
//! in `updates_limits.rs` (this binary).

use std::time::Duration;

use anyhow::{Context, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::session::SessionConfig;
use rete_mcp::tools::result::encode;
use rete_mcp::tools::ToolOutcome;
use serde_json::{json, Value};
use support::bot::echo_bot;
use support::live_tests_session::{eventually, session_config, WAIT};
use support::updates_tests_tools::{channels, event_text, event_texts, joined, stored, Updating};
use support::{Bot, BotConfig, Inspircd, InspircdConfig, Msg, DEFAULT_TIMEOUT};
use tokio::time::Instant;

/// The session's nick: the contract's own examples are about `mriron`.
const ME: &str = "mriron";

/// Says `text` to `target` and waits for the server's echo, so the server has sent it on.
async fn say(bot: &mut Bot, target: &str, text: &str) -> Result<()> {
    bot.privmsg(target, text).await?;
    let suffix = format!(" {target} :{text}");
    bot.wait_for(move |l| l.ends_with(&suffix), DEFAULT_TIMEOUT)
        .await?;
    Ok(())
}

/// Says each line to `target`, 20 at a time, waiting for the echo of the last of each 20
/// (the bot reads only while it waits, so this keeps its socket from filling).
async fn say_all(bot: &mut Bot, target: &str, lines: &[String]) -> Result<()> {
    for chunk in lines.chunks(20) {
        for l in chunk {
            bot.privmsg(target, l).await?;
        }
        if let Some(last) = chunk.last() {
            let suffix = format!(" {target} :{last}");
            bot.wait_for(move |l| l.ends_with(&suffix), DEFAULT_TIMEOUT)
                .await?;
        }
    }
    Ok(())
}

/// Changes the bot's nick and waits for the server to confirm it.
async fn rename(bot: &mut Bot, nick: &str) -> Result<()> {
    bot.send(&format!("NICK {nick}")).await?;
    let nick = nick.to_owned();
    bot.wait_for(
        move |l| {
            let m = Msg::parse(l);
            m.command == "NICK" && m.param(0) == nick
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}

/// A session config for `ME` joining `chans`.
fn config_in(chans: &[&str]) -> SessionConfig {
    let mut config = session_config(ME);
    config.channels = channels(chans);
    config
}

/// The digest row for `buffer` in subscription `id`'s entry.
fn digest_row<'a>(v: &'a Value, id: &str, buffer: &str) -> Option<&'a Value> {
    Updating::entry(v, id)?["buffers"]
        .as_array()?
        .iter()
        .find(|b| b["buffer"] == json!(buffer))
}

/// Checks a full-mode message event's shape and returns its text.
fn check_event(e: &Value, buffer: &str, from: &str) -> String {
    assert_eq!(e["type"], json!("message"), "{e}");
    assert_eq!(e["buffer"], json!(buffer), "{e}");
    let m = &e["message"];
    assert_eq!(m["from"], json!(from), "{e}");
    assert_eq!(m["kind"], json!("privmsg"), "{e}");
    assert_eq!(m["untrusted"], json!(true), "{e}");
    assert!(m["seq"].is_u64(), "{e}");
    assert!(m["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
    event_text(e).unwrap_or_default().to_owned()
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| e["message"]["seq"].as_u64())
        .collect()
}

const EMPTY: &str = r#"{"untrusted":true,"updates":[]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_follow_the_nick_rule_and_a_nick_change() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#m"]), port))?;
    alice.join("#m").await?;
    let chan = joined(&session, "#m").await?;
    let mentions = u.subscribe_settled(json!({"mentions": true})).await?;
    let everything = u.subscribe_settled(json!({"buffers": [chan]})).await?;

    // The contract's examples, in a channel, then a marker that mentions us.
    let lines = [
        ("mriron", true),
        ("MrIron: are you there?", true),
        ("ping @mriron!", true),
        ("mrironman is someone else", false),
        ("xmriron", false),
        ("hi mriron_", false),
        ("[mriron] is a tag", false),
        ("bye, mriron", true),
    ];
    for (text, _) in lines {
        say(&mut alice, "#m", text).await?;
    }
    let events = u.drain_until(&mentions, "bye, mriron").await?;
    let got: Vec<String> = events
        .iter()
        .map(|e| check_event(e, &chan, "alice"))
        .collect();
    let want: Vec<&str> = lines.iter().filter(|l| l.1).map(|l| l.0).collect();
    assert_eq!(got, want);

    // Our own nick change is followed: the old nick no longer mentions us, the new one does.
    session.sender().command(|c| c.nick("ironfist")).await?;
    let reader = session.reader();
    eventually("our new nick", WAIT, || {
        let reader = reader.clone();
        async move { (reader.read(|v| v.nick() == "ironfist").await.ok()?).then_some(()) }
    })
    .await?;
    for text in [
        "mriron: still there?",
        "ironfist: nice nick",
        "see you, IRONFIST",
    ] {
        say(&mut alice, "#m", text).await?;
    }
    let events = u.drain_until(&mentions, "see you, IRONFIST").await?;
    assert_eq!(
        event_texts(&events),
        ["ironfist: nice nick", "see you, IRONFIST"]
    );

    // A subscription without mentions counts them in its digest all the same.
    let v = u.ok("read_updates", json!({"id": everything})).await?;
    let row = digest_row(&v, &everything, &chan).context("digest row")?;
    assert_eq!(row["new"], json!(lines.len() + 3), "{v}");
    assert_eq!(row["mentions"], json!(want.len() + 2), "{v}");
    assert_eq!(row["from"], json!(["alice"]));
    assert_eq!(u.ok("read_updates", json!({})).await?.to_string(), EMPTY);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_collect_brand_new_query_buffers_and_not_channels() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, mut bob, session) = tokio::try_join!(
        echo_bot(port, "alice"),
        echo_bot(port, "bob"),
        u.add(config_in(&["#q"]), port)
    )?;
    alice.join("#q").await?;
    joined(&session, "#q").await?;
    let queries = u.subscribe_settled(json!({"queries": true})).await?;

    say(&mut alice, "#q", "channel chatter for mriron").await?;
    // bob has never talked to us: his message opens a query buffer after the subscription.
    say(&mut bob, ME, "hello from bob").await?;
    say(&mut alice, ME, "and now alice, privately").await?;
    let events = u.drain_until(&queries, "and now alice, privately").await?;

    let reader = session.reader();
    let (bob_q, alice_q) = reader
        .read(|v| {
            let id = |n: &str| {
                v.find_buffer(BufferKind::Query, n)
                    .map(|b| b.as_str().to_owned())
            };
            (id("bob"), id("alice"))
        })
        .await?;
    let (bob_q, alice_q) = (
        bob_q.context("bob's query")?,
        alice_q.context("alice's query")?,
    );
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(check_event(&events[0], &bob_q, "bob"), "hello from bob");
    assert_eq!(
        check_event(&events[1], &alice_q, "alice"),
        "and now alice, privately"
    );
    assert_eq!(u.ok("read_updates", json!({})).await?.to_string(), EMPTY);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_and_full_reads_and_peek() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#d"]), port))?;
    alice.join("#d").await?;
    let chan = joined(&session, "#d").await?;
    let digest = u.subscribe_settled(json!({"buffers": [chan]})).await?;
    let full = u.subscribe_settled(json!({"buffers": [chan]})).await?;

    // Twelve messages from one bot under eleven nicks: Bob and BOB are one sender ignoring
    // case, so there are 11 distinct senders and the digest names the first 10.
    let mut sent: Vec<(String, String)> = Vec::new();
    rename(&mut alice, "Bob").await?;
    say(&mut alice, "#d", "first from Bob, mriron").await?;
    sent.push(("Bob".into(), "first from Bob, mriron".into()));
    rename(&mut alice, "BOB").await?;
    say(&mut alice, "#d", "second from BOB").await?;
    sent.push(("BOB".into(), "second from BOB".into()));
    for i in 1..=10 {
        let nick = format!("s{i}");
        let text = format!("line {i}");
        rename(&mut alice, &nick).await?;
        say(&mut alice, "#d", &text).await?;
        sent.push((nick, text));
    }
    eventually("the last line collected", WAIT, || async {
        let v = u
            .ok(
                "read_updates",
                json!({"id": full, "detail": "full", "limit": 500, "peek": true}),
            )
            .await
            .ok()?;
        let events = Updating::entry(&v, &full)?["events"].as_array()?.clone();
        events
            .iter()
            .any(|e| event_text(e) == Some("line 10"))
            .then_some(())
    })
    .await?;

    // Peek removes nothing, however often.
    let list = u.ok("list_subscriptions", json!({})).await?;
    for s in list["subscriptions"].as_array().context("subscriptions")? {
        assert_eq!(s["pending"], json!(12), "{s}");
        assert_eq!(s["state"], json!("active"), "{s}");
    }
    let peeked = u
        .ok("read_updates", json!({"id": digest, "peek": true}))
        .await?;
    assert_eq!(
        u.ok("read_updates", json!({"id": digest, "peek": true}))
            .await?,
        peeked
    );

    // The digest: one row per buffer, 12 new, 1 mention, 10 distinct senders in arrival order.
    let senders: Vec<&str> = ["Bob", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"].into();
    let want = json!({"untrusted": true, "updates": [{
        "subscription": digest,
        "buffers": [{"buffer": chan, "name": "#d", "new": 12, "mentions": 1, "from": senders}],
    }]});
    assert_eq!(peeked, want);
    assert_eq!(u.ok("read_updates", json!({"id": digest})).await?, want);
    assert_eq!(
        u.ok("read_updates", json!({"id": digest}))
            .await?
            .to_string(),
        EMPTY,
        "a digest removes what it summarised"
    );

    // Full mode: oldest first, limit per subscription (0 is clamped to 1), truncated while
    // more is pending.
    let page = |limit: i64, peek: bool| json!({"id": full, "detail": "full", "limit": limit, "peek": peek});
    let p1 = u.ok("read_updates", page(4, true)).await?;
    assert_eq!(u.ok("read_updates", page(4, true)).await?, p1);
    let mut got = Vec::new();
    for (limit, count, truncated) in [(0, 1, true), (4, 4, true), (500, 7, false)] {
        let v = u.ok("read_updates", page(limit, false)).await?;
        let entry = Updating::entry(&v, &full).context("full entry")?;
        assert_eq!(entry["truncated"], json!(truncated), "{v}");
        let events = entry["events"].as_array().context("events")?.clone();
        assert_eq!(events.len(), count, "limit {limit}: {v}");
        if limit == 4 {
            assert_eq!(
                Updating::entry(&p1, &full).context("peeked")?["events"],
                json!(got
                    .iter()
                    .chain(events.iter())
                    .take(4)
                    .cloned()
                    .collect::<Vec<_>>()),
                "the peeked page is what the reads then returned"
            );
        }
        got.extend(events);
    }
    let texts: Vec<String> = got
        .iter()
        .zip(&sent)
        .map(|(e, (from, _))| check_event(e, &chan, from))
        .collect();
    let want_texts: Vec<String> = sent.iter().map(|(_, t)| t.clone()).collect();
    assert_eq!(texts, want_texts);
    let s = seqs(&got);
    assert!(s.windows(2).all(|w| w[0] < w[1]), "oldest first: {s:?}");
    assert_eq!(
        u.ok("read_updates", page(500, false)).await?.to_string(),
        EMPTY
    );
    assert_eq!(u.ok("read_updates", json!({})).await?.to_string(), EMPTY);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_from_before_a_subscription_are_never_delivered() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#s"]), port))?;
    alice.join("#s").await?;
    let chan = joined(&session, "#s").await?;
    say(&mut alice, "#s", "old one").await?;
    say(&mut alice, "#s", "old two").await?;
    stored(&session, "#s", "old two").await?;

    let first = u.subscribe_settled(json!({"buffers": [chan]})).await?;
    say(&mut alice, "#s", "new one").await?;
    let events = u.drain_until(&first, "new one").await?;
    assert_eq!(event_texts(&events), ["new one"]);

    // A later subscription starts later still.
    let later = u.subscribe_settled(json!({"from": ["ALICE"]})).await?;
    say(&mut alice, "#s", "new two").await?;
    assert_eq!(
        event_texts(&u.drain_until(&later, "new two").await?),
        ["new two"]
    );
    assert_eq!(
        event_texts(&u.drain_until(&first, "new two").await?),
        ["new two"]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_replay_is_backfilled_never_delivered_and_does_not_end_a_wait() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&[]), port))?;
    alice.join("#hist").await?;
    alice.send("MODE #hist +H 10:1d").await?;
    alice
        .wait_for(|l| Msg::parse(l).command == "MODE", DEFAULT_TIMEOUT)
        .await?;
    for text in ["replayed one", "replayed two", "replayed three"] {
        say(&mut alice, "#hist", text).await?;
    }
    let reader = session.reader();
    eventually("connected", WAIT, || {
        let reader = reader.clone();
        async move {
            let state = reader.read(|v| v.state()).await.ok()?;
            (state == rete_engine::event::ConnState::Connected).then_some(())
        }
    })
    .await?;
    let sid = session.id().as_str().to_owned();
    let sub = u.subscribe_settled(json!({"sessions": [sid]})).await?;
    let wait = u.spawn("wait_for_updates", json!({"id": sub, "timeout": 20}));
    u.waits_parked(1).await?;

    // We join after subscribing: the buffer is new, so it is collected from its first row,
    // and InspIRCd replays the three lines as history.
    session.sender().command(|c| c.join("#hist", None)).await?;
    let chan = joined(&session, "#hist").await?;
    eventually("the replay counted as backfilled", WAIT, || async {
        let v = u
            .ok("read_updates", json!({"id": sub, "peek": true}))
            .await
            .ok()?;
        (digest_row(&v, &sub, &chan)?["backfilled"] == json!(3)).then_some(())
    })
    .await?;
    assert_eq!(
        u.stats().await?.waits,
        1,
        "counters alone do not end a wait"
    );
    assert!(!wait.task.is_finished());

    say(&mut alice, "#hist", "live after the replay").await?;
    let v = match wait.task.await? {
        ToolOutcome::Ok(v) => v,
        other => anyhow::bail!("the wait failed: {other:?}"),
    };
    assert_eq!(
        v,
        json!({"untrusted": true, "updates": [{"subscription": sub, "buffers": [{
            "buffer": chan, "name": "#hist", "new": 1, "mentions": 0, "from": ["alice"],
            "backfilled": 3,
        }]}]})
    );
    assert_eq!(
        u.ok("read_updates", json!({"id": sub})).await?.to_string(),
        EMPTY,
        "backfilled is reported once"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_holding_a_session_secret_is_withheld_and_counted_once() -> Result<()> {
    const PW: &str = "srvPass-7731xyz";
    let ircd = Inspircd::start(InspircdConfig::new().password(PW)).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let mut config = config_in(&["#w"]);
    config.password = Some(PW.to_owned());
    let (mut alice, session) = tokio::try_join!(
        Bot::connect_with(
            BotConfig::new(port, "alice")
                .password(PW)
                .caps(&["echo-message"])
        ),
        u.add(config, port)
    )?;
    alice.join("#w").await?;
    let chan = joined(&session, "#w").await?;
    let sub = u.subscribe_settled(json!({"buffers": [chan]})).await?;
    let no_secret = |v: &Value| assert!(!encode(v).contains(PW), "a secret left Rete: {v}");

    say(&mut alice, "#w", &format!("the server password is {PW}")).await?;
    eventually("the secret line counted", WAIT, || async {
        let v = u
            .ok("read_updates", json!({"id": sub, "peek": true}))
            .await
            .ok()?;
        no_secret(&v);
        (digest_row(&v, &sub, &chan)?["withheld"] == json!(1)).then_some(())
    })
    .await?;
    // Counters alone do not end a wait, and a timed-out wait reads nothing.
    let v = u
        .ok("wait_for_updates", json!({"id": sub, "timeout": 1}))
        .await?;
    assert_eq!(
        v.to_string(),
        r#"{"timed_out":true,"untrusted":true,"updates":[]}"#
    );

    say(&mut alice, "#w", "an ordinary line").await?;
    let v = u
        .ok("wait_for_updates", json!({"id": sub, "timeout": 20}))
        .await?;
    no_secret(&v);
    assert_eq!(
        v,
        json!({"untrusted": true, "updates": [{"subscription": sub, "buffers": [{
            "buffer": chan, "name": "#w", "new": 1, "mentions": 0, "from": ["alice"],
            "withheld": 1,
        }]}]})
    );
    assert_eq!(u.ok("read_updates", json!({})).await?.to_string(), EMPTY);

    // In full mode the counter is the subscription's, and the event list never holds it.
    say(&mut alice, "#w", &format!("again: {PW}")).await?;
    say(&mut alice, "#w", "after again").await?;
    let v = u
        .ok(
            "wait_for_updates",
            json!({"id": sub, "detail": "full", "timeout": 20}),
        )
        .await?;
    no_secret(&v);
    let entry = Updating::entry(&v, &sub).context("entry")?;
    let events = entry["events"].as_array().context("events")?;
    assert_eq!(event_texts(events), ["after again"]);
    assert_eq!(entry["withheld"], json!(1), "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_drops_past_500_events_and_after_an_hour() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#f"]), port))?;
    alice.join("#f").await?;
    let chan = joined(&session, "#f").await?;
    let sub = u.subscribe_settled(json!({"buffers": [chan]})).await?;

    // 520 lines, 20 at a time, each 20 collected before the next are said, so no batch ever
    // has more than 20 changes queued (past 256 a buffer's range would be evicted instead).
    let rows_before = u.stats().await?.rows;
    let lines: Vec<String> = (0..520).map(|i| format!("f{i}")).collect();
    for (n, chunk) in lines.chunks(20).enumerate() {
        say_all(&mut alice, "#f", chunk).await?;
        let want = rows_before + 20 * (n as u64 + 1);
        eventually("the chunk collected", WAIT, || async {
            (u.stats().await.ok()?.rows >= want).then_some(())
        })
        .await?;
    }
    let list = u.ok("list_subscriptions", json!({})).await?;
    assert_eq!(list["subscriptions"][0]["pending"], json!(500), "{list}");
    assert_eq!(list["subscriptions"][0]["dropped"], json!(20), "{list}");

    // The oldest went first.
    let v = u
        .ok(
            "read_updates",
            json!({"id": sub, "detail": "full", "limit": 1, "peek": true}),
        )
        .await?;
    let entry = Updating::entry(&v, &sub).context("entry")?;
    assert_eq!(entry["dropped"], json!(20), "{v}");
    assert_eq!(entry["truncated"], json!(true), "{v}");
    assert_eq!(
        event_texts(entry["events"].as_array().context("events")?),
        ["f20"]
    );
    let want = json!({"untrusted": true, "updates": [{"subscription": sub, "dropped": 20,
        "buffers": [{"buffer": chan, "name": "#f", "new": 500, "mentions": 0, "from": ["alice"]}]}]});
    assert_eq!(u.ok("read_updates", json!({"id": sub})).await?, want);
    assert_eq!(
        u.ok("read_updates", json!({"id": sub})).await?.to_string(),
        EMPTY,
        "dropped is reported once"
    );

    // An event older than an hour is dropped too; reads (peek included) keep the subscription
    // from expiring meanwhile.
    say(&mut alice, "#f", "aging").await?;
    u.drain_until(&sub, "aging").await?;
    say(&mut alice, "#f", "aging two").await?;
    eventually("one pending", WAIT, || async {
        let list = u.ok("list_subscriptions", json!({})).await.ok()?;
        (list["subscriptions"][0]["pending"] == json!(1)).then_some(())
    })
    .await?;
    for _ in 0..5 {
        u.clock.advance(Duration::from_secs(601));
        let v = u
            .ok("read_updates", json!({"id": sub, "peek": true}))
            .await?;
        assert_eq!(digest_row(&v, &sub, &chan).context("row")?["new"], json!(1));
    }
    u.clock.advance(Duration::from_secs(601));
    let gone =
        json!({"untrusted": true, "updates": [{"subscription": sub, "dropped": 1, "buffers": []}]});
    assert_eq!(
        u.ok("read_updates", json!({"id": sub, "peek": true}))
            .await?,
        gone
    );
    assert_eq!(u.ok("read_updates", json!({"id": sub})).await?, gone);
    assert_eq!(
        u.ok("read_updates", json!({"id": sub})).await?.to_string(),
        EMPTY
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_holds_at_most_262144_bytes_of_events() -> Result<()> {
    const CAP: usize = 262_144;
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#b"]), port))?;
    alice.join("#b").await?;
    let chan = joined(&session, "#b").await?;
    let sub = u.subscribe_settled(json!({"buffers": [chan]})).await?;

    // 480 lines of 400 bytes: far under the 500-event cap in number, over the byte cap.
    let sent = 480;
    let rows_before = u.stats().await?.rows;
    let lines: Vec<String> = (0..sent)
        .map(|i| format!("{i:03} {}", "x".repeat(396)))
        .collect();
    for (n, chunk) in lines.chunks(20).enumerate() {
        say_all(&mut alice, "#b", chunk).await?;
        let want = rows_before + 20 * (n as u64 + 1);
        eventually("the chunk collected", WAIT, || async {
            (u.stats().await.ok()?.rows >= want).then_some(())
        })
        .await?;
    }
    let list = u.ok("list_subscriptions", json!({})).await?;
    let pending = list["subscriptions"][0]["pending"]
        .as_u64()
        .context("pending")?;
    let dropped = list["subscriptions"][0]["dropped"]
        .as_u64()
        .context("dropped")?;
    assert!(pending < 480 && pending + dropped == 480, "{list}");

    // Drain it in full pages (each under the 60,000-byte budget) and weigh the events.
    let mut events = Vec::new();
    let mut reported_dropped = Vec::new();
    loop {
        let v = u
            .ok(
                "read_updates",
                json!({"id": sub, "detail": "full", "limit": 500}),
            )
            .await?;
        let Some(entry) = Updating::entry(&v, &sub) else {
            break;
        };
        reported_dropped.extend(entry["dropped"].as_u64());
        events.extend(entry["events"].as_array().cloned().unwrap_or_default());
    }
    assert_eq!(reported_dropped, [dropped], "dropped is reported once");
    assert_eq!(events.len() as u64, pending);
    let sizes: Vec<usize> = events.iter().map(|e| encode(e).len()).collect();
    let held: usize = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or_default();
    println!("byte cap: {pending} events held ({held} bytes), {dropped} dropped");
    assert!(held <= CAP, "{held} bytes held");
    assert!(
        held + largest > CAP,
        "only {held} bytes held: not dropped for bytes"
    );
    // The oldest went first: what is held is the newest, in order.
    let want: Vec<String> = lines[dropped as usize..].to_vec();
    assert_eq!(event_texts(&events), want);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_session_marks_its_buffers_evicted() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let config = config_in(&["#e"]);
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config.clone(), port))?;
    alice.join("#e").await?;
    let chan = joined(&session, "#e").await?;
    let sid = session.id().clone();
    let sub = u
        .subscribe_settled(json!({"sessions": [sid.as_str()]}))
        .await?;
    say(&mut alice, "#e", "before the restart").await?;
    assert_eq!(
        event_texts(&u.drain_until(&sub, "before the restart").await?),
        ["before the restart"]
    );

    // Removed and added again under the same id: same buffer ids, sequences from 1 again.
    u.rete.remove_session(&sid).await?;
    eventually("session_disconnected", WAIT, || async {
        let list = u.ok("list_subscriptions", json!({})).await.ok()?;
        (list["subscriptions"][0]["state"] == json!("session_disconnected")).then_some(())
    })
    .await?;
    let session = u.add(config, port).await?;
    assert_eq!(joined(&session, "#e").await?, chan, "buffer ids are stable");
    eventually("the restarted channel marked evicted", WAIT, || async {
        let v = u
            .ok("read_updates", json!({"id": sub, "peek": true}))
            .await
            .ok()?;
        (digest_row(&v, &sub, &chan)?["evicted"] == json!(true)).then_some(())
    })
    .await?;

    say(&mut alice, "#e", "after the restart").await?;
    let v = u
        .ok("wait_for_updates", json!({"id": sub, "timeout": 20}))
        .await?;
    let row = digest_row(&v, &sub, &chan).context("row")?;
    assert_eq!(
        row,
        &json!({"buffer": chan, "name": "#e", "new": 1, "mentions": 0, "from": ["alice"],
            "evicted": true}),
        "{v}"
    );
    assert_eq!(
        u.ok("read_updates", json!({"id": sub})).await?.to_string(),
        EMPTY
    );
    let list = u.ok("list_subscriptions", json!({})).await?;
    assert_eq!(list["subscriptions"][0]["state"], json!("active"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_read_without_a_subscription_or_for_an_uncovered_buffer() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) = tokio::try_join!(
        echo_bot(port, "alice"),
        u.add(config_in(&["#busy", "#quiet"]), port)
    )?;
    alice.join("#busy").await?;
    alice.join("#quiet").await?;
    joined(&session, "#busy").await?;
    let quiet = joined(&session, "#quiet").await?;

    let flood = |n: usize, tag: &str| -> Vec<String> {
        (0..n).map(|i| format!("{tag} flood {i} mriron")).collect()
    };
    let lines = flood(100, "unsubscribed");
    say_all(&mut alice, "#busy", &lines).await?;
    stored(&session, "#busy", &lines[99]).await?;
    let s0 = u.stats().await?;
    assert_eq!(
        (s0.batches, s0.rows, s0.subscriptions, s0.waits),
        (0, 0, 0, 0)
    );

    let sub = u.subscribe_settled(json!({"buffers": [quiet]})).await?;
    let s1 = u.stats().await?;
    assert_eq!(
        (s1.batches, s1.rows),
        (1, 0),
        "only the starting point was read"
    );
    let lines = flood(300, "uncovered");
    say_all(&mut alice, "#busy", &lines).await?;
    stored(&session, "#busy", &lines[299]).await?;
    let s2 = u.stats().await?;
    println!("after 300 lines into an uncovered buffer: {s2:?}");
    assert_eq!((s2.batches, s2.rows), (s1.batches, s1.rows));

    say(&mut alice, "#quiet", "a quiet line").await?;
    let v = u
        .ok("wait_for_updates", json!({"id": sub, "timeout": 20}))
        .await?;
    assert_eq!(
        digest_row(&v, &sub, &quiet).context("row")?["new"],
        json!(1)
    );
    let s3 = u.stats().await?;
    assert_eq!(
        (s3.batches, s3.rows),
        (s1.batches + 1, s1.rows + 1),
        "one batch read the one covered row"
    );

    // Once the last subscription goes, nothing is read again.
    u.ok("unsubscribe", json!({"id": sub})).await?;
    let lines = flood(50, "after");
    say_all(&mut alice, "#quiet", &lines).await?;
    stored(&session, "#quiet", &lines[49]).await?;
    let s4 = u.stats().await?;
    assert_eq!(
        (s4.batches, s4.rows, s4.subscriptions),
        (s3.batches, s3.rows, 0)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_answers_as_soon_as_a_message_arrives() -> Result<()> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let u = Updating::start().await?;
    let (mut alice, session) =
        tokio::try_join!(echo_bot(port, "alice"), u.add(config_in(&["#l"]), port))?;
    alice.join("#l").await?;
    let chan = joined(&session, "#l").await?;

    // A wait with no id, parked while no subscription exists, targets one made meanwhile.
    let any = u.spawn("wait_for_updates", json!({"timeout": 20}));
    u.waits_parked(1).await?;
    let sub = u.subscribe_settled(json!({"buffers": [chan]})).await?;
    assert!(!any.task.is_finished());
    say(&mut alice, "#l", "for the newcomer").await?;
    let v = match any.task.await? {
        ToolOutcome::Ok(v) => v,
        other => anyhow::bail!("the wait failed: {other:?}"),
    };
    assert_eq!(
        digest_row(&v, &sub, &chan).context("row")?["new"],
        json!(1),
        "{v}"
    );
    assert!(v.get("timed_out").is_none());

    // Latency: from the bot sending a line to the parked wait answering with it.
    let mut took = Vec::new();
    for i in 0..5 {
        let text = format!("ping {i}");
        let wait = u.spawn(
            "wait_for_updates",
            json!({"id": sub, "detail": "full", "timeout": 20}),
        );
        u.waits_parked(1).await?;
        let t0 = Instant::now();
        alice.privmsg("#l", &text).await?;
        let v = match wait.task.await? {
            ToolOutcome::Ok(v) => v,
            other => anyhow::bail!("the wait failed: {other:?}"),
        };
        took.push(t0.elapsed());
        let entry = Updating::entry(&v, &sub).context("entry")?;
        assert_eq!(
            event_texts(entry["events"].as_array().context("events")?),
            [text.as_str()]
        );
        let suffix = format!(" #l :{text}");
        alice
            .wait_for(move |l| l.ends_with(&suffix), DEFAULT_TIMEOUT)
            .await?;
    }
    took.sort();
    println!(
        "wait_for_updates latency, bot send to answer (5 runs): min {:?} median {:?} max {:?}",
        took[0], took[2], took[4]
    );
    Ok(())
}
