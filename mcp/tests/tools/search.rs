//! search_messages and find_user against a real InspIRCd: a session joined to three channels,
//! bots that talk in them, and the tools called directly through `ToolBox` (no HTTP).
//!
//! The contract's large bounds (100,000 copied rows, 250 ms) are reached through the tools'
//! `*_with` entry points with small limits, which run the same code with other numbers.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rete_actors::{Rete, ReteOptions, SessionHandle};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::ids::BufferId;
use rete_engine::session::ChannelSpec;
use rete_mcp::access_log::AccessLog;
use rete_mcp::tools::args::Args;
use rete_mcp::tools::{find_user, search, Settings, ToolBox, ToolContext, ToolOutcome};
use serde_json::{json, Value};
use support::live_tests_session::{eventually, plain, session_config, spec};
use support::{Bot, BotConfig, Inspircd, InspircdConfig};
use tokio_util::sync::CancellationToken;

const ME: &str = "listener";
const WAIT: Duration = Duration::from_secs(10);

/// A server, two bots and our session in #one, #two and #three (alice in all three and
/// their operator, bob in #one only).
struct Env {
    _ircd: Inspircd,
    _rete: Arc<Rete>,
    session: SessionHandle,
    ctx: ToolContext,
    alice: Bot,
    bob: Bot,
    one: BufferId,
    two: BufferId,
    three: BufferId,
}

const CHANNELS: [&str; 3] = ["#one", "#two", "#three"];

async fn setup() -> Result<Env> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let caps = ["echo-message", "server-time", "message-tags"];
    let (mut alice, mut bob) = tokio::try_join!(
        Bot::connect_with(BotConfig::new(port, "alice").caps(&caps)),
        Bot::connect_with(BotConfig::new(port, "bob").caps(&caps)),
    )?;
    for c in CHANNELS {
        alice.join(c).await?;
    }
    bob.join("#one").await?;
    let mut config = session_config(ME);
    config.channels = CHANNELS
        .iter()
        .map(|c| ChannelSpec {
            name: (*c).into(),
            key: None,
        })
        .collect();
    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let session = rete.add_session(spec(config, plain(port))).await?;
    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        send: None,
        cancel: CancellationToken::new(),
        settings: Settings::default(),
        access_log: Arc::new(AccessLog::new()),
        updates: rete_mcp::updates::Updates::unstarted(),
        capture: rete_mcp::debug::Capture::off(),
    };
    let mut ids = Vec::new();
    for c in CHANNELS {
        ids.push(joined(&session, c).await?);
    }
    Ok(Env {
        _ircd: ircd,
        _rete: rete,
        session,
        ctx,
        alice,
        bob,
        one: ids[0].clone(),
        two: ids[1].clone(),
        three: ids[2].clone(),
    })
}

