"""HTTP transport shared by the providers: POST, retry, read the event stream, cancel.

Layering: ``_client`` builds a ``Transport`` from one ``HTTPSettings`` (``_config``); the
transport uses ``net.connection`` (the only module touching urllib3 internals) to open a response and
``net.watcher`` to make every phase of it cancellable.

- One ``requests.Session`` per client (``new_session``): keep-alive between turns.
- ``Transport.stream`` POSTs a JSON body, retries per ``RetryPolicy`` until the first model
  event has been yielded, and feeds the body bytes (``urllib3`` ``read1``: whatever has arrived,
  no 8 KB buffering) to the stream's decoder (the SSE decoder, or another framing such as
  ``net.eventstream``) and the provider's mapper. A request that must be signed over its exact
  bytes (AWS SigV4) gets its signing headers per attempt (``sign``).
- Cancel: a ``SocketWatcher`` per stream waits on ``request.cancel`` and shuts the stream's
  socket down; the connection hands it each socket before connecting, so connect, proxy tunnel,
  send, waiting for headers and reading all return at once. The stream then ends quietly: the
  loop sees the cancel itself.
- Keep-alive: when the mapper finished normally, the rest of the body (normally just the
  chunked terminator) is read within ``DRAIN_TIMEOUT`` and ``DRAIN_LIMIT``; a body that ended
  gives its connection back to the pool for the next request of the same client, anything else
  closes it. A connection is detached from its watcher (under the watcher's lock) before it
  enters the pool, so a late cancel can never shut down a socket another stream now uses; a
  connection whose watcher already fired is closed instead of pooled.
- A request that fails on a reused pooled connection before any byte of the answer (the server
  closed the idle connection meanwhile) is sent again at once on a new connection, once,
  without counting as a retry.
- Redirects are never followed: a 3xx answer is an HTTP error like any other.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any, Protocol

from urllib3 import BaseHTTPResponse
from urllib3.util import Timeout

from .._log import Logger
from .._text import utf8
from ..errors import ProviderError
from ..model import ModelEvent
from ..net.connection import (
    READ_ERRORS,
    READ_SIZE,
    OpenFailed,
    new_session,
    open_response,
    release,
    response_socket,
)
from ..net.failures import connection_failure, exception_chain, host_port, is_stale, root_cause
from ..net.sse import SSEDecoder
from ..net.urls import display_url
from ..net.watcher import SocketWatcher
from ._config import HTTPSettings, withheld_key_hint
from ._errors import error_details, redact, truncate
from ._retry import retry_after_seconds

__all__ = ["Decoder", "Mapper", "Signer", "StatusError", "Transport"]

Mapper = Callable[[Iterator[Any]], Iterator[ModelEvent]]
"""A provider's stream mapping: decoded events (``SSEEvent``s by default) in, model events out
(raises ``ProviderError``)."""

Signer = Callable[[bytes], Mapping[str, str]]
"""Headers that sign one request body (its exact bytes), made anew for each attempt."""


class Decoder(Protocol):
    """An incremental framing of a response body, such as ``SSEDecoder``."""

    def feed(self, data: bytes) -> Iterable[Any]:
        """The events that ``data`` completed (raises ``ProviderError`` on a broken frame)."""
        ...

    def close(self) -> Iterable[Any]:
        """The events still held at the end of the body."""
        ...

ERROR_BODY_LIMIT = 65536
"""Most bytes of an error response body read to find the provider's message."""

_log = Logger("miniagent.providers")  # HTTP statuses and retries
_NOT_SSE = ("text/html", "application/json", "application/xml", "text/xml")


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


