"""Behind the gate: what the MCP Streamable HTTP transport requires of a POST,
the stateless server, and "Tool results and tool errors" ("The access gate"
and "Tool results and tool errors" in control-surface.md), over raw sockets."""

import json

import pytest

from rawhttp import (ACC, CT, GOOD, INITIALIZE, LIST_SESSIONS, call, exchange, head, post,
                     replace, result_of, rpc, tool_text)

PROTOCOL_VERSION = "MCP-Protocol-Version: 2025-06-18"


def assert_jsonrpc_error(reply, status):
    """An answer with `status` whose body is a JSON-RPC error."""
    assert reply.status == status, reply
    msg = reply.json()
    assert msg.get("jsonrpc") == "2.0", msg
    assert isinstance(msg.get("error"), dict), msg
    assert isinstance(msg["error"].get("code"), int), msg
    return msg["error"]


@pytest.mark.parametrize("accept", ["Accept: */*", None, "Accept: text/event-stream",
                                    "Accept: text/html, application/xml"],
                         ids=["*/*", "absent", "event-stream only", "other types"])
def test_accept_without_application_json_406(shared_server, accept):
    lines = replace(GOOD, ACC, *([accept] if accept else []))
    assert_jsonrpc_error(exchange(shared_server, head(*lines), LIST_SESSIONS), 406)


def test_accept_application_json_alone_is_enough(shared_server):
    lines = replace(GOOD, ACC, "Accept: application/json")
    result_of(exchange(shared_server, head(*lines), LIST_SESSIONS))


@pytest.mark.parametrize("content_type", ["Content-Type: text/plain", None,
                                          "Content-Type: application/x-www-form-urlencoded"],
                         ids=["text/plain", "absent", "form"])
def test_content_type_other_than_json_415(shared_server, content_type):
    lines = replace(GOOD, CT, *([content_type] if content_type else []))
    assert_jsonrpc_error(exchange(shared_server, head(*lines), LIST_SESSIONS), 415)


def test_unsupported_protocol_version_400(shared_server):
    lines = (*GOOD, "MCP-Protocol-Version: 1999-01-01")
    assert_jsonrpc_error(exchange(shared_server, head(*lines), LIST_SESSIONS), 400)


def test_supported_protocol_version_header_served(shared_server):
    result_of(exchange(shared_server, head(*GOOD, PROTOCOL_VERSION), LIST_SESSIONS))


@pytest.mark.parametrize("body", [
    b"[" + LIST_SESSIONS + b"]",
    b"[" + LIST_SESSIONS + b"," + call("list_sessions", {}, id=2) + b"]",
    b'{"jsonrpc":"2.0","id":1}',
    b'{"jsonrpc":"2.0","id":1,"params":{}}',
], ids=["batch of one", "batch of two", "no method, result or error", "params only"])
def test_not_a_single_jsonrpc_message_400(shared_server, body):
    assert_jsonrpc_error(post(shared_server, body), 400)


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled"])
def test_notification_202_empty(shared_server, method):
    params = {"requestId": 7} if method == "notifications/cancelled" else None
    reply = post(shared_server, rpc(method, params, id=None))
    assert reply.status == 202, reply
    assert reply.body == b"", reply


def test_no_session_id_and_initialize_any_number_of_times(shared_server):
    for _ in range(2):
        reply = post(shared_server, INITIALIZE)
        result = result_of(reply)
        assert result["serverInfo"]["name"] == "reterm", result
        assert reply.header_values("Mcp-Session-Id") == [], reply


def test_answers_are_json_not_a_stream(shared_server):
    reply = post(shared_server, LIST_SESSIONS)
    assert (reply.header("Content-Type") or "").startswith("application/json"), reply


def test_tools_calls_need_no_initialize_first(shared_server):
    assert "tools" in result_of(post(shared_server, rpc("tools/list")))


def test_ping_answered_with_a_result(shared_server):
    assert result_of(post(shared_server, rpc("ping"))) == {}


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list", "prompts/list",
                                    "completion/complete", "logging/setLevel",
                                    "sampling/createMessage"])
def test_non_tool_requests_get_a_jsonrpc_error(shared_server, method):
    reply = post(shared_server, rpc(method, {}))
    assert reply.status == 200, reply
    msg = reply.json()
    assert msg.get("id") == 1 and "result" not in msg, msg
    assert isinstance(msg["error"]["code"], int), msg


@pytest.mark.parametrize("arguments", [[1], "x", 5, True], ids=["array", "string", "number", "bool"])
def test_arguments_not_an_object_is_a_jsonrpc_error(shared_server, arguments):
    reply = post(shared_server, call("list_sessions", arguments))
    assert reply.status == 200, reply
    msg = reply.json()
    assert "result" not in msg, msg
    assert msg["error"]["code"] == -32603, msg


@pytest.mark.parametrize("arguments", [None, {}], ids=["null", "empty object"])
def test_arguments_null_or_empty_reach_the_tool(shared_server, arguments):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "list_sessions", "arguments": arguments}}).encode()
    is_error, text = tool_text(post(shared_server, body))
    assert not is_error, text


def test_unknown_argument_is_a_tool_error(shared_server):
    is_error, text = tool_text(post(shared_server, call("list_sessions", {"x": None})))
    assert is_error
    assert text == 'invalid arguments: unknown argument "x"'


def test_unknown_argument_name_is_cut_and_json_escaped(shared_server):
    name = 'q"\\' + "é" * 40
    is_error, text = tool_text(post(shared_server, call("list_sessions", {name: 1})))
    assert is_error
    cut = name.encode()[:64].decode("utf-8", "ignore")
    assert text == "invalid arguments: unknown argument " + json.dumps(cut, ensure_ascii=False)


@pytest.mark.parametrize("name", ["nope", "List_Sessions", " list_sessions", "list_sessions ", ""])
def test_unknown_tool_is_a_tool_error(shared_server, name):
    is_error, text = tool_text(post(shared_server, call(name, {})))
    assert is_error
    assert text == "unknown tool"
