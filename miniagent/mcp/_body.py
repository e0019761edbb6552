"""Reading the body of one streamable HTTP answer: its chunks, all of it, its server-sent events,
its JSON.

Invariants:

- The caller's thread reads; before every chunk the cancel event is checked and the socket's
  read timeout set to the time left until the deadline (read again each time, so a progress
  notification that resets it counts, and keep-alive comments cannot extend it).
- A read that fails becomes ``Interrupted`` (cancelled, past the deadline) or ``MCPError`` (kind
  ``closed``: the answer broke off). No other exception leaves this module.
- One message is at most ``limit`` bytes (the server's ``max_message_bytes``, default
  ``_wire.MAX_MESSAGE_BYTES``): a JSON body, or one event stream line or event, over it is
  ``MCPError`` (kind ``protocol``, ``_wire.too_large``) as soon as that many bytes arrived, before
  anything is decoded, so memory stays bounded by the limit and one chunk.
- A body that is not JSON, or nested deeper than ``miniagent._json.MAX_DEPTH`` (decoded by the
  depth-safe ``miniagent._json.loads``), is ``MCPError`` (kind ``protocol``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._json import JSONDepthError, loads
from ..errors import ProviderError
from ..net.connection import READ_SIZE, response_socket
from ..net.sse import SSEDecoder, SSEEvent
from ._errors import MCPError
from ._wire import Deadline, Interrupted, too_large

if TYPE_CHECKING:
    import threading

    from urllib3 import BaseHTTPResponse

__all__ = ["chunks", "events", "parse", "protocol", "read_all"]

_SNIPPET_CHARS = 200


def protocol(name: str, what: str) -> MCPError:
    """``MCPError`` kind ``protocol``: ``MCP server NAME WHAT``."""
    return MCPError(f"MCP server {name!r} {what}", server=name, kind="protocol")


def parse(name: str, body: bytes | bytearray | str) -> Any:
    """``body`` decoded as JSON (depth-safe: ``miniagent._json.loads``).

    Raises:
        MCPError: kind ``protocol``: not JSON, or nested too deeply to decode.
    """
    try:
        return loads(body)
    except JSONDepthError:
        raise protocol(name, "sent a message nested too deeply to read") from None
    except ValueError:
        head = body[: _SNIPPET_CHARS * 4]  # enough bytes for the snippet's characters
        snippet = (head if isinstance(head, str) else head.decode("utf-8", "replace"))[:_SNIPPET_CHARS]
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
    limit: int,
    cut: bool = False,
) -> bytearray:
    """The whole body, at most ``limit`` bytes: more is ``MCPError`` (``_wire.too_large``), or
    with ``cut`` its first ``limit`` bytes (an HTTP error's body)."""
    body = bytearray()
    for chunk in chunks(name, response, cancel, deadline):
        body += chunk
        if len(body) > limit:
            if cut:
                del body[limit:]
                break
            raise too_large(name, limit, "a body")
    return body


def events(
    name: str,
    response: BaseHTTPResponse,
    cancel: threading.Event | None,
    deadline: Deadline,
    limit: int,
) -> Iterator[SSEEvent]:
    """The body's server-sent events as they complete (``net.sse.SSEDecoder``), none over
    ``limit`` bytes (``MCPError``, ``_wire.too_large``)."""
    decoder = SSEDecoder(max_size=limit)  # holds at most that, and a chunk
    try:
        for chunk in chunks(name, response, cancel, deadline):
            for event in decoder.feed(chunk):
                yield _within(name, event, limit)
        for event in decoder.close():
            yield _within(name, event, limit)
    except ProviderError:  # the reader's own limit: a line or an event over ``limit``
        raise too_large(name, limit, "an event") from None


def _within(name: str, event: SSEEvent, limit: int) -> SSEEvent:
    """``event`` when its data is at most ``limit`` (characters; the reader itself lets a line
    completed within one chunk pass whole)."""
    if len(event.data) > limit:
        raise too_large(name, limit, "an event")
    return event
