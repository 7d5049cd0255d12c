"""Scoped grants in reterm (issue 33): `/control grant add|list|revoke` and
`/control register NAME`, against a real reterm and its running control server.

A grant's token is only in its headers file, `~/.rete/grants/NAME.json`
(0600, in a 0700 directory): never in an answer, never in the secrets file
(which keeps a hash), never on a command line. The running server accepts it
at once, refuses it from the request after a revocation, and still accepts it
after reterm restarts."""

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from identity import IS_ROOT, server_uid
from masking import Secret
from rawhttp import LIST_SESSIONS, assert_refused, assert_served, post
from test_gate import random_token
from test_register import CmdlineWatch, claude, claude_bin, claude_server  # noqa: F401

WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"


def grants_dir(server):
    return server.home / ".rete" / "grants"


def headers_file(server, name):
    return grants_dir(server) / f"{name}.json"


def grant_token(server, name):
    """The grant's token, read from its headers file, which must be private
    and hold exactly the one header."""
    path = headers_file(server, name)
    meta = path.stat()
    assert stat.S_IMODE(meta.st_mode) == 0o600, oct(meta.st_mode)
    assert meta.st_uid == server_uid()
    assert stat.S_IMODE(grants_dir(server).stat().st_mode) == 0o700
    headers = json.loads(path.read_text())
    assert list(headers) == ["Authorization"]
    scheme, _, token = headers["Authorization"].partition(" ")
    assert scheme == "Bearer" and re.fullmatch(r"[A-Za-z0-9_-]{43}", token)
    return Secret(token)


def secrets_text(server):
    return (server.home / ".rete" / "secrets.json").read_text()


def kept_grants(server):
    return json.loads(secrets_text(server)).get("mcp-grants-reterm", [])


def assert_no_secret(lines, *tokens):
    for line in lines:
        for token in tokens:
            assert token.value not in line, "a token was printed"


def test_add_list_revoke_against_the_running_server(server):
    answer = server.run("/control grant add bot buffers=#rust*,#x tier=debug")
    path = headers_file(server, "bot")
    assert len(answer) == 1, answer
    assert re.fullmatch(
        rf"grant bot added: networks all, buffers #rust\*,#x, queries off, tier debug, "
        rf"expires {WHEN}; its token is in {re.escape(str(path))} and nowhere else — "
        r"/control register bot connects Claude Code with it", answer[0]), answer
    token = grant_token(server, "bot")
    assert_no_secret(answer, token)
    assert token != server.token

    # The running server knows it at once; a token of no grant is refused.
    assert_served(post(server, LIST_SESSIONS, token=token))
    assert_refused(post(server, LIST_SESSIONS, token=random_token()))

    # The secrets file keeps a hash, not the token (nor its base64).
    text = secrets_text(server)
    assert token.value not in text
    assert base64.b64encode(token.value.encode()).decode() not in text
    assert [g["name"] for g in kept_grants(server)] == ["bot"]

    rows = server.run("/control grant list")
    assert len(rows) == 1, rows
    assert re.fullmatch(
        rf"bot: networks all, buffers #rust\*,#x, queries off, tier debug, expires {WHEN}, "
        rf"last used {WHEN}", rows[0]), rows
    assert_no_secret(rows, token, server.token)
    # The use is saved by list.
    assert kept_grants(server)[0]["last_used_ms"] is not None

    answer = server.run("/control grant revoke bot")
    assert answer == [f"grant bot revoked: its token is refused from now on; {path} removed"]
    assert_refused(post(server, LIST_SESSIONS, token=token))
    assert not path.exists()
    assert kept_grants(server) == []
    # The full token is untouched.
    assert_served(post(server, LIST_SESSIONS))
    assert server.run("/control grant list") == [
        "no grants: /control grant add NAME gives an agent a token of its own that sees less"]
    assert server.run("/control grant revoke bot") == [
        "no grant named bot: /control grant list shows them"]


def test_a_grant_survives_a_restart_as_a_hash(start_reterm):
    first = start_reterm()
    first.run("/control grant add keeper networks=ctlnet queries=on expires=never")
    token = grant_token(first, "keeper")
    assert_served(post(first, LIST_SESSIONS, token=token))
    first.stop()

    second = start_reterm(home=first.home, port=first.port)
    assert second.token == first.token
    assert_served(post(second, LIST_SESSIONS, token=token))
    assert_refused(post(second, LIST_SESSIONS, token=random_token()))
    assert token.value not in secrets_text(second)
    rows = second.run("/control grant list")
    assert re.fullmatch(
        rf"keeper: networks ctlnet, buffers all channels, queries on, tier read, expires never, "
        rf"last used {WHEN}", rows[0]), rows
    assert len(rows) == 1, rows


