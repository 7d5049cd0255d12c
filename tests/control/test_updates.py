"""The live-update tools on the wire: subscribe, unsubscribe,
list_subscriptions, read_updates and wait_for_updates ("Live updates" and
"Tool results and tool errors" in control-surface.md).

reterm runs here with no IRC session connected, so nothing is ever collected:
these tests pin the results' shapes, the normalised filters, every argument
error, the limits (16 subscriptions, 2 waits), the waits' timeouts and
cancellation, and when subscriptions are removed. Delivery itself is covered
by the Rust tests against InspIRCd.

Subscriptions and waits are global to a server, so a test that counts them or
holds waits starts its own; tests on the module's shared server remove what
they make.
"""

import calendar
import contextlib
import json
import re
import time

import pytest

import sdk
from rawhttp import Pending, call, post, tool_text
from reterm_proc import NETWORK_ID, OFF_NOTICE, free_port

SUB_ID_RE = re.compile(r"^sub_[0-9a-f]{12}$")
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")

# Well-formed ids (hyphenated UUIDs, as list_sessions and list_buffers spell
# them) that name nothing on these servers.
NO_SESSION = "0A0B0C0D-1111-4222-8333-444455556666"
NO_BUFFER = "9F8E7D6C-5B4A-4321-8FED-CBA987654321"

TOO_MANY_SUBSCRIPTIONS = "too many subscriptions: unsubscribe one first (limit 16)"
TOO_MANY_WAITS = "too many waiting calls: at most 2 wait_for_updates may run at once"
NOTHING = '{"untrusted":true,"updates":[]}'
TIMED_OUT = '{"timed_out":true,"untrusted":true,"updates":[]}'
EMPTY_LIST = '{"subscriptions":[]}'

# How long a wait that is being held must stay unanswered before the test
# counts it as parked. The server answers a refused wait at once (within a
# few milliseconds); nothing it exposes says that a wait has been parked (the
# access log's "waiting" row would, see test_access_log_rows_of_a_wait), so
# silence for this long stands in for it.
PARKED_AFTER = 0.25


def compact_sorted(value):
    """The contract's encoding: compact JSON, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def tool(server, name, arguments=None, **kw):
    """(isError, text) of one tools/call over its own connection."""
    return tool_text(post(server, call(name, arguments), **kw))


def ok(server, name, arguments=None, **kw):
    """The result of a call that must succeed, checked to be in the
    contract's encoding."""
    is_error, text = tool(server, name, arguments, **kw)
    assert not is_error, (name, arguments, text)
    result = json.loads(text)
    assert text == compact_sorted(result), text
    return result


def subscribe(server, arguments):
    return ok(server, "subscribe", arguments)["subscription"]


def listed(server, **kw):
    return ok(server, "list_subscriptions", {}, **kw)["subscriptions"]


@contextlib.contextmanager
def subscribed(server, arguments):
    """A subscription on a shared server, removed after the block."""
    sub = subscribe(server, arguments)
    try:
        yield sub
    finally:
        assert tool(server, "unsubscribe", {"id": sub["id"]}) == (False, '{"unsubscribed":true}')


def hold_wait(server, arguments):
    """A wait_for_updates sent and left waiting; checks it is not answered at
    once (a refused wait would be)."""
    pending = Pending(server, call("wait_for_updates", arguments))
    if pending.answered_within(PARKED_AFTER):
        reply = pending.finish()
        pytest.fail(f"the wait was answered at once: {reply!r}")
    return pending


def wait_text(pending, timeout=25.0):
    """(isError, text, seconds from send to answer) of a held call."""
    reply = pending.finish(timeout)
    is_error, text = tool_text(reply)
    return is_error, text, reply.elapsed


# -- subscribe's result and its normalised filters -------------------------------

