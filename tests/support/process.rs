//! A spawned server process whose output is captured line by line, so the harness can wait on
//! what the server says (an event) instead of sleeping, and can show it when a test fails.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::sync::watch;
use tokio::time::Instant;

/// Everything a process printed so far, and whether both of its output pipes are closed
/// (which means it exited, or at least can no longer tell us anything).
#[derive(Debug, Default)]
struct Output {
    lines: Vec<String>,
    closed_pipes: u8,
}

impl Output {
    fn finished(&self) -> bool {
        self.closed_pipes >= 2
    }
}

/// A child process that is killed and reaped when dropped, so a failing test never leaves a
/// server holding a port, and killed by its `GroupWatchdog` when the test process ends
/// without dropping it.
pub struct ManagedChild {
    name: String,
    child: Child,
    output: watch::Receiver<Output>,
    /// Dropped after the child is killed; until the test process exits it keeps the watchdog
    /// waiting.
    _watchdog: GroupWatchdog,
}

impl ManagedChild {
    /// Spawns `command` with stdout and stderr captured (stdin closed), in a process group
    /// of its own that a watchdog kills when this test process ends.
    pub fn spawn(name: &str, mut command: Command) -> Result<Self> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command
            .spawn()
            .with_context(|| format!("spawning {name}: {command:?}"))?;
        let watchdog = match GroupWatchdog::start(child.id()) {
            Ok(watchdog) => watchdog,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(error.context(format!("starting the watchdog of {name}")));
            }
        };
        let (tx, rx) = watch::channel(Output::default());
        if let Some(out) = child.stdout.take() {
            pump(tx.clone(), out);
        }
        if let Some(err) = child.stderr.take() {
            pump(tx, err);
        }
        Ok(Self {
            name: name.to_owned(),
            child,
            output: rx,
            _watchdog: watchdog,
        })
    }

    /// Waits until a line at index `from` or later satisfies `pred`, and returns its index.
    ///
    /// Fails when the process closes its output first or when `deadline` passes; the error
    /// carries the captured output so the cause is visible in the test failure.
    pub async fn wait_line(
        &mut self,
        from: usize,
        deadline: Duration,
        mut pred: impl FnMut(&str) -> bool,
    ) -> Result<usize> {
        let end = Instant::now() + deadline;
        loop {
            {
                let out = self.output.borrow_and_update();
                if let Some(i) = out.lines.iter().skip(from).position(|l| pred(l)) {
                    return Ok(from + i);
                }
                if out.finished() {
                    bail!(
                        "{} exited before the expected output; it printed:\n{}",
                        self.name,
                        out.lines.join("\n")
                    );
                }
            }
            match tokio::time::timeout_at(end, self.output.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => bail!("{}: output readers went away", self.name),
                Err(_) => bail!(
                    "{} did not print the expected line within {deadline:?}; it printed:\n{}",
                    self.name,
                    self.output_text()
                ),
            }
        }
    }

    /// All captured stdout/stderr lines, joined.
    pub fn output_text(&self) -> String {
        self.output.borrow().lines.join("\n")
    }

    /// The process id (to signal the process, e.g. stop and continue it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Freezes the process (SIGSTOP, sent from this process: a `kill`
    /// command would be a child that exits while the process is stopped,
    /// and the kernel may then continue a stopped member of an orphaned
    /// process group).
    ///
    /// Returns once every thread has stopped: kill(2) only queues the stop,
    /// and a thread running on another core goes on until the kernel
    /// interrupts it, long enough on a busy machine to answer what a test
    /// sends right after. The parent is told of a stop (waitid's
    /// `WSTOPPED`) only once the whole process has stopped; `WNOWAIT`
    /// leaves that news, and the process, as they were.
    pub fn pause(&self) -> Result<()> {
        self.signal(libc::SIGSTOP, "stopping")?;
        let pid = libc::id_t::try_from(self.child.id())?;
        loop {
            // SAFETY: a zeroed siginfo_t is a valid buffer for waitid to fill.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid on our own unreaped child, writing into `info`.
            let waited = unsafe {
                libc::waitid(libc::P_PID, pid, &mut info, libc::WSTOPPED | libc::WNOWAIT)
            };
            if waited == 0 {
                return Ok(());
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                bail!("waiting for {} to stop: {error}", self.name);
            }
        }
    }

    /// Continues a process [`pause`](Self::pause) froze (SIGCONT).
    pub fn resume(&self) -> Result<()> {
        self.signal(libc::SIGCONT, "continuing")
    }

    /// Sends `signal` from this process; `doing` names it in the error.
    fn signal(&self, signal: libc::c_int, doing: &str) -> Result<()> {
        let pid = libc::pid_t::try_from(self.child.id())?;
        // SAFETY: kill(2) with a pid we spawned and have not reaped.
        if unsafe { libc::kill(pid, signal) } != 0 {
            bail!("{doing} {}: {}", self.name, std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Asks the process to stop (SIGTERM), as systemd or a container
    /// runtime does.
    pub fn terminate(&self) -> Result<()> {
        self.signal(libc::SIGTERM, "terminating")
    }

    /// Waits up to `limit` for the process to exit (both of its output
    /// pipes closed, then reaped) and returns its status.
    pub async fn exit_status(&mut self, limit: Duration) -> Result<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if self.output.borrow_and_update().finished() {
                return Ok(self.child.wait()?);
            }
            match tokio::time::timeout_at(end, self.output.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Ok(self.child.wait()?),
                Err(_) => bail!("{} did not exit within {limit:?}", self.name),
            }
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process (SIGKILL: no core dump, no graceful shutdown that could take time)
    /// and reaps it, so its listening sockets are closed when this returns.
    pub fn kill(&mut self) {
        if self.is_running() {
            // Either call fails only if the process is already gone, which is what we want.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for ManagedChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills a spawned server's process group once this test process has ended, however it ends.
///
/// A server held in a `static` for a whole test binary is never dropped, and a test process
/// that nextest kills at its timeout runs no destructor; without a watchdog such servers
/// outlive the run. The watchdog is a shell blocked reading a pipe whose only write end this
/// process holds (close-on-exec, so no other child inherits it). The kernel closes that end
/// when this process exits; the read returns and the shell kills the group. The shell runs as
/// this process does (root in CI), so it can kill a server `setpriv` runs as `nobody`.
/// `PR_SET_PDEATHSIG` would not do: it fires when the spawning *thread* ends, and a change of
/// credentials (setpriv) clears it.
struct GroupWatchdog {
    /// The shell; its stdin is the pipe's write end, and closing it (a drop, or this
    /// process's exit) lets the watchdog kill the group.
    shell: Child,
}

impl GroupWatchdog {
    /// Watches the process group `group` (the leader's pid; see `process_group(0)`).
    fn start(group: u32) -> Result<Self> {
        let shell = Command::new("/bin/sh")
            .arg("-c")
            .arg(r#"read _ ; kill -KILL "-$1" 2>/dev/null; exit 0"#)
            .arg("watchdog")
            .arg(group.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group too, so a signal to the test's group does not end the watchdog
            // before it has done its work.
            .process_group(0)
            .spawn()
            .context("spawning /bin/sh")?;
        Ok(Self { shell })
    }
}

impl Drop for GroupWatchdog {
    /// Lets the shell do its work now (the group is dead already when its leader was killed
    /// and reaped first) and reaps it.
    fn drop(&mut self) {
        drop(self.shell.stdin.take());
        let _ = self.shell.wait();
    }
}

/// Copies a pipe into the shared output, one line at a time, on a plain thread (the pipe is
/// a blocking std handle; a thread per pipe keeps it independent of the test's runtime).
fn pump(tx: watch::Sender<Output>, pipe: impl Read + Send + 'static) {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                    tx.send_modify(|o| o.lines.push(line));
                }
            }
        }
        tx.send_modify(|o| o.closed_pipes += 1);
    });
}

/// Whether this process runs as root: both daemons need special treatment then
/// (InspIRCd wants `--runasroot`, Atheme must drop to another user).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `cargo` (the one running the tests), for a test that builds something of the workspace, with the
/// variables cargo sets for a running test removed: build scripts rerun when one they watch changes
/// (ring's watches `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`), so a build started with them would
/// rebuild those crates, and the next build from a shell would rebuild them again.
pub fn cargo() -> std::process::Command {
    let mut command =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else {
            continue;
        };
        let set_for_tests = name == "OUT_DIR"
            || name == "CARGO_CRATE_NAME"
            || name == "CARGO_BIN_NAME"
            || name == "CARGO_PRIMARY_PACKAGE"
            || name == "CARGO_TARGET_TMPDIR"
            || name.starts_with("CARGO_MANIFEST_")
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_");
        if set_for_tests {
            command.env_remove(name);
        }
    }
    command
}
