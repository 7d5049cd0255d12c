"""`/control register` with the real Claude Code CLI (`@anthropic-ai/claude-code`
from npm, which needs no login for `claude mcp`), issue 16: after it, `claude
mcp list` reports the server connected, and still does after `/control token
regenerate`; no process's argument vector holds the token while it runs; the
token is only in the 0600 headers file, never in reterm's answer or in Claude
Code's configuration. Without `claude` on the PATH, the entry to add by hand is
printed instead.

scripts/test installs the CLI under $RETE_NODE_DIR (default /opt/rete-node)."""

import json
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from identity import IS_ROOT, server_uid

NODE_DIR = Path(os.environ.get("RETE_NODE_DIR", "/opt/rete-node"))
BIN = NODE_DIR / "node_modules" / ".bin"
PATH = f"{BIN}:/usr/local/bin:/usr/bin:/bin"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


@pytest.fixture
def claude_server(start_reterm):
    if not (BIN / "claude").exists():
        pytest.fail(f"{BIN / 'claude'} is missing: scripts/test installs @anthropic-ai/claude-code")
    return start_reterm(env={"PATH": PATH, **QUIET})


def claude(server, *args):
    """`claude …` as reterm's user, in reterm's home and working directory."""
    argv = [str(BIN / "claude"), *args]
    if IS_ROOT:
        uid = server_uid()
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    env = {"HOME": str(server.home), "PATH": PATH, "LANG": "C.UTF-8", **QUIET}
    return subprocess.run(argv, cwd=str(server.home), env=env, capture_output=True, text=True,
                          timeout=120)


def connected(server):
    out = claude(server, "mcp", "list")
    line = next((l for l in out.stdout.splitlines() if l.startswith("rete:")), "")
    return f"http://127.0.0.1:{server.port}/mcp" in line and "Connected" in line, out.stdout


class CmdlineWatch:
    """Reads every process's argument vector, over and over, while a command
    runs, and keeps those holding `secret`."""

    def __init__(self, secret):
        self.secret = secret.encode()
        self.hits = []
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if self.secret in argv:
                    self.hits.append(pid)
            self.scans += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


def test_the_cmdline_watch_sees_an_argument_vector():
    marker = "rete-marker-" + os.urandom(8).hex()
    with CmdlineWatch(marker) as watch:
        proc = subprocess.Popen(["sh", "-c", "sleep 30; :", marker])  # marker is $0
        try:
            deadline = watch.scans + 3
            while watch.scans < deadline:
                threading.Event().wait(0.01)
        finally:
            proc.kill()
            proc.wait()
    assert str(proc.pid) in watch.hits


def headers_file(server):
    return server.home / ".rete" / "claude-headers.json"


def assert_private_headers(server):
    path = headers_file(server)
    mode = path.stat()
    assert stat.S_IMODE(mode.st_mode) == 0o600, oct(mode.st_mode)
    assert mode.st_uid == server_uid()
    assert json.loads(path.read_text()) == {"Authorization": f"Bearer {server.token.value}"}


def test_register_regenerate_and_no_token_in_argv(claude_server):
    server = claude_server
    with CmdlineWatch(server.token.value) as watch:
        answer = server.run("/control register", timeout=150)
    assert watch.scans > 0
    assert watch.hits == [], "the token was in a process's argument vector"
    assert answer == [f"registered rete with Claude Code (local scope); it reads the token from "
                      f"{headers_file(server)}"], answer
    assert_private_headers(server)
    config = (server.home / ".claude.json").read_text()
    assert server.token.value not in config
    entry = json.loads(config)["projects"][str(server.home)]["mcpServers"]["rete"]
    assert entry == {"type": "http", "url": f"http://127.0.0.1:{server.port}/mcp",
                     "headersHelper": f"cat '{headers_file(server)}'"}, entry
    ok, listing = connected(server)
    assert ok, listing

    old = server.token.value
    server.fetch_token("/control token regenerate")
    assert server.token.value != old
    assert_private_headers(server)
    ok, listing = connected(server)
    assert ok, listing

    # Registering again replaces the entry rather than failing on it.
    assert server.run("/control register", timeout=150)[0].startswith("registered rete")
    assert connected(server)[0]


def test_project_scope_is_refused(claude_server):
    for line in ("/control register project", "/control register --scope project"):
        assert claude_server.run(line) == [
            "not at project scope: .mcp.json is shared with everyone who has the project; "
            "/control register registers at local scope"]
    assert not headers_file(claude_server).exists()
    assert not (claude_server.home / ".mcp.json").exists()


def test_without_claude_the_entry_is_printed(start_reterm):
    server = start_reterm()  # PATH without the CLI
    answer = server.run("/control register")
    assert answer[0] == (f"claude is not installed; the token is in {headers_file(server)}. "
                         "Add this entry as mcpServers.rete in Claude Code's configuration:")
    assert json.loads(answer[1]) == {"type": "http",
                                     "url": f"http://127.0.0.1:{server.port}/mcp",
                                     "headersHelper": f"cat '{headers_file(server)}'"}
    assert all(server.token.value not in line for line in answer)
    assert_private_headers(server)


def test_register_while_off_says_so(start_reterm):
    server = start_reterm(enabled=False, serving=False)
    assert server.run("/control register") == ["AI access is off — /set control.enabled on"]
    assert not headers_file(server).exists()
