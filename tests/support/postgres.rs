//! A real PostgreSQL server (Debian's package) of the test's own: `initdb` into a temp dir,
//! the server in the foreground on a free loopback port, its socket in that dir too, so
//! nothing is shared with a system cluster.
//!
//! PostgreSQL refuses to run as root, so as root `initdb` and the server run as `nobody`
//! through `setpriv` (as ZNC does), with the temp dir handed to that user. Clients connect
//! over TCP on loopback as the superuser [`SUPERUSER`], with `trust` authentication, so
//! any local user can: the tests' rete-cloud runs as root or as `nobody` alike.
//!
//! The server runs with `fsync=off`: a test kills service nodes, never the database, and
//! the cluster is thrown away at the end. Benchmarks that report write rates start it with
//! [`PostgresConfig::durable`].
//!
//! Dropping it stops the server with SIGQUIT (PostgreSQL's immediate shutdown) and waits for
//! it: each of the server's processes is a session of its own (`setsid`), out of reach of
//! the harness's process-group kill, so only the postmaster can end them all at once.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tempfile::TempDir;

use super::ports::free_port;
use super::process::{running_as_root, ManagedChild};

/// The superuser `initdb` creates, whom the URLs name.
pub const SUPERUSER: &str = "rete";
const NOBODY: u32 = 65534;
const READY_LINE: &str = "database system is ready to accept connections";
const START_DEADLINE: Duration = Duration::from_secs(30);

/// How the server is started.
#[derive(Clone, Debug, Default)]
pub struct PostgresConfig {
    durable: bool,
    settings: Vec<(String, String)>,
}

impl PostgresConfig {
    /// Defaults for tests (`fsync=off`).
    pub fn new() -> Self {
        Self::default()
    }

    /// PostgreSQL's own durability defaults (`fsync=on`), for benchmarks.
    pub fn durable(mut self) -> Self {
        self.durable = true;
        self
    }

    /// One more `-c name=value` for the server.
    pub fn setting(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A running PostgreSQL cluster. Dropping it stops the server (see the module doc) and removes
/// its temp dir.
pub struct Postgres {
    dir: TempDir,
    port: u16,
    child: Option<ManagedChild>,
    next_database: u32,
}

/// The directory of the newest PostgreSQL installed (`/usr/lib/postgresql/N/bin`).
pub fn bin_dir() -> Result<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .context("PostgreSQL is not installed (/usr/lib/postgresql): .ci/install-deps installs it")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => Ok(bin),
        None => bail!("no PostgreSQL server under /usr/lib/postgresql"),
    }
}

/// `program` run as `nobody` when the tests run as root.
fn as_server_user(program: &Path) -> Command {
    if running_as_root() {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl Postgres {
    /// Creates a cluster in a temp dir, starts it and returns once it accepts connections.
    pub async fn start(config: PostgresConfig) -> Result<Self> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("rete-postgres-")
            .tempdir()
            .context("creating the PostgreSQL temp dir")?;
        if running_as_root() {
            std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY))
                .context("handing the PostgreSQL dir to nobody")?;
        }
        let data = dir.path().join("data");
        let out = as_server_user(&bin.join("initdb"))
            .arg("--pgdata")
            .arg(&data)
            .args([
                "--username",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .env("HOME", dir.path())
            .current_dir(dir.path())
            .output()
            .context("running initdb")?;
        if !out.status.success() {
            bail!(
                "initdb failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut pg = Self {
            dir,
            port: 0,
            child: None,
            next_database: 0,
        };
        pg.spawn(&bin, &config).await?;
        Ok(pg)
    }

    async fn spawn(&mut self, bin: &Path, config: &PostgresConfig) -> Result<()> {
        // A port taken between the probe and the bind makes the server exit: try another.
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port()?;
            let mut command = as_server_user(&bin.join("postgres"));
            command
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .arg("-p")
                .arg(port.to_string())
                .arg("-k")
                .arg(self.dir.path())
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "logging_collector=off"])
                .args(["-c", "max_connections=200"])
                .env("HOME", self.dir.path())
                .current_dir(self.dir.path());
            if !config.durable {
                command.args(["-c", "fsync=off", "-c", "full_page_writes=off"]);
            }
            for (name, value) in &config.settings {
                command.arg("-c").arg(format!("{name}={value}"));
            }
            let mut child = ManagedChild::spawn("postgres", command)?;
            match child
                .wait_line(0, START_DEADLINE, |l| l.contains(READY_LINE))
                .await
            {
                Ok(_) => {
                    self.port = port;
                    self.child = Some(child);
                    return Ok(());
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("PostgreSQL did not start")))
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgresql://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a new empty database and returns its URL.
    pub fn create_database(&mut self) -> Result<String> {
        self.next_database += 1;
        let name = format!("rete{}", self.next_database);
        self.psql("postgres", &format!("CREATE DATABASE {name}"))?;
        Ok(self.url(&name))
    }

    /// Runs `sql` in database `database` with psql and returns what it printed (unaligned,
    /// tuples only).
    pub fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let out = Command::new(bin_dir()?.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url(database))
            .arg("-c")
            .arg(sql)
            .output()
            .context("running psql")?;
        if !out.status.success() {
            bail!(
                "psql failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    }

    /// The server's process id (for its memory).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(ManagedChild::pid)
    }

    /// The server's log, for a failing test to print.
    pub fn log(&self) -> String {
        let out = self
            .child
            .as_ref()
            .map(ManagedChild::output_text)
            .unwrap_or_default();
        format!("--- postgres ---\n{out}")
    }
}

/// How long a stopping server may take before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(10);

impl Drop for Postgres {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let Ok(pid) = i32::try_from(child.pid()) else {
            return;
        };
        // SAFETY: kill(2) with a pid this harness spawned and still holds.
        unsafe {
            libc::kill(pid, libc::SIGQUIT);
        }
        let deadline = std::time::Instant::now() + STOP_DEADLINE;
        while child.is_running() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Killed and reaped if still running.
        drop(child);
    }
}
