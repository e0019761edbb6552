"""One MCP message is bounded: a server's answer larger than ``max_message_bytes`` is never
decoded; the call's result is an error that says so, over stdio and over HTTP (a JSON body or one
server-sent event), and memory stays bounded."""

from __future__ import annotations

import json
import sys
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from miniagent.mcp import HTTPMCPServer, MCPError, StdioMCPServer
from miniagent.mcp._wire import MAX_MESSAGE_BYTES
from tests.mcp.http_fake import Exchange, FakeMCP
from tests.providers_server import LoopbackServer

pytestmark = pytest.mark.timeout(60)

BIG_SERVER = str(Path(__file__).parent / "big_server.py")
LIMIT = 64 * 1024


def _stdio(shape: str, size: int, **options: Any) -> StdioMCPServer:
    return StdioMCPServer(sys.executable, [BIG_SERVER, shape, str(size)], name="big", **options)


def test_a_60_mb_message_is_refused_with_bounded_memory() -> None:
    """The red team's input: a 60 MB answer (many small blocks) peaked at about 1.5 GB."""
    with _stdio("blocks", 60 * 1024 * 1024) as server:
        (tool,) = server.tools()
        tracemalloc.start()
        try:
            result = tool.execute({}, None)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert result.is_error
        assert result.content == (
            "MCP server 'big' sent a line larger than 16 MiB (max_message_bytes): it was stopped"
        )
        assert peak < 2 * MAX_MESSAGE_BYTES
        assert tool.execute({"small": True}, None).content == "small"  # started again


@pytest.mark.parametrize("shape", ["text", "blocks"])
def test_the_limit_is_the_servers_own_and_an_answer_within_it_is_read(shape: str) -> None:
    with _stdio(shape, LIMIT - 200, max_message_bytes=LIMIT) as server:
        (tool,) = server.tools()
        assert not tool.execute({}, None).is_error
    with _stdio(shape, LIMIT + 200, max_message_bytes=LIMIT) as server:
        (tool,) = server.tools()
        result = tool.execute({}, None)
        assert result.is_error and "larger than 65536 bytes (max_message_bytes)" in result.content


@pytest.mark.parametrize("limit", [0, 1023, 1.5e6, True])
def test_a_limit_that_cannot_work_is_refused(limit: Any) -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        StdioMCPServer("python", max_message_bytes=limit)
    with pytest.raises(ValueError, match="max_message_bytes"):
        HTTPMCPServer("http://127.0.0.1:1/mcp", max_message_bytes=limit)


def _http_server(big: bytes, as_events: bool) -> type[BaseHTTPRequestHandler]:
    """An MCP endpoint whose tools/call answer is ``big`` (JSON, or one server-sent event)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if "id" not in request:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            results = {
                "initialize": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}},
                "tools/list": {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]},
            }
            if request["method"] in results:
                answer = {"jsonrpc": "2.0", "id": request["id"], "result": results[request["method"]]}
                self._send(json.dumps(answer).encode(), "application/json")
            elif as_events:
                self._send(b"data: " + big + b"\n\n", "text/event-stream")
            else:
                self._send(big, "application/json")

        def _send(self, body: bytes, media: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.mark.parametrize("as_events", [False, True], ids=["json-body", "event-stream"])
def test_over_http_a_body_or_an_event_over_the_limit_is_an_error_result(as_events: bool) -> None:
    pytest.importorskip("requests")
    result = {"content": [{"type": "text", "text": "x" * (LIMIT + 100)}]}
    big = json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}).encode()
    with (
        LoopbackServer(_http_server(big, as_events)) as loopback,
        HTTPMCPServer(f"{loopback.url}/mcp", name="web", max_message_bytes=LIMIT) as server,
    ):
        (tool,) = server.tools()
        answer = tool.execute({}, None)
        with pytest.raises(MCPError) as raised:
            server.call_tool("big")
    what = "an event" if as_events else "a body"
    assert answer.is_error
    assert answer.content == (
        f"MCP server 'web' sent {what} larger than 65536 bytes (max_message_bytes): not read"
    )
    assert raised.value.kind == "protocol"


def test_the_standalone_stream_does_not_read_an_event_over_the_limit_and_opens_again() -> None:
    pytest.importorskip("requests")
    done = threading.Event()

    def stream(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        if exchange.fake.methods().count("GET") == 1:
            exchange.event(raw="retry: 250\ndata: \n")
            exchange.event(raw="data: " + "x" * (LIMIT + 100) + "\n")  # never decoded
            done.wait(20)  # the client drops the stream, not the server
            return
        exchange.event({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
        done.wait(20)

    with FakeMCP({"GET": stream}) as fake:
        try:
            with HTTPMCPServer(fake.endpoint, name="web", max_message_bytes=LIMIT) as server:
                deadline = time.monotonic() + 20
                while "response" not in fake.methods():  # the ping of the second stream answered
                    assert time.monotonic() < deadline, fake.methods()
                    time.sleep(0.01)  # polls what the server recorded
                assert server.call_tool("echo").content == "ok"
        finally:
            done.set()
    assert fake.methods().count("GET") == 2