def test_subscribe_result_shape(shared_server):
    before = time.time()
    is_error, text = tool(shared_server, "subscribe", {"mentions": True})
    assert not is_error, text
    result = json.loads(text)
    try:
        assert text == compact_sorted(result)
        assert list(result) == ["subscription"], result
        sub = result["subscription"]
        assert sorted(sub) == ["created", "expires_after_idle", "filters", "id"], sub
        assert SUB_ID_RE.match(sub["id"]), sub
        assert sub["expires_after_idle"] == 900
        assert sub["filters"] == {"mentions": True}
        assert TIME_RE.match(sub["created"]), sub
        created = calendar.timegm(time.strptime(sub["created"], "%Y-%m-%dT%H:%M:%SZ"))
        assert before - 2 <= created <= time.time() + 1, (sub["created"], before)
        assert "untrusted" not in text
    finally:
        tool(shared_server, "unsubscribe", {"id": result["subscription"]["id"]})


def test_subscribe_through_the_sdk(shared_server):
    """The official SDK's client sees the same result as a raw request."""

    async def flow(s):
        await s.initialize()
        made = sdk.wire(await s.call_tool("subscribe", {"queries": True}))
        gone = sdk.wire(await s.call_tool(
            "unsubscribe", {"id": json.loads(made["content"][0]["text"])["subscription"]["id"]}))
        return made, gone

    made, gone = sdk.run(shared_server.port, shared_server.token, flow)
    assert not made.get("isError", False), made
    [item] = made["content"]
    assert item["type"] == "text"
    sub = json.loads(item["text"])["subscription"]
    assert SUB_ID_RE.match(sub["id"]) and sub["filters"] == {"queries": True}, sub
    assert gone["content"] == [{"type": "text", "text": '{"unsubscribed":true}'}], gone
    assert not gone.get("isError", False), gone


def test_filters_are_normalised(shared_server):
    other_session = "00000000-0000-4000-8000-00000000000A"
    other_buffer = "0000000B-0000-5000-8000-0000000000C0"
    arguments = {
        "sessions": [NETWORK_ID.lower(), other_session.lower(), NETWORK_ID, other_session],
        "buffers": [NO_BUFFER.lower(), other_buffer.lower(), NO_BUFFER],
        "from": ["Zed", "alice", "", "ALICE", "Ünï", "ünï", ""],
        "kinds": ["privmsg", "kick", "notice", "join", "privmsg"],
        "match": "Hello There",
        "match_mode": "substring",
        "mentions": False,
        "queries": True,
    }
    with subscribed(shared_server, arguments) as sub:
        want = {
            "buffers": sorted([other_buffer, NO_BUFFER]),
            "from": ["alice", "zed", "ünï"],
            "kinds": ["join", "kick", "notice", "privmsg"],
            "match": "Hello There",
            "queries": True,
            "sessions": sorted([other_session, NETWORK_ID]),
        }
        assert compact_sorted(sub["filters"]) == compact_sorted(want)
        [entry] = [e for e in listed(shared_server) if e["id"] == sub["id"]]
        assert entry["filters"] == sub["filters"], "list_subscriptions shows other filters"


@pytest.mark.parametrize("arguments,filters", [
    ({"match": "*x*", "match_mode": "glob"}, {"match": "*x*", "match_mode": "glob"}),
    ({"match": "x", "match_mode": None}, {"match": "x"}),
    ({"mentions": True, "queries": False, "from": [], "sessions": None},
     {"mentions": True}),
    ({"from": ["", "Bob"]}, {"from": ["bob"]}),
    ({"kinds": ["topic", "part", "quit", "nick", "mode", "action"]},
     {"kinds": ["action", "mode", "nick", "part", "quit", "topic"]}),
    ({"from": ["n" * 64]}, {"from": ["n" * 64]}),
    ({"match": "m" * 256}, {"match": "m" * 256}),
    ({"match": "é" * 128}, {"match": "é" * 128}),
    ({"from": [f"nick{i}" for i in range(50)]},
     {"from": sorted(f"nick{i}" for i in range(50))}),
], ids=["glob kept", "null match_mode", "false and empty dropped", "empty from dropped",
        "kinds sorted", "64-byte from", "256-byte match", "256-byte multibyte match",
        "50 entries"])
def test_filters_given_and_shown(shared_server, arguments, filters):
    with subscribed(shared_server, arguments) as sub:
        assert sub["filters"] == filters


# -- subscribe's errors -------------------------------------------------------

def bad_arguments(detail):
    return "invalid arguments: " + detail


