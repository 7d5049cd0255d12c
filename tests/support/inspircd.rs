//! A real InspIRCd 3 server per test: its own temp dir, config, loopback ports and process.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rand::distr::{Alphanumeric, SampleString};
use rustls::pki_types::CertificateDer;
use tempfile::TempDir;

use super::ports::free_port;
use super::process::{running_as_root, ManagedChild};
use super::tls::TestCert;

/// The server name InspIRCd uses as the source of its own messages.
pub const SERVER_NAME: &str = "irc.test";
/// The server name Atheme links as (InspIRCd's `<uline>` and `<sasl:target>` name it).
pub const SERVICES_NAME: &str = "services.test";
/// The network name in 005 `NETWORK=`.
pub const NETWORK_NAME: &str = "ReteTest";
/// The one MOTD line the server sends, so tests can check MOTD handling.
pub const MOTD_TEXT: &str = "Rete integration test server";

const BINARY: &str = "/usr/sbin/inspircd";
/// Printed on stdout once the config is loaded and every listener is bound (or failed to).
const READY_LINE: &str = "InspIRCd is now running as";
/// Printed on stdout before [`READY_LINE`] when a listener could not bind its port.
const BIND_FAILED: &str = "failed to bind";
const START_DEADLINE: Duration = Duration::from_secs(10);
/// Fresh port sets to try when another process took a probed port before InspIRCd bound it.
const START_ATTEMPTS: usize = 5;

/// The modules every test server loads. Together they make `CAP LS 302` offer the IRCv3 caps
/// the client engine supports (see `support/lib.rs` for the observed list).
const MODULES: &[&str] = &[
    "cap",
    "ircv3",
    "ircv3_accounttag",
    "ircv3_batch",
    "ircv3_capnotify",
    "ircv3_chghost",
    "ircv3_ctctags",
    "ircv3_echomessage",
    "ircv3_invitenotify",
    "ircv3_labeledresponse",
    "ircv3_msgid",
    "ircv3_servertime",
    "chanhistory",
    "namesx",
    "uhnames",
    "monitor",
    "setname",
    "sasl",
    "services_account",
    "chghost",
    "spanningtree",
    // Atheme introduces its clients with user mode +d (deaf) and refuses to link without it.
    "deaf",
    // Lets Atheme hold nicks it enforces (otherwise it warns and enforcement is off).
    "svshold",
];

/// What a test server should offer beyond the defaults (plain client port, IRCv3 modules,
/// no flood limits, no DNS or ident lookups).
#[derive(Clone, Debug, Default)]
pub struct InspircdConfig {
    password: Option<String>,
    tls: bool,
    services: bool,
    raw_io_log: bool,
    extra: Vec<String>,
}

impl InspircdConfig {
    /// The default test server.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requires this connection password (`PASS`) from every client.
    pub fn password(mut self, password: &str) -> Self {
        self.password = Some(password.to_owned());
        self
    }

    /// Adds a TLS client listener with a fresh self-signed certificate
    /// (see [`Inspircd::tls_port`] and [`Inspircd::tls_cert`]).
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Adds the server-link listener and `<link>`/`<uline>` blocks Atheme needs
    /// (see [`super::atheme::Atheme::start`]).
    pub fn services(mut self) -> Self {
        self.services = true;
        self
    }

    /// Logs every line sent and received to the server log (see [`Inspircd::log`]). InspIRCd
    /// then also tells every client so in a NOTICE and a PRIVMSG, which is why it is off by
    /// default. The log then holds PASS and AUTHENTICATE lines: use test credentials only.
    pub fn raw_io_log(mut self) -> Self {
        self.raw_io_log = true;
        self
    }

    /// Appends a raw config line (for a module or tag a single test needs).
    pub fn extra(mut self, line: &str) -> Self {
        self.extra.push(line.to_owned());
        self
    }
}

/// Where Atheme must connect to link with this server.
#[derive(Clone, Debug)]
pub struct ServicesLink {
    /// The `type="servers"` listener port.
    pub port: u16,
    /// The link password (same in both directions).
    pub password: String,
}

/// The ports one server instance listens on; kept across [`Inspircd::restart`].
#[derive(Clone, Copy, Debug)]
struct Ports {
    client: u16,
    tls: Option<u16>,
    link: Option<u16>,
}

