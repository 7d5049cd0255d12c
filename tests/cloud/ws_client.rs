//! A raw WebSocket client of the ReteCloud protocol (JSON frames), and what
//! the service tests read off its frames.

#![allow(clippy::unwrap_used)]

use anyhow::{anyhow, bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use support::cloud::WAIT;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub(crate) struct Client {
    pub(crate) ws: WebSocketStream<TcpStream>,
}

impl Client {
    pub(crate) async fn open(addr: &str) -> Result<Client> {
        let tcp = TcpStream::connect(addr).await?;
        let (ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), tcp).await?;
        Ok(Client { ws })
    }

    pub(crate) async fn send(&mut self, frame: Value) -> Result<()> {
        self.send_text(frame.to_string()).await
    }

    pub(crate) async fn send_text(&mut self, text: String) -> Result<()> {
        self.ws.send(Message::text(text)).await?;
        Ok(())
    }

    /// The next frame; Err on close or timeout.
    pub(crate) async fn recv(&mut self) -> Result<Value> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .context("no frame in time")?
                .ok_or_else(|| anyhow!("closed"))??;
            match msg {
                Message::Text(t) => return Ok(serde_json::from_str(t.as_str())?),
                Message::Close(c) => bail!("closed: {c:?}"),
                _ => {}
            }
        }
    }

    /// Frames up to and including the first one `pred` accepts.
    pub(crate) async fn until(
        &mut self,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Result<Vec<Value>> {
        let mut got = Vec::new();
        loop {
            let f = self.recv().await?;
            let done = pred(&f);
            got.push(f);
            if done {
                return Ok(got);
            }
        }
    }

    /// Reads frames until the service closes; returns them and the close status.
    pub(crate) async fn until_closed(&mut self) -> Result<(Vec<Value>, u16)> {
        let mut got = Vec::new();
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .with_context(|| format!("not closed in time; frames: {got:?}"))?;
            match msg {
                Some(Ok(Message::Text(t))) => got.push(serde_json::from_str(t.as_str())?),
                Some(Ok(Message::Close(Some(c)))) => return Ok((got, u16::from(c.code))),
                Some(Ok(Message::Close(None))) | None => bail!("closed without a status"),
                Some(Ok(_)) => {}
                Some(Err(e)) => bail!("socket error {e}"),
            }
        }
    }

    /// auth, then everything up to `ready`.
    pub(crate) async fn attach(
        addr: &str,
        token: &str,
        resume: Value,
    ) -> Result<(Client, Value, Vec<Value>)> {
        let mut c = Client::open(addr).await?;
        c.send(json!({"type":"auth","version":1,"token":token,"client":"cloud_service/1","resume":resume})).await?;
        let hello = c.recv().await?;
        if hello["type"] != "hello" {
            bail!("expected hello, got {hello}");
        }
        let frames = c.until(|f| f["type"] == "ready").await?;
        Ok((c, hello, frames))
    }
}

pub(crate) fn rows(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["type"] == "line").collect()
}

pub(crate) fn seqs(frames: &[Value]) -> Vec<u64> {
    rows(frames)
        .iter()
        .map(|f| f["seq"].as_u64().unwrap())
        .collect()
}

pub(crate) fn consecutive(after: u64, seqs: &[u64]) -> bool {
    seqs.iter()
        .enumerate()
        .all(|(i, s)| *s == after + 1 + i as u64)
}

pub(crate) fn says(f: &Value, text: &str) -> bool {
    f["type"] == "line"
        && f["line"]
            .as_str()
            .is_some_and(|l| l.ends_with(&format!(" :{text}")))
}
