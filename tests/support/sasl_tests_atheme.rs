//! Atheme with certificate fingerprint support: SaslServ's EXTERNAL mechanism and NickServ's
//! `CERT` command, which the shared [`super::atheme::Atheme`] does not load. Separate because
//! that harness's module list is fixed; otherwise it is configured the same way.

use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

use super::bot::{Bot, DEFAULT_TIMEOUT};
use super::inspircd::{Inspircd, SERVER_NAME, SERVICES_NAME};
use super::msg::Msg;
use super::process::{running_as_root, ManagedChild};

const BINARY: &str = "/usr/bin/atheme-services";
/// Printed once InspIRCd acknowledged the burst: SASL is offered from then on.
const SYNCED_LINE: &str = "finished synching with uplink";
const LINK_DEADLINE: Duration = Duration::from_secs(10);
/// The unprivileged user Atheme runs as when the tests run as root (Atheme refuses root).
const NOBODY: u32 = 65534;

/// The harness's modules plus `saslserv/external` (SASL EXTERNAL) and `nickserv/cert`
/// (`CERT ADD`, which ties a fingerprint to an account).
const MODULES: &[&str] = &[
    "protocol/inspircd",
    "backend/opensex",
    "crypto/pbkdf2v2",
    "nickserv/main",
    "nickserv/help",
    "nickserv/register",
    "nickserv/identify",
    "nickserv/info",
    "nickserv/cert",
    "saslserv/main",
    "saslserv/plain",
    "saslserv/external",
];

/// A running Atheme with CertFP support. Dropping it kills the process and removes its dir.
pub struct CertfpAtheme {
    dir: TempDir,
    irc_port: u16,
    child: ManagedChild,
}

impl CertfpAtheme {
    /// Starts Atheme linked to `ircd` (configured with `.services()`) and waits for the sync.
    pub async fn start(ircd: &Inspircd) -> Result<Self> {
        let link = ircd
            .services_link()
            .ok_or_else(|| anyhow!("the InspIRCd config lacks .services()"))?;
        let dir = tempfile::Builder::new()
            .prefix("rete-atheme-certfp-")
            .tempdir()
            .context("creating the Atheme temp dir")?;
        let conf = dir.path().join("atheme.conf");
        fs::write(&conf, render_config(link.port, &link.password))?;
        let as_root = running_as_root();
        if as_root {
            for path in [dir.path(), conf.as_path()] {
                chown(path, Some(NOBODY), Some(NOBODY))
                    .with_context(|| format!("chown {}", path.display()))?;
            }
            fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))?;
        }
        let mut command = if as_root {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                BINARY,
            ]);
            c
        } else {
            Command::new(BINARY)
        };
        command
            .arg("-n")
            .arg("-c")
            .arg(&conf)
            .arg("-D")
            .arg(dir.path())
            .arg("-l")
            .arg(log_path(dir.path()))
            .arg("-p")
            .arg(dir.path().join("atheme.pid"))
            .current_dir(dir.path());
        let mut child = ManagedChild::spawn("atheme", command)?;
        child
            .wait_line(0, LINK_DEADLINE, |l| l.contains(SYNCED_LINE))
            .await?;
        Ok(Self {
            dir,
            irc_port: ircd.port(),
            child,
        })
    }

    /// Registers `account` (also the bot's nick) with `password` and adds `fingerprint` to its
    /// certificate list, so a client presenting that certificate can log in with EXTERNAL.
    pub async fn register_with_cert(
        &self,
        account: &str,
        password: &str,
        fingerprint: &str,
    ) -> Result<()> {
        let mut bot = Bot::connect(self.irc_port, account).await?;
        bot.privmsg(
            "NickServ",
            &format!("REGISTER {password} {account}@rete.example"),
        )
        .await?;
        let reply = next_nickserv_notice(&mut bot).await?;
        if !reply.contains("is now registered") {
            bail!("NickServ refused to register {account}: {reply}");
        }
        // Registering also identifies the bot, which CERT ADD requires.
        bot.privmsg("NickServ", &format!("CERT ADD {fingerprint}"))
            .await?;
        let reply = next_nickserv_notice(&mut bot).await?;
        if !reply.contains("Added fingerprint") {
            bail!("NickServ refused CERT ADD for {account}: {reply}");
        }
        bot.quit().await;
        Ok(())
    }

    /// Atheme's log file and console output, for a failing test to print.
    pub fn log(&self) -> String {
        let file = fs::read_to_string(log_path(self.dir.path())).unwrap_or_default();
        format!(
            "--- atheme.log ---\n{file}\n--- console ---\n{}",
            self.child.output_text()
        )
    }
}

async fn next_nickserv_notice(bot: &mut Bot) -> Result<String> {
    let line = bot
        .wait_for(
            |l| {
                let m = Msg::parse(l);
                m.source_nick() == Some("NickServ") && m.command == "NOTICE"
            },
            DEFAULT_TIMEOUT,
        )
        .await?;
    Ok(Msg::parse(&line).param(1).to_owned())
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("atheme.log")
}

fn render_config(link_port: u16, link_password: &str) -> String {
    let mut c = String::new();
    // `write!` into a String cannot fail; the results are ignored for that reason.
    for module in MODULES {
        let _ = writeln!(c, r#"loadmodule "modules/{module}";"#);
    }
    let _ = writeln!(
        c,
        r#"serverinfo {{
    name = "{SERVICES_NAME}";
    desc = "Rete test services";
    numeric = "00A";
    recontime = 1;
    netname = "ReteTest";
    hidehostsuffix = "users.test";
    adminname = "Rete tests";
    adminemail = "admin@{SERVICES_NAME}";
    registeremail = "noreply@{SERVICES_NAME}";
    loglevel = {{ error; info; admin; network; }};
    maxlogins = 50;
    maxusers = 1000;
    mdlimit = 30;
    emaillimit = 1000;
    emailtime = 1;
    auth = none;
    casemapping = rfc1459;
}};
uplink "{SERVER_NAME}" {{
    host = "127.0.0.1";
    port = {link_port};
    send_password = "{link_password}";
    receive_password = "{link_password}";
}};
nickserv {{ nick = "NickServ"; user = "NickServ"; host = "{SERVICES_NAME}"; real = "Nickname Services"; }};
saslserv {{ nick = "SaslServ"; user = "SaslServ"; host = "{SERVICES_NAME}"; real = "SASL Authentication Agent"; }};
general {{
    flood_msgs = 10000;
    flood_time = 1;
    ratelimit_uses = 10000;
    ratelimit_period = 1;
    commit_interval = 5;
    default_clone_allowed = 100000;
    default_clone_warn = 100000;
    uplink_sendq_limit = 1048576;
    language = "en";
}};"#
    );
    c
}
