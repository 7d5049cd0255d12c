"""Injected faults on the HTTP side (issue 19): the control server stopped, or
its token regenerated, with requests in flight; and clients that misbehave at
the socket: one that half-closes after a complete request, one that never
reads its answer, one that sends its body a byte a second.

What each must get comes from control-surface.md ("Setup": stopping and
regenerating; "The access gate": the deadlines, one request per connection,
at most 8 connections, a half-closed client counts as gone). Where the
contract names no rule (an answer the client never reads) the test pins what
the listener does: it never waits on the client.

The observable event for "the slots are free" is the slot probe: seven
connections that say nothing take seven slots, and a complete request on an
eighth is still served. A slot still held by an earlier connection leaves the
eighth (accepted last: the listen queue is first in, first out) closed
unanswered. The seven then each send a request and read its answer to the
end, so the probe leaves no slot taken: an answer's slot is given back before
its end can be seen, where a connection the client just closes keeps its slot
until the server has read that close, and a test going on at once could still
find it counted.
"""

import json
import socket
import time

from identity import acting_as, server_uid
from ircd import Inspircd
from rawhttp import (GOOD, LIST_SESSIONS, Pending, _read_until, _reply, _send, call, connect,
                     exchange, fill, head, post, tool_text)
from reterm_proc import NETWORK_ID, OFF_NOTICE
from test_send import connected_reterm

SLOTS = 8
BODY_DEADLINE = 10.0
# What a stop or a regeneration waits for requests in flight ("up to 2 seconds").
STOP_GRACE = 2.0
# Scheduling slack on a busy two-core machine, on top of a contract's bound.
SLACK = 0.9
# How long a held request must stay unanswered before it counts as held (a
# refused one is answered or closed within milliseconds).
HELD_AFTER = 0.25

TOO_MANY_WAITS = "too many waiting calls: at most 2 wait_for_updates may run at once"
TIMED_OUT = '{"timed_out":true,"untrusted":true,"updates":[]}'


def tool(server, name, arguments=None, **kw):
    """(isError, text) of one tools/call over its own connection."""
    return tool_text(post(server, call(name, arguments), **kw))


def held(pending, what):
    """Checks `pending` is not answered at once, and returns it."""
    if pending.answered_within(HELD_AFTER):
        raise AssertionError(f"{what} was answered at once: {pending.finish()!r}")
    return pending


def hold_wait(server, arguments=None):
    """A wait_for_updates (20 s) sent and left parked."""
    arguments = {"timeout": 20, **(arguments or {})}
    return held(Pending(server, call("wait_for_updates", arguments)), "a wait")


