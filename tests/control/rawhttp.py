"""HTTP/1.1 over a raw socket, byte for byte, as the access-gate rows need.

A request is written as a template: `{port}`, `{token}` and `{len}` (the body's
length) are filled in only when it is sent, so a test's source and pytest's
introspection never hold the token itself.
"""

import errno
import json
import select
import socket
import time
from dataclasses import dataclass, field

from identity import client_socket

# The header lines a well-formed MCP POST carries; tests change one at a time.
H = "Host: 127.0.0.1:{port}"
A = "Authorization: Bearer {token}"
CT = "Content-Type: application/json"
ACC = "Accept: application/json, text/event-stream"
CL = "Content-Length: {len}"
GOOD = (H, A, CT, ACC, CL)


def head(*lines, method="POST", target="/mcp"):
    """A request head from header lines (templates, see rawhttp.fill)."""
    return f"{method} {target} HTTP/1.1\r\n" + "".join(line + "\r\n" for line in lines) + "\r\n"


def replace(lines, old, *new):
    """`lines` with the line `old` replaced by `new` (none: dropped)."""
    out = []
    for line in lines:
        out.extend(new if line == old else (line,))
    return tuple(out)


def assert_empty_answer(reply, status):
    assert reply.status == status, reply
    assert reply.body == b"", reply
    assert reply.header("Content-Length") in (None, "0"), reply
    assert (reply.header("Connection") or "").lower() == "close", reply
    assert reply.closed, reply


def assert_refused(reply):
    assert_empty_answer(reply, 403)


def assert_served(reply):
    """The request reached list_sessions and got its result."""
    is_error, text = tool_text(reply)
    assert not is_error, text
    assert (reply.header("Connection") or "").lower() == "close", reply


GOOD_HEAD = head(*GOOD)


def rpc(method, params=None, id=1):
    """A JSON-RPC request body (a notification when id is None)."""
    msg = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        msg["id"] = id
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def call(name, arguments=None, id=1):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return rpc("tools/call", params, id)


LIST_SESSIONS = call("list_sessions", {})
INITIALIZE = rpc("initialize", {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "control-tests", "version": "0"},
})


@dataclass
class Reply:
    """What came back on one connection, up to its close."""

    raw: bytes
    elapsed: float          # seconds from connect to close (or to giving up)
    closed: bool            # the server closed (FIN or reset) before the timeout
    status: int = None
    headers: list = field(default_factory=list)
    body: bytes = b""
    interim: list = field(default_factory=list)  # 1xx statuses before the answer

    @property
    def unanswered(self):
        """Closed without a single byte sent back."""
        return self.closed and self.raw == b""

    def header(self, name):
        values = self.header_values(name)
        assert len(values) <= 1, f"{name} sent {len(values)} times"
        return values[0] if values else None

    def header_values(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        head = f"Reply(status={self.status}, closed={self.closed}, elapsed={self.elapsed:.2f}s"
        if self.status is None:
            return head + f", raw={self.raw[:300]!r})"
        return head + f", headers={self.headers}, body={self.body[:300]!r})"


def fill(template, server, body=b"", token=None):
    """The request head with its placeholders filled in, as bytes."""
    other = server.port + 1 if server.port < 65535 else server.port - 1
    text = (template.replace("{port}", str(server.port)).replace("{otherport}", str(other))
            .replace("{len}", str(len(body))))
    if "{token}" in text:
        text = text.replace("{token}", (token or server.token).value)
    return text.encode("latin-1")


def _parse(raw):
    """(interim statuses, status, headers, body) of the bytes received."""
    interim = []
    rest = raw
    while True:
        end = rest.find(b"\r\n\r\n")
        if end < 0:
            return interim, None, [], b""
        head, rest = rest[:end].decode("latin-1"), rest[end + 4:]
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
        if status is not None and 100 <= status < 200:
            interim.append(status)
            continue
        return interim, status, headers, rest


def _read_until(sock, deadline, stop=None):
    """Reads until close, the deadline, or stop(data). Returns (data, closed)."""
    data = b""
    while True:
        if stop is not None and stop(data):
            return data, False
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def _send(sock, data):
    """Sends what the server will take; a server that already closed is fine."""
    try:
        sock.sendall(data)
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.ECONNRESET):
            raise