SUBSCRIBE_ERRORS = [
    # raw and log with debug off, whatever their value, before anything else.
    ({"raw": {}}, "debug tools are disabled"),
    ({"log": {"min_level": "debug"}}, "debug tools are disabled"),
    ({"raw": None}, "debug tools are disabled"),
    ({"log": None, "mentions": True}, "debug tools are disabled"),
    ({"raw": 5, "bogus": 1}, "debug tools are disabled"),
    ({"log": [], "sessions": "x", "match_mode": "regex"}, "debug tools are disabled"),
    ({"raw": {}, "sessions": ["x" * 65]}, "debug tools are disabled"),
    ({"log": {}, "sessions": ["nope"]}, "debug tools are disabled"),
    # Unknown arguments, null included.
    ({"bogus": 1}, bad_arguments('unknown argument "bogus"')),
    ({"mentions": True, "bogus": None}, bad_arguments('unknown argument "bogus"')),
    ({"Mentions": True}, bad_arguments('unknown argument "Mentions"')),
    ({"raw.sessions": []}, bad_arguments('unknown argument "raw.sessions"')),
    # Wrong types.
    ({"sessions": NETWORK_ID}, bad_arguments("sessions must be an array of strings")),
    ({"sessions": [1]}, bad_arguments("sessions must be an array of strings")),
    ({"buffers": {}}, bad_arguments("buffers must be an array of strings")),
    ({"from": ["alice", None]}, bad_arguments("from must be an array of strings")),
    ({"kinds": "privmsg"}, bad_arguments("kinds must be an array of strings")),
    ({"mentions": "true"}, bad_arguments("mentions must be a boolean")),
    ({"queries": 1}, bad_arguments("queries must be a boolean")),
    ({"match": 5}, bad_arguments("match must be a string")),
    ({"match": ["x"]}, bad_arguments("match must be a string")),
    ({"match_mode": True}, bad_arguments("match_mode must be a string")),
    # Entry counts, as sent (empty from entries count).
    ({"sessions": [NETWORK_ID] * 51}, bad_arguments("sessions has more than 50 entries")),
    ({"buffers": [NO_BUFFER] * 51}, bad_arguments("buffers has more than 50 entries")),
    ({"from": [""] * 51}, bad_arguments("from has more than 50 entries")),
    # Entry lengths in UTF-8 bytes as sent, before any id is parsed.
    ({"sessions": ["s" * 65]}, bad_arguments("sessions entry is longer than 64 bytes")),
    ({"sessions": [NETWORK_ID + " " * 29]},
     bad_arguments("sessions entry is longer than 64 bytes")),
    ({"buffers": [NO_BUFFER, "b" * 65]}, bad_arguments("buffers entry is longer than 64 bytes")),
    ({"from": ["n" * 65]}, bad_arguments("from entry is longer than 64 bytes")),
    ({"from": ["é" * 33]}, bad_arguments("from entry is longer than 64 bytes")),
    # The match's length.
    ({"match": "m" * 257}, bad_arguments("match is longer than 256 bytes")),
    ({"match": "é" * 128 + "m"}, bad_arguments("match is longer than 256 bytes")),
    # match_mode.
    ({"match": "x", "match_mode": "regex"}, bad_arguments("match_mode must be substring or glob")),
    ({"mentions": True, "match_mode": ""}, bad_arguments("match_mode must be substring or glob")),
    # Kinds: only the ten message kinds a subscription takes.
    ({"kinds": ["privmsg", "bogus"]}, bad_arguments('unknown kind: "bogus"')),
    ({"kinds": ["ctcp"]}, bad_arguments('unknown kind: "ctcp"')),
    ({"kinds": ["status"]}, bad_arguments('unknown kind: "status"')),
    ({"kinds": ['a"b\\c']}, bad_arguments('unknown kind: "a\\"b\\\\c"')),
    ({"kinds": ["k" * 100]}, bad_arguments('unknown kind: "' + "k" * 64 + '"')),
    # Malformed ids.
    ({"sessions": ["nope"]}, "unknown session"),
    ({"sessions": [NETWORK_ID, ""]}, "unknown session"),
    ({"sessions": ["{" + NETWORK_ID + "}"]}, "unknown session"),
    ({"sessions": [NETWORK_ID.replace("-", "")]}, "unknown session"),
    ({"buffers": ["nope"]}, "unknown buffer"),
    ({"buffers": [NO_BUFFER[:-1]]}, "unknown buffer"),
    # Nothing left to filter on.
    ({}, bad_arguments("a subscription needs at least one filter")),
    (None, bad_arguments("a subscription needs at least one filter")),
    ({"sessions": [], "buffers": [], "from": ["", ""], "kinds": [], "match": "",
      "mentions": False, "queries": False, "match_mode": "substring"},
     bad_arguments("a subscription needs at least one filter")),
]


