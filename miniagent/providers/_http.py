"""HTTP transport shared by the providers: POST, retry, read the event stream, cancel.

- One ``requests.Session`` per client. Its adapters use urllib3 connections that report their
  socket to the stream that uses them, so a cancel can shut the socket down even while
  ``requests`` still waits for the response headers.
- ``Transport.stream`` POSTs a JSON body, retries per ``RetryPolicy`` until the first model
  event has been yielded, and feeds the body bytes (``urllib3`` ``read1``: whatever has arrived,
  no 8 KB buffering) to the SSE decoder and the provider's mapper.
- Cancel: a small watcher thread per stream waits on ``request.cancel`` and then calls
  ``shutdown(SHUT_RDWR)`` on the socket. A blocked read then returns at once (closing the
  response from another thread would not unblock it, and a socket timeout would leave the
  socket unusable). The stream then ends quietly: the loop sees the cancel itself.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as Urllib3HTTPError

from ..errors import ProviderError
from ..model import ModelEvent
from ._errors import error_details, redact, truncate
from ._retry import RetryPolicy, retry_after_seconds
from .sse import SSEDecoder, SSEEvent

__all__ = ["Mapper", "StatusError", "Transport", "new_session"]

Mapper = Callable[[Iterator[SSEEvent]], Iterator[ModelEvent]]
"""A provider's stream mapping: SSE events in, model events out (raises ``ProviderError``)."""

READ_SIZE = 65536
"""Most bytes taken from the socket per read (a read returns as soon as any data arrived)."""

ERROR_BODY_LIMIT = 65536
"""Most bytes of an error response body read to find the provider's message."""

_WATCH_POLL = 0.1  # seconds between checks whether the watched stream has ended
_NOT_SSE = ("text/html", "application/json", "application/xml", "text/xml")

_SURROGATE = re.compile("[\ud800-\udfff]")
_READ_ERRORS = (Urllib3HTTPError, http.client.HTTPException, OSError, ValueError)
_tls = threading.local()  # .watcher: the SocketWatcher of the stream this thread is opening


class StatusError(ProviderError):
    """A ``ProviderError`` for an HTTP error status; ``retry_after`` is the server's delay (s)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retryable: bool,
        kind: str | None,
        retry_after: float | None,
    ) -> None:
        """Same arguments as ``ProviderError`` plus ``retry_after`` (seconds or ``None``)."""
        super().__init__(message, status=status, retryable=retryable, kind=kind)
        self.retry_after = retry_after


class _Cancelled(Exception):
    """Internal: the cancel event was seen while reading; the stream ends quietly."""


def _shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down both ways (the plain-socket call, also for TLS sockets); never raises."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class SocketWatcher:
    """Shuts the stream's socket down when the cancel event is set, until ``stop()``.

    Args:
        cancel: the run's cancel event.

    The thread polls ``cancel.wait(0.1)`` only to notice ``stop()``; a cancel is seen at once.
    """

    def __init__(self, cancel: threading.Event) -> None:
        """Start the watcher thread (daemon)."""
        self._cancel = cancel
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._fired = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="miniagent-cancel", daemon=True)
        self._thread.start()

    def attach(self, sock: socket.socket | None) -> None:
        """Watch ``sock`` (the stream's connection); shut it at once if cancel already fired."""
        if sock is None:
            return
        with self._lock:
            if self._stopped:
                return
            self._sock = sock
            fired = self._fired
        if fired:
            _shutdown(sock)

    def stop(self) -> None:
        """Stop watching; the socket is never touched afterwards (it may be reused)."""
        with self._lock:
            self._stopped = True
            self._sock = None

    def _run(self) -> None:
        while True:
            if self._cancel.wait(_WATCH_POLL):
                with self._lock:
                    if self._stopped:
                        return
                    self._fired = True
                    sock = self._sock
                if sock is not None:
                    _shutdown(sock)
                return
            with self._lock:
                if self._stopped:
                    return


def _report_socket(conn: HTTPConnection) -> None:
    watcher = getattr(_tls, "watcher", None)
    if watcher is not None:
        watcher.attach(conn.sock)


class _TrackedHTTPConnection(HTTPConnection):
    """An urllib3 connection that reports its socket to the stream opening it (thread-local)."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        """``HTTPConnection.request``; the socket is reported before and after sending."""
        _report_socket(self)
        super().request(*args, **kwargs)
        _report_socket(self)


class _TrackedHTTPSConnection(HTTPSConnection):
    """The TLS variant of ``_TrackedHTTPConnection``."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        """``HTTPSConnection.request``; the socket is reported before and after sending."""
        _report_socket(self)
        super().request(*args, **kwargs)
        _report_socket(self)


class _TrackedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


class _TrackingAdapter(HTTPAdapter):
    """A ``requests`` adapter whose pools use the socket-reporting connections."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Create the pool manager, then swap in the tracked pool classes."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _TrackedHTTPPool,
            "https": _TrackedHTTPSPool,
        }


