//! Drives `reterm` in a real pseudo-terminal: what it draws is fed to a `vt100` terminal
//! emulator, so tests read the screen as a person sees it, and keys are written as a terminal
//! sends them. Every wait is on the screen changing, under a deadline; nothing sleeps.

use std::io::{Read as _, Write as _};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use tokio::sync::watch;
use tokio::time::Instant;

/// What the emulated terminal noticed besides the screen: bells and the window title.
#[derive(Default)]
pub struct Noticed {
    /// How many times the bell rang.
    pub bells: usize,
    /// The last window title set.
    pub title: String,
}

impl vt100::Callbacks for Noticed {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.bells += 1;
    }

    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title).into_owned();
    }
}

type Emulator = Arc<Mutex<vt100::Parser<Noticed>>>;

/// reterm running in a pty of a given size.
pub struct PtyReterm {
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn std::io::Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    emulator: Emulator,
    /// Bumped by the reader thread after each chunk of output.
    changed: watch::Receiver<u64>,
}

fn size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

/// The status bar in full screen, the row just above the input line: the second row of
/// `rows` (a [`PtyReterm::rows`]) from the bottom.
pub fn status_row(rows: &[String]) -> &str {
    rows.get(rows.len().saturating_sub(2))
        .map_or("", |s| s.as_str())
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n.max(1)).unwrap_or(NonZeroU16::MIN)
}

impl PtyReterm {
    /// Starts the binary `reterm` (the calling test's `env!("CARGO_BIN_EXE_reterm")`) with
    /// `HOME=home` in a `rows`×`cols` terminal.
    pub fn spawn(reterm: &str, home: &Path, args: &[&str], rows: u16, cols: u16) -> Result<Self> {
        let mut cmd = CommandBuilder::new(reterm);
        cmd.args(args);
        Self::spawn_command(cmd, home, rows, cols)
    }

    /// The same as the unprivileged user (when the tests run as root), so its control
    /// server can serve; `home` must be that user's (`support::unprivileged::home`).
    pub fn spawn_unprivileged(
        reterm: &str,
        home: &Path,
        args: &[&str],
        rows: u16,
        cols: u16,
    ) -> Result<Self> {
        let binary = super::unprivileged::reterm_binary(reterm)?;
        let prefix = super::unprivileged::setpriv_prefix();
        let mut cmd = match prefix.split_first() {
            Some((program, rest)) => {
                let mut cmd = CommandBuilder::new(program);
                cmd.args(rest);
                cmd.arg(&binary);
                cmd
            }
            None => CommandBuilder::new(&binary),
        };
        cmd.args(args);
        Self::spawn_command(cmd, home, rows, cols)
    }

