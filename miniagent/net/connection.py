"""The one module that reaches into urllib3 and the ``requests`` adapter: which parts, and why.

Tested with urllib3 2.x (``setup.cfg`` bounds it to ``>=2,<3``) and requests 2.32+.

Why: a cancel must stop a request in every phase (TCP connect, proxy ``CONNECT``, sending the
body, waiting for the headers, reading) within milliseconds, and the only way to wake a thread
blocked in a socket call is to shut that socket down from another thread. So the stream's
``SocketWatcher`` must hold the socket from the moment it exists, before ``connect()``. urllib3
creates and connects a socket in one call deep inside ``urlopen``, hence:

- ``HTTPConnection._new_conn`` (private) is replaced by ``_WatchedHTTPConnection._new_conn``:
  the socket is created, handed to the connection's ``watcher``, and only then connected (the
  body of ``urllib3.util.connection.create_connection`` with that one step added). DNS lookups
  before it cannot be interrupted.
- ``HTTPConnection.connect`` and ``request`` (public) are extended to hand the socket over again
  after a connect (TLS replaces the plain socket) and before sending on a reused connection.
- ``HTTPConnectionPool._get_conn``, ``_put_conn``, ``_prepare_proxy`` and ``_make_request``
  (private): ``open_response`` takes a connection from the pool itself, sets its ``watcher``
  before anything touches the network, opens a proxy tunnel when one is needed, and makes the
  request. ``urlopen`` is not used: it hides the connection, and its redirects and retries are
  unwanted (the transport retries by itself and never follows a redirect). ``_put_conn`` is
  extended to detach the watcher before a connection is pooled (``_detach``).
- ``PoolManager.pool_classes_by_scheme`` is set on the adapter's pool manager and on its proxy
  managers, so they build the pools above (a SOCKS proxy keeps its own pools: its connect phase
  is then not interruptible).

From ``requests`` only public API is used: ``Session.prepare_request``,
``Session.merge_environment_settings``, ``HTTPAdapter.get_connection_with_tls_context``,
``HTTPAdapter.proxy_manager_for`` and ``HTTPAdapter.request_url``.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import BaseHTTPResponse
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    LocationParseError,
    NameResolutionError,
    NewConnectionError,
)
from urllib3.util import Timeout
from urllib3.util.connection import allowed_gai_family
from urllib3.util.proxy import connection_requires_http_tunnel

from .watcher import SocketWatcher

__all__ = [
    "DRAIN_LIMIT",
    "DRAIN_TIMEOUT",
    "READ_ERRORS",
    "READ_SIZE",
    "OpenFailed",
    "new_session",
    "open_response",
    "release",
    "response_socket",
]

READ_SIZE = 65536
"""Most bytes taken from the socket per read (a read returns as soon as any data arrived)."""

DRAIN_TIMEOUT = 0.2
"""Most seconds spent reading what follows the end of a finished body (keep-alive)."""

DRAIN_LIMIT = 16384
"""Most bytes read after the end of a finished body; more: the connection is closed."""

READ_ERRORS = (HTTPError, http.client.HTTPException, OSError, ValueError)
"""What reading a streamed body may raise (a broken, reset or cut connection)."""

_OPEN_ERRORS = (requests.RequestException, HTTPError, http.client.HTTPException, OSError, ValueError)


class OpenFailed(Exception):
    """The request failed before its response headers arrived.

    Attributes:
        cause: the exception of ``requests``, urllib3, ``http.client`` or the socket (also
            ``__cause__``).
        reused: whether it was sent on a pooled connection that had served a request before
            (the server may have closed it while idle: sending again on a new one is safe).
        via_proxy: whether the connection went to a proxy from the environment.
    """

    def __init__(self, cause: BaseException, reused: bool, via_proxy: bool = False) -> None:
        """Keep ``cause``, ``reused`` and ``via_proxy``."""
        super().__init__(cause)
        self.cause = cause
        self.reused = reused
        self.via_proxy = via_proxy


def _report(conn: Any, sock: socket.socket | None) -> None:
    watcher = getattr(conn, "watcher", None)
    if isinstance(watcher, SocketWatcher):
        watcher.attach(sock)


def _set_options(sock: socket.socket, options: Any) -> None:
    for option in options or ():
        sock.setsockopt(*option)


class _WatchedHTTPConnection(HTTPConnection):
    """An urllib3 connection that hands each socket to ``watcher`` before connecting it.

    ``watcher`` is the cancel watcher of the stream using the connection (``None`` in the pool);
    ``used_sock`` is the socket that carried its last request, so a reused connection is known.
    """

    watcher: SocketWatcher | None = None
    used_sock: socket.socket | None = None

    def _new_conn(self) -> socket.socket:
        """``create_connection`` of urllib3, with the socket reported before ``connect``."""
        host = self._dns_host
        if host.startswith("["):
            host = host.strip("[]")
        try:
            host.encode("idna")
        except UnicodeError:
            raise LocationParseError(f"'{host}', label empty or too long") from None
        try:
            addresses = socket.getaddrinfo(host, self.port, allowed_gai_family(), socket.SOCK_STREAM)
            return self._connect_any(addresses)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc

    def _connect_any(self, addresses: list[Any]) -> socket.socket:
        error: OSError = OSError("getaddrinfo returns an empty list")
        for family, kind, proto, _name, address in addresses:
            sock = socket.socket(family, kind, proto)
            try:
                _set_options(sock, self.socket_options)
                if isinstance(self.timeout, (int, float)):
                    sock.settimeout(self.timeout)
                if self.source_address:
                    sock.bind(self.source_address)
                _report(self, sock)
                sock.connect(address)
                return sock
            except OSError as exc:
                error = exc
                sock.close()
        raise error

    def connect(self) -> None:
        """``HTTPConnection.connect``; the final socket (TLS, tunnel) is reported afterwards."""
        super().connect()
        _report(self, self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        """``HTTPConnection.request``; the socket is reported before sending."""
        _report(self, self.sock)
        super().request(*args, **kwargs)
        self.used_sock = self.sock


class _WatchedHTTPSConnection(_WatchedHTTPConnection, HTTPSConnection):
    """The TLS variant (``_new_conn``, ``connect`` and ``request`` run before ``HTTPSConnection``'s
    in the method order)."""


def _detach(conn: Any) -> None:
    """Before ``conn`` enters the pool: stop its stream's watcher; close it if cancel fired."""
    watcher = getattr(conn, "watcher", None)
    if isinstance(watcher, SocketWatcher):
        conn.watcher = None
        if not watcher.stop():
            conn.close()


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection

    def _put_conn(self, conn: Any) -> None:
        _detach(conn)
        super()._put_conn(conn)


