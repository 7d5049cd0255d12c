"""A scoped grant (issue 33) through the real HTTP server, with the official
Python MCP SDK, against a real InspIRCd.

Unique markers are planted where the grant must not see: a channel outside
its globs (messages, its topic, a nick only there, raw traffic) and a query
(queries are off). Then every tool the grant's tools/list offers is driven
with arguments generated from its schema — ids and cursors taken from the
grant's own answers and from the full token's — and so is every kind of
subscription, and every answer is scanned: no marker, no out-of-scope id or
name. Its sends are limited to PRIVMSG, NOTICE and TAGMSG within its scope.
Revocation and expiry take effect on the next request, and a read-tier grant
is offered and served no debug or send tool.

The grant is made and revoked with reterm's `/control grant` commands; its
token is read from the headers file they write (`~/.rete/grants/NAME.json`).
"""

import json
import secrets
import time

import sdk
from ircd import Inspircd, Watcher
from masking import Secret
from rawhttp import Pending, call, post, tool_text
from reterm_proc import NETWORK_ID, NETWORK_NAME, NETWORK_NICK
from test_send import connected_reterm

IN_CHANNEL = "#rust-grant"
OUT_CHANNEL = "#priv-grant"
# Well-formed ids that name nothing.
NO_SESSION = "0A0B0C0D-1111-4222-8333-444455556666"
DEBUG_DISABLED = "debug tools are disabled"
SENDING_DISABLED = "sending is disabled"
TOO_MANY_SUBSCRIPTIONS = "too many subscriptions: unsubscribe one first (limit 16)"
TOO_MANY_WAITS = "too many waiting calls: at most 2 wait_for_updates may run at once"
# A held wait unanswered this long counts as parked (a refusal comes at once).
PARKED_AFTER = 0.25


def calls(port, token, batch):
    """[(name, arguments)] called in one SDK session as `token`:
    (tool names listed, [(name, arguments, isError, text)])."""

    async def flow(s):
        await s.initialize()
        names = [t.name for t in (await s.list_tools()).tools]
        out = []
        for name, arguments in batch:
            result = sdk.wire(await s.call_tool(name, arguments))
            [content] = result["content"]
            out.append((name, arguments, bool(result.get("isError", False)), content["text"]))
        return names, out

    return sdk.run(port, token, flow, timeout=60)


def schemas(port, token):
    async def flow(s):
        await s.initialize()
        return {t.name: sdk.wire(t)["inputSchema"] for t in (await s.list_tools()).tools}

    return sdk.run(port, token, flow)


def ok_json(port, token, name, arguments):
    _, [(_, _, is_error, text)] = calls(port, token, [(name, arguments)])
    assert not is_error, (name, arguments, text)
    return json.loads(text)


def cursors_in(value, found):
    """Every string under a key ending in `cursor`, anywhere in `value`."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key.endswith("cursor") and isinstance(inner, str):
                found.add(inner)
            cursors_in(inner, found)
    elif isinstance(value, list):
        for inner in value:
            cursors_in(inner, found)
    return found


def generated(schema_of, candidates, skip, fixed):
    """Calls generated from each tool's schema: its required arguments from
    the candidates (and its `fixed` ones), then each candidate of each
    argument on its own."""
    out = []
    for name, schema in sorted(schema_of.items()):
        if name in skip:
            continue
        props = schema.get("properties", {})
        required = schema.get("required", [])
        base = dict(fixed.get(name, {}))
        for arg in required:
            base[arg] = candidates[arg][0]
        out.append((name, dict(base)))
        for arg in props:
            for value in candidates.get(arg, []):
                out.append((name, {**base, arg: value}))
    return out


def without_filters(text):
    """`text` with every `filters` object removed, when it is JSON."""
    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k != "filters"}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    try:
        return json.dumps(drop(json.loads(text)))
    except ValueError:
        return text


def headers_token(server, grant):
    """The grant's token, from the headers file `/control grant add` wrote."""
    path = server.home / ".rete" / "grants" / f"{grant}.json"
    assert oct(path.stat().st_mode & 0o777) == "0o600", path
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700", path.parent
    header = json.loads(path.read_text())["Authorization"]
    assert header.startswith("Bearer ")
    return Secret(header[len("Bearer "):])


class As:
    """The server as seen with another token (rawhttp fills the token from it)."""

    def __init__(self, server, token):
        self.port = server.port
        self.token = token


def status_with(server, token):
    return post(As(server, token), call("list_sessions", {})).status


