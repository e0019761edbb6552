"""The OAuth client of one HTTP MCP endpoint: ``Authorizer`` (MCP spec 2025-11-25,
"Authorization"; OAuth 2.1 draft, RFC 7591, RFC 7636, RFC 8707, RFC 9728, RFC 7523).

Invariants:

- ``header()`` is the ``Authorization`` value of the current access token (``None`` without
  one); every request carries it. A stored token that expired is refreshed before the first
  request (``prepare``).
- ``handle(status, WWW-Authenticate)`` after a 401 refreshes the token once, else runs the
  whole authorization; after a 403 with ``insufficient_scope`` it authorizes again for the
  scopes asked for together with those held (step-up). The transport allows at most
  ``MAX_AUTHORIZATIONS`` per request, so a server that never accepts cannot loop.
- Scopes: the settings' ``scopes``; else the ``scope`` of the challenge; else the protected
  resource's ``scopes_supported``; else none (the parameter is left out). ``offline_access`` is
  added for the authorization code grant when the authorization server lists it.
- Every authorization and token request carries the ``resource`` indicator (``_oauth_meta``);
  the authorization code grant always uses PKCE with S256 and a random ``state`` that the
  redirect must return; a server whose metadata does not offer S256 is refused.
- The token endpoint's client authentication: the settings' method, else the registered
  client's, else the first the server supports that the client can do (Basic, body, JWT,
  none).
- Every secret (client secret, tokens, codes) is added to the server's ``Secrets`` as soon as
  it is known, so no error, log line or result shows it; errors are ``MCPError`` kind ``auth``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from .._json import loads
from .._log import Logger
from ._errors import MCPError
from ._oauth_meta import (
    Challenge,
    ServerAuth,
    authorization_server_urls,
    canonical,
    challenge,
    legacy_endpoints,
    resource_allowed,
    resource_metadata_urls,
    same_issuer,
)
from ._oauth_store import FileStore, MemoryStore
from ._secrets import Secrets

if TYPE_CHECKING:
    from .auth import OAuth, OpenURL

__all__ = ["Authorizer", "MAX_AUTHORIZATIONS"]

MAX_AUTHORIZATIONS = 3
EXPIRY_MARGIN_SECONDS = 30.0
HTTP_TIMEOUT = (10.0, 30.0)
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

logger = Logger("miniagent.mcp")


class Authorizer:
    """Tokens for one endpoint and how to get them (module docstring).

    Args:
        server: the server's name (errors, log lines).
        endpoint: the MCP endpoint URL.
        settings: the ``auth.OAuth`` settings.
        known: the server's secrets (tokens are added as they come).
    """

    def __init__(self, server: str, endpoint: str, settings: OAuth, known: Secrets) -> None:
        """Load what the store kept for ``endpoint``; nothing is sent yet."""
        self.server = server
        self.endpoint = endpoint
        self.settings = settings
        self.known = known
        self.store = _store(settings)
        record = self.store.load(endpoint)
        self.client: dict[str, Any] = record.get("client") or {}
        self.tokens: dict[str, Any] = record.get("tokens") or {}
        self.found: ServerAuth | None = None
        self._found_via = ""  # the resource metadata URL the discovery started from
        if isinstance(record.get("found"), dict):
            self.found = ServerAuth(**record["found"])
        self.scope = str(self.tokens.get("scope") or "")
        self._refreshed: str | None = None  # the access token a refresh was tried for
        self._http: Any = None
        for value in (settings.client_secret, self.client.get("client_secret"), *self.tokens.values()):
            known.add(value if isinstance(value, str) else None)

    # --- what the transport asks ----------------------------------------------------------------

    def header(self) -> str | None:
        """``Bearer TOKEN`` of the current access token, or ``None``."""
        token = self.tokens.get("access_token")
        return f"Bearer {token}" if isinstance(token, str) and token else None

    def prepare(self) -> None:
        """Refresh a kept access token that expired (failures leave it to the next 401)."""
        expires = self.tokens.get("expires_at")
        if isinstance(expires, (int, float)) and expires - EXPIRY_MARGIN_SECONDS < time.time():
            try:
                self._refresh()
            except MCPError as exc:
                logger.info("[%s] %s", self.server, self.known.redact(str(exc)))

    def wants(self, status: int, header: str | None) -> bool:
        """Whether an answer of ``status`` with this ``WWW-Authenticate`` asks for (more)
        authorization."""
        return status == 401 or (status == 403 and challenge(header).error == "insufficient_scope")

    def handle(self, status: int, header: str | None) -> None:
        """Get a token the answer asks for (rules: module docstring).

        Raises:
            MCPError: kind ``auth``: discovery, registration, login or the token request failed.
        """
        asked = challenge(header)
        if status == 401 and self._refresh_once():
            return
        self.authorize(asked, step_up=status == 403)

    def close(self) -> None:
        """Close the connections to the authorization server."""
        if self._http is not None:
            self._http.close()
            self._http = None

    # --- authorization --------------------------------------------------------------------------

    def authorize(self, asked: Challenge, step_up: bool = False) -> None:
        """Discover, identify the client, get a token by the configured grant, keep it."""
        found = self._discover(asked)
        scope = self._scope(asked, found, step_up)
        if self.settings.grant != "authorization_code":
            form = self._grant_form(found)
            if scope:
                form["scope"] = scope
            tokens = self._token(found, self._identity(found, None), form)
        else:
            tokens = self._authorization_code(found, scope)
        self.scope = str(tokens.get("scope") or scope)
        self._keep(tokens, found)

    def _grant_form(self, found: ServerAuth) -> dict[str, str]:
        """The form of a grant without a person: ``client_credentials``, or ``jwt_bearer`` with
        an identity assertion for this authorization server and resource."""
        if self.settings.grant == "client_credentials":
            return {"grant_type": "client_credentials"}
        assert self.settings.assertion is not None
        issuer = str(found.metadata.get("issuer") or "")
        try:
            grant = self.settings.assertion(issuer, found.resource)
        except MCPError as exc:
            raise self._error(str(exc)) from None
        self.known.add(grant)
        return {"grant_type": _JWT_BEARER, "assertion": grant}

    def _refresh_once(self) -> bool:
        token = self.tokens.get("access_token")
        if not self.tokens.get("refresh_token") or self._refreshed == token:
            return False
        self._refreshed = token if isinstance(token, str) else None
        try:
            self._refresh()
        except MCPError as exc:
            logger.info("[%s] %s", self.server, self.known.redact(str(exc)))
            return False
        return True

    def _refresh(self) -> None:
        refresh = self.tokens.get("refresh_token")
        if not isinstance(refresh, str) or self.found is None:
            raise MCPError(f"MCP server {self.server!r}: no refresh token", server=self.server, kind="auth")
        tokens = self._token(
            self.found,
            self._identity(self.found, None),
            {"grant_type": "refresh_token", "refresh_token": refresh},
        )
        tokens.setdefault("refresh_token", refresh)
        self._keep(tokens, self.found)

    def _scope(self, asked: Challenge, found: ServerAuth, step_up: bool) -> str:
        scope = self.settings.scopes or asked.scope or " ".join(found.scopes_supported)
        words = list(dict.fromkeys((self.scope.split() if step_up else []) + scope.split()))
        if (
            words
            and self.settings.grant == "authorization_code"
            and "offline_access" not in words
            and found.supports("scopes_supported", "offline_access")
        ):
            words.append("offline_access")
        return " ".join(words)

    def _authorization_code(self, found: ServerAuth, scope: str) -> dict[str, Any]:
        metadata = found.metadata
        methods = metadata.get("code_challenge_methods_supported")
        if not metadata.get("_legacy") and (not isinstance(methods, list) or "S256" not in methods):
            raise self._error("the authorization server does not offer PKCE with S256; refusing to log in")
        login, redirect_uri = self._login()
        try:
            return self._log_in(found, scope, login, redirect_uri)
        finally:
            close = getattr(login, "close", None)
            if callable(close):  # the loopback receiver stops listening, also after an error
                close()

    def _log_in(self, found: ServerAuth, scope: str, login: OpenURL, redirect_uri: str) -> dict[str, Any]:
        """Send the person to the authorization endpoint, check what comes back, exchange the code."""
        metadata = found.metadata
        client = self._identity(found, redirect_uri)
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(24)
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii"),
            "code_challenge_method": "S256",
            "resource": found.resource,
        }
        if scope:
            params["scope"] = scope
        endpoint = str(metadata.get("authorization_endpoint") or "")
        if not endpoint:
            raise self._error("the authorization server names no authorization endpoint")
        url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
        back = parse_qs(urlsplit(login(url, redirect_uri)).query)
        if back.get("error"):
            raise self._error(
                f"the login was refused: {back['error'][0]} {back.get('error_description', [''])[0]}"
            )
        if back.get("state") != [state] or not back.get("code"):
            raise self._error("the login came back without this login's state or without a code")
        code = back["code"][0]
        self.known.add(code)
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        form["code_verifier"] = verifier
        return self._token(found, client, form)

    def _login(self) -> tuple[OpenURL, str]:
        if self.settings.open_url is not None:
            port = self.settings.callback_port or 3000
            return self.settings.open_url, self.settings.redirect_uri or f"http://localhost:{port}/callback"
        from ._loopback import LoopbackLogin

        login = LoopbackLogin(self.server, self.settings.callback_port, self.settings.login_timeout)
        return login, login.redirect_uri

    # --- discovery ------------------------------------------------------------------------------

    def _discover(self, asked: Challenge) -> ServerAuth:
        if self.found is not None and asked.resource_metadata in ("", self._found_via):
            return self.found
        resource = None
        for url in resource_metadata_urls(self.endpoint, asked.resource_metadata):
            document = self._get_json(url)
            if isinstance(document, dict) and "resource" in document:
                resource = document
                break
        found = self._legacy() if resource is None else self._from_resource(resource)
        if self.settings.auth_server_metadata_url:
            document = self._get_json(self.settings.auth_server_metadata_url)
            if not isinstance(document, dict):
                raise self._error("the configured authorization server metadata cannot be read")
            found.metadata = document
        self.found, self._found_via = found, asked.resource_metadata
        return found

    def _from_resource(self, document: dict[str, Any]) -> ServerAuth:
        named = document.get("resource")
        if not isinstance(named, str) or not resource_allowed(named, self.endpoint):
            raise self._error(
                f"its protected resource metadata names another resource ({named!r}); refusing to log in"
            )
        servers = document.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise self._error("its protected resource metadata names no authorization server")
        issuer = servers[0]
        supported = document.get("scopes_supported")
        scopes = [s for s in supported if isinstance(s, str)] if isinstance(supported, list) else []
        found = ServerAuth(canonical(named), {}, scopes)
        if self.settings.auth_server_metadata_url:
            return found
        for url in authorization_server_urls(issuer):
            metadata = self._get_json(url)
            if isinstance(metadata, dict):
                if not same_issuer(metadata.get("issuer"), issuer):
                    raise self._error(f"the authorization server metadata at {url} is of another issuer")
                found.metadata = metadata
                return found
        raise self._error(f"no authorization server metadata found for {issuer}")

    def _legacy(self) -> ServerAuth:
        """A server without protected resource metadata (protocol 2025-03-26)."""
        origin = legacy_endpoints(self.endpoint)["issuer"]
        metadata = self._get_json(f"{origin}/.well-known/oauth-authorization-server")
        if not isinstance(metadata, dict):
            metadata = {**legacy_endpoints(self.endpoint), "_legacy": True}
        return ServerAuth(canonical(self.endpoint), metadata, [])

    # --- the client -----------------------------------------------------------------------------

    def _identity(self, found: ServerAuth, redirect_uri: str | None) -> dict[str, Any]:
        """The client: pre-registered, registered before, a metadata document URL, or newly
        registered (RFC 7591)."""
        settings = self.settings
        if settings.client_id:
            return {"client_id": settings.client_id, "client_secret": settings.client_secret}
        issuer = found.metadata.get("issuer")
        if self.client.get("client_id") and self.client.get("issuer") == issuer:
            return self.client
        if (
            settings.client_metadata_url
            and found.metadata.get("client_id_metadata_document_supported") is True
        ):
            return {"client_id": settings.client_metadata_url, "token_endpoint_auth_method": "none"}
        registration = found.metadata.get("registration_endpoint")
        if not isinstance(registration, str) or redirect_uri is None:
            raise self._error(
                "the authorization server offers no client registration; give a client id (oauth.clientId)"
            )
        body = {
            "client_name": settings.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
        answer = self._post(registration, json_body=body)
        client = answer if isinstance(answer, dict) and isinstance(answer.get("client_id"), str) else None
        if client is None:
            raise self._error("the client registration was refused")
        self.known.add(client.get("client_secret"))
        self.client = {**client, "issuer": issuer}
        return self.client

    def _method(self, found: ServerAuth, client: dict[str, Any]) -> str:
        chosen = self.settings.token_endpoint_auth_method or client.get("token_endpoint_auth_method")
        if isinstance(chosen, str) and chosen:
            return chosen
        supported = found.metadata.get("token_endpoint_auth_methods_supported")
        offered = supported if isinstance(supported, list) else ["client_secret_basic"]
        if client.get("client_secret"):
            return next(
                (m for m in offered if m in ("client_secret_basic", "client_secret_post")),
                "client_secret_basic",
            )
        if self.settings.private_key:
            return "private_key_jwt"
        return "none"

    # --- the token endpoint ---------------------------------------------------------------------

    def _token(self, found: ServerAuth, client: dict[str, Any], form: dict[str, str]) -> dict[str, Any]:
        endpoint = found.metadata.get("token_endpoint")
        if not isinstance(endpoint, str):
            raise self._error("the authorization server names no token endpoint")
        form = {**form, "resource": found.resource}
        headers: dict[str, str] = {}
        method = self._method(found, client)
        client_id, secret = str(client["client_id"]), client.get("client_secret")
        if method == "client_secret_basic" and secret:
            pair = f"{quote(client_id, safe='')}:{quote(str(secret), safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif method == "client_secret_post" and secret:
            form.update(client_id=client_id, client_secret=str(secret))
        elif method == "private_key_jwt":
            form.update(client_id=client_id, client_assertion_type=_ASSERTION_TYPE)
            form["client_assertion"] = self._assertion(client_id, found)
        else:
            form["client_id"] = client_id
        answer = self._post(endpoint, form=form, headers=headers)
        if not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str):
            raise self._error("the token endpoint gave no access token")
        return answer

    def _assertion(self, client_id: str, found: ServerAuth) -> str:
        """A client assertion JWT (RFC 7523) signed with ``private_key`` (extra ``jwt``)."""
        try:
            import jwt
        except ImportError:
            raise self._error(
                "private_key_jwt needs PyJWT and cryptography (pip install 'miniagent[jwt]')"
            ) from None
        key = self.settings.private_key or ""
        now = int(time.time())
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": str(found.metadata.get("issuer") or found.metadata.get("token_endpoint")),
            "iat": now,
            "exp": now + 300,
            "jti": secrets.token_urlsafe(16),
        }
        algorithm = self.settings.signing_algorithm or ("ES256" if _is_ec(key) else "RS256")
        return str(jwt.encode(claims, key, algorithm=algorithm))

    def _keep(self, tokens: dict[str, Any], found: ServerAuth) -> None:
        for value in tokens.values():
            self.known.add(value if isinstance(value, str) else None)
        kept = {
            k: v for k, v in tokens.items() if k in ("access_token", "refresh_token", "scope", "token_type")
        }
        expires = tokens.get("expires_in")
        if isinstance(expires, (int, float)) and not isinstance(expires, bool):
            kept["expires_at"] = time.time() + float(expires)
        self.tokens = kept
        record = {"client": self.client, "tokens": kept}
        record["found"] = {
            "resource": found.resource,
            "metadata": found.metadata,
            "scopes_supported": found.scopes_supported,
        }
        try:
            self.store.save(self.endpoint, record)
        except OSError as exc:
            logger.warning("[%s] the tokens could not be kept: %s", self.server, exc.strerror)

    # --- HTTP -----------------------------------------------------------------------------------

    def _session(self) -> Any:
        if self._http is None:
            from ..net.connection import new_session

            self._http = new_session()
        return self._http

    def _get_json(self, url: str) -> Any:
        """The JSON object at ``url``, or ``None`` (any error, any status but 200)."""
        import requests

        try:
            answer = self._session().get(url, headers={"Accept": "application/json"}, timeout=HTTP_TIMEOUT)
        except requests.RequestException as exc:
            logger.debug("[%s] GET %s failed: %s", self.server, url, type(exc).__name__)
            return None
        with answer:
            if answer.status_code != 200:
                return None
            try:
                return loads(answer.content)  # depth-safe (miniagent._json)
            except ValueError:
                return None

    def _post(
        self,
        url: str,
        *,
        form: dict[str, str] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """POST ``form`` (or ``json_body``) to ``url`` (no redirect followed); the JSON answer.

        Raises:
            MCPError: kind ``auth``: no connection, an error status (its ``error`` named).
        """
        import requests

        sent = {"Accept": "application/json", **(headers or {})}
        try:
            answer = self._session().post(
                url, data=form, json=json_body, headers=sent, timeout=HTTP_TIMEOUT, allow_redirects=False
            )
        except requests.RequestException as exc:
            raise self._error(f"cannot reach the authorization server ({type(exc).__name__})") from None
        with answer:
            try:
                value = loads(answer.content)  # depth-safe (miniagent._json)
            except ValueError:
                value = None
        if answer.status_code >= 300:
            said = value if isinstance(value, dict) else {}
            reason = " ".join(str(said.get(k, "")) for k in ("error", "error_description")).strip()
            raise self._error(
                f"the authorization server answered HTTP {answer.status_code}: {reason or 'no reason given'}"
            )
        return value

    def _error(self, what: str) -> MCPError:
        return MCPError(
            f"MCP server {self.server!r}: {self.known.redact(what)}", server=self.server, kind="auth"
        )


def _store(settings: OAuth) -> MemoryStore:
    if settings.store is None or settings.store is False:
        return MemoryStore()
    return FileStore(None if settings.store is True else settings.store)


def _is_ec(pem: str) -> bool:
    try:
        from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError:
        return "BEGIN EC PRIVATE KEY" in pem
    try:
        return isinstance(load_pem_private_key(pem.encode(), password=None), EllipticCurvePrivateKey)
    except ValueError:
        return False