@pytest.mark.parametrize("words, reason", [
    ("bot tier=admin", "tier is read, debug or send, not `admin`"),
    ("bot buffers=rust", "buffers are channels: `rust` does not start with #, &, ! or +"),
    ("bot colour=red", "unknown setting `colour` (networks, buffers, queries, tier, expires)"),
    ("bot tier=read tier=send", "`tier` is given twice"),
    ("../evil", "a grant's name is 1 to 32 of letters, digits, - and _"),
    ("bot expires=0h", "expires is never or a number with s, m, h or d, not `0h`"),
    ("user", "`user` is a word of /control register; choose another name"),
])
def test_a_bad_spec_is_refused_and_nothing_is_written(server, words, reason):
    answer = server.run(f"/control grant add {words}")
    assert answer == [f"grant not added: {reason}"]
    assert not grants_dir(server).exists()
    assert kept_grants(server) == []
    assert not (server.home / "evil.json").exists()
    assert server.run("/control grant list")[0].startswith("no grants")


def test_a_taken_name_is_refused_and_the_first_grant_kept(server):
    # A grants directory others could search is narrowed to 0700.
    grants_dir(server).mkdir(mode=0o755)
    grants_dir(server).chmod(0o755)
    if IS_ROOT:
        os.chown(grants_dir(server), server_uid(), server_uid())
    server.run("/control grant add bot")
    token = grant_token(server, "bot")
    assert server.run("/control grant add bot tier=send") == [
        "grant not added: there is a grant named bot already (/control grant revoke bot ends it)"]
    assert grant_token(server, "bot") == token
    assert_served(post(server, LIST_SESSIONS, token=token))
    assert [g["tier"] for g in kept_grants(server)] == ["read"]


def test_a_secrets_file_that_cannot_be_written_leaves_no_headers_file(server):
    secrets = server.home / ".rete" / "secrets.json"
    original = secrets.read_text()
    secrets.write_text("not json")
    try:
        answer = server.run("/control grant add bot")
    finally:
        secrets.write_text(original)
    assert answer == [f"grant not added: {secrets} is not a JSON object of secrets"]
    assert not headers_file(server, "bot").exists()
    assert server.run("/control grant list")[0].startswith("no grants")


@pytest.fixture
def fake_claude():
    """A `claude` that appends its argument vector, one word a line, to
    $HOME/claude-argv.log and succeeds."""
    path = Path(tempfile.mkdtemp(prefix="reterm-bin-"))
    path.chmod(0o755)
    program = path / "claude"
    program.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done '
                       '>>"$HOME/claude-argv.log"\necho ---- >>"$HOME/claude-argv.log"\n')
    program.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_register_a_grant_without_its_token_on_a_command_line(start_reterm, fake_claude):
    server = start_reterm(env={"PATH": f"{fake_claude}:/usr/bin:/bin"})
    assert server.run("/control register bot") == [
        "no grant named bot: /control grant list shows them"]
    server.run("/control grant add bot buffers=#rust*")
    token = grant_token(server, "bot")
    path = headers_file(server, "bot")
    with CmdlineWatch(token.value) as watch:
        answer = server.run("/control register bot", timeout=30)
    assert watch.scans > 0
    assert watch.hits == [], "the grant's token was in a process's argument vector"
    assert answer == [f"registered rete-bot with Claude Code at user scope ({server.home}/"
                      f".claude.json), for every directory; it reads the token from {path}"]
    log = (server.home / "claude-argv.log").read_text()
    assert token.value not in log and server.token.value not in log
    calls = [c.strip("\n").split("\n") for c in log.split("----") if c.strip()]
    assert calls[0] == ["mcp", "remove", "--scope", "user", "rete-bot"]
    assert calls[1][:5] == ["mcp", "add-json", "--scope", "user", "rete-bot"]
    entry = json.loads(calls[1][5])
    assert entry == {"type": "http", "url": f"http://127.0.0.1:{server.port}/mcp",
                     "headersHelper": f"cat '{path}'"}
    # The helper's output is the grant's headers, which the server accepts.
    out = subprocess.run(["sh", "-c", entry["headersHelper"]], capture_output=True, text=True,
                         check=True).stdout
    helped = Secret(json.loads(out)["Authorization"].removeprefix("Bearer "))
    assert helped == token
    assert_served(post(server, LIST_SESSIONS, token=helped))

    # Local scope, for one directory.
    project = server.home / "project"
    project.mkdir()
    if IS_ROOT:
        os.chown(project, server_uid(), server_uid())
    answer = server.run(f"/control register bot local {project}", timeout=30)
    assert answer[0] == (f"registered rete-bot with Claude Code at local scope, for {project} "
                         f"only; it reads the token from {path}"), answer

    # Revoked: removed from Claude Code wherever its configuration has it (this claude writes
    # none, so the test does), and nothing is left to register.
    config = server.home / ".claude.json"
    entry = {"type": "http", "url": f"http://127.0.0.1:{server.port}/mcp"}
    config.write_text(json.dumps({"mcpServers": {"rete-bot": entry, "rete-other": entry},
                                  "projects": {str(project): {"mcpServers": {"rete-bot": entry}}}}))
    if IS_ROOT:
        os.chown(config, server_uid(), server_uid())
    before = len(calls)
    answer = server.run("/control grant revoke bot", timeout=30)
    assert answer[1:] == ["removed rete-bot from Claude Code at user scope",
                          f"removed rete-bot from Claude Code at local scope, for {project}"], answer
    log = (server.home / "claude-argv.log").read_text()
    calls = [c.strip("\n").split("\n") for c in log.split("----") if c.strip()]
    assert calls[before + 2:] == [["mcp", "remove", "--scope", "user", "rete-bot"],
                                  ["mcp", "remove", "--scope", "local", "rete-bot"]], calls
    assert server.run("/control register bot") == [
        "no grant named bot: /control grant list shows them"]


