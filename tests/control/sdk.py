"""The official Python MCP SDK (PyPI `mcp`) as a client of reterm.

Works with the SDK's 1.x API (`streamablehttp_client(url, headers=...)`) and
its 2.x API (`streamable_http_client(url, http_client=...)`). Results are
turned into their wire form (camelCase keys, as the server sent them), so the
assertions do not depend on the SDK's Python names.
"""

import contextlib

import anyio

from identity import acting_as, server_uid

try:  # 2.x
    from mcp.client.streamable_http import streamable_http_client as _new_client
except ImportError:  # 1.x
    _new_client = None
from mcp import ClientSession

if _new_client is not None:
    try:
        import httpx2 as _httpx
    except ImportError:
        import httpx as _httpx
else:
    from mcp.client.streamable_http import streamablehttp_client as _old_client


def wire(model):
    """A pydantic result as the JSON the server sent."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


@contextlib.asynccontextmanager
async def session(port, token):
    """An MCP client session to reterm (not yet initialized)."""
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Authorization": f"Bearer {token.value}"}
    async with contextlib.AsyncExitStack() as stack:
        if _new_client is not None:
            # trust_env=False: no proxy from the environment between us and 127.0.0.1.
            http = await stack.enter_async_context(
                _httpx.AsyncClient(headers=headers, timeout=30.0, trust_env=False))
            streams = await stack.enter_async_context(_new_client(url, http_client=http))
        else:
            streams = await stack.enter_async_context(_old_client(url, headers=headers))
        read, write = streams[0], streams[1]
        s = await stack.enter_async_context(ClientSession(read, write))
        yield s


def run(port, token, flow, *, timeout=20.0):
    """Runs `await flow(session)` as reterm's user and returns its result."""

    async def main():
        with anyio.fail_after(timeout):
            async with session(port, token) as s:
                return await flow(s)

    with acting_as(server_uid()):
        return anyio.run(main)
