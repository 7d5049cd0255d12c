//! A real ZNC 1.8 bouncer (Debian's package) in front of a test IRC server: its own temp
//! dir, config, loopback port and process.
//!
//! ZNC refuses to run as root, so as root it runs as `nobody` through `setpriv` (as Atheme
//! does), with its data dir handed to that user.
//!
//! What ZNC 1.8 does that tests must allow for (observed):
//! - `CAP LS` offers `batch cap-notify echo-message multi-prefix server-time
//!   userhost-in-names znc.in/batch znc.in/self-message znc.in/server-time-iso`, and it
//!   answers registration only after `CAP END`;
//! - the login is `PASS user/network:password`; a wrong one gets `464 :Invalid Password`;
//! - on attach it replays each buffer inside `BATCH +ref znc.in/playback <target>`, every
//!   line with `time=` (milliseconds) and no `msgid`; with `AutoClearChanBuffer = false` it
//!   replays the whole buffer again on every attach;
//! - a client's QUIT is not passed on: detaching leaves ZNC (and its nick) on the network.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use super::ports::free_port;
use super::process::{running_as_root, ManagedChild};

/// The ZNC user the tests log in as.
pub const USER: &str = "rete";
/// The ZNC network name.
pub const NETWORK: &str = "test";

const BINARY: &str = "/usr/bin/znc";
/// Printed in the foreground once the config is loaded and the listener bound.
const READY_LINE: &str = "Staying open for debugging";
const START_DEADLINE: Duration = Duration::from_secs(15);
/// The unprivileged user ZNC runs as when the tests run as root.
const NOBODY: u32 = 65534;

/// Where ZNC connects upstream, and how it keeps its buffers.
#[derive(Clone, Debug)]
pub struct ZncConfig {
    upstream_port: u16,
    upstream_password: Option<String>,
    nick: String,
    channels: Vec<String>,
    auto_clear_chan_buffer: bool,
    buffer_size: u32,
    /// One network per channel (`test`, `test1`, …), the i-th as `{nick}{i}`
    /// in the i-th channel only, instead of one network in them all.
    network_per_channel: bool,
}

impl ZncConfig {
    /// One network per channel instead of one in them all (see the field).
    pub fn network_per_channel(mut self) -> Self {
        self.network_per_channel = true;
        self
    }

    /// ZNC for the server on `upstream_port`, on IRC as `nick`.
    pub fn new(upstream_port: u16, nick: &str) -> Self {
        Self {
            upstream_port,
            upstream_password: None,
            nick: nick.to_owned(),
            channels: Vec::new(),
            auto_clear_chan_buffer: true,
            buffer_size: 500,
            network_per_channel: false,
        }
    }

    /// The upstream server's connection password.
    pub fn upstream_password(mut self, password: &str) -> Self {
        self.upstream_password = Some(password.to_owned());
        self
    }

    /// Channels ZNC joins on its own (its `<Chan>` blocks).
    pub fn channels(mut self, channels: &[&str]) -> Self {
        self.channels = channels.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// `AutoClearChanBuffer`: true (ZNC's default) forgets a channel's buffer once it was
    /// replayed; false replays the whole buffer on every attach.
    pub fn auto_clear_chan_buffer(mut self, clear: bool) -> Self {
        self.auto_clear_chan_buffer = clear;
        self
    }

    /// Lines ZNC keeps per channel and query.
    pub fn buffer_size(mut self, lines: u32) -> Self {
        self.buffer_size = lines;
        self
    }
}

/// A running ZNC. Dropping it kills the process and removes its temp dir.
pub struct Znc {
    dir: TempDir,
    port: u16,
    password: String,
    child: Option<ManagedChild>,
}

impl Znc {
    /// Writes the config, starts ZNC and returns once it listens. ZNC then connects
    /// upstream on its own; wait for its nick there before relying on it.
    pub async fn start(config: ZncConfig) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("rete-znc-")
            .tempdir()
            .context("creating the ZNC temp dir")?;
        let password = Alphanumeric.sample_string(&mut rand::rng(), 20);
        let port = free_port()?;
        fs::create_dir_all(dir.path().join("configs"))?;
        fs::write(
            dir.path().join("configs/znc.conf"),
            render_config(&config, port, &password),
        )
        .context("writing znc.conf")?;
        if running_as_root() {
            hand_to_nobody(dir.path())?;
        }
        let mut znc = Self {
            dir,
            port,
            password,
            child: None,
        };
        znc.spawn().await?;
        Ok(znc)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// ZNC's process id (for its memory).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(ManagedChild::pid)
    }

    /// The `PASS` a client logs in with: `user/network:password`.
    pub fn login(&self) -> String {
        format!("{USER}/{NETWORK}:{}", self.password)
    }

    /// The same login with a wrong password.
    pub fn wrong_login(&self) -> String {
        format!("{USER}/{NETWORK}:not-{}", self.password)
    }

