"""Reading the body of one streamable HTTP answer: its chunks, all of it, its server-sent events,
its JSON.

Invariants:

- The caller's thread reads; before every chunk the cancel event is checked and the socket's
  read timeout set to the time left until the deadline (read again each time, so a progress
  notification that resets it counts, and keep-alive comments cannot extend it).
- A read that fails becomes ``Interrupted`` (cancelled, past the deadline) or ``MCPError`` (kind
  ``closed``: the answer broke off); a body over ``MAX_BODY_BYTES``, an event stream line or
  event over the SSE reader's cap, a body that is not JSON or is nested too deeply to decode are
  ``MCPError`` (kind ``protocol``). No other exception leaves this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..net.connection import READ_SIZE, response_socket
from ..net.sse import SSEDecoder, SSEEvent
from ._errors import MCPError
from ._wire import Deadline, Interrupted

if TYPE_CHECKING:
    import threading

    from urllib3 import BaseHTTPResponse

__all__ = ["MAX_BODY_BYTES", "chunks", "events", "parse", "protocol", "read_all"]

MAX_BODY_BYTES = 64 * 1024 * 1024
_SNIPPET_CHARS = 200


def protocol(name: str, what: str) -> MCPError:
    """``MCPError`` kind ``protocol``: ``MCP server NAME WHAT``."""
    return MCPError(f"MCP server {name!r} {what}", server=name, kind="protocol")


def parse(name: str, body: bytes) -> Any:
    """``body`` decoded as JSON.

    Raises:
        MCPError: kind ``protocol``: not JSON, or nested too deeply to decode.
    """
    try:
        return json.loads(body)
    except RecursionError:
        raise protocol(name, "sent a message nested too deeply to read") from None
    except ValueError:
        snippet = body.decode("utf-8", "replace")[:_SNIPPET_CHARS]
        raise protocol(name, f"sent a body that is not JSON: {snippet}") from None


def chunks(
    name: str, response: BaseHTTPResponse, cancel: threading.Event | None, deadline: Deadline
) -> Iterator[bytes]:
    """The body's chunks as they arrive (rules: module docstring)."""
    raw: Any = response
    sock = response_socket(response)
    while True:
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled")
        left = deadline.left()
        if sock is not None:
            sock.settimeout(left)  # None: no limit (the standalone stream)
        try:
            chunk = raw.read1(READ_SIZE, decode_content=True)
        except Exception as exc:  # urllib3/http.client/socket errors: the stream broke
            if cancel is not None and cancel.is_set():
                raise Interrupted("cancelled") from None
            if deadline.passed(0.01):
                raise Interrupted("timeout") from None
            text = f"MCP server {name!r}: the answer broke off ({type(exc).__name__})"
            raise MCPError(text, server=name, kind="closed") from None
        if not chunk:
            return
        yield chunk


def read_all(
    name: str,
    response: BaseHTTPResponse,
    cancel: threading.Event | None,
    deadline: Deadline,
    limit: int = MAX_BODY_BYTES,
) -> bytes:
    """The whole body; a ``limit`` under ``MAX_BODY_BYTES`` keeps its first ``limit`` bytes."""
    body = bytearray()
    for chunk in chunks(name, response, cancel, deadline):
        body += chunk
        if len(body) > limit:
            if limit < MAX_BODY_BYTES:
                break
            raise protocol(name, f"sent a body longer than {MAX_BODY_BYTES} bytes")
    return bytes(body)


def events(
    name: str, response: BaseHTTPResponse, cancel: threading.Event | None, deadline: Deadline
) -> Iterator[SSEEvent]:
    """The body's server-sent events as they complete (``net.sse.SSEDecoder``)."""
    decoder = SSEDecoder()
    try:
        for chunk in chunks(name, response, cancel, deadline):
            yield from decoder.feed(chunk)
        yield from decoder.close()
    except ProviderError:  # the reader's cap: one line or event too large
        raise protocol(name, f"sent an event stream line or event over {MAX_BODY_BYTES} bytes") from None
