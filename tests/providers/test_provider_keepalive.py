"""Keep-alive: a client reuses its connection between turns (real HTTP/1.1 server on loopback).

``KeepAliveServer`` is a ``ThreadingHTTPServer`` with ``protocol_version = "HTTP/1.1"`` that
keeps connections open between requests and counts the connections it accepted. Checked: three
turns of ``run_agent`` through either client use one connection (chunked and Content-Length
bodies); a body that never ends after ``[DONE]`` still finishes the turn within ~1 s and the
next request opens a new connection; cancel on a reused connection; a server that closes idle
connections (before and while the next request arrives); a late cancel of a finished stream
never touches the pooled connection another stream now uses.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from providers_server import LoopbackServer, RecordingWait, first_text_event, fixture, request, run

from miniagent import ProviderError, TextEvent, run_agent
from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy
from tests.helpers import recording_tool

pytestmark = pytest.mark.timeout(60)

OPENAI_TOOL = fixture("openai-one-tool.sse")
OPENAI_TEXT = fixture("openai-text.sse")
ANTHROPIC_TOOL = fixture("anthropic-tool-use.sse")
ANTHROPIC_TEXT = fixture("anthropic-text.sse")


class KeepAliveServer(LoopbackServer):
    """An HTTP/1.1 server that keeps connections alive and counts them.

    Args:
        bodies: the SSE bodies answered in order (the last one repeats).
        length: send ``Content-Length`` bodies instead of chunked ones.
        close: answer with ``Connection: close`` (no reuse possible: the "before" case).
        endless: request numbers (0-based) whose chunked body never gets its terminator: the
            handler sends the body, then waits silently until the server closes.
        drop: request numbers read and then answered by closing the connection (no byte sent):
            a server that closed an idle connection just as the request arrived.
        idle_timeout: seconds a connection may stay idle before the server closes it.
    """

    def __init__(
        self,
        *bodies: bytes,
        length: bool = False,
        close: bool = False,
        endless: frozenset[int] = frozenset(),
        drop: frozenset[int] = frozenset(),
        idle_timeout: float | None = None,
    ) -> None:
        self.bodies = list(bodies)
        self.connections = 0
        self.requests = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = idle_timeout

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # As real servers do: without it each small write of a warm connection waits
                # for the client's delayed ACK (~40 ms), which a new connection does not.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with outer._lock:
                    outer.connections += 1

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer._lock:
                    number = outer.requests
                    outer.requests += 1
                    body = outer.bodies[min(number, len(outer.bodies) - 1)]
                if number in drop:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                if length:
                    self.send_header("Content-Length", str(len(body)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if length:
                    self.wfile.write(body)
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
                self.wfile.flush()
                if number in endless:
                    outer.release.wait(10)
                    self.close_connection = True
                    return
                if not length:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()

        super().__init__(Handler)


def make_client(provider: str, server: KeepAliveServer, wait: RecordingWait | None = None) -> Any:
    policy = RetryPolicy(max_retries=3, backoff_base=0.0, wait=wait or RecordingWait())
    if provider == "openai":
        return OpenAIChatClient("m", f"{server.url}/v1", settings=HTTPSettings(retry=policy))
    return AnthropicClient("m", server.url, settings=HTTPSettings(retry=policy))


def three_turns(provider: str) -> list[bytes]:
    if provider == "openai":
        return [OPENAI_TOOL, OPENAI_TOOL, OPENAI_TEXT]
    return [ANTHROPIC_TOOL, ANTHROPIC_TOOL, ANTHROPIC_TEXT]


def agent_run(client: Any, cancel: threading.Event | None = None) -> Any:
    return run_agent(
        client=client,
        system="be brief",
        tools=[recording_tool("get_weather")],
        user="weather?",
        max_turns=5,
        cancel=cancel,
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("length", [False, True], ids=["chunked", "content-length"])
def test_three_turns_use_one_connection(provider: str, length: bool) -> None:
    with KeepAliveServer(*three_turns(provider), length=length) as server:
        client = make_client(provider, server)
        result = agent_run(client)
        assert result.stop_reason == "complete"
        assert server.requests == 3
        assert server.connections == 1
        client.close()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_connection_close_server_still_works_one_connection_per_turn(provider: str) -> None:
    with KeepAliveServer(*three_turns(provider), close=True) as server:
        result = agent_run(make_client(provider, server))
        assert result.stop_reason == "complete"
        assert server.requests == 3 and server.connections == 3


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_body_that_never_ends_after_the_end_marker_does_not_stall_the_turn(provider: str) -> None:
    turns = three_turns(provider)
    with KeepAliveServer(turns[0], turns[2], endless=frozenset({0})) as server:
        client = make_client(provider, server)
        start = time.perf_counter()
        first = run(client.stream(request()))
        elapsed = time.perf_counter() - start
        assert first.calls and first.done
        assert elapsed < 1.0, f"the turn took {elapsed:.2f} s"
        second = run(client.stream(request()))
        assert second.text and second.done
        assert server.connections == 2  # the unfinished connection was closed, not reused
    print(f"\n{provider}: turn with an unended body: {elapsed * 1000:.0f} ms")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancel_on_a_reused_connection(provider: str) -> None:
    first = first_text_event(provider)
    text = three_turns(provider)[2]
    with KeepAliveServer(text, first, text, endless=frozenset({1})) as server:
        client = make_client(provider, server)
        assert run(client.stream(request())).done
        cancel = threading.Event()
        stream = iter(client.stream(request(cancel=cancel)))
        assert next(stream) == TextEvent("Hi")
        assert server.connections == 1  # the second request went over the first connection
        threading.Timer(0.2, cancel.set).start()
        start = time.perf_counter()
        assert list(stream) == []
        latency = time.perf_counter() - start - 0.2
        assert run(client.stream(request())).done  # the cancelled connection is not reused
        assert server.connections == 2
    print(f"\n{provider}: cancel on a reused connection: {latency * 1000:.1f} ms")
    assert latency < 0.1


def test_server_closing_idle_connections_is_not_an_error() -> None:
    wait = RecordingWait()
    with KeepAliveServer(OPENAI_TEXT, idle_timeout=0.05) as server:
        client = make_client("openai", server, wait)
        for _ in range(3):
            assert run(client.stream(request())).done
            time.sleep(0.2)  # the server closes the idle connection meanwhile
        assert server.connections == 3
    assert wait.delays == []  # urllib3 saw the dropped connection before sending


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_request_on_a_connection_the_server_just_closed_is_sent_again_at_once(provider: str) -> None:
    wait = RecordingWait()
    text = three_turns(provider)[2]
    with KeepAliveServer(text, drop=frozenset({1})) as server:
        client = make_client(provider, server, wait)
        assert run(client.stream(request())).done
        assert run(client.stream(request())).done  # request 1 dropped on the reused connection
        assert server.requests == 3 and server.connections == 2
    assert wait.delays == []  # not counted as a retry: no backoff


def test_a_dropped_request_on_a_new_connection_is_an_ordinary_retryable_error() -> None:
    wait = RecordingWait()
    with KeepAliveServer(OPENAI_TEXT, drop=frozenset({0, 1})) as server:
        client = make_client("openai", server, wait)
        assert run(client.stream(request())).done
        assert server.requests == 3
    assert len(wait.delays) == 2  # fresh connections: each failure is a counted retry


def test_a_late_cancel_never_touches_a_pooled_connection_used_by_another_stream() -> None:
    """Two threads share one client (one pool); one keeps cancelling its finished streams."""
    with KeepAliveServer(OPENAI_TEXT) as server:
        client = make_client("openai", server)
        failures: list[BaseException] = []
        stop = time.monotonic() + 2.0

        def canceller() -> None:
            while time.monotonic() < stop:
                cancel = threading.Event()
                try:
                    run(client.stream(request(cancel=cancel)))
                except ProviderError as exc:
                    failures.append(exc)
                cancel.set()  # after the end: the connection is already back in the pool

        def worker() -> None:
            while time.monotonic() < stop:
                try:
                    outcome = run(client.stream(request(cancel=threading.Event())))
                    assert outcome.done, outcome
                except (ProviderError, AssertionError) as exc:
                    failures.append(exc)

        threads = [threading.Thread(target=canceller), threading.Thread(target=worker)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert not failures, failures[:3]
        assert server.connections <= 4, server.connections
    print(f"\nshared client: {server.requests} streams over {server.connections} connections")


def _per_turn(make: Callable[[], KeepAliveServer], turns: int = 60) -> tuple[float, int]:
    with make() as server:
        client = make_client("openai", server)
        run(client.stream(request()))  # warm-up
        start = time.perf_counter()
        for _ in range(turns):
            run(client.stream(request()))
        elapsed = (time.perf_counter() - start) / turns
        return elapsed, server.connections


def test_per_turn_time_with_and_without_reuse() -> None:
    reused, reused_connections = _per_turn(lambda: KeepAliveServer(OPENAI_TEXT))
    fresh, fresh_connections = _per_turn(lambda: KeepAliveServer(OPENAI_TEXT, close=True))
    print(
        f"\nloopback per turn: reused connection {reused * 1000:.2f} ms ({reused_connections} "
        f"connection), new connection each turn {fresh * 1000:.2f} ms ({fresh_connections} "
        "connections)"
    )
    assert reused_connections == 1 and fresh_connections == 61
