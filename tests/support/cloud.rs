//! `rete-cloud` as a real process for the client tests: the binary (built
//! once, from the `rete-cloud` crate), its CLI, a running service with its
//! listening address, a world of InspIRCd + service + one user with one
//! network and a bot in its channel, and a token store in memory that
//! records every store.

use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::process::ManagedChild;
use super::{Bot, Inspircd, InspircdConfig};
use rete_cloud_protocol::Token;
use rete_transports::{CloudConfig, CloudTokenStore, TokenStoreError, TokenStored};

/// How long a start-up step may take.
pub const WAIT: Duration = Duration::from_secs(15);

/// The `rete-cloud` binary, built once per test binary.
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let built = build(false);
        let why = built.as_ref().err().map(|e| format!("{e:#}"));
        assert!(why.is_none(), "{}", why.unwrap_or_default());
        built.unwrap_or_default()
    })
    .clone()
}

/// The release `rete-cloud` binary, built (a no-op when up to date) next to
/// the running executable's target directory: a bench measures the service in
/// release whether its harness was built by `cargo bench` or `cargo test`.
pub fn release_binary() -> Result<PathBuf> {
    build(true)
}

/// Builds `rete-cloud` (the service's crate, `actors/cloud`) in the target
/// directory the running executable sits in, and returns its path.
fn build(release: bool) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/deps/<exe>, or target/<profile>/<exe> for a bench run.
    let target = exe
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .ok_or_else(|| anyhow!("no target dir above {}", exe.display()))?
        .to_path_buf();
    let mut args = vec!["build", "--quiet"];
    if release {
        args.push("--release");
    }
    args.extend(["-p", "rete-cloud", "--bin", "rete-cloud"]);
    let status = super::process::cargo()
        .args(&args)
        // This crate's folder is inside the workspace, so cargo finds the workspace from it.
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()?;
    if !status.success() {
        bail!("building rete-cloud failed");
    }
    let profile = if release { "release" } else { "debug" };
    Ok(target.join(profile).join("rete-cloud"))
}

/// Runs `rete-cloud <args> --db <db>` and returns its trimmed stdout.
pub fn cli(db: &Path, args: &[&str]) -> Result<String> {
    cli_with(&binary(), db, args)
}

/// Adds alice's network `local` (nick alice, channel #rete) on the IRC
/// server at `server` (HOST:PORT); returns the stream id `network add`
/// printed.
pub fn add_local_network(db: &Path, server: &str) -> Result<String> {
    let added = add_network(&binary(), db, "local", server, "alice", "#rete")?;
    let stream = added.rsplit(' ').next().unwrap_or_default();
    Ok(stream.to_owned())
}

/// `rete-cloud network add alice <name> --server <server> --nick <nick>
/// --channel <channel>` with the binary at `bin`; returns what it printed.
pub fn add_network(
    bin: &Path,
    db: &Path,
    name: &str,
    server: &str,
    nick: &str,
    channel: &str,
) -> Result<String> {
    let args = [
        "network",
        "add",
        "alice",
        name,
        "--server",
        server,
        "--nick",
        nick,
        "--channel",
        channel,
    ];
    cli_with(bin, db, &args)
}

