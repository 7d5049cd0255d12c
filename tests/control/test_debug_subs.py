"""Raw and log subscriptions through the real HTTP server, against a real
InspIRCd ("Raw and log subscriptions" in control-surface.md): refused while
control.debug is off, delivered within the poll interval while it is on
(from the first line after subscribe answered),
paused ("debug off") and emptied into dropped when it goes off again.

The lines come from send_raw (PING, answered by the server's PONG) rather
than from a bot: send_raw is the one way an agent makes a session write, and
its own log line (info, category network) is what the log subscription sees.
"""
import json
import time

from ircd import Inspircd
from rawhttp import call, post, tool_text
from reterm_proc import NETWORK_ID
from test_send import connected_reterm

DISABLED = "debug tools are disabled"
# The rings are polled once a second; a wait of three covers a poll that has
# just run, the next one and the batch's delivery.
WAIT = 3


def tool(server, name, arguments):
    return tool_text(post(server, call(name, arguments), timeout=25))


def ok(server, name, arguments):
    is_error, text = tool(server, name, arguments)
    assert not is_error, (name, arguments, text)
    return json.loads(text)


def listed(server, sub_id):
    [entry] = [s for s in ok(server, "list_subscriptions", {})["subscriptions"]
               if s["id"] == sub_id]
    return entry


def ping(server, tag):
    sent = ok(server, "send_raw", {"session": NETWORK_ID, "line": f"PING :{tag}"})
    assert sent["sent"] is True, sent


def wait_events(server, sub_id, predicate, tag):
    """Full-mode events of `sub_id` until one matches `predicate`, each wait
    bounded by the poll interval; every event read, in order."""
    seen = []
    deadline = time.monotonic() + 4 * WAIT
    while not any(predicate(e) for e in seen):
        assert time.monotonic() < deadline, (tag, seen)
        got = ok(server, "wait_for_updates",
                 {"id": sub_id, "detail": "full", "timeout": WAIT, "limit": 500})
        assert not got.get("timed_out"), (f"nothing within {WAIT} s", tag, seen)
        for update in got["updates"]:
            seen.extend(update["events"])
    return seen


def test_raw_and_log_subscriptions_follow_the_debug_switch(start_reterm):
    ircd = Inspircd().start()
    try:
        server = connected_reterm(start_reterm, ircd)

        # Off: raw and log are refused before any other argument is read.
        for arguments in ({"raw": {}}, {"log": {"min_level": "info"}},
                          {"raw": {"sessions": [NETWORK_ID]}, "mentions": True}):
            assert tool(server, "subscribe", arguments) == (True, DISABLED), arguments

        assert server.set("control.debug", "on")
        raw = ok(server, "subscribe", {"raw": {"sessions": [NETWORK_ID]}})["subscription"]
        log = ok(server, "subscribe",
                 {"log": {"min_level": "info", "categories": ["network"]}})["subscription"]
        # Each starts at its ring's end when subscribe answers: the PING
        # sent right after it, its PONG and its log line are all delivered.
        ping(server, "dbgsub-1")
        events = wait_events(
            server, raw["id"],
            lambda e: e["line"]["dir"] == "in" and "dbgsub-1" in e["line"]["line"],
            "the PONG")
        lines = [(e["line"]["dir"], e["line"]["line"]) for e in events]
        assert all(e["type"] == "raw" and e["session"] == NETWORK_ID
                   and e["line"]["untrusted"] is True for e in events), events
        assert ("out", "PING :dbgsub-1") in lines, lines
        assert set(events[0]["line"]) == {"seq", "time", "dir", "line", "untrusted"}, events

        logged = wait_events(server, log["id"],
                             lambda e: "PING :dbgsub-1" in e["line"]["text"], "the log line")
        hit = [e for e in logged if "PING :dbgsub-1" in e["line"]["text"]][0]
        assert hit["type"] == "log", hit
        assert set(hit["line"]) == {"seq", "time", "level", "category", "text", "untrusted"}, hit
        assert (hit["line"]["level"], hit["line"]["category"]) == ("info", "network"), hit

        # Pending at debug off: removed into dropped, never delivered.
        ping(server, "dbgsub-2")
        deadline = time.monotonic() + 4 * WAIT
        while listed(server, raw["id"])["pending"] == 0:
            assert time.monotonic() < deadline, "the second PING was never collected"
            time.sleep(0.1)
        pending = listed(server, raw["id"])["pending"]
        assert server.set("control.debug", "off")
        entry = listed(server, raw["id"])
        assert entry["state"] == "active" and entry["paused"] == "debug off", entry
        assert entry["pending"] == 0 and entry["dropped"] >= pending, (pending, entry)
        assert listed(server, log["id"])["paused"] == "debug off"
        got = ok(server, "read_updates", {"id": raw["id"], "detail": "full"})
        assert all(not u["events"] for u in got["updates"]), got
        dropped = sum(u.get("dropped", 0) for u in got["updates"])
        assert dropped >= pending, got

        # While off nothing is collected and a wait is not ended by one.
        ping(server, "dbgsub-3")
        got = ok(server, "wait_for_updates", {"id": raw["id"], "timeout": 2})
        assert got.get("timed_out") is True, got
        assert tool(server, "subscribe", {"raw": {}}) == (True, DISABLED)
        assert tool(server, "subscribe", {"log": {}}) == (True, DISABLED)
    finally:
        ircd.stop()
