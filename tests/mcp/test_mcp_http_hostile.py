"""The MCP client over streamable HTTP against hostile or broken servers (a scripted loopback
server, ``tests/mcp/http_fake.py``): one regression input per kind."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from miniagent.mcp import HTTPMCPServer, MCPError
from miniagent.mcp._wire import MAX_MESSAGE_BYTES
from tests.mcp.http_fake import Exchange, FakeMCP

pytest.importorskip("requests")
pytestmark = pytest.mark.timeout(60)

KEY = "key-8d1f0c2b9e7a6354"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def logged() -> Iterator[list[str]]:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep(logging.DEBUG)
    logger = logging.getLogger("miniagent.mcp")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _deep_json(exchange: Exchange, message: dict[str, Any]) -> None:
    body = f'{{"jsonrpc":"2.0","id":{message["id"]},"result":{DEEP}}}'
    exchange.body(body.encode())


def _deep_event(exchange: Exchange, message: dict[str, Any]) -> None:
    exchange.start_events()
    exchange.event(raw=f'data: {{"jsonrpc":"2.0","id":{message["id"]},"result":{DEEP}}}\n')


@pytest.mark.parametrize("answer", [_deep_json, _deep_event], ids=["json", "event-stream"])
def test_a_reply_nested_100000_deep_is_a_protocol_error(answer: Any) -> None:
    with FakeMCP({"tools/call": answer}) as fake, HTTPMCPServer(fake.endpoint, name="web") as server, \
            pytest.raises(MCPError) as caught:
        server.call_tool("echo")
    assert caught.value.kind == "protocol"
    assert str(caught.value) == "MCP server 'web' sent a message nested too deeply to read"


def test_an_event_stream_line_over_max_message_bytes_is_an_mcp_error() -> None:
    def huge(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        piece = b"x" * (1 << 20)
        exchange.wfile.write(b"data: ")
        for _ in range(MAX_MESSAGE_BYTES // len(piece) + 1):  # a line that never ends
            exchange.wfile.write(piece)
        exchange.wfile.flush()

    with FakeMCP({"tools/call": huge}) as fake, HTTPMCPServer(fake.endpoint, name="web") as server, \
            pytest.raises(MCPError) as caught:  # a ProviderError escaped the MCP layer
        server.call_tool("echo")
    assert caught.value.kind == "protocol"
    assert str(caught.value) == (
        "MCP server 'web' sent an event larger than 16 MiB (max_message_bytes): not read"
    )


def test_a_redirect_of_the_session_delete_is_not_followed() -> None:
    with FakeMCP() as elsewhere:
        target = elsewhere.endpoint

        def moved(exchange: Exchange, message: dict[str, Any]) -> None:
            exchange.body(b"", 307, headers={"Location": target})

        with FakeMCP({"DELETE": moved}) as fake:
            with HTTPMCPServer(fake.endpoint, {"X-API-Key": KEY}, name="web") as server:
                server.ping()
            assert fake.methods()[-1] == "DELETE"
        assert elsewhere.seen == []  # the key went nowhere else


def test_a_401_body_that_echoes_a_header_value_is_redacted(logged: list[str]) -> None:
    def echo(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.body(f"bad key {exchange.headers['X-API-Key']}".encode(), 401, "text/plain")

    with FakeMCP({"initialize": echo}) as fake, pytest.raises(MCPError) as caught:
        HTTPMCPServer(fake.endpoint, {"X-API-Key": KEY}, name="web").start()
    assert str(caught.value) == "MCP server 'web' answered HTTP 401: bad key ***"
    assert all(KEY not in line for line in logged)


def test_log_notifications_are_redacted_and_escaped(logged: list[str]) -> None:
    def talk(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        note = {"level": "warning", "data": f"\x1b]52;c;aGk=\x07 header was {KEY}"}
        exchange.event({"jsonrpc": "2.0", "method": "notifications/message", "params": note})
        exchange.event({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}})

    headers = {"Authorization": f"Bearer {KEY}"}
    with FakeMCP({"tools/call": talk}) as fake, HTTPMCPServer(fake.endpoint, headers, name="web") as server:
        assert server.call_tool("echo").content == "(no content)"
    assert "[web] \\x1b]52;c;aGk=\\x07 header was ***" in logged
    assert all(KEY not in line and "\x1b" not in line for line in logged)


def test_server_requests_whose_replies_are_never_answered_end_at_the_timeout() -> None:
    hold = threading.Event()

    def flood(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        for number in range(200):
            exchange.event({"jsonrpc": "2.0", "id": f"p{number}", "method": "ping"})
        hold.wait(30)

    def never(exchange: Exchange, message: dict[str, Any]) -> None:
        hold.wait(30)  # the reply's POST gets no answer

    with FakeMCP({"tools/call": flood, "response": never}) as fake, \
            HTTPMCPServer(fake.endpoint, name="web", timeout=1.0) as server:
        try:
            with pytest.raises(MCPError) as caught:  # was 5 s per reply: 1,000 s
                server.call_tool("echo")
        finally:
            hold.set()
    assert caught.value.kind == "timeout"


def test_a_listing_on_a_session_the_server_ended_is_sent_again_on_a_new_session() -> None:
    ended: list[int] = []

    def gone_once(exchange: Exchange, message: dict[str, Any]) -> None:
        if not ended:
            ended.append(message["id"])
            exchange.body(b"", 404, "text/plain")
            return
        exchange.result(message, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})

    with FakeMCP({"tools/list": gone_once}) as fake, HTTPMCPServer(fake.endpoint, name="web") as server:
        assert [tool.name for tool in server.tools()] == ["echo"]
    assert fake.methods().count("initialize") == 2
