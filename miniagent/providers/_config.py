"""Client settings shared by the providers: ``HTTPSettings``, API keys, local hosts, headers.

Layering: this module sits below the transport (``_http``) and the clients (``_client``); it
imports neither. ``create_client`` builds one ``HTTPSettings`` and hands it to the client, which
hands it to its ``Transport``; nothing else carries a timeout or retry setting.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from ..net.urls import connection_host
from ._retry import RetryPolicy

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "HTTPSettings",
    "base_headers",
    "is_local_url",
    "resolve_api_key",
    "withheld_key",
    "withheld_key_hint",
]

DEFAULT_READ_TIMEOUT = 600.0
"""Default ``HTTPSettings.read_timeout``: seconds of silence tolerated between two reads."""

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Default ``HTTPSettings.connect_timeout``: seconds allowed for the TCP (and TLS) connect."""

USER_AGENT = "miniagent/0.1"


@dataclass(frozen=True)
class HTTPSettings:
    """Everything that shapes the HTTP exchange of one client, in one value.

    Built once (by ``create_client`` from its keyword options, or by the caller) and passed to
    ``OpenAIChatClient(settings=...)`` / ``AnthropicClient(settings=...)``, which pass it on to
    their transport unchanged.

    Attributes:
        read_timeout: seconds of silence tolerated between two reads of a response (also while
            waiting for its headers); default 600.
        connect_timeout: seconds allowed for the TCP (and TLS) connect; default 10.
        stream_timeout: most seconds one streamed response may take from the request to its
            end (a stream that never ends, a slow drip), or ``None`` (default): no limit.
            Checked between reads, so a silent server is bounded by ``read_timeout`` alone.
            Exceeding it raises ``ProviderError`` (kind ``"stream_timeout"``, not retried).
        retry: the retry policy (``RetryPolicy``; ``RetryPolicy(max_retries=0)`` disables
            retrying). The only way to set retries.
        headers: extra HTTP headers sent with every request (they win over the defaults; the
            key header of the client is added on top).
        extra_body: extra JSON fields merged into every request body.
    """

    read_timeout: float = DEFAULT_READ_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    stream_timeout: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    headers: Mapping[str, str] = field(default_factory=dict)
    extra_body: Mapping[str, Any] = field(default_factory=dict)


def is_local_url(url: str) -> bool:
    """Whether ``url`` points at this machine, judged on the host the connection will use.

    The host is found as the request finds it (``_urls.connection_host``: ``requests``' URL
    preparation, then urllib3's parser), so ``http://%31%32%37.0.0.1`` counts as ``127.0.0.1``.
    Local: the names ``localhost`` and ``*.localhost`` (a trailing dot allowed); an IPv4 address
    in any form ``inet_aton`` accepts (``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``)
    in 127.0.0.0/8 or ``0.0.0.0``; an IPv6 address that is loopback (``[::1]``), unspecified
    (``[::]``) or IPv4-mapped onto one of those IPv4 addresses (``[::ffff:127.0.0.1]``).
    Connecting to the unspecified address (``0.0.0.0``, ``::``) reaches the local host. Other
    names are not resolved, so a name that happens to resolve to a loopback address, and this
    machine's own non-loopback addresses, do not count as local. A URL that cannot be parsed is
    not local.
    """
    host = connection_host(url)
    return host is not None and _is_local_host(host)


def _is_local_host(host: str) -> bool:
    """``host`` as ``connection_host`` gives it (lowercase, ASCII, IPv6 without brackets)."""
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if host == "localhost" or host.endswith(".localhost"):
        return True
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            return False
        mapped = address.ipv4_mapped
        if mapped is not None:
            return mapped.is_loopback or mapped.is_unspecified
        return address.is_loopback or address.is_unspecified
    if not host or not host.isascii() or host.strip() != host:
        return False
    try:
        packed = socket.inet_aton(host)  # the forms getaddrinfo() accepts for AF_INET
    except OSError:
        return False
    ipv4 = ipaddress.IPv4Address(packed)
    return ipv4.is_loopback or ipv4.is_unspecified


def resolve_api_key(api_key: str | None, env_var: str, base_url: str, provider: str) -> str | None:
    """The key to send: ``api_key``, else ``$env_var`` (only for non-local servers).

    A local server (see ``is_local_url``: ``localhost``, ``127.1``, ``0.0.0.0``, ``[::1]``...)
    needs no key, and the environment key is not sent to
    it (it is meant for the provider, not for whatever listens on localhost).

    Raises:
        ProviderError: no key for a non-local server (the text names the variable).
    """
    if api_key:
        return api_key
    if is_local_url(base_url):
        return None
    key = os.environ.get(env_var)
    if key:
        return key
    raise ProviderError(f"no {provider} API key: pass api_key=... or set {env_var}", kind="missing_key")


def withheld_key(api_key: str | None, env_var: str, base_url: str) -> str | None:
    """``env_var`` when ``resolve_api_key`` held its key back (set in the environment, no
    ``api_key`` given, a local server), else ``None``: a local gateway that wants a key then
    answers 401, 403 or a bare 500 (LiteLLM's proxy), and the error should say why."""
    if api_key or not os.environ.get(env_var) or not is_local_url(base_url):
        return None
    return env_var


def withheld_key_hint(env_var: str) -> str:
    """The words added to an HTTP 401/403/500 error of a local server that did not get the
    key in ``env_var`` (no CLI option named: the variable is the CLI's and the argument the
    library's)."""
    return (
        f"; {env_var} is set but was not sent: a server on this machine never gets the environment's "
        "provider key; if it needs one, pass api_key=... (the CLI: set MINIAGENT_API_KEY)"
    )


def base_headers(extra: Mapping[str, str] | None) -> dict[str, str]:
    """Headers every streaming request carries, plus ``extra`` (which win)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Accept-Encoding": "identity",  # no gzip: a decompressor may hold back small events
        "User-Agent": USER_AGENT,
    }
    if extra:
        headers.update(extra)
    return headers
