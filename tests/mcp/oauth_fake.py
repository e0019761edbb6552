"""An MCP server protected by OAuth and its authorization server, in one loopback HTTP server
(stdlib ``http.server`` in a thread), for the OAuth tests.

- ``/.well-known/oauth-protected-resource/mcp``: the protected resource metadata (its
  ``resource`` can be set to another origin).
- ``/.well-known/oauth-authorization-server``: the authorization server metadata.
- ``POST /register``, ``GET /authorize`` (redirects with a code and the state), ``POST /token``
  (authorization_code with PKCE checked, refresh_token, client_credentials with Basic auth).
- ``POST /mcp``: 401 without a valid token, 403 ``insufficient_scope`` for ``tools/call`` when
  ``needed`` scopes are missing; ``echo`` answers with the Authorization header it got when
  ``leak`` is set (a server that echoes credentials).

Every request is kept in ``seen`` as (method, path, query or form, headers)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.providers_server import LoopbackServer


class _Exchange(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> OAuthFake:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def _send(self, status: int, value: Any = None, headers: dict[str, str] | None = None) -> None:
        body = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, item in (headers or {}).items():
            self.send_header(key, item)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.fake.record("GET", parts.path, query, dict(self.headers))
        base = self.fake.url
        if parts.path == "/.well-known/oauth-protected-resource/mcp":
            resource = self.fake.resource or f"{base}/mcp"
            self._send(
                200, {"resource": resource, "authorization_servers": [base], "scopes_supported": ["read"]}
            )
        elif parts.path == "/.well-known/oauth-authorization-server":
            self._send(200, self.fake.metadata())
        elif parts.path == "/authorize":
            self.fake.challenges.append(query.get("code_challenge", ""))
            target = (
                query["redirect_uri"] + "?" + urlencode({"code": "code-1", "state": query.get("state", "")})
            )
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404 if parts.path != "/mcp" else 405)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = urlsplit(self.path).path
        if path == "/mcp":
            self._mcp(json.loads(raw or b"{}"))
            return
        form: dict[str, Any]
        if self.headers.get("Content-Type", "").startswith("application/json"):
            form = json.loads(raw or b"{}")
        else:
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        self.fake.record("POST", path, form, dict(self.headers))
        if path == "/register":
            self._send(
                201, {"client_id": "registered-client", "redirect_uris": form.get("redirect_uris", [])}
            )
        elif path == "/token":
            self._token(form)
        else:
            self._send(404)

    def _token(self, form: dict[str, Any]) -> None:
        fake = self.fake
        grant = form.get("grant_type")
        if grant == "authorization_code":
            verifier = form.get("code_verifier", "")
            digest = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            )
            if form.get("code") != "code-1" or digest != fake.challenges[-1]:
                self._send(400, {"error": "invalid_grant"})
                return
            scope = next((q.get("scope", "") for m, p, q, _ in reversed(fake.seen) if p == "/authorize"), "")
        elif grant == "refresh_token":
            if form.get("refresh_token") not in fake.refresh_tokens:
                self._send(400, {"error": "invalid_grant"})
                return
            scope = fake.scopes.get(form["refresh_token"], "")
        elif grant == "client_credentials":
            expected = "Basic " + base64.b64encode(b"robot:robot-secret-123").decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, {"error": "invalid_client"})
                return
            scope = form.get("scope", "")
        else:
            self._send(400, {"error": "unsupported_grant_type"})
            return
        self._send(200, fake.issue(scope))

    def _mcp(self, message: dict[str, Any]) -> None:
        fake = self.fake
        header = self.headers.get("Authorization", "")
        fake.record("POST", "/mcp", message, dict(self.headers))
        token = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
        hint = f'resource_metadata="{fake.url}/.well-known/oauth-protected-resource/mcp"'
        if token not in fake.valid:
            self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": f"Bearer {hint}"})
            return
        held = set(fake.valid[token].split())
        if message.get("method") == "tools/call" and not set(fake.needed.split()) <= held:
            challenge = f'Bearer error="insufficient_scope", scope="{fake.needed}", {hint}'
            self._send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge})
            return
        if "id" not in message:
            self._send(202)
            return
        if message.get("method") == "initialize":
            result: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
        elif message.get("method") == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif fake.leak:
            self._send(500, {"error": f"your header was {header}"})
            return
        else:
            result = {"content": [{"type": "text", "text": "hello"}]}
        self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


class OAuthFake(LoopbackServer):
    """The server and its authorization server (module docstring)."""

    def __init__(self, *, expires_in: int = 3600, needed: str = "", resource: str | None = None) -> None:
        super().__init__(_Exchange)
        self._server.fake = self  # type: ignore[attr-defined]
        self.expires_in = expires_in
        self.needed = needed
        self.resource = resource
        self.leak = False
        self.seen: list[tuple[str, str, dict[str, Any], dict[str, str]]] = []
        self.challenges: list[str] = []
        self.valid: dict[str, str] = {}  # access token -> its scope
        self.refresh_tokens: set[str] = set()
        self.scopes: dict[str, str] = {}
        self._count = 0
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return self.url + "/mcp"

    def metadata(self) -> dict[str, Any]:
        base = self.url
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            "scopes_supported": ["read", "write", "offline_access"],
        }

    def issue(self, scope: str) -> dict[str, Any]:
        with self._lock:
            self._count += 1
            access, refresh = f"at-{self._count}-9f8e7d6c", f"rt-{self._count}-5b4a3c2d"
        self.valid[access] = scope
        self.refresh_tokens.add(refresh)
        self.scopes[refresh] = scope
        return {
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": scope,
        }

    def record(self, method: str, path: str, data: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.seen.append((method, path, data, headers))

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return [data for _, p, data, _ in self.seen if p == path]
