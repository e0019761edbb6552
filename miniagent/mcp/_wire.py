"""JSON-RPC 2.0 messages as MCP uses them, and what a transport promises.

- A message is a JSON object (a batch, a JSON array, is accepted on input and handled item by
  item; this client never sends one).
- ``encode(message)``: compact UTF-8 JSON without a newline inside (JSON escapes newlines), NaN
  and Infinity refused; a lone surrogate becomes U+FFFD.
- A ``Transport`` sends one request and returns its response (matched by ``id``); every other
  message that arrives meanwhile goes to the handler, whose reply (for a server's request) is
  sent back. It raises ``Interrupted`` when the caller's cancel event was set or the deadline
  passed, and ``MCPError`` (kinds ``closed``/``protocol``) when the connection failed.
- A ``Deadline`` is read again at every wait, so a progress notification that resets it
  (``Deadline.reset``) extends the wait of the request it belongs to.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import threading

__all__ = ["Message", "Handler", "Transport", "Interrupted", "Deadline", "encode", "is_response"]

Message = dict[str, Any]
Handler = Callable[[Message], "Message | None"]


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


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON bytes (no trailing newline).

    Raises:
        ValueError: the message holds NaN or Infinity (not JSON).
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "replace")


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
