"""OAuth for HTTP MCP servers (MCP spec 2025-11-25, "Authorization"): the settings ``OAuth``.

Usage::

    from miniagent.mcp import HTTPMCPServer
    from miniagent.mcp.auth import OAuth

    server = HTTPMCPServer("https://example.com/mcp", auth=OAuth())                # a person logs in
    robot = HTTPMCPServer(url, auth=OAuth(grant="client_credentials", client_id="ci",
                                           client_secret=os.environ["CI_SECRET"]))  # cron

- ``grant="authorization_code"`` (default): PKCE (S256), a browser sent to the authorization
  server and back to a loopback redirect (``_loopback``), or the application's ``open_url``.
- ``grant="client_credentials"``: no person; the client authenticates with its secret (HTTP
  Basic or in the body) or a JWT signed with ``private_key`` (``private_key_jwt``, RFC 7523;
  needs the ``jwt`` extra: PyJWT with cryptography).
- ``grant="jwt_bearer"``: enterprise-managed authorization (SEP-990): ``assertion(issuer,
  resource)`` gets an identity assertion grant (ID-JAG) from the enterprise's identity provider
  (``id_jag_exchange`` does the RFC 8693 token exchange), which the authorization server
  exchanges for an access token (RFC 7523 ``jwt-bearer``); no person, no browser.
- The client's identity: ``client_id`` (pre-registered, with ``client_secret`` when it has one);
  else ``client_metadata_url`` (a client ID metadata document) where the authorization server
  supports them; else dynamic client registration (RFC 7591), kept with the tokens.
- Tokens (and a registered client) are kept in ``store``: ``True`` the user's state folder
  (``$XDG_STATE_HOME/miniagent/mcp-auth``, files ``0600``), a folder, or ``None`` for memory
  only; an expired access token is refreshed with its refresh token.
- Tokens and secrets never appear in errors, logs or results (the server's ``Secrets``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Assertion", "OAuth", "OpenURL", "fetch_redirect", "id_jag_exchange"]

OpenURL = Callable[[str, str], str]
"""The application's login: ``(authorization_url, redirect_uri) -> the URL the browser was
redirected to`` (holding ``code`` and ``state``, or ``error``)."""

Assertion = Callable[[str, str], str]
"""An identity assertion source: ``(authorization server issuer, resource) -> an ID-JAG``."""

GRANTS = ("authorization_code", "client_credentials", "jwt_bearer")
_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@dataclass(frozen=True)
class OAuth:
    """How to authorize with an HTTP MCP server (see the module docstring).

    Args:
        grant: ``"authorization_code"``, ``"client_credentials"`` or ``"jwt_bearer"``.
        client_id: a pre-registered client id, or ``None``.
        client_secret: its secret, or ``None`` (a public client).
        client_metadata_url: an HTTPS URL of this client's metadata document, used as its
            client id where the authorization server supports that (``None``: not used).
        scopes: space-separated scopes that replace the discovered ones, or ``None``.
        callback_port: the loopback redirect's port (``http://localhost:PORT/callback``), or
            ``None`` for any free one.
        redirect_uri: the redirect URI when ``open_url`` is given (default
            ``http://localhost:3000/callback``, or the callback port's).
        auth_server_metadata_url: the authorization server's metadata URL, skipping discovery.
        token_endpoint_auth_method: ``"client_secret_basic"``, ``"client_secret_post"``,
            ``"private_key_jwt"`` or ``"none"``; ``None``: chosen from what the server supports.
        private_key: a PEM private key for ``private_key_jwt``.
        signing_algorithm: its JWS algorithm (default ``ES256`` for EC keys, ``RS256`` else).
        open_url: the application's login (``OpenURL``); ``None``: the loopback redirect.
        assertion: the ID-JAG source of the ``jwt_bearer`` grant (``Assertion``).
        store: where tokens are kept (``True``: the state folder; a folder; ``None``: memory).
        client_name: the ``client_name`` given to registration.
        login_timeout: seconds a person has to log in.

    Raises:
        ValueError: an unknown ``grant`` or method, ``client_credentials`` or ``jwt_bearer``
            without a client id, ``jwt_bearer`` without an ``assertion``.
    """

    grant: str = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    scopes: str | None = None
    callback_port: int | None = None
    redirect_uri: str | None = None
    auth_server_metadata_url: str | None = None
    token_endpoint_auth_method: str | None = None
    private_key: str | None = None
    signing_algorithm: str | None = None
    open_url: OpenURL | None = None
    assertion: Assertion | None = None
    store: bool | str | os.PathLike[str] | None = True
    client_name: str = "miniagent"
    login_timeout: float = 300.0

    def __post_init__(self) -> None:
        """Check the settings (``Raises`` above)."""
        if self.grant not in GRANTS:
            raise ValueError(f"grant must be one of {', '.join(GRANTS)}, got {self.grant!r}")
        methods = (None, "client_secret_basic", "client_secret_post", "private_key_jwt", "none")
        if self.token_endpoint_auth_method not in methods:
            raise ValueError(f"unknown token_endpoint_auth_method {self.token_endpoint_auth_method!r}")
        if self.grant != "authorization_code" and not self.client_id:
            raise ValueError(f"{self.grant} needs a client_id")
        if self.grant == "jwt_bearer" and self.assertion is None:
            raise ValueError("jwt_bearer needs an assertion (e.g. id_jag_exchange(...))")

    def __repr__(self) -> str:
        """The settings without the secret and the key."""
        secret = "***" if self.client_secret else None
        key = "***" if self.private_key else None
        shown = f"grant={self.grant!r}, client_id={self.client_id!r}, client_secret={secret}"
        shown += f", private_key={key}"
        return f"OAuth({shown})"


def fetch_redirect(authorization_url: str, redirect_uri: str) -> str:
    """An ``OpenURL`` for tests and headless authorization servers that log in without a
    person: GET the authorization URL (no redirect followed) and return the ``Location`` it
    answers with.

    Raises:
        MCPError: kind ``auth``: the answer is not a redirect.
    """
    from ..net.connection import new_session
    from ._errors import MCPError

    with new_session() as http:
        answer = http.get(authorization_url, allow_redirects=False, timeout=(10, 30))
        location = answer.headers.get("location")
        answer.close()
    if answer.status_code not in (301, 302, 303, 307, 308) or not location:
        raise MCPError(
            f"the authorization endpoint answered HTTP {answer.status_code}, not a redirect", kind="auth"
        )
    return str(location)


def id_jag_exchange(token_endpoint: str, id_token: str, client_id: str) -> Assertion:
    """An ``Assertion`` that exchanges the user's ID token at the identity provider's
    ``token_endpoint`` for an identity assertion grant (RFC 8693 token exchange, SEP-990).

    Args:
        token_endpoint: the identity provider's token endpoint.
        id_token: the user's ID token from that provider (a secret: never shown).
        client_id: this client's id at the identity provider.

    Returns:
        ``assertion(issuer, resource)``, which raises ``MCPError`` (kind ``auth``) when the
        identity provider refuses.
    """

    def assertion(issuer: str, resource: str) -> str:
        from .._json import loads
        from ..net.connection import new_session
        from ._errors import MCPError

        form = {
            "grant_type": _TOKEN_EXCHANGE,
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": issuer,
            "resource": resource,
            "client_id": client_id,
        }
        with new_session() as http:
            answer = http.post(token_endpoint, data=form, timeout=(10, 30), allow_redirects=False)
            try:
                grant = loads(answer.content).get("access_token")  # depth-safe (miniagent._json)
            except (ValueError, AttributeError):
                grant = None
            answer.close()
        if answer.status_code != 200 or not isinstance(grant, str):
            raise MCPError(
                f"the identity provider refused the token exchange (HTTP {answer.status_code})", kind="auth"
            )
        return grant

    return assertion
