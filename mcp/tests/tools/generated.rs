//! Generated calls to all seventeen tools, against a real InspIRCd: arguments built from
//! each tool's own declaration (`rete_mcp::tools::TOOLS`), then mutated — wrong types,
//! huge and fractional numbers, deep nesting, long and odd strings, `null`s, unknown keys.
//! Every answer must be a result within the 60,000-byte budget or one of the contract's
//! error strings: never `internal error`, never a panic, never an answer the contract does
//! not name.
//!
//! One engine serves every case: a session in a channel with a bot that talks there and
//! to us, a second session that never connects, the debug capture on and sending on. A
//! raw-out hook vetoes any agent line that could end the session (QUIT, and the like), so
//! generated send_raw lines reach the wire only when harmless; the rest are answered as a
//! veto. Ids, cursors and message ids that answers carry are collected as the run goes,
//! so later cases name real things and go deep into the tools.
//!
//! `PROPTEST_CASES` sets the number of calls (256 by default here; the long run in the
//! README uses 20,000).
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::Result;
use fancy_regex::Regex;
use proptest::prelude::*;
use rete_actors::{RawOutHook, Rete, ReteOptions, Verdict};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use rete_engine::flood::FloodConfig;
use rete_engine::ids::SessionId;
use rete_engine::session::ChannelSpec;
use rete_mcp::access_log::AccessLog;
use rete_mcp::send::{limiter, Sending};
use rete_mcp::tools::args::Args;
use rete_mcp::tools::result::{encode, BUDGET};
use rete_mcp::tools::spec::{ArgSpec, Shape};
use rete_mcp::tools::{Settings, ToolBox, ToolContext, ToolOutcome, TOOLS};
use serde_json::{json, Map, Number, Value};
use support::debug_tools;
use support::live_tests_session::{eventually, plain, session_config, spec};
use support::{Bot, BotConfig, Inspircd, InspircdConfig};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

/// How long a wait_for_updates may wait before the test gives it up (its own timeout is
/// at least a second); every other call must answer by itself.
const PATIENCE: Duration = Duration::from_millis(400);

/// Once armed (after the fixture has joined its channel), vetoes any line that could end
/// or move the session, so generated send_raw lines cannot take the shared fixture down.
/// The engine's own lines after that (PING, PONG, WHO) never match.
#[derive(Default)]
struct KeepSession {
    armed: AtomicBool,
}

impl RawOutHook for KeepSession {
    fn on_raw_out(&self, _: &SessionId, line: &str) -> Verdict {
        if !self.armed.load(Ordering::Acquire) {
            return Verdict::Allow;
        }
        let upper = line.to_ascii_uppercase();
        let risky = [
            "QUIT", "NICK", "PART", "JOIN", "KICK", "KILL", "SQUIT", "DIE", "RESTART",
        ];
        if risky.iter().any(|w| upper.contains(w)) {
            Verdict::Veto
        } else {
            Verdict::Allow
        }
    }
}

/// Strings worth naming, by what they name: the sessions' and buffers' ids, and the
/// cursors, message ids and subscription ids answers carried.
#[derive(Clone, Debug, Default)]
struct Pool {
    sessions: Vec<String>,
    buffers: Vec<String>,
    cursors: Vec<String>,
    msgids: Vec<String>,
    subscriptions: Vec<String>,
}

/// The most of each kind a pool keeps.
const POOL_MOST: usize = 48;

impl Pool {
    /// The strings an argument called `name` (or an entry of it) names.
    fn for_name(&self, name: &str) -> &[String] {
        let kind = match name {
            "session" | "sessions" => &self.sessions,
            "buffer" | "buffers" => &self.buffers,
            "cursor" | "before" => &self.cursors,
            "around" => &self.msgids,
            "id" => &self.subscriptions,
            _ => &self.buffers,
        };
        if kind.is_empty() {
            &self.sessions
        } else {
            kind
        }
    }

    fn add(list: &mut Vec<String>, s: &str) {
        if list.len() < POOL_MOST && !list.iter().any(|p| p == s) {
            list.push(s.to_owned());
        }
    }