def new_session() -> requests.Session:
    """A ``requests.Session`` whose connections can be shut down by a cancel watcher."""
    session = requests.Session()
    session.mount("http://", _TrackingAdapter())
    session.mount("https://", _TrackingAdapter())
    return session


def _response_socket(response: requests.Response) -> socket.socket | None:
    """The socket under a streamed response (urllib3 2.x internals, guarded)."""
    raw: Any = response.raw
    for path in (("_connection", "sock"), ("_fp", "fp", "raw", "_sock")):
        obj = raw
        for name in path:
            obj = getattr(obj, name, None)
        if isinstance(obj, socket.socket):
            return obj
    return None


class Transport:
    """POST a JSON body and stream model events back, with retries and cancel.

    Args:
        provider: display name used in error texts (``"OpenAI"``, ``"Anthropic"``).
        session: the ``requests.Session`` (from ``new_session``).
        timeout: read timeout in seconds: the longest silence tolerated between two reads.
        connect_timeout: TCP/TLS connect timeout in seconds.
        retry: the retry policy.
        secrets: strings (the API key) that must never appear in an error text.
        stream_timeout: most seconds one response may take from the request to its end, or
            ``None`` (no limit). Checked after every read, so a silent server is still bounded by
            ``timeout`` alone: the limit can be exceeded by up to one read timeout.
    """

    def __init__(
        self,
        provider: str,
        session: requests.Session,
        *,
        timeout: float,
        connect_timeout: float,
        retry: RetryPolicy,
        secrets: tuple[str, ...] = (),
        stream_timeout: float | None = None,
    ) -> None:
        """Store the settings; nothing is sent yet."""
        self.provider = provider
        self.session = session
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retry = retry
        self.secrets = secrets
        self.stream_timeout = stream_timeout

    def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        cancel: threading.Event | None,
        mapper: Mapper,
    ) -> Iterator[ModelEvent]:
        """POST ``body`` as JSON to ``url`` and yield the model events ``mapper`` makes of it.

        Args:
            url: the endpoint.
            headers: request headers (auth included; they never reach an error text).
            body: the JSON request body.
            cancel: the run's cancel event, or ``None``.
            mapper: turns the SSE events of one response into model events.

        Returns:
            A generator of model events. It ends quietly (possibly with no events) when
            ``cancel`` is set; it closes its response when it ends or is closed.

        Raises:
            ProviderError: HTTP error status (after retries for retryable ones), connection
                error, a body that is not an event stream, a broken or cut stream, an error event
                in the stream, a response longer than ``stream_timeout`` (kind
                ``"stream_timeout"``, not retried). Nothing is retried once an event has been
                yielded.
        """
        text = json.dumps(body, ensure_ascii=False)
        try:
            payload = text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate in the history (a file name decoded with surrogateescape, a
            # "\ud800" escape from a model) has no UTF-8 form: send U+FFFD in its place.
            payload = _SURROGATE.sub("\ufffd", text).encode("utf-8")
        attempt = 0
        while True:
            if cancel is not None and cancel.is_set():
                return
            yielded = False
            try:
                with contextlib.closing(self._attempt(url, headers, payload, cancel, mapper)) as events:
                    for event in events:
                        yielded = True
                        yield event
                return
            except _Cancelled:
                return
            except ProviderError as err:
                if cancel is not None and cancel.is_set():
                    return
                if yielded or not err.retryable or attempt >= self.retry.max_retries:
                    raise
                retry_after = err.retry_after if isinstance(err, StatusError) else None
                delay = self.retry.delay(attempt, retry_after)
            attempt += 1
            if self.retry.wait(cancel, delay):
                return

    def _attempt(
        self,
        url: str,
        headers: Mapping[str, str],
        payload: bytes,
        cancel: threading.Event | None,
        mapper: Mapper,
    ) -> Generator[ModelEvent, None, None]:
        """One request: open, check status and content type, map the body."""
        deadline = None if self.stream_timeout is None else time.monotonic() + self.stream_timeout
        watcher = SocketWatcher(cancel) if cancel is not None else None
        response: requests.Response | None = None
        try:
            response = self._post(url, headers, payload, cancel, watcher)
            if watcher is not None:
                watcher.attach(_response_socket(response))
            if not 200 <= response.status_code < 300:
                raise self._status_error(response, cancel)
            self._check_content_type(response, cancel)
            yield from mapper(self._sse_events(response, cancel, deadline))
        finally:
            if watcher is not None:
                watcher.stop()
            if response is not None:
                response.close()

    def _post(
        self,
        url: str,
        headers: Mapping[str, str],
        payload: bytes,
        cancel: threading.Event | None,
        watcher: SocketWatcher | None,
    ) -> requests.Response:
        _tls.watcher = watcher
        try:
            return self.session.post(
                url,
                data=payload,
                headers=dict(headers),
                stream=True,
                timeout=(self.connect_timeout, self.timeout),
            )
        except requests.RequestException as exc:
            if cancel is not None and cancel.is_set():
                raise _Cancelled from None
            raise ProviderError(
                f"{self.provider} connection error: {self._describe(exc)}", retryable=True
            ) from None
        finally:
            _tls.watcher = None

    def _describe(self, exc: BaseException) -> str:
        """Type and text of an exception, redacted and truncated."""
        return truncate(redact(f"{type(exc).__name__}: {exc}", self.secrets), 300)

    def _read_limited(self, response: requests.Response, cancel: threading.Event | None) -> bytes:
        try:
            data = response.raw.read(ERROR_BODY_LIMIT, decode_content=True)
        except _READ_ERRORS as exc:
            if cancel is not None and cancel.is_set():
                raise _Cancelled from None
            return f"(body unreadable: {type(exc).__name__})".encode()
        return data if isinstance(data, bytes) else b""

    def _status_error(self, response: requests.Response, cancel: threading.Event | None) -> StatusError:
        status = response.status_code
        message, kind = error_details(self._read_limited(response, cancel), self.secrets)
        message = redact(message, self.secrets)
        label = f" ({kind})" if kind else ""
        return StatusError(
            f"{self.provider} HTTP {status}{label}: {message}",
            status=status,
            retryable=self.retry.status_is_retryable(status, response.headers),
            kind=kind,
            retry_after=retry_after_seconds(response.headers),
        )

    def _check_content_type(self, response: requests.Response, cancel: threading.Event | None) -> None:
        """Refuse a 2xx body that is clearly not an event stream (HTML page, JSON document)."""
        media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        if media in _NOT_SSE or media.endswith("+json") or media.endswith("+xml"):
            message, _kind = error_details(self._read_limited(response, cancel), self.secrets)
            raise ProviderError(
                f"{self.provider} answered HTTP {response.status_code} with {media} instead of "
                f"an event stream (text/event-stream): {redact(message, self.secrets)}",
                status=response.status_code,
            )

    def _sse_events(
        self, response: requests.Response, cancel: threading.Event | None, deadline: float | None
    ) -> Iterator[SSEEvent]:
        """Decode the body as it arrives; raise ``_Cancelled`` when cancelled, ``ProviderError``
        past ``deadline`` (``time.monotonic()``)."""
        decoder = SSEDecoder()
        read1 = response.raw.read1
        while True:
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            try:
                chunk = read1(READ_SIZE, decode_content=True)
            except _READ_ERRORS as exc:
                if cancel is not None and cancel.is_set():
                    raise _Cancelled from None
                raise ProviderError(
                    f"{self.provider} stream broken: {self._describe(exc)}", retryable=True
                ) from None
            if not chunk:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise ProviderError(
                    f"{self.provider} stream did not finish within {self.stream_timeout:g} s "
                    "(stream_timeout)",
                    kind="stream_timeout",
                )
            yield from decoder.feed(chunk)
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        yield from decoder.close()