def test_a_scoped_grant_sees_sends_and_lasts_only_as_granted(start_reterm):
    marker = "mk" + secrets.token_hex(5)
    out_nick = "zq" + secrets.token_hex(3)
    ircd = Inspircd().start()
    watchers = []
    try:
        # The out-of-scope channel is made (and its topic set) by a bot.
        outside = Watcher(ircd, out_nick)
        watchers.append(outside)
        outside.sock.sendall(f"JOIN {OUT_CHANNEL}\r\nTOPIC {OUT_CHANNEL} :{marker} topic\r\n".encode())
        outside.wait(lambda l: f" TOPIC {OUT_CHANNEL} " in l)
        inside = Watcher(ircd, "inbot")
        watchers.append(inside)
        inside.sock.sendall(f"JOIN {IN_CHANNEL}\r\n".encode())
        inside.wait(lambda l: f" JOIN {IN_CHANNEL}" in l or f" JOIN :{IN_CHANNEL}" in l)

        server = connected_reterm(start_reterm, ircd, channels=[IN_CHANNEL, OUT_CHANNEL],
                                  debug=True)
        full = server.token
        port = server.port
        inside.wait(lambda l: f"{NETWORK_NICK}!" in l and "JOIN" in l, timeout=15)
        outside.wait(lambda l: f"{NETWORK_NICK}!" in l and "JOIN" in l, timeout=15)
        outside.sock.sendall(
            f"PRIVMSG {OUT_CHANNEL} :{marker} channel {NETWORK_NICK}\r\n"
            f"PRIVMSG {NETWORK_NICK} :{marker} query\r\n".encode())
        inside.sock.sendall(f"PRIVMSG {IN_CHANNEL} :hello in scope\r\n".encode())

        # The full token sees it all: the ids the grant must not.
        deadline = time.monotonic() + 15
        while True:
            buffers = ok_json(port, full, "list_buffers", {"session": NETWORK_ID})["buffers"]
            by_name = {b["name"]: b for b in buffers}
            if OUT_CHANNEL in by_name and out_nick in by_name and IN_CHANNEL in by_name:
                got = ok_json(port, full, "read_messages", {"buffer": by_name[IN_CHANNEL]["id"]})
                if any("hello in scope" in json.dumps(m) for m in got["messages"]):
                    break
            assert time.monotonic() < deadline, buffers
            time.sleep(0.1)
        in_id = by_name[IN_CHANNEL]["id"]
        out_ids = [b["id"] for b in buffers if b["name"] != IN_CHANNEL]
        assert len(out_ids) == 3, buffers  # the server buffer, the channel, the query
        full_sub = ok_json(port, full, "subscribe", {"mentions": True})["subscription"]["id"]
        full_cursors = set()
        for b in buffers:
            cursors_in(ok_json(port, full, "read_messages", {"buffer": b["id"], "limit": 1}),
                       full_cursors)
        cursors_in(ok_json(port, full, "search_messages", {"query": "", "limit": 1}), full_cursors)

        made = server.run(f"/control grant add scoped networks={NETWORK_NAME} "
                          f"buffers=#rust* tier=send expires=never")
        grant = headers_token(server, "scoped")
        assert grant.value not in "\n".join(made)

        forbidden = [marker, out_nick, OUT_CHANNEL, *out_ids, full_sub]

        def scan(answers):
            for name, arguments, _, text in answers:
                # A subscription's filters repeat what the grant itself sent
                # (the out-of-scope ids it subscribed with): not a leak.
                text = without_filters(text)
                # So does a sent line's echo.
                if isinstance(arguments.get("line"), str):
                    text = text.replace(json.dumps(arguments["line"]), "")
                for word in forbidden:
                    assert word not in text, (word, name, arguments, text[:2000])

        # Its own cursors and subscriptions, then everything generated.
        own_cursors = set()
        for args in ({"buffer": in_id, "limit": 1}, {"query": "", "limit": 1}):
            tool = "read_messages" if "buffer" in args else "search_messages"
            cursors_in(ok_json(port, grant, tool, args), own_cursors)
        subscribed = []
        for filters in ({"mentions": True}, {"queries": True}, {"buffers": out_ids},
                        {"raw": {}}):
            made_sub = ok_json(port, grant, "subscribe", filters)
            subscribed.append(made_sub["subscription"]["id"])
        # A fifth is refused: a grant holds at most four.
        _, [(_, _, is_error, text)] = calls(port, grant, [("subscribe", {"log": {}})])
        assert is_error and "too many subscriptions" in text, text

        # More traffic while subscribed: a mention and a query outside, one line inside.
        outside.sock.sendall(
            f"PRIVMSG {OUT_CHANNEL} :{NETWORK_NICK}: {marker} again\r\n"
            f"PRIVMSG {NETWORK_NICK} :{marker} query again\r\n".encode())
        inside.sock.sendall(f"PRIVMSG {IN_CHANNEL} :{NETWORK_NICK}: hello again\r\n".encode())
        _, [(_, _, _, woke)] = calls(port, grant, [(
            "wait_for_updates", {"id": subscribed[0], "timeout": 10, "detail": "full"})])
        assert "hello again" in woke, woke

        schema_of = schemas(port, grant)
        partial = marker[2:]
        candidates = {
            "session": [NETWORK_ID, NO_SESSION],
            "buffer": [in_id, *out_ids],
            "sessions": [[NETWORK_ID], [NO_SESSION]],
            "buffers": [[in_id], *[[b] for b in out_ids]],
            "cursor": sorted(own_cursors | full_cursors),
            "id": [*subscribed, full_sub],
            "query": [partial, "", "hello", "*"],
            "nick": [out_nick, "inbot", NETWORK_NICK],
            "mask": [f"*{out_nick[2:]}*", "*"],
            "from": [out_nick, "inbot"],
            "commands": [["PRIVMSG"], ["TOPIC"], ["332"]],
            "detail": ["full", "digest"],
            "timeout": [1],
        }
        batch = generated(schema_of, candidates, skip={"send_raw", "subscribe", "unsubscribe"},
                          fixed={"wait_for_updates": {"timeout": 1}})
        names, answers = calls(port, grant, batch)
        assert len(answers) > 80, len(answers)
        scan(answers)
        for name, arguments, is_error, text in answers:
            if arguments.get("buffer") in out_ids and name in (
                    "read_messages", "read_since", "list_members"):
                assert (is_error, text) == (True, "unknown buffer"), (name, text)
            if name == "read_updates" and arguments.get("id") == full_sub:
                assert (is_error, text) == (True, "unknown subscription"), text
        # What it sees of its own channel is all there.
        seen = [t for n, a, e, t in answers if n == "read_messages" and a.get("buffer") == in_id]
        assert any("hello in scope" in t for t in seen), seen
        # Counts cover only its buffers: the marker is nowhere it can search.
        count = next(t for n, a, e, t in answers
                     if n == "search_messages" and a == {"query": partial})
        assert '"matches":[]' in count, count
        listed = [t for n, a, e, t in answers if n == "list_subscriptions"]
        assert listed and all(full_sub not in t for t in listed), listed
        _, gone = calls(port, grant, [("unsubscribe", {"id": full_sub})])
        assert gone[0][2:] == (True, "unknown subscription"), gone

        # Sending: only PRIVMSG, NOTICE and TAGMSG within reach.
        tried = [
            ("send_raw", {"session": NETWORK_ID, "line": f"JOIN {OUT_CHANNEL}"}),
            ("send_raw", {"session": NETWORK_ID, "line": f"PRIVMSG {OUT_CHANNEL} :no"}),
            ("send_raw", {"session": NETWORK_ID, "line": f"PRIVMSG {out_nick} :no"}),
            ("send_raw", {"session": NETWORK_ID, "line": f"PRIVMSG {IN_CHANNEL} :from the grant"}),
        ]
        _, sent = calls(port, grant, tried)
        scan(sent)
        assert [e for _, _, e, _ in sent] == [True, True, True, False], sent
        inside.wait(lambda l: "from the grant" in l)

        # Its rows in the access log name it; the full token's name nothing.
        log = server.run("/control log")
        assert any("[scoped] send_raw(" in row for row in log), log

        # Revoked: refused on the next request; the full token still served.
        assert status_with(server, grant) == 200
        server.run("/control grant revoke scoped")
        assert status_with(server, grant) == 403
        assert status_with(server, full) == 200

        # Expiry: served until it ends, refused after.
        server.run("/control grant add brief expires=2s")
        brief = headers_token(server, "brief")
        assert status_with(server, brief) == 200
        deadline = time.monotonic() + 10
        while status_with(server, brief) != 403:
            assert time.monotonic() < deadline, "an expired grant was still served"
            time.sleep(0.2)

        # A read-tier grant is offered, and served, nothing of debug or send.
        server.run("/control grant add reader")
        reader = headers_token(server, "reader")
        names, answers = calls(port, reader, [
            ("raw_since", {"session": NETWORK_ID}),
            ("send_raw", {"session": NETWORK_ID, "line": f"PRIVMSG {IN_CHANNEL} :x"}),
        ])
        for tool in ("raw_since", "search_raw", "engine_state", "read_log", "send_raw"):
            assert tool not in names, names
        assert [(e, t) for _, _, e, t in answers] == [
            (True, DEBUG_DISABLED), (True, SENDING_DISABLED)], answers
    finally:
        for w in watchers:
            w.close()
        ircd.stop()