    /// Adds every cursor, message id and subscription id an answer carries.
    fn harvest(&mut self, v: &Value) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    match (k.as_str(), x.as_str()) {
                        ("cursor" | "next_cursor", Some(s)) => Pool::add(&mut self.cursors, s),
                        ("msgid", Some(s)) => Pool::add(&mut self.msgids, s),
                        ("id", Some(s)) if s.starts_with("sub_") => {
                            Pool::add(&mut self.subscriptions, s)
                        }
                        _ => self.harvest(x),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| self.harvest(x)),
            _ => {}
        }
    }
}

/// What every case shares: the runtime, the server, the bot, the context, and the strings
/// worth naming collected from answers.
struct Shared {
    runtime: tokio::runtime::Runtime,
    ctx: ToolContext,
    pool: Mutex<Pool>,
    _ircd: Inspircd,
    _bot: Mutex<Bot>,
    _rete: Arc<Rete>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let built = runtime.block_on(build()).expect("the fixture starts");
        let (ircd, bot, rete, ctx, pool) = built;
        Shared {
            runtime,
            ctx,
            pool: Mutex::new(pool),
            _ircd: ircd,
            _bot: Mutex::new(bot),
            _rete: rete,
        }
    })
}

type Built = (Inspircd, Bot, Arc<Rete>, ToolContext, Pool);

async fn build() -> Result<Built> {
    let ircd = Inspircd::start(InspircdConfig::new()).await?;
    let port = ircd.port();
    let keep = Arc::new(KeepSession::default());
    let rete = Arc::new(
        Rete::start(ReteOptions {
            raw_out_hook: Some(keep.clone()),
        })
        .await?,
    );
    let capture = debug_tools::capture(&rete, true).await?;

    let mut config = session_config("gen");
    // No pacing, so a generated send_raw is answered at once (the caps still hold).
    config.flood = FloodConfig {
        burst: 5,
        interval_ms: 0,
    };
    config.channels = vec![ChannelSpec {
        name: "#gen".into(),
        key: None,
    }];
    let session = rete.add_session(spec(config, plain(port))).await?;
    // A session that never connects: its reads answer, its sends are refused.
    let mut down = spec(session_config("gendown"), plain(port));
    down.autoconnect = false;
    let down = rete.add_session(down).await?;

    let reader = session.reader();
    eventually("the channel joined", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let joined = v.find_buffer(BufferKind::Channel, "#gen").is_some();
                    (v.state() == ConnState::Connected && joined).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;
    let mut bot = Bot::connect_with(BotConfig::new(port, "genbot")).await?;
    bot.join("#gen").await?;
    for i in 0..30 {
        bot.privmsg("#gen", &format!("line {i} gen https://example.org/{i}"))
            .await?;
        bot.privmsg("gen", &format!("query {i}")).await?;
    }
    eventually("the bot's lines", WAIT, || {
        let reader = reader.clone();
        async move {
            reader
                .read(|v| {
                    let channel = v.find_buffer(BufferKind::Channel, "#gen")?;
                    (v.buffer(channel)?.since(0).count() >= 30).then_some(())
                })
                .await
                .ok()
                .flatten()
        }
    })
    .await?;

    keep.armed.store(true, Ordering::Release);
    let updates = debug_tools::updates(&rete, &capture).await?;
    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions: rete_actors::ReadOnlySessions::new(rete.clone()),
        send: Some(Sending {
            sessions: rete_actors::SendingSessions::new(rete.clone()),
            limiter: limiter::start().await.map_err(anyhow::Error::msg)?,
            approval: None,
        }),
        cancel: CancellationToken::new(),
        settings: Settings {
            debug: true,
            send: true,
        },
        access_log: Arc::new(AccessLog::new()),
        updates,
        capture,
    };
    let mut pool = Pool {
        sessions: vec![
            session.id().as_str().to_owned(),
            down.id().as_str().to_owned(),
            session.id().as_str().to_lowercase(),
        ],
        ..Pool::default()
    };
    pool.buffers = session
        .reader()
        .read(|v| {
            v.buffers()
                .map(|b| b.id().as_str().to_owned())
                .collect::<Vec<_>>()
        })
        .await?;
    Ok((ircd, bot, rete, ctx, pool))
}

