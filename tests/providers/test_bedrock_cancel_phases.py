"""The Bedrock client returns at once when cancelled, in every phase of a request: connect (a full
accept queue), send (a 30 MB body to a server that never reads), waiting for the headers, and
reading an event stream that went silent after its first message; directly and through a
loopback proxy.

The listeners and the timing are those of ``test_provider_cancel_phases`` (every client timeout
60 s, so only the cancel can end the stream; the bound asserted is loose against scheduling
noise, the 100 ms promise is measured by ``python -m bench``).
"""

from __future__ import annotations

import socket
import threading

import pytest
from eventstream_frames import event
from test_provider_cancel_phases import (
    BIG,
    HI,
    LIMIT,
    SLOW,
    cancel_latency,
    listening,
    never_reads,
    no_proxy_env,
    reads_then_waits,
)

from miniagent import Message
from miniagent.providers.bedrock import BedrockClient

pytestmark = pytest.mark.timeout(60)
__all__ = ["no_proxy_env"]  # the autouse fixture, used here too

FIRST_EVENT = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}})


def answers_then_waits(conn: socket.socket, release: threading.Event) -> None:
    """Answer 200 with one event-stream message, then stay silent."""
    conn.recv(65536)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(FIRST_EVENT), FIRST_EVENT)
    )
    release.wait(30)


def _client(base: str) -> BedrockClient:
    return BedrockClient("us.anthropic.claude-sonnet-4-5-20250929-v1:0", base, "test-key", settings=SLOW)


def test_cancel_while_connecting() -> None:
    with listening(None, accept=False) as server:
        latency = cancel_latency(_client(f"http://127.0.0.1:{server.port}"), HI, lambda: True)
    assert latency < LIMIT


def test_cancel_while_sending_a_big_body() -> None:
    with listening(never_reads) as server:
        big = [Message("user", "x" * BIG)]
        latency = cancel_latency(_client(f"http://127.0.0.1:{server.port}"), big, server.seen.is_set)
    assert latency < LIMIT


def test_cancel_while_waiting_for_the_headers() -> None:
    with listening(reads_then_waits) as server:
        latency = cancel_latency(_client(f"http://127.0.0.1:{server.port}"), HI, server.seen.is_set)
    assert latency < LIMIT


def test_cancel_while_reading_a_silent_stream() -> None:
    with listening(answers_then_waits) as server:
        latency = cancel_latency(_client(f"http://127.0.0.1:{server.port}"), HI, server.seen.is_set)
    assert latency < LIMIT


@pytest.mark.parametrize("scheme", ["http", "https"])  # forwarding, CONNECT tunnel
def test_cancel_through_a_proxy_that_waits(monkeypatch: pytest.MonkeyPatch, scheme: str) -> None:
    with listening(reads_then_waits) as proxy:
        monkeypatch.setenv(f"{scheme.upper()}_PROXY", f"http://127.0.0.1:{proxy.port}")
        latency = cancel_latency(_client(f"{scheme}://bedrock-runtime.example.test"), HI, proxy.seen.is_set)
    assert latency < LIMIT
