"""The request head and the listener's limits ("The access gate": the table of
heads that are answered whether or not the token is right, the deadlines, and
"One request per connection ... At most 8 connections"), over raw sockets."""

import socket
import time

import pytest

from rawhttp import (A, CL, GOOD, LIST_SESSIONS, _read_until, _reply, _send, assert_empty_answer,
                     assert_served, connect, exchange, fill, head, replace)

# "These are answered whether or not the token is right": each row is sent with
# the right token and with a wrong one, and gets the same answer.
TOKENS = pytest.mark.parametrize("auth", ["right token", "wrong token"])


def with_auth(text, auth):
    """The head template `text`, its token made wrong for "wrong token"."""
    if auth == "wrong token":
        return text.replace("{token}", "wrong")
    return text


def good_head_text(**kw):
    return head(*GOOD, **kw)


# -- 400 ----------------------------------------------------------------------

BAD_HEADS = {
    "bare LF after the request line": good_head_text().replace("HTTP/1.1\r\n", "HTTP/1.1\n", 1),
    "bare LF between headers": good_head_text().replace("Content-Type: application/json\r\n",
                                                        "Content-Type: application/json\n"),
    "bare LF straight after the token": good_head_text().replace(A + "\r\n", A + "\n"),
    "bare CR straight after the token": good_head_text().replace(A + "\r\n", A + "\r\r\n"),
    "bare CR inside a value": head(*GOOD, "X-Note: a\rb"),
    "bare LF ending the head": good_head_text()[:-4] + "\n\n",
    "request line without version": "POST /mcp\r\n" + good_head_text().split("\r\n", 1)[1],
    "request line of one word": "GARBAGE\r\n" + good_head_text().split("\r\n", 1)[1],
    "request line with an extra word": good_head_text().replace("HTTP/1.1\r\n", "HTTP/1.1 x\r\n", 1),
    "header without colon": head(*GOOD, "NoColonHere"),
    "header with empty name": head(*GOOD, ": value"),
    "header name with a space": head(*GOOD, "Bad Name: value"),
    "Content-Length with a letter": head(*replace(GOOD, CL, "Content-Length: 12a")),
    "Content-Length negative": head(*replace(GOOD, CL, "Content-Length: -1")),
    "Content-Length with plus sign": head(*replace(GOOD, CL, "Content-Length: +{len}")),
    "Content-Length hexadecimal": head(*replace(GOOD, CL, "Content-Length: 0x10")),
    "Content-Length two numbers": head(*replace(GOOD, CL, "Content-Length: 1 2")),
    "two equal Content-Lengths": head(*replace(GOOD, CL, CL, CL)),
    "two different Content-Lengths": head(*replace(GOOD, CL, CL, "Content-Length: 1")),
}


@TOKENS
@pytest.mark.parametrize("text", BAD_HEADS.values(), ids=BAD_HEADS.keys())
def test_malformed_head_400(shared_server, text, auth):
    reply = exchange(shared_server, with_auth(text, auth), LIST_SESSIONS, send_body=False)
    assert_empty_answer(reply, 400)


# -- 411 ----------------------------------------------------------------------

@TOKENS
@pytest.mark.parametrize("lines", [
    replace(GOOD, CL, "Transfer-Encoding: chunked"),
    (*GOOD, "Transfer-Encoding: chunked"),
    replace(GOOD, CL, "transfer-encoding: identity"),
    replace(GOOD, CL),
], ids=["chunked", "chunked and Content-Length", "identity", "POST without Content-Length"])
def test_length_required_411(shared_server, lines, auth):
    reply = exchange(shared_server, with_auth(head(*lines), auth), send_body=False)
    assert_empty_answer(reply, 411)


# -- 413 ----------------------------------------------------------------------

@TOKENS
@pytest.mark.parametrize("length", ["65537", "99999999999999999999", "1" * 30],
                         ids=["65537", "past u64", "30 digits"])
def test_content_length_too_large_413(shared_server, length, auth):
    text = with_auth(head(*replace(GOOD, CL, f"Content-Length: {length}")), auth)
    reply = exchange(shared_server, text, send_body=False)
    assert_empty_answer(reply, 413)


def test_content_length_65536_is_served(shared_server):
    body = LIST_SESSIONS + b" " * (65536 - len(LIST_SESSIONS))
    assert_served(exchange(shared_server, head(*GOOD), body))


# -- 431 ----------------------------------------------------------------------

def padded_head(total, auth="right token"):
    """A good head of exactly `total` bytes, padded with an X-Pad header."""
    base = with_auth(head(*GOOD, "X-Pad: "), auth)
    filled = len(fill(base, _Sized(), LIST_SESSIONS))
    pad = total - filled
    assert pad >= 0
    return base.replace("X-Pad: \r\n", "X-Pad: " + "p" * pad + "\r\n")


class _Sized:
    """Stands in for a server when measuring a head: a 5-digit port and a
    43-character token, the lengths the real ones have."""
    port = 10000

    class token:  # noqa: N801 - mimics Secret
        value = "t" * 43


@TOKENS
def test_head_over_16384_bytes_431(shared_server, auth):
    reply = exchange(shared_server, padded_head(20000, auth), LIST_SESSIONS, send_body=False)
    assert_empty_answer(reply, 431)


def test_unterminated_head_over_16384_bytes_answered_at_once(shared_server):
    """The server stops reading at the limit; it does not wait for the head's end."""
    text = head(*GOOD)[:-2] + "X-Pad: " + "p" * 17000  # no end of line, no blank line
    reply = exchange(shared_server, text, send_body=False)
    assert_empty_answer(reply, 431)
    assert reply.elapsed < 1.5, reply