def test_subscribe_errors(shared_server):
    before = len(listed(shared_server))
    got = [tool(shared_server, "subscribe", arguments) for arguments, _ in SUBSCRIBE_ERRORS]
    want = [(True, error) for _, error in SUBSCRIBE_ERRORS]
    mismatches = [(args, g, w) for (args, _), g, w in zip(SUBSCRIBE_ERRORS, got, want) if g != w]
    assert not mismatches, "\n".join(f"{a!r}: got {g!r}, want {w!r}" for a, g, w in mismatches)
    assert len(listed(shared_server)) == before, "a refused subscribe made a subscription"


# -- the other tools' errors ------------------------------------------------------

OTHER_ERRORS = [
    ("unsubscribe", {}, bad_arguments("missing id")),
    ("unsubscribe", {"id": None}, bad_arguments("missing id")),
    ("unsubscribe", {"id": 5}, bad_arguments("id must be a string")),
    ("unsubscribe", {"id": "sub_000000000000", "x": 1}, bad_arguments('unknown argument "x"')),
    ("unsubscribe", {"id": "sub_000000000000"}, "unknown subscription"),
    ("unsubscribe", {"id": "nope"}, "unknown subscription"),
    ("unsubscribe", {"id": ""}, "unknown subscription"),
    ("list_subscriptions", {"id": None}, bad_arguments('unknown argument "id"')),
    ("read_updates", {"detail": "other"}, bad_arguments("detail must be digest or full")),
    ("read_updates", {"detail": "Full"}, bad_arguments("detail must be digest or full")),
    ("read_updates", {"detail": ""}, bad_arguments("detail must be digest or full")),
    ("read_updates", {"detail": 1}, bad_arguments("detail must be a string")),
    ("read_updates", {"peek": "yes"}, bad_arguments("peek must be a boolean")),
    ("read_updates", {"limit": 1.5}, bad_arguments("limit must be an integer")),
    ("read_updates", {"limit": "5"}, bad_arguments("limit must be an integer")),
    ("read_updates", {"id": 7}, bad_arguments("id must be a string")),
    ("read_updates", {"timeout": 1}, bad_arguments('unknown argument "timeout"')),
    ("read_updates", {"id": "sub_000000000000"}, "unknown subscription"),
    ("read_updates", {"id": "sub_zz"}, "unknown subscription"),
    ("wait_for_updates", {"detail": "other", "timeout": 1},
     bad_arguments("detail must be digest or full")),
    ("wait_for_updates", {"timeout": "1"}, bad_arguments("timeout must be an integer")),
    ("wait_for_updates", {"timeout": 1.5}, bad_arguments("timeout must be an integer")),
    ("wait_for_updates", {"since": 1}, bad_arguments('unknown argument "since"')),
    ("wait_for_updates", {"id": "sub_000000000000", "timeout": 20}, "unknown subscription"),
]


def test_other_tools_errors(shared_server):
    """Every refusal of unsubscribe, list_subscriptions, read_updates and
    wait_for_updates is answered at once (a wait refused is not a wait)."""
    started = time.monotonic()
    got = [tool(shared_server, name, arguments) for name, arguments, _ in OTHER_ERRORS]
    elapsed = time.monotonic() - started
    mismatches = [(n, a, g, e) for (n, a, e), g in zip(OTHER_ERRORS, got) if g != (True, e)]
    assert not mismatches, "\n".join(f"{n}({a!r}): got {g!r}, want {e!r}"
                                     for n, a, g, e in mismatches)
    assert elapsed < 5, f"{len(OTHER_ERRORS)} refusals took {elapsed:.2f}s"


# -- unsubscribe -------------------------------------------------------------