/// [`cli`] with the binary at `bin`.
pub fn cli_with(bin: &Path, db: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(bin).args(args).arg("--db").arg(db).output()?;
    if !out.status.success() {
        bail!(
            "rete-cloud {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// A running service.
pub struct Service {
    /// The process (stopped when dropped).
    pub child: ManagedChild,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl Service {
    /// Starts `rete-cloud serve` on a free loopback port.
    pub async fn start(db: &Path, extra: &[&str]) -> Result<Service> {
        Service::start_with(&binary(), db, extra).await
    }

    /// [`Service::start`] with the binary at `bin`.
    pub async fn start_with(bin: &Path, db: &Path, extra: &[&str]) -> Result<Service> {
        Service::start_listening(bin, db, "127.0.0.1:0", extra).await
    }

    /// Starts the service again where it listened before (`addr`), as a
    /// restarted service is found by the clients that had its URL.
    pub async fn start_at(db: &Path, addr: &str, extra: &[&str]) -> Result<Service> {
        Service::start_listening(&binary(), db, addr, extra).await
    }

    async fn start_listening(
        bin: &Path,
        db: &Path,
        listen: &str,
        extra: &[&str],
    ) -> Result<Service> {
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg("--db")
            .arg(db)
            .args(["--listen", listen])
            .args(extra);
        let mut child = ManagedChild::spawn("rete-cloud", cmd)?;
        let i = child
            .wait_line(0, WAIT, |l| l.contains("rete-cloud listening on "))
            .await?;
        let line = child
            .output_text()
            .lines()
            .nth(i)
            .unwrap_or_default()
            .to_owned();
        let addr = line
            .rsplit("://")
            .next()
            .ok_or_else(|| anyhow!("no address in {line}"))?
            .to_owned();
        Ok(Service { child, addr })
    }

    /// The WebSocket URL.
    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }
}

/// InspIRCd, the service with user `alice` and her network `local` (nick
/// alice, in #rete), and bob in #rete.
pub struct CloudWorld {
    /// The IRC server.
    pub ircd: Inspircd,
    /// Holds the database.
    pub dir: tempfile::TempDir,
    /// The service's database.
    pub db: PathBuf,
    /// The service.
    pub service: Service,
    /// Alice's first token, as `user add` printed it.
    pub token: String,
    /// Bob, in #rete.
    pub bob: Bot,
}

impl CloudWorld {
    /// Starts it all; returns once the service's session joined #rete.
    pub async fn start(extra: &[&str]) -> Result<CloudWorld> {
        let ircd = Inspircd::start(InspircdConfig::new()).await?;
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("cloud.db");
        let token = cli(&db, &["user", "add", "alice"])?;
        let server = format!("127.0.0.1:{}", ircd.port());
        add_local_network(&db, &server)?;
        let mut bob = Bot::connect(ircd.port(), "bob").await?;
        bob.join("#rete").await?;
        let service = Service::start(&db, extra).await?;
        bob.wait_for(|l| l.contains("JOIN") && l.starts_with(":alice!"), WAIT)
            .await?;
        Ok(CloudWorld {
            ircd,
            dir,
            db,
            service,
            token,
            bob,
        })
    }
}

/// A token store in memory that records every token stored, in order.
#[derive(Default)]
pub struct MemoryTokens {
    /// The token held and its generation (None: set by hand).
    current: Mutex<Option<String>>,
    generation: Mutex<Option<u64>>,
    stored: Mutex<Vec<String>>,
    /// When set, every store fails.
    pub fail: std::sync::atomic::AtomicBool,
    /// Stores asked for, failed ones included.
    attempts: std::sync::atomic::AtomicUsize,
    /// Called after each successful store (a test's journal).
    on_store: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl MemoryTokens {
    /// A store holding `token`.
    pub fn holding(token: &str) -> Arc<MemoryTokens> {
        let s = MemoryTokens::default();
        *s.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.to_owned());
        Arc::new(s)
    }

    /// Calls `f` after each successful store.
    pub fn on_store(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.on_store.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// The token held now.
    pub fn current(&self) -> Option<String> {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Forgets the token, as a person deleting it from the secrets file.
    pub fn forget(&self) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// How many stores were asked for, failed ones included.
    pub fn attempts(&self) -> usize {
        self.attempts.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every token stored so far.
    pub fn stored(&self) -> Vec<String> {
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl CloudTokenStore for MemoryTokens {
    fn load(&self) -> Result<Option<Token>, TokenStoreError> {
        Ok(self.current().map(Token::new))
    }

    fn store(&self, token: &Token, generation: u64) -> Result<TokenStored, TokenStoreError> {
        self.attempts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(TokenStoreError("the disk is full".into()));
        }
        // As the secrets file does: never an earlier generation over a later,
        // and the same store repeated holds.
        {
            let mut held = self.generation.lock().unwrap_or_else(|p| p.into_inner());
            if *held == Some(generation) && self.current().as_deref() == Some(token.expose()) {
                return Ok(TokenStored::Written);
            }
            if held.is_some_and(|g| g >= generation) {
                return Ok(TokenStored::LaterKept);
            }
            *held = Some(generation);
        }
        let t = token.expose().to_owned();
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(t.clone());
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(t);
        if let Some(f) = self
            .on_store
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            f();
        }
        Ok(TokenStored::Written)
    }
}

/// A ReteCloud transport to `url`, showing network `local`.
pub fn transport(url: &str, tokens: Arc<dyn CloudTokenStore>) -> rete_transports::Transport {
    rete_transports::Transport::ReteCloud(CloudConfig {
        url: url.to_owned(),
        network: "local".to_owned(),
        tls_fingerprint: None,
        connect_timeout: Duration::from_secs(5),
        token_store: tokens,
        resume_store: None,
    })
}
