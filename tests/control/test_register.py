"""`/control register` with the real Claude Code CLI (`@anthropic-ai/claude-code`
from npm, which needs no login for `claude mcp`), issues 16 and 36: after it,
`claude mcp list` reports the server connected in any directory (user scope),
and still does after `/control token regenerate`; `/control register local DIR`
registers for DIR alone and says what Claude Code needs before it sends the
token from there (a trusted workspace); no process's argument vector holds the
token while it runs; the token is only in the 0600 headers file, never in
reterm's answer or in Claude Code's configuration. Without `claude` on the
PATH, the entry to add by hand is printed instead; a `claude` that cannot run
is named, with why.

Every test with the CLI runs against the pinned version scripts/test installs
under $RETE_NODE_DIR (default /opt/rete-node) and, when scripts/test could
reach the npm registry, against the newest one, installed next to it in
$RETE_NODE_DIR-claude-latest."""

import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from identity import IS_ROOT, server_uid

NODE_DIR = Path(os.environ.get("RETE_NODE_DIR", "/opt/rete-node"))
PINNED = NODE_DIR / "node_modules" / ".bin"
LATEST = Path(f"{NODE_DIR}-claude-latest") / "node_modules" / ".bin"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def search_path(bin_dir):
    return f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(params=["pinned", "latest"])
def claude_bin(request):
    """The directory of the `claude` under test: the pinned one, which must be
    there, and the newest one, when scripts/test installed it."""
    if request.param == "pinned":
        if not (PINNED / "claude").exists():
            pytest.fail(f"{PINNED / 'claude'} is missing: scripts/test installs "
                        "@anthropic-ai/claude-code")
        return PINNED
    if not (LATEST / "claude").exists():
        pytest.skip(f"{LATEST / 'claude'} is missing: scripts/test installs the newest "
                    "@anthropic-ai/claude-code only when the npm registry answers")
    return LATEST


@pytest.fixture
def claude_server(start_reterm, claude_bin):
    server = start_reterm(env={"PATH": search_path(claude_bin), **QUIET})
    server.claude_bin = claude_bin
    return server


def claude(server, *args, cwd=None):
    """`claude …` as reterm's user, in reterm's home, in `cwd` (default: the home)."""
    argv = [str(server.claude_bin / "claude"), *args]
    if IS_ROOT:
        uid = server_uid()
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    env = {"HOME": str(server.home), "PATH": search_path(server.claude_bin), "LANG": "C.UTF-8",
           **QUIET}
    return subprocess.run(argv, cwd=str(cwd or server.home), env=env, capture_output=True,
                          text=True, timeout=120)


def rete_line(server, cwd=None):
    """`claude mcp list`'s line for rete in `cwd`, and the whole listing."""
    out = claude(server, "mcp", "list", cwd=cwd)
    line = next((l for l in out.stdout.splitlines() if l.startswith("rete:")), "")
    return line, out.stdout


def directory(server, name):
    """A fresh directory in reterm's home, owned by reterm's user."""
    path = server.home / name
    path.mkdir()
    if IS_ROOT:
        os.chown(path, server_uid(), server_uid())
    return path


def connected(server, cwd=None):
    line, listing = rete_line(server, cwd)
    return f"http://127.0.0.1:{server.port}/mcp" in line and "Connected" in line, listing


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


def claude_config(server):
    return json.loads((server.home / ".claude.json").read_text())


def test_register_regenerate_and_no_token_in_argv(claude_server):
    server = claude_server
    with CmdlineWatch(server.token.value) as watch:
        answer = server.run("/control register", timeout=150)
    assert watch.scans > 0
    assert watch.hits == [], "the token was in a process's argument vector"
    assert answer == [f"registered rete with Claude Code at user scope ({server.home}/.claude.json), "
                      f"for every directory; it reads the token from {headers_file(server)}"], answer
    assert_private_headers(server)
    assert server.token.value not in (server.home / ".claude.json").read_text()
    config = claude_config(server)
    entry = config["mcpServers"]["rete"]
    assert entry == {"type": "http", "url": f"http://127.0.0.1:{server.port}/mcp",
                     "headersHelper": f"cat '{headers_file(server)}'"}, entry
    assert all("rete" not in p.get("mcpServers", {}) for p in config.get("projects", {}).values())
    # Any directory, trusted or not, the home or not, sees it and connects.
    elsewhere = directory(server, "elsewhere")
    for cwd in (server.home, elsewhere):
        ok, listing = connected(server, cwd)
        assert ok, (cwd, listing)
    assert server.run("/control status")[1:] == [
        "Claude Code: registered at user scope, for every directory"]

    old = server.token.value
    server.fetch_token("/control token regenerate")
    assert server.token.value != old
    assert_private_headers(server)
    ok, listing = connected(server, elsewhere)
    assert ok, listing

    # Registering again replaces the entry rather than failing on it.
    assert server.run("/control register", timeout=150)[0].startswith("registered rete")
    assert connected(server, elsewhere)[0]