impl Ports {
    fn pick(config: &InspircdConfig) -> Result<Self> {
        Ok(Self {
            client: free_port()?,
            tls: config.tls.then(free_port).transpose()?,
            link: config.services.then(free_port).transpose()?,
        })
    }
}

/// A running (or deliberately stopped) InspIRCd. Dropping it kills the process and removes its
/// temp dir.
pub struct Inspircd {
    dir: TempDir,
    ports: Ports,
    cert: Option<TestCert>,
    link_password: Option<String>,
    child: Option<ManagedChild>,
    earlier_output: String,
}

impl Inspircd {
    /// Writes the config, starts the server and returns once every listener is bound.
    pub async fn start(config: InspircdConfig) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("rete-inspircd-")
            .tempdir()
            .context("creating the InspIRCd temp dir")?;
        let cert = if config.tls {
            let cert = TestCert::generate()?;
            fs::write(dir.path().join("cert.pem"), &cert.cert_pem)?;
            fs::write(dir.path().join("key.pem"), &cert.key_pem)?;
            Some(cert)
        } else {
            None
        };
        fs::write(dir.path().join("motd.txt"), format!("{MOTD_TEXT}\n"))?;
        let link_password = config
            .services
            .then(|| Alphanumeric.sample_string(&mut rand::rng(), 24));

        let mut server = Self {
            dir,
            ports: Ports::pick(&config)?,
            cert,
            link_password,
            child: None,
            earlier_output: String::new(),
        };
        for _ in 0..START_ATTEMPTS {
            let text = render_config(
                &config,
                server.dir.path(),
                server.ports,
                server.link_password.as_deref(),
            );
            fs::write(config_path(server.dir.path()), text).context("writing inspircd.conf")?;
            match server.spawn().await? {
                Bind::Ok => return Ok(server),
                Bind::PortTaken => {
                    server.stop();
                    server.ports = Ports::pick(&config)?;
                }
            }
        }
        bail!(
            "InspIRCd could not bind free ports in {START_ATTEMPTS} attempts:\n{}",
            server.log()
        )
    }

    /// The plain-text client port.
    pub fn port(&self) -> u16 {
        self.ports.client
    }

    /// The TLS client port, when the config asked for TLS.
    pub fn tls_port(&self) -> Option<u16> {
        self.ports.tls
    }

    /// The certificate the TLS listener presents (trust it, and only it, in TLS tests).
    pub fn tls_cert(&self) -> Option<&CertificateDer<'static>> {
        self.cert.as_ref().map(|c| &c.cert_der)
    }

    /// Where and how services link, when the config asked for services.
    pub fn services_link(&self) -> Option<ServicesLink> {
        Some(ServicesLink {
            port: self.ports.link?,
            password: self.link_password.clone()?,
        })
    }

    /// Whether the server process is alive.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(ManagedChild::is_running)
    }

    /// Kills the server (as a crash or network loss would look to clients) and waits for it to
    /// exit, so its ports are closed when this returns.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
            self.earlier_output.push_str(&child.output_text());
            self.earlier_output.push('\n');
        }
    }

    /// Freezes the server (SIGSTOP): it keeps its sockets open and answers nothing, as a
    /// server that hangs looks to clients, until [`Inspircd::resume`].
    pub fn pause(&self) -> Result<()> {
        self.running()?.pause()
    }

    /// Lets a paused server run on (SIGCONT); what clients sent meanwhile is then read.
    pub fn resume(&self) -> Result<()> {
        self.running()?.resume()
    }

    fn running(&self) -> Result<&ManagedChild> {
        self.child.as_ref().context("the server is not running")
    }

    /// Stops the server if it runs and starts it again with the same config on the same ports.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop();
        match self.spawn().await? {
            Bind::Ok => Ok(()),
            Bind::PortTaken => bail!(
                "another process took port {} while InspIRCd was stopped:\n{}",
                self.ports.client,
                self.log()
            ),
        }
    }

    /// The server's log file and console output, for a failing test to print.
    pub fn log(&self) -> String {
        let file = fs::read_to_string(self.dir.path().join("inspircd.log")).unwrap_or_default();
        let console = self
            .child
            .as_ref()
            .map(ManagedChild::output_text)
            .unwrap_or_default();
        format!(
            "--- inspircd.log ---\n{file}\n--- console ---\n{}{console}",
            self.earlier_output
        )
    }

    /// Starts the process on the current config and waits until its listeners are set up.
    async fn spawn(&mut self) -> Result<Bind> {
        let mut command = Command::new(BINARY);
        command
            .arg("--nofork")
            .arg("--config")
            .arg(config_path(self.dir.path()))
            .current_dir(self.dir.path());
        if running_as_root() {
            command.arg("--runasroot");
        }
        let mut child = ManagedChild::spawn("inspircd", command)?;
        child
            .wait_line(0, START_DEADLINE, |l| l.contains(READY_LINE))
            .await?;
        let port_taken = child.output_text().contains(BIND_FAILED);
        self.child = Some(child);
        Ok(if port_taken {
            Bind::PortTaken
        } else {
            Bind::Ok
        })
    }
}

