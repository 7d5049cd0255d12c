"""The official MCP conformance suite (`@modelcontextprotocol/conformance` from
npm) against reterm, at revision 2025-11-25 and at 2026-07-28, each run
exactly as that revision requires (`--requirements`), through the proxy that
adds the token and rewrites Host (conformance_proxy.py). A scenario failing
that the revision's expected-failures file does not list, or a listed one
passing, fails the run. scripts/test installs the suite and a Node 22 under
$RETE_NODE_DIR (default /opt/rete-node)."""

import os
import subprocess
from pathlib import Path

import pytest

from conformance_proxy import Proxy

NODE_DIR = Path(os.environ.get("RETE_NODE_DIR", "/opt/rete-node"))
BIN = NODE_DIR / "node_modules" / ".bin"
HERE = Path(__file__).resolve().parent / "conformance"


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_conformance(shared_server, revision, tmp_path):
    suite = BIN / "conformance"
    if not suite.exists():
        pytest.fail(f"{suite} is missing: scripts/test installs @modelcontextprotocol/conformance")
    expected = HERE / f"expected-failures-{revision}.yml"
    env = {"PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path),
           "LANG": "C.UTF-8", "NO_COLOR": "1"}
    with Proxy(shared_server) as proxy:
        run = subprocess.run(
            [str(suite), "server", "--url", proxy.url, "--requirements", revision,
             "--expected-failures", str(expected), "--timeout", "10000"],
            capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    summary = run.stdout[run.stdout.find("=== SUMMARY ==="):]
    assert run.returncode == 0, summary[-6000:] + "\n" + run.stderr[-3000:]
    assert "=== SUMMARY ===" in run.stdout, run.stdout[-3000:]
