"""Starting, refusing, switching and moving the server; the token and its file;
the peer check; the AI access log ("Setup" and "The AI access log" in
control-surface.md, and reterm's /control and /set commands)."""

import base64
import json
import os
import re
import shutil
import socket
import stat
import time

import pytest


from conftest import needs_root
from identity import server_uid
from masking import register
from rawhttp import (A, GOOD, LIST_SESSIONS, assert_refused, assert_served, call, exchange, head,
                     post, replace, tool_text)
from reterm_proc import (NETWORK_NAME, NETWORK_NICK, OFF_NOTICE, ROOT_REFUSAL, free_port,
                         port_in_use_text, private_dir)

TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def refuses_connections(port):
    with socket.socket() as s:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


def wait_until(predicate, timeout=5.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


# -- refusing to start -----------------------------------------------------------

@needs_root
def test_refuses_to_serve_as_root(start_reterm):
    proc = start_reterm(as_root=True, serving=False)
    proc.wait_line(lambda l: ROOT_REFUSAL in l)
    assert proc.run("/control status") == [ROOT_REFUSAL]
    assert proc.run("/control token") == [ROOT_REFUSAL]
    assert refuses_connections(proc.port)


def test_port_in_use(start_reterm):
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        proc = start_reterm(port=port, serving=False)
        reason = port_in_use_text(port)
        proc.wait_line(lambda l: reason in l)
        assert proc.run("/control status") == [reason]
        assert proc.run("/control token") == [reason]


def test_a_failed_start_keeps_its_reason(start_reterm):
    """/control token regenerate after a failed start answers the reason, and
    every /control answer after it still does (it used to replace the failure
    with the off notice although control.enabled is on)."""
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        proc = start_reterm(port=port, serving=False)
        reason = port_in_use_text(port)
        proc.wait_line(lambda l: reason in l)
        assert proc.run("/control token regenerate") == [reason]
        assert proc.run("/control status") == [reason]
        assert proc.run("/control token") == [reason]


def test_a_port_change_after_a_failed_start_retries_the_start(start_reterm):
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        proc = start_reterm(port=port, serving=False)
        proc.wait_line(lambda l: port_in_use_text(port) in l)
        # Another taken port: retried, and the reason names the new port.
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()
            taken = other.getsockname()[1]
            proc.set("control.port", str(taken))
            assert proc.status() == port_in_use_text(taken)
        new_port = free_port()
        proc.set("control.port", str(new_port))
        proc.port = new_port
        proc.wait_serving()
        proc.fetch_token()
        assert_served(post(proc, LIST_SESSIONS))


def test_a_config_port_below_1024_is_clamped_and_said_once(start_reterm):
    # Off, so nothing binds port 1024 (which another program may hold).
    proc = start_reterm(port=80, enabled=False, serving=False)
    notice = proc.wait_line(lambda l: "control.port 80" in l)
    assert notice.startswith("-!- control.port 80 in ") and notice.endswith(
        " is below 1024: using 1024"), notice
    assert proc.run("/control status") == [OFF_NOTICE]
    assert sum("control.port 80" in l for l in proc.lines if l) == 1


def test_off_by_config(start_reterm):
    proc = start_reterm(enabled=False, serving=False)
    assert proc.run("/control status") == [OFF_NOTICE]
    assert proc.run("/control token") == [OFF_NOTICE]
    assert refuses_connections(proc.port)


# -- status and switches ---------------------------------------------------------

def test_status_names_port_debug_and_send(server):
    assert server.status() == f"AI access on, port {server.port}"
    server.set("control.send", "on")
    assert server.status() == f"AI access on, port {server.port} · send"
    server.set("control.debug", "on")
    assert server.status() == f"AI access on, port {server.port} · debug · send"
    server.set("control.send", "off")
    assert server.status() == f"AI access on, port {server.port} · debug"


def test_switching_off_and_on(server):
    server.set("control.enabled", "off")
    assert server.wait_status(lambda s: s == OFF_NOTICE) == OFF_NOTICE
    assert server.run("/control token") == [OFF_NOTICE]
    assert refuses_connections(server.port)
    token = server.token
    server.set("control.enabled", "on")
    server.wait_serving()
    assert server.fetch_token() == token, "the stored token changed"
    assert_served(post(server, LIST_SESSIONS))


def test_send_switch_serves_send_raw(server):
    """control.send takes effect on the next request: send_raw is no longer
    refused as disabled (the session is not connected, so it cannot send)."""
    server.set("control.send", "on")
    is_error, text = tool_text(post(server, b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                                            b'"params":{"name":"send_raw","arguments":{}}}'))
    assert is_error
    assert text != "sending is disabled"


# -- the token -----------------------------------------------------------------

def stored_tokens(path):
    """Every string value of the secrets file that is base64 of a token."""
    found = []
    for value in json.loads(path.read_text()).values():
        if isinstance(value, str):
            try:
                found.append(base64.b64decode(value, validate=True).decode())
            except ValueError:
                pass
    return found


def test_token_file_is_private_and_holds_the_token_base64(server):
    assert TOKEN_RE.match(server.token.value), "the token is not 43 base64url characters"
    directory = server.home / ".rete"
    path = directory / "secrets.json"
    assert mode_of(directory) == 0o700
    assert mode_of(path) == 0o600
    assert os.stat(path).st_uid == server.uid
    tokens = stored_tokens(path)
    assert server.token.value in tokens, "the file does not hold the token base64-encoded"
    assert server.token.value not in path.read_text(), "the token is stored in clear"


def test_secrets_file_from_environment(start_reterm):
    base = private_dir("reterm-secrets-", server_uid())
    try:
        secrets_path = base / "deeper" / "secrets.json"
        proc = start_reterm(env={"RETE_SECRETS_FILE": str(secrets_path)})
        assert mode_of(secrets_path.parent) == 0o700
        assert mode_of(secrets_path) == 0o600
        assert proc.token.value in stored_tokens(secrets_path)
        assert not (proc.home / ".rete" / "secrets.json").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_token_survives_a_restart(start_reterm):
    first = start_reterm()
    token, home, port = first.token, first.home, first.port
    first.stop()
    again = start_reterm(home=home, port=port)
    assert again.token == token, "a restart made a new token"


def test_regenerate_token(server):
    old = server.token
    new = server.fetch_token("/control token regenerate")
    assert new != old, "regenerate kept the token"
    assert TOKEN_RE.match(new.value)
    assert_refused(exchange(server, head(*GOOD), LIST_SESSIONS, token=old))
    assert_served(exchange(server, head(*GOOD), LIST_SESSIONS, token=new))
    assert server.fetch_token() == new
    assert new.value in stored_tokens(server.home / ".rete" / "secrets.json")
    assert old.value not in stored_tokens(server.home / ".rete" / "secrets.json")


def test_token_answers_are_not_saved_anywhere(server):
    """/control token goes to the reterm buffer only: no file under HOME other
    than the secrets file holds it."""
    server.run("/control token")
    for root, _, files in os.walk(server.home):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                assert server.token.value.encode() not in f.read(), f"{path} holds the token"


# -- the peer check --------------------------------------------------------------

@needs_root
def test_client_of_another_user_is_closed_unanswered(server):
    as_root = exchange(server, head(*GOOD), LIST_SESSIONS, uid=0)
    assert as_root.unanswered, as_root
    assert as_root.elapsed < 1.5, as_root
    assert_served(exchange(server, head(*GOOD), LIST_SESSIONS))


@needs_root
def test_other_user_refused_before_the_head_is_read(server):
    """The check runs on accept: a silent client of another user is closed at
    once, not at the 2 s head deadline."""
    reply = exchange(server, b"", uid=0, timeout=3.0)
    assert reply.unanswered, reply
    assert reply.elapsed < 1.5, reply


# -- moving the port -----------------------------------------------------------

def test_set_port_moves_the_server(server):
    old_port = server.port
    new_port = free_port()
    server.set("control.port", str(new_port))
    server.port = new_port
    server.wait_serving()
    assert_served(post(server, LIST_SESSIONS))
    assert wait_until(lambda: refuses_connections(old_port)), "the old port still accepts"
    assert re.search(rf"^port = {new_port}\b", server.config.read_text(), re.M), "port not saved"
    server.fetch_token()  # checks the command names the new port


def test_set_port_takes_signed_numbers(server):
    """A signed integer is a number: -5 is clamped, +N is N."""
    new_port = free_port()
    assert server.set("control.port", f"+{new_port}") == [f"control.port is {new_port}"]
    server.port = new_port
    server.wait_serving()
    assert server.set("control.port", "abc") == ["error: control.port must be a number"]
    assert server.status() == f"AI access on, port {new_port}", "text that is not a number reverts"


def test_set_port_to_a_taken_port(server):
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        server.set("control.port", str(port))
        reason = port_in_use_text(port)
        assert server.wait_status(lambda s: s == reason) == reason


# -- the AI access log -------------------------------------------------------------

def log_rows(server):
    return server.run("/control log")


def test_log_records_a_call_with_its_size_but_not_its_result(server):
    reply = post(server, LIST_SESSIONS)
    is_error, text = tool_text(reply)
    assert not is_error
    rows = [r for r in log_rows(server) if "list_sessions" in r]
    assert len(rows) == 1, rows
    row = rows[0]
    assert re.search(r"\bok\b", row), row
    sizes = {str(len(text.encode())), str(len(reply.body))}
    assert any(re.search(rf"\b{size}\b", row) for size in sizes), (row, sizes)
    for result_text in (NETWORK_NAME, NETWORK_NICK, "disconnected", "untrusted"):
        assert result_text not in row, row


def test_log_records_errors_and_unknown_tools_under_the_name_sent(server):
    post(server, b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                 b'"params":{"name":"nope_zz","arguments":{}}}')
    post(server, b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                 b'"params":{"name":"send_raw","arguments":{"line":"PASS hunter2zz"}}}')
    rows = log_rows(server)
    nope = [r for r in rows if "nope_zz" in r]
    assert len(nope) == 1 and "unknown tool" in nope[0], rows
    send = [r for r in rows if "send_raw" in r]
    assert len(send) == 1 and "sending is disabled" in send[0], rows
    assert "hunter2zz" not in send[0], "a PASS line argument is logged unmasked"


def test_log_records_gate_refusals_without_what_was_offered(server):
    bogus = register("Zq" * 21 + "x")
    lines = replace(GOOD, A, "Authorization: Bearer " + bogus)
    for _ in range(3):
        assert_refused(exchange(server, head(*lines, target="/secret-path-zz"), LIST_SESSIONS))
    rows = log_rows(server)
    refused = [r for r in rows if "refused (bad or missing token, 403)" in r]
    assert len(refused) == 1, rows  # one row per class every 10 s
    for row in rows:
        assert bogus not in row and "secret-path-zz" not in row, row


# The contract names the classes "a Host or Origin that is not allowed, a CORS
# preflight" here and "Host, Origin, OPTIONS" for the listener's debug line.
@pytest.mark.parametrize("lines,method,row", [
    (replace(GOOD, "Host: 127.0.0.1:{port}", "Host: evil.example-zz"), "POST",
     r"refused \(Host[^,()]*, 403\)"),
    ((*GOOD, "Origin: http://evil.example-zz"), "POST", r"refused \(Origin[^,()]*, 403\)"),
    (GOOD, "OPTIONS", r"refused \((OPTIONS|CORS preflight)[^,()]*, 403\)"),
], ids=["Host", "Origin", "OPTIONS"])
def test_log_names_the_refusal_class(server, lines, method, row):
    assert_refused(exchange(server, head(*lines, method=method), LIST_SESSIONS))
    rows = log_rows(server)
    assert len([r for r in rows if re.search(row, r)]) == 1, rows
    assert not [r for r in rows if "evil.example-zz" in r], rows


def test_log_escapes_arguments_that_could_draw_on_the_terminal(server):
    post(server, call("list_sessions", {"a": "x\ny\x1bz\u202ew\u200bv\u00adu"}))
    [row] = [r for r in log_rows(server) if "list_sessions" in r]
    for escaped in ("\\n", "\\u{1B}", "\\u{202E}", "\\u{200B}", "\\u{AD}"):
        assert escaped in row, (escaped, row)
    for raw in ("\x1b", "\u202e", "\u200b", "\u00ad"):
        assert raw not in row, row


def test_log_cuts_long_arguments(server):
    post(server, call("list_sessions", {"a": "q" * 300}))
    [row] = [r for r in log_rows(server) if "list_sessions" in r]
    assert "q" * 190 in row and "q" * 201 not in row and "…" in row, row


def test_log_shows_numbers_as_sent(server):
    body = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_since",'
            b'"arguments":{"buffer":"b","limit":1e3,"n":12345678901234567890123,"big":-1E400}}}')
    post(server, body)  # a tool error (unknown argument): logged all the same
    [row] = [r for r in log_rows(server) if "read_since" in r]
    assert '(big=-1E400, buffer="b", limit=1e3, n=12345678901234567890123)' in row, row


