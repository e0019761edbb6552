"""Where an MCP server's authorization lives: ``WWW-Authenticate``, protected resource metadata
(RFC 9728) and authorization server metadata (RFC 8414, OpenID Connect Discovery), with the
fallbacks of MCP spec 2025-11-25 "Authorization / Authorization Server Discovery" and the
2025-03-26 revision.

Order of the look-ups (each one an HTTP GET, the first JSON object answer wins):

- Protected resource metadata: the ``resource_metadata`` URL of the ``WWW-Authenticate``
  answer; else ``/.well-known/oauth-protected-resource`` + the endpoint's path; else that at
  the root of the server's origin.
- Its ``resource`` must name the endpoint: same scheme, host and port, and a path the
  endpoint's path starts with (else the server could send the user's login to another
  resource). It becomes the ``resource`` indicator (RFC 8707) of every authorization and token
  request; without metadata the endpoint itself is.
- Authorization server metadata, for an issuer with a path ``/P``:
  ``/.well-known/oauth-authorization-server/P``, ``/.well-known/openid-configuration/P``,
  ``/P/.well-known/openid-configuration``; for one without a path
  ``/.well-known/oauth-authorization-server`` then ``/.well-known/openid-configuration``. Its
  ``issuer`` must be the issuer asked for (a trailing ``/`` aside).
- No protected resource metadata (a 2025-03-26 server): the issuer is the endpoint's origin; its
  metadata found at ``/.well-known/oauth-authorization-server`` is taken as it is, and without
  any the endpoints are ``/authorize``, ``/token`` and ``/register`` there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "Challenge",
    "ServerAuth",
    "authorization_server_urls",
    "challenge",
    "legacy_endpoints",
    "resource_allowed",
    "resource_metadata_urls",
]

_PARAM = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True)
class Challenge:
    """What a 401 or 403 answer's ``WWW-Authenticate: Bearer ...`` says (RFC 6750 section 3).

    Attributes:
        error: e.g. ``"invalid_token"``, ``"insufficient_scope"``, or ``""``.
        scope: the scopes the request needs (space-separated), or ``""``.
        resource_metadata: the URL of the protected resource metadata (RFC 9728), or ``""``.
    """

    error: str = ""
    scope: str = ""
    resource_metadata: str = ""


def challenge(header: str | None) -> Challenge:
    """Parse a ``WWW-Authenticate`` value (its ``Bearer`` challenge's parameters)."""
    if not header:
        return Challenge()
    start = header.lower().find("bearer")
    text = header[start + 6 :] if start >= 0 else header
    found = {
        m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _PARAM.finditer(text)
    }
    return Challenge(
        error=found.get("error", ""),
        scope=found.get("scope", ""),
        resource_metadata=found.get("resource_metadata", ""),
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def resource_metadata_urls(endpoint: str, hinted: str = "") -> list[str]:
    """Where to look for the protected resource metadata of ``endpoint``, in order."""
    urls = [hinted] if hinted else []
    path = urlsplit(endpoint).path.rstrip("/")
    if path:
        urls.append(f"{_origin(endpoint)}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{_origin(endpoint)}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def authorization_server_urls(issuer: str) -> list[str]:
    """Where to look for the metadata of the authorization server ``issuer``, in order."""
    origin = _origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def legacy_endpoints(endpoint: str) -> dict[str, Any]:
    """The 2025-03-26 default endpoints at the origin of ``endpoint`` (no metadata at all)."""
    origin = _origin(endpoint)
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}/authorize",
        "token_endpoint": f"{origin}/token",
        "registration_endpoint": f"{origin}/register",
    }


def canonical(url: str) -> str:
    """``url`` as a resource indicator: lower-case scheme and host, no fragment, no trailing
    ``/`` (RFC 8707, MCP spec "Canonical Server URI")."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def resource_allowed(resource: str, endpoint: str) -> bool:
    """Whether the metadata's ``resource`` names ``endpoint`` (same origin, a path prefix)."""
    want, have = urlsplit(canonical(endpoint)), urlsplit(canonical(resource))
    if (want.scheme, want.netloc) != (have.scheme, have.netloc):
        return False
    prefix = have.path.rstrip("/")
    return want.path == prefix or want.path.startswith(prefix + "/") or not prefix


def same_issuer(found: Any, asked: str) -> bool:
    """Whether the metadata's ``issuer`` is the one asked for (a trailing ``/`` aside)."""
    return isinstance(found, str) and found.rstrip("/") == asked.rstrip("/")


@dataclass
class ServerAuth:
    """What discovery found for one MCP endpoint.

    Attributes:
        resource: the resource indicator (RFC 8707) to send.
        metadata: the authorization server's metadata (``authorization_endpoint``,
            ``token_endpoint``, ``registration_endpoint``, ``scopes_supported``...).
        scopes_supported: the protected resource's ``scopes_supported`` (may be empty).
    """

    resource: str
    metadata: dict[str, Any] = field(default_factory=dict)
    scopes_supported: list[str] = field(default_factory=list)

    def supports(self, key: str, value: str) -> bool:
        """Whether the metadata's list ``key`` holds ``value``."""
        listed = self.metadata.get(key)
        return isinstance(listed, list) and value in listed
