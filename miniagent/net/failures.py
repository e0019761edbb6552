"""Why a request failed, in one short phrase: the wording every HTTP client here shares.

Model clients (``providers/``) and MCP's HTTP transport word a failed connection the same way:
``WHO: cannot connect to HOST:PORT (connection refused)``, ``WHO: no answer from HOST:PORT (no
data for 600 s)``... (``connection_failure``). The phrase names the deepest understood cause in
the exception chain (``root_cause``); it never holds a URL's user info or query (only
``host:port`` is shown) and never a urllib3 object repr.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import (
    ConnectTimeoutError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
)
from urllib3.exceptions import IncompleteRead as Urllib3IncompleteRead
from urllib3.exceptions import SSLError as Urllib3SSLError

from .._text import shorten

__all__ = [
    "CONNECT_PHASE",
    "READ_TIMEOUTS",
    "connection_failure",
    "exception_chain",
    "host_port",
    "is_stale",
    "root_cause",
]


def host_port(url: str) -> str:
    """``host:port`` of ``url`` (default port by scheme; IPv6 in brackets; no user info)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception nested in it (``args``, ``reason``, cause, context)."""
    seen: list[BaseException] = []
    todo: list[Any] = [exc]
    while todo and len(seen) < 32:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or any(item is e for e in seen):
            continue
        seen.append(item)
        todo.extend(item.args)
        todo.extend((getattr(item, "reason", None), item.__cause__, item.__context__))
    return seen


CONNECT_PHASE: tuple[type[BaseException], ...] = (
    NewConnectionError,
    ConnectTimeoutError,
    requests.ConnectTimeout,
    ssl.SSLError,
    Urllib3SSLError,
    requests.exceptions.SSLError,
    socket.gaierror,
    ConnectionRefusedError,
)
READ_TIMEOUTS: tuple[type[BaseException], ...] = (
    ReadTimeoutError,
    requests.ReadTimeout,
    TimeoutError,
)
_TLS_REASON = re.compile(r"\] (.+?)(?: \(_ssl\.c:\d+\))?$")


def root_cause(chain: list[BaseException], connect_timeout: float, read_timeout: float) -> str:
    """A short lowercase phrase for the deepest understood cause in ``chain``."""

    def find(kinds: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException | None:
        return next((e for e in reversed(chain) if isinstance(e, kinds)), None)

    verify = find(ssl.SSLCertVerificationError)
    if isinstance(verify, ssl.SSLCertVerificationError):
        detail = verify.verify_message or verify.reason or "certificate verify failed"
        return f"TLS certificate not accepted: {str(detail).rstrip('.')}"
    tls = find(ssl.SSLError)
    if isinstance(tls, ssl.SSLError):
        match = _TLS_REASON.search(str(tls.strerror or tls))
        detail = match.group(1) if match else str(tls.reason or tls).lower().replace("_", " ")
        return f"TLS error: {detail}"
    if find((socket.gaierror, NameResolutionError)) is not None:
        return "name not resolved"
    if find(ConnectionRefusedError) is not None:
        return "connection refused"
    if any(isinstance(e, ConnectTimeoutError) and not isinstance(e, NewConnectionError) for e in chain):
        return f"timed out after {connect_timeout:g} s"
    if find(READ_TIMEOUTS) is not None:
        return f"no data for {read_timeout:g} s"
    if find(http.client.RemoteDisconnected) is not None:  # before its base ConnectionResetError
        return "the server closed the connection without answering"
    if find(ConnectionResetError) is not None:
        return "connection reset by the server"
    if find(BrokenPipeError) is not None:
        return "the server closed the connection while the request was sent"
    if find((http.client.IncompleteRead, Urllib3IncompleteRead)) is not None:
        return "the server closed the connection in the middle of the response"
    os_error = find(OSError)
    if isinstance(os_error, OSError) and os_error.errno:
        return os.strerror(os_error.errno).lower()
    if find(ProtocolError) is not None:
        return "the connection broke"
    root = chain[-1] if chain else None
    if root is None:
        return "unknown error"
    text = str(root)
    if "(" in text and "=" in text:  # a urllib3 object repr: keep the type only
        return type(root).__name__
    return shorten(f"{type(root).__name__}: {text}" if text else type(root).__name__, 200)


def is_stale(exc: BaseException) -> bool:
    """Whether ``exc`` means "the server had closed this idle connection": nothing received."""
    chain = exception_chain(exc)
    if any(isinstance(e, (*READ_TIMEOUTS, *CONNECT_PHASE)) for e in chain):
        return False
    stale = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
    return any(isinstance(e, stale) for e in chain)


def connection_failure(
    who: str,
    url: str,
    exc: BaseException,
    *,
    connect_timeout: float,
    read_timeout: float,
    via_proxy: bool = False,
) -> str:
    """One line naming ``host:port`` of ``url`` and the root cause of a failed request.

    Args:
        who: the speaker, e.g. ``"OpenAI"`` or ``"MCP server 'files'"``.
        url: the request URL (only its ``host:port`` is shown).
        exc: the exception the request raised (its whole chain is read).
        connect_timeout: the connect timeout in seconds (named when it expired).
        read_timeout: the read timeout in seconds (named when it expired).
        via_proxy: the request went through an HTTP proxy.

    Returns:
        ``"WHO: cannot connect to HOST:PORT (CAUSE)"`` for a failure while connecting (also
        ``cannot connect through the proxy to``), ``"WHO: no answer from HOST:PORT (CAUSE)"`` for
        a read timeout, else ``"WHO: connection to HOST:PORT failed (CAUSE)"``. Not redacted or
        cut: the caller redacts its secrets, then cuts.
    """
    where = host_port(url)
    chain = exception_chain(exc)
    cause = root_cause(chain, connect_timeout, read_timeout)
    if via_proxy and any(isinstance(e, (ProxyError, *CONNECT_PHASE)) for e in chain):
        return f"{who}: cannot connect through the proxy to {where} ({cause})"
    if any(isinstance(e, CONNECT_PHASE) for e in chain):
        return f"{who}: cannot connect to {where} ({cause})"
    if any(isinstance(e, READ_TIMEOUTS) for e in chain):
        return f"{who}: no answer from {where} ({cause})"
    return f"{who}: connection to {where} failed ({cause})"
