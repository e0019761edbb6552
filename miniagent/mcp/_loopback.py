"""The interactive login of the authorization code flow: a loopback redirect (RFC 8252 section
7.3) that a browser is sent to.

Invariants:

- ``LoopbackLogin`` listens on 127.0.0.1 (the port given, or one the system picks) from the
  moment it is made, so its ``redirect_uri`` (``http://localhost:PORT/callback``, the form
  Claude Code registers) can be registered before the browser is opened.
- Calling it with the authorization URL opens the URL in a browser when one can be opened
  (``webbrowser``) and always writes it to stderr for the person to open; then it waits, at
  most ``timeout`` seconds, for the one request to ``/callback`` and returns that URL (with
  ``code`` and ``state``, or ``error``). Other paths get 404. The server is closed afterwards.
- Without a terminal on stdin or stderr nobody can log in: it refuses at once (``MCPError``
  kind ``auth``) instead of waiting.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from ._errors import MCPError

__all__ = ["LoopbackLogin", "LOGIN_SECONDS"]

LOGIN_SECONDS = 300.0
_DONE = b"<!doctype html><title>miniagent</title><p>Logged in. You can close this page.</p>"


class _Callback(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        login: LoopbackLogin = self.server.login  # type: ignore[attr-defined]
        if not self.path.startswith("/callback"):
            self.send_error(404)
            return
        login.arrived(f"http://localhost:{login.port}{self.path}")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(_DONE)))
        self.end_headers()
        self.wfile.write(_DONE)


class LoopbackLogin:
    """A loopback redirect receiver (module docstring).

    Args:
        server: the MCP server's name (in the text that asks the person to log in).
        port: the port to listen on (``oauth.callbackPort``); ``None``: any free port.
        timeout: seconds the person has to log in.
        interactive: whether a person is there; ``None``: when stdin or stderr is a terminal.
        opener: opens the URL for the person; ``None``: ``webbrowser.open`` (the URL is written
            to stderr either way).

    Raises:
        MCPError: kind ``auth``: the port cannot be listened on.
    """

    def __init__(
        self,
        server: str,
        port: int | None = None,
        timeout: float = LOGIN_SECONDS,
        *,
        interactive: bool | None = None,
        opener: Callable[[str], object] | None = None,
    ) -> None:
        """Start listening."""
        self.server_name = server
        self.timeout = timeout
        self.interactive = interactive
        self.opener = opener
        self._url: str | None = None
        self._arrived = threading.Event()
        try:
            self._http = HTTPServer(("127.0.0.1", port or 0), _Callback)
        except OSError as exc:
            raise MCPError(
                f"MCP server {server!r}: cannot listen for the login redirect on port {port}: {exc.strerror}",
                server=server,
                kind="auth",
            ) from None
        self._http.login = self  # type: ignore[attr-defined]
        self.port: int = self._http.server_address[1]
        self.redirect_uri = f"http://localhost:{self.port}/callback"

    def arrived(self, url: str) -> None:
        """The browser came back to ``url``."""
        if self._url is None:
            self._url = url
            self._arrived.set()

    def __call__(self, authorization_url: str, redirect_uri: str) -> str:
        """Have the person log in at ``authorization_url``; return the URL they came back to.

        Raises:
            MCPError: kind ``auth``: no terminal to ask on, or nobody logged in within
                ``timeout`` seconds.
        """
        try:
            interactive = self.interactive if self.interactive is not None else os.isatty(0) or os.isatty(2)
            if not interactive:
                raise MCPError(
                    f"MCP server {self.server_name!r} needs a login in a browser, and there is no "
                    "terminal to ask on; log in once in a terminal (tokens are kept) or use "
                    'client credentials ("grantType": "client_credentials")',
                    server=self.server_name,
                    kind="auth",
                )
            serving = threading.Thread(target=self._serve, daemon=True)
            serving.start()
            self._show(authorization_url)
            if not self._arrived.wait(self.timeout):
                raise MCPError(
                    f"MCP server {self.server_name!r}: nobody logged in within {self.timeout:g} s",
                    server=self.server_name,
                    kind="auth",
                )
            assert self._url is not None
            return self._url
        finally:
            self.close()

    def _serve(self) -> None:
        self._http.timeout = 0.1
        while not self._arrived.is_set() and self._http.socket.fileno() >= 0:
            try:
                self._http.handle_request()
            except (OSError, ValueError):
                return

    def _show(self, url: str) -> None:
        sys.stderr.write(f"miniagent: MCP server {self.server_name!r} asks you to log in: open\n  {url}\n")
        sys.stderr.flush()
        try:
            if self.opener is not None:
                self.opener(url)
            else:
                import webbrowser

                webbrowser.open(url)
        except Exception:  # no browser: the printed URL is the way
            pass

    def close(self) -> None:
        """Stop listening (idempotent)."""
        self._arrived.set()
        self._http.server_close()