def test_log_lists_at_most_16_arguments(server):
    names = [f"arg_{i:02}" for i in range(20)]
    post(server, call("list_sessions", {n: 1 for n in names}))
    [row] = [r for r in log_rows(server) if "list_sessions" in r]
    assert sum(n in row for n in names) == 16, row


def test_log_masks_a_line_argument_on_any_tool(server):
    post(server, call("send_raw", {"session": "S", "line": "PING x\nPASS hunter2zz"}))
    post(server, call("list_sessions", {"line": "OPER admin hunter3zz"}))
    post(server, call("list_sessions", {"nested": {"line": "PASS shown-zz"}}))
    rows = log_rows(server)
    assert rows
    for row in rows:
        assert "hunter2zz" not in row and "hunter3zz" not in row, row
    assert [r for r in rows if "OPER admin ********" in r], rows
    assert [r for r in rows if "shown-zz" in r], "a nested line is shown as sent"


def test_log_leaves_out_requests_refused_for_other_reasons(server):
    before = log_rows(server)
    exchange(server, head(*GOOD, target="/nope-zz"), LIST_SESSIONS)          # 404
    exchange(server, head(*GOOD).replace("HTTP/1.1\r\n", "HTTP/1.1\n", 1))   # 400
    exchange(server, head(*replace(GOOD, "Content-Length: {len}")))           # 411
    exchange(server, b"GET /mcp HTTP/1.1\r\n")                                # head deadline
    assert log_rows(server) == before


def test_log_never_holds_the_token(server):
    post(server, LIST_SESSIONS)
    server.fetch_token("/control token regenerate")
    rows = log_rows(server)
    assert rows, "the log is empty"
    for row in rows:
        assert server.token.value not in row


def test_log_survives_switching_off_and_on(server):
    post(server, LIST_SESSIONS)
    server.set("control.enabled", "off")
    server.wait_status(lambda s: s == OFF_NOTICE)
    server.set("control.enabled", "on")
    server.wait_serving()
    assert len([r for r in log_rows(server) if "list_sessions" in r]) == 1
