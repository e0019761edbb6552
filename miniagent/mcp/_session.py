"""One MCP session over a transport: the lifecycle, requests, and the server's own messages.

MCP spec 2025-11-25 ("Lifecycle", "Tools", "Utilities"):

- ``initialize`` offers ``PROTOCOL_VERSION`` (the newest version the official Python SDK's
  ``initialize`` handshake speaks); the server's answer must be one of ``SUPPORTED_VERSIONS``
  (2024-11-05 to 2025-11-25), else the session is refused. Then ``notifications/initialized``.
- Request ids are integers counting up from 1; a response to an older id (a request given up
  on) is dropped by the transport.
- A request that stops waiting (the caller's cancel event, or its timeout) is followed by
  ``notifications/cancelled`` with its id; ``initialize`` is never cancelled (the spec forbids
  it), only bounded by its timeout.
- The server's requests are answered at once by ``_requests.ClientSide`` (ping, roots,
  elicitation, sampling; anything else error -32601). Its notifications:
  ``notifications/tools/list_changed`` marks the tool list stale (``tools_changed``);
  ``notifications/message`` goes to the ``miniagent.mcp`` logger (``clean``-ed: secrets hidden,
  escapes visible, at most ``LOG_CHARS`` characters); ``notifications/progress`` for a request
  that asked for progress (``progressToken``) starts its timeout again and reaches its
  callback; the rest are ignored.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._log import DEBUG, INFO, WARNING, Logger
from ._errors import MCPError
from ._requests import ClientSide
from ._wire import Deadline, Interrupted, Message, Transport

if TYPE_CHECKING:
    import threading

Progress = Callable[[dict[str, Any]], None]

__all__ = ["Session", "PROTOCOL_VERSION", "SUPPORTED_VERSIONS", "CLIENT_INFO"]

PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CLIENT_INFO = {"name": "miniagent", "version": "0.1.0"}
_MAX_PAGES = 1000
LOG_CHARS = 2000
_ERROR, _CRITICAL = 40, 50  # logging.ERROR, logging.CRITICAL
_LOG_LEVELS = {  # MCP (syslog) levels to logging's
    "debug": DEBUG,
    "info": INFO,
    "notice": INFO,
    "warning": WARNING,
    "error": _ERROR,
    "critical": _CRITICAL,
    "alert": _CRITICAL,
    "emergency": _CRITICAL,
}

logger = Logger("miniagent.mcp")


class Session:
    """An MCP session with one server (not thread-safe; the server object serialises calls).

    Args:
        transport: the connection (``_stdio.StdioTransport`` or ``_http.HTTPTransport``).
        server: the server's name, for errors and log lines.
        client: what the client offers and how it answers the server's requests.
        clean: makes a server's text safe for a log line (``_secrets.Secrets.clean``).

    Attributes:
        server_info: the server's ``serverInfo`` (``{"name", "version", ...}``) after
            ``initialize``.
        protocol_version: the agreed protocol version.
        instructions: the server's ``instructions`` text, or ``""``.
        capabilities: the server's ``capabilities`` object.
        tools_changed: set when the server sent ``notifications/tools/list_changed``.
    """

    def __init__(
        self,
        transport: Transport,
        server: str,
        client: ClientSide | None = None,
        clean: Callable[[str], str] = str,
    ) -> None:
        """Wrap ``transport``; nothing is sent until ``initialize``."""
        self.transport = transport
        self.server = server
        self.client = client or ClientSide(server)
        self.clean = clean
        self._ids = itertools.count(1)
        self._progress: dict[int, tuple[Deadline, Progress | None]] = {}
        self.server_info: dict[str, Any] = {}
        self.protocol_version = ""
        self.instructions = ""
        self.capabilities: dict[str, Any] = {}
        self.tools_changed = False

    # --- lifecycle ------------------------------------------------------------------------------

    def initialize(self, timeout: float | None) -> None:
        """Run the handshake (module docstring).

        Raises:
            MCPError: no answer within ``timeout`` seconds (kind ``timeout``), an error answer, a
                version this client does not speak (kind ``protocol``), or the server exited.
        """
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": self.client.capabilities(),
            "clientInfo": CLIENT_INFO,
        }
        result = self.request("initialize", params, None, timeout, cancellable=False)
        version = result.get("protocolVersion")
        if version not in SUPPORTED_VERSIONS:
            raise MCPError(
                f"MCP server {self.server!r} speaks protocol version {version!r}; this client "
                f"speaks {', '.join(SUPPORTED_VERSIONS)}",
                server=self.server,
                kind="protocol",
            )
        self.protocol_version = str(version)
        self.transport.set_protocol_version(self.protocol_version)
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        capabilities = result.get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else ""
        self.notify("notifications/initialized")
        self.transport.listen(self.on_message)

    def close(self) -> None:
        """End the session (the transport stops the process or the HTTP session)."""
        self.transport.close()

    # --- requests -------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        cancel: threading.Event | None,
        timeout: float | None,
        *,
        cancellable: bool = True,
        progress: Progress | bool = False,
    ) -> dict[str, Any]:
        """Send one request and return its ``result`` object.

        Args:
            method: e.g. ``"tools/call"``.
            params: the request's params, or ``None`` for none.
            cancel: when set while waiting, the server is sent ``notifications/cancelled``.
            timeout: seconds to wait for the answer, or ``None`` for no limit.
            progress: ask for progress (``_meta.progressToken``): each progress notification
                starts ``timeout`` again and, when this is a function, is passed to it (its
                ``params``: ``progress``, ``total``, ``message``).

        Raises:
            MCPError: kind ``cancelled`` or ``timeout`` (the server was told), ``error`` (a
                JSON-RPC error answer: ``code`` and the server's message), ``closed`` or
                ``protocol`` (from the transport; also when ``result`` is not an object).
        """
        request_id = next(self._ids)
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if progress is not False:
            meta = dict(params.get("_meta") or {}) if params else {}
            params = {**(params or {}), "_meta": {**meta, "progressToken": request_id}}
        if params is not None:
            message["params"] = params
        deadline = Deadline(timeout)
        if progress is not False:
            self._progress[request_id] = (deadline, progress if callable(progress) else None)
        try:
            response = self.transport.request(message, self.on_message, cancel, deadline)
        except Interrupted as stop:
            raise self._interrupted(method, request_id, stop.reason, timeout, cancellable) from None
        finally:
            self._progress.pop(request_id, None)
        error = response.get("error")
        if error is not None:
            raise self._error_answer(method, error)
        result = response.get("result")
        if not isinstance(result, dict):
            raise MCPError(
                f"MCP server {self.server!r} answered {method} with a result that is not an object",
                server=self.server,
                kind="protocol",
            )
        return result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (never raises)."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.notify(message)

    def poll(self) -> None:
        """Handle what the server sent while no request waited (``Transport.poll``)."""
        self.transport.poll(self.on_message)

    def list_tools(self, timeout: float | None) -> list[dict[str, Any]]:
        """Every tool definition of the server, following ``nextCursor`` page by page.

        Clears ``tools_changed``. Raises ``MCPError`` as ``request`` does, and kind ``protocol``
        when ``tools`` is not a list or the server repeats a cursor.
        """
        self.tools_changed = False
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _page in range(_MAX_PAGES):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None, None, timeout)
            page = result.get("tools")
            if not isinstance(page, list):
                raise MCPError(
                    f"MCP server {self.server!r} answered tools/list without a list of tools",
                    server=self.server,
                    kind="protocol",
                )
            tools.extend(t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str))
            following = result.get("nextCursor")
            if not isinstance(following, str) or not following:
                return tools
            if following in seen:
                break
            seen.add(following)
            cursor = following
        raise MCPError(
            f"MCP server {self.server!r} paginated tools/list without end",
            server=self.server,
            kind="protocol",
        )

    # --- named steps ----------------------------------------------------------------------------

    def _interrupted(
        self, method: str, request_id: int, reason: str, timeout: float | None, cancellable: bool
    ) -> MCPError:
        if cancellable:
            text = "cancelled by the caller" if reason == "cancelled" else "timed out"
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": text})
        if reason == "cancelled":
            return MCPError(
                f"MCP {method} to server {self.server!r} was cancelled", server=self.server, kind="cancelled"
            )
        return MCPError(
            f"MCP server {self.server!r} did not answer {method} within {timeout:g} s"
            f"{self.transport.diagnostics()}",
            server=self.server,
            kind="timeout",
        )

    def _error_answer(self, method: str, error: Any) -> MCPError:
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        text = message if isinstance(message, str) else "(no message)"
        return MCPError(
            f"MCP server {self.server!r} answered {method} with error {code}: {text}",
            server=self.server,
            kind="error",
            code=code,
        )

    def on_message(self, message: Message) -> Message | None:
        """Handle a message from the server that is not an awaited response; return the reply
        to a request of the server (``_requests.ClientSide.answer``)."""
        method = message.get("method")
        if not isinstance(method, str):
            logger.debug("[%s] ignored a message without a method", self.server)
            return None
        if "id" in message:
            return self.client.answer(message)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/tools/list_changed":
            self.tools_changed = True
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), INFO)
            if logger.enabled(level):
                logger.log(level, "[%s] %s", self.server, self._log_text(params.get("data")))
        elif method == "notifications/progress":
            self._on_progress(params)
        return None

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        waiting = self._progress.get(token) if isinstance(token, int) else None
        if waiting is None:
            return
        deadline, callback = waiting
        deadline.reset()
        if callback is not None:
            callback(params)

    def _log_text(self, data: Any) -> str:
        if isinstance(data, str):
            text = data
        else:
            try:
                text = json.dumps(data, ensure_ascii=False)
            except (ValueError, TypeError, RecursionError):
                text = "(a log message that is not JSON)"
        text = self.clean(text)  # before the cut, so no part of a secret is left
        return text if len(text) <= LOG_CHARS else text[:LOG_CHARS] + "…"