def test_an_ended_grant_is_refused_listed_as_ended_and_forgotten_at_start(start_reterm,
                                                                         fake_claude):
    first = start_reterm()
    answer = first.run("/control grant add short expires=1s")
    assert re.search(rf"expires {WHEN};", answer[0]), answer
    token = grant_token(first, "short")
    assert_served(post(first, LIST_SESSIONS, token=token))
    time.sleep(1.1)
    assert_refused(post(first, LIST_SESSIONS, token=token))
    rows = first.run("/control grant list")
    assert re.fullmatch(
        rf"short: networks all, buffers all channels, queries off, tier read, ended {WHEN}, "
        rf"last used {WHEN}", rows[0]), rows
    assert first.run("/control register short") == [
        "grant short has ended: /control grant revoke short, then add it again"]
    first.stop()

    # Registered with Claude Code (this claude writes no configuration, so the test does):
    # forgotten at the start, it is removed there too, as a revoke would.
    config = first.home / ".claude.json"
    config.write_text(json.dumps({"mcpServers": {"rete-short": {"type": "http"}}}))
    if IS_ROOT:
        os.chown(config, server_uid(), server_uid())
    second = start_reterm(home=first.home, port=first.port,
                          env={"PATH": f"{fake_claude}:/usr/bin:/bin"})
    assert "-!- grants ended and forgotten: short" in second.lines
    assert "-!- removed rete-short from Claude Code at user scope" in second.lines, second.lines
    log = (second.home / "claude-argv.log").read_text()
    assert log == "mcp\nremove\n--scope\nuser\nrete-short\n----\n", log
    assert not headers_file(second, "short").exists()
    assert kept_grants(second) == []
    assert second.run("/control grant list")[0].startswith("no grants")


def test_claude_code_connects_with_a_grant_until_it_is_revoked(claude_server):
    """With the real Claude Code CLI (test_register's fixtures): `rete-bot`
    connects through the grant's headers helper, and not once it is revoked."""
    server = claude_server
    server.run("/control grant add bot")
    token = grant_token(server, "bot")
    with CmdlineWatch(token.value) as watch:
        answer = server.run("/control register bot", timeout=150)
    assert watch.hits == [], "the grant's token was in a process's argument vector"
    assert answer[0].startswith("registered rete-bot with Claude Code at user scope"), answer
    assert token.value not in (server.home / ".claude.json").read_text()

    def line():
        out = claude(server, "mcp", "list").stdout
        return next((l for l in out.splitlines() if l.startswith("rete-bot:")), ""), out

    found, listing = line()
    assert f"http://127.0.0.1:{server.port}/mcp" in found and "Connected" in found, listing
    assert "Claude Code: grant bot registered at user scope" in server.status().split("\n")
    answer = server.run("/control grant revoke bot", timeout=150)
    assert answer[1:] == ["removed rete-bot from Claude Code at user scope"], answer
    found, listing = line()
    assert not found, listing
    assert not any("grant bot" in l for l in server.status().split("\n"))
