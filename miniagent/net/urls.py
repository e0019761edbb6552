"""Base URLs and proxy URLs: checked once, judged with the parser the connection uses, shown safely.

Invariants:

- A client's base URL is ``http://`` or ``https://``, has a host, and has no user info, no
  backslash, no percent-encoded host, no query and no fragment; anything else is refused with
  ``ValueError`` when the client is built (a usage error: nothing is sent, nothing retried).
- "Which host will this reach" is answered by ``requests``' own URL preparation followed by
  urllib3's ``parse_url``: the exact steps the connection takes (IDNA, percent-decoding of
  unreserved characters...), so the local-host check and the connection cannot disagree.
- No text made here shows URL user info or query values (``display_url``); ``hide_url_secrets``
  does the same inside any error text.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import requests
from requests.models import PreparedRequest
from urllib3.util import parse_url

from .._redaction import hide_url_secrets

__all__ = ["check_base_url", "check_proxy_for", "connection_host", "display_url", "hide_url_secrets"]

_BARE_USERINFO = re.compile(r"^[^\s/?#@]*@")
_BARE_QUERY = re.compile(r"\?[^#]*")
_SCHEME = re.compile(r"(?i)^([a-z][a-z0-9+.-]*):")
_EXAMPLE = "http://127.0.0.1:8080/v1"


def display_url(url: str) -> str:
    """``url`` as it may be shown: user info and query replaced by ``***`` (also without a scheme),
    at most 200 characters."""
    shown = hide_url_secrets(url.strip())
    if "://" not in shown:
        shown = _BARE_USERINFO.sub("***@", shown)
        shown = _BARE_QUERY.sub("?***", shown)
    return shown if len(shown) <= 200 else shown[:200] + "..."


def connection_host(url: str) -> str | None:
    """The host a request to ``url`` connects to (lowercase, IPv6 without brackets), or ``None``
    when the URL cannot be prepared. Uses ``requests``' preparation and urllib3's parser."""
    try:
        prepared = PreparedRequest()
        prepared.prepare_url(url.strip(), None)
        host = parse_url(prepared.url or "").host
    except (requests.RequestException, ValueError):
        return None
    if not host:
        return None
    return host.strip("[]").lower()


def check_base_url(url: str, what: str = "base_url") -> str:
    """Return ``url`` stripped of spaces and trailing slashes, after checking it can be used.

    Args:
        url: the API root, e.g. ``http://127.0.0.1:8080/v1``.
        what: the name used in the error text (``base_url``).

    Raises:
        ValueError: no ``http://``/``https://`` scheme (the text suggests the ``http://`` form),
            another scheme, user info, a backslash, a percent-encoded host, a query or fragment,
            an invalid port, or no host. The text never shows user info or query values.
    """
    if not isinstance(url, str):
        raise ValueError(f"{what} must be a string, not {type(url).__name__}")
    url = url.strip()
    shown = display_url(url)
    _check_scheme(url, shown, what)
    if "\\" in url:
        raise ValueError(f"{what} {shown!r} contains a backslash: write the URL with '/' only")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"{what} {shown!r} is not a valid URL: use the form {_EXAMPLE}") from None
    if "@" in parts.netloc:
        raise ValueError(
            f"{what} {shown!r} contains user info (user:password@): pass the key as api_key "
            "(or MINIAGENT_API_KEY for the CLI), never in the URL"
        )
    if "%" in parts.netloc:
        raise ValueError(f"{what} {shown!r} has a percent-encoded host: write the host plainly")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ValueError(f"{what} {shown!r} has a query or fragment (?..., #...): give the API root only")
    try:
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number in range)
    except ValueError:
        raise ValueError(f"{what} {shown!r} has an invalid port (1-65535)") from None
    if not parts.hostname or connection_host(url) is None:
        raise ValueError(f"{what} {shown!r} is not a valid URL: use the form {_EXAMPLE}")
    return url.rstrip("/")


def _check_scheme(url: str, shown: str, what: str) -> None:
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match and url[match.end() :].startswith("//") else None
    if scheme is None:
        hint = f"http://{shown}" if shown and not any(c.isspace() for c in shown) else _EXAMPLE
        raise ValueError(f"{what} {shown!r} does not start with http:// or https://: write it as {hint}")
    if scheme not in ("http", "https"):
        raise ValueError(
            f"{what} {shown!r} uses the scheme {scheme}://, which is not supported: use "
            f"http:// or https:// (e.g. {_EXAMPLE})"
        )


def check_proxy_for(url: str) -> None:
    """Check the proxy the environment selects for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, ``NO_PROXY``), if any, can be parsed.

    Raises:
        ValueError: the proxy URL cannot be used (bad port, no host, backslash); the text names
            it without its user info or query.
    """
    proxies = requests.utils.get_environ_proxies(url)
    proxy = requests.utils.select_proxy(url, proxies)
    if not proxy:
        return
    shown = display_url(proxy)
    try:
        with_scheme = proxy if "://" in proxy else f"http://{proxy}"
        parsed = parse_url(with_scheme)
        urlsplit(with_scheme).port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise ValueError(f"the proxy URL from the environment ({shown!r}) cannot be parsed") from None
    if not parsed.host or "\\" in proxy:
        raise ValueError(f"the proxy URL from the environment ({shown!r}) has no valid host")