def test_unsubscribe_then_the_id_is_unknown(shared_server):
    sub = subscribe(shared_server, {"from": ["someone"]})
    assert sub["id"] in [e["id"] for e in listed(shared_server)]
    assert tool(shared_server, "unsubscribe", {"id": sub["id"]}) == (False, '{"unsubscribed":true}')
    assert sub["id"] not in [e["id"] for e in listed(shared_server)]
    started = time.monotonic()
    assert [
        tool(shared_server, "unsubscribe", {"id": sub["id"]}),
        tool(shared_server, "read_updates", {"id": sub["id"]}),
        tool(shared_server, "read_updates", {"id": sub["id"], "detail": "full", "peek": True}),
        tool(shared_server, "wait_for_updates", {"id": sub["id"], "timeout": 20}),
    ] == [(True, "unknown subscription")] * 4
    assert time.monotonic() - started < 5, "a wait on a removed subscription waited"


# -- list_subscriptions --------------------------------------------------------------

def test_list_subscriptions(server):
    assert tool(server, "list_subscriptions", {}) == (False, EMPTY_LIST)
    assert tool(server, "list_subscriptions", None) == (False, EMPTY_LIST)
    made = [
        subscribe(server, {"mentions": True}),
        subscribe(server, {"sessions": [NO_SESSION]}),
        subscribe(server, {"buffers": [NO_BUFFER.lower()]}),
        # The configured network's session exists but never connects.
        subscribe(server, {"sessions": [NETWORK_ID], "queries": True}),
        subscribe(server, {"from": ["x"], "match": "y"}),
    ]
    states = ["active", "session_disconnected", "buffer_gone", "session_disconnected", "active"]
    is_error, text = tool(server, "list_subscriptions", {})
    assert not is_error, text
    assert "untrusted" not in text
    entries = json.loads(text)["subscriptions"]
    assert [e["id"] for e in entries] == [m["id"] for m in made], "not oldest first"
    for entry, sub, state in zip(entries, made, states):
        assert sorted(entry) == ["created", "dropped", "filters", "id", "pending", "state"], entry
        assert entry["filters"] == sub["filters"], entry
        assert entry["created"] == sub["created"], entry
        assert (entry["pending"], entry["dropped"], entry["state"]) == (0, 0, state), entry

    # A read of one id touches that subscription only; a read with none, all.
    assert tool(server, "read_updates", {"id": made[1]["id"]}) == (False, NOTHING)
    entries = listed(server)
    assert [("last_read" in e) for e in entries] == [False, True, False, False, False], entries
    assert TIME_RE.match(entries[1]["last_read"]), entries[1]
    assert entries[1]["last_read"] >= entries[1]["created"], entries[1]
    assert tool(server, "read_updates", {"peek": True}) == (False, NOTHING)
    entries = listed(server)
    assert all(TIME_RE.match(e.get("last_read", "")) for e in entries), entries
    assert [(e["pending"], e["dropped"]) for e in entries] == [(0, 0)] * len(made), entries


# -- read_updates -------------------------------------------------------------

def test_read_with_nothing_to_report(server):
    reads = [{}, None, {"detail": "digest"}, {"detail": "full"}, {"peek": True},
             {"detail": "full", "limit": 0}, {"detail": "full", "limit": 10 ** 30},
             {"detail": "full", "limit": -5, "peek": False}, {"id": None, "detail": None}]
    for arguments in reads:
        assert tool(server, "read_updates", arguments) == (False, NOTHING), arguments
    sub = subscribe(server, {"mentions": True})
    for arguments in reads + [{"id": sub["id"]}, {"id": sub["id"], "detail": "full"}]:
        assert tool(server, "read_updates", arguments) == (False, NOTHING), arguments


# -- wait_for_updates' timeout -----------------------------------------------------

@pytest.mark.parametrize("timeout", [1, 0, -7, 1.0, "named"])
def test_wait_times_out(shared_server, timeout):
    """timeout is clamped to 1…20 seconds: 0 and below wait 1 s."""
    if timeout == "named":
        with subscribed(shared_server, {"mentions": True}) as sub:
            started = time.monotonic()
            got = tool(shared_server, "wait_for_updates",
                       {"id": sub["id"], "timeout": 1, "detail": "full"})
            elapsed = time.monotonic() - started
    else:
        started = time.monotonic()
        got = tool(shared_server, "wait_for_updates", {"timeout": timeout})
        elapsed = time.monotonic() - started
    assert got == (False, TIMED_OUT)
    assert 0.9 <= elapsed < 2.0, f"a 1 s wait took {elapsed:.2f}s"


