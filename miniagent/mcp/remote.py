"""``HTTPMCPServer``: an MCP server reached over the streamable HTTP transport.

Invariants: as ``servers`` says for every server; besides, header values never appear in errors
or logs (they are among the server's ``Secrets``), and importing this module imports only the
standard library (``requests`` comes with the transport, at ``start()``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..tools import TOOL_OUTPUT_CHARS
from ._errors import MCPError
from ._requests import Elicitation
from ._wire import MAX_MESSAGE_BYTES, Transport
from .servers import DEFAULT_STARTUP_TIMEOUT, DEFAULT_TIMEOUT, MCPServerBase

if TYPE_CHECKING:
    from ..model import ModelClient
    from ._oauth import Authorizer
    from .auth import OAuth

__all__ = ["HTTPMCPServer"]


class HTTPMCPServer(MCPServerBase):
    """An MCP server reached over the streamable HTTP transport (needs the ``http`` extra).

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        headers: extra request headers (e.g. ``Authorization``); their values never appear in
            errors or logs.
        name: the server's name; default the URL's host.
        startup_timeout: seconds to connect and answer ``initialize`` (default 30).
        timeout: seconds one request may take (default 300).
        max_result_chars: cap of one tool result in characters (default ``TOOL_OUTPUT_CHARS`` of
            ``miniagent.tools``).
        max_message_bytes: the largest JSON body or server-sent event read (default
            ``MAX_MESSAGE_BYTES``).
        roots: the roots the client offers the server (``MCPServerBase``).
        elicitation: the client's answer to the server's elicitation requests (``MCPServerBase``).
        sampling: the model client that answers the server's sampling requests (``MCPServerBase``).
        auth: OAuth settings (``auth.OAuth``) for a server that asks for authorization, or
            ``None``: a 401 is then an error.

    Each request is one POST; the answer is JSON or an event stream (server-sent events) that
    carries the response, possibly after the server's notifications and requests.
    ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` are sent as the spec says; ``close()`` ends
    the session with DELETE.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
        max_result_chars: int = TOOL_OUTPUT_CHARS,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        roots: Sequence[str | os.PathLike[str]] | None = None,
        elicitation: Elicitation | None = None,
        sampling: ModelClient | None = None,
        auth: OAuth | None = None,
    ) -> None:
        """Store the settings; nothing is sent before ``start()`` or ``with``."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be an http:// or https:// URL, got {url!r}")
        super().__init__(
            name or parts.hostname,
            startup_timeout,
            timeout,
            max_result_chars,
            max_message_bytes=max_message_bytes,
            roots=roots,
            elicitation=elicitation,
            sampling=sampling,
        )
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self._authorizer: Authorizer | None = None

    def __repr__(self) -> str:
        """``HTTPMCPServer(name, url)`` (no header values)."""
        return f"HTTPMCPServer({self.name!r}, {self.url!r})"

    def _secrets(self) -> list[str]:
        """Secret variables' values, every header value (``Secrets`` keeps the part after a
        scheme such as ``Bearer`` too) and the OAuth client secret and key."""
        values = [*super()._secrets(), *self.headers.values()]
        if self.auth is not None:
            values.extend(v for v in (self.auth.client_secret, self.auth.private_key) if v)
        return values

    def _open(self) -> Transport:
        from ._http import HTTPTransport

        transport = HTTPTransport(
            self.name,
            self.url,
            self.headers,
            self.startup_timeout,
            max_message_bytes=self.max_message_bytes,
            secrets=self.secrets,
        )
        if self.auth is not None:
            transport.auth = self._oauth()
        return transport

    def _oauth(self) -> Authorizer:
        """The one ``Authorizer`` of this server (its tokens outlive a session), prepared."""
        from ._oauth import Authorizer

        assert self.auth is not None
        if self._authorizer is None:
            self._authorizer = Authorizer(self.name, self.url, self.auth, self.secrets)
        try:
            self._authorizer.prepare()
        except MCPError as error:
            raise self.secrets.error(error) from None
        return self._authorizer