/// Waits until the session is connected, in `channel` and sees alice there.
async fn joined(session: &SessionHandle, channel: &str) -> Result<BufferId> {
    let reader = session.reader();
    let name = channel.to_owned();
    eventually(&format!("joined {channel}"), WAIT, || {
        let reader = reader.clone();
        let name = name.clone();
        async move {
            reader
                .read(move |v| {
                    if v.state() != ConnState::Connected {
                        return None;
                    }
                    let id = v.find_buffer(BufferKind::Channel, &name)?;
                    let members = v.members(id)?;
                    let ok = members.iter().any(|m| m.nick == ME)
                        && members.iter().any(|m| m.nick == "alice");
                    ok.then(|| id.clone())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await
}

/// Waits until buffer `id` holds a message whose text is `text`.
async fn arrived(session: &SessionHandle, id: &BufferId, text: &str) -> Result<()> {
    let reader = session.reader();
    let (id, text) = (id.clone(), text.to_owned());
    eventually(&format!("{text:?} to arrive"), WAIT, || {
        let reader = reader.clone();
        let (id, text) = (id.clone(), text.clone());
        async move {
            reader
                .read(move |v| {
                    v.buffer(&id)?
                        .since(0)
                        .any(|r| {
                            let mut hit = false;
                            r.payload.for_each_text(|t| hit |= t == text);
                            hit
                        })
                        .then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await
}

/// Says each text in `channel`, then waits until the last has arrived.
async fn say_all(env: &mut Env, who: Who, channel: &str, texts: &[&str]) -> Result<()> {
    let bot = match who {
        Who::Alice => &mut env.alice,
        Who::Bob => &mut env.bob,
    };
    for t in texts {
        bot.privmsg(channel, t).await?;
    }
    let id = match channel {
        "#one" => env.one.clone(),
        "#two" => env.two.clone(),
        _ => env.three.clone(),
    };
    if let Some(last) = texts.last() {
        let plain = last
            .trim_start_matches("\u{1}ACTION ")
            .trim_end_matches('\u{1}');
        arrived(&env.session, &id, plain).await?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Who {
    Alice,
    Bob,
}

/// The session's channels in listing order, as (id, name).
async fn channels(env: &Env) -> Result<Vec<(String, String)>> {
    let list = env
        .session
        .reader()
        .read(|v| {
            v.buffers()
                .filter(|b| b.kind() == BufferKind::Channel)
                .map(|b| (b.id().as_str().to_owned(), b.name().to_owned()))
                .collect()
        })
        .await?;
    Ok(list)
}

fn args(v: Value) -> Args {
    Args::from_request(Some(&v)).unwrap_or_default()
}

async fn call(env: &Env, name: &str, v: Value) -> ToolOutcome {
    ToolBox::new().call(name, &env.ctx, &args(v)).await
}

fn ok(outcome: ToolOutcome) -> Result<Value> {
    match outcome {
        ToolOutcome::Ok(v) => Ok(v),
        other => bail!("expected a result, got {other:?}"),
    }
}

fn error(outcome: ToolOutcome) -> Result<String> {
    match outcome {
        ToolOutcome::Error(e) => Ok(e),
        other => bail!("expected an error, got {other:?}"),
    }
}

async fn search(env: &Env, v: Value) -> Result<Value> {
    ok(call(env, "search_messages", v).await)
}

/// The texts of a page's matches, in order.
fn texts(page: &Value) -> Vec<String> {
    page["matches"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    m["message"]["payload"]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn ids(list: &[&BufferId]) -> Value {
    json!(list.iter().map(|b| b.as_str()).collect::<Vec<_>>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_modes_filters_and_errors() -> Result<()> {
    let mut env = setup().await?;
    say_all(
        &mut env,
        Who::Alice,
        "#one",
        &["Zebra crossing", "a zebra here", "no stripes"],
    )
    .await?;
    say_all(
        &mut env,
        Who::Bob,
        "#one",
        &["ZEBRA", "\u{1}ACTION rides a zebra\u{1}"],
    )
    .await?;
    env.alice.send("NOTICE #two :zebra notice").await?;
    say_all(&mut env, Who::Alice, "#two", &["zebras everywhere"]).await?;

    // substring: ignores case, newest first within a buffer, buffers in listing order.
    let page = search(&env, json!({"query": "zebra"})).await?;
    assert_eq!(
        texts(&page),
        [
            "rides a zebra",
            "ZEBRA",
            "a zebra here",
            "Zebra crossing",
            "zebras everywhere",
            "zebra notice"
        ]
    );
    assert_eq!(page["truncated"], json!(false));
    assert!(page.get("next_cursor").is_none());
    let first = &page["matches"][0];
    assert_eq!(first["buffer"], json!(env.one.as_str()));
    assert_eq!(first["message"]["from"], json!("bob"));
    assert_eq!(first["message"]["kind"], json!("action"));
    assert_eq!(first["message"]["untrusted"], json!(true));
    assert_eq!(first["message"]["payload"]["caseName"], json!("action"));
    assert!(first["message"]["id"].is_string(), "InspIRCd sends msgids");

    // glob: whole fields, ignoring case.
    let page = search(&env, json!({"query": "zebra", "match": "glob"})).await?;
    assert_eq!(texts(&page), ["ZEBRA"]);
    let page = search(&env, json!({"query": "zebra?*", "match": "glob"})).await?;
    assert_eq!(
        texts(&page),
        ["Zebra crossing", "zebras everywhere", "zebra notice"]
    );
    // The sender is a field too.
    let page = search(
        &env,
        json!({"query": "B?B", "match": "glob", "kinds": ["privmsg"]}),
    )
    .await?;
    assert_eq!(texts(&page), ["ZEBRA"]);

    // regex: case-sensitive unless (?i).
    let page = search(&env, json!({"query": "^Zebra", "match": "regex"})).await?;
    assert_eq!(texts(&page), ["Zebra crossing"]);
    let page = search(&env, json!({"query": "(?i)^zebra$", "match": "regex"})).await?;
    assert_eq!(texts(&page), ["ZEBRA"]);

    // Filters.
    let page = search(
        &env,
        json!({"query": "zebra", "kinds": ["notice", "action"]}),
    )
    .await?;
    assert_eq!(texts(&page), ["rides a zebra", "zebra notice"]);
    let page = search(&env, json!({"query": "zebra", "from": "BOB"})).await?;
    assert_eq!(texts(&page), ["rides a zebra", "ZEBRA"]);
    let page = search(&env, json!({"query": "zebra", "buffers": ids(&[&env.two])})).await?;
    assert_eq!(texts(&page), ["zebras everywhere", "zebra notice"]);
    assert_eq!(page["coverage"].as_array().map(Vec::len), Some(1));
    let session = env.session.id().as_str().to_ascii_lowercase();
    let page = search(&env, json!({"query": "zebra", "sessions": [session]})).await?;
    assert_eq!(texts(&page).len(), 6);
    let page = search(
        &env,
        json!({"query": "zebra", "since": "2999-01-01T00:00:00Z"}),
    )
    .await?;
    assert_eq!(texts(&page), Vec::<String>::new());
    let page = search(&env, json!({"query": "zebra", "until": "2000-01-01"})).await?;
    assert_eq!(texts(&page), Vec::<String>::new());
    let page = search(
        &env,
        json!({"query": "zebra", "since": "2000-01-01T00:00:00+05:00",
        "until": "2999-01-01T00:00:00"}),
    )
    .await?;
    assert_eq!(texts(&page).len(), 6);
    // An empty substring matches every message: the server buffer's rows too.
    let page = search(&env, json!({"query": "", "limit": 500})).await?;
    assert!(texts(&page).len() > 6);

    // Errors, with the contract's exact words.
    let cases = [
        (json!({}), "invalid arguments: missing query"),
        (
            json!({"query": 1}),
            "invalid arguments: query must be a string",
        ),
        (
            json!({"query": "x", "match": "fuzzy"}),
            "invalid arguments: match must be substring, glob or regex",
        ),
        (
            json!({"query": "x", "kinds": ["privmsg", "hug\"s"]}),
            "invalid arguments: unknown kind: \"hug\\\"s\"",
        ),
        (
            json!({"query": "x", "since": "tuesday"}),
            "invalid arguments: since is not an ISO-8601 time",
        ),
        (
            json!({"query": "x", "until": "2026-02-30"}),
            "invalid arguments: until is not an ISO-8601 time",
        ),
        (
            json!({"query": "x", "sessions": "S"}),
            "invalid arguments: sessions must be an array of strings",
        ),
        (
            json!({"query": "x", "extra": null}),
            "invalid arguments: unknown argument \"extra\"",
        ),
        (
            json!({"query": "a".repeat(257), "match": "regex"}),
            "regex rejected: pattern too long",
        ),
        (
            json!({"query": "(unclosed", "match": "regex"}),
            "regex rejected: invalid pattern",
        ),
        (
            json!({"query": "x", "sessions": ["not-a-uuid"]}),
            "unknown session",
        ),
        (
            json!({"query": "x", "sessions": ["00000000-0000-4000-8000-000000000000"]}),
            "unknown session",
        ),
        (
            json!({"query": "x", "buffers": ["00000000-0000-4000-8000-000000000000"]}),
            "unknown buffer",
        ),
        (json!({"query": "x", "cursor": "AAAA"}), "invalid cursor"),
    ];
    for (a, want) in cases {
        assert_eq!(
            error(call(&env, "search_messages", a.clone()).await)?,
            want,
            "{a}"
        );
    }
    // A long substring is fine: only regexes have a cap.
    let page = search(&env, json!({"query": "z".repeat(300)})).await?;
    assert_eq!(texts(&page), Vec::<String>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_coverage_and_counts() -> Result<()> {
    let mut env = setup().await?;
    let lines: Vec<String> = (0..9)
        .map(|i| {
            if i == 4 {
                "the needle".to_owned()
            } else {
                format!("hay {i}")
            }
        })
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    say_all(&mut env, Who::Alice, "#one", &refs).await?;
    say_all(&mut env, Who::Alice, "#three", &["another needle"]).await?;

    let page = search(&env, json!({"query": "needle", "context": 2})).await?;
    assert_eq!(texts(&page), ["the needle", "another needle"]);
    let around: Vec<&str> = page["matches"][0]["context"]
        .as_array()
        .context("context")?
        .iter()
        .filter_map(|m| m["payload"]["text"].as_str())
        .collect();
    assert_eq!(
        around,
        ["hay 2", "hay 3", "hay 5", "hay 6"],
        "display order, oldest first"
    );
    // The match in #three has our own join etc. before it, and nothing after.
    let after: Vec<&Value> = page["matches"][1]["context"]
        .as_array()
        .context("context")?
        .iter()
        .collect();
    assert!(after.len() <= 2 && !after.is_empty());
    // context is clamped to 10.
    let wide = search(&env, json!({"query": "the needle", "context": 1e6})).await?;
    let n = wide["matches"][0]["context"].as_array().map_or(0, Vec::len);
    assert!((9..=18).contains(&n), "{n}");

    // Coverage: every buffer examined, in search order, with the span examined.
    let coverage = page["coverage"].as_array().context("coverage")?;
    let covered: Vec<&str> = coverage
        .iter()
        .filter_map(|c| c["buffer"].as_str())
        .collect();
    let server = env
        .session
        .reader()
        .read(|v| v.server_buffer().as_str().to_owned())
        .await?;
    let mut listing = vec![server.clone()];
    listing.extend(channels(&env).await?.into_iter().map(|(id, _)| id));
    assert_eq!(covered, listing);
    assert_eq!(listing.len(), 4);
    for c in coverage {
        let (old, new) = (c["oldest"].as_str(), c["newest"].as_str());
        assert!(old.is_some() && new.is_some() && old <= new, "{c}");
        assert!(c.get("window_truncated").is_none());
    }
    assert!(page.get("coverage_truncated").is_none());

    // count_only: every searched buffer, 0 included; no matches, never a cursor.
    let counts = search(
        &env,
        json!({"query": "needle", "count_only": true, "limit": 1,
        "cursor": "ignored because count_only"}),
    )
    .await?;
    assert_eq!(
        counts["counts"],
        json!({server.as_str(): 0, env.one.as_str(): 1, env.two.as_str(): 0, env.three.as_str(): 1})
    );
    assert!(counts.get("matches").is_none());
    assert!(counts.get("next_cursor").is_none());
    assert_eq!(counts["truncated"], json!(false));
    let hay = search(
        &env,
        json!({"query": "hay", "count_only": true, "buffers": ids(&[&env.one])}),
    )
    .await?;
    assert_eq!(hay["counts"], json!({env.one.as_str(): 8}));
    Ok(())
}

/// Walks every page of a search, returning each page.
async fn all_pages(env: &Env, base: Value, limits: Option<search::Limits>) -> Result<Vec<Value>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let mut a = base.clone();
        if let Some(c) = &cursor {
            a["cursor"] = json!(c);
        }
        let outcome = match limits {
            Some(l) => search::search_messages_with(&env.ctx, &args(a), l).await,
            None => call(env, "search_messages", a).await,
        };
        let page = match outcome {
            ToolOutcome::Ok(v) | ToolOutcome::Stopped(v) => v,
            other => bail!("page {}: {other:?}", pages.len()),
        };
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        assert_eq!(page["truncated"], json!(cursor.is_some()), "{page}");
        pages.push(page);
        if cursor.is_none() {
            return Ok(pages);
        }
    }
    bail!("no end after 200 pages")
}

fn all_texts(pages: &[Value]) -> Vec<String> {
    pages.iter().flat_map(texts).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_with_cursors_and_cursor_misuse() -> Result<()> {
    let mut env = setup().await?;
    let one: Vec<String> = (0..7).map(|i| format!("apple {i}")).collect();
    let two: Vec<String> = (0..6).map(|i| format!("apple pie {i}")).collect();
    say_all(
        &mut env,
        Who::Alice,
        "#one",
        &one.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await?;
    say_all(
        &mut env,
        Who::Alice,
        "#two",
        &two.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await?;

    let whole = search(&env, json!({"query": "apple", "limit": 500})).await?;
    assert_eq!(texts(&whole).len(), 13);
    let pages = all_pages(&env, json!({"query": "apple", "limit": 4}), None).await?;
    assert_eq!(pages.len(), 4);
    assert_eq!(
        all_texts(&pages),
        texts(&whole),
        "pages cover each match once, in order"
    );
    // A page that ends exactly at the last match says so without a cursor.
    let pages = all_pages(&env, json!({"query": "apple pie", "limit": 3}), None).await?;
    assert_eq!(pages.len(), 2);

    // limit may change between pages; the rest may not, except list order and from's case.
    let first = search(
        &env,
        json!({"query": "apple", "limit": 2, "kinds": ["privmsg", "notice"],
        "from": "Alice", "buffers": ids(&[&env.one, &env.two])}),
    )
    .await?;
    let cursor = first["next_cursor"].as_str().context("cursor")?.to_owned();
    let next = search(
        &env,
        json!({"query": "apple", "limit": 3, "kinds": ["notice", "privmsg"],
        "from": "ALICE", "buffers": ids(&[&env.two, &env.one]), "cursor": cursor}),
    )
    .await?;
    assert_eq!(texts(&next), ["apple 4", "apple 3", "apple 2"]);
    let misuse = [
        json!({"query": "Apple", "kinds": ["notice", "privmsg"], "from": "alice", "buffers": ids(&[&env.one, &env.two])}),
        json!({"query": "apple", "kinds": ["privmsg"], "from": "alice", "buffers": ids(&[&env.one, &env.two])}),
        json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "bob", "buffers": ids(&[&env.one, &env.two])}),
        json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "alice", "buffers": ids(&[&env.one])}),
        json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "alice", "buffers": ids(&[&env.one, &env.two]), "context": 1}),
        json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "alice", "buffers": ids(&[&env.one, &env.two]), "match": "glob"}),
        json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "alice", "buffers": ids(&[&env.one, &env.two]), "since": "2000-01-01"}),
    ];
    for mut a in misuse {
        a["cursor"] = json!(cursor);
        assert_eq!(
            error(call(&env, "search_messages", a.clone()).await)?,
            "invalid cursor",
            "{a}"
        );
    }
    let mut tampered = cursor.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered)?;
    for bad in [tampered, "x".repeat(600), String::new()] {
        let a = json!({"query": "apple", "kinds": ["notice", "privmsg"], "from": "alice",
            "buffers": ids(&[&env.one, &env.two]), "cursor": bad});
        assert_eq!(
            error(call(&env, "search_messages", a).await)?,
            "invalid cursor"
        );
    }
    // A find_user cursor is not a search cursor.
    let users = ok(find_user::find_user_with(
        &env.ctx,
        &args(json!({"nick": "alice"})),
        find_user::Limits {
            time_budget: Duration::ZERO,
            ..find_user::Limits::default()
        },
    )
    .await
    .clone_ok())?;
    let foreign = users["next_cursor"].as_str().context("find_user cursor")?;
    assert_eq!(
        error(
            call(
                &env,
                "search_messages",
                json!({"query": "apple", "cursor": foreign})
            )
            .await
        )?,
        "invalid cursor"
    );
    Ok(())
}

/// Stopped results carry the partial JSON; for a test that only wants the JSON.
trait CloneOk {
    fn clone_ok(self) -> ToolOutcome;
}

impl CloneOk for ToolOutcome {
    fn clone_ok(self) -> ToolOutcome {
        match self {
            ToolOutcome::Stopped(v) => ToolOutcome::Ok(v),
            other => other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_bound_pages_by_buffer_without_stopping() -> Result<()> {
    let mut env = setup().await?;
    let one: Vec<String> = (0..6).map(|i| format!("kiwi one {i}")).collect();
    let two: Vec<String> = (0..3).map(|i| format!("kiwi two {i}")).collect();
    say_all(
        &mut env,
        Who::Alice,
        "#one",
        &one.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await?;
    say_all(
        &mut env,
        Who::Alice,
        "#two",
        &two.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await?;
    say_all(&mut env, Who::Alice, "#three", &["kiwi three"]).await?;

    // A bound of 4 rows: #one (6 kiwis and more rows) is cut to its newest 4 rows.
    let limits = search::Limits {
        copy_bound: 4,
        ..search::Limits::default()
    };
    let base = json!({"query": "kiwi", "buffers": ids(&[&env.one, &env.two, &env.three])});
    let first = search::search_messages_with(&env.ctx, &args(base.clone()), limits).await;
    let first = ok(first)?;
    assert_eq!(
        texts(&first),
        ["kiwi one 5", "kiwi one 4", "kiwi one 3", "kiwi one 2"]
    );
    assert_eq!(first["truncated"], json!(true));
    assert!(
        first.get("stopped").is_none(),
        "the bound pages; it does not stop"
    );
    assert_eq!(first["window_truncated"], json!(true));
    assert_eq!(first["coverage"][0]["window_truncated"], json!(true));
    assert_eq!(first["coverage"].as_array().map(Vec::len), Some(1));

    let pages = all_pages(&env, base.clone(), Some(limits)).await?;
    let got = all_texts(&pages);
    // Every buffer is reached; the older messages of a cut buffer are skipped for this walk.
    assert!(got.contains(&"kiwi three".to_owned()), "{got:?}");
    assert!(got.contains(&"kiwi two 2".to_owned()), "{got:?}");
    let mut dedup = got.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), got.len(), "no match twice: {got:?}");
    assert!(pages.len() >= 2);
    assert!(!got.contains(&"kiwi one 0".to_owned()), "{got:?}");
    for p in &pages {
        assert!(p.get("stopped").is_none());
    }
    // count_only cut by the bound: truncated, counts for the copied buffers only, no cursor.
    let mut counting = base.clone();
    counting["count_only"] = json!(true);
    let counts = ok(search::search_messages_with(&env.ctx, &args(counting), limits).await)?;
    assert_eq!(counts["counts"], json!({env.one.as_str(): 4}));
    assert_eq!(counts["truncated"], json!(true));
    assert!(counts.get("next_cursor").is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_out_of_time_is_a_tool_error_with_a_cursor_that_moves() -> Result<()> {
    let mut env = setup().await?;
    let lines: Vec<String> = (0..5)
        .map(|i| format!("plum {i} {}", "x".repeat(300)))
        .collect();
    say_all(
        &mut env,
        Who::Alice,
        "#one",
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await?;

    // A zero time budget: each call examines exactly one message, then stops.
    let limits = search::Limits {
        time_budget: Duration::ZERO,
        ..search::Limits::default()
    };
    let base =
        json!({"query": "(?i)p(l|x)*u(m|x)+ \\d", "match": "regex", "buffers": ids(&[&env.one])});
    let outcome = search::search_messages_with(&env.ctx, &args(base.clone()), limits).await;
    let partial = match outcome {
        ToolOutcome::Stopped(v) => v,
        other => bail!("expected stopped, got {other:?}"),
    };
    assert_eq!(
        partial["stopped"],
        json!("search stopped: time budget exceeded")
    );
    assert_eq!(partial["truncated"], json!(true));
    assert!(partial["next_cursor"].is_string());
    assert_eq!(texts(&partial), ["plum 4 ".to_owned() + &"x".repeat(300)]);

    let pages = all_pages(&env, base.clone(), Some(limits)).await?;
    let whole = search(&env, base).await?;
    assert_eq!(all_texts(&pages), texts(&whole));
    assert_eq!(texts(&whole).len(), 5);
    let rows_in_one = env
        .session
        .reader()
        .read({
            let id = env.one.clone();
            move |v| v.buffer(&id).map_or(0, |b| b.len())
        })
        .await?;
    // One message per call, and the last call completes the walk.
    assert_eq!(pages.len(), rows_in_one);
    Ok(())
}

fn appearances(v: &Value) -> Vec<(String, String, Option<String>)> {
    v["appearances"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| {
                    (
                        x["channel"].as_str().unwrap_or("").to_owned(),
                        x["modes"].as_str().unwrap_or("").to_owned(),
                        x["last_spoke"].as_str().map(str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_user_by_nick_and_mask_with_last_spoke_and_paging() -> Result<()> {
    let mut env = setup().await?;
    say_all(&mut env, Who::Alice, "#two", &["alice speaks in two"]).await?;
    say_all(&mut env, Who::Bob, "#one", &["bob speaks in one"]).await?;

    let found = ok(call(&env, "find_user", json!({"nick": "ALICE"})).await)?;
    assert_eq!(found["untrusted"], json!(true));
    assert!(found.get("truncated").is_none());
    let got = appearances(&found);
    assert_eq!(got.len(), 3, "{found}");
    let listing: Vec<String> = channels(&env).await?.into_iter().map(|(_, n)| n).collect();
    assert_eq!(
        got.iter().map(|a| a.0.clone()).collect::<Vec<_>>(),
        listing,
        "channels in listing order"
    );
    assert!(
        got.iter().all(|a| a.1 == "o"),
        "alice made the channels: {got:?}"
    );
    for (channel, _, last_spoke) in &got {
        assert_eq!(
            last_spoke.is_some(),
            channel == "#two",
            "alice spoke only in #two"
        );
    }
    let a0 = &found["appearances"][0];
    assert_eq!(a0["session"], json!(env.session.id().as_str()));
    assert_eq!(a0["buffer"], json!(env.one.as_str()));
    assert_eq!(a0["away"], json!(false));

    let bob = ok(call(&env, "find_user", json!({"nick": "bob"})).await)?;
    let got = appearances(&bob);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "#one");
    assert!(got[0].2.is_some());

    // A mask over nick!user@host, ignoring case: the bots' user is their nick.
    let masked = ok(call(&env, "find_user", json!({"mask": "B*!*@*"})).await)?;
    assert_eq!(appearances(&masked).len(), 1);
    let everyone = ok(call(&env, "find_user", json!({"mask": "*"})).await)?;
    // #one: alice, bob, us; #two and #three: alice, us.
    assert_eq!(appearances(&everyone).len(), 7);
    let nobody = ok(call(&env, "find_user", json!({"nick": "carol"})).await)?;
    assert_eq!(nobody["appearances"], json!([]));

    for a in [
        json!({}),
        json!({"nick": "", "mask": ""}),
        json!({"nick": "a", "mask": "b"}),
        json!({"nick": null}),
    ] {
        assert_eq!(
            error(call(&env, "find_user", a.clone()).await)?,
            "invalid arguments: give nick or mask",
            "{a}"
        );
    }
    assert_eq!(
        error(call(&env, "find_user", json!({"nick": "alice", "mask": ""})).await).ok(),
        None,
        "an empty mask counts as absent"
    );

    // Paging by time: a zero budget stops after the first channel each call.
    let limits = find_user::Limits {
        time_budget: Duration::ZERO,
        ..find_user::Limits::default()
    };
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut calls = 0;
    loop {
        calls += 1;
        let mut a = json!({"nick": if calls % 2 == 0 { "Alice" } else { "alice" }});
        if let Some(c) = &cursor {
            a["cursor"] = json!(c);
        }
        let outcome = find_user::find_user_with(&env.ctx, &args(a), limits).await;
        let page = match outcome {
            ToolOutcome::Stopped(v) => {
                assert_eq!(v["stopped"], json!("search stopped: time budget exceeded"));
                assert_eq!(v["truncated"], json!(true));
                v
            }
            ToolOutcome::Ok(v) => v,
            other => bail!("{other:?}"),
        };
        walked.extend(appearances(&page));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() || calls > 10 {
            break;
        }
    }
    assert_eq!(walked, appearances(&found), "each channel once, in order");
    assert_eq!(calls, 3);

    // Paging by the copy bound: one channel per copy, a bound of one row.
    let limits = find_user::Limits {
        copy_bound: 1,
        batch: 1,
        ..find_user::Limits::default()
    };
    let first = find_user::find_user_with(&env.ctx, &args(json!({"nick": "alice"})), limits).await;
    let first = ok(first)?;
    assert_eq!(appearances(&first).len(), 1);
    assert_eq!(first["truncated"], json!(true));
    assert!(first.get("stopped").is_none());
    let cursor = first["next_cursor"].as_str().context("cursor")?.to_owned();

    // Cursor misuse.
    assert_eq!(
        error(call(&env, "find_user", json!({"nick": "bob", "cursor": cursor})).await)?,
        "invalid cursor"
    );
    assert_eq!(
        error(
            call(
                &env,
                "find_user",
                json!({"mask": "alice", "cursor": cursor})
            )
            .await
        )?,
        "invalid cursor"
    );
    assert_eq!(
        error(
            call(
                &env,
                "find_user",
                json!({"nick": "alice", "cursor": "junk"})
            )
            .await
        )?,
        "invalid cursor"
    );
    let rest = ok(call(
        &env,
        "find_user",
        json!({"nick": "ALICE", "cursor": cursor}),
    )
    .await)?;
    assert_eq!(appearances(&rest), appearances(&found)[1..].to_vec());

    // The byte budget cuts without a cursor.
    let tiny = find_user::Limits {
        byte_budget: 420,
        ..find_user::Limits::default()
    };
    let cut = ok(find_user::find_user_with(&env.ctx, &args(json!({"mask": "*"})), tiny).await)?;
    assert_eq!(cut["truncated"], json!(true));
    assert!(cut.get("next_cursor").is_none());
    assert!(appearances(&cut).len() < 7);
    assert!(serde_json::to_string(&cut)?.len() <= 420);

    Ok(())
}
