//! A scripted raw-socket IRC client that plays the other users in integration tests.
//!
//! It records every received line (see [`Bot::lines`]) and answers PING by itself; tests drive
//! it with [`Bot::send`] and wait on what the server says with [`Bot::wait_for`].

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, ReadHalf, WriteHalf,
};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::msg::Msg;
use super::tls::client_config;

/// How long a bot waits for an expected line unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Registration takes up to a second on InspIRCd 3 (it completes registrations on a 1 Hz
/// timer), so the registration wait is longer than the default.
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How many recent lines an error message shows.
const TAIL: usize = 30;

/// A plain or TLS connection, boxed so [`Bot`] has one type for both.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// How a bot connects and registers.
#[derive(Clone, Debug)]
pub struct BotConfig {
    port: u16,
    nick: String,
    password: Option<String>,
    caps: Vec<String>,
    tls: Option<CertificateDer<'static>>,
}

impl BotConfig {
    /// Plain connection to `127.0.0.1:port` as `nick`, no caps, no password.
    pub fn new(port: u16, nick: &str) -> Self {
        Self {
            port,
            nick: nick.to_owned(),
            password: None,
            caps: Vec::new(),
            tls: None,
        }
    }

    /// Sends `PASS password` before registering.
    pub fn password(mut self, password: &str) -> Self {
        self.password = Some(password.to_owned());
        self
    }

    /// Requests these caps during registration (all must be acknowledged).
    pub fn caps(mut self, caps: &[&str]) -> Self {
        self.caps = caps.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Connects with TLS, trusting only `cert`.
    pub fn tls(mut self, cert: &CertificateDer<'static>) -> Self {
        self.tls = Some(cert.clone());
        self
    }
}

/// A connected test client.
pub struct Bot {
    nick: String,
    reader: BufReader<ReadHalf<Box<dyn Stream>>>,
    writer: WriteHalf<Box<dyn Stream>>,
    /// Bytes of a line not yet complete: kept here so a read cancelled by a timeout loses
    /// nothing.
    partial: Vec<u8>,
    lines: Vec<String>,
    cursor: usize,
    closed: bool,
    acked_caps: Vec<String>,
}

impl Bot {
    /// Connects to `127.0.0.1:port` and registers as `nick` (returns after 001).
    pub async fn connect(port: u16, nick: &str) -> Result<Self> {
        Self::connect_with(BotConfig::new(port, nick)).await
    }

    /// Connects and registers as `config` says (returns after 001).
    pub async fn connect_with(config: BotConfig) -> Result<Self> {
        let mut bot = Self::open(config.port, config.tls.as_ref()).await?;
        bot.nick.clone_from(&config.nick);
        bot.register(&config).await?;
        Ok(bot)
    }

    /// Connects without registering, for tests that script registration themselves
    /// (CAP negotiation, SASL, wrong passwords).
    pub async fn raw(port: u16) -> Result<Self> {
        Self::open(port, None).await
    }

    /// The nick the bot registered with.
    pub fn nick(&self) -> &str {
        &self.nick
    }

    /// The caps the server acknowledged during registration.
    pub fn acked_caps(&self) -> &[String] {
        &self.acked_caps
    }

    /// Every line received so far, in order (for assertions and failure messages).
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Sends one raw line (CR LF is added).
    pub async fn send(&mut self, line: &str) -> Result<()> {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .await
            .with_context(|| format!("{}: sending a line", self.nick))?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Sends a PRIVMSG.
    pub async fn privmsg(&mut self, target: &str, text: &str) -> Result<()> {
        self.send(&format!("PRIVMSG {target} :{text}")).await
    }

    /// Joins `channel` and returns once the server has sent the bot's own JOIN and the end of
    /// NAMES (366), i.e. once the bot is fully in the channel.
    pub async fn join(&mut self, channel: &str) -> Result<()> {
        self.send(&format!("JOIN {channel}")).await?;
        let nick = self.nick.clone();
        let reply = self
            .wait_for(
                |l| {
                    let m = Msg::parse(l);
                    let own_join = m.command == "JOIN"
                        && m.source_nick() == Some(nick.as_str())
                        && m.param(0).eq_ignore_ascii_case(channel);
                    let refused =
                        matches!(m.command, "403" | "405" | "471" | "473" | "474" | "475")
                            && m.param(1).eq_ignore_ascii_case(channel);
                    own_join || refused
                },
                DEFAULT_TIMEOUT,
            )
            .await?;
        if Msg::parse(&reply).command != "JOIN" {
            bail!("{nick} could not join {channel}: {reply}");
        }
        self.wait_for(
            |l| {
                let m = Msg::parse(l);
                m.command == "366" && m.param(1).eq_ignore_ascii_case(channel)
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
        Ok(())
    }

    /// Waits for the next line (after those already matched) that satisfies `pred`, skipping
    /// the others (they stay in [`Bot::lines`]).
    pub async fn wait_for(
        &mut self,
        pred: impl FnMut(&str) -> bool,
        timeout: Duration,
    ) -> Result<String> {
        let mut batch = self.collect_until(pred, timeout).await?;
        batch
            .pop()
            .ok_or_else(|| anyhow!("collect_until returned no line"))
    }

    /// Like [`Bot::wait_for`], but returns every line from the current position up to and
    /// including the matching one (e.g. a whole history batch).
    pub async fn collect_until(
        &mut self,
        mut pred: impl FnMut(&str) -> bool,
        timeout: Duration,
    ) -> Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(i) = self.lines[self.cursor..].iter().position(|l| pred(l)) {
                let end = self.cursor + i + 1;
                let batch = self.lines[self.cursor..end].to_vec();
                self.cursor = end;
                return Ok(batch);
            }
            if self.closed {
                bail!(
                    "{}: connection closed before the expected line; last lines:\n{}",
                    self.nick,
                    self.tail()
                );
            }
            match tokio::time::timeout_at(deadline, self.read_line()).await {
                Ok(result) => result?,
                Err(_) => bail!(
                    "{}: no expected line within {timeout:?}; last lines:\n{}",
                    self.nick,
                    self.tail()
                ),
            }
        }
    }

    /// Waits until the server closes the connection.
    pub async fn wait_closed(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !self.closed {
            match tokio::time::timeout_at(deadline, self.read_line()).await {
                Ok(result) => result?,
                Err(_) => bail!(
                    "{}: connection still open after {timeout:?}; last lines:\n{}",
                    self.nick,
                    self.tail()
                ),
            }
        }
        Ok(())
    }

    /// Sends QUIT and waits (briefly) for the server to close the connection, so the nick is
    /// free again when this returns. Errors are ignored: the bot is going away anyway.
    pub async fn quit(mut self) {
        if self.send("QUIT :bye").await.is_ok() {
            let _ = self.wait_closed(DEFAULT_TIMEOUT).await;
        }
    }

    async fn open(port: u16, tls: Option<&CertificateDer<'static>>) -> Result<Self> {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Stream> = match tls {
            None => Box::new(tcp),
            Some(cert) => {
                let connector = TlsConnector::from(client_config(cert)?);
                let name = ServerName::try_from("127.0.0.1")?;
                Box::new(
                    connector
                        .connect(name, tcp)
                        .await
                        .context("TLS handshake")?,
                )
            }
        };
        let (read, writer) = tokio::io::split(stream);
        Ok(Self {
            nick: format!("<unregistered:{port}>"),
            reader: BufReader::new(read),
            writer,
            partial: Vec::new(),
            lines: Vec::new(),
            cursor: 0,
            closed: false,
            acked_caps: Vec::new(),
        })
    }