    fn spawn_command(mut cmd: CommandBuilder, home: &Path, rows: u16, cols: u16) -> Result<Self> {
        let pair = native_pty_system()
            .openpty(size(rows, cols))
            .map_err(|e| anyhow!("openpty: {e}"))?;
        cmd.env("HOME", home);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("RETERM_LOG");
        cmd.cwd(home);
        let child = pair
            .slave
            .spawn_command(cmd)
            .map_err(|e| anyhow!("spawning reterm in a pty: {e}"))?;
        drop(pair.slave);
        let mut reader = pair
            .master
            .try_clone_reader()
            .map_err(|e| anyhow!("pty reader: {e}"))?;
        let writer = pair
            .master
            .take_writer()
            .map_err(|e| anyhow!("pty writer: {e}"))?;
        let emulator: Emulator = Arc::new(Mutex::new(vt100::Parser::new_with_callbacks(
            nonzero(rows),
            nonzero(cols),
            0,
            Noticed::default(),
        )));
        let (tx, changed) = watch::channel(0u64);
        let feed = Arc::clone(&emulator);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            let mut n = 0u64;
            while let Ok(len) = reader.read(&mut buf) {
                if len == 0 {
                    break;
                }
                feed.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .process(&buf[..len]);
                n += 1;
                if tx.send(n).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            master: pair.master,
            writer,
            child,
            emulator,
            changed,
        })
    }

    /// Writes bytes as typed keys.
    pub fn keys(&mut self, bytes: &str) -> Result<()> {
        self.writer
            .write_all(bytes.as_bytes())
            .context("writing to the pty")?;
        self.writer.flush()?;
        Ok(())
    }

    /// Types `text` and Enter.
    pub fn line(&mut self, text: &str) -> Result<()> {
        self.keys(text)?;
        self.keys("\r")
    }

    /// Resizes the terminal (reterm gets SIGWINCH) and the emulator with it.
    pub fn resize(&mut self, rows: u16, cols: u16) -> Result<()> {
        self.emulator
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_size(nonzero(rows), nonzero(cols));
        self.master
            .resize(size(rows, cols))
            .map_err(|e| anyhow!("resizing the pty: {e}"))
    }

    /// The screen's rows as text (trailing spaces trimmed).
    pub fn rows(&self) -> Vec<String> {
        let parser = self.emulator.lock().unwrap_or_else(|p| p.into_inner());
        let (_, cols) = parser.screen().size();
        parser
            .screen()
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_owned())
            .collect()
    }

    /// Runs `f` on the emulator's screen and what it noticed.
    pub fn inspect<R>(&self, f: impl FnOnce(&vt100::Screen, &Noticed) -> R) -> R {
        let parser = self.emulator.lock().unwrap_or_else(|p| p.into_inner());
        f(parser.screen(), parser.callbacks())
    }

    /// Waits until `pred` holds for the screen's rows; returns them.
    pub async fn wait_screen(
        &mut self,
        what: &str,
        mut pred: impl FnMut(&[String]) -> bool,
        timeout: Duration,
    ) -> Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            // Mark the current output seen before reading the screen, so a change after the
            // read is not missed.
            self.changed.borrow_and_update();
            let rows = self.rows();
            if pred(&rows) {
                return Ok(rows);
            }
            match tokio::time::timeout_at(deadline, self.changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => bail!(
                    "reterm's terminal closed waiting for {what}; screen:\n{}",
                    rows.join("\n")
                ),
                Err(_) => bail!(
                    "no {what} on screen within {timeout:?}; screen:\n{}",
                    rows.join("\n")
                ),
            }
        }
    }

    /// Waits until some row contains `text`.
    pub async fn wait_text(&mut self, text: &str, timeout: Duration) -> Result<Vec<String>> {
        self.wait_screen(text, |rows| rows.iter().any(|r| r.contains(text)), timeout)
            .await
    }

    /// Feeds `bytes` to the emulated terminal as if reterm had written them: stray cells a
    /// test expects a repaint (Ctrl-L) to clear.
    pub fn scribble(&self, bytes: &str) {
        self.emulator
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .process(bytes.as_bytes());
    }

    /// Sends reterm the signal `name` (`INT`, `TERM`, `HUP`), as a service manager or a
    /// closing terminal would.
    pub fn signal(&self, name: &str) -> Result<()> {
        let pid = self
            .child
            .process_id()
            .context("reterm has no process id")?;
        let status = std::process::Command::new("kill")
            .args(["-s", name, &pid.to_string()])
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -s {name} {pid} failed: {status}");
        }
        Ok(())
    }

    /// Whether reterm still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (polling the child under a deadline, as a pty child gives no async exit) for
    /// reterm to exit; returns whether it exited successfully.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().context("waiting for reterm")? {
                return Ok(status.success());
            }
            if Instant::now() >= deadline {
                bail!(
                    "reterm still runs after {timeout:?}; screen:\n{}",
                    self.rows().join("\n")
                );
            }
            // The child's exit closes the pty, which ends the reader and its watch: then the
            // child is gone or about to be, and a blocking wait is short.
            match tokio::time::timeout_at(deadline, self.changed.changed()).await {
                Ok(Err(_)) => {
                    let status = self.child.wait().context("waiting for reterm")?;
                    return Ok(status.success());
                }
                _ => continue,
            }
        }
    }
}

impl Drop for PtyReterm {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
