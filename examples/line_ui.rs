//! Several networks in one engine, with the event stream driving a minimal line-mode UI: each message
//! a session stores is printed as `[network] #channel <nick> text`; each input line `NETWORK text` says
//! `text` in the channel on that network; `/quit` or the end of input stops.
//!
//! `cargo run --example line_ui -- '#rete' a=ui-a@127.0.0.1:6667 b=ui-b@127.0.0.1:6667`
use rete_actors::{Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_engine::buffer::BufferKind;
use rete_engine::event::Event;
use rete_engine::ids::SessionId;
use rete_engine::row::Payload;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_transports::{Backoff, ConnectConfig, Transport};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio::sync::broadcast::error::RecvError;

/// How long the networks may take to connect and join.
const READY_WITHIN: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: line_ui CHANNEL NAME=NICK@HOST:PORT...";
    let mut args = std::env::args().skip(1);
    let channel = args.next().ok_or(usage)?;
    let args: Vec<String> = args.collect();
    if args.is_empty() {
        return Err(usage.into());
    }
    let rete = Rete::start(ReteOptions::default()).await?;
    let mut events = rete.subscribe();
    let mut networks = Vec::new();
    for (i, network) in args.iter().enumerate() {
        let spec = network_spec(i, network, &channel)?;
        networks.push(rete.add_session(spec).await?);
    }

    let mut input = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let ready_by = tokio::time::Instant::now() + READY_WITHIN;
    let mut ready = false;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(e) => {
                    if let Event::Row { buffer, seq } = e.event {
                        print_row(&networks, &e.session, buffer, seq).await;
                    }
                    if !ready && all_joined(&networks, &channel).await {
                        ready = true;
                        println!("ready");
                    }
                }
                Err(RecvError::Lagged(missed)) => println!("({missed} events missed)"),
                Err(RecvError::Closed) => break,
            },
            line = input.next_line(), if ready => match line? {
                None => break,
                Some(line) if line == "/quit" => break,
                Some(line) => say(&networks, &channel, &line).await,
            },
            _ = tokio::time::sleep_until(ready_by), if !ready => {
                return Err("the networks did not all join in time".into());
            }
        }
    }
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// A session for `NAME=NICK@HOST:PORT`, joining `channel`.
fn network_spec(
    i: usize,
    arg: &str,
    channel: &str,
) -> Result<SessionSpec, Box<dyn std::error::Error>> {
    let bad = || format!("{arg:?} is not NAME=NICK@HOST:PORT");
    let (name, rest) = arg.split_once('=').ok_or_else(bad)?;
    let (nick, server) = rest.split_once('@').ok_or_else(bad)?;
    let (host, port) = server.rsplit_once(':').ok_or_else(bad)?;
    let id = SessionId::parse(&format!("0f8e2b1a-3c4d-4e5f-8a9b-{:012x}", i + 1))?;
    let mut config = SessionConfig::new(id, name, nick);
    config.channels = vec![ChannelSpec {
        name: channel.into(),
        key: None,
    }];
    Ok(SessionSpec {
        config,
        transport: Transport::Irc(ConnectConfig {
            host: host.into(),
            port: port.parse()?,
            tls: false,
            tls_fingerprint: None,
            client_cert: None,
            connect_timeout: Duration::from_secs(15),
        }),
        autoconnect: true,
        reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
    })
}

/// Prints the row if it is a message.
async fn print_row(
    networks: &[SessionHandle],
    session: &SessionId,
    buffer: rete_engine::ids::BufferId,
    seq: u64,
) {
    let Some(network) = networks.iter().find(|n| n.id() == session) else {
        return;
    };
    let line = network
        .reader()
        .read(move |view| {
            let b = view.buffer(&buffer)?;
            let row = b.get(seq)?;
            match &row.payload {
                Payload::Privmsg { text } => Some(format!(
                    "[{}] {} <{}> {text}",
                    view.name(),
                    b.name(),
                    row.from
                )),
                _ => None,
            }
        })
        .await;
    if let Ok(Some(line)) = line {
        println!("{line}");
    }
}

/// True once every network is in `channel`.
async fn all_joined(networks: &[SessionHandle], channel: &str) -> bool {
    for network in networks {
        let channel = channel.to_owned();
        let joined = network
            .reader()
            .read(move |view| {
                view.find_buffer(BufferKind::Channel, &channel)
                    .and_then(|id| view.channel(id))
                    .is_some_and(|c| c.joined)
            })
            .await;
        if !matches!(joined, Ok(true)) {
            return false;
        }
    }
    true
}

/// `NETWORK text`: says `text` in `channel` on that network.
async fn say(networks: &[SessionHandle], channel: &str, line: &str) {
    let (name, text) = line.split_once(' ').unwrap_or((line, ""));
    let mut found = None;
    for network in networks {
        let wanted = name.to_owned();
        if let Ok(true) = network
            .reader()
            .read(move |view| view.name() == wanted)
            .await
        {
            found = Some(network);
        }
    }
    let Some(network) = found else {
        println!("no network {name:?}");
        return;
    };
    let (channel, text) = (channel.to_owned(), text.to_owned());
    if let Err(e) = network
        .sender()
        .command(move |c| c.privmsg(&channel, &text))
        .await
    {
        println!("not sent: {e}");
    }
}