def connect(server, *, uid=None, port=None):
    """A connected socket to the server, owned by `uid` (default: reterm's user)."""
    sock = client_socket(uid)
    sock.connect(("127.0.0.1", port or server.port))
    return sock


def exchange(server, head, body=b"", *, send_body=True, timeout=5.0, uid=None,
             half_close=False, token=None, port=None):
    """Sends `head` (a template) and `body`, then reads to the close.

    send_body=False sends only the head, keeping the connection open, to show an
    answer does not wait for a body. half_close shuts our sending side after
    the request.
    """
    start = time.monotonic()
    sock = connect(server, uid=uid, port=port)
    try:
        data = head if isinstance(head, bytes) else fill(head, server, body, token)
        _send(sock, data + (body if send_body else b""))
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        raw, closed = _read_until(sock, start + timeout)
    finally:
        sock.close()
    return _reply(raw, closed, time.monotonic() - start)


def exchange_expecting_continue(server, head, body, *, timeout=5.0, token=None):
    """Sends a head carrying Expect: 100-continue and sends the body only once
    `100 Continue` arrived (as curl does, but without its fallback timer)."""
    start = time.monotonic()
    sock = connect(server)
    try:
        _send(sock, fill(head, server, body, token))
        first, closed = _read_until(sock, start + timeout, stop=lambda d: b"\r\n\r\n" in d)
        raw = first
        if not closed and first.startswith(b"HTTP/1.1 100"):
            _send(sock, body)
            more, closed = _read_until(sock, start + timeout)
            raw += more
        elif not closed:
            more, closed = _read_until(sock, start + timeout)
            raw += more
    finally:
        sock.close()
    return _reply(raw, closed, time.monotonic() - start)


def _reply(raw, closed, elapsed):
    interim, status, headers, body = _parse(raw)
    return Reply(raw=raw, elapsed=elapsed, closed=closed, status=status, headers=headers,
                 body=body, interim=interim)


def post(server, body, *, head=GOOD_HEAD, **kw):
    """A well-formed MCP POST of `body`."""
    return exchange(server, head, body, **kw)


def result_of(reply):
    """The JSON-RPC result of a 200 answer."""
    assert reply.status == 200, reply
    msg = reply.json()
    assert "result" in msg, msg
    return msg["result"]


def tool_text(reply):
    """(isError, text) of a tools/call answer: one text content item."""
    result = result_of(reply)
    content = result["content"]
    assert len(content) == 1 and content[0]["type"] == "text", result
    return bool(result.get("isError", False)), content[0]["text"]


class Pending:
    """A request sent on its own connection whose answer is read later, so a
    test can hold a long call (wait_for_updates) open while it makes others,
    and end it by closing the connection."""

    def __init__(self, server, body, *, head=GOOD_HEAD, token=None, port=None):
        self.sock = connect(server, port=port)
        self.sent = time.monotonic()
        self.raw = b""
        self.closed = False
        _send(self.sock, fill(head, server, body, token) + body)

    def answered_within(self, seconds):
        """True when the server sent anything (or closed) within `seconds`."""
        more, closed = _read_until(self.sock, time.monotonic() + seconds,
                                   stop=lambda d: d != b"")
        self.raw += more
        self.closed = self.closed or closed
        return self.raw != b"" or self.closed

    def finish(self, timeout=5.0):
        """Reads to the close (or `timeout` seconds from now); the Reply's
        elapsed counts from when the request was sent."""
        if not self.closed:
            more, self.closed = _read_until(self.sock, time.monotonic() + timeout)
            self.raw += more
        self.close()
        return _reply(self.raw, self.closed, time.monotonic() - self.sent)

    def close(self):
        self.sock.close()