/// The contract's tool errors: exact texts, and the shapes `invalid arguments: …` and
/// `unknown section: …` take.
fn contract_error(text: &str) -> bool {
    const EXACT: &[&str] = &[
        "debug tools are disabled",
        "sending is disabled",
        "unknown tool",
        "unknown session",
        "unknown buffer",
        "unknown subscription",
        "invalid cursor",
        "invalid direction: expected \"in\" or \"out\"",
        "session not connected",
        "line not sent: a script blocked it or the connection could not take it",
        "too many sends: at most 30 per minute on a session",
        "too many sends: at most 5 at once",
        "too many subscriptions: unsubscribe one first (limit 16)",
        "too many waiting calls: at most 2 wait_for_updates may run at once",
        "regex rejected: invalid pattern",
        "regex rejected: pattern too long",
    ];
    static SHAPES: OnceLock<Vec<Regex>> = OnceLock::new();
    let shapes = SHAPES.get_or_init(|| {
        [
            r#"^unknown section: ".*"$"#,
            r#"^invalid arguments: missing [a-z_.]+$"#,
            r#"^invalid arguments: [a-z_.]+ must be (a string|an integer|a boolean|an array of strings|an object)$"#,
            r#"^invalid arguments: unknown argument ".*"$"#,
            r#"^invalid arguments: [a-z_.]+ has more than 50 entries$"#,
            r#"^invalid arguments: [a-z_.]+ entry is longer than \d+ bytes$"#,
            r#"^invalid arguments: match is longer than 256 bytes$"#,
            r#"^invalid arguments: match must be substring, glob or regex$"#,
            r#"^invalid arguments: match_mode must be substring or glob$"#,
            r#"^invalid arguments: detail must be digest or full$"#,
            r#"^invalid arguments: give nick or mask$"#,
            r#"^invalid arguments: a subscription needs at least one filter$"#,
            r#"^invalid arguments: (since|until) is not an ISO-8601 time$"#,
            r#"^invalid arguments: unknown (kind|level|category): ".*"$"#,
            r#"^invalid arguments: line contains a line break or NUL$"#,
            r#"^invalid arguments: line is empty$"#,
            r#"^invalid arguments: line is longer than 510 bytes$"#,
            r#"^invalid arguments: message tags are longer than 4094 bytes$"#,
            r#"^invalid arguments: message tags are not followed by a message$"#,
            r#"^invalid arguments: message tags need the message-tags capability$"#,
        ]
        .iter()
        .map(|r| Regex::new(r).unwrap())
        .collect()
    });
    EXACT.contains(&text) || shapes.iter().any(|r| r.is_match(text).unwrap_or(false))
}

/// A value for one argument: mostly of its declared type (names taken from the pool),
/// sometimes anything at all.
#[derive(Clone, Debug)]
enum Gen {
    /// A string: an index into the pool, or a made-up one.
    Pooled(usize),
    Text(String),
    Int(i64),
    /// A number whose JSON text matters (fractions, exponents, beyond i64 and f64).
    Numeral(&'static str),
    Bool(bool),
    Texts(Vec<Gen>),
    Null,
    /// An array nested this deep.
    Deep(usize),
    /// An object with these keys.
    Object(Vec<(String, Gen)>),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_owned()),
        "[a-z_]{1,12}",
        "\\PC{0,40}",
        Just("x".repeat(5_000)),
        Just("privmsg".to_owned()),
        Just("digest".to_owned()),
        Just("full".to_owned()),
        Just("regex".to_owned()),
        Just("glob".to_owned()),
        Just("in".to_owned()),
        Just("out".to_owned()),
        Just("warning".to_owned()),
        Just("network".to_owned()),
        Just("connection".to_owned()),
        Just("*".to_owned()),
        Just("(a)\\1".to_owned()),
        Just("((a{100}){100}){100}".to_owned()),
        Just("2026-01-01T00:00:00Z".to_owned()),
        Just("PING :gen".to_owned()),
        Just("@a=b PRIVMSG #gen :tagged".to_owned()),
        Just("PRIVMSG #gen :hello\r\nQUIT".to_owned()),
        Just("PASS :secret".to_owned()),
    ]
}

