"""Both protocol eras through the official Python MCP SDK's `Client` (issue 16):
its default mode (auto: probe server/discover, fall back to initialize), and
forced to each era (legacy, and the 2026-07-28 version pin). Every request the
SDK sends is recorded off its HTTP client, so each test also checks which era
was actually on the wire."""

import json

import anyio
import pytest

from identity import acting_as, server_uid
from sdk import _httpx, wire
from test_sdk import INSTRUCTIONS

from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

MODERN = "2026-07-28"


def run_client(server, mode, flow, *, timeout=20.0):
    """`await flow(client)` in a Client of `mode`, as reterm's user; returns
    (its result, the protocol version, [(Mcp-Method, MCP-Protocol-Version)] of
    every request sent)."""
    sent = []

    async def record(request):
        body = json.loads(request.content or b"{}")
        sent.append((body.get("method"), request.headers.get("mcp-method"),
                     request.headers.get("mcp-protocol-version")))

    async def main():
        url = f"http://127.0.0.1:{server.port}/mcp"
        headers = {"Authorization": f"Bearer {server.token.value}"}
        with anyio.fail_after(timeout):
            async with _httpx.AsyncClient(headers=headers, timeout=30.0, trust_env=False,
                                          event_hooks={"request": [record]}) as http:
                async with Client(streamable_http_client(url, http_client=http),
                                  mode=mode) as client:
                    return await flow(client), client.protocol_version

    with acting_as(server_uid()):
        result, version = anyio.run(main)
    return result, version, sent


async def _everything(client):
    tools = sorted(t.name for t in (await client.list_tools()).tools)
    listed = wire(await client.call_tool("list_sessions", {}))
    unknown = wire(await client.call_tool("nope", {}))
    info = client.server_info
    return {"tools": tools, "list_sessions": listed, "unknown": unknown,
            "server": info.name if info else None, "instructions": client.instructions}


def _without_result_type(result):
    return {k: v for k, v in result.items() if k != "resultType"}


@pytest.fixture(scope="module")
def legacy(shared_server):
    return run_client(shared_server, "legacy", _everything)


def test_auto_mode_speaks_2026_07_28(shared_server, legacy):
    got, version, sent = run_client(shared_server, "auto", _everything)
    assert version == MODERN
    assert sent[0] == ("server/discover", "server/discover", MODERN), sent
    assert "initialize" not in [m for m, _, _ in sent], sent
    assert all(v == MODERN for _, _, v in sent), sent
    assert got["server"] == "reterm" and got["instructions"] == INSTRUCTIONS, got
    assert got["tools"] == legacy[0]["tools"]
    assert _without_result_type(got["list_sessions"]) == \
        _without_result_type(legacy[0]["list_sessions"])
    assert got["unknown"]["isError"] is True
    assert got["unknown"]["content"][0]["text"] == "unknown tool"


def test_legacy_mode_speaks_the_handshake_era(legacy):
    got, version, sent = legacy
    assert version == "2025-11-25"
    assert sent[0][0] == "initialize", sent
    assert "server/discover" not in [m for m, _, _ in sent], sent
    assert got["server"] == "reterm" and got["instructions"] == INSTRUCTIONS, got
    assert "list_sessions" in got["tools"]
    assert not got["list_sessions"].get("isError")
    assert got["unknown"]["content"][0]["text"] == "unknown tool"


def test_pinned_2026_07_28(shared_server, legacy):
    got, version, sent = run_client(shared_server, MODERN, _everything)
    assert version == MODERN
    assert "initialize" not in [m for m, _, _ in sent], sent
    assert ("tools/call", "tools/call", MODERN) in sent, sent
    assert got["tools"] == legacy[0]["tools"]
    assert _without_result_type(got["list_sessions"]) == \
        _without_result_type(legacy[0]["list_sessions"])


def test_discover_through_the_sdk(shared_server, reterm_version):
    async def flow(client):
        return await client.session.send_discover(MODERN)  # the raw result, as sent

    got, _, _ = run_client(shared_server, MODERN, flow)
    assert got["supportedVersions"] == [MODERN], got
    assert got["capabilities"] == {"tools": {}}, got
    assert got["instructions"] == INSTRUCTIONS
    assert got["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == reterm_version
