"""The access gate, the route and the method check ("The access gate" and
"After the gate" in control-surface.md), over raw sockets.

Every refusal is 403 with an empty body, says nothing about which rule failed,
comes before the route, and is judged on the head alone."""

import secrets
import string

import pytest

from masking import Secret
from rawhttp import (A, CL, GOOD, H, LIST_SESSIONS, assert_empty_answer, assert_refused,
                     assert_served, exchange, exchange_expecting_continue, head, replace)

def refused_on_head(server, lines, *, method="POST", target="/mcp", token=None):
    """Sends only the head of a request whose Content-Length announces a body:
    the 403 must come anyway, at once (the gate never reads the body)."""
    reply = exchange(server, head(*lines, method=method, target=target), LIST_SESSIONS,
                     send_body=False, timeout=3.0, token=token)
    assert_refused(reply)
    assert reply.elapsed < 1.5, reply


def random_token():
    alphabet = string.ascii_letters + string.digits + "-_"
    return Secret("".join(secrets.choice(alphabet) for _ in range(43)))


# -- Authorization ------------------------------------------------------------

REFUSED_AUTH = {
    "missing": replace(GOOD, A),
    "duplicate": replace(GOOD, A, A, A),
    "lower-case bearer": replace(GOOD, A, "Authorization: bearer {token}"),
    "upper-case BEARER": replace(GOOD, A, "Authorization: BEARER {token}"),
    "two spaces": replace(GOOD, A, "Authorization: Bearer  {token}"),
    "a tab": replace(GOOD, A, "Authorization: Bearer\t{token}"),
    "no space": replace(GOOD, A, "Authorization: Bearer{token}"),
    "scheme only": replace(GOOD, A, "Authorization: Bearer"),
    "empty token": replace(GOOD, A, "Authorization: Bearer "),
    "token without scheme": replace(GOOD, A, "Authorization: {token}"),
    "token with a trailing character": replace(GOOD, A, "Authorization: Bearer {token}x"),
    "basic scheme": replace(GOOD, A, "Authorization: Basic {token}"),
    "in another header": replace(GOOD, A, "Proxy-Authorization: Bearer {token}"),
}


@pytest.mark.parametrize("lines", REFUSED_AUTH.values(), ids=REFUSED_AUTH.keys())
def test_authorization_rule_refuses(shared_server, lines):
    refused_on_head(shared_server, lines)


def test_token_in_query_string_is_not_accepted(shared_server):
    refused_on_head(shared_server, replace(GOOD, A), target="/mcp?token={token}")


def test_wrong_token_of_the_same_length_refused(shared_server):
    assert_refused(exchange(shared_server, head(*GOOD), LIST_SESSIONS, token=random_token()))
    refused_on_head(shared_server, GOOD, token=random_token())


def test_token_differing_in_last_character_refused(shared_server):
    real = shared_server.token.value
    near = Secret(real[:-1] + ("A" if real[-1] != "A" else "B"))
    assert_refused(exchange(shared_server, head(*GOOD), LIST_SESSIONS, token=near))


def test_token_prefix_refused(shared_server):
    prefix = Secret(shared_server.token.value[:-1])
    assert_refused(exchange(shared_server, head(*GOOD), LIST_SESSIONS, token=prefix))


ACCEPTED_AUTH = {
    "exact": GOOD,
    "trailing spaces": replace(GOOD, A, "Authorization: Bearer {token}   "),
    "trailing tab": replace(GOOD, A, "Authorization: Bearer {token}\t"),
    "spaces before the value": replace(GOOD, A, "Authorization:    Bearer {token}"),
    "no space after the colon": replace(GOOD, A, "Authorization:Bearer {token}"),
    "header name in lower case": replace(GOOD, A, "authorization: Bearer {token}"),
    "header name in upper case": replace(GOOD, A, "AUTHORIZATION: Bearer {token}"),
}


@pytest.mark.parametrize("lines", ACCEPTED_AUTH.values(), ids=ACCEPTED_AUTH.keys())
def test_authorization_accepted(shared_server, lines):
    assert_served(exchange(shared_server, head(*lines), LIST_SESSIONS))


# -- Host ---------------------------------------------------------------------

REFUSED_HOST = {
    "missing": replace(GOOD, H),
    "duplicate": replace(GOOD, H, H, H),
    "duplicate, the other localhost": replace(GOOD, H, H, "Host: localhost:{port}"),
    "no port": replace(GOOD, H, "Host: 127.0.0.1"),
    "localhost without port": replace(GOOD, H, "Host: localhost"),
    "another port": replace(GOOD, H, "Host: 127.0.0.1:{otherport}"),
    "leading zero in port": replace(GOOD, H, "Host: 127.0.0.1:0{port}"),
    "IPv6 loopback": replace(GOOD, H, "Host: [::1]:{port}"),
    "another name": replace(GOOD, H, "Host: example.com:{port}"),
    "LOCALHOST": replace(GOOD, H, "Host: LOCALHOST:{port}"),
    "empty": replace(GOOD, H, "Host: "),
}


@pytest.mark.parametrize("lines", REFUSED_HOST.values(), ids=REFUSED_HOST.keys())
def test_host_rule_refuses(shared_server, lines):
    refused_on_head(shared_server, lines)


ACCEPTED_HOST = {
    "127.0.0.1": GOOD,
    "localhost": replace(GOOD, H, "Host: localhost:{port}"),
    "trailing spaces": replace(GOOD, H, "Host: 127.0.0.1:{port}  "),
    "header name in upper case": replace(GOOD, H, "HOST: 127.0.0.1:{port}"),
}


