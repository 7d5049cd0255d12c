"""The 2026-07-28 era beside the handshake era on one endpoint (issue 16), over
raw sockets: server/discover, the per-request _meta envelope, the headers that
mirror the body, every error row of that era, and both eras interleaved on the
same server. The handshake era's answers are the contract's, unchanged."""

import base64
import json
import threading

import pytest

from rawhttp import A, GOOD, call, exchange, head, post, replace, result_of, rpc, tool_text
from test_sdk import INSTRUCTIONS

MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"


def envelope(version=MODERN, **drop):
    meta = {PV: version, CAPS: {}, INFO: {"name": "raw", "version": "1"}}
    for key in drop.get("without", ()):
        del meta[key]
    return meta


def modern_body(method, params=None, *, meta=None, id=1):
    params = dict(params or {})
    params["_meta"] = envelope() if meta is None else meta
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        msg["id"] = id
    return json.dumps(msg).encode()


def modern_head(method, *, name=None, version=MODERN, extra=()):
    lines = [*GOOD]
    if version is not None:
        lines.append(f"MCP-Protocol-Version: {version}")
    if method is not None:
        lines.append(f"Mcp-Method: {method}")
    if name is not None:
        lines.append(f"Mcp-Name: {name}")
    return head(*lines, *extra)


def modern(server, method, params=None, *, name=None, **kw):
    """A well-formed 2026-07-28 request: envelope in the body, headers mirroring it."""
    if method == "tools/call" and name is None:
        name = params["name"]
    return exchange(server, modern_head(method, name=name), modern_body(method, params, **kw))


def error_of(reply, status, code, id=1):
    assert reply.status == status, reply
    assert (reply.header("Content-Type") or "").startswith("application/json"), reply
    msg = reply.json()
    assert msg.get("jsonrpc") == "2.0" and "result" not in msg, msg
    assert msg["error"]["code"] == code, msg
    if id is None:
        assert "id" not in msg, msg
    else:
        assert msg["id"] == id, msg
    return msg["error"]


def b64(text):
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def test_discover(shared_server, reterm_version):
    result = result_of(modern(shared_server, "server/discover"))
    assert result == {
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": 3600000,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "reterm",
                                                          "version": reterm_version}},
    }


def test_tools_list_is_the_handshake_list_with_hints(shared_server):
    legacy = result_of(post(shared_server, rpc("tools/list")))
    result = result_of(modern(shared_server, "tools/list"))
    assert result.pop("resultType") == "complete"
    assert result.pop("ttlMs") == 0
    assert result.pop("cacheScope") == "private"
    assert result == legacy


def test_tools_call_is_the_handshake_result_marked_complete(shared_server):
    legacy = result_of(post(shared_server, call("list_sessions", {})))
    result = result_of(modern(shared_server, "tools/call", {"name": "list_sessions",
                                                            "arguments": {}}))
    assert result.pop("resultType") == "complete"
    assert result == legacy
    assert json.loads(result["content"][0]["text"])["sessions"], result


@pytest.mark.parametrize("name,arguments,text", [
    ("nope", {}, "unknown tool"),
    ("list_sessions", {"x": 1}, 'invalid arguments: unknown argument "x"'),
])
def test_tool_errors_are_the_same_strings(shared_server, name, arguments, text):
    assert tool_text(post(shared_server, call(name, arguments))) == (True, text)
    reply = modern(shared_server, "tools/call", {"name": name, "arguments": arguments})
    assert tool_text(reply) == (True, text)
    assert reply.json()["result"]["resultType"] == "complete"


def test_mcp_name_may_be_base64(shared_server):
    body = modern_body("tools/call", {"name": "list_sessions", "arguments": {}})
    reply = exchange(shared_server, modern_head("tools/call", name=b64("list_sessions")), body)
    assert tool_text(reply)[0] is False, reply
    body = modern_body("tools/call", {"name": "é nope", "arguments": {}})
    reply = exchange(shared_server, modern_head("tools/call", name=b64("é nope")), body)
    assert tool_text(reply) == (True, "unknown tool")


def test_mcp_method_may_be_base64(shared_server):
    reply = exchange(shared_server, modern_head(b64("tools/list")), modern_body("tools/list"))
    assert "tools" in result_of(reply), reply
    body = modern_body(*CALL)
    reply = exchange(shared_server, modern_head(b64("tools/call"), name=b64("list_sessions")),
                     body)
    assert tool_text(reply)[0] is False, reply