class _WatchedHTTPSPool(_WatchedHTTPPool, HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOL_CLASSES = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    """A ``requests`` adapter whose pools (direct and through HTTP proxies) use the connections above."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Create the pool manager, then swap in the watched pool classes."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOL_CLASSES)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        """The proxy manager of ``proxy``, with the watched pool classes (not for SOCKS)."""
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_POOL_CLASSES)
        return manager


def new_session() -> requests.Session:
    """A ``requests.Session`` whose connections hand their sockets to a cancel watcher."""
    session = requests.Session()
    session.mount("http://", _WatchedAdapter())
    session.mount("https://", _WatchedAdapter())
    return session


def open_response(
    session: requests.Session,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    timeout: Timeout,
    watcher: SocketWatcher | None,
    method: str = "POST",
) -> BaseHTTPResponse:
    """POST ``body`` to ``url`` on a pooled connection of ``session``; return once headers arrived.

    ``method`` may name another method (``GET`` with ``body=None``).

    The environment's proxy and CA settings apply as with ``session.post``; redirects are not
    followed (a 3xx is returned like any status). ``watcher`` gets every socket of the exchange
    before it is used. The response owns the connection: reading its body to the end returns the
    connection to the pool, ``close()`` closes it.

    Raises:
        OpenFailed: the URL could not be prepared (``requests.InvalidURL``...) or the exchange
            failed (connect, proxy, TLS, send, read of the headers); the connection is closed.
    """
    try:
        prepared = session.prepare_request(requests.Request(method, url, headers=dict(headers), data=body))
        target_url = prepared.url or url
        env = session.merge_environment_settings(target_url, {}, True, None, None)
        adapter = session.get_adapter(target_url)
        if not isinstance(adapter, HTTPAdapter):  # pragma: no cover - new_session mounts ours
            raise requests.exceptions.InvalidSchema(f"no HTTP adapter for {target_url!r}")
        pool: Any = adapter.get_connection_with_tls_context(
            prepared, env["verify"], env["proxies"], env["cert"]
        )
        path = adapter.request_url(prepared, env["proxies"])
    except _OPEN_ERRORS as exc:
        raise OpenFailed(exc, reused=False) from exc
    send_headers = dict(prepared.headers)
    scheme = target_url.split(":", 1)[0].lower()
    tunnel = pool.proxy is not None and connection_requires_http_tunnel(pool.proxy, pool.proxy_config, scheme)
    if pool.proxy is not None and not tunnel:
        send_headers.update(pool.proxy_headers)
    return _request_on_pool(pool, path, send_headers, prepared.body, timeout, watcher, tunnel, method)


def _request_on_pool(
    pool: Any,
    path: str,
    headers: dict[str, str],
    body: Any,
    timeout: Timeout,
    watcher: SocketWatcher | None,
    tunnel: bool,
    method: str = "POST",
) -> BaseHTTPResponse:
    """Take a connection from ``pool``, attach ``watcher``, tunnel if needed, send, await headers."""
    conn = pool._get_conn()
    conn.watcher = watcher
    reused = conn.sock is not None and conn.sock is getattr(conn, "used_sock", None)
    _report(conn, conn.sock)
    try:
        conn.timeout = timeout.connect_timeout
        if tunnel and conn.is_closed:
            pool._prepare_proxy(conn)
        response: BaseHTTPResponse = pool._make_request(
            conn,
            method,
            path,
            body=body,
            headers=headers,
            timeout=timeout,
            response_conn=conn,
            preload_content=False,
            decode_content=False,
        )
    except BaseException as exc:
        conn.watcher = None
        conn.close()
        pool._put_conn(None)  # keep the pool's size: the slot becomes a fresh connection later
        if isinstance(exc, _OPEN_ERRORS):
            raise OpenFailed(exc, reused, via_proxy=pool.proxy is not None) from exc
        raise
    return response


def response_socket(response: BaseHTTPResponse) -> socket.socket | None:
    """The socket under a streamed response, or ``None`` once it was released or closed."""
    conn: Any = getattr(response, "_connection", None)
    sock = getattr(conn, "sock", None)
    return sock if isinstance(sock, socket.socket) else None


def release(response: BaseHTTPResponse) -> None:
    """Read what follows the end marker and give the connection back to the pool.

    Reads at most ``DRAIN_LIMIT`` bytes within ``DRAIN_TIMEOUT`` seconds (socket timeout set
    for the drain; urllib3 sets it again for the next request). When the body ended, urllib3
    returns the connection to the pool (``_put_conn`` detaches the watcher first); otherwise
    the caller's ``response.close()`` closes it. Never raises.
    """
    raw: Any = response
    sock = response_socket(response)
    if sock is None:
        return
    end = time.monotonic() + DRAIN_TIMEOUT
    left = DRAIN_LIMIT
    ended = False
    try:
        while left > 0 and (remaining := end - time.monotonic()) > 0:
            sock.settimeout(remaining)
            chunk = raw.read1(min(left, READ_SIZE), decode_content=True)
            if not chunk:
                ended = True
                break
            left -= len(chunk)
    except (*READ_ERRORS, RuntimeError):
        return
    if ended:
        raw.release_conn()  # a no-op when urllib3 already did it at the end of the body
