"""reterm through the official TypeScript MCP SDK (npm `@modelcontextprotocol/sdk`
1.32, a handshake-era client), issue 16: it connects, lists the same tools as
the Python SDK and calls them with the same results. scripts/test installs it
and a Node 22 under $RETE_NODE_DIR (default /opt/rete-node)."""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from identity import IS_ROOT, server_uid
from test_sdk import INSTRUCTIONS
from test_sdk_eras import _everything, run_client

NODE_DIR = Path(os.environ.get("RETE_NODE_DIR", "/opt/rete-node"))
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
CLIENT = Path(__file__).resolve().parent / "ts_client.cjs"


def readable_copy(path, tmp):
    """`path` copied into a fresh world-readable directory: the client runs as
    reterm's unprivileged user, who may not reach a checkout under a closed
    directory (CI's clone sits in one)."""
    directory = Path(tempfile.mkdtemp(prefix="rete-ts-client-", dir=tmp))
    directory.chmod(0o755)
    copy = directory / path.name
    shutil.copyfile(path, copy)
    copy.chmod(0o644)
    return copy


def test_typescript_sdk(shared_server, reterm_version):
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        pytest.fail(f"@modelcontextprotocol/sdk is missing under {NODE_DIR}: scripts/test installs it")
    client = readable_copy(CLIENT, "/tmp")
    argv = [str(NODE), str(client)]
    if IS_ROOT:  # reterm answers only its own user's sockets
        uid = server_uid()
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "RETE_NODE_DIR": str(NODE_DIR),
           "RETE_URL": f"http://127.0.0.1:{shared_server.port}/mcp",
           "RETE_TOKEN": shared_server.token.value}
    try:
        run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(client.parent, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    assert got["protocolVersion"] == "2025-11-25", got["protocolVersion"]
    assert got["server"] == {"name": "reterm", "version": reterm_version}
    assert got["instructions"] == INSTRUCTIONS
    python, _, _ = run_client(shared_server, "legacy", _everything)
    assert got["tools"] == python["tools"]
    # As sent: the TypeScript SDK keeps the wire's keys (no isError on success,
    # no resultType in this era), where pydantic fills in its defaults.
    assert got["listed"] == {"content": python["list_sessions"]["content"]}
    assert got["unknown"] == {"content": [{"type": "text", "text": "unknown tool"}],
                              "isError": True}
