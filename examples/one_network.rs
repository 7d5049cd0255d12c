//! One network: connect, join a channel, read the session through a reader, send through a sender.
//!
//! `cargo run --example one_network -- 127.0.0.1:6667 '#rete' rete`
use rete_actors::{Rete, ReteOptions, SessionReader, SessionSpec};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_transports::{Backoff, ConnectConfig, Transport};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:6667".into());
    let channel = args.next().unwrap_or_else(|| "#rete".into());
    let nick = args.next().unwrap_or_else(|| "rete".into());
    let (host, port) = server.rsplit_once(':').ok_or("the server is HOST:PORT")?;

    let rete = Rete::start(ReteOptions::default()).await?;
    let id = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")?;
    let mut config = SessionConfig::new(id, "local", &nick);
    config.channels = vec![ChannelSpec {
        name: channel.clone(),
        key: None,
    }];
    let mut events = rete.subscribe(); // every session's change notifications, from now on
    let session = rete
        .add_session(SessionSpec {
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
        .await?;

    let reader = session.reader(); // can only read
    tokio::time::timeout(Duration::from_secs(30), async {
        while !joined(&reader, &channel).await? {
            events.recv().await?; // something changed: look again
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await??;
    let names: Vec<String> = reader
        .read(|view| view.buffers().map(|b| b.name().to_owned()).collect())
        .await?;
    println!("buffers: {}", names.join(" "));

    session
        .sender()
        .command(move |c| c.privmsg(&channel, "hello"))
        .await?; // the only way to send
    println!("sent: hello");
    rete.shutdown(Duration::from_secs(2)).await; // QUIT goes out after the message
    Ok(())
}

/// True once the session is in `channel`.
async fn joined(reader: &SessionReader, channel: &str) -> Result<bool, rete_actors::ReteError> {
    let channel = channel.to_owned();
    reader
        .read(move |view| {
            view.find_buffer(BufferKind::Channel, &channel)
                .and_then(|id| view.channel(id))
                .is_some_and(|c| c.joined)
        })
        .await
}
