//! Drives the `reterm` binary as a real process: commands go to its stdin, and every stdout line
//! is collected by a reader task so tests wait on what reterm prints instead of sleeping.
//!
//! reterm prints a row as `[network] buffer HH:MM:SS body` (`(server)` for the server buffer);
//! [`parse_row`] splits such a line so predicates can match its parts exactly.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How many recent lines an error message shows.
const TAIL: usize = 40;

/// A `reterm` command running `reterm` (the binary cargo built for the calling test:
/// `env!("CARGO_BIN_EXE_reterm")`, which a library cannot name) with `HOME` (and the working
/// directory) set to `home`, so the test never reads or writes the real user's config.
pub fn reterm_command(reterm: &str, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(reterm);
    command
        .args(args)
        .env("HOME", home)
        .env_remove("RETERM_LOG")
        .current_dir(home)
        .kill_on_drop(true);
    command
}

/// What a finished reterm left behind.
#[derive(Debug)]
pub struct Exited {
    /// How it ended.
    pub status: ExitStatus,
    /// Every stdout line, from the start.
    pub stdout: Vec<String>,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

/// A running reterm with piped stdin, stdout and stderr.
pub struct RetermProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    out: mpsc::UnboundedReceiver<String>,
    lines: Vec<String>,
    cursor: usize,
    stdout_closed: bool,
    stderr: Arc<Mutex<String>>,
}

impl RetermProcess {
    /// Starts the binary `reterm` with `HOME=home` and `args`.
    pub fn spawn(reterm: &str, home: &Path, args: &[&str]) -> Result<Self> {
        let mut child = reterm_command(reterm, home, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning reterm")?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("reterm stdout")?;
        let stderr_pipe = child.stderr.take().context("reterm stderr")?;
        let (tx, out) = mpsc::unbounded_channel();
        tokio::spawn(pump_lines(stdout, tx));
        let stderr = Arc::new(Mutex::new(String::new()));
        tokio::spawn(pump_text(stderr_pipe, Arc::clone(&stderr)));
        Ok(Self {
            child,
            stdin,
            out,
            lines: Vec::new(),
            cursor: 0,
            stdout_closed: false,
            stderr,
        })
    }

    /// Types one line (a newline is added).
    pub async fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("reterm's stdin is already closed"))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .context("writing to reterm's stdin")?;
        stdin.flush().await?;
        Ok(())
    }

    /// Closes stdin: reterm treats end of input as a quit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the next stdout line (after those already matched) that satisfies `pred`.
    pub async fn wait_for_line(
        &mut self,
        pred: impl FnMut(&str) -> bool,
        timeout: Duration,
    ) -> Result<String> {
        let mut batch = self.collect_until(pred, timeout).await?;
        batch
            .pop()
            .ok_or_else(|| anyhow!("collect_until returned no line"))
    }

    /// Like [`RetermProcess::wait_for_line`], but returns every line from the current position
    /// up to and including the matching one.
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
            if self.stdout_closed {
                bail!(
                    "reterm closed stdout before the expected line; last lines:\n{}\nstderr:\n{}",
                    self.tail(),
                    self.stderr_text()
                );
            }
            match tokio::time::timeout_at(deadline, self.out.recv()).await {
                Ok(Some(line)) => self.lines.push(line),
                Ok(None) => self.stdout_closed = true,
                Err(_) => bail!(
                    "reterm printed no expected line within {timeout:?}; last lines:\n{}\nstderr:\n{}",
                    self.tail(),
                    self.stderr_text()
                ),
            }
        }
    }

    /// Every stdout line received so far.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Whether the process has not exited yet.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Everything written to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Waits (up to `timeout`) for the process to exit by itself and for its stdout to close,
    /// and returns all it printed.
    pub async fn wait_exit(mut self, timeout: Duration) -> Result<Exited> {
        let deadline = Instant::now() + timeout;
        let status = match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(status) => status.context("waiting for reterm")?,
            Err(_) => bail!(
                "reterm still runs after {timeout:?}; last lines:\n{}",
                self.tail()
            ),
        };
        while !self.stdout_closed {
            match tokio::time::timeout_at(deadline, self.out.recv()).await {
                Ok(Some(line)) => self.lines.push(line),
                Ok(None) => self.stdout_closed = true,
                Err(_) => bail!("reterm exited but its stdout stayed open"),
            }
        }
        // The stderr pump ends with the pipe; the process is gone, so this is quick.
        let stderr = self.stderr_text();
        Ok(Exited {
            status,
            stdout: self.lines,
            stderr,
        })
    }

    fn tail(&self) -> String {
        let start = self.lines.len().saturating_sub(TAIL);
        self.lines[start..].join("\n")
    }
}

