//! The control server embedded in a host of its own: the host runs one session, serves the MCP
//! control surface on 127.0.0.1 for it, and then, as an agent would, calls list_sessions over HTTP
//! with the access token, prints what it answered and stops. The server refuses to run as root.
//!
//! `cargo run --example control_host -- 127.0.0.1:6667 '#rete'`
use rete_actors::{Rete, ReteOptions, SessionHandle, SessionSpec};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::SessionId;
use rete_engine::session::{ChannelSpec, SessionConfig};
use rete_mcp::access_log::AccessLog;
use rete_mcp::server::{ControlServer, ServerSettings};
use rete_mcp::{Token, TokenStore, TokenStoreError};
use rete_transports::{Backoff, ConnectConfig, Transport};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIST_SESSIONS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next().unwrap_or_else(|| "127.0.0.1:6667".into());
    let channel = args.next().unwrap_or_else(|| "#rete".into());
    let (host, port) = server.rsplit_once(':').ok_or("the server is HOST:PORT")?;

    let rete = Arc::new(Rete::start(ReteOptions::default()).await?);
    let mut events = rete.subscribe();
    let id = SessionId::parse("0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4c01")?;
    let mut config = SessionConfig::new(id, "local", "host");
    config.channels = vec![ChannelSpec {
        name: channel.clone(),
        key: None,
    }];
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
    tokio::time::timeout(Duration::from_secs(30), async {
        while !joined(&session, &channel).await {
            events.recv().await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await??;

    // The host keeps the token (reterm keeps it in a private secrets file); this one, for one run,
    // in memory.
    let settings = ServerSettings {
        port: free_port()?,
        debug: false,
        send: false,
        tokens: Arc::new(MemoryToken::default()),
        grants: Default::default(),
    };
    let control = ControlServer::start(rete.clone(), settings, Arc::new(AccessLog::new())).await?;
    println!("{}", control.status_line());

    let answer = post(control.port(), control.token().expose(), LIST_SESSIONS).await?;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .ok_or("no tool result")?;
    let result: Value = serde_json::from_str(text)?;
    for s in result["sessions"].as_array().into_iter().flatten() {
        println!("list_sessions: {} {} {}", s["name"], s["state"], s["nick"]);
    }

    control.stop().await;
    rete.shutdown(Duration::from_secs(2)).await;
    Ok(())
}

/// The control token kept in memory: a new one each run.
#[derive(Default)]
struct MemoryToken(Mutex<Option<Token>>);

impl TokenStore for MemoryToken {
    fn load_or_store(&self, fresh: Token) -> Result<Token, TokenStoreError> {
        let mut held = self
            .0
            .lock()
            .map_err(|_| TokenStoreError("poisoned".into()))?;
        Ok(held.get_or_insert(fresh).clone())
    }

    fn replace(&self, fresh: &Token) -> Result<(), TokenStoreError> {
        *self
            .0
            .lock()
            .map_err(|_| TokenStoreError("poisoned".into()))? = Some(fresh.clone());
        Ok(())
    }
}

/// One MCP request over HTTP/1.1 to the control server; returns the JSON-RPC answer.
async fn post(port: u16, token: &str, body: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let body_at = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err("the server closed the connection before answering".into());
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or("an answer without Content-Length")?;
            if answer.len() >= end + 4 + length {
                break (end + 4, length);
            }
        }
    };
    let (start, length) = body_at;
    Ok(serde_json::from_slice(&answer[start..start + length])?)
}

/// A port on 127.0.0.1 free a moment ago.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
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
