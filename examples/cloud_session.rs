//! A session on a ReteCloud service: the service holds the IRC connection; this engine attaches over
//! WebSocket, reads the network's buffers and says one line in a channel through it. The token comes
//! from the environment (never a command line), and a token the service rotates is kept in memory.
//!
//! `RETE_CLOUD_TOKEN=… cargo run --example cloud_session -- ws://127.0.0.1:8080/ libera '#rete'`
use rete_actors::{Rete, ReteOptions, SessionReader, SessionSpec};
use rete_cloud_protocol::Token;
use rete_engine::buffer::BufferKind;
use rete_engine::ids::SessionId;
use rete_engine::row::Payload;
use rete_engine::session::SessionConfig;
use rete_transports::{
    Backoff, CloudConfig, CloudTokenStore, TokenStoreError, TokenStored, Transport,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the example says.
const TEXT: &str = "hello through the cloud";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: cloud_session URL NETWORK CHANNEL (the token in RETE_CLOUD_TOKEN)";
    let (url, network, channel) = match (args.next(), args.next(), args.next()) {
        (Some(url), Some(network), Some(channel)) => (url, network, channel),
        _ => return Err(usage.into()),
    };
    let token = std::env::var("RETE_CLOUD_TOKEN").map_err(|_| usage)?;

    let rete = Rete::start(ReteOptions::default()).await?;
    let mut events = rete.subscribe();
    let id = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5c")?;
    // The nick and channels are the service's; the config names the session.
    let session = rete
        .add_session(SessionSpec {
            config: SessionConfig::new(id, &network, "rete"),
            transport: Transport::ReteCloud(CloudConfig {
                url,
                network,
                tls_fingerprint: None,
                connect_timeout: Duration::from_secs(15),
                token_store: Arc::new(MemoryTokens(Mutex::new((Token::new(token), None)))),
                // In memory: a restarted example starts live.
                resume_store: None,
            }),
            autoconnect: true,
            reconnect: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
        })
        .await?;

    let reader = session.reader();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !joined(&reader, &channel).await? {
            events.recv().await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await??;
    let (nick, names) = reader
        .read(|view| {
            let names: Vec<String> = view.buffers().map(|b| b.name().to_owned()).collect();
            (view.nick().to_owned(), names)
        })
        .await?;
    println!("attached as {nick}; buffers: {}", names.join(" "));
    let to = channel.clone();
    session
        .sender()
        .command(move |c| c.privmsg(&to, TEXT))
        .await?;
    // The service relays the line to IRC and carries it back in the stream: once it is shown, it
    // went out (detaching sooner could drop it on the way to the service).
    tokio::time::timeout(Duration::from_secs(30), async {
        while !shown(&reader, &channel, &nick).await? {
            events.recv().await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await??;
    println!("sent: {TEXT}");
    // Detaching leaves the service's IRC connection up.
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// True once `channel` shows [`TEXT`] from `nick`.
async fn shown(
    reader: &SessionReader,
    channel: &str,
    nick: &str,
) -> Result<bool, rete_actors::ReteError> {
    let (channel, nick) = (channel.to_owned(), nick.to_owned());
    reader
        .read(move |view| {
            let Some(buffer) = view
                .find_buffer(BufferKind::Channel, &channel)
                .and_then(|id| view.buffer(id))
            else {
                return false;
            };
            buffer.display().any(|row| {
                *row.from == *nick
                    && matches!(&row.payload, Payload::Privmsg { text } if &**text == TEXT)
            })
        })
        .await
}

/// True once the service's session is in `channel`.
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

/// The token and its generation (None: set by hand), in memory. A host that runs again keeps it
/// on disk instead (0600, replaced atomically), as reterm does.
struct MemoryTokens(Mutex<(Token, Option<u64>)>);

impl CloudTokenStore for MemoryTokens {
    fn load(&self) -> Result<Option<Token>, TokenStoreError> {
        let held = self
            .0
            .lock()
            .map_err(|_| TokenStoreError("the store is poisoned".into()))?;
        Ok(Some(held.0.clone()))
    }

    fn store(&self, token: &Token, generation: u64) -> Result<TokenStored, TokenStoreError> {
        let mut held = self
            .0
            .lock()
            .map_err(|_| TokenStoreError("the store is poisoned".into()))?;
        match held.1 {
            Some(g) if g == generation && held.0.expose() == token.expose() => {
                Ok(TokenStored::Written)
            }
            Some(g) if g >= generation => Ok(TokenStored::LaterKept),
            _ => {
                *held = (token.clone(), Some(generation));
                Ok(TokenStored::Written)
            }
        }
    }
}
