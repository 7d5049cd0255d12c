"""The agent of the secret-corpus test (tests/terminal/secret_corpus.rs): an MCP client
(the official Python SDK) that calls every tool of reterm's control server,
run as reterm's own user by the Rust test, which plants the secrets and scans
what this agent was answered.

Run: corpus_agent.py PHASE, with a JSON object on stdin:
{"port": <control port>, "tools": [<TOOLS' names, in order>]}.

- phase "plant": makes one subscription of every kind, then sends the agent's
  own secret-bearing lines with send_raw (OPER, a NickServ login in two
  spellings, PASS, and a line with a second line after a line break);
- phase "read": calls every tool (each with the arguments that reach the most
  of what the session holds: every buffer, every page, every section), reads
  every subscription in digest and full mode, with read_updates (peek and
  not) and wait_for_updates, and makes one request with a wrong token.

Every answer goes, whole, to $HOME/corpus-<phase>.json (reterm's user's home),
never to stdout: the Rust test reads it and says only which tool leaked which
secret. The token is read from the home's secrets file, as a client would.
"""

import base64
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sdk  # noqa: E402
from masking import Secret  # noqa: E402

HOME = Path(os.environ["HOME"])
# Everything the session holds fits in a few pages; the cap only stops a
# cursor that never ends from looping for ever.
MAX_PAGES = 40
# Section names engine_state takes (the contract's list).
SECTIONS = ["connection", "registration", "sasl", "capabilities", "isupport", "channels",
            "queries", "buffers", "silentQueries", "whox", "chathistory", "batches",
            "reconnect", "flood", "config", "markread", "silence", "whois", "scripts"]
KINDS = ["privmsg", "action", "notice", "topic", "join", "part", "quit", "nick", "mode",
         "kick"]


def token():
    with open(HOME / ".rete" / "secrets.json") as f:
        return Secret(base64.b64decode(json.load(f)["mcp-token-reterm"]).decode())


class Recorder:
    """Calls tools in one SDK session and keeps every answer."""

    def __init__(self, session):
        self.s = session
        self.calls = []

    async def call(self, name, arguments):
        result = sdk.wire(await self.s.call_tool(name, arguments))
        text = "".join(c.get("text", "") for c in result.get("content", []))
        is_error = bool(result.get("isError", False))
        self.calls.append({"tool": name, "arguments": arguments, "is_error": is_error,
                           "text": text})
        return is_error, (None if is_error else json.loads(text))

    async def ok(self, name, arguments):
        is_error, value = await self.call(name, arguments)
        return value if not is_error else {}

    async def walk(self, name, arguments, items):
        """Every page of a paged read: follows next_cursor (or cursor, while
        a page still returns `items`) until the read comes back empty."""
        args = dict(arguments)
        for _ in range(MAX_PAGES):
            page = await self.ok(name, args)
            if page.get("next_cursor"):
                args[SCHEMA_CURSOR.get(name, "cursor")] = page["next_cursor"]
                continue
            cursor = page.get("cursor")
            if cursor and page.get(items) and cursor != args.get("cursor"):
                args["cursor"] = cursor
                continue
            return


# Which argument takes a page's next_cursor back (read_messages pages backwards).
SCHEMA_CURSOR = {"read_messages": "before"}


def subscription_filters(session, buffers, debug):
    """One subscription of every kind the contract names."""
    channel = [b["id"] for b in buffers if b["kind"] == "channel"]
    filters = [
        {"sessions": [session]},
        {"mentions": True},
        {"queries": True},
        {"kinds": KINDS},
        {"from": ["planter", "nickplanter"]},
        {"match": "corpus"},
        {"match": "*://*", "match_mode": "glob"},
        {"buffers": channel, "kinds": KINDS},
    ]
    if debug:
        filters += [
            {"raw": {}},
            {"raw": {"direction": "out"}},
            {"raw": {"sessions": [session], "commands": ["PRIVMSG", "NOTICE", "TOPIC", "NICK"]}},
            {"log": {"min_level": "debug"}},
            {"log": {"min_level": "debug", "categories": ["network", "auth", "app"]}},
        ]
    return filters