    /// Kills ZNC (as a crash would look to its clients and to the server) and starts it
    /// again on the same port with the same config, which knows only the configured
    /// channels: channels joined since were never saved.
    pub async fn restart(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill();
        }
        self.spawn().await
    }

    /// ZNC's console output, for a failing test to print.
    pub fn log(&self) -> String {
        let console = self
            .child
            .as_ref()
            .map(ManagedChild::output_text)
            .unwrap_or_default();
        format!("--- znc ---\n{console}")
    }

    async fn spawn(&mut self) -> Result<()> {
        let mut command = if running_as_root() {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={NOBODY}"))
                .arg(format!("--regid={NOBODY}"))
                .args(["--clear-groups", "--", BINARY]);
            c
        } else {
            Command::new(BINARY)
        };
        // --foreground: stay attached so the harness sees the output and can kill it.
        command
            .arg("--foreground")
            .arg("--datadir")
            .arg(self.dir.path())
            .env("HOME", self.dir.path());
        let mut child = ManagedChild::spawn("znc", command)?;
        child
            .wait_line(0, START_DEADLINE, |l| l.contains(READY_LINE))
            .await?;
        if !child.is_running() {
            bail!("ZNC exited after starting:\n{}", child.output_text());
        }
        self.child = Some(child);
        Ok(())
    }
}

/// Gives the data dir (and everything in it) to `nobody`, whom ZNC runs as.
fn hand_to_nobody(dir: &Path) -> Result<()> {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(dir)
        .status()
        .context("running chown")?;
    if !status.success() {
        bail!("chown -R {NOBODY} {} failed: {status}", dir.display());
    }
    Ok(())
}

/// The whole ZNC config. The password is stored as ZNC's salted SHA-256.
fn render_config(config: &ZncConfig, port: u16, password: &str) -> String {
    let salt = Alphanumeric.sample_string(&mut rand::rng(), 20);
    let hash = Sha256::digest(format!("{password}{salt}").as_bytes());
    let hash: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    let nick = &config.nick;
    let clear = config.auto_clear_chan_buffer;
    let size = config.buffer_size;
    let server_pass = config.upstream_password.as_deref().unwrap_or("");
    let mut c = String::new();
    // `write!` into a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(c, "Version = 1.8.2");
    // Room for the reattach benchmark's 500 lines per channel (the default cap is 500).
    let _ = writeln!(c, "MaxBufferSize = {}", size.max(500));
    // No anti-flood on logins: tests log in again and again, some with a wrong password.
    let _ = writeln!(c, "AnonIPLimit = 1000");
    // Connect upstream at once, and again at once after the server restarts (the defaults
    // wait 5 s between connections and 30 s before reconnecting to the same server).
    let _ = writeln!(c, "ConnectDelay = 0");
    let _ = writeln!(c, "ServerThrottle = 0");
    let _ = writeln!(c, "<Listener clients>");
    let _ = writeln!(c, "    Host = 127.0.0.1");
    let _ = writeln!(c, "    Port = {port}");
    let _ = writeln!(c, "    IPv4 = true");
    let _ = writeln!(c, "    IPv6 = false");
    let _ = writeln!(c, "    SSL = false");
    let _ = writeln!(c, "    AllowWeb = false");
    let _ = writeln!(c, "</Listener>");
    let _ = writeln!(c, "<User {USER}>");
    let _ = writeln!(c, "    <Pass password>");
    let _ = writeln!(c, "        Method = sha256");
    let _ = writeln!(c, "        Hash = {hash}");
    let _ = writeln!(c, "        Salt = {salt}");
    let _ = writeln!(c, "    </Pass>");
    let _ = writeln!(c, "    Nick = {nick}");
    let _ = writeln!(c, "    AltNick = {nick}_");
    let _ = writeln!(c, "    Ident = {nick}");
    let _ = writeln!(c, "    RealName = {nick}");
    let _ = writeln!(c, "    AutoClearChanBuffer = {clear}");
    let _ = writeln!(c, "    AutoClearQueryBuffer = {clear}");
    let _ = writeln!(c, "    ChanBufferSize = {size}");
    let _ = writeln!(c, "    QueryBufferSize = {size}");
    let networks: Vec<(String, Option<String>, Vec<&String>)> = if config.network_per_channel {
        (config.channels.iter().enumerate())
            .map(|(i, chan)| {
                let name = if i == 0 {
                    NETWORK.to_owned()
                } else {
                    format!("{NETWORK}{i}")
                };
                (name, Some(format!("{nick}{i}")), vec![chan])
            })
            .collect()
    } else {
        vec![(NETWORK.to_owned(), None, config.channels.iter().collect())]
    };
    for (name, own_nick, channels) in networks {
        let _ = writeln!(c, "    <Network {name}>");
        if let Some(n) = own_nick {
            let _ = writeln!(c, "        Nick = {n}");
            let _ = writeln!(c, "        AltNick = {n}_");
        }
        let _ = writeln!(
            c,
            "        Server = 127.0.0.1 {} {server_pass}",
            config.upstream_port
        );
        // ZNC's own pacing towards the server: off, the test servers have no flood limits.
        let _ = writeln!(c, "        FloodBurst = 1000");
        let _ = writeln!(c, "        FloodRate = 1000");
        for chan in channels {
            let _ = writeln!(c, "        <Chan {chan}>");
            let _ = writeln!(c, "        </Chan>");
        }
        let _ = writeln!(c, "    </Network>");
    }
    let _ = writeln!(c, "</User>");
    c
}
