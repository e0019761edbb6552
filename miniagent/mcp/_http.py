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
- Keep-alive: once the response was found, the rest of the body (the end of the event stream)
  is read for at most 0.2 s (``net.connection.release``) and the connection goes back to the
  pool for the next request; after a cancel, a timeout or an error it is closed.
- Replies to the server's requests are POSTed with the deadline and the cancel of the request
  whose stream carried them, so a server that never answers them cannot hold the caller.
- A body or event that cannot be read (not JSON, nested too deeply, an event over the SSE
  reader's cap) is a protocol error (``MCPError``), never another exception.
- Header values (``Authorization``...) never appear in errors or logs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import requests
from urllib3 import BaseHTTPResponse
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.util import Timeout

from .._log import Logger
from ..errors import ProviderError
from ..net.connection import READ_SIZE, OpenFailed, new_session, open_response, release, response_socket
from ..net.failures import connection_failure
from ..net.sse import SSEDecoder
from ..net.watcher import SocketWatcher
from ._errors import MCPError
from ._secrets import Secrets
from ._wire import Deadline, Handler, Interrupted, Message, encode, is_response

__all__ = ["HTTPTransport"]

CONNECT_TIMEOUT = 10.0
NOTIFY_TIMEOUT = 5.0
CLOSE_TIMEOUT = 2.0
MAX_BODY_BYTES = 64 * 1024 * 1024
_SNIPPET_CHARS = 200

logger = Logger("miniagent.mcp")


class HTTPTransport:
    """A session with a streamable HTTP MCP endpoint (see the module docstring).

    Args:
        name: the server's name (in errors and logs).
        url: the endpoint.
        headers: extra request headers.
        connect_timeout: most seconds for a TCP/TLS connect.
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
        secrets: Secrets | None = None,
    ) -> None:
        """Prepare the HTTP session; nothing is sent yet."""
        self.name = name
        self.secrets = secrets or Secrets()
        self.expired = False
        self.url = url
        self.extra_headers = dict(headers)
        self.connect_timeout = min(connect_timeout, CONNECT_TIMEOUT)
        self.http = new_session()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._failure: str | None = None

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
        try:
            response = self._post(encode(message), cancel, deadline, watcher)
            if watcher is not None:
                watcher.attach(response_socket(response))
            if message.get("method") == "initialize":
                self.session_id = response.headers.get("mcp-session-id") or None
            answer = self._answer(message, response, handler, cancel, deadline)
            if watcher is None or watcher.stop():  # the socket is intact: keep the connection
                release(response)
            return answer
        finally:
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
        """Nothing waits between requests over HTTP."""

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
        """DELETE the session (when there is one) and close the connections. Never raises."""
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
        return headers

    def _post(
        self,
        payload: bytes,
        cancel: threading.Event | None,
        deadline: Deadline,
        watcher: SocketWatcher | None,
    ) -> BaseHTTPResponse:
        """One POST (body streamed); ``watcher`` gets its socket before it connects."""
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled")
        read_timeout = deadline.left()
        connect_timeout = (
            self.connect_timeout if read_timeout is None else min(self.connect_timeout, read_timeout)
        )
        timeout = Timeout(connect=connect_timeout, read=read_timeout)
        try:
            return open_response(self.http, self.url, self._headers(), payload, timeout, watcher)
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
            raise self._protocol(f"answered {message.get('method')} with HTTP {status} and no response")
        if media == "application/json":
            body = self._read_all(response, cancel, deadline)
            found = self._dispatch(self._parse(body), wanted, handler, cancel, deadline)
            if found is None:
                raise self._protocol(f"answered {message.get('method')} without its response")
            return found
        if media == "text/event-stream":
            for event in self._events(response, cancel, deadline):
                if not event.data.strip():
                    continue
                found = self._dispatch(self._parse(event.data.encode()), wanted, handler, cancel, deadline)
                if found is not None:
                    return found
            raise MCPError(
                f"MCP server {self.name!r} ended the event stream without answering {message.get('method')}",
                server=self.name,
                kind="closed",
            )
        raise self._protocol(f"answered HTTP {status} with content type {media or 'none'}")

    def _error_status(
        self,
        response: BaseHTTPResponse,
        wanted: Any,
        media: str,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        """A JSON-RPC error in the body of an HTTP error becomes the response; else an error."""
        body = self._read_all(response, cancel, deadline, limit=65536)
        if media == "application/json":
            try:
                value = json.loads(body)
            except (ValueError, RecursionError):
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

    def _reply(self, reply: Message, cancel: threading.Event | None, deadline: Deadline) -> None:
        """POST a reply to the server's request, within the awaited request's deadline (and at
        most ``NOTIFY_TIMEOUT``); a cancel or the deadline passing stops the awaited request."""
        bound = Deadline(NOTIFY_TIMEOUT)
        if deadline.at is not None and bound.at is not None and deadline.at < bound.at:
            bound = deadline
        watcher = SocketWatcher(cancel) if cancel is not None else None
        try:
            response = self._post(encode(reply), cancel, bound, watcher)
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

    def _parse(self, body: bytes) -> Any:
        try:
            return json.loads(body)
        except RecursionError:
            raise self._protocol("sent a message nested too deeply to read") from None
        except ValueError:
            snippet = body.decode("utf-8", "replace")[:_SNIPPET_CHARS]
            raise self._protocol(f"sent a body that is not JSON: {snippet}") from None

    def _chunks(
        self, response: BaseHTTPResponse, cancel: threading.Event | None, deadline: Deadline
    ) -> Iterator[bytes]:
        raw: Any = response
        sock = response_socket(response)
        while True:
            if cancel is not None and cancel.is_set():
                raise Interrupted("cancelled")
            left = deadline.left()
            if left is not None and sock is not None:
                sock.settimeout(left)
            try:
                chunk = raw.read1(READ_SIZE, decode_content=True)
            except Exception as exc:  # urllib3/http.client/socket errors: the stream broke
                if cancel is not None and cancel.is_set():
                    raise Interrupted("cancelled") from None
                if deadline.passed(0.01):
                    raise Interrupted("timeout") from None
                raise MCPError(
                    f"MCP server {self.name!r}: the answer broke off ({type(exc).__name__})",
                    server=self.name,
                    kind="closed",
                ) from None
            if not chunk:
                return
            yield chunk

    def _read_all(
        self,
        response: BaseHTTPResponse,
        cancel: threading.Event | None,
        deadline: Deadline,
        limit: int = MAX_BODY_BYTES,
    ) -> bytes:
        body = bytearray()
        for chunk in self._chunks(response, cancel, deadline):
            body += chunk
            if len(body) > limit:
                if limit < MAX_BODY_BYTES:
                    break
                raise self._protocol(f"sent a body longer than {MAX_BODY_BYTES} bytes")
        return bytes(body)

    def _events(
        self, response: BaseHTTPResponse, cancel: threading.Event | None, deadline: Deadline
    ) -> Iterator[Any]:
        decoder = SSEDecoder()
        try:
            for chunk in self._chunks(response, cancel, deadline):
                yield from decoder.feed(chunk)
            yield from decoder.close()
        except ProviderError:  # the reader's cap: one line or event too large
            raise self._protocol(f"sent an event stream line or event over {MAX_BODY_BYTES} bytes") from None

    # --- failure --------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise MCPError(
                f"MCP server {self.name!r} is not connected ({self._failure})",
                server=self.name,
                kind="closed",
            )

    def _protocol(self, what: str) -> MCPError:
        return MCPError(f"MCP server {self.name!r} {what}", server=self.name, kind="protocol")
