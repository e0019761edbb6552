"""MCP: what a cron job pays to reach an MCP server's tools, and the client's cost per call.

- Import: ``python -S -c "import miniagent.mcp"`` over ``-c pass`` (interleaved pairs, median),
  as in the start-up section; the SDK's client (``mcp``, ``ClientSession``, ``mcp.client.stdio``)
  the same way.
- First ``tools/list``: in a fresh child interpreter, the time from before the client's import
  to the answer of the first ``tools/list`` (start the server, ``initialize``,
  ``notifications/initialized``, ``tools/list``), minus the same steps done by a bare
  standard-library client (which is the server's own start and the pipe round trips): the rest
  is the client's own cost. Against the minimal server (``bench/mcp_server.py``).
- Per call: ``tools/call`` of ``echo`` in a loop on one connection (warm), median of rounds, for
  miniagent's ``StdioMCPServer.call_tool``, the SDK's ``ClientSession.call_tool`` (asyncio, in
  this process) and a bare client (write a line, read a line: the floor). Overhead = per call
  minus the floor. Against the minimal server, then against an SDK server
  (``bench/mcp_sdk_server.py``), where the server's own work dominates; then the same SDK server
  over streamable HTTP on 127.0.0.1 (miniagent's ``HTTPMCPServer`` against the SDK's
  ``streamable_http_client``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .common import Report, Row, bare_env, bare_python, fmt_ms, fmt_us, fmt_x, have, median, wall

HERE = Path(__file__).resolve().parent
MINIMAL = str(HERE / "mcp_server.py")
SDK_SERVER = str(HERE / "mcp_sdk_server.py")
IMPORT_TARGET = 0.020
OVERHEAD_RATIO_TARGET = 2.0

_SDK_IMPORT = "import mcp; from mcp import ClientSession; import mcp.client.stdio"

# A bare standard-library client: the floor every client pays (server start, pipes).
_BARE_FIRST_LIST = """
import json, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen([sys.executable, "-S", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def rpc(m):
    p.stdin.write(json.dumps(m).encode() + b"\\n"); p.stdin.flush()
    return p.stdout.readline() if "id" in m else None
rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
    "capabilities": {}, "clientInfo": {"name": "bare", "version": "1"}}})
rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
print(time.perf_counter() - t0)
p.stdin.close(); p.wait()
"""

_MINI_FIRST_LIST = """
import sys, time
t0 = time.perf_counter()
from miniagent.mcp import StdioMCPServer
s = StdioMCPServer(sys.executable, ["-S", SERVER])
s.start(); s.list_tools()
print(time.perf_counter() - t0)
s.close()
"""

_SDK_FIRST_LIST = """
import sys, time
t0 = time.perf_counter()
import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
async def main():
    params = StdioServerParameters(command=sys.executable, args=["-S", SERVER])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            print(time.perf_counter() - t0)