/// Whether a started server got all its ports.
enum Bind {
    Ok,
    PortTaken,
}

fn config_path(dir: &Path) -> PathBuf {
    dir.join("inspircd.conf")
}

/// The whole InspIRCd config for one instance. Each tag that matters says why it is there.
fn render_config(
    config: &InspircdConfig,
    dir: &Path,
    ports: Ports,
    link_password: Option<&str>,
) -> String {
    let dir = dir.display();
    let mut c = String::new();
    // `write!` into a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        c,
        r#"<server name="{SERVER_NAME}" description="Rete test server" id="1RT" network="{NETWORK_NAME}">"#
    );
    let _ = writeln!(
        c,
        r#"<admin name="Rete tests" nick="admin" email="admin@{SERVER_NAME}">"#
    );
    let _ = writeln!(
        c,
        r#"<bind address="127.0.0.1" port="{}" type="clients">"#,
        ports.client
    );
    if let Some(tls_port) = ports.tls {
        // Debian builds InspIRCd with GnuTLS only; no DH parameter file is needed.
        let _ = writeln!(c, r#"<module name="ssl_gnutls">"#);
        let _ = writeln!(
            c,
            r#"<sslprofile name="Clients" provider="gnutls" certfile="{dir}/cert.pem" keyfile="{dir}/key.pem" requestclientcert="no">"#
        );
        let _ = writeln!(
            c,
            r#"<bind address="127.0.0.1" port="{tls_port}" type="clients" sslprofile="Clients">"#
        );
    }
    if let (Some(link_port), Some(password)) = (ports.link, link_password) {
        let _ = writeln!(
            c,
            r#"<bind address="127.0.0.1" port="{link_port}" type="servers">"#
        );
        let _ = writeln!(
            c,
            r#"<link name="{SERVICES_NAME}" ipaddr="127.0.0.1" port="{link_port}" allowmask="127.0.0.0/8" sendpass="{password}" recvpass="{password}">"#
        );
        let _ = writeln!(c, r#"<uline server="{SERVICES_NAME}" silent="yes">"#);
    }
    // One class for everyone: no DNS/ident lookups (fast connect), limits high enough that
    // bots and fast tests are never throttled, fakelagged or killed for flooding.
    let password = config
        .password
        .as_deref()
        .map(|p| format!(r#" password="{p}""#))
        .unwrap_or_default();
    let _ = writeln!(
        c,
        r#"<connect name="main" allow="*"{password} timeout="30" pingfreq="2m" hardsendq="16M" softsendq="8M" recvq="1M" threshold="1000000" commandrate="100000000" fakelag="no" localmax="100000" globalmax="100000" maxconnwarn="no" resolvehostnames="no" useident="no" limit="100000" maxchans="1000">"#
    );
    let _ = writeln!(c, r#"<pid file="{dir}/inspircd.pid">"#);
    let (types, level) = if config.raw_io_log {
        ("*", "rawio")
    } else {
        ("* -USERINPUT -USEROUTPUT", "default")
    };
    // flush="1": the log is read while the server runs (failure output, raw I/O checks).
    let _ = writeln!(
        c,
        r#"<log method="file" type="{types}" level="{level}" flush="1" target="{dir}/inspircd.log">"#
    );
    let _ = writeln!(c, r#"<files motd="{dir}/motd.txt">"#);
    for module in MODULES {
        let _ = writeln!(c, r#"<module name="{module}">"#);
    }
    // m_sasl refuses to load without a target; SASL is offered only while it is linked.
    let _ = writeln!(c, r#"<sasl target="{SERVICES_NAME}">"#);
    // Allows `+H` up to 100 lines for join replay tests.
    let _ = writeln!(c, r#"<chanhistory maxlines="100">"#);
    for line in &config.extra {
        let _ = writeln!(c, "{line}");
    }
    c
}
