"""The streamable HTTP transport's event streams against a scripted loopback server
(``tests/mcp/http_fake.py``): the standalone GET stream, and resuming a stream that ended early
with ``Last-Event-ID`` after the server's ``retry``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from miniagent.mcp import HTTPMCPServer, MCPError
from tests.mcp.http_fake import Exchange, FakeMCP

pytest.importorskip("requests")
pytestmark = pytest.mark.timeout(60)


def _until(fact: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not fact():
        assert time.monotonic() < deadline, "the fact never came true"
        time.sleep(0.005)  # polls a fact the server records


def test_a_stream_that_ends_before_the_response_is_resumed_after_retry_with_last_event_id() -> None:
    closed: list[float] = []

    def call(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        exchange.event(raw="retry: 300\ndata: \n", event_id="e-1")
        closed.append(time.monotonic())  # the handler returns: the stream ends

    def resume(exchange: Exchange, message: dict[str, Any]) -> None:
        if exchange.headers.get("Last-Event-ID") is None:
            exchange.body(b"", 405)  # no standalone stream
            return
        exchange.fake.resumed_at = time.monotonic()  # type: ignore[attr-defined]
        exchange.start_events()
        call_id = next(m for method, _, m in exchange.fake.seen if method == "tools/call")["id"]
        result = {"content": [{"type": "text", "text": "back"}]}
        exchange.event({"jsonrpc": "2.0", "id": call_id, "result": result})

    with FakeMCP({"tools/call": call, "GET": resume}) as fake:
        with HTTPMCPServer(fake.endpoint, name="web") as server:
            assert server.call_tool("echo").content == "back"
        resumed = [h for method, h, _ in fake.seen if method == "GET" and "Last-Event-ID" in h]
        assert [headers["Last-Event-ID"] for headers in resumed] == ["e-1"]
        assert fake.resumed_at - closed[0] >= 0.3  # type: ignore[attr-defined]


def test_a_stream_without_event_ids_that_ends_early_is_an_error() -> None:
    def call(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        exchange.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})

    with FakeMCP({"tools/call": call}) as fake, HTTPMCPServer(fake.endpoint, name="web") as server, \
            pytest.raises(MCPError) as caught:
        server.call_tool("echo")
    assert str(caught.value) == "MCP server 'web' ended the event stream without answering tools/call"


def test_the_standalone_stream_carries_requests_answered_while_idle_and_list_changed() -> None:
    done = threading.Event()

    def listen(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        exchange.event({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        exchange.event({"jsonrpc": "2.0", "id": "srv-2", "method": "roots/list"})
        exchange.event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        done.wait(20)

    with FakeMCP({"GET": listen}) as fake, HTTPMCPServer(fake.endpoint, name="web", roots=["/tmp"]) as server:
        server.list_tools()
        _until(lambda: len([m for method, _, m in fake.seen if method == "response"]) == 2)
        replies = {m["id"]: m for method, _, m in fake.seen if method == "response"}
        assert replies["srv-1"]["result"] == {}
        assert replies["srv-2"]["result"]["roots"][0]["uri"] == "file:///tmp"
        _until(lambda: fake.methods().count("tools/list") == 1 and server._session.tools_changed)  # type: ignore[union-attr]
        server.list_tools()
        assert fake.methods().count("tools/list") == 2  # listed again after list_changed
        done.set()
    assert fake.methods()[-1] == "DELETE"


def test_a_response_on_the_standalone_stream_answers_a_post_that_got_202() -> None:
    pending: list[dict[str, Any]] = []
    ready = threading.Event()

    def accepted(exchange: Exchange, message: dict[str, Any]) -> None:
        pending.append(message)
        ready.set()
        exchange.body(b"", 202)

    def listen(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        ready.wait(20)
        result = {"content": [{"type": "text", "text": "late"}]}
        answer = {"jsonrpc": "2.0", "id": pending[0]["id"], "result": result}
        exchange.event(answer, event_id="g-1")
        exchange.fake.release.wait(20)

    answers = {"tools/call": accepted, "GET": listen}
    with FakeMCP(answers) as fake, HTTPMCPServer(fake.endpoint, name="web") as server:
        _until(lambda: "GET" in fake.methods())
        assert server.call_tool("echo").content == "late"


def test_a_server_without_a_standalone_stream_is_asked_once() -> None:
    with FakeMCP() as fake, HTTPMCPServer(fake.endpoint, name="web") as server:
        _until(lambda: "GET" in fake.methods())
        server.ping()
        server.ping()
    assert fake.methods().count("GET") == 1


def test_a_standalone_stream_that_keeps_ending_without_a_message_is_given_up() -> None:
    def short(exchange: Exchange, message: dict[str, Any]) -> None:
        exchange.start_events()
        exchange.event(raw="retry: 250\ndata: \n", event_id="p-1")  # a priming event, then the end

    with FakeMCP({"GET": short}) as fake, HTTPMCPServer(fake.endpoint, name="web") as server:
        listener = server._session.transport._listener  # type: ignore[union-attr]
        _until(lambda: not listener._thread.is_alive())
        assert fake.methods().count("GET") == 5  # MAX_FAILURES, then no more
        server.ping()
