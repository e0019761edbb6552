"""Client settings shared by the providers: API keys, local servers, the transport."""

from __future__ import annotations

import ipaddress
import os
import socket
import unicodedata
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import ProviderError
from ._http import Transport, new_session
from ._retry import RetryPolicy

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "is_local_url",
    "make_transport",
    "resolve_api_key",
]

DEFAULT_READ_TIMEOUT = 600.0
"""Seconds of silence tolerated between two reads of a stream (also while waiting for headers)."""

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds allowed for the TCP (and TLS) connect."""

USER_AGENT = "miniagent/0.1"


def is_local_url(url: str) -> bool:
    """Whether ``url`` points at this machine, judged as the OS would connect, without DNS.

    Local: the names ``localhost`` and ``*.localhost`` (a trailing dot allowed); an IPv4 address
    in any form ``inet_aton`` accepts (``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``)
    in 127.0.0.0/8 or ``0.0.0.0``; an IPv6 address that is loopback (``[::1]``), unspecified
    (``[::]``) or IPv4-mapped onto one of those IPv4 addresses (``[::ffff:127.0.0.1]``).
    Connecting to the unspecified address (``0.0.0.0``, ``::``) reaches the local host. Other
    names are not resolved, so a name that happens to resolve to a loopback address, and this
    machine's own non-loopback addresses, do not count as local.
    """
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:  # e.g. an unbalanced "[" in the netloc
        return False
    return _is_local_host(host)


def _is_local_host(host: str) -> bool:
    # requests encodes a non-ASCII name with IDNA (UTS 46), which maps e.g. fullwidth letters
    # and digits to ASCII: NFKC and the IDNA dots approximate that.
    host = unicodedata.normalize("NFKC", host).lower()
    for dot in ("\u3002", "\uff0e", "\uff61"):
        host = host.replace(dot, ".")
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
    raise ProviderError(f"no {provider} API key: pass api_key=... or set {env_var}")


def make_transport(
    provider: str,
    *,
    api_key: str | None,
    timeout: float,
    connect_timeout: float,
    max_retries: int | None,
    retry: RetryPolicy | None,
    stream_timeout: float | None = None,
) -> Transport:
    """Build the transport of one client (its own ``requests.Session``).

    Args:
        provider: display name for error texts.
        api_key: redacted from every error text.
        timeout: read timeout, seconds.
        connect_timeout: connect timeout, seconds.
        max_retries: overrides ``retry.max_retries`` when given.
        retry: the retry policy (default ``RetryPolicy()``).
        stream_timeout: most seconds one response may take in all (``None``: no limit).
    """
    policy = retry or RetryPolicy()
    if max_retries is not None:
        policy = RetryPolicy(
            max_retries=max_retries,
            backoff_base=policy.backoff_base,
            backoff_max=policy.backoff_max,
            max_retry_after=policy.max_retry_after,
            wait=policy.wait,
        )
    return Transport(
        provider,
        new_session(),
        timeout=timeout,
        connect_timeout=connect_timeout,
        retry=policy,
        secrets=(api_key,) if api_key else (),
        stream_timeout=stream_timeout,
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
