//! A loopback TCP proxy the test can freeze: while paused it reads nothing from either side
//! and writes nothing, so the connections stay open and silent, as a database connection
//! behind a hung network or a stalled server looks to the client.

use std::net::SocketAddr;

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running proxy. Dropping it stops accepting and closes every proxied connection.
pub struct PauseProxy {
    port: u16,
    paused: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl PauseProxy {
    /// Listens on a free loopback port and forwards each connection to `target`.
    pub async fn start(target: SocketAddr) -> Result<PauseProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (paused, watching) = watch::channel(false);
        let accept = tokio::spawn(async move {
            let mut pumps = Vec::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(target).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                pumps.push(AbortOnDrop(tokio::spawn(pump(cr, sw, watching.clone()))));
                pumps.push(AbortOnDrop(tokio::spawn(pump(sr, cw, watching.clone()))));
            }
        });
        Ok(PauseProxy {
            port,
            paused,
            accept,
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops forwarding in both directions (bytes in flight stay in the kernel's buffers).
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    /// Forwards again.
    pub fn resume(&self) {
        self.paused.send_replace(false);
    }
}

impl Drop for PauseProxy {
    fn drop(&mut self) {
        // The accept task owns the pumps: aborting it drops them, and they abort theirs.
        self.accept.abort();
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Copies `from` to `to` while not paused; reads nothing while paused.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if paused.wait_for(|p| !*p).await.is_err() {
            return;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            // Paused while waiting for bytes: stop reading at once.
            _ = paused.wait_for(|p| *p) => continue,
        };
        // Bytes read just before a pause are held until the resume.
        if paused.wait_for(|p| !*p).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