def test_notification_202(shared_server):
    body = modern_body("notifications/cancelled", {"requestId": 3}, id=None)
    reply = exchange(shared_server, modern_head("notifications/cancelled"), body)
    assert reply.status == 202 and reply.body == b"", reply
    reply = exchange(shared_server, modern_head(b64("notifications/cancelled")), body)
    assert reply.status == 202 and reply.body == b"", reply


# A notification's headers are checked against its body as a request's are;
# the refusal has no id to carry.
NOTIFICATION_ROWS = {
    "Mcp-Method differs": modern_head("tools/list"),
    "Mcp-Method base64 of another method": modern_head(b64("tools/list")),
    "no Mcp-Method": modern_head(None),
    "Mcp-Method repeated": modern_head("notifications/cancelled",
                                       extra=["Mcp-Method: notifications/cancelled"]),
}


@pytest.mark.parametrize("row", list(NOTIFICATION_ROWS), ids=list(NOTIFICATION_ROWS))
def test_a_notification_whose_headers_disagree_is_refused(shared_server, row):
    body = modern_body("notifications/cancelled", {"requestId": 3}, id=None)
    error_of(exchange(shared_server, NOTIFICATION_ROWS[row], body), 400, -32020, id=None)


LIST = ("tools/list", None)
CALL = ("tools/call", {"name": "list_sessions", "arguments": {}})


