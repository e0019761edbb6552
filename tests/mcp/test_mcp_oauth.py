"""OAuth against a real loopback MCP server and authorization server (``tests/mcp/oauth_fake.py``):
discovery, registration, PKCE login, the resource indicator, kept and refreshed tokens, step-up,
client credentials, a mismatched resource, and tokens that never reach texts or logs."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from miniagent.mcp import HTTPMCPServer, MCPError, load_mcp_config
from miniagent.mcp._loopback import LoopbackLogin
from miniagent.mcp.auth import OAuth, fetch_redirect
from tests.mcp.oauth_fake import OAuthFake

requests = pytest.importorskip("requests")
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def logged() -> Iterator[list[str]]:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep(logging.DEBUG)
    logger = logging.getLogger("miniagent.mcp")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _auth(store: Path | None, **settings: object) -> OAuth:
    return OAuth(open_url=fetch_redirect, store=store, **settings)  # type: ignore[arg-type]


def test_login_with_registration_pkce_and_the_resource_indicator(tmp_path: Path) -> None:
    with OAuthFake() as fake, HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(tmp_path)) as server:
        assert server.call_tool("echo").content == "hello"
    registered = fake.requests_to("/register")[0]
    assert registered["grant_types"] == ["authorization_code", "refresh_token"]
    asked = fake.requests_to("/authorize")[0]
    assert asked["client_id"] == "registered-client"
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["resource"] == fake.endpoint  # RFC 8707, from the resource metadata
    assert asked["scope"] == "read offline_access"  # scopes_supported, offline_access offered
    token = fake.requests_to("/token")[0]
    assert token["resource"] == fake.endpoint and token["redirect_uri"] == asked["redirect_uri"]
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) in (0o700, 0o755)  # made earlier by pytest


def test_kept_tokens_are_used_by_the_next_run_and_refreshed_when_expired(tmp_path: Path) -> None:
    store = tmp_path / "tokens"
    with OAuthFake(expires_in=0) as fake:
        with HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(store)) as server:
            server.ping()
        with HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(store)) as server:
            server.ping()
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert len(fake.requests_to("/authorize")) == 1  # the second run logged in with no one
    grants = [form["grant_type"] for form in fake.requests_to("/token")]
    assert grants == ["authorization_code", "refresh_token"]  # expired: refreshed at the start


def test_a_401_with_a_refresh_token_refreshes_before_it_logs_in(tmp_path: Path) -> None:
    with OAuthFake() as fake, HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(tmp_path)) as server:
        server.ping()
        fake.valid.clear()  # the server forgets every access token
        server.ping()
    assert [form["grant_type"] for form in fake.requests_to("/token")] == [
        "authorization_code",
        "refresh_token",
    ]
    assert len(fake.requests_to("/authorize")) == 1


def test_insufficient_scope_steps_up_with_the_scopes_held_and_asked(tmp_path: Path) -> None:
    fake = OAuthFake(needed="read write")
    with fake, HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(tmp_path)) as server:
        assert server.call_tool("echo").content == "hello"
    scopes = [form.get("scope") for form in fake.requests_to("/authorize")]
    assert scopes == ["read offline_access", "read offline_access write"]


def test_client_credentials_for_unattended_runs(tmp_path: Path) -> None:
    settings = OAuth(
        grant="client_credentials", client_id="robot", client_secret="robot-secret-123", store=None
    )
    with OAuthFake() as fake, HTTPMCPServer(fake.endpoint, name="cron", auth=settings) as server:
        assert server.call_tool("echo").content == "hello"
    assert fake.requests_to("/authorize") == [] and fake.requests_to("/register") == []
    token = fake.requests_to("/token")[0]
    assert token["grant_type"] == "client_credentials" and token["resource"] == fake.endpoint
    assert "robot-secret-123" not in repr(settings)


def test_resource_metadata_naming_another_resource_is_refused(tmp_path: Path) -> None:
    with OAuthFake(resource="https://elsewhere.example/mcp") as fake, pytest.raises(MCPError) as caught:
        HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(tmp_path)).start()
    assert caught.value.kind == "auth"
    assert "names another resource" in str(caught.value)
    assert fake.requests_to("/authorize") == []


def test_tokens_never_reach_errors_or_logs(tmp_path: Path, logged: list[str]) -> None:
    with OAuthFake() as fake, HTTPMCPServer(fake.endpoint, name="safe", auth=_auth(tmp_path)) as server:
        fake.leak = True  # the server echoes the Authorization header in an error body
        result = server.tools()[0].execute({}, None)
        tokens = list(fake.valid) + list(fake.refresh_tokens)
    assert result.is_error and "your header was Bearer ***" in result.content
    for text in [result.content, *logged]:
        assert not any(token in text for token in tokens)


def test_the_loopback_login_returns_where_the_browser_came_back(tmp_path: Path) -> None:
    with OAuthFake() as fake:
        login = LoopbackLogin("safe", interactive=True, opener=lambda url: _browser(url))
        url = f"{fake.url}/authorize?redirect_uri={login.redirect_uri}&state=s-1"
        back = login(url, login.redirect_uri)
    assert back == f"{login.redirect_uri}?code=code-1&state=s-1"


def _browser(url: str) -> None:
    threading.Thread(target=lambda: requests.get(url, timeout=10), daemon=True).start()


def test_the_loopback_login_without_a_terminal_refuses_at_once() -> None:
    login = LoopbackLogin("safe")  # pytest's stdin and stderr are no terminal
    with pytest.raises(MCPError) as caught:
        login("http://127.0.0.1:9/authorize", login.redirect_uri)
    assert caught.value.kind == "auth" and "no terminal" in str(caught.value)


def test_the_oauth_fields_of_a_config_file(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    config = tmp_path / ".mcp.json"
    entry = {
        "type": "http",
        "url": "https://example.com/mcp",
        "oauth": {
            "clientId": "cli",
            "clientSecret": "${MY_OAUTH_SECRET}",
            "callbackPort": 8123,
            "scopes": "read write",
            "grantType": "client_credentials",
            "privateKeyFile": "key.pem",
            "tokenStore": False,
        },
    }
    config.write_text(
        json.dumps({"mcpServers": {"remote": entry, "plain": {"url": "https://example.com/x"}}})
    )
    os.environ["MY_OAUTH_SECRET"] = "s3cret-value-1"
    try:
        servers = load_mcp_config(config)
    finally:
        del os.environ["MY_OAUTH_SECRET"]
    auth = servers["remote"].auth  # type: ignore[attr-defined]
    assert (auth.client_id, auth.client_secret, auth.callback_port) == ("cli", "s3cret-value-1", 8123)
    assert (auth.scopes, auth.grant, auth.store) == ("read write", "client_credentials", None)
    assert auth.private_key.startswith("-----BEGIN")
    assert servers["plain"].auth == OAuth()  # type: ignore[attr-defined]
    entry["oauth"] = {"callbackPort": "80"}
    config.write_text(json.dumps({"mcpServers": {"remote": entry}}))
    with pytest.raises(MCPError) as caught:
        load_mcp_config(config)
    assert "oauth.callbackPort must be a port number" in str(caught.value)