def test_huge_and_default_timeouts_wait_20_seconds(server):
    """The one 20-second test: a timeout past 20 (even past 64 bits) and no
    timeout at all both wait 20 s, side by side."""
    huge = hold_wait(server, {"timeout": 10 ** 30})
    default = hold_wait(server, {})
    results = [wait_text(huge), wait_text(default)]
    for is_error, text, elapsed in results:
        assert (is_error, text) == (False, TIMED_OUT)
        assert 19.5 <= elapsed < 22, f"a 20 s wait took {elapsed:.2f}s"


# -- at most two waits ------------------------------------------------------------

def test_at_most_two_waits(server):
    sub = subscribe(server, {"mentions": True})
    first = hold_wait(server, {"timeout": 20})
    second = hold_wait(server, {"id": sub["id"], "timeout": 20})
    try:
        started = time.monotonic()
        assert tool(server, "wait_for_updates", {"timeout": 1}) == (True, TOO_MANY_WAITS)
        assert tool(server, "wait_for_updates", {"id": sub["id"], "timeout": 20}) == \
            (True, TOO_MANY_WAITS)
        refused_in = time.monotonic() - started
        assert refused_in < 1.0, f"two refused waits took {refused_in:.2f}s"
        # Every other tool keeps answering.
        assert len(listed(server)) == 1
        assert tool(server, "read_updates", {}) == (False, NOTHING)
        assert not tool(server, "list_sessions", {})[0]
        other = subscribe(server, {"queries": True})
        assert tool(server, "unsubscribe", {"id": other["id"]}) == (False, '{"unsubscribed":true}')
        # The two waits are still waiting.
        assert not first.answered_within(0) and not second.answered_within(0)
    finally:
        first.close()
        second.close()


def test_closing_a_waiting_client_frees_its_place(server):
    first = hold_wait(server, {"timeout": 20})
    second = hold_wait(server, {"timeout": 20})
    try:
        assert tool(server, "wait_for_updates", {"timeout": 1}) == (True, TOO_MANY_WAITS)
        second.close()
        closed_at = time.monotonic()
        refusals = 0
        last_refused = None
        while True:
            attempt = time.monotonic()
            is_error, text, _ = wait_text(Pending(server, call("wait_for_updates", {"timeout": 1})))
            if (is_error, text) == (True, TOO_MANY_WAITS):
                refusals += 1
                last_refused = attempt - closed_at
                assert attempt - closed_at < 2.0, "the closed client's wait still holds its place"
                continue
            assert (is_error, text) == (False, TIMED_OUT)
            freed_after = attempt - closed_at
            break
        print(f"\nwait place freed {freed_after * 1000:.1f} ms after the close "
              f"({refusals} refused before; last refused at "
              f"{'-' if last_refused is None else f'{last_refused * 1000:.1f} ms'})")
        assert freed_after < 0.5, f"freed only after {freed_after * 1000:.0f} ms"
        assert not first.answered_within(0), "the other wait ended"
    finally:
        first.close()
        second.close()


def test_removing_a_named_subscription_ends_its_wait(server):
    sub = subscribe(server, {"mentions": True})
    other = subscribe(server, {"queries": True})
    named = hold_wait(server, {"id": sub["id"], "timeout": 20})
    unnamed = hold_wait(server, {"timeout": 20})
    try:
        removed_at = time.monotonic()
        assert tool(server, "unsubscribe", {"id": sub["id"]}) == (False, '{"unsubscribed":true}')
        is_error, text, _ = wait_text(named, timeout=5)
        ended_after = time.monotonic() - removed_at
        print(f"\nnamed wait ended {ended_after * 1000:.1f} ms after unsubscribe")
        assert (is_error, text) == (True, "unknown subscription")
        assert ended_after < 1.0, f"the wait ended {ended_after:.2f}s after its subscription"
        # A wait on every subscription does not end when one goes.
        assert not unnamed.answered_within(0.1), "the wait on every subscription ended"
        assert [e["id"] for e in listed(server)] == [other["id"]]
    finally:
        named.close()
        unnamed.close()


