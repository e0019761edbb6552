"""The error of the MCP client: ``MCPError``.

``MCPError`` is raised for everything that keeps a request from getting a normal answer: the
server could not start, broke the protocol, exited, timed out, or answered with a JSON-RPC error.
Its text names the server and never holds a header value or an environment value.
"""

from __future__ import annotations

from ..errors import MiniagentError

__all__ = ["MCPError"]


class MCPError(MiniagentError):
    """An MCP server failed a request or could not be used.

    Attributes:
        server: the server's name (``load_mcp_config`` key, or the command's file name).
        kind: one of ``"start"`` (the command could not run), ``"closed"`` (the server exited or
            the connection ended), ``"timeout"`` (no answer within the timeout), ``"protocol"``
            (an answer that breaks JSON-RPC 2.0 / MCP, an unsupported protocol version, an HTTP
            error status), ``"cancelled"`` (the caller's cancel event was set while the request
            waited; the server was sent ``notifications/cancelled``), ``"config"`` (a bad
            ``load_mcp_config`` file), ``"auth"`` (OAuth discovery, registration, login or a
            token request failed) and ``"error"`` (a JSON-RPC error response; ``code`` holds
            its code).
        code: the JSON-RPC error code for ``kind == "error"`` (e.g. ``-32602``), else ``None``.
    """

    def __init__(self, message: str, *, server: str = "", kind: str = "error", code: int | None = None):
        """Store the message and the attributes (see the class docstring)."""
        super().__init__(message)
        self.server = server
        self.kind = kind
        self.code = code
