"""A real HTTP server on 127.0.0.1 for the provider tests (stdlib ``http.server`` in a thread).

Each POST is recorded (path, headers, JSON body) and answered with the next scripted ``Reply``:
a status, headers and a list of body chunks, each written and flushed on its own (as HTTP/1.1
chunks, or raw with ``Connection: close``). A reply may then hold the connection open without
sending anything (a silent server) until the server closes.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from miniagent import Message, ModelRequest, TextEvent, ToolCall, ToolCallEvent, ToolSpec
from miniagent.model import DoneEvent, ModelEvent

FIXTURES = Path(__file__).parent / "fixtures" / "sse"


def fixture(name: str) -> bytes:
    """The raw bytes of ``tests/fixtures/sse/<name>``."""
    return (FIXTURES / name).read_bytes()


@dataclass
class Reply:
    """One scripted answer.

    Args:
        chunks: body pieces, each written and flushed separately.
        status: HTTP status.
        headers: extra response headers.
        content_type: the Content-Type (``None``: no header).
        chunked: use ``Transfer-Encoding: chunked`` (each piece one HTTP chunk), else
            ``Connection: close`` delimits the body.
        hang: after the chunks, keep the connection open and silent until the server closes.
        delay: seconds to sleep before sending the headers.
    """

    chunks: list[bytes] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "text/event-stream"
    chunked: bool = True
    hang: bool = False
    delay: float = 0.0


@dataclass
class Captured:
    """One received request (``raw``: the body's bytes as received)."""

    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes | None = None


_Server = TypeVar("_Server", bound="LoopbackServer")


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 that answers with ``handler`` from a daemon thread.

    Use as a context manager; ``url`` is ``http://127.0.0.1:PORT``. ``release`` is set when it
    closes, so a handler waiting on it (a silent or hanging reply) returns.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self: _Server) -> _Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


class ProviderServer(LoopbackServer):
    """The server. Use as a context manager; ``url`` is ``http://127.0.0.1:PORT``.

    ``replies`` is consumed in order; the last reply is repeated when the script runs out.
    ``handler`` (optional) computes a reply from the captured request instead.
    """

    def __init__(self, *replies: Reply, handler: Callable[[Captured], Reply] | None = None):
        self.replies = list(replies)
        self.handler = handler
        self.requests: list[Captured] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                captured = Captured(self.path, dict(self.headers.items()), body, raw)
                reply = outer._next(captured)
                if reply.delay:
                    outer.release.wait(reply.delay)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(reply)
                self.close_connection = True

            def _answer(self, reply: Reply) -> None:
                self.send_response(reply.status)
                if reply.content_type:
                    self.send_header("Content-Type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                for chunk in reply.chunks:
                    if not chunk:
                        continue
                    if reply.chunked:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    else:
                        self.wfile.write(chunk)
                    self.wfile.flush()
                if reply.hang:
                    outer.release.wait(10)
                    return
                if reply.chunked:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()

        super().__init__(Handler)

    def _next(self, captured: Captured) -> Reply:
        with self._lock:
            self.requests.append(captured)
            if self.handler is not None:
                return self.handler(captured)
            if len(self.replies) > 1:
                return self.replies.pop(0)
            return self.replies[0]


# --- body variants -------------------------------------------------------------------------------


def whole(body: bytes) -> list[bytes]:
    """The body in one chunk."""
    return [body]


def byte_by_byte(body: bytes) -> list[bytes]:
    """The body one byte per chunk."""
    return [body[i : i + 1] for i in range(len(body))]


def random_chunks(body: bytes, seed: int, max_size: int = 64) -> list[bytes]:
    """The body in random chunk sizes 1..max_size (seeded, reproducible)."""
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(body):
        n = rng.randint(1, max_size)
        chunks.append(body[i : i + n])
        i += n
    return chunks


def crlf(body: bytes) -> bytes:
    """The body with CRLF line endings."""
    return body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def event_boundaries(body: bytes) -> list[int]:
    """Offsets just after each event (after its blank line), in order, ``\\n`` bodies only."""
    cuts, start = [], 0
    while True:
        i = body.find(b"\n\n", start)
        if i < 0:
            return cuts
        cuts.append(i + 2)
        start = i + 2


def sse(*events: Any, event: str | None = None, done: bool = False) -> bytes:
    """An SSE body of JSON ``data:`` events (optionally named), optionally ``data: [DONE]``."""
    out = []
    for item in events:
        prefix = f"event: {event}\n" if event else ""
        if isinstance(item, tuple):
            prefix = f"event: {item[0]}\n"
            item = item[1]
        out.append(f"{prefix}data: {json.dumps(item)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def anthropic_sse(*payloads: dict[str, Any]) -> bytes:
    """Anthropic-style body: each payload named by its ``type``."""
    return "".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n" for p in payloads).encode()


def first_text_event(provider: str) -> bytes:
    """The start of a stream of ``provider`` (``"openai"`` or ``"anthropic"``) up to its first
    text event, ``"Hi"``, and no further."""
    if provider == "openai":
        return sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    return anthropic_sse(
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    )


# --- running a client ----------------------------------------------------------------------------


def request(
    messages: list[Message] | None = None,
    *,
    system: str = "be brief",
    tools: tuple[ToolSpec, ...] = (),
    cancel: threading.Event | None = None,
) -> ModelRequest:
    """A ``ModelRequest`` with one user message by default."""
    return ModelRequest(system, messages or [Message("user", "hi")], tools, cancel)


@dataclass
class Outcome:
    """What a stream produced."""

    text: str
    calls: list[ToolCall]
    done: list[DoneEvent]
    events: list[ModelEvent]


def run(events: Iterator[ModelEvent] | Any) -> Outcome:
    """Drain a stream into an ``Outcome``."""
    collected = list(events)
    return Outcome(
        "".join(e.text for e in collected if isinstance(e, TextEvent)),
        [e.call for e in collected if isinstance(e, ToolCallEvent)],
        [e for e in collected if isinstance(e, DoneEvent)],
        collected,
    )


def stream_reply(make_client: Callable[..., Any], chunks: list[bytes], **kwargs: Any) -> Outcome:
    """Serve ``chunks`` as the reply, stream one ``request()`` through
    ``make_client(server, **kwargs)`` and close that client."""
    with ProviderServer(Reply(chunks)) as server:
        c = make_client(server, **kwargs)
        try:
            return run(c.stream(request()))
        finally:
            c.close()


class RecordingWait:
    """A ``RetryPolicy.wait`` that records the delays asked for and never really waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, cancel: threading.Event | None, seconds: float) -> bool:
        self.delays.append(seconds)
        return cancel is not None and cancel.is_set()
