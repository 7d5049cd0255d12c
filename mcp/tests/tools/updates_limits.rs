//! The live-update limits that need no IRC server, through `ToolBox::call` on a real
//! subscription registry with an injectable clock: the 16-subscription limit, idle expiry
//! (900 s, with the clock advanced instead of slept), which calls touch a subscription, the
//! 2-wait limit with its exact refusal, a cancelled wait freeing its place, a wait ending when
//! its subscription is unsubscribed or expires, and a wait timing out.
//!
//! The IRC-backed behaviour (matching, counters, latency) is in `updates_live.rs` (this binary).

use std::time::Duration;

use anyhow::{Context, Result};
use rete_mcp::tools::ToolOutcome;
use serde_json::{json, Value};
use support::live_tests_session::eventually;
use support::updates_tests_tools::Updating;
use tokio::time::Instant;

const TOO_MANY_SUBS: &str = "too many subscriptions: unsubscribe one first (limit 16)";
const TOO_MANY_WAITS: &str = "too many waiting calls: at most 2 wait_for_updates may run at once";
const UNKNOWN: &str = "unknown subscription";
const TIMED_OUT: &str = r#"{"timed_out":true,"untrusted":true,"updates":[]}"#;

/// How soon a cancelled wait must give its place back. The contract says about a tenth of a
/// second over HTTP; here it is one actor message, so a second is generous.
const FREED_WITHIN: Duration = Duration::from_secs(1);

