"""The MCP client over streamable HTTP against a server written with the official ``mcp`` SDK,
run on 127.0.0.1 in its own process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from miniagent import ToolCall, run_agent
from miniagent.mcp import HTTPMCPServer, MCPError
from miniagent.testing import ScriptedClient

pytest.importorskip("mcp")
requests = pytest.importorskip("requests")
pytestmark = pytest.mark.timeout(60)

SDK_SERVER = str(Path(__file__).parent / "sdk_server.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file the server's ``slow`` tool creates when it starts."""
    return tmp_path_factory.mktemp("mcp") / "slow-started"


@pytest.fixture(scope="module", params=["http", "http-json"])
def url(request: pytest.FixtureRequest, marker: Path) -> Iterator[str]:
    """The SDK server answering with event streams (``http``) or JSON bodies (``http-json``)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, SDK_SERVER, request.param, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, MCP_TEST_MARKER=str(marker)),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "the SDK server exited"
                assert time.monotonic() < deadline, "the SDK server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_listing_a_call_and_an_error_result(url: str) -> None:
    with HTTPMCPServer(url, name="web") as server:
        assert server.protocol_version == "2025-11-25"
        assert server.server_info["name"] == "sdk-test"
        tools = {t.name: t for t in server.tools()}
        assert tools["add"].read_only is True
        assert tools["add"].execute({"a": 40, "b": 2}, None).content == "42"
        failed = tools["fail"].execute({"message": "no such city"}, None)
        assert failed.is_error and "no such city" in failed.content
        server.ping()
        # Keep-alive: every request (initialize, notifications, calls) went over one connection.
        http = server._session.transport.http  # type: ignore[union-attr]
        manager = http.get_adapter(url).poolmanager
        pools = [manager.pools[key] for key in manager.pools.keys()]  # noqa: SIM118 (not iterable)
        assert [pool.num_connections for pool in pools] == [1]
        assert pools[0].num_requests >= 6


def test_cancel_returns_within_200_ms_as_aborted_during_execution(url: str, marker: Path) -> None:
    marker.unlink(missing_ok=True)
    cancel = threading.Event()
    stopped: list[float] = []

    def cancel_when_the_tool_runs() -> None:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.005)  # polls a fact: the file the tool creates when it starts
        stopped.append(time.monotonic())
        cancel.set()

    with HTTPMCPServer(url, name="web") as server:
        helper = threading.Thread(target=cancel_when_the_tool_runs)
        helper.start()
        result = run_agent(
            client=ScriptedClient([[ToolCall("c1", "slow", {"seconds": 30})]]),
            system="",
            tools=server.tools(),
            user="wait",
            max_turns=4,
            cancel=cancel,
        )
        returned = time.monotonic()
        helper.join()
        assert marker.exists()
        assert server.call_tool("add", {"a": 1, "b": 2}).content == "3"
    assert result.stop_reason == "aborted"
    assert result.messages[-1].content == "aborted during execution"
    assert returned - stopped[0] < 0.2


def test_a_timeout_and_a_session_the_server_ended_is_started_again_within_the_call(url: str) -> None:
    with HTTPMCPServer(url, name="web", timeout=0.3) as server:
        with pytest.raises(MCPError) as caught:
            server.call_tool("slow", {"seconds": 30})
        assert caught.value.kind == "timeout"
        session_id = server._session.transport.session_id  # type: ignore[union-attr]
        assert session_id
        add = {t.name: t for t in server.tools()}["add"]
        requests.delete(url, headers={"Mcp-Session-Id": session_id}, timeout=5)
        # The 404 to the old session id: a new session, and the same call sent again once.
        assert add.execute({"a": 1, "b": 1}, None).content == "2"
        assert server._session.transport.session_id != session_id  # type: ignore[union-attr]


def test_connection_refused_and_a_wrong_path(url: str) -> None:
    with pytest.raises(MCPError) as refused:
        HTTPMCPServer(f"http://127.0.0.1:{_free_port()}/mcp", name="gone").start()
    assert refused.value.kind == "closed"
    # Worded as a refused provider connection is (net.failures), not with urllib3's class name.
    refused_text = r"MCP server 'gone': cannot connect to 127\.0\.0\.1:\d+ \(connection refused\)"
    assert re.fullmatch(refused_text, str(refused.value))
    with pytest.raises(MCPError) as wrong:
        HTTPMCPServer(url.replace("/mcp", "/nope"), name="wrong").start()
    assert "answered HTTP 404" in str(wrong.value)
