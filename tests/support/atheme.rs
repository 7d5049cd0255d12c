//! Atheme services (NickServ, ChanServ, SaslServ) linked to a test InspIRCd, so account, SASL
//! and account-tag behaviour can be tested against real services.

use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

use super::bot::{Bot, DEFAULT_TIMEOUT};
use super::inspircd::{Inspircd, SERVER_NAME, SERVICES_NAME};
use super::msg::Msg;
use super::process::{running_as_root, ManagedChild};

const BINARY: &str = "/usr/bin/atheme-services";
/// Atheme prints this (on stderr, unbuffered) once its burst is acknowledged by InspIRCd:
/// from then on SASL is offered and NickServ answers.
const SYNCED_LINE: &str = "finished synching with uplink";
const LINK_DEADLINE: Duration = Duration::from_secs(10);
/// The unprivileged user Atheme runs as when the tests run as root (Atheme refuses root).
const NOBODY: u32 = 65534;

/// A running Atheme. Dropping it kills the process and removes its temp dir.
pub struct Atheme {
    dir: TempDir,
    irc_port: u16,
    child: ManagedChild,
    synced_at: usize,
}

impl Atheme {
    /// Starts Atheme linked to `ircd` (which must have been configured with
    /// [`super::inspircd::InspircdConfig::services`]) and waits until the link is synced.
    pub async fn start(ircd: &Inspircd) -> Result<Self> {
        Self::start_with_modules(ircd, &[]).await
    }

    /// [`Atheme::start`] with more Atheme modules loaded, e.g. `saslserv/external` and
    /// `nickserv/cert` for SASL EXTERNAL.
    pub async fn start_with_modules(ircd: &Inspircd, extra_modules: &[&str]) -> Result<Self> {
        let link = ircd
            .services_link()
            .ok_or_else(|| anyhow!("the InspIRCd config lacks .services()"))?;
        let dir = tempfile::Builder::new()
            .prefix("rete-atheme-")
            .tempdir()
            .context("creating the Atheme temp dir")?;
        let conf = dir.path().join("atheme.conf");
        fs::write(
            &conf,
            render_config(link.port, &link.password, extra_modules),
        )?;
        let as_root = running_as_root();
        if as_root {
            // Atheme drops to `nobody`, which must be able to create its db and log here.
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
        let child = ManagedChild::spawn("atheme", command)?;
        let mut atheme = Self {
            dir,
            irc_port: ircd.port(),
            child,
            synced_at: 0,
        };
        atheme.wait_linked().await?;
        Ok(atheme)
    }

    /// Waits until Atheme has (re)synced with InspIRCd since the last time this returned:
    /// call it after [`Inspircd::restart`] before relying on services again.
    pub async fn wait_linked(&mut self) -> Result<()> {
        let from = self.synced_at;
        let at = self
            .child
            .wait_line(from, LINK_DEADLINE, |l| l.contains(SYNCED_LINE))
            .await?;
        self.synced_at = at + 1;
        Ok(())
    }

    /// Registers a services account named `account` (also its nick) with `password`, using a
    /// throw-away bot that sends `NickServ REGISTER`. Email confirmation is off (`auth = none`),
    /// so the account can authenticate (SASL PLAIN, `NickServ IDENTIFY`) right away.
    pub async fn register_account(&self, account: &str, password: &str) -> Result<()> {
        let mut bot = Bot::connect(self.irc_port, account).await?;
        bot.privmsg(
            "NickServ",
            &format!("REGISTER {password} {account}@rete.example"),
        )
        .await?;
        let reply = bot
            .wait_for(
                |l| l.starts_with(":NickServ!") && l.contains(" NOTICE "),
                DEFAULT_TIMEOUT,
            )
            .await?;
        if !reply.contains("is now registered") {
            bail!("NickServ refused to register {account}: {reply}");
        }
        bot.quit().await;
        Ok(())
    }

    /// Registers `account` (also the bot's nick) with `password` and adds `fingerprint` to its
    /// certificate list (needs `nickserv/cert`), so a client presenting that certificate can
    /// log in with SASL EXTERNAL (needs `saslserv/external`).
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

fn log_path(dir: &Path) -> std::path::PathBuf {
    dir.join("atheme.log")
}

/// The services pseudo-clients Atheme should introduce: (config block, nick, description).
const SERVICES: &[(&str, &str, &str)] = &[
    ("nickserv", "NickServ", "Nickname Services"),
    ("chanserv", "ChanServ", "Channel Services"),
    ("saslserv", "SaslServ", "SASL Authentication Agent"),
];

/// The Atheme modules the tests need: the InspIRCd protocol, a flat-file db, and the NickServ,
/// ChanServ and SaslServ commands used to register accounts/channels and authenticate.
const MODULES: &[&str] = &[
    "protocol/inspircd",
    "backend/opensex",
    "crypto/pbkdf2v2",
    "nickserv/main",
    "nickserv/help",
    "nickserv/register",
    "nickserv/identify",
    "nickserv/info",
    "nickserv/logout",
    "chanserv/main",
    "chanserv/help",
    "chanserv/register",
    "chanserv/op",
    "chanserv/flags",
    "saslserv/main",
    "saslserv/plain",
];

fn render_config(link_port: u16, link_password: &str, extra_modules: &[&str]) -> String {
    let mut c = String::new();
    // `write!` into a String cannot fail; the results are ignored for that reason.
    for module in MODULES.iter().chain(extra_modules) {
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
}};"#
    );
    for (block, nick, real) in SERVICES {
        let _ = writeln!(
            c,
            r#"{block} {{ nick = "{nick}"; user = "{nick}"; host = "{SERVICES_NAME}"; real = "{real}"; }};"#
        );
    }
    // Flood and rate limits high: tests register accounts and message services quickly.
    let _ = writeln!(
        c,
        r#"general {{
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