fn ids(list: &Value) -> Vec<String> {
    list["subscriptions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn is_sub_id(id: &str) -> bool {
    id.strip_prefix("sub_").is_some_and(|hex| {
        hex.len() == 12 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Cancels a running call as the listener does and returns how long the registry took to
/// give its place back (`waits` falling to `left`).
async fn cancel_and_time(
    u: &Updating,
    run: support::updates_tests_tools::Running,
    left: usize,
) -> Result<Duration> {
    let t0 = Instant::now();
    run.cancel.cancel();
    let outcome = run.task.await?;
    assert_eq!(outcome, ToolOutcome::Cancelled);
    eventually("the cancelled wait's place freed", FREED_WITHIN, || async {
        (u.stats().await.ok()?.waits == left).then_some(())
    })
    .await?;
    Ok(t0.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seventeenth_subscription_is_refused_until_one_goes() -> Result<()> {
    let u = Updating::start().await?;
    let mut made = Vec::new();
    for i in 0..16 {
        let v = u
            .ok(
                "subscribe",
                json!({"from": [format!("Nick{i}"), "", format!("NICK{i}")], "mentions": false}),
            )
            .await?;
        let sub = &v["subscription"];
        let id = sub["id"].as_str().context("id")?.to_owned();
        assert!(is_sub_id(&id), "{id}");
        assert_eq!(sub["expires_after_idle"], json!(900));
        // Normalised: lowercased, empty entry dropped, deduplicated, false flag left out.
        assert_eq!(sub["filters"], json!({"from": [format!("nick{i}")]}));
        assert!(sub["created"].as_str().is_some_and(|t| t.ends_with('Z')));
        made.push(id);
    }
    assert_eq!(
        u.err("subscribe", json!({"mentions": true})).await?,
        TOO_MANY_SUBS
    );
    assert_eq!(u.stats().await?.subscriptions, 16);
    let list = u.ok("list_subscriptions", json!({})).await?;
    assert_eq!(ids(&list), made, "oldest first");
    for s in list["subscriptions"].as_array().context("subscriptions")? {
        assert_eq!(s["state"], json!("active"));
        assert_eq!(s["pending"], json!(0));
        assert_eq!(s["dropped"], json!(0));
        assert!(s.get("last_read").is_none(), "never read: {s}");
    }

    assert_eq!(
        u.ok("unsubscribe", json!({"id": made[3]})).await?,
        json!({"unsubscribed": true})
    );
    assert_eq!(u.err("unsubscribe", json!({"id": made[3]})).await?, UNKNOWN);
    assert_eq!(
        u.err("read_updates", json!({"id": made[3]})).await?,
        UNKNOWN
    );
    let again = u.subscribe(json!({"queries": true})).await?;
    assert_eq!(
        u.err("subscribe", json!({"queries": true})).await?,
        TOO_MANY_SUBS
    );
    let list = u.ok("list_subscriptions", json!({})).await?;
    let mut expected = made.clone();
    expected.remove(3);
    expected.push(again);
    assert_eq!(ids(&list), expected);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_subscriptions_expire_after_900_seconds_and_reads_touch_them() -> Result<()> {
    let u = Updating::start().await?;
    let a = u.subscribe(json!({"mentions": true})).await?;
    let b = u.subscribe(json!({"queries": true})).await?;

    // A read naming b touches b only; listing touches nothing.
    u.clock.advance(Duration::from_secs(600));
    assert_eq!(
        u.ok("read_updates", json!({"id": b})).await?,
        json!({"untrusted": true, "updates": []})
    );
    let list = u.ok("list_subscriptions", json!({})).await?;
    assert_eq!(ids(&list), [a.clone(), b.clone()]);
    assert!(list["subscriptions"][0].get("last_read").is_none());
    assert!(list["subscriptions"][1]["last_read"].is_string());
    u.clock.advance(Duration::from_secs(299));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        [a.clone(), b.clone()],
        "899 s idle is not yet expired"
    );
    u.clock.advance(Duration::from_secs(1));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        [b.as_str()],
        "a expired at 900 s idle; b was read 300 s ago"
    );
    assert_eq!(u.err("read_updates", json!({"id": a})).await?, UNKNOWN);
    assert_eq!(u.err("unsubscribe", json!({"id": a})).await?, UNKNOWN);
    assert_eq!(
        u.err("wait_for_updates", json!({"id": a, "timeout": 1}))
            .await?,
        UNKNOWN
    );
    assert_eq!(u.stats().await?.subscriptions, 1);

    // A peek read with no id touches every subscription.
    let c = u.subscribe(json!({"from": ["x"]})).await?;
    u.clock.advance(Duration::from_secs(500));
    u.ok("read_updates", json!({"peek": true})).await?;
    u.clock.advance(Duration::from_secs(899));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        [b.clone(), c.clone()]
    );
    u.clock.advance(Duration::from_secs(1));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        Vec::<String>::new()
    );
    assert_eq!(u.stats().await?.subscriptions, 0);

    // A parked wait touches its subscription when it parks; when the subscription then
    // expires, the wait ends with unknown subscription.
    let d = u.subscribe(json!({"mentions": true})).await?;
    u.clock.advance(Duration::from_secs(899));
    let wait = u.spawn("wait_for_updates", json!({"id": d, "timeout": 20}));
    u.waits_parked(1).await?;
    u.clock.advance(Duration::from_secs(899));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        [d.as_str()],
        "parking touched it"
    );
    assert_eq!(u.stats().await?.waits, 1, "still waiting");
    u.clock.advance(Duration::from_secs(1));
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        Vec::<String>::new()
    );
    assert_eq!(wait.task.await?, ToolOutcome::Error(UNKNOWN.into()));
    assert_eq!(u.stats().await?.waits, 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_two_waits_and_a_cancelled_wait_frees_its_place() -> Result<()> {
    let u = Updating::start().await?;
    let s = u.subscribe(json!({"mentions": true})).await?;
    let first = u.spawn("wait_for_updates", json!({"id": s, "timeout": 20}));
    let second = u.spawn("wait_for_updates", json!({"timeout": 20}));
    u.waits_parked(2).await?;

    let t0 = Instant::now();
    assert_eq!(
        u.err("wait_for_updates", json!({"id": s, "timeout": 1}))
            .await?,
        TOO_MANY_WAITS
    );
    assert_eq!(u.err("wait_for_updates", json!({})).await?, TOO_MANY_WAITS);
    println!("third wait refused after {:?}", t0.elapsed());
    // Every other tool keeps answering.
    assert_eq!(
        ids(&u.ok("list_subscriptions", json!({})).await?),
        [s.as_str()]
    );
    u.ok("read_updates", json!({"id": s, "peek": true})).await?;
    u.ok("subscribe", json!({"queries": true})).await?;

    let freed = cancel_and_time(&u, first, 1).await?;
    println!("a cancelled wait freed its place after {freed:?}");
    let third = u.spawn("wait_for_updates", json!({"id": s, "timeout": 20}));
    u.waits_parked(2).await?;
    assert_eq!(
        u.err("wait_for_updates", json!({"timeout": 1})).await?,
        TOO_MANY_WAITS
    );
    let freed_second = cancel_and_time(&u, second, 1).await?;
    let freed_third = cancel_and_time(&u, third, 0).await?;
    println!("then after {freed_second:?} and {freed_third:?}");

    // Cancelling the parent token cancels every call made from it.
    let a = u.spawn("wait_for_updates", json!({"timeout": 20}));
    let b = u.spawn("wait_for_updates", json!({"id": s, "timeout": 20}));
    u.waits_parked(2).await?;
    u.ctx.cancel.cancel();
    assert_eq!(a.task.await?, ToolOutcome::Cancelled);
    assert_eq!(b.task.await?, ToolOutcome::Cancelled);
    eventually("both places freed", FREED_WITHIN, || async {
        (u.stats().await.ok()?.waits == 0).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_time_out_or_end_when_their_subscription_goes() -> Result<()> {
    let u = Updating::start().await?;
    let s = u.subscribe(json!({"mentions": true})).await?;

    for timeout in [json!(1), json!(0), json!(-7)] {
        let t0 = Instant::now();
        let v = u
            .ok("wait_for_updates", json!({"id": s, "timeout": timeout}))
            .await?;
        let took = t0.elapsed();
        assert_eq!(v.to_string(), TIMED_OUT, "timeout {timeout}");
        assert!(
            took >= Duration::from_secs(1),
            "timeout {timeout} is clamped to 1 s, answered after {took:?}"
        );
        println!("timeout {timeout}: timed out after {took:?}");
    }
    let v = u.ok("wait_for_updates", json!({"timeout": 1})).await?;
    assert_eq!(v.to_string(), TIMED_OUT, "no id");
    assert_eq!(u.stats().await?.waits, 0);

    // Unknown and malformed ids are refused at once, never parked.
    for id in ["sub_000000000000", "nope", "SUB_ABCDEFABCDEF"] {
        assert_eq!(
            u.err("wait_for_updates", json!({"id": id, "timeout": 20}))
                .await?,
            UNKNOWN,
            "{id}"
        );
    }
    assert_eq!(
        u.err("wait_for_updates", json!({"detail": "brief"}))
            .await?,
        "invalid arguments: detail must be digest or full"
    );

    // A wait on a subscription unsubscribed meanwhile ends with unknown subscription; a wait
    // with no id on the same registry keeps waiting.
    let t = u.subscribe(json!({"queries": true})).await?;
    let named = u.spawn("wait_for_updates", json!({"id": t, "timeout": 20}));
    let any = u.spawn("wait_for_updates", json!({"timeout": 20}));
    u.waits_parked(2).await?;
    u.ok("unsubscribe", json!({"id": t})).await?;
    assert_eq!(named.task.await?, ToolOutcome::Error(UNKNOWN.into()));
    u.waits_parked(1).await?;
    assert!(!any.task.is_finished());
    any.cancel.cancel();
    assert_eq!(any.task.await?, ToolOutcome::Cancelled);
    u.waits_parked(0).await?;
    Ok(())
}
