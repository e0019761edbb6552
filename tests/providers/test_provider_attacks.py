"""Keys and credentials hold against an attacker (issue 14, kinds 1-3), on loopback only.

1. A redirect from the base URL to another origin never carries a key there: redirects are not
   followed, the client raises a clear ``ProviderError`` (kind ``"redirect"``).
2. Base URLs that parse differently for "is this host local" and for the connection (a
   backslash, a percent-encoded host, user info) are refused; the local check uses the host the
   connection will use.
3. No error text shows URL user info or query values (base URL, proxy from the environment,
   redirect target); a URL that cannot be used is a ``ValueError`` at once, never retried.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from providers_server import ProviderServer, RecordingWait, Reply, first_text_event, request, run

from miniagent import ProviderError
from miniagent.providers import (
    AnthropicClient,
    HTTPSettings,
    OpenAIChatClient,
    RetryPolicy,
    check_base_url,
    create_client,
)
from miniagent.providers._config import is_local_url

pytestmark = pytest.mark.timeout(30)

KEY = "sk-ENV-KEY-0123456789abcdef"
SECRET = "SECRET-8f1e2d"


def _client(provider: str, base: str, **kwargs: Any) -> Any:
    settings = HTTPSettings(retry=RetryPolicy(max_retries=2, backoff_base=0.0, wait=RecordingWait()))
    if provider == "openai":
        return OpenAIChatClient("m", f"{base}/v1", settings=settings, **kwargs)
    return AnthropicClient("m", base, settings=settings, **kwargs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


# --- 1. redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_origin_gets_no_key(provider: str, status: int) -> None:
    with ProviderServer(Reply([first_text_event(provider)])) as elsewhere:
        target = elsewhere.url.replace("127.0.0.1", "localhost") + f"/v1/messages?token={SECRET}"
        with ProviderServer(Reply([], status=status, headers={"Location": target})) as server:
            client = _client(provider, server.url, api_key=KEY)
            with pytest.raises(ProviderError) as info:
                run(client.stream(request()))
            client.close()
        assert elsewhere.requests == []  # nothing, and so no key, reached the other origin
        assert len(server.requests) == 1  # not retried
    error = info.value
    assert (error.status, error.kind, error.retryable) == (status, "redirect", False)
    assert "redirects to http://localhost:" in str(error) and "not followed" in str(error)
    assert "/v1/messages?***; redirects are not followed" in str(error)  # the sentence ends there
    assert SECRET not in str(error) and KEY not in str(error)


def test_a_redirect_to_the_same_origin_is_not_followed_either() -> None:
    with ProviderServer(Reply([], status=307, headers={"Location": "/v1/other"})) as server:
        client = _client("anthropic", server.url, api_key=KEY)
        with pytest.raises(ProviderError, match="HTTP 307: the server redirects to /v1/other"):
            run(client.stream(request()))
        assert len(server.requests) == 1


# --- 2. URLs parsed two ways --------------------------------------------------------------------


@pytest.mark.usefixtures("env_keys")
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("form", "why"),
    [
        ("http://127.0.0.1:{port}\\@example.com", "backslash"),
        ("http://%31%32%37.0.0.1:{port}", "percent-encoded host"),
        ("http://example.com@127.0.0.1:{port}", "user info"),
        ("http://user:" + SECRET + "@127.0.0.1:{port}", "user info"),
    ],
)
def test_base_urls_that_parse_two_ways_are_refused(provider: str, form: str, why: str) -> None:
    with ProviderServer(Reply([first_text_event(provider)])) as server:
        port = server.url.rsplit(":", 1)[1]
        base = form.format(port=port)
        with pytest.raises(ValueError, match=why) as info:
            create_client(provider, "m", base + ("/v1" if provider == "openai" else ""))
        assert server.requests == []
    assert SECRET not in str(info.value)


def test_the_local_check_uses_the_host_the_connection_uses() -> None:
    # requests decodes %31%32%37 to 127 before connecting: the check sees the same host.
    assert is_local_url("http://%31%32%37.0.0.1:1/v1")
    assert is_local_url("http://127.0.0.1:1\\@example.com")
    assert not is_local_url("http://example.com:1\\@127.0.0.1")


# --- 3. credentials in error texts; usage errors are not retried -----------------------------------


@pytest.mark.usefixtures("env_keys")
@pytest.mark.parametrize(
    "base",
    [
        f"http://user:{SECRET}@127.0.0.1:80800/v1",
        f"http://127.0.0.1:{{port}}/v1?token={SECRET}",
        f"http://127.0.0.1:{{port}}/v1?a=1&key={SECRET}#x",
        f"ftp://user:{SECRET}@127.0.0.1/v1",
        f"127.0.0.1:{{port}}/v1?token={SECRET}",
    ],
)
def test_errors_never_show_user_info_or_query_values(base: str) -> None:
    wait = RecordingWait()
    with ProviderServer(Reply([first_text_event("openai")])) as server:
        url = base.format(port=server.url.rsplit(":", 1)[1])
        with pytest.raises(ValueError) as info:
            create_client("openai", "m", url, retry=RetryPolicy(max_retries=3, wait=wait))
        assert server.requests == []
    assert SECRET not in str(info.value)
    assert wait.delays == []  # refused at once, never retried


@pytest.mark.usefixtures("env_keys")
@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"])
def test_a_bad_proxy_url_is_refused_without_its_password(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, f"http://u:{SECRET}@127.0.0.1:99999")
    scheme = "http" if variable == "HTTP_PROXY" else "https"
    with pytest.raises(ValueError, match="proxy") as info:
        create_client("openai", "m", f"{scheme}://api.example.test/v1")
    assert SECRET not in str(info.value)


@pytest.mark.usefixtures("env_keys")
def test_a_connection_error_through_a_proxy_does_not_show_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://u:{SECRET}@127.0.0.1:{_free_port()}")
    client = _client("openai", "http://api.example.test", api_key=KEY)
    with pytest.raises(ProviderError) as info:
        run(client.stream(request()))
    assert "through the proxy" in str(info.value) and "api.example.test" in str(info.value)
    assert SECRET not in str(info.value) and KEY not in str(info.value)


# --- URLs a new user types (issue 20 item 3): a clear error that suggests the http:// form -------


@pytest.mark.usefixtures("env_keys")
@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("127.0.0.1:{port}/v1", "write it as http://127.0.0.1:{port}/v1"),
        ("localhost:{port}/v1", "write it as http://localhost:{port}/v1"),
        ("not a url", "does not start with http:// or https://"),
        ("ftp://127.0.0.1:{port}/v1", "scheme ftp://.* not supported: use http:// or https://"),
        ("file:///etc/passwd", "scheme file://.* not supported"),
        ("http://", "not a valid URL"),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_base_url_without_http_is_a_clear_error_never_retried(
    provider: str, base: str, expected: str
) -> None:
    wait = RecordingWait()
    with ProviderServer(Reply([first_text_event(provider)])) as server:
        port = server.url.rsplit(":", 1)[1]
        with pytest.raises(ValueError, match=expected.format(port=port)):
            create_client(provider, "m", base.format(port=port), retry=RetryPolicy(wait=wait))
        assert server.requests == []
    assert wait.delays == []


def test_check_base_url_is_public_and_returns_the_root() -> None:
    assert check_base_url(" http://127.0.0.1:8080/v1/ ") == "http://127.0.0.1:8080/v1"
    assert check_base_url("HTTPS://api.openai.com/v1") == "HTTPS://api.openai.com/v1"
    with pytest.raises(ValueError, match="http://"):
        check_base_url("127.0.0.1:8080/v1")
