"""Responses that arrive on the standalone GET stream for requests waiting elsewhere.

Invariants:

- A request is ``expect``-ed from the moment it is sent until it returns (``forget``); only
  responses to such requests are kept, so a response to a request given up on is dropped.
- While a request reads its answer from a socket (``reading_from``), a response for it that
  arrives on the standalone stream shuts that socket down, so the blocked read ends and the
  request takes the response from here (``has``, ``take``, ``wait``); its connection is then not
  given back to the pool (``intact`` is false).
- Thread-safe: the listener's thread posts, the caller's thread reads.
"""

from __future__ import annotations

import threading
from typing import Any

from ..net.watcher import shutdown_socket
from ._wire import Deadline, Interrupted, Message

__all__ = ["Mailbox"]

WAIT_SECONDS = 0.02


class Mailbox:
    """The responses of one HTTP session that came on the standalone stream (module docstring)."""

    def __init__(self) -> None:
        """Start empty."""
        self._lock = threading.Condition()
        self._kept: dict[Any, Message] = {}
        self._expected: set[Any] = set()
        self._sockets: dict[Any, Any] = {}

    def expect(self, wanted: Any) -> None:
        """Request ``wanted`` was sent."""
        with self._lock:
            self._expected.add(wanted)

    def forget(self, wanted: Any) -> None:
        """Request ``wanted`` returned: drop what is kept for it."""
        with self._lock:
            self._expected.discard(wanted)
            self._kept.pop(wanted, None)
            self._sockets.pop(wanted, None)

    def reading_from(self, wanted: Any, sock: Any) -> None:
        """Request ``wanted`` reads its answer from ``sock`` now."""
        with self._lock:
            self._sockets[wanted] = sock

    def intact(self, wanted: Any) -> bool:
        """Whether the socket of ``wanted`` was left alone (not shut by ``post``)."""
        with self._lock:
            return wanted in self._sockets

    def post(self, response: Message) -> None:
        """Keep a response for its waiting request and shut the socket it reads from."""
        with self._lock:
            wanted = response.get("id")
            if wanted in self._expected:
                self._kept[wanted] = response
                self._lock.notify_all()
                sock = self._sockets.pop(wanted, None)
                if sock is not None:
                    shutdown_socket(sock)

    def has(self, wanted: Any) -> bool:
        """Whether the response of ``wanted`` is here."""
        with self._lock:
            return wanted in self._kept

    def wait(self, wanted: Any, cancel: threading.Event | None, deadline: Deadline) -> Message:
        """The response of ``wanted`` once it is here.

        Raises:
            Interrupted: cancelled or past the deadline first.
        """
        with self._lock:
            while wanted not in self._kept:
                if cancel is not None and cancel.is_set():
                    raise Interrupted("cancelled")
                left = deadline.left()
                self._lock.wait(WAIT_SECONDS if left is None else min(WAIT_SECONDS, left))
            return self._kept.pop(wanted)