    async fn register(&mut self, config: &BotConfig) -> Result<()> {
        if !config.caps.is_empty() {
            self.send("CAP LS 302").await?;
        }
        if let Some(password) = &config.password {
            self.send(&format!("PASS {password}")).await?;
        }
        self.send(&format!("NICK {}", config.nick)).await?;
        self.send(&format!("USER {} 0 * :Rete test bot", config.nick))
            .await?;
        if !config.caps.is_empty() {
            self.send(&format!("CAP REQ :{}", config.caps.join(" ")))
                .await?;
            let reply = self
                .wait_for(
                    |l| {
                        let m = Msg::parse(l);
                        m.command == "CAP" && matches!(m.param(1), "ACK" | "NAK")
                    },
                    DEFAULT_TIMEOUT,
                )
                .await?;
            let m = Msg::parse(&reply);
            if m.param(1) != "ACK" {
                bail!("{}: caps refused: {reply}", config.nick);
            }
            self.acked_caps = m.param(2).split_whitespace().map(str::to_owned).collect();
            self.send("CAP END").await?;
        }
        let reply = self
            .wait_for(
                |l| {
                    matches!(
                        Msg::parse(l).command,
                        "001" | "ERROR" | "432" | "433" | "464" | "465"
                    )
                },
                REGISTRATION_TIMEOUT,
            )
            .await?;
        if Msg::parse(&reply).command != "001" {
            bail!("{}: registration failed: {reply}", config.nick);
        }
        Ok(())
    }

    /// Reads one line into `lines` (answering PING), or marks the connection closed.
    async fn read_line(&mut self) -> Result<()> {
        let n = self
            .reader
            .read_until(b'\n', &mut self.partial)
            .await
            .with_context(|| format!("{}: reading", self.nick))?;
        if n == 0 {
            self.closed = true;
            return Ok(());
        }
        let buf = std::mem::take(&mut self.partial);
        let line = String::from_utf8_lossy(&buf)
            .trim_end_matches(['\r', '\n'])
            .to_owned();
        let ping = {
            let m = Msg::parse(&line);
            (m.command == "PING").then(|| m.param(0).to_owned())
        };
        self.lines.push(line);
        if let Some(token) = ping {
            self.send(&format!("PONG :{token}")).await?;
        }
        Ok(())
    }

    fn tail(&self) -> String {
        let start = self.lines.len().saturating_sub(TAIL);
        self.lines[start..].join("\n")
    }
}

/// A bot `nick` on the server at `port` with the `echo-message` cap, so it sees each of its
/// own messages as the server relays it.
pub async fn echo_bot(port: u16, nick: &str) -> Result<Bot> {
    Bot::connect_with(BotConfig::new(port, nick).caps(&["echo-message"])).await
}

/// Says `text` in `channel` and waits for the server's echo, so it is stored in the history.
pub async fn say(bot: &mut Bot, channel: &str, text: &str) -> Result<()> {
    bot.privmsg(channel, text).await?;
    let suffix = format!(" {channel} :{text}");
    bot.wait_for(move |l| l.ends_with(&suffix), DEFAULT_TIMEOUT)
        .await?;
    Ok(())
}

/// Waits until the bot sees `nick` join `channel`.
pub async fn sees_join(bot: &mut Bot, nick: &str, channel: &str) -> Result<()> {
    let (nick, channel) = (nick.to_owned(), channel.to_owned());
    bot.wait_for(
        move |l| {
            let m = Msg::parse(l);
            m.command == "JOIN"
                && m.source_nick() == Some(nick.as_str())
                && m.param(0).eq_ignore_ascii_case(&channel)
        },
        DEFAULT_TIMEOUT,
    )
    .await?;
    Ok(())
}