fn scalar() -> impl Strategy<Value = Gen> {
    prop_oneof![
        4 => (0..64usize).prop_map(Gen::Pooled),
        4 => text().prop_map(Gen::Text),
        2 => any::<i64>().prop_map(Gen::Int),
        2 => (-3i64..600).prop_map(Gen::Int),
        1 => prop_oneof![
            Just("2.5"), Just("1e3"), Just("1E+400"), Just("-1e400"), Just("50.0"),
            Just("123456789012345678901234567890"), Just("-0"), Just("1e-400"),
        ]
        .prop_map(Gen::Numeral),
        1 => any::<bool>().prop_map(Gen::Bool),
        1 => Just(Gen::Null),
        1 => (1..200usize).prop_map(Gen::Deep),
    ]
}

fn any_gen() -> impl Strategy<Value = Gen> {
    scalar().prop_recursive(2, 16, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Gen::Texts),
            prop::collection::vec(("[a-z_.]{1,10}", inner), 0..4).prop_map(Gen::Object),
        ]
    })
}

/// A value shaped for `arg`, most of the time.
fn for_arg(arg: &ArgSpec) -> BoxedStrategy<Gen> {
    let typed: BoxedStrategy<Gen> = match arg.shape {
        Shape::Text(_) => prop_oneof![
            3 => (0..64usize).prop_map(Gen::Pooled),
            2 => text().prop_map(Gen::Text)
        ]
        .boxed(),
        Shape::Integer(_) => prop_oneof![
            3 => (-3i64..3000).prop_map(Gen::Int),
            1 => any::<i64>().prop_map(Gen::Int),
        ]
        .boxed(),
        Shape::Flag(_) => any::<bool>().prop_map(Gen::Bool).boxed(),
        Shape::Texts => prop_oneof![
            4 => prop::collection::vec(
                prop_oneof![
                    3 => (0..64usize).prop_map(Gen::Pooled),
                    1 => text().prop_map(Gen::Text)
                ],
                0..4,
            ),
            1 => prop::collection::vec(text().prop_map(Gen::Text), 45..60),
        ]
        .prop_map(Gen::Texts)
        .boxed(),
        Shape::Object(props) => {
            let fields: Vec<BoxedStrategy<(String, Gen)>> = props
                .iter()
                .map(|p| {
                    let name = p.name.to_owned();
                    for_arg(p).prop_map(move |g| (name.clone(), g)).boxed()
                })
                .collect();
            prop::sample::subsequence(fields, 0..=props.len())
                .prop_flat_map(|chosen| chosen)
                .prop_map(Gen::Object)
                .boxed()
        }
    };
    prop_oneof![9 => typed, 1 => any_gen()].boxed()
}

/// One call: a tool (by index into TOOLS, or a name off the table) and its arguments.
#[derive(Clone, Debug)]
struct Call {
    tool: usize,
    args: Vec<(String, Gen)>,
}

fn calls() -> impl Strategy<Value = Call> {
    (0..TOOLS.len() + 1).prop_flat_map(|tool| {
        let declared: Vec<ArgSpec> = TOOLS
            .get(tool)
            .map(|t| t.spec().args.to_vec())
            .unwrap_or_default();
        let field = |a: &ArgSpec| {
            let name = a.name.to_owned();
            for_arg(a).prop_map(move |g| (name.clone(), g)).boxed()
        };
        // A required argument is almost always sent, so most calls get past it.
        let required: Vec<BoxedStrategy<Option<(String, Gen)>>> = declared
            .iter()
            .filter(|a| a.required)
            .map(|a| prop::option::weighted(0.95, field(a)).boxed())
            .collect();
        let optional: Vec<BoxedStrategy<(String, Gen)>> =
            declared.iter().filter(|a| !a.required).map(field).collect();
        let n = optional.len();
        let optional = prop::sample::subsequence(optional, 0..=n).prop_flat_map(|c| c);
        let unknown = prop::collection::vec(("[a-z_]{1,8}", any_gen()), 0..2);
        (required, optional, prop::bool::weighted(0.05), unknown).prop_map(
            move |(required, optional, odd, extra)| {
                let mut args: Vec<(String, Gen)> = required.into_iter().flatten().collect();
                args.extend(optional);
                if odd {
                    args.extend(extra);
                }
                Call { tool, args }
            },
        )
    })
}

