//! A real ngircd 26 (Debian's package) per test binary or test: its own temp dir, config,
//! loopback port and process.
//!
//! What ngircd does differently from InspIRCd, and tests must allow for:
//! - no IRCv3 beyond `multi-prefix` (no server-time, batch, echo-message or msgid);
//! - a wrong connection password gets `ERROR :Access denied: Bad password?` and no 464;
//! - `MaxNickLength` refuses a longer nick with 432 (`Nickname too long, max. 9 characters`),
//!   and NICKLEN only arrives in 005, after registration;
//! - it paces every client itself (about one command a second after a short burst), so bots
//!   here send few lines;
//! - run as root, it drops to `nobody` on its own after reading its config.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tempfile::TempDir;

use super::ports::free_port;
use super::process::ManagedChild;

/// The server name ngircd uses as the source of its own messages.
pub const SERVER_NAME: &str = "irc.ngircd.test";
/// The one MOTD line the server sends.
pub const MOTD_TEXT: &str = "Rete ngircd test server";

const BINARY: &str = "/usr/sbin/ngircd";
/// Printed once every listener is set up.
const READY_LINE: &str = "ready.";
/// Printed for each listener that did bind.
const LISTENING: &str = "Now listening on";
const START_DEADLINE: Duration = Duration::from_secs(10);
/// Fresh ports to try when another process took a probed one before ngircd bound it.
const START_ATTEMPTS: usize = 5;

/// What a test server should do beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct NgircdConfig {
    password: Option<String>,
    max_nick_length: Option<u32>,
}

impl NgircdConfig {
    /// The default test server: no password, ngircd's default nick length.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requires this connection password (`PASS`) from every client.
    pub fn password(mut self, password: &str) -> Self {
        self.password = Some(password.to_owned());
        self
    }

    /// Sets `MaxNickLength`.
    pub fn max_nick_length(mut self, len: u32) -> Self {
        self.max_nick_length = Some(len);
        self
    }
}

/// A running (or deliberately stopped) ngircd. Dropping it kills the process and removes its
/// temp dir.
pub struct Ngircd {
    dir: TempDir,
    config: NgircdConfig,
    port: u16,
    child: Option<ManagedChild>,
    earlier_output: String,
}

impl Ngircd {
    /// Writes the config, starts the server and returns once it listens.
    pub async fn start(config: NgircdConfig) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("rete-ngircd-")
            .tempdir()
            .context("creating the ngircd temp dir")?;
        let mut server = Self {
            dir,
            config,
            port: free_port()?,
            child: None,
            earlier_output: String::new(),
        };
        for _ in 0..START_ATTEMPTS {
            if server.spawn().await? {
                return Ok(server);
            }
            server.stop();
            server.port = free_port()?;
        }
        bail!(
            "ngircd could not bind a free port in {START_ATTEMPTS} attempts:\n{}",
            server.log()
        )
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server and waits for it to exit, so its port is closed when this returns.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
            self.earlier_output.push_str(&child.output_text());
            self.earlier_output.push('\n');
        }
    }

    /// Stops the server if it runs and starts it again on the same port.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop();
        if !self.spawn().await? {
            bail!(
                "another process took port {} while ngircd was stopped:\n{}",
                self.port,
                self.log()
            );
        }
        Ok(())
    }

    /// The server's console output, for a failing test to print.
    pub fn log(&self) -> String {
        let console = self
            .child
            .as_ref()
            .map(ManagedChild::output_text)
            .unwrap_or_default();
        format!("--- ngircd ---\n{}{console}", self.earlier_output)
    }

    /// Starts the process and waits until it is ready; false when the port was taken.
    async fn spawn(&mut self) -> Result<bool> {
        let path = config_path(self.dir.path());
        fs::write(&path, render_config(&self.config, self.port)).context("writing ngircd.conf")?;
        let mut command = Command::new(BINARY);
        // --nodaemon: stay in the foreground, logging to stderr, so the harness sees it.
        command.arg("--nodaemon").arg("--config").arg(&path);
        let mut child = ManagedChild::spawn("ngircd", command)?;
        child
            .wait_line(0, START_DEADLINE, |l| l.contains(READY_LINE))
            .await?;
        let bound = child.output_text().contains(LISTENING);
        self.child = Some(child);
        Ok(bound)
    }
}

fn config_path(dir: &Path) -> PathBuf {
    dir.join("ngircd.conf")
}

/// The whole ngircd config for one instance; each setting that matters says why.
fn render_config(config: &NgircdConfig, port: u16) -> String {
    let mut c = String::new();
    // `write!` into a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(c, "[Global]");
    let _ = writeln!(c, "Name = {SERVER_NAME}");
    let _ = writeln!(c, "Info = Rete test server");
    let _ = writeln!(c, "AdminInfo1 = Rete tests");
    let _ = writeln!(c, "AdminInfo2 = loopback");
    let _ = writeln!(c, "AdminEMail = admin@{SERVER_NAME}");
    let _ = writeln!(c, "Listen = 127.0.0.1");
    let _ = writeln!(c, "Ports = {port}");
    let _ = writeln!(c, "MotdPhrase = {MOTD_TEXT}");
    if let Some(p) = &config.password {
        let _ = writeln!(c, "Password = {p}");
    }
    let _ = writeln!(c, "[Limits]");
    // No limit on connections from one address: every test client comes from 127.0.0.1.
    let _ = writeln!(c, "MaxConnectionsIP = 0");
    let _ = writeln!(c, "MaxJoins = 0");
    if let Some(len) = config.max_nick_length {
        let _ = writeln!(c, "MaxNickLength = {len}");
    }
    let _ = writeln!(c, "[Options]");
    // No lookups: registration is immediate and needs no network.
    let _ = writeln!(c, "DNS = no");
    let _ = writeln!(c, "Ident = no");
    let _ = writeln!(c, "PAM = no");
    c
}
