"""The standalone GET stream of a streamable HTTP session (MCP spec 2025-11-25, "Listening for
Messages from the Server"), read by one daemon thread.

Invariants:

- Opened once, after ``initialize``, in the caller's thread (at most ``OPEN_SECONDS`` for the
  answer's headers), so the stream exists before the next request and a server that routes its
  own requests to it never races the client; a server that does not offer it (405, any status
  but 200 with ``text/event-stream``) is not asked again. A first attempt that fails to connect
  is left to the thread, which tries again.
- Every event is handed to the transport's ``deliver`` in this thread: the server's requests
  are answered at once (over a ``requests`` session of this thread's own), its notifications
  handled, a response passed to the request that waits for it.
- A stream that ends is opened again after the server's ``retry`` (or
  ``DEFAULT_RETRY_SECONDS``, never less than ``MIN_RETRY_SECONDS``) with ``Last-Event-ID``;
  after ``MAX_FAILURES`` attempts in a row that fail to connect or end without a message the
  thread gives up.
- ``stop()`` sets the stop event, whose socket watcher shuts the stream's socket down, and
  waits for the thread (at most ``STOP_SECONDS``). Nothing here raises into the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Protocol

from .._log import Logger
from ._wire import Handler

__all__ = [
    "Listener",
    "DEFAULT_RETRY_SECONDS",
    "MIN_RETRY_SECONDS",
    "MAX_FAILURES",
    "OPEN_SECONDS",
    "STOP_SECONDS",
]

OPEN_SECONDS = 3.0
DEFAULT_RETRY_SECONDS = 1.0
MIN_RETRY_SECONDS = 0.25
MAX_FAILURES = 5
STOP_SECONDS = 1.0

logger = Logger("miniagent.mcp")


class _Stream(Protocol):
    response: Any

    def close(self) -> None: ...


class _Source(Protocol):
    """What the listener needs of the HTTP transport."""

    def open_get(
        self, http: Any, last_event_id: str | None, stop: threading.Event, seconds: float | None
    ) -> _Stream | None: ...

    def events(self, response: Any, stop: threading.Event) -> Iterator[Any]: ...

    def deliver(self, data: str, handler: Handler, http: Any, stop: threading.Event) -> None: ...


class Listener:
    """The daemon thread that reads one session's standalone GET stream (module docstring).

    Args:
        source: the transport (``_http.HTTPTransport``).
        handler: the session's handler of the server's messages.
        name: the server's name (thread name, log lines).
    """

    def __init__(self, source: _Source, handler: Handler, name: str) -> None:
        """Prepare the thread; ``start()`` starts it."""
        self.source = source
        self.handler = handler
        self.name = name
        self._stop = threading.Event()
        self._offered = threading.Event()  # the server answered with a stream at least once
        self._thread = threading.Thread(target=self._run, name=f"miniagent-mcp-listen-{name}", daemon=True)
        self._first: _Stream | None = None
        self.http: Any = None

    def start(self) -> None:
        """Open the stream (module docstring) and start the thread that reads it; nothing when
        the server offers none."""
        from ..net.connection import new_session

        self.http = new_session()
        try:
            self._first = self.source.open_get(self.http, None, self._stop, OPEN_SECONDS)
        except Exception as exc:  # not connected in time: the thread tries again
            logger.debug("[%s] the standalone stream did not open yet: %s", self.name, type(exc).__name__)
        else:
            if self._first is None:
                self.http.close()
                return
            self._offered.set()
        self._thread.start()

    def running(self) -> bool:
        """Whether the server offered the stream and the thread still reads it (or opens it
        again): a response may come that way."""
        return self._offered.is_set() and self._thread.is_alive() and not self._stop.is_set()

    def stop(self) -> None:
        """Stop reading and wait for the thread (at most ``STOP_SECONDS``)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(STOP_SECONDS)

    def _run(self) -> None:
        http = self.http
        try:
            self._read(http)
        except Exception as exc:  # never into the caller: the stream is a bonus
            logger.debug("[%s] the standalone stream stopped: %s", self.name, type(exc).__name__)
        finally:
            http.close()

    def _read(self, http: Any) -> None:
        last_id: str | None = None
        retry = DEFAULT_RETRY_SECONDS
        failures = 0
        while not self._stop.is_set():
            stream, self._first = self._first, None
            try:
                if stream is None:
                    stream = self.source.open_get(http, last_id, self._stop, None)
            except Exception as exc:
                failures += 1
                logger.debug("[%s] the standalone stream did not open: %s", self.name, exc)
                if failures >= MAX_FAILURES or self._stop.wait(retry):
                    return
                continue
            if stream is None:
                return
            self._offered.set()
            failures += 1  # until the stream carries a message: one that ends without counts
            try:
                for event in self.source.events(stream.response, self._stop):
                    failures = 0 if event.data.strip() else failures
                    last_id = event.id if event.id is not None else last_id
                    if event.retry is not None:
                        retry = max(event.retry / 1000, MIN_RETRY_SECONDS)
                    if event.data.strip():
                        self.source.deliver(event.data, self.handler, http, self._stop)
            except Exception as exc:
                logger.debug("[%s] the standalone stream broke: %s", self.name, exc)
            finally:
                stream.close()
            if failures >= MAX_FAILURES or self._stop.wait(retry):
                return
