"""Cancel returns at once in every phase of a request (issue 13 kind 7), with or without a proxy,
for each streaming client (chat completions, the Responses API, Azure's).

Phases: connect (the server's accept queue is full, so the SYN is never answered), send (a 30 MB
body to a server that never reads), waiting for the headers, reading the body; and the same
through a loopback HTTP proxy that accepts and then waits (forwarding for ``http://``, ``CONNECT``
for ``https://``). Every timeout of the client is 60 s, so only the cancel can end the stream;
the bound asserted (``LIMIT``) is loose against scheduling noise, the promise (100 ms) is
measured by ``python -m bench`` (``bench/cancel.py``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from providers_server import request, run

from miniagent import Message
from miniagent.providers import HTTPSettings, OpenAIChatClient, OpenAIResponsesClient, RetryPolicy
from miniagent.providers.azure import create_azure_client

pytestmark = pytest.mark.timeout(60)

LIMIT = 2.0  # seconds from cancel to the stream's end; without the fix: the 60 s timeouts
SLOW = HTTPSettings(read_timeout=60.0, connect_timeout=60.0, retry=RetryPolicy(max_retries=0))
BIG = 30 * 1024 * 1024
Handler = Callable[[socket.socket, threading.Event], None]


class Listener:
    """A loopback TCP listener driven by ``serve(conn)`` per accepted connection (thread each).

    ``accept=False``: never accepts, and its accept queue is filled at start, so a new connect
    hangs in SYN_SENT. ``seen`` is set when a connection was accepted (or, for ``accept=False``,
    at once). Closing releases every handler.
    """

    def __init__(self, serve: Handler | None, accept: bool = True):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0 if not accept else 8)
        self.port = int(self.sock.getsockname()[1])
        self.release = threading.Event()
        self.seen = threading.Event()
        self._fillers: list[socket.socket] = []
        self._conns: list[socket.socket] = []
        self._serve = serve
        if accept:
            threading.Thread(target=self._accept_loop, daemon=True).start()
        else:
            self._fill_queue()
            self.seen.set()

    def _fill_queue(self) -> None:
        for _ in range(8):  # more than the backlog holds: later SYNs are dropped
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError, OSError):
                filler.connect(("127.0.0.1", self.port))
            self._fillers.append(filler)
        time.sleep(0.05)  # let the handshakes settle into the accept queue

    def _accept_loop(self) -> None:
        while not self.release.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            self.seen.set()
            if self._serve is not None:
                threading.Thread(target=self._serve, args=(conn, self.release), daemon=True).start()

    def close(self) -> None:
        self.release.set()
        for s in (*self._fillers, *self._conns, self.sock):
            with contextlib.suppress(OSError):
                s.close()


@contextlib.contextmanager
def listening(serve: Handler | None, accept: bool = True) -> Iterator[Listener]:
    listener = Listener(serve, accept)
    try:
        yield listener
    finally:
        listener.close()


def never_reads(conn: socket.socket, release: threading.Event) -> None:
    release.wait(30)


def reads_then_waits(conn: socket.socket, release: threading.Event) -> None:
    """Read the request head (and whatever body follows), never answer."""
    conn.settimeout(0.2)
    while not release.is_set():
        try:
            if not conn.recv(65536):
                return
        except TimeoutError:
            continue
        except OSError:
            return


def answers_then_waits(conn: socket.socket, release: threading.Event) -> None:
    """Answer 200 with one event (read as text by chat completions and the Responses API alike),
    then stay silent."""
    conn.recv(65536)
    event = (
        b'data: {"type":"response.output_text.delta","delta":"Hi",'
        b'"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    )
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n" % (len(event), event)
    )
    release.wait(30)


def cancel_latency(client: Any, messages: list[Message], ready: Callable[[], bool]) -> float:
    """Stream in this thread; once ``ready()`` holds (and 0.2 s more), cancel from another thread.

    Returns the seconds from ``cancel.set()`` to the stream's end.
    """
    cancel = threading.Event()
    fired: list[float] = []

    def canceller() -> None:
        deadline = time.monotonic() + 20
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # let the client block in the phase under test
        fired.append(time.monotonic())
        cancel.set()

    thread = threading.Thread(target=canceller, daemon=True)
    thread.start()
    try:
        run(client.stream(request(messages, cancel=cancel)))
    finally:
        ended = time.monotonic()
        client.close()
    thread.join(5)
    assert fired, "the stream ended before the cancel"
    return ended - fired[0]


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "")


MakeClient = Callable[[str], Any]
CLIENTS: dict[str, MakeClient] = {
    "chat": lambda base: OpenAIChatClient("m", base, api_key="sk-test", settings=SLOW),
    "responses": lambda base: OpenAIResponsesClient("gpt-5-mini", base, api_key="sk-test", settings=SLOW),
    "azure-responses": lambda base: create_azure_client(
        "deployment", base, "azure-test", api="responses", settings=SLOW
    ),
}


@pytest.fixture(params=sorted(CLIENTS))
def make_client(request: pytest.FixtureRequest) -> MakeClient:
    """Each streaming client, built for a base URL."""
    return CLIENTS[request.param]


HI = [Message("user", "hi")]


def test_cancel_while_connecting_to_a_full_accept_queue(make_client: MakeClient) -> None:
    with listening(None, accept=False) as server:
        latency = cancel_latency(make_client(f"http://127.0.0.1:{server.port}/v1"), HI, lambda: True)
    assert latency < LIMIT


def test_cancel_while_sending_a_big_body_to_a_server_that_does_not_read(make_client: MakeClient) -> None:
    with listening(never_reads) as server:
        big = [Message("user", "x" * BIG)]
        latency = cancel_latency(make_client(f"http://127.0.0.1:{server.port}/v1"), big, server.seen.is_set)
    assert latency < LIMIT


def test_cancel_while_waiting_for_the_headers(make_client: MakeClient) -> None:
    with listening(reads_then_waits) as server:
        latency = cancel_latency(make_client(f"http://127.0.0.1:{server.port}/v1"), HI, server.seen.is_set)
    assert latency < LIMIT


def test_cancel_while_reading_the_body(make_client: MakeClient) -> None:
    with listening(answers_then_waits) as server:
        latency = cancel_latency(make_client(f"http://127.0.0.1:{server.port}/v1"), HI, server.seen.is_set)
    assert latency < LIMIT


# --- through an HTTP proxy on loopback --------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["http", "https"])  # forwarding, CONNECT tunnel
@pytest.mark.parametrize("phase", ["connect", "waiting"])
def test_cancel_through_a_proxy(
    monkeypatch: pytest.MonkeyPatch, scheme: str, phase: str, make_client: MakeClient
) -> None:
    serve = reads_then_waits if phase == "waiting" else None
    with listening(serve, accept=phase != "connect") as proxy:
        monkeypatch.setenv(f"{scheme.upper()}_PROXY", f"http://127.0.0.1:{proxy.port}")
        client = make_client(f"{scheme}://api.example.test/v1")
        latency = cancel_latency(client, HI, proxy.seen.is_set)
    assert latency < LIMIT


def test_cancel_while_sending_a_big_body_through_a_proxy(
    monkeypatch: pytest.MonkeyPatch, make_client: MakeClient
) -> None:
    with listening(never_reads) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        big = [Message("user", "x" * BIG)]
        latency = cancel_latency(make_client("http://api.example.test/v1"), big, proxy.seen.is_set)
    assert latency < LIMIT