/// The JSON for `g` as the value of an argument called `name`.
fn to_value(g: &Gen, name: &str, pool: &Pool) -> Value {
    match g {
        Gen::Pooled(i) => {
            let named = pool.for_name(name);
            Value::from(named[i % named.len()].clone())
        }
        Gen::Text(s) => Value::from(s.clone()),
        Gen::Int(i) => Value::from(*i),
        Gen::Numeral(text) => Value::Number(serde_json::from_str::<Number>(text).unwrap()),
        Gen::Bool(b) => Value::Bool(*b),
        Gen::Texts(items) => Value::Array(items.iter().map(|g| to_value(g, name, pool)).collect()),
        Gen::Null => Value::Null,
        Gen::Deep(depth) => (0..*depth).fold(json!("bottom"), |inner, _| json!([inner])),
        Gen::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, g)| (k.clone(), to_value(g, k, pool)))
                .collect::<Map<String, Value>>(),
        ),
    }
}

fn check(name: &str, args: &Value, outcome: &ToolOutcome) -> Result<(), TestCaseError> {
    match outcome {
        ToolOutcome::Ok(v) | ToolOutcome::Stopped(v) => {
            let len = encode(v).len();
            prop_assert!(len <= BUDGET, "{name} {args}: {len} bytes");
        }
        ToolOutcome::Encoded(text) => {
            let len = text.len();
            prop_assert!(len <= BUDGET, "{name} {args}: {len} bytes");
        }
        ToolOutcome::Error(text) => {
            prop_assert!(
                contract_error(text),
                "{name} {args}: not a contract error: {text:?}"
            );
        }
        ToolOutcome::Cancelled => {
            // Only a wait outlasts the test's patience.
            prop_assert_eq!(name, "wait_for_updates", "{} {}: gave up", name, args);
        }
    }
    Ok(())
}

fn run(call: &Call) -> Result<(), TestCaseError> {
    let shared = shared();
    let pool = shared.pool.lock().unwrap().clone();
    let name = TOOLS.get(call.tool).map_or("rm_rf", |t| t.spec().name);
    let args = Value::Object(
        call.args
            .iter()
            .map(|(k, g)| (k.clone(), to_value(g, k, &pool)))
            .collect(),
    );
    let parsed = Args::from_request(Some(&args)).unwrap();
    let outcome = shared.runtime.block_on(async {
        let mut ctx = shared.ctx.clone();
        ctx.cancel = CancellationToken::new();
        let cancel = ctx.cancel.clone();
        let tools = ToolBox::new();
        let call = tools.call(name, &ctx, &parsed);
        tokio::pin!(call);
        let patience = if name == "wait_for_updates" {
            PATIENCE
        } else {
            WAIT
        };
        tokio::select! {
            outcome = &mut call => outcome,
            _ = tokio::time::sleep(patience) => {
                cancel.cancel();
                call.await
            }
        }
    });
    if let ToolOutcome::Ok(v) = &outcome {
        shared.pool.lock().unwrap().harvest(v);
    }
    // `GEN_STATS=1` prints what each call ended with, to see how deep the run went.
    if std::env::var_os("GEN_STATS").is_some() {
        let ended = match &outcome {
            ToolOutcome::Ok(_) | ToolOutcome::Encoded(_) => "ok".to_owned(),
            ToolOutcome::Stopped(_) => "stopped".to_owned(),
            ToolOutcome::Cancelled => "cancelled".to_owned(),
            ToolOutcome::Error(text) => text.chars().take(60).collect(),
        };
        eprintln!("GEN\t{name}\t{ended}");
    }
    check(name, &args, &outcome)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_generated_call_is_a_result_in_budget_or_a_contract_error(call in calls()) {
        run(&call)?;
    }
}

#[test]
fn every_tool_is_reached_with_its_declared_arguments() {
    // The generator draws from the spec table itself: every tool declares its arguments
    // there, so a tool added to the table is generated for without a change here.
    assert_eq!(TOOLS.len(), 17);
    for tool in TOOLS.iter() {
        let spec = tool.spec();
        let sent: Vec<&str> = spec.args.iter().map(|a| a.name).collect();
        let mut unique = sent.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            sent.len(),
            "{} declares a name twice",
            spec.name
        );
    }
}
