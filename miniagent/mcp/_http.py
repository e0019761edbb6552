"""The streamable HTTP transport (MCP spec 2025-11-25, "Transports / Streamable HTTP").

- Every message is one POST of JSON to the endpoint with ``Accept: application/json,
  text/event-stream``. A request's answer is either ``application/json`` (the response, or a
  batch holding it) or ``text/event-stream``: server-sent events, each one JSON-RPC message,
  decoded by the SSE reader of ``net.sse``; messages before the response (notifications, the
  server's requests) go to the handler, and replies to the server's requests are POSTed back.
- ``Mcp-Session-Id`` from the ``initialize`` answer is sent on every later request;
  ``MCP-Protocol-Version`` once the version is agreed. HTTP 404 on a request that carried a
  session id means the server ended the session: ``alive()`` turns false, ``expired`` true, and
  the server object starts a new session and sends the request again. ``close()`` sends DELETE
  (failures ignored, a redirect never followed: it would carry the headers elsewhere).
- Cancel and timeout: the request runs in the caller's thread; the socket watcher of ``net.watcher``
  shuts the socket down when the cancel event is set (also while waiting for the response
  headers), and the socket's read timeout is the time left until the deadline (checked again
  after every chunk, so keep-alive comments cannot extend it).
- An event stream that ends before the response is resumed (spec "Resumability and
  Redelivery"): after the server's ``retry`` (or ``DEFAULT_RETRY_SECONDS``) a GET with
  ``Last-Event-ID`` of its last event continues it, again until the response, the deadline or
  the cancel. A stream without event ids cannot be resumed.
- The standalone GET stream (``listen``, opened once the session is initialized) is read by a
  daemon thread (``_listen.Listener``): the server's requests and notifications that arrive
  there are handled, and a response that arrives there reaches the request waiting for it
  (also one whose POST was answered 202).
- Keep-alive: once the response was found, the rest of the body (the end of the event stream)
  is read for at most 0.2 s (``net.connection.release``) and the connection goes back to the
  pool for the next request; after a cancel, a timeout or an error it is closed.
- Replies to the server's requests are POSTed with the deadline and the cancel of the request
  whose stream carried them, so a server that never answers them cannot hold the caller.
- A JSON body or one server-sent event larger than ``max_message_bytes``
  (``_wire.MAX_MESSAGE_BYTES``), on a POST's answer or the standalone stream, fails with
  ``MCPError`` (kind ``protocol``) once that many bytes arrived, before anything is decoded; the
  connection is closed.
- A body or event that cannot be read (not JSON, nested deeper than ``miniagent._json``
  allows, over ``max_message_bytes``) is a protocol error (``MCPError``), never another exception.
- OAuth (``auth``, an ``_oauth.Authorizer``): every request carries its token; a 401, or a 403
  with ``insufficient_scope``, gets a token (refresh, login or step-up) and the same request is
  sent again, at most ``MAX_AUTHORIZATIONS`` times per request; the request's timeout starts
  again after a login (a person may take minutes).
- Header values (``Authorization``...) never appear in errors or logs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import requests
from urllib3 import BaseHTTPResponse
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.util import Timeout

from .._json import loads
from .._log import Logger
from ..net.connection import OpenFailed, new_session, open_response, release, response_socket
from ..net.failures import connection_failure
from ..net.watcher import SocketWatcher
from ._body import events, parse, protocol, read_all
from ._errors import MCPError
from ._listen import DEFAULT_RETRY_SECONDS, Listener
from ._mailbox import Mailbox
from ._oauth import MAX_AUTHORIZATIONS, Authorizer
from ._secrets import Secrets
from ._wire import MAX_MESSAGE_BYTES, Deadline, Handler, Interrupted, Message, encode, is_response

__all__ = ["HTTPTransport"]

CONNECT_TIMEOUT = 10.0
NOTIFY_TIMEOUT = 5.0
CLOSE_TIMEOUT = 2.0
MAX_RESUMES = 20
_ERROR_BODY_BYTES = 65536  # of an HTTP error's body: enough for its JSON-RPC error or a snippet
_SNIPPET_CHARS = 200

logger = Logger("miniagent.mcp")


class HTTPTransport:
    """A session with a streamable HTTP MCP endpoint (see the module docstring).

    Args:
        name: the server's name (in errors and logs).
        url: the endpoint.
        headers: extra request headers.
        connect_timeout: most seconds for a TCP/TLS connect.
        max_message_bytes: the largest JSON body or server-sent event read (bytes).
        secrets: the server's secrets (tokens learnt later are added to it).

    Attributes:
        expired: the server ended the session (HTTP 404 with its session id).
    """

    def __init__(
        self,
        name: str,
        url: str,
        headers: Mapping[str, str],
        connect_timeout: float = CONNECT_TIMEOUT,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        secrets: Secrets | None = None,
    ) -> None:
        """Prepare the HTTP session; nothing is sent yet."""
        self.name = name
        self.max_message_bytes = max_message_bytes
        self.secrets = secrets or Secrets()
        self.expired = False
        self.url = url
        self.extra_headers = dict(headers)
        self.connect_timeout = min(connect_timeout, CONNECT_TIMEOUT)
        self.http = new_session()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._failure: str | None = None
        self._listener: Listener | None = None
        self.auth: Authorizer | None = None
        self._mail = Mailbox()

    # --- Transport ------------------------------------------------------------------------------

    def request(
        self,
        message: Message,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        """POST ``message`` and return its response (``_wire.Transport``)."""
        self._check_usable()
        watcher = SocketWatcher(cancel) if cancel is not None else None
        response: BaseHTTPResponse | None = None
        self._mail.expect(message["id"])
        try:
            response = self._post(encode(message), cancel, deadline, watcher)
            self._mail.reading_from(message["id"], response_socket(response))
            if watcher is not None:
                watcher.attach(response_socket(response))
            if message.get("method") == "initialize":
                self.session_id = response.headers.get("mcp-session-id") or None
            answer = self._answer(message, response, handler, cancel, deadline)
            intact = self._mail.intact(message["id"])  # not shut by the mailbox
            if intact and (watcher is None or watcher.stop()):  # keep the connection
                release(response)
            return answer
        finally:
            self._mail.forget(message["id"])
            if watcher is not None:
                watcher.stop()
            if response is not None:
                response.close()

    def notify(self, message: Message) -> None:
        """POST a notification (expects 202); failures are logged, never raised."""
        if self._failure is not None:
            return
        try:
            response = self._post(encode(message), None, Deadline(NOTIFY_TIMEOUT), None)
            release(response)
            response.close()
            if response.status >= 300:
                logger.debug("[%s] %s answered HTTP %s", self.name, message.get("method"), response.status)
        except (MCPError, Interrupted, ValueError) as exc:
            logger.debug("[%s] notification %s not sent: %s", self.name, message.get("method"), exc)

    def poll(self, handler: Handler) -> None:
        """Nothing to do: the standalone stream's thread handles what arrives between requests."""

    def listen(self, handler: Handler) -> None:
        """Open the standalone GET stream in a daemon thread (``_listen.Listener``), whose
        messages go to ``handler``; a server that does not offer one (405) is left alone."""
        if self._listener is None and self._failure is None:
            self._listener = Listener(self, handler, self.name)
            self._listener.start()

    # --- what the listener uses -----------------------------------------------------------------

    def open_get(
        self, http: requests.Session, last_event_id: str | None, stop: threading.Event, seconds: float | None
    ) -> Any:
        """GET the endpoint for an event stream (``Last-Event-ID`` when given) on ``http``, the
        headers within ``seconds`` (``None``: no limit); the response when it is one, ``None``
        when the server offers none (405, an error)."""
        watcher = SocketWatcher(stop)
        try:
            response = self._get(http, last_event_id, stop, Deadline(seconds), watcher)
        except BaseException:
            watcher.stop()
            raise
        watcher.attach(response_socket(response))
        media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        if response.status != 200 or media != "text/event-stream":
            watcher.stop()
            response.close()
            logger.debug("[%s] no standalone event stream (HTTP %s)", self.name, response.status)
            return None
        return _Watched(response, watcher)

    def events(self, response: BaseHTTPResponse, stop: threading.Event) -> Iterator[Any]:
        """The events of a GET stream until it ends or ``stop`` is set."""
        return events(self.name, response, stop, Deadline(None), self.max_message_bytes)

    def deliver(self, data: str, handler: Handler, http: requests.Session, stop: threading.Event) -> None:
        """Handle one event of the standalone stream: a response goes to the request waiting
        for it; the server's requests are answered on ``http``."""
        try:
            value = parse(self.name, data)
        except MCPError as exc:
            logger.debug("[%s] %s", self.name, exc)
            return
        for item in value if isinstance(value, list) else (value,):
            if not isinstance(item, dict):
                continue
            if is_response(item):
                self._mail.post(item)
                continue
            reply = handler(item)
            if reply is not None:
                self._reply(reply, stop, Deadline(NOTIFY_TIMEOUT), http)

    def set_protocol_version(self, version: str) -> None:
        """Send ``MCP-Protocol-Version: version`` from now on."""
        self.protocol_version = version

    def alive(self) -> bool:
        """Whether the session is usable (not closed, not ended by the server)."""
        return self._failure is None

    def diagnostics(self) -> str:
        """Nothing to add for HTTP."""
        return ""

    def close(self) -> None:
        """Stop the standalone stream, DELETE the session (when there is one) and close the
        connections. Never raises."""
        if self._listener is not None:
            self._listener.stop()
        if self.auth is not None:
            self.auth.close()
        if self.session_id is not None and self._failure is None:
            try:
                self.http.delete(
                    self.url,
                    headers=self._headers(),
                    timeout=(self.connect_timeout, CLOSE_TIMEOUT),
                    allow_redirects=False,
                ).close()
            except requests.RequestException as exc:
                logger.debug("[%s] DELETE of the session failed: %s", self.name, type(exc).__name__)
        self._failure = self._failure or "closed"
        self.http.close()

    # --- sending --------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = dict(self.extra_headers)
        headers["Accept"] = "application/json, text/event-stream"
        headers["Content-Type"] = "application/json"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        token = self.auth.header() if self.auth is not None else None
        if token is not None:
            headers["Authorization"] = token
        return headers

    def _post(
        self,
        payload: bytes,
        cancel: threading.Event | None,
        deadline: Deadline,
        watcher: SocketWatcher | None,
        http: requests.Session | None = None,
    ) -> BaseHTTPResponse:
        """One POST (body streamed); ``watcher`` gets its socket before it connects. An answer
        that asks for authorization is answered first and the POST sent again (module docstring)."""
        for round_ in range(MAX_AUTHORIZATIONS + 1):
            response = self._open(
                http or self.http, "POST", self._headers(), payload, cancel, deadline, watcher
            )
            header = response.headers.get("www-authenticate")
            if (
                self.auth is None
                or round_ == MAX_AUTHORIZATIONS
                or not self.auth.wants(response.status, header)
            ):
                return response
            release(response)
            response.close()
            self.auth.handle(response.status, header)
            deadline.reset()
        raise AssertionError("unreachable")  # pragma: no cover

    def _get(
        self,
        http: requests.Session,
        last_event_id: str | None,
        cancel: threading.Event | None,
        deadline: Deadline,
        watcher: SocketWatcher | None,
    ) -> BaseHTTPResponse:
        """One GET for an event stream, resuming after ``last_event_id`` when given."""
        headers = self._headers()
        headers["Accept"] = "text/event-stream"
        del headers["Content-Type"]
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return self._open(http, "GET", headers, None, cancel, deadline, watcher)

    def _open(
        self,
        http: requests.Session,
        method: str,
        headers: dict[str, str],
        payload: bytes | None,
        cancel: threading.Event | None,
        deadline: Deadline,
        watcher: SocketWatcher | None,
    ) -> BaseHTTPResponse:
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled")
        read_timeout = deadline.left()
        connect_timeout = (
            self.connect_timeout if read_timeout is None else min(self.connect_timeout, read_timeout)
        )
        timeout = Timeout(connect=connect_timeout, read=read_timeout)
        try:
            return open_response(http, self.url, headers, payload, timeout, watcher, method)
        except OpenFailed as failed:
            raise self._request_failed(failed.cause, cancel, deadline) from None

    def _request_failed(
        self, exc: BaseException, cancel: threading.Event | None, deadline: Deadline
    ) -> BaseException:
        if cancel is not None and cancel.is_set():
            return Interrupted("cancelled")
        if deadline.passed(0.01):
            return Interrupted("timeout")
        connect_timeout = isinstance(exc, ConnectTimeoutError) and not isinstance(exc, NewConnectionError)
        if connect_timeout or isinstance(exc, (requests.Timeout, ReadTimeoutError, TimeoutError)):
            return Interrupted("timeout")
        if not isinstance(exc, ValueError):  # not a URL problem: the connection failed
            text = connection_failure(
                f"MCP server {self.name!r}",
                self.url,
                exc,
                connect_timeout=self.connect_timeout,
                read_timeout=self.connect_timeout if deadline.at is None else deadline.at - time.monotonic(),
            )
            return MCPError(text, server=self.name, kind="closed")
        text = f"MCP server {self.name!r}: request failed ({type(exc).__name__})"
        return MCPError(text, server=self.name, kind="closed")

    # --- reading the answer ---------------------------------------------------------------------

    def _answer(
        self,
        message: Message,
        response: BaseHTTPResponse,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        status = response.status
        wanted = message["id"]
        if status == 404 and self.session_id is not None and message.get("method") != "initialize":
            self._failure = "the server ended the session (HTTP 404)"
            self.expired = True
            raise MCPError(f"MCP server {self.name!r}: {self._failure}", server=self.name, kind="closed")
        media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        if status >= 400:
            return self._error_status(response, wanted, media, cancel, deadline)
        if status == 202 or status == 204:
            if self._listener is not None and self._listener.running():
                return self._mail.wait(wanted, cancel, deadline)
            raise self._protocol(f"answered {message.get('method')} with HTTP {status} and no response")
        if media == "application/json":
            body = read_all(self.name, response, cancel, deadline, self.max_message_bytes)
            found = self._dispatch(parse(self.name, body), wanted, handler, cancel, deadline)
            if found is None:
                raise self._protocol(f"answered {message.get('method')} without its response")
            return found
        if media == "text/event-stream":
            stream = _Place()
            try:
                found = self._from_stream(response, stream, wanted, handler, cancel, deadline)
                if found is None and stream.last_id is not None and not self._mail.has(wanted):
                    found = self._resume(stream, wanted, handler, cancel, deadline)
            except MCPError:
                if not self._mail.has(wanted):  # else: its socket was shut, the answer is here
                    raise
                found = None
            listening = self._listener is not None and self._listener.running()
            if found is None and (listening or self._mail.has(wanted)):
                found = self._mail.wait(wanted, cancel, deadline)
            if found is not None:
                return found
            raise MCPError(
                f"MCP server {self.name!r} ended the event stream without answering {message.get('method')}",
                server=self.name,
                kind="closed",
            )
        raise self._protocol(f"answered HTTP {status} with content type {media or 'none'}")

    def _from_stream(
        self,
        response: BaseHTTPResponse,
        stream: _Place,
        wanted: Any,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message | None:
        """Read events until the response; note the last event id and ``retry`` in ``stream``."""
        for event in events(self.name, response, cancel, deadline, self.max_message_bytes):
            stream.last_id = event.id if event.id is not None else stream.last_id
            stream.retry = event.retry if event.retry is not None else stream.retry
            if not event.data.strip():
                continue
            found = self._dispatch(parse(self.name, event.data), wanted, handler, cancel, deadline)
            if found is not None:
                return found
        return None

    def _resume(
        self,
        stream: _Place,
        wanted: Any,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message | None:
        """Resume an event stream that ended early: GET with ``Last-Event-ID`` after ``retry``."""
        for _attempt in range(MAX_RESUMES):
            before = stream.last_id
            seconds = stream.retry / 1000 if stream.retry is not None else DEFAULT_RETRY_SECONDS
            self._pause(seconds, cancel, deadline)
            if self._mail.has(wanted):
                return None
            watcher = SocketWatcher(cancel) if cancel is not None else None
            response = self._get(self.http, stream.last_id, cancel, deadline, watcher)
            self._mail.reading_from(wanted, response_socket(response))
            try:
                if watcher is not None:
                    watcher.attach(response_socket(response))
                media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
                if response.status != 200 or media != "text/event-stream":
                    logger.debug("[%s] resuming the stream: HTTP %s", self.name, response.status)
                    return None
                found = self._from_stream(response, stream, wanted, handler, cancel, deadline)
                if found is not None:
                    if watcher is None or watcher.stop():
                        release(response)
                    return found
            finally:
                if watcher is not None:
                    watcher.stop()
                response.close()
            if stream.last_id == before and stream.retry is None:
                return None  # nothing new and no retry asked for: the server cannot resume it
        return None

    @staticmethod
    def _pause(seconds: float, cancel: threading.Event | None, deadline: Deadline) -> None:
        """Wait ``seconds`` (the server's ``retry``), or less when the cancel or deadline comes."""
        left = deadline.left()
        wait = seconds if left is None else min(seconds, left)
        if cancel is not None:
            if cancel.wait(wait):
                raise Interrupted("cancelled")
        else:
            time.sleep(wait)
        deadline.left()

    def _error_status(
        self,
        response: BaseHTTPResponse,
        wanted: Any,
        media: str,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        """A JSON-RPC error in the body of an HTTP error becomes the response; else an error."""
        body = read_all(self.name, response, cancel, deadline, _ERROR_BODY_BYTES, cut=True)
        if media == "application/json":
            try:
                value = loads(body)  # depth-safe (miniagent._json)
            except ValueError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("error"), dict):
                return {"jsonrpc": "2.0", "id": wanted, "error": value["error"]}
        snippet = body.decode("utf-8", "replace").strip()[:_SNIPPET_CHARS]
        raise self._protocol(f"answered HTTP {response.status}: {snippet or '(empty body)'}")

    def _dispatch(
        self,
        value: Any,
        wanted: Any,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message | None:
        """Hand every message but the awaited response to ``handler``; return the response."""
        found: Message | None = None
        for item in value if isinstance(value, list) else (value,):
            if not isinstance(item, dict):
                raise self._protocol("sent a JSON-RPC message that is not an object")
            if is_response(item):
                if item.get("id") == wanted:
                    found = item
                continue
            reply = handler(item)
            if reply is not None:
                self._reply(reply, cancel, deadline)
        return found

    def _reply(
        self,
        reply: Message,
        cancel: threading.Event | None,
        deadline: Deadline,
        http: requests.Session | None = None,
    ) -> None:
        """POST a reply to the server's request, within the awaited request's deadline (and at
        most ``NOTIFY_TIMEOUT``); a cancel or the deadline passing stops the awaited request."""
        bound = Deadline(NOTIFY_TIMEOUT)
        if deadline.at is not None and bound.at is not None and deadline.at < bound.at:
            bound = deadline
        watcher = SocketWatcher(cancel) if cancel is not None else None
        try:
            response = self._post(encode(reply), cancel, bound, watcher, http)
            release(response)
            response.close()
        except Interrupted:
            if (cancel is not None and cancel.is_set()) or deadline.passed(0.01):
                raise
            logger.debug("[%s] reply to %r not answered in time", self.name, reply.get("id"))
        except MCPError as exc:
            logger.debug("[%s] reply not sent: %s", self.name, exc)
        finally:
            if watcher is not None:
                watcher.stop()

    # --- failure --------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise MCPError(
                f"MCP server {self.name!r} is not connected ({self._failure})",
                server=self.name,
                kind="closed",
            )

    def _protocol(self, what: str) -> MCPError:
        return protocol(self.name, what)


class _Place:
    """Where an event stream got to: its last event id and the server's ``retry`` (ms)."""

    __slots__ = ("last_id", "retry")

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry: int | None = None


class _Watched:
    """A GET stream's response with the watcher that shuts its socket when ``stop`` is set."""

    def __init__(self, response: BaseHTTPResponse, watcher: SocketWatcher) -> None:
        self.response = response
        self.watcher = watcher

    def close(self) -> None:
        self.watcher.stop()
        self.response.close()
