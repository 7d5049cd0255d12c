//! Live updates without the HTTP server: a registry of the host's own, and the update tools called in
//! process. Two sessions join a channel; one subscribes to it, the other talks, and the first's
//! wait_for_updates answers with what was said.
//!
//! `cargo run --example live_updates -- 127.0.0.1:6667 '#rete'`
use rete_actors::{ReadOnlySessions, Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::debug::Capture;
use rete_mcp::tools::{Args, Settings, ToolBox, ToolContext, ToolOutcome};
use rete_mcp::updates::{SystemClock, Updates};
use rete_transports::{Backoff, ConnectConfig, Transport};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How many times the talker speaks before the example gives up.
const TRIES: usize = 10;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:6667".into());
    let channel = args.next().unwrap_or_else(|| "#rete".into());
    let (host, port) = server.rsplit_once(':').ok_or("the server is HOST:PORT")?;
    let port: u16 = port.parse()?;

    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let watcher = rete
        .add_session(spec(1, "watcher", host, port, &channel)?)
        .await?;
    let talker = rete
        .add_session(spec(2, "talker", host, port, &channel)?)
        .await?;
    let mut events = rete.subscribe();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(joined(&watcher, &channel).await && joined(&talker, &channel).await) {
            events.recv().await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await??;

    // The registry reads the sessions through a read-only capability, as the tools do.
    let sessions = ReadOnlySessions::new(rete.clone());
    let updates = Updates::start(sessions.clone(), Arc::new(SystemClock)).await?;
    let ctx = ToolContext {
        reach: rete_mcp::tools::Reach::everything(),
        principal: rete_mcp::tools::Principal::Full,
        sessions,
        send: None, // no send_raw: this context can only read
        cancel: CancellationToken::new(),
        settings: Settings::default(),
        access_log: Arc::new(AccessLog::new()),
        updates: updates.clone(),
        capture: Capture::off(),
    };
    let subscribed = call(
        &ctx,
        "subscribe",
        json!({"sessions": [watcher.id().as_str()]}),
    )
    .await?;
    let sub = subscribed["subscription"]["id"]
        .as_str()
        .ok_or("no subscription id")?
        .to_owned();
    println!("subscribed: {sub}");

    // A line said before the registry fixed the subscription's starting point counts as history,
    // so the talker says one line per wait until one arrives as an update.
    let mut heard = None;
    for n in 1..=TRIES {
        let text = format!("hello {n}");
        let (to, line) = (channel.clone(), text.clone());
        talker
            .sender()
            .command(move |c| c.privmsg(&to, &line))
            .await?;
        let answer = call(
            &ctx,
            "wait_for_updates",
            json!({"id": sub, "detail": "full", "timeout": 2}),
        )
        .await?;
        if said(&answer).any(|t| t == text) {
            heard = Some(text);
            break;
        }
    }
    let text = heard.ok_or("no update arrived")?;
    println!("update: talker said {text:?}");
    updates.stop();
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// Calls tool `name` in process and returns its result.
async fn call(
    ctx: &ToolContext,
    name: &str,
    args: Value,
) -> Result<Value, Box<dyn std::error::Error>> {
    let args = Args::from_request(Some(&args)).map_err(|_| format!("{name}: not an object"))?;
    match ToolBox::new().call(name, ctx, &args).await {
        ToolOutcome::Ok(v) => Ok(v),
        other => Err(format!("{name} failed: {other:?}").into()),
    }
}

/// The texts of the messages in a full wait_for_updates answer.
fn said(answer: &Value) -> impl Iterator<Item = &str> {
    let entries = answer["updates"].as_array().into_iter().flatten();
    let events = entries.flat_map(|e| e["events"].as_array().into_iter().flatten());
    events.filter_map(|e| e["message"]["payload"]["text"].as_str())
}

/// Session `n`, nick `nick`, joining `channel`.
fn spec(
    n: u8,
    nick: &str,
    host: &str,
    port: u16,
    channel: &str,
) -> Result<SessionSpec, Box<dyn std::error::Error>> {
    let id = SessionId::parse(&format!("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4b{n:02}"))?;
    let mut config = SessionConfig::new(id, nick, nick);
    config.channels = vec![ChannelSpec {
        name: channel.into(),
        key: None,
    }];
    Ok(SessionSpec {
        config,
        transport: Transport::Irc(ConnectConfig {
            host: host.into(),
            port,
            tls: false,
            tls_fingerprint: None,
            client_cert: None,
            connect_timeout: Duration::from_secs(15),
        }),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
    })
}

/// True once `session` is in `channel`.
async fn joined(session: &SessionHandle, channel: &str) -> bool {
    let channel = channel.to_owned();
    let read = session
        .reader()
        .read(move |view| {
            view.find_buffer(BufferKind::Channel, &channel)
                .and_then(|id| view.channel(id))
                .is_some_and(|c| c.joined)
        })
        .await;
    matches!(read, Ok(true))
}