def test_grants_together_park_one_wait_so_one_is_always_the_full_tokens(server):
    tokens = []
    for name in ("w1", "w2"):
        server.run(f"/control grant add {name}")
        tokens.append(headers_token(server, name))
    waits = []
    try:
        body = call("wait_for_updates", {"timeout": 20})
        waits.append(Pending(server, body, token=tokens[0]))
        assert not waits[0].answered_within(PARKED_AFTER), "the first grant's wait was answered"
        refused = tool_text(post(server, body, token=tokens[1]))
        assert refused == (True, TOO_MANY_WAITS), refused
        waits.append(Pending(server, body))
        assert not waits[1].answered_within(PARKED_AFTER), "the full token's wait was refused"
    finally:
        for w in waits:
            w.close()


def test_a_revoked_grants_subscriptions_give_their_places_back(server):
    server.run("/control grant add gone")
    gone = headers_token(server, "gone")
    subscribe = call("subscribe", {"mentions": True})
    for _ in range(4):
        assert tool_text(post(server, subscribe, token=gone))[0] is False
    for _ in range(12):
        assert tool_text(post(server, subscribe))[0] is False
    assert tool_text(post(server, subscribe)) == (True, TOO_MANY_SUBSCRIPTIONS)
    server.run("/control grant revoke gone")
    # The next call removes the revoked grant's four before it is answered.
    assert tool_text(post(server, subscribe))[0] is False