class Transport:
    """POST a JSON body and stream model events back, with retries and cancel.

    Args:
        provider: display name used in error texts (``"OpenAI"``, ``"Anthropic"``,
            ``"local model"``).
        settings: timeouts and retry policy (``HTTPSettings``; its ``headers`` and
            ``extra_body`` are applied by the client, which builds the request).
        secrets: strings (the API key) that must never appear in an error text.
        withheld_key: the environment variable whose key was held back from this local server
            (``_config.withheld_key``), or ``None``; an HTTP 401, 403 or 500 then says so.

    Attributes:
        session: the client's own ``requests.Session`` (``close()`` it to drop the pooled
            connections).
    """

    def __init__(
        self,
        provider: str,
        settings: HTTPSettings,
        secrets: tuple[str, ...] = (),
        *,
        withheld_key: str | None = None,
    ) -> None:
        """Store the settings and create the session; nothing is sent yet."""
        self.provider = provider
        self.withheld_key = withheld_key
        self.settings = settings
        self.secrets = secrets
        self.session = new_session()
        self._timeout = Timeout(connect=settings.connect_timeout, read=settings.read_timeout)

    def close(self) -> None:
        """Close the pooled connections; the transport is unusable afterwards."""
        self.session.close()

    def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        cancel: threading.Event | None,
        mapper: Mapper,
        *,
        decoder: Callable[[], Decoder] = SSEDecoder,
        sign: Signer | None = None,
    ) -> Iterator[ModelEvent]:
        """POST ``body`` as JSON to ``url`` and yield the model events ``mapper`` makes of it.

        Args:
            url: the endpoint.
            headers: request headers (auth included; they never reach an error text).
            body: the JSON request body.
            cancel: the run's cancel event, or ``None``.
            mapper: turns the decoded events of one response into model events.
            decoder: makes the framing of one response body (default ``SSEDecoder``).
            sign: the signing headers of the body's bytes, added to ``headers`` for each
                attempt (they never reach an error text either).

        Returns:
            A generator of model events. It ends quietly (possibly with no events) when
            ``cancel`` is set. When the mapper finished normally, the connection goes back to
            the session's pool for the next request (keep-alive; the rest of the body is read
            for at most ``DRAIN_TIMEOUT`` seconds and ``DRAIN_LIMIT`` bytes, else it is closed);
            on an error, a cancel or an early ``close()`` the connection is closed.

        Raises:
            ProviderError: HTTP error status (after retries for retryable ones); connection
                error, retryable, one line naming ``host:port`` and the cause, e.g.
                ``"OpenAI: cannot connect to 127.0.0.1:9 (connection refused)"`` (also ``name
                not resolved``, ``timed out after 10 s``, ``TLS error: ...``, ``TLS certificate
                not accepted: ...``) or ``"OpenAI: no answer from HOST:PORT (no data for 600
                s)"``; a body that is not an event stream; a broken or cut stream
                (``"OpenAI stream broken: CAUSE (HOST:PORT)"``); an error event in the stream; a
                response longer than ``stream_timeout`` (kind ``"stream_timeout"``, not retried).
                Nothing is retried once an event has been yielded. An error raised after
                retries ends with ``(after N retries)`` (``(after 1 retry)``).
        """
        # A lone surrogate in the history (a file name decoded with surrogateescape, a
        # "\ud800" escape from a model) has no UTF-8 form: U+FFFD is sent in its place.
        payload = utf8(json.dumps(body, ensure_ascii=False))
        attempt = 0
        while True:
            if cancel is not None and cancel.is_set():
                return
            yielded = False
            try:
                sent = {**headers, **sign(payload)} if sign is not None else headers
                attempt_events = self._attempt(url, sent, payload, cancel, mapper, decoder)
                with contextlib.closing(attempt_events) as events:
                    for event in events:
                        yielded = True
                        yield event
                return
            except _Cancelled:
                return
            except ProviderError as err:
                if cancel is not None and cancel.is_set():
                    return
                if yielded or not err.retryable or attempt >= self.settings.retry.max_retries:
                    if attempt and not yielded:
                        # Same exception (type, status, kind), its text saying it was retried.
                        err.args = (f"{err} (after {attempt} {'retry' if attempt == 1 else 'retries'})",)
                    raise
                retry_after = err.retry_after if isinstance(err, StatusError) else None
                delay = self.settings.retry.delay(attempt, retry_after)
                _log.warning("%s: retry %d in %.1f s: %s", self.provider, attempt + 1, delay, err)
            attempt += 1
            if self.settings.retry.wait(cancel, delay):
                return

    def _attempt(
        self,
        url: str,
        headers: Mapping[str, str],
        payload: bytes,
        cancel: threading.Event | None,
        mapper: Mapper,
        decoder: Callable[[], Decoder] = SSEDecoder,
    ) -> Generator[ModelEvent, None, None]:
        """One request: open, check status and content type, map the body.

        When the mapper ends normally the rest of the body is read (bounded) and the connection
        goes back to the pool; on an error, a cancel or a consumer that stops early it is closed.
        """
        limit = self.settings.stream_timeout
        deadline = None if limit is None else time.monotonic() + limit
        watcher = SocketWatcher(cancel) if cancel is not None else None
        response: BaseHTTPResponse | None = None
        finished = False
        try:
            response = self._post(url, headers, payload, cancel, watcher)
            if watcher is not None:
                watcher.attach(response_socket(response))
            _log.debug("%s: HTTP %d from %s", self.provider, response.status, host_port(url))
            if not 200 <= response.status < 300:
                raise self._status_error(response, cancel)
            self._check_content_type(response, cancel)
            yield from mapper(self._sse_events(response, cancel, deadline, host_port(url), decoder()))
            finished = True
        finally:
            intact = watcher.stop() if watcher is not None else True
            if response is not None:
                if finished and intact and not (cancel is not None and cancel.is_set()):
                    release(response)
                response.close()

    def _post(
        self,
        url: str,
        headers: Mapping[str, str],
        payload: bytes,
        cancel: threading.Event | None,
        watcher: SocketWatcher | None,
    ) -> BaseHTTPResponse:
        """Send the request; once more at once when a reused connection turned out dead."""
        fresh_retry = False
        while True:
            try:
                return open_response(self.session, url, headers, payload, self._timeout, watcher)
            except OpenFailed as failed:
                if cancel is not None and cancel.is_set():
                    raise _Cancelled from None
                if not fresh_retry and failed.reused and is_stale(failed.cause):
                    fresh_retry = True  # the server closed the idle connection: not a failure
                    continue
                if isinstance(failed.cause, ValueError):  # URL or proxy URL that cannot be parsed
                    text = f"{self.provider}: the request URL cannot be used ({type(failed.cause).__name__})"
                    raise ProviderError(text, kind="invalid_url") from None
                text = self._connection_error(url, failed.cause, failed.via_proxy)
                raise ProviderError(text, retryable=True) from None

    def _connection_error(self, url: str, exc: BaseException, via_proxy: bool = False) -> str:
        """One line naming ``host:port`` and the root cause of a failed request (redacted)."""
        text = connection_failure(
            self.provider,
            url,
            exc,
            connect_timeout=self.settings.connect_timeout,
            read_timeout=self.settings.read_timeout,
            via_proxy=via_proxy,
        )
        return truncate(redact(text, self.secrets), 300)

    def _read_limited(self, response: BaseHTTPResponse, cancel: threading.Event | None) -> bytes:
        try:
            data = response.read(ERROR_BODY_LIMIT, decode_content=True)
        except READ_ERRORS as exc:
            if cancel is not None and cancel.is_set():
                raise _Cancelled from None
            return f"(body unreadable: {type(exc).__name__})".encode()
        return data if isinstance(data, bytes) else b""

    def _status_error(self, response: BaseHTTPResponse, cancel: threading.Event | None) -> StatusError:
        status = response.status
        if 300 <= status < 400:
            return self._redirect_error(response)
        message, kind = error_details(self._read_limited(response, cancel), self.secrets)
        message = redact(message, self.secrets)
        label = f" ({kind})" if kind else ""
        if self.withheld_key is not None and status in (401, 403, 500):
            message += withheld_key_hint(self.withheld_key)
        return StatusError(
            f"{self.provider} HTTP {status}{label}: {message}",
            status=status,
            retryable=self.settings.retry.status_is_retryable(status, response.headers, kind),
            kind=kind,
            retry_after=retry_after_seconds(response.headers),
        )

    def _redirect_error(self, response: BaseHTTPResponse) -> StatusError:
        """A 3xx answer: never followed (the request carries the key), so say where it pointed."""
        location = response.headers.get("location")
        where = f" to {display_url(location)}" if location else ""
        text = (
            f"{self.provider} HTTP {response.status}: the server redirects{where}; redirects are not "
            "followed (the request carries the API key): set base_url to the final address"
        )
        return StatusError(
            truncate(redact(text, self.secrets), 400),
            status=response.status,
            retryable=False,
            kind="redirect",
            retry_after=None,
        )

    def _check_content_type(self, response: BaseHTTPResponse, cancel: threading.Event | None) -> None:
        """Refuse a 2xx body that is clearly not an event stream (HTML page, JSON document)."""
        media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        if media in _NOT_SSE or media.endswith("+json") or media.endswith("+xml"):
            message, _kind = error_details(self._read_limited(response, cancel), self.secrets)
            raise ProviderError(
                f"{self.provider} answered HTTP {response.status} with {media} instead of "
                f"an event stream (text/event-stream): {redact(message, self.secrets)}",
                status=response.status,
            )

    def _sse_events(
        self,
        response: BaseHTTPResponse,
        cancel: threading.Event | None,
        deadline: float | None,
        where: str,
        decoder: Decoder | None = None,
    ) -> Iterator[Any]:
        """Decode the body as it arrives (``decoder``, default an ``SSEDecoder``); raise
        ``_Cancelled`` when cancelled, ``ProviderError`` past ``deadline`` (``time.monotonic()``)
        or when the connection to ``where`` breaks."""
        decoder = decoder if decoder is not None else SSEDecoder()
        read1 = response.read1
        while True:
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            try:
                chunk = read1(READ_SIZE, decode_content=True)
            except READ_ERRORS as exc:
                if cancel is not None and cancel.is_set():
                    raise _Cancelled from None
                cause = root_cause(
                    exception_chain(exc), self.settings.connect_timeout, self.settings.read_timeout
                )
                text = f"{self.provider} stream broken: {cause} ({where})"
                raise ProviderError(truncate(redact(text, self.secrets), 300), retryable=True) from None
            if not chunk:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise ProviderError(
                    f"{self.provider} stream did not finish within {self.settings.stream_timeout:g} s "
                    f"(stream_timeout)",
                    kind="stream_timeout",
                )
            try:
                events = decoder.feed(chunk)
            except ProviderError as err:  # a frame past the reader's cap, or broken in transit
                raise self._framing_error(err) from None
            yield from events
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        try:
            last = decoder.close()
        except ProviderError as err:  # the body ended inside a frame
            raise self._framing_error(err) from None
        yield from last

    def _framing_error(self, err: ProviderError) -> ProviderError:
        """The decoder's error with this provider's name in front (kind and retryable kept)."""
        return ProviderError(f"{self.provider}: {err}", kind=err.kind, retryable=err.retryable)