def test_local_scope_is_for_the_named_directory(claude_server):
    server = claude_server
    project = directory(server, "project")
    elsewhere = directory(server, "elsewhere")
    with CmdlineWatch(server.token.value) as watch:
        answer = server.run(f"/control register local {project}", timeout=150)
    assert watch.hits == [], "the token was in a process's argument vector"
    advice = (f"Claude Code sends the token only from a directory you trust: run claude once in "
              f"{project} and accept the trust prompt (until then claude mcp list there says it "
              "needs authentication)")
    assert answer == [f"registered rete with Claude Code at local scope, for {project} only; it "
                      f"reads the token from {headers_file(server)}", advice], answer
    assert_private_headers(server)
    config = claude_config(server)
    assert "rete" not in config.get("mcpServers", {})
    assert config["projects"][str(project)]["mcpServers"]["rete"] == {
        "type": "http", "url": f"http://127.0.0.1:{server.port}/mcp",
        "headersHelper": f"cat '{headers_file(server)}'"}
    assert server.token.value not in (server.home / ".claude.json").read_text()
    assert server.run("/control status")[1:] == [
        f"Claude Code: registered at local scope, for {project} only", advice]

    # Only that directory sees it.
    assert rete_line(server, elsewhere)[0] == ""
    line, listing = rete_line(server, project)
    assert f"http://127.0.0.1:{server.port}/mcp" in line, listing
    if server.claude_bin == LATEST:
        # The newest Claude Code runs a local server's headers helper only in a trusted workspace.
        assert "Needs authentication" in line, listing

    # Accepting the trust prompt records the directory as trusted; then it connects and the
    # status no longer asks for it.
    path = server.home / ".claude.json"
    config = json.loads(path.read_text())
    config["projects"][str(project)]["hasTrustDialogAccepted"] = True
    path.write_text(json.dumps(config))
    ok, listing = connected(server, project)
    assert ok, listing
    assert server.run("/control status")[1:] == [
        f"Claude Code: registered at local scope, for {project} only"]


def test_local_scope_needs_an_existing_directory(claude_server):
    missing = claude_server.home / "nowhere"
    assert claude_server.run(f"/control register local {missing}") == [
        f"cannot register for {missing}: entity not found"]
    assert claude_server.run("/control register local") == [
        "error: name the directory: /control register local DIR (alone, /control register "
        "registers for every directory)"]
    assert not headers_file(claude_server).exists()


def test_project_scope_is_refused(claude_server):
    for line in ("/control register project", "/control register --scope project"):
        assert claude_server.run(line) == [
            "not at project scope: .mcp.json is shared with everyone who has the project; "
            "/control register registers at user scope, /control register local DIR for DIR only"]
    assert not headers_file(claude_server).exists()
    assert not (claude_server.home / ".mcp.json").exists()


@pytest.fixture
def bin_dir():
    """A directory for a PATH, readable by reterm's user (pytest's tmp_path
    is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="reterm-bin-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_claude_that_cannot_run_is_named(start_reterm, bin_dir):
    program = bin_dir / "claude"
    program.write_text("#!/bin/sh\necho never run\n")
    program.chmod(0o644)
    server = start_reterm(env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert server.run("/control register") == [
        f"cannot run {program}: it is not executable by this user (mode 0644)"]
    # A script whose interpreter is missing.
    program.write_text("#!/nonexistent/node\n")
    program.chmod(0o755)
    assert server.run("/control register") == [
        f"cannot run {program}: its interpreter /nonexistent/node is missing"]
    assert_private_headers(server)


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
