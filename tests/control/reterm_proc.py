"""A real reterm process, driven through its stdin and read from its stdout."""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from identity import IS_ROOT, server_uid
from masking import Secret

# The configured network: never connected (autoconnect = false, and port 1 in
# case something connects it), so list_sessions shows one disconnected session.
NETWORK_ID = "6F1C2B8E-3D4A-4E5F-9A7B-0C1D2E3F4A5B"
NETWORK_NAME = "ctlnet"
NETWORK_NICK = "ctltester"

COMMAND_RE = re.compile(
    r'^claude mcp add --transport http rete http://127\.0\.0\.1:(\d+)/mcp '
    r'--header "Authorization: Bearer ([^"\s]+)"$'
)

ROOT_REFUSAL = "AI access is not available when Rete runs as root — AI access is off"
OFF_NOTICE = "AI access is off — /set control.enabled on"


def port_in_use_text(port):
    """The failure reason for a taken port, byte for byte from the contract."""
    return f"Port {port} is in use — AI access is off"


def free_port():
    """A port nothing listens on right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_text(port, *, enabled=True, debug=False):
    return f"""[control]
enabled = {str(enabled).lower()}
debug = {str(debug).lower()}
port = {port}

[[networks]]
id = "{NETWORK_ID}"
name = "{NETWORK_NAME}"
host = "127.0.0.1"
port = 1
nick = "{NETWORK_NICK}"
autoconnect = false
"""


def private_dir(prefix, uid):
    """A fresh 0700 directory owned by `uid`."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o700)
    if IS_ROOT:
        os.chown(path, uid, uid)
    return path


class Reterm:
    """One reterm process. `as_root` runs it as root (for the refusal test)."""

    def __init__(self, binary, *, port=None, as_root=False, enabled=True, debug=False,
                 home=None, env=None):
        self.binary = binary
        self.port = port if port is not None else free_port()
        self.as_root = as_root
        self.uid = 0 if as_root else server_uid()
        self.home = Path(home) if home else private_dir("reterm-home-", self.uid)
        self.config = self.home / "reterm.toml"
        if not self.config.exists():
            self.config.write_text(config_text(self.port, enabled=enabled, debug=debug))
            self.config.chmod(0o600)
            if IS_ROOT:
                os.chown(self.config, self.uid, self.uid)
        self.extra_env = dict(env or {})
        self.token = None
        self.lines = []
        self._cond = threading.Condition()
        self._proc = None
        self._stderr = None

    # -- process -------------------------------------------------------------

    def start(self):
        env = {
            "HOME": str(self.home),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "RETERM_LOG": os.environ.get("RETERM_TEST_LOG", "warn"),
        }
        env.update(self.extra_env)
        argv = [str(self.binary), "--config", str(self.config)]
        if IS_ROOT and not self.as_root:
            argv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                    "env", f"HOME={self.home}", *argv]
        # stderr goes to a root-side file, kept for a failing test's diagnosis.
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env, cwd=str(self.home),
        )
        threading.Thread(target=self._read_stdout, daemon=True).start()
        return self

    def _read_stdout(self):
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self.lines.append(None)  # end of output
            self._cond.notify_all()

    def stop(self):
        if self._proc is None:
            return
        try:
            if self._proc.poll() is None:
                try:
                    self._proc.stdin.write(b"/quit\n")
                    self._proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=5)
        finally:
            self._proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    def running(self):
        """Whether the process is still running (it has not exited or crashed)."""
        return self._proc is not None and self._proc.poll() is None

    def stderr_text(self):
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    # -- input and output ----------------------------------------------------

    def send(self, line):
        self._proc.stdin.write(line.encode() + b"\n")
        self._proc.stdin.flush()

    def wait_line(self, predicate, *, since=0, timeout=5.0):
        """The first line at index >= `since` that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        index = since
        with self._cond:
            while True:
                while index < len(self.lines):
                    line = self.lines[index]
                    if line is None:
                        raise AssertionError("reterm exited; output:\n" + "\n".join(
                            l for l in self.lines if l is not None))
                    if predicate(line):
                        return line
                    index += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no such line from reterm within %.1fs; output since:\n%s"
                                         % (timeout, "\n".join(l for l in self.lines[since:] if l)))
                self._cond.wait(left)

    def run(self, command, *, timeout=5.0):
        """The lines `command` printed. reterm handles input lines in order, so
        everything before the answer to an unknown sentinel command is the
        answer to `command`."""
        with self._cond:
            start = len(self.lines)
        sentinel = "zz" + uuid.uuid4().hex
        self.send(command)
        self.send("/" + sentinel)
        end_line = self.wait_line(lambda l: sentinel in l, since=start, timeout=timeout)
        with self._cond:
            out = self.lines[start:]
        return out[: out.index(end_line)]

    def status(self):
        """The answer to /control status, as one string."""
        return "\n".join(self.run("/control status"))

    def wait_status(self, predicate, *, timeout=5.0):
        """Polls /control status until `predicate(status)`; returns the status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if predicate(status):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"/control status stayed {status!r}")
            time.sleep(0.05)

    def wait_serving(self, timeout=5.0):
        """Waits until /control status says the server runs on self.port."""
        want = f"AI access on, port {self.port}"
        return self.wait_status(lambda s: s.startswith(want), timeout=timeout)

    def fetch_token(self, command="/control token"):
        """Reads the token (masked) from the connect command `command` prints,
        and keeps it as self.token for the requests that follow."""
        for line in self.run(command):
            m = COMMAND_RE.match(line)
            if m:
                assert int(m.group(1)) == self.port, "the command names another port"
                self.token = Secret(m.group(2))
                return self.token
        raise AssertionError(f"{command} printed no connect command")

    def set(self, key, value):
        return self.run(f"/set {key} {value}")
