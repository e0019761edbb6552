"""JSON-RPC 2.0 messages as MCP uses them, and what a transport promises.

- A message is a JSON object (a batch, a JSON array, is accepted on input and handled item by
  item; this client never sends one).
- A message read from a server (a stdio line, an HTTP body, one server-sent event) is at most
  ``max_message_bytes`` (default ``MAX_MESSAGE_BYTES``): decoding JSON builds Python objects
  many times the size of the text (small objects in a long array cost the most), so this is what
  bounds the memory one answer can take. A larger one fails its request with ``MCPError`` (kind
  ``protocol``, ``too_large``) as soon as the limit is passed, before it is decoded; miniagent
  keeps at most ``max_result_chars`` of a result anyway.
- ``encode(message)``: compact UTF-8 JSON without a newline inside (JSON escapes newlines), NaN
  and Infinity refused; a lone surrogate becomes U+FFFD.
- A ``Transport`` sends one request and returns its response (matched by ``id``); every other
  message that arrives meanwhile goes to the handler, whose reply (for a server's request) is
  sent back. It raises ``Interrupted`` when the caller's cancel event was set or the deadline
  passed, and ``MCPError`` (kinds ``closed``/``protocol``) when the connection failed.
- ``outline(text)`` tells what a message too deep to decode is (its ``id``, whether it holds a
  ``result``) without decoding what is nested: linear time, no recursion.
- A ``Deadline`` is read again at every wait, so a progress notification that resets it
  (``Deadline.reset``) extends the wait of the request it belongs to.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ._errors import MCPError

if TYPE_CHECKING:
    import threading

__all__ = [
    "MAX_MESSAGE_BYTES",
    "Deadline",
    "Message",
    "Handler",
    "Transport",
    "Interrupted",
    "check_message_limit",
    "encode",
    "is_response",
    "outline",
    "too_large",
]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Default most bytes of one message read from an MCP server (module docstring)."""

Message = dict[str, Any]
Handler = Callable[[Message], "Message | None"]

_SPACE = re.compile(r"[ \t\n\r]*")
_NESTING = re.compile(r'["\[\]{}]')
_scalar = json.JSONDecoder().raw_decode


class Interrupted(Exception):
    """Internal: a request stopped waiting; ``reason`` is ``"cancelled"`` or ``"timeout"``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Deadline:
    """When a request stops waiting: ``seconds`` from its start, or never (``seconds is None``).

    Attributes:
        seconds: the timeout in seconds, or ``None``.
        at: the ``time.monotonic()`` value it ends at, or ``None``.
    """

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float | None) -> None:
        """Start the clock now."""
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def reset(self) -> None:
        """Start the clock again (``seconds`` from now): the server reported progress."""
        if self.seconds is not None:
            self.at = time.monotonic() + self.seconds

    def left(self) -> float | None:
        """Seconds left (``None``: no limit).

        Raises:
            Interrupted: ``"timeout"`` when none are left.
        """
        if self.at is None:
            return None
        left = self.at - time.monotonic()
        if left <= 0:
            raise Interrupted("timeout")
        return left

    def passed(self, slack: float = 0.0) -> bool:
        """Whether the deadline passed (within ``slack`` seconds)."""
        return self.at is not None and time.monotonic() >= self.at - slack


def check_message_limit(limit: int) -> int:
    """``limit`` when it is a usable ``max_message_bytes`` (an int of at least 1024).

    Raises:
        ValueError: it is not.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1024:
        raise ValueError(f"max_message_bytes must be an int of at least 1024, got {limit!r}")
    return limit


def too_large(server: str, limit: int, what: str = "a message", then: str = "not read") -> MCPError:
    """The error of a message over ``limit`` bytes from ``server`` (kind ``protocol``); ``what``
    names the message, ``then`` what became of it."""
    size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
    return MCPError(
        f"MCP server {server!r} sent {what} larger than {size} (max_message_bytes): {then}",
        server=server,
        kind="protocol",
    )


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON bytes (no trailing newline).

    Raises:
        ValueError: the message holds NaN or Infinity (not JSON).
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "replace")


def outline(text: str) -> Message | None:
    """The members of the JSON object ``text``, each array or object value replaced by ``None``
    unread (scalars decoded), so a message nested too deeply to decode can still be told by its
    ``id`` and keys; ``None`` when ``text`` is not one JSON object. Linear time, no recursion."""
    try:
        return _outline(text)
    except (ValueError, IndexError):  # cut off or not JSON
        return None


def _outline(text: str) -> Message | None:
    members: Message = {}
    at = _skip(text, 0)
    if text[at] != "{":
        return None
    at = _skip(text, at + 1)
    if text[at] == "}":
        return _whole(text, at, members)
    while True:
        if text[at] != '"':
            return None
        key, at = _scalar(text, at)
        at = _skip(text, at)
        if text[at] != ":":
            return None
        at = _skip(text, at + 1)
        if text[at] in "[{":
            members[key], at = None, _past_nested(text, at)
        else:
            members[key], at = _scalar(text, at)
        at = _skip(text, at)
        if text[at] == "}":
            return _whole(text, at, members)
        if text[at] != ",":
            return None
        at = _skip(text, at + 1)


def _whole(text: str, end: int, members: Message) -> Message | None:
    """``members`` when nothing but whitespace follows the object's end at ``end``."""
    return members if _skip(text, end + 1) == len(text) else None


def _skip(text: str, at: int) -> int:
    """``at`` moved past JSON whitespace."""
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _past_nested(text: str, at: int) -> int:
    """Where the array or object that starts at ``at`` ends (strings skipped whole)."""
    depth = 0
    while True:
        found = _NESTING.search(text, at)
        if found is None:
            raise ValueError("an array or object that does not end")
        char = found.group()
        if char == '"':
            at = _scalar(text, found.start())[1]  # the string, escapes and all
            continue
        at = found.end()
        if char in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at


def is_response(message: Message) -> bool:
    """Whether ``message`` is a response (an ``id`` and a ``result`` or ``error``, no method)."""
    return "method" not in message and ("result" in message or "error" in message)


class Transport(Protocol):
    """How a connection reaches its server (stdio pipes or streamable HTTP)."""

    def request(
        self,
        message: Message,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        """Send ``message`` (a request) and return the response with its ``id``.

        Args:
            message: the request.
            handler: called with every other message from the server; a returned message is sent
                back (the answer to a server's request).
            cancel: stop waiting when set (``Interrupted("cancelled")``).
            deadline: when ``Interrupted("timeout")`` is raised (read again at every wait).

        Raises:
            Interrupted: cancelled or timed out (the request may still be running).
            MCPError: the connection failed (``closed``) or the server broke the protocol.
        """
        ...

    def notify(self, message: Message) -> None:
        """Send a notification; failures are logged, never raised."""
        ...

    def poll(self, handler: Handler) -> None:
        """Handle what the server sent while no request waited (without waiting for more)."""
        ...

    def listen(self, handler: Handler) -> None:
        """The session is initialized: start listening for the server's own messages where
        the transport has a channel for them (HTTP's standalone GET stream)."""
        ...

    def set_protocol_version(self, version: str) -> None:
        """The version the server agreed to (HTTP sends it in a header on later requests)."""
        ...

    def alive(self) -> bool:
        """Whether requests can still be sent (the process runs, the session was not closed)."""
        ...

    def diagnostics(self) -> str:
        """Text to add to an error message (e.g. the server's last stderr lines), or ``""``."""
        ...

    def close(self) -> None:
        """End the connection and release its resources. Idempotent; never raises."""
        ...
