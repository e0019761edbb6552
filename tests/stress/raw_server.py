"""A raw-socket HTTP/1.1 server on 127.0.0.1 for the misbehaving-provider tests.

Each accepted connection's request (headers and ``Content-Length`` body) is read and recorded,
then handed to the next scripted handler (the last one repeats), which writes whatever bytes it
likes to the socket: a whole response, headers and then silence, a reset (``SO_LINGER`` 0), an
endless stream. ``release`` is set when the server closes, so a silent handler can return.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Handler = Callable[[socket.socket, Request, threading.Event], None]


class RawServer:
    """Use as a context manager; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, *handlers: Handler) -> None:
        self.handlers = list(handlers)
        self.requests: list[Request] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> RawServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._accept.join(5)
        for thread in self._threads:
            thread.join(5)

    def _serve(self) -> None:
        while not self.release.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            request = read_request(conn)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
                index = min(len(self.requests) - 1, len(self.handlers) - 1)
                handler = self.handlers[index]
            with contextlib.suppress(OSError):
                handler(conn, request, self.release)


def read_request(conn: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = body
    return Request(method, path, headers, parsed)


def head(
    status: int = 200, content_type: str = "text/event-stream", extra: dict[str, str] | None = None
) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reply(body: bytes, status: int = 200, content_type: str = "text/event-stream", **extra: str) -> Handler:
    """A whole response, the body delimited by closing the connection."""

    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(head(status, content_type, {k.replace("_", "-"): v for k, v in extra.items()}) + body)

    return handler


def reset_after(prefix: bytes) -> Handler:
    """Send ``prefix`` (headers and part of a body), then reset the connection (RST)."""

    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(prefix)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    return handler


def silent_after(prefix: bytes) -> Handler:
    """Send ``prefix``, then nothing until the server closes."""

    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(prefix)
        release.wait(30)

    return handler


def endless(first: bytes, event: bytes) -> Handler:
    """Send ``first``, then ``event`` again and again until the client goes away."""

    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(first)
        while not release.is_set():
            conn.sendall(event)

    return handler


# --- SSE bodies of both providers ------------------------------------------------------------------


def openai_text(*texts: str, done: bool = True) -> bytes:
    out = [openai_delta(text) for text in texts]
    if done:
        out.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    return b"".join(out)


def openai_delta(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


def anthropic_event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def anthropic_start() -> bytes:
    return anthropic_event(
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    ) + anthropic_event(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    )


def anthropic_delta(text: str) -> bytes:
    return anthropic_event(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    )


def anthropic_text(*texts: str, done: bool = True) -> bytes:
    out = [anthropic_start(), *(anthropic_delta(t) for t in texts)]
    if done:
        out += [
            anthropic_event({"type": "content_block_stop", "index": 0}),
            anthropic_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            anthropic_event({"type": "message_stop"}),
        ]
    return b"".join(out)