# (head, body, status, code): every refusal of the 2026-07-28 era.
ERROR_ROWS = {
    "no _meta": (modern_head("tools/list"), json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(), 400, -32602),
    "_meta not an object": (modern_head("tools/list"), modern_body("tools/list", meta=[1]),
                            400, -32602),
    "no client capabilities": (modern_head("tools/list"),
                               modern_body("tools/list", meta=envelope(without=[CAPS])),
                               400, -32602),
    "client capabilities not an object": (modern_head("tools/list"), modern_body(
        "tools/list", meta={**envelope(), CAPS: "all"}), 400, -32602),
    "client capabilities null": (modern_head("tools/list"), modern_body(
        "tools/list", meta={**envelope(), CAPS: None}), 400, -32602),
    "no protocol version in _meta": (modern_head("tools/list"),
                                     modern_body("tools/list", meta=envelope(without=[PV])),
                                     400, -32602),
    "no version header": (modern_head("tools/list", version=None), modern_body("tools/list"),
                          400, -32020),
    "version header differs": (modern_head("tools/list", version="2025-11-25"),
                               modern_body("tools/list"), 400, -32020),
    "version header repeated": (modern_head("tools/list", extra=[f"MCP-Protocol-Version: {MODERN}"]),
                                modern_body("tools/list"), 400, -32020),
    "no Mcp-Method": (modern_head(None), modern_body("tools/list"), 400, -32020),
    "Mcp-Method differs": (modern_head("tools/call"), modern_body("tools/list"), 400, -32020),
    "Mcp-Method case differs": (modern_head("Tools/List"), modern_body("tools/list"), 400, -32020),
    "Mcp-Method base64 of another method": (modern_head(b64("tools/call")),
                                            modern_body("tools/list"), 400, -32020),
    "Mcp-Method bad base64": (modern_head("=?base64?!!?="), modern_body("tools/list"),
                              400, -32020),
    "Mcp-Method repeated": (modern_head("tools/list", extra=["Mcp-Method: tools/list"]),
                            modern_body("tools/list"), 400, -32020),
    "no Mcp-Name": (modern_head("tools/call"), modern_body(*CALL), 400, -32020),
    "Mcp-Name differs": (modern_head("tools/call", name="list_buffers"), modern_body(*CALL),
                         400, -32020),
    "Mcp-Name bad base64": (modern_head("tools/call", name="=?base64?!!?="), modern_body(*CALL),
                            400, -32020),
    "Mcp-Name base64 of another name": (modern_head("tools/call", name=b64("list_buffers")),
                                        modern_body(*CALL), 400, -32020),
    "unsupported version": (modern_head("tools/list", version="2027-01-01"),
                            modern_body("tools/list", meta=envelope("2027-01-01")), 400, -32022),
    "handshake version in the envelope": (modern_head("tools/list", version="2025-11-25"),
                                          modern_body("tools/list", meta=envelope("2025-11-25")),
                                          400, -32022),
    "initialize is removed": (modern_head("initialize"), modern_body("initialize", {
        "protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        404, -32601),
    "ping is removed": (modern_head("ping"), modern_body("ping"), 404, -32601),
    "resources/list": (modern_head("resources/list"), modern_body("resources/list"), 404, -32601),
    "prompts/list": (modern_head("prompts/list"), modern_body("prompts/list"), 404, -32601),
    "logging/setLevel": (modern_head("logging/setLevel"),
                         modern_body("logging/setLevel", {"level": "info"}), 404, -32601),
    "tools/call without a name": (modern_head("tools/call"),
                                  modern_body("tools/call", {"arguments": {}}), 400, -32602),
    "arguments not an object": (modern_head("tools/call", name="list_sessions"),
                                modern_body("tools/call", {"name": "list_sessions",
                                                           "arguments": [1]}), 200, -32603),
    "params not an object": (modern_head("tools/list"), json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": 5}).encode(), 400, -32600),
}


@pytest.mark.parametrize("row", list(ERROR_ROWS), ids=list(ERROR_ROWS))
def test_modern_error_rows(shared_server, row):
    request_head, body, status, code = ERROR_ROWS[row]
    error = error_of(exchange(shared_server, request_head, body), status, code)
    if code == -32022:
        requested = json.loads(body)["params"]["_meta"][PV]
        assert error["data"] == {"supported": [MODERN], "requested": requested}, error


@pytest.mark.parametrize("body", [b"{", b"[" + modern_body("tools/list") + b"]",
                                  json.dumps({"jsonrpc": "2.0", "id": None, "method": "tools/list",
                                              "params": {"_meta": envelope()}}).encode()],
                         ids=["not JSON", "batch", "null id"])
def test_modern_body_that_is_no_request_gets_no_id(shared_server, body):
    error_of(exchange(shared_server, modern_head("tools/list"), body), 400,
             -32700 if body == b"{" else -32600, id=None)


@pytest.mark.parametrize("lines,status", [
    (replace(GOOD, "Accept: application/json, text/event-stream", "Accept: */*"), 406),
    (replace(GOOD, "Content-Type: application/json", "Content-Type: text/plain"), 415),
], ids=["406", "415"])
def test_media_rules_are_the_same_and_carry_the_id(shared_server, lines, status):
    request_head = head(*lines, f"MCP-Protocol-Version: {MODERN}", "Mcp-Method: tools/list")
    error_of(exchange(shared_server, request_head, modern_body("tools/list", id="m1")), status,
             -32600, id="m1")


def test_the_gate_is_the_same(shared_server):
    request_head = replace(modern_head("tools/list").rstrip("\r\n").split("\r\n")[1:], A)
    reply = exchange(shared_server, head(*request_head), modern_body("tools/list"))
    assert reply.status == 403 and reply.body == b"", reply


def test_a_handshake_version_header_with_no_envelope_is_the_handshake_era(shared_server):
    # The contract's row: an unsupported MCP-Protocol-Version is 400 -32600 with
    # the handshake versions, when the body is not a 2026-07-28 request.
    reply = exchange(shared_server, head(*GOOD, "MCP-Protocol-Version: 1999-01-01"),
                     rpc("tools/list"))
    error = error_of(reply, 400, -32600)
    assert error["data"] == {"supported": ["2024-11-05", "2025-03-26", "2025-06-18",
                                           "2025-11-25"]}, error
    # And initialize, ping still answer there, with no resultType.
    assert result_of(post(shared_server, rpc("ping"))) == {}
    assert "resultType" not in result_of(post(shared_server, rpc("tools/list")))


def test_both_eras_interleaved(shared_server):
    legacy_text = tool_text(post(shared_server, call("list_sessions", {})))
    for round_ in range(5):
        legacy = result_of(post(shared_server, call("list_sessions", {}, id=round_)))
        assert "resultType" not in legacy and (False, legacy["content"][0]["text"]) == legacy_text
        reply = modern(shared_server, *CALL, id=round_)
        assert reply.json()["id"] == round_
        assert tool_text(reply) == legacy_text
        assert reply.json()["result"]["resultType"] == "complete"
        error_of(exchange(shared_server, modern_head("ping"), modern_body("ping", id=round_)),
                 404, -32601, id=round_)
        assert result_of(post(shared_server, rpc("ping", id=round_))) == {}


def test_both_eras_at_once(shared_server):
    """Requests of both eras in flight together, from several threads."""
    failures = []

    def worker(era, n):
        for i in range(n):
            try:
                if era == "modern":
                    result = result_of(modern(shared_server, "tools/list", id=i))
                    assert result["resultType"] == "complete", result
                else:
                    result = result_of(post(shared_server, rpc("tools/list", id=i)))
                    assert "resultType" not in result, result
            except AssertionError as e:  # collected: a thread cannot fail the test itself
                failures.append((era, i, str(e)[:200]))

    threads = [threading.Thread(target=worker, args=(era, 8))
               for era in ("modern", "legacy") for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