/// Sends each stdout line (without its newline) to the test until the pipe closes.
async fn pump_lines(pipe: impl AsyncRead + Unpin, tx: mpsc::UnboundedSender<String>) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf)
                    .trim_end_matches(['\r', '\n'])
                    .to_owned();
                if tx.send(line).is_err() {
                    break;
                }
            }
        }
    }
}

/// Appends stderr to `text` until the pipe closes.
async fn pump_text(pipe: impl AsyncRead + Unpin, text: Arc<Mutex<String>>) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => text
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push_str(&String::from_utf8_lossy(&buf)),
        }
    }
}

/// One printed row, split: `[network] buffer HH:MM:SS[ (history)] body`.
#[derive(Debug, PartialEq, Eq)]
pub struct PrintedRow<'a> {
    /// The network name from the config.
    pub network: &'a str,
    /// The buffer name, or `(server)`.
    pub buffer: &'a str,
    /// `HH:MM:SS` (UTC).
    pub clock: &'a str,
    /// Whether the row came from a history replay.
    pub history: bool,
    /// Everything after the time, e.g. `<nick> text` or `-!- ...`.
    pub body: &'a str,
}

/// Matches a printed row of `buffer` on `network` whose body satisfies `body`.
pub fn row_matching<'a>(
    network: &'a str,
    buffer: &'a str,
    body: impl Fn(&str) -> bool + 'a,
) -> impl FnMut(&str) -> bool + 'a {
    move |l| {
        parse_row(l).is_some_and(|r| r.network == network && r.buffer == buffer && body(r.body))
    }
}

/// Splits a row line; `None` for other output (state lines, errors, command replies).
pub fn parse_row(line: &str) -> Option<PrintedRow<'_>> {
    let rest = line.strip_prefix('[')?;
    let (network, rest) = rest.split_once("] ")?;
    let (buffer, rest) = rest.split_once(' ')?;
    let clock = rest.get(..8)?;
    let clock_ok = clock.char_indices().all(|(i, c)| match i {
        2 | 5 => c == ':',
        _ => c.is_ascii_digit(),
    });
    if !clock_ok {
        return None;
    }
    let rest = rest.get(8..)?;
    let (history, rest) = match rest.strip_prefix(" (history)") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let body = rest.strip_prefix(' ')?;
    Some(PrintedRow {
        network,
        buffer,
        clock,
        history,
        body,
    })
}

/// Whether `clock` (`HH:MM:SS`, UTC) is within `slack` of the current time of day.
pub fn clock_is_near_now(clock: &str, slack: Duration) -> bool {
    let parts: Vec<u64> = clock.split(':').filter_map(|p| p.parse().ok()).collect();
    let [h, m, s] = parts[..] else {
        return false;
    };
    let shown = h * 3600 + m * 60 + s;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    let diff = shown.abs_diff(now);
    diff.min(86_400 - diff.min(86_400)) <= slack.as_secs()
}

/// The state a line-mode connection-state line of `net` says
/// (`[net] HH:MM:SS -!- reconnecting in 4 s` gives `reconnecting in 4 s`),
/// checking its clock is a time of day; `None` for any other line.
pub fn state_of<'a>(line: &'a str, net: &str) -> Option<&'a str> {
    let rest = line
        .strip_prefix('[')?
        .strip_prefix(net)?
        .strip_prefix("] ")?;
    let (clock, state) = rest.split_once(" -!- ")?;
    let clock_ok = clock.len() == 8
        && clock.char_indices().all(|(i, c)| match i {
            2 | 5 => c == ':',
            _ => c.is_ascii_digit(),
        });
    clock_ok.then_some(state)
}

/// Every regular file under `dir` (recursively), with its contents, sorted by
/// path: what a test searches for a secret that must not have been written.
pub fn all_files(dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
                out.push((path, text));
            }
        }
    }
    out.sort();
    Ok(out)
}