anyio.run(main)
"""


def _paired(python: str, env: dict[str, str], code: str, runs: int, base_code: str = "pass") -> float:
    base = [python, "-S", "-c", base_code]
    test = [python, "-S", "-c", code]
    wall(test, env)
    diffs = []
    for i in range(runs):
        if i % 2:
            t_test, t_base = wall(test, env), wall(base, env)
        else:
            t_base, t_test = wall(base, env), wall(test, env)
        diffs.append(t_test - t_base)
    return median(diffs)


def _own_import(python: str, env: dict[str, str], runs: int) -> float:
    """Median over runs of the summed ``-X importtime`` self times of ``miniagent.mcp*``."""
    totals = []
    for _ in range(runs):
        done = subprocess.run(
            [python, "-S", "-X", "importtime", "-c", "import miniagent.mcp"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        total = 0
        for line in done.stderr.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                self_us, _cumulative, name = line.split(":", 1)[1].split("|")
                if name.strip().startswith("miniagent.mcp"):
                    total += int(self_us)
        totals.append(total / 1e6)
    return median(totals)


def _child_seconds(python: str, env: dict[str, str], code: str) -> float:
    done = subprocess.run(
        [python, "-S", "-c", code.replace("SERVER", json.dumps(MINIMAL))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-500:])
    return float(done.stdout.split()[0])


def _first_list(python: str, env: dict[str, str], code: str, runs: int) -> float:
    _child_seconds(python, env, code)  # warm-up: bytecode caches
    return median([_child_seconds(python, env, code) for _ in range(runs)])


# --- per call ------------------------------------------------------------------------------------


def _argv(server: str) -> list[str]:
    return [sys.executable, "-S", server] if server == MINIMAL else [sys.executable, server]


def _bare_per_call(server: str, calls: int, rounds: int) -> float:
    p = subprocess.Popen(
        _argv(server), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert p.stdin is not None and p.stdout is not None
    stdin, stdout = p.stdin, p.stdout

    def rpc(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        if "id" in message:
            while True:  # skip the server's notifications
                if b'"id"' in stdout.readline():
                    return

    rpc(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        }
    )
    rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
    results = []
    ident = 1
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            ident += 1
            rpc(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "hello"}},
                }
            )
        results.append((time.perf_counter() - start) / calls)
    stdin.close()
    p.wait()
    return median(results)


def _mini_per_call(server: str, calls: int, rounds: int) -> float:
    from miniagent.mcp import StdioMCPServer

    argv = _argv(server)
    results = []
    with StdioMCPServer(argv[0], argv[1:], name="bench") as mcp_server:
        for _ in range(20):
            mcp_server.call_tool("echo", {"text": "hello"})
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(calls):
                mcp_server.call_tool("echo", {"text": "hello"})
            results.append((time.perf_counter() - start) / calls)
    return median(results)


def _sdk_per_call(server: str, calls: int, rounds: int) -> float:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = _argv(server)
    results: list[float] = []

    async def main() -> None:
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(20):
                await session.call_tool("echo", {"text": "hello"})
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(calls):
                    await session.call_tool("echo", {"text": "hello"})
                results.append((time.perf_counter() - start) / calls)

    anyio.run(main)
    return median(results)


@contextlib.contextmanager
def _http_server() -> Iterator[str]:
    """The SDK bench server over streamable HTTP on a free 127.0.0.1 port; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, SDK_SERVER, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the SDK HTTP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _mini_http_per_call(url: str, calls: int, rounds: int) -> float:
    from miniagent.mcp import HTTPMCPServer

    results = []
    with HTTPMCPServer(url, name="bench") as mcp_server:
        for _ in range(20):
            mcp_server.call_tool("echo", {"text": "hello"})
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(calls):
                mcp_server.call_tool("echo", {"text": "hello"})
            results.append((time.perf_counter() - start) / calls)
    return median(results)


def _sdk_http_per_call(url: str, calls: int, rounds: int) -> float:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    results: list[float] = []

    async def main() -> None:
        async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for _ in range(20):
                await session.call_tool("echo", {"text": "hello"})
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(calls):
                    await session.call_tool("echo", {"text": "hello"})
                results.append((time.perf_counter() - start) / calls)

    anyio.run(main)
    return median(results)