def test_head_of_exactly_16384_bytes_is_served(shared_server):
    text = padded_head(16384)
    assert len(fill(text, shared_server, LIST_SESSIONS)) == 16384
    assert_served(exchange(shared_server, text, LIST_SESSIONS))


# -- deadlines ----------------------------------------------------------------

HEAD_DEADLINE = 2.0
BODY_DEADLINE = 10.0
SLACK = 0.9


def assert_closed_unanswered_at(reply, deadline):
    assert reply.unanswered, reply
    assert deadline - 0.3 <= reply.elapsed <= deadline + SLACK, reply


def test_silent_connection_closed_at_head_deadline(shared_server):
    reply = exchange(shared_server, b"", timeout=HEAD_DEADLINE + 3)
    assert_closed_unanswered_at(reply, HEAD_DEADLINE)


def test_partial_head_closed_at_head_deadline(shared_server):
    partial = fill(head(*GOOD), shared_server, LIST_SESSIONS)[:60]
    reply = exchange(shared_server, partial, timeout=HEAD_DEADLINE + 3)
    assert_closed_unanswered_at(reply, HEAD_DEADLINE)


def test_trickled_head_closed_at_head_deadline(shared_server):
    """The deadline runs from acceptance: bytes arriving do not extend it."""
    data = fill(head(*GOOD), shared_server, LIST_SESSIONS)
    start = time.monotonic()
    sock = connect(shared_server)
    raw, closed = b"", False
    try:
        for i in range(len(data)):
            _send(sock, data[i:i + 1])
            raw, closed = _read_until(sock, time.monotonic() + 0.25)
            if closed or time.monotonic() - start > HEAD_DEADLINE + 3:
                break
    finally:
        sock.close()
    assert_closed_unanswered_at(_reply(raw, closed, time.monotonic() - start), HEAD_DEADLINE)


def test_incomplete_body_closed_at_body_deadline(shared_server):
    """The head arrives after a second and half the body follows; the close comes
    10 s after the connection was accepted, with no answer."""
    data = fill(head(*GOOD), shared_server, LIST_SESSIONS) + LIST_SESSIONS[:10]
    start = time.monotonic()
    sock = connect(shared_server)
    try:
        _read_until(sock, start + 1.0)  # nothing arrives; the head deadline is 2 s
        _send(sock, data)
        raw, closed = _read_until(sock, start + BODY_DEADLINE + 3)
    finally:
        sock.close()
    assert_closed_unanswered_at(_reply(raw, closed, time.monotonic() - start), BODY_DEADLINE)


# -- connections --------------------------------------------------------------

def test_at_most_8_connections_served_at_once(server):
    """8 connections that sent part of a head hold every slot: a 9th is closed
    unanswered at once; when the 8 reach their head deadline the slots free up."""
    partial = fill(head(*GOOD), server, LIST_SESSIONS)[:40]
    held = []
    try:
        for _ in range(8):
            sock = connect(server)
            _send(sock, partial)
            held.append(sock)
        # Let the listener accept all 8 (well inside their 2 s head deadline).
        time.sleep(0.2)
        ninth = exchange(server, head(*GOOD), LIST_SESSIONS, timeout=HEAD_DEADLINE + 3)
        assert ninth.unanswered, ninth
        assert ninth.elapsed < 1.5, ninth
        for sock in held:
            raw, closed = _read_until(sock, time.monotonic() + HEAD_DEADLINE + 2)
            assert closed and raw == b"", raw
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 3
    while True:
        reply = exchange(server, head(*GOOD), LIST_SESSIONS)
        if reply.status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert_served(reply)


def test_one_request_per_connection(shared_server):
    """A second request on the same connection is never answered: the answer
    carries Connection: close and the connection is closed after it."""
    one = fill(head(*GOOD), shared_server, LIST_SESSIONS) + LIST_SESSIONS
    start = time.monotonic()
    sock = connect(shared_server)
    try:
        _send(sock, one + one)
        raw, closed = _read_until(sock, start + 5)
    finally:
        sock.close()
    reply = _reply(raw, closed, time.monotonic() - start)
    assert_served(reply)
    assert raw.count(b"HTTP/1.1 ") == 1, reply


def test_closing_the_sending_side_ends_the_request(shared_server):
    """"A client that closes only its sending side counts as gone": the request
    is cancelled and the connection closes without hanging. A call that
    finished before the server noticed may still be answered (list_sessions is
    quick), and then the answer must be whole."""
    reply = exchange(shared_server, head(*GOOD), LIST_SESSIONS, half_close=True, timeout=5.0)
    assert reply.closed, reply
    assert reply.elapsed < 3.0, reply
    if not reply.unanswered:
        assert_served(reply)


def test_half_closed_before_head_complete_is_closed(shared_server):
    partial = fill(head(*GOOD), shared_server, LIST_SESSIONS)[:60]
    reply = exchange(shared_server, partial, half_close=True, timeout=HEAD_DEADLINE + 3)
    assert reply.unanswered, reply
    assert reply.elapsed < 1.0, reply


@pytest.mark.parametrize("family,address", [(socket.AF_INET, "127.0.0.2"),
                                            (socket.AF_INET6, "::1")])
def test_listens_on_127_0_0_1_alone(shared_server, family, address):
    """Another loopback address of this host (which 0.0.0.0 or :: would cover)
    gets no connection."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        with pytest.raises(OSError):
            sock.connect((address, shared_server.port))