class HalfBody:
    """A request whose head (gate passed) and half its body were sent, the rest
    held back: a request in flight that no tool has seen yet."""

    def __init__(self, server, body=LIST_SESSIONS, token=None):
        self.body = body
        self.sock = connect(server)
        self.sent = time.monotonic()
        _send(self.sock, fill(head(*GOOD), server, body, token) + body[: len(body) // 2])
        self.raw = b""
        self.closed = False

    def answered_within(self, seconds):
        more, closed = _read_until(self.sock, time.monotonic() + seconds, stop=lambda d: d != b"")
        self.raw += more
        self.closed = self.closed or closed
        return self.raw != b"" or self.closed

    def send_rest(self):
        _send(self.sock, self.body[len(self.body) // 2:])

    def finish(self, timeout):
        if not self.closed:
            more, self.closed = _read_until(self.sock, time.monotonic() + timeout)
            self.raw += more
        self.sock.close()
        return self.raw, self.closed


def finish_all(requests, timeout):
    """(raw, closed, when it closed) of each held request, read in turn for up to
    `timeout` seconds in all; `when` is on time.monotonic()'s clock. Read in
    turn, a request that closed early is seen late, so `when` is an upper
    bound."""
    deadline = time.monotonic() + timeout
    out = []
    for r in requests:
        left = max(0.0, deadline - time.monotonic())
        if isinstance(r, Pending):
            reply = r.finish(left)
            raw, closed = reply.raw, reply.closed
        else:
            raw, closed = r.finish(left)
        out.append((raw, closed, time.monotonic()))
    return out


def all_slots_free(server):
    """The slot probe (see the module's doc): True when all 8 slots are free."""
    holders = [connect(server) for _ in range(SLOTS - 1)]
    try:
        reply = post(server, LIST_SESSIONS, timeout=5.0)
    finally:
        release(server, holders)
    return reply.status == 200


def release(server, holders):
    """Ends connections that sent nothing with a request each, read to its
    end, so that none holds its slot afterwards (see the module's doc)."""
    request = fill(head(*GOOD), server, LIST_SESSIONS) + LIST_SESSIONS
    try:
        for sock in holders:
            _send(sock, request)
        deadline = time.monotonic() + 5.0
        for sock in holders:
            _read_until(sock, deadline)
    finally:
        for sock in holders:
            sock.close()


def wait_all_slots_free(server, within):
    """Polls the slot probe for `within` seconds; True as soon as it passes."""
    deadline = time.monotonic() + within
    while True:
        if all_slots_free(server):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def ninth_is_refused(server):
    """A connection beyond 8 held ones is closed unanswered at once."""
    reply = exchange(server, head(*GOOD), LIST_SESSIONS, timeout=3.0)
    return reply.unanswered and reply.elapsed < 1.5


def both_wait_places_free(server):
    """Two waits park and a third is refused: no place is held by an older one."""
    first = hold_wait(server, {"timeout": 5})
    second = hold_wait(server, {"timeout": 5})
    try:
        return tool(server, "wait_for_updates", {"timeout": 1}) == (True, TOO_MANY_WAITS)
    finally:
        first.close()
        second.close()


# -- the server stopped with 8 requests in flight ----------------------------------

def test_stopping_with_8_requests_in_flight_cancels_them_all(server):
    """control.enabled off with every slot taken: 2 parked waits and 6 requests
    whose bodies are on the way. Each is cancelled, its connection closed
    unanswered within the 2-second grace; the server on the same port after
    on has all 8 slots and both wait places."""
    in_flight = [hold_wait(server), hold_wait(server)]
    in_flight += [HalfBody(server) for _ in range(SLOTS - 2)]
    for r in in_flight[2:]:
        held(r, "a request with half a body")
    assert ninth_is_refused(server), "the 8 requests do not hold every slot"

    stopped_at = time.monotonic()
    server.set("control.enabled", "off")
    ends = finish_all(in_flight, timeout=STOP_GRACE + SLACK + 1.0)
    since_stop = time.monotonic() - stopped_at
    for i, (raw, closed, _) in enumerate(ends):
        assert closed, f"request {i} is still open {since_stop:.2f}s after the stop"
        assert raw == b"", f"request {i} was answered after the stop: {raw[:200]!r}"
    latest = max(e[2] for e in ends) - stopped_at
    assert latest <= STOP_GRACE + SLACK, f"the last request closed {latest:.2f}s after the stop"
    assert server.status() == OFF_NOTICE

    server.set("control.enabled", "on")
    server.wait_serving()
    assert all_slots_free(server)
    assert both_wait_places_free(server)


# -- the token regenerated during parked waits -------------------------------------

def test_regenerating_the_token_drops_requests_of_the_old_one(server):
    """"The old token gets 403 ... a request in flight at that moment is
    dropped", and "a wait_for_updates or subscribe sent under the old token
    cannot carry on into the new one": two parked waits (one on a named
    subscription) and a request whose head passed the gate with the old token
    are closed unanswered; the rest of that request's body, sent afterwards,
    is never served; the old token gets 403 and the subscriptions are gone."""
    old = server.token
    [is_error, text] = tool(server, "subscribe", {"mentions": True})
    assert not is_error, text
    sub = json.loads(text)["subscription"]["id"]
    named = hold_wait(server, {"id": sub})
    every = hold_wait(server)
    half = held(HalfBody(server), "a request with half a body")

    regenerated_at = time.monotonic()
    new = server.fetch_token("/control token regenerate")
    assert new.value != old.value
    ends = finish_all([named, every], timeout=STOP_GRACE + SLACK + 1.0)
    for i, (raw, closed, _) in enumerate(ends):
        assert closed and raw == b"", f"wait {i} under the old token: closed={closed} {raw[:200]!r}"
    latest = max(e[2] for e in ends) - regenerated_at
    assert latest <= STOP_GRACE + SLACK, f"the waits ended {latest:.2f}s after the regeneration"

    # The request judged under the old token: whatever arrives now, it is not served.
    half.send_rest()
    raw, closed = half.finish(timeout=STOP_GRACE + SLACK)
    assert closed and raw == b"", f"a request of the old token was answered: {raw[:300]!r}"

    server.wait_serving()
    assert post(server, LIST_SESSIONS, token=old).status == 403
    assert tool(server, "list_subscriptions", {}) == (False, '{"subscriptions":[]}')
    assert tool(server, "read_updates", {"id": sub}) == (True, "unknown subscription")
    assert both_wait_places_free(server)
    assert all_slots_free(server)


# -- misbehaving clients -------------------------------------------------------------

def test_half_closed_after_a_complete_request_counts_as_gone(server):
    """"A client that closes only its sending side counts as gone": a parked
    wait whose client shuts its sending side is cancelled at once, closed
    unanswered, and gives back its wait place and its slot."""
    sock = connect(server)
    try:
        body = call("wait_for_updates", {"timeout": 20})
        _send(sock, fill(head(*GOOD), server, body) + body)
        sock.shutdown(socket.SHUT_WR)
        start = time.monotonic()
        raw, closed = _read_until(sock, start + 5.0)
        elapsed = time.monotonic() - start
    finally:
        sock.close()
    assert closed and raw == b"", raw
    assert elapsed < 1.0 + SLACK, f"closed {elapsed:.2f}s after the half-close"
    assert both_wait_places_free(server)
    assert wait_all_slots_free(server, within=1.0)


class BigMotd(Inspircd):
    """An InspIRCd whose MOTD fills the server buffer with 300 long rows, so a
    read_messages answer is as large as the budget allows."""

    def config(self):
        lines = [f"{i:03d} " + "m" * 380 for i in range(300)]
        (self.dir / "bigmotd.txt").write_text("\n".join(lines) + "\n")
        return super().config().replace("/motd.txt", "/bigmotd.txt")


def test_a_client_that_never_reads_its_answer_frees_its_slot(start_reterm):
    """A client that sends read_messages (an answer near the 60,000-byte
    budget) with the smallest receive buffer and does not read: the answer is
    handed to the socket and the slot given back at once (every answer fits
    the kernel's send buffer on loopback, so the listener never waits on the
    client), so all 8 slots serve others meanwhile; when it reads at last, its
    answer is whole. (An answer the socket could not take would be given up
    on at the listener's write deadline; mcp/src/listener/tests.rs shows that
    with an answer larger than any tool's.)"""
    ircd = BigMotd().start()
    try:
        server = connected_reterm(start_reterm, ircd)
        is_error, text = tool(server, "list_buffers", {"session": NETWORK_ID})
        assert not is_error, text
        [server_buffer] = [b["id"] for b in json.loads(text)["buffers"] if b["kind"] == "server"]
        big = call("read_messages", {"buffer": server_buffer, "limit": 500})
        whole = post(server, big)
        assert whole.status == 200 and len(whole.body) > 50_000, whole

        with acting_as(server_uid()):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
            sock.connect(("127.0.0.1", server.port))
            _send(sock, fill(head(*GOOD), server, big) + big)
            # Others are served while it does not read, with every slot.
            assert wait_all_slots_free(server, within=2.0), "the non-reader holds its slot"
            others = [Pending(server, LIST_SESSIONS) for _ in range(SLOTS)]
            for other in others:
                is_error, text = tool_text(other.finish(timeout=5.0))
                assert not is_error, text
            raw, closed = _read_until(sock, time.monotonic() + 10.0)
        finally:
            sock.close()
        assert closed, "the answer did not end"
        late = _reply(raw, closed, 0.0)
        assert late.status == 200 and late.body == whole.body, late
    finally:
        ircd.stop()


def test_a_body_one_byte_a_second_is_closed_at_the_request_deadline(server):
    """The whole request must be in within 10 s of the connection being
    accepted; bytes arriving do not extend it. A body sent a byte a second is
    closed unanswered at 10 s, and its slot is free again."""
    body = LIST_SESSIONS
    sock = connect(server)
    start = time.monotonic()
    raw, closed = b"", False
    try:
        _send(sock, fill(head(*GOOD), server, body))
        for i in range(len(body)):
            _send(sock, body[i:i + 1])
            raw, closed = _read_until(sock, time.monotonic() + 1.0)
            if closed or raw or time.monotonic() - start > BODY_DEADLINE + 3:
                break
    finally:
        sock.close()
    elapsed = time.monotonic() - start
    assert closed and raw == b"", raw
    assert BODY_DEADLINE - 0.3 <= elapsed <= BODY_DEADLINE + SLACK + 1.0, elapsed
    assert wait_all_slots_free(server, within=1.0)