def run(report: Report, quick: bool) -> None:
    section = report.section("mcp_client", "MCP client")
    python, env = bare_python(), bare_env()
    runs = 11 if quick else 31
    sdk = have("mcp")
    if not sdk:
        report.skip("MCP SDK comparisons", "the mcp package is not installed (pip install mcp)")

    mini_import = _paired(python, env, "import miniagent.mcp", runs)
    section.rows.append(
        Row(
            "`import miniagent.mcp` over a bare interpreter",
            fmt_ms(mini_import),
            f"<= {IMPORT_TARGET * 1e3:.0f} ms",
            mini_import <= IMPORT_TARGET,
            "includes `import miniagent`",
        )
    )
    own = _paired(python, env, "import miniagent.mcp", runs, base_code="import miniagent")
    section.rows.append(Row("`import miniagent.mcp` over `import miniagent`", fmt_ms(own)))
    modules = _own_import(python, env, 3 if quick else 7)
    section.rows.append(
        Row(
            "`miniagent.mcp` modules' own import time (`-X importtime`, summed)",
            fmt_ms(modules),
            note="no standard-library module beyond what `import miniagent` loads",
        )
    )
    section.notes.append(
        "Method: module docstring of `bench/mcp_client.py`. `import miniagent.mcp` includes "
        "`import miniagent` (see Start-up); the client's own modules are the rows below it. The SDK's "
        "figures include pydantic, anyio and httpx, which its client imports."
    )
    if sdk:
        sdk_import = _paired(python, env, _SDK_IMPORT, max(5, runs // 3))
        section.rows.append(
            Row(
                "SDK client import (`mcp`, `ClientSession`, `mcp.client.stdio`)",
                fmt_ms(sdk_import),
                note=f"{fmt_x(sdk_import / max(mini_import, 1e-4))} miniagent's",
            )
        )

    first_runs = 5 if quick else 11
    bare_first = _first_list(python, env, _BARE_FIRST_LIST, first_runs)
    mini_first = _first_list(python, env, _MINI_FIRST_LIST, first_runs)
    section.rows.append(
        Row("server start + first `tools/list`, bare stdlib client (the floor)", fmt_ms(bare_first))
    )
    section.rows.append(
        Row(
            "import + first `tools/list` minus the floor, miniagent",
            fmt_ms(mini_first - bare_first),
            note=f"whole: {fmt_ms(mini_first)}",
        )
    )
    if sdk:
        sdk_first = _first_list(python, env, _SDK_FIRST_LIST, max(3, first_runs // 2))
        section.rows.append(
            Row(
                "import + first `tools/list` minus the floor, SDK `ClientSession`",
                fmt_ms(sdk_first - bare_first),
                note=f"whole: {fmt_ms(sdk_first)}; "
                f"{fmt_x((sdk_first - bare_first) / max(mini_first - bare_first, 1e-4))} miniagent's",
            )
        )

    calls, rounds = (200, 5) if quick else (500, 9)
    floor = _bare_per_call(MINIMAL, calls, rounds)
    mini = _mini_per_call(MINIMAL, calls, rounds)
    section.rows.append(Row("per call, minimal server, bare client (the floor)", fmt_us(floor)))
    section.rows.append(
        Row("per call, minimal server, miniagent", fmt_us(mini), note=f"overhead {fmt_us(mini - floor)}")
    )
    if sdk:
        sdk_call = _sdk_per_call(MINIMAL, calls, rounds)
        ratio = (sdk_call - floor) / max(mini - floor, 1e-7)
        section.rows.append(
            Row(
                "per call, minimal server, SDK `ClientSession`",
                fmt_us(sdk_call),
                f"overhead >= {OVERHEAD_RATIO_TARGET:.0f}x miniagent's",
                ratio >= OVERHEAD_RATIO_TARGET,
                f"overhead {fmt_us(sdk_call - floor)} = {fmt_x(ratio)} miniagent's",
            )
        )
        sdk_calls, sdk_rounds = (100, 3) if quick else (300, 5)
        mini_on_sdk = _mini_per_call(SDK_SERVER, sdk_calls, sdk_rounds)
        sdk_on_sdk = _sdk_per_call(SDK_SERVER, sdk_calls, sdk_rounds)
        section.rows.append(
            Row(
                "per call, SDK server, miniagent",
                fmt_ms(mini_on_sdk),
                "<= SDK's",
                mini_on_sdk <= sdk_on_sdk,
                f"SDK `ClientSession` {fmt_ms(sdk_on_sdk)} ({fmt_x(sdk_on_sdk / mini_on_sdk)} miniagent's)",
            )
        )
        with _http_server() as url:
            mini_http = _mini_http_per_call(url, sdk_calls, sdk_rounds)
            sdk_http = _sdk_http_per_call(url, sdk_calls, sdk_rounds)
        section.rows.append(
            Row(
                "per call, SDK server over streamable HTTP, miniagent",
                fmt_ms(mini_http),
                note=f"SDK `streamable_http_client` {fmt_ms(sdk_http)} ({fmt_x(sdk_http / mini_http)} "
                "miniagent's)",
            )
        )