@pytest.mark.parametrize("lines", ACCEPTED_HOST.values(), ids=ACCEPTED_HOST.keys())
def test_host_accepted(shared_server, lines):
    assert_served(exchange(shared_server, head(*lines), LIST_SESSIONS))


# -- Origin -------------------------------------------------------------------

REFUSED_ORIGIN = {
    "another site": "Origin: http://evil.example",
    "null": "Origin: null",
    "https": "Origin: https://127.0.0.1:{port}",
    "no port": "Origin: http://127.0.0.1",
    "another port": "Origin: http://127.0.0.1:{otherport}",
    "trailing slash": "Origin: http://127.0.0.1:{port}/",
    "empty": "Origin: ",
}


@pytest.mark.parametrize("origin", REFUSED_ORIGIN.values(), ids=REFUSED_ORIGIN.keys())
def test_origin_rule_refuses(shared_server, origin):
    refused_on_head(shared_server, (*GOOD, origin))


def test_two_origins_refused_even_when_both_allowed(shared_server):
    refused_on_head(shared_server, (*GOOD, "Origin: http://127.0.0.1:{port}",
                                    "Origin: http://localhost:{port}"))


@pytest.mark.parametrize("origin", ["Origin: http://127.0.0.1:{port}",
                                    "Origin: http://localhost:{port}",
                                    "origin: http://localhost:{port}  "],
                         ids=["127.0.0.1", "localhost", "lower-case name, trailing spaces"])
def test_origin_accepted(shared_server, origin):
    assert_served(exchange(shared_server, head(*GOOD, origin), LIST_SESSIONS))


# -- OPTIONS and the order of the checks ---------------------------------------

def test_options_refused_even_when_everything_else_passes(shared_server):
    lines = (*GOOD, "Origin: http://127.0.0.1:{port}", "Access-Control-Request-Method: POST")
    refused_on_head(shared_server, lines, method="OPTIONS")


def test_options_without_body_refused(shared_server):
    assert_refused(exchange(shared_server, head(H, A, method="OPTIONS")))


@pytest.mark.parametrize("method,target", [("POST", "/nope"), ("GET", "/mcp"), ("GET", "/"),
                                           ("DELETE", "/mcp")])
def test_gate_runs_before_route_and_method(shared_server, method, target):
    """An unauthenticated request gets the same 403 for every path and method."""
    lines = replace(GOOD, A, "Authorization: Bearer wrong")
    body = LIST_SESSIONS
    if method != "POST":
        lines, body = replace(lines, CL), b""
    assert_refused(exchange(shared_server, head(*lines, method=method, target=target), body))


def test_refusal_is_judged_before_the_body_arrives(shared_server):
    """The head announces a body that is never sent: the 403 comes anyway, long
    before the 10 s body deadline."""
    lines = replace(GOOD, A, "Authorization: Bearer wrong")
    reply = exchange(shared_server, head(*lines), LIST_SESSIONS, send_body=False, timeout=5.0)
    assert_refused(reply)
    assert reply.elapsed < 1.5, reply


def test_refusal_with_good_token_but_bad_host_before_the_body(shared_server):
    lines = replace(GOOD, H, "Host: example.com:{port}")
    reply = exchange(shared_server, head(*lines), LIST_SESSIONS, send_body=False, timeout=5.0)
    assert_refused(reply)
    assert reply.elapsed < 1.5, reply


# -- route and method ---------------------------------------------------------

@pytest.mark.parametrize("target", ["/", "/nope", "/mcp/", "/MCP", "/mcpx", "/mcp/x", "/nope?x=1"])
def test_unknown_path_404(shared_server, target):
    assert_empty_answer(exchange(shared_server, head(*GOOD, target=target), LIST_SESSIONS), 404)


def test_query_string_ignored(shared_server):
    assert_served(exchange(shared_server, head(*GOOD, target="/mcp?x=1"), LIST_SESSIONS))


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "HEAD"])
def test_method_other_than_post_405(shared_server, method):
    reply = exchange(shared_server, head(*replace(GOOD, CL), method=method))
    assert reply.status == 405, reply
    assert reply.header("Allow") == "POST", reply
    assert reply.body == b"", reply
    assert (reply.header("Connection") or "").lower() == "close", reply


def test_post_is_served_with_connection_close(shared_server):
    reply = exchange(shared_server, head(*GOOD), LIST_SESSIONS)
    assert_served(reply)
    assert reply.closed, reply


# -- Expect: 100-continue -------------------------------------------------------

EXPECT = "Expect: 100-continue"


def test_100_continue_after_gate_route_and_method(shared_server):
    reply = exchange_expecting_continue(shared_server, head(*GOOD, EXPECT), LIST_SESSIONS)
    assert reply.interim == [100], reply
    assert reply.raw.startswith(b"HTTP/1.1 100 Continue\r\n"), reply
    assert_served(reply)


@pytest.mark.parametrize("lines,method,target,status", [
    (replace(GOOD, A, "Authorization: Bearer wrong"), "POST", "/mcp", 403),
    (replace(GOOD, A), "POST", "/mcp", 403),
    (replace(GOOD, H, "Host: example.com:{port}"), "POST", "/mcp", 403),
    (GOOD, "OPTIONS", "/mcp", 403),
    (GOOD, "POST", "/nope", 404),
    (replace(GOOD, CL), "PUT", "/mcp", 405),
], ids=["bad token", "no token", "bad host", "OPTIONS", "unknown path", "PUT"])
def test_no_100_continue_when_refused(shared_server, lines, method, target, status):
    reply = exchange_expecting_continue(shared_server, head(*lines, EXPECT, method=method, target=target),
                                        LIST_SESSIONS)
    assert reply.interim == [], reply
    assert_empty_answer(reply, status)