# -- the AI access log -------------------------------------------------------------

def test_access_log_rows_of_a_wait(server):
    """A wait is logged twice (waiting, then its end); a refused one once."""
    first = hold_wait(server, {"timeout": 20})
    second = hold_wait(server, {"timeout": 20})
    try:
        assert tool(server, "wait_for_updates", {"timeout": 1}) == (True, TOO_MANY_WAITS)
    finally:
        first.close()
        second.close()
    rows = [r for r in server.run("/control log") if "wait_for_updates" in r]
    waiting = [r for r in rows if r.endswith("→ waiting")]
    refused = [r for r in rows if r.endswith("→ " + TOO_MANY_WAITS)]
    assert len(waiting) == 2 and len(refused) == 1, rows


def test_access_log_rows_of_subscribe(server):
    sub = subscribe(server, {"mentions": True})
    tool(server, "subscribe", {"raw": {}})
    rows = server.run("/control log")
    made = [r for r in rows if "subscribe(mentions=true)" in r]
    assert len(made) == 1 and re.search(r"→ ok, \d+ bytes$", made[0]), rows
    assert sub["id"] not in made[0], "a result is in the log"
    assert [r for r in rows if r.endswith("subscribe(raw={}) → debug tools are disabled")], rows


# -- when subscriptions are removed --------------------------------------------------

def make_two(server):
    return [subscribe(server, {"mentions": True}), subscribe(server, {"queries": True})]


def test_regenerating_the_token_removes_subscriptions(server):
    made = make_two(server)
    server.fetch_token("/control token regenerate")
    server.wait_serving()
    assert tool(server, "list_subscriptions", {}) == (False, EMPTY_LIST)
    for sub in made:
        assert tool(server, "read_updates", {"id": sub["id"]}) == (True, "unknown subscription")
    assert len(make_two(server)) == 2 and len(listed(server)) == 2


def test_moving_the_port_removes_subscriptions(server):
    made = make_two(server)
    new_port = free_port()
    server.set("control.port", str(new_port))
    server.port = new_port
    server.wait_serving()
    assert tool(server, "list_subscriptions", {}) == (False, EMPTY_LIST)
    assert tool(server, "unsubscribe", {"id": made[0]["id"]}) == (True, "unknown subscription")


def test_switching_off_and_on_removes_subscriptions(server):
    make_two(server)
    server.set("control.enabled", "off")
    server.wait_status(lambda s: s == OFF_NOTICE)
    server.set("control.enabled", "on")
    server.wait_serving()
    assert tool(server, "list_subscriptions", {}) == (False, EMPTY_LIST)


def test_debug_and_send_switches_keep_subscriptions(server):
    made = make_two(server)
    server.set("control.debug", "on")
    server.set("control.send", "on")
    server.set("control.debug", "off")
    server.set("control.send", "off")
    assert [e["id"] for e in listed(server)] == [m["id"] for m in made]


# -- the limit of 16 -------------------------------------------------------------

def test_seventeenth_subscription_is_refused(server):
    made = [subscribe(server, {"from": [f"n{i}"]}) for i in range(15)]
    # The same filters twice are two subscriptions.
    made.append(subscribe(server, {"from": ["n0"]}))
    ids = [s["id"] for s in made]
    assert len(set(ids)) == 16 and all(SUB_ID_RE.match(i) for i in ids), ids
    assert tool(server, "subscribe", {"mentions": True}) == (True, TOO_MANY_SUBSCRIPTIONS)
    assert tool(server, "subscribe", {"queries": True}) == (True, TOO_MANY_SUBSCRIPTIONS)
    assert [e["id"] for e in listed(server)] == ids
    assert tool(server, "unsubscribe", {"id": ids[3]}) == (False, '{"unsubscribed":true}')
    again = subscribe(server, {"mentions": True})
    assert [e["id"] for e in listed(server)] == ids[:3] + ids[4:] + [again["id"]]
    assert tool(server, "subscribe", {"mentions": True}) == (True, TOO_MANY_SUBSCRIPTIONS)