async def plant(r, tools):
    sessions = (await r.ok("list_sessions", {}))["sessions"]
    session = sessions[0]["id"]
    buffers = (await r.ok("list_buffers", {"session": session}))["buffers"]
    subs = []
    for f in subscription_filters(session, buffers, "raw_since" in tools):
        _, v = await r.call("subscribe", f)
        if v:
            subs.append(v["subscription"]["id"])
    # The agent's own secret-bearing lines (the Rust test passes the values on
    # stdin, so they are on no command line).
    for line in PLANTED_LINES:
        await r.call("send_raw", {"session": session, "line": line})
    return {"session": session, "subscriptions": subs}


async def read(r, tools, state):
    session = state["session"]
    listed = sorted(t.name for t in (await r.s.list_tools()).tools)
    r.calls.append({"tool": "tools/list", "arguments": {}, "is_error": False,
                    "text": json.dumps(listed)})
    await r.ok("list_sessions", {})
    buffers = (await r.ok("list_buffers", {"session": session}))["buffers"]
    for b in buffers:
        if b["kind"] == "channel":
            await r.walk("list_members", {"buffer": b["id"], "limit": 2000}, "members")
        await r.walk("read_messages", {"buffer": b["id"], "limit": 500}, "messages")
        await r.walk("read_since", {"buffer": b["id"], "limit": 500}, "messages")
    for query in ["", "corpus", "pw=", "http"]:
        await r.walk("search_messages", {"query": query, "limit": 500, "context": 3}, "matches")
    await r.ok("search_messages", {"query": ".", "match": "regex", "limit": 500})
    await r.ok("search_messages", {"query": "", "count_only": True})
    await r.walk("find_user", {"mask": "*!*@*"}, "appearances")
    for nick in ["planter", "nickplanter", "rt"]:
        await r.ok("find_user", {"nick": nick})
    if "raw_since" in tools:
        await r.walk("raw_since", {"session": session, "limit": 2000}, "lines")
        for contains in ["", "PASS", "AUTHENTICATE", "OPER", "IDENTIFY", "JOIN", "TOPIC"]:
            await r.walk("search_raw", {"session": session, "contains": contains,
                                        "limit": 2000}, "lines")
        await r.ok("engine_state", {"session": session})
        await r.ok("engine_state", {"session": session, "sections": SECTIONS})
        for name in SECTIONS:
            await r.ok("engine_state", {"session": session, "sections": [name]})
        await r.walk("read_log", {"limit": 2000}, "lines")
    await r.ok("list_subscriptions", {})
    for sub in state["subscriptions"]:
        await r.ok("read_updates", {"id": sub, "detail": "digest", "peek": True})
        await r.ok("read_updates", {"id": sub, "detail": "full", "peek": True, "limit": 500})
        await r.ok("wait_for_updates", {"id": sub, "detail": "full", "limit": 500,
                                        "timeout": 1})
    await r.ok("read_updates", {"detail": "full", "limit": 500})
    await r.ok("read_updates", {})
    await r.ok("wait_for_updates", {"timeout": 1})
    for sub in state["subscriptions"]:
        await r.ok("unsubscribe", {"id": sub})
    # A tool this agent has no plan for is still called, so a new tool cannot
    # pass unlooked-at: the Rust test requires an answer from each.
    called = {c["tool"] for c in r.calls}
    for name in tools:
        if name not in called:
            await r.call(name, {})


def wrong_token_request(port, real):
    """One request with a token that is the real one altered: refused, and
    its row in the access log must not show it."""
    altered = Secret(real.value.swapcase())
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", data=body, method="POST",
        headers={"Authorization": "Bearer " + altered.value,
                 "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


PLANTED_LINES = []


def main():
    phase = sys.argv[1]
    given = json.load(sys.stdin)
    tools = given["tools"]
    PLANTED_LINES.extend(given.get("lines", []))
    state_path = HOME / "corpus-state.json"
    real = token()

    async def flow(s):
        await s.initialize()
        r = Recorder(s)
        if phase == "plant":
            state = await plant(r, tools)
            state_path.write_text(json.dumps(state))
        else:
            await read(r, tools, json.loads(state_path.read_text()))
        return r.calls

    calls = sdk.run(given["port"], real, flow, timeout=240)
    out = {"calls": calls}
    if phase == "read":
        out["wrong_token_status"] = wrong_token_request(given["port"], real)
    (HOME / f"corpus-{phase}.json").write_text(json.dumps(out))
    print(json.dumps({"calls": len(calls)}))


if __name__ == "__main__":
    main()
