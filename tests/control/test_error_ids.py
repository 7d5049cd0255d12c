"""Error answers carry the request's id whenever the body parses as a JSON-RPC
request (issue 16): the 406, 415 and version refusals, which are decided on the
headers, and every refusal of the body. A body that is not a request (not JSON,
a batch, a null or fractional id, no method) gets an error without an id, which
the MCP schema allows, never "id": null, which it rejects. Raw sockets."""

import json

import pytest

from rawhttp import ACC, CT, GOOD, call, exchange, head, post, replace

REQUEST = call("list_sessions", {}, id=41)
STRING_ID = call("list_sessions", {}, id="req-7")


def error_of(reply, status):
    assert reply.status == status, reply
    msg = reply.json()
    assert msg.get("jsonrpc") == "2.0", msg
    assert "result" not in msg, msg
    assert isinstance(msg["error"]["code"], int), msg
    return msg


@pytest.mark.parametrize("body,want", [(REQUEST, 41), (STRING_ID, "req-7")], ids=["int", "string"])
@pytest.mark.parametrize("lines,status", [
    (replace(GOOD, ACC, "Accept: */*"), 406),
    (replace(GOOD, CT, "Content-Type: text/plain"), 415),
    ((*GOOD, "MCP-Protocol-Version: 1999-01-01"), 400),
], ids=["406", "415", "unsupported version"])
def test_header_refusals_carry_the_request_id(shared_server, lines, status, body, want):
    msg = error_of(exchange(shared_server, head(*lines), body), status)
    assert msg["id"] == want, msg


def test_params_not_an_object_carries_the_id(shared_server):
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": [1]}).encode()
    msg = error_of(post(shared_server, body), 400)
    assert msg["id"] == 9, msg
    assert msg["error"]["code"] == -32600, msg


@pytest.mark.parametrize("body", [
    b"{",
    b"[" + REQUEST + b"]",
    b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1}',
    b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
], ids=["not JSON", "batch", "null id", "fractional id", "no method", "jsonrpc 1.0"])
def test_a_body_that_is_no_request_gets_no_id(shared_server, body):
    msg = error_of(post(shared_server, body), 400)
    assert "id" not in msg, msg


def test_a_header_refusal_of_a_body_that_is_no_request_gets_no_id(shared_server):
    lines = replace(GOOD, ACC, "Accept: */*")
    msg = error_of(exchange(shared_server, head(*lines), b"{"), 406)
    assert "id" not in msg, msg
