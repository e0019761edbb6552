"""Transport behaviour shared by both clients: retries, errors, secrets, cancel, latency."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from freezegun import freeze_time
from providers_server import (
    ProviderServer,
    RecordingWait,
    Reply,
    first_text_event,
    fixture,
    request,
    run,
    sse,
)

from miniagent import ProviderError, TextEvent
from miniagent.providers import (
    AnthropicClient,
    HTTPSettings,
    OpenAIChatClient,
    RetryPolicy,
    create_client,
)
from miniagent.providers import ProviderError as ReexportedProviderError
from miniagent.providers._retry import retry_after_seconds

pytestmark = pytest.mark.timeout(30)

TEXT = fixture("openai-text.sse")
KEY = "sk-secret-KEY-1234567890"


def openai(server: ProviderServer, wait: RecordingWait | None = None, **kwargs: Any) -> OpenAIChatClient:
    policy = RetryPolicy(
        max_retries=kwargs.pop("max_retries", 3), backoff_base=0.0, wait=wait or RecordingWait()
    )
    return OpenAIChatClient("m", f"{server.url}/v1", settings=HTTPSettings(retry=policy, **kwargs))


def error_reply(status: int, body: bytes, **headers: str) -> Reply:
    return Reply([body], status=status, content_type="application/json", headers=headers)


# --- retries -------------------------------------------------------------------------------------


def test_500_three_times_then_success() -> None:
    err = error_reply(500, b'{"error": {"message": "boom", "type": "server_error"}}')
    wait = RecordingWait()
    with ProviderServer(err, err, err, Reply([TEXT])) as server:
        outcome = run(openai(server, wait).stream(request()))
        assert len(server.requests) == 4
    assert outcome.text.startswith("I'm unable")
    assert len(wait.delays) == 3


def test_retries_exhausted_raise_the_last_error() -> None:
    err = error_reply(
        529, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    )
    wait = RecordingWait()
    with ProviderServer(err) as server:
        with pytest.raises(ProviderError, match="Overloaded") as info:
            run(openai(server, wait, max_retries=2).stream(request()))
        assert len(server.requests) == 3
    assert info.value.status == 529 and info.value.retryable
    assert info.value.kind == "overloaded_error"


def test_backoff_grows_with_jitter() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=8.0)
    for attempt, nominal in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 8.0]):
        delay = policy.delay(attempt)
        assert 0.75 * nominal <= delay <= nominal


def test_429_retry_after_seconds_is_honoured() -> None:
    wait = RecordingWait()
    limited = error_reply(
        429, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}', **{"Retry-After": "1"}
    )
    with ProviderServer(limited, Reply([TEXT])) as server:
        run(openai(server, wait).stream(request()))
    assert wait.delays == [1.0]


def test_429_retry_after_http_date_is_honoured() -> None:
    wait = RecordingWait()
    limited = error_reply(429, b"{}", **{"Retry-After": "Wed, 21 Oct 2026 07:28:07 GMT"})
    with freeze_time("2026-10-21 07:28:00"), ProviderServer(limited, Reply([TEXT])) as server:
        run(openai(server, wait).stream(request()))
    assert wait.delays == [7.0]


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "2.5"}) == 2.5
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    with freeze_time("2026-10-21 07:28:00"):
        assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2026 07:27:00 GMT"}) == 0
    # an absurd Retry-After is replaced by the computed backoff
    assert RetryPolicy(backoff_base=0.5).delay(0, 3600.0) <= 0.5


def test_real_wait_is_on_the_cancel_event() -> None:
    """The default wait returns as soon as cancel is set; the stream then ends quietly."""
    cancel = threading.Event()
    limited = error_reply(503, b"{}", **{"Retry-After": "20"})
    with ProviderServer(limited) as server:
        client = OpenAIChatClient("m", f"{server.url}/v1")
        threading.Timer(0.1, cancel.set).start()
        start = time.perf_counter()
        outcome = run(client.stream(request(cancel=cancel)))
        elapsed = time.perf_counter() - start
    assert outcome.events == [] and elapsed < 2.0


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    with ProviderServer(error_reply(status, b'{"error": {"message": "nope"}}')) as server:
        with pytest.raises(ProviderError, match="nope") as info:
            run(openai(server).stream(request()))
        assert len(server.requests) == 1
    assert info.value.status == status and not info.value.retryable


def test_x_should_retry_header_overrides() -> None:
    err = error_reply(400, b"{}", **{"x-should-retry": "true"})
    with ProviderServer(err, Reply([TEXT])) as server:
        run(openai(server).stream(request()))
        assert len(server.requests) == 2


def test_no_retry_after_the_first_event() -> None:
    cut = sse({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})  # then the connection ends
    with ProviderServer(Reply([cut]), Reply([TEXT])) as server:
        seen = []
        with pytest.raises(ProviderError, match="ended before") as info:
            for event in openai(server).stream(request()):
                seen.append(event)
        assert len(server.requests) == 1
    assert info.value.retryable
    assert seen == [TextEvent("Hel")]


def test_premature_end_before_the_first_event_is_retried() -> None:
    with ProviderServer(Reply([b": keep-alive\n\n"]), Reply([TEXT])) as server:
        outcome = run(openai(server).stream(request()))
        assert len(server.requests) == 2
    assert outcome.text.startswith("I'm unable")


def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    wait = RecordingWait()
    client = OpenAIChatClient(
        "m",
        f"http://127.0.0.1:{port}/v1",
        settings=HTTPSettings(retry=RetryPolicy(max_retries=2, backoff_base=0.0, wait=wait)),
    )
    with pytest.raises(ProviderError) as info:
        run(client.stream(request()))
    expected = f"OpenAI: cannot connect to 127.0.0.1:{port} (connection refused) (after 2 retries)"
    assert str(info.value) == expected
    assert info.value.retryable and info.value.status is None
    assert len(wait.delays) == 2


# --- connection error texts: one line, host:port and the root cause, no urllib3 internals -------


def _no_retry_error(url: str, **kwargs: Any) -> ProviderError:
    settings = HTTPSettings(retry=RetryPolicy(max_retries=0), **kwargs)
    client = OpenAIChatClient("m", url, api_key=KEY, settings=settings)
    with pytest.raises(ProviderError) as info:
        run(client.stream(request()))
    text = str(info.value)
    assert info.value.retryable and info.value.status is None
    assert "\n" not in text and KEY not in text and KEY not in repr(info.value.args)
    for internal in ("urllib3", "Pool", "Max retries", "object at 0x", "Caused by"):
        assert internal not in text, text
    return info.value


def test_connection_error_name_not_resolved() -> None:
    error = _no_retry_error("http://no-such-host.invalid/v1")
    assert str(error) == "OpenAI: cannot connect to no-such-host.invalid:80 (name not resolved)"


def test_connection_error_connect_timeout() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):  # fills the backlog: SYNs are dropped
            error = _no_retry_error(f"http://127.0.0.1:{port}/v1", connect_timeout=0.3)
    assert str(error) == f"OpenAI: cannot connect to 127.0.0.1:{port} (timed out after 0.3 s)"


def test_connection_error_tls_to_a_plain_http_server() -> None:
    with ProviderServer(Reply([TEXT])) as server:
        url = server.url.replace("http://", "https://")
        error = _no_retry_error(f"{url}/v1")
    assert str(error).startswith(f"OpenAI: cannot connect to {url[8:]} (TLS error: ")


def test_connection_error_tls_certificate_not_accepted(tmp_path: Any) -> None:
    import shutil
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with conn, contextlib.suppress(OSError, ssl.SSLError):
                context.wrap_socket(conn, server_side=True).recv(1)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        error = _no_retry_error(f"https://127.0.0.1:{port}/v1")
        thread.join(5)
    assert str(error) == (
        f"OpenAI: cannot connect to 127.0.0.1:{port} (TLS certificate not accepted: self-signed certificate)"
    )


def test_connection_error_no_answer_within_the_read_timeout() -> None:
    with ProviderServer(Reply([TEXT], delay=2.0)) as server:
        error = _no_retry_error(f"{server.url}/v1", read_timeout=0.3)
        where = server.url[7:]
    assert str(error) == f"OpenAI: no answer from {where} (no data for 0.3 s)"


def test_connection_error_closed_without_an_answer() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:  # read the whole request (unread bytes would make the close a reset)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += conn.recv(65536)

        threading.Thread(target=serve, daemon=True).start()
        error = _no_retry_error(f"http://127.0.0.1:{port}/v1")
    assert str(error) == (
        f"OpenAI: connection to 127.0.0.1:{port} failed (the server closed the connection without answering)"
    )


# --- error texts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "kind"),
    [
        (
            b'{"error": {"message": "Incorrect API key provided", '
            b'"type": "invalid_request_error", "code": "invalid_api_key"}}',
            "Incorrect API key provided",
            "invalid_request_error",
        ),
        (
            b'{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}',
            "invalid x-api-key",
            "authentication_error",
        ),
        (b'{"error": "model \\"llama9\\" not found"}', 'model "llama9" not found', None),
        (b'{"detail": "Not Found"}', "Not Found", None),
        (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "502 Bad Gateway", None),
        (b"", "(empty body)", None),
    ],
)
def test_error_message_extraction(body: bytes, message: str, kind: str | None) -> None:
    with ProviderServer(error_reply(401, body)) as server, pytest.raises(ProviderError) as info:
        run(openai(server).stream(request()))
    assert message in str(info.value)
    assert info.value.kind == kind and info.value.status == 401


def test_long_error_bodies_are_truncated() -> None:
    body = b'{"error": {"message": "' + b"x" * 50_000 + b'"}}'
    with ProviderServer(error_reply(400, body)) as server, pytest.raises(ProviderError) as info:
        run(openai(server).stream(request()))
    assert len(str(info.value)) < 700


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_never_in_error_text(provider: str) -> None:
    def echo_headers(got: Any) -> Reply:
        import json

        echoed = json.dumps({"error": {"message": f"bad request; you sent {got.headers}"}})
        return error_reply(401, echoed.encode())

    with ProviderServer(handler=echo_headers) as server:
        client: Any
        if provider == "openai":
            client = OpenAIChatClient("m", f"{server.url}/v1", api_key=KEY)
        else:
            client = AnthropicClient("m", server.url, api_key=KEY)
        with pytest.raises(ProviderError) as info:
            run(client.stream(request()))
        assert KEY in str(server.requests[0].headers)  # the key was sent ...
    assert "you sent" in str(info.value)
    assert KEY not in str(info.value) and KEY not in repr(info.value)  # ... but never shown
    assert KEY not in repr(client)


def test_in_stream_openai_error_under_200_is_retried_before_first_event() -> None:
    err = sse({"error": {"message": "rate limited", "type": "rate_limit_exceeded"}})
    with ProviderServer(Reply([err]), Reply([TEXT])) as server:
        outcome = run(openai(server).stream(request()))
        assert len(server.requests) == 2
    assert outcome.text.startswith("I'm unable")


def test_missing_key_for_remote_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        OpenAIChatClient("m")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        AnthropicClient("m")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert "x-api-key" in AnthropicClient("m")._headers


# --- latency and cancel --------------------------------------------------------------------------


def _first_event_then_silence(provider: str) -> Reply:
    return Reply([first_text_event(provider)], hang=True)


def _client(provider: str, server: ProviderServer, **kwargs: Any) -> Any:
    if provider == "openai":
        return OpenAIChatClient("m", f"{server.url}/v1", **kwargs)
    return AnthropicClient("m", server.url, **kwargs)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("chunked", [True, False])
def test_first_event_arrives_at_once_and_cancel_ends_a_silent_stream(provider: str, chunked: bool) -> None:
    cancel = threading.Event()
    reply = _first_event_then_silence(provider)
    reply.chunked = chunked
    with ProviderServer(reply) as server:
        stream = iter(_client(provider, server).stream(request(cancel=cancel)))
        start = time.perf_counter()
        first = next(stream)
        ttfe = time.perf_counter() - start
        assert first == TextEvent("Hi")
        threading.Timer(0.2, cancel.set).start()
        rest = list(stream)  # blocked on the silent socket until the cancel
        latency = time.perf_counter() - start - 0.2
    print(f"\n{provider} chunked={chunked}: first event {ttfe * 1000:.1f} ms, cancel {latency * 1000:.1f} ms")
    assert rest == []
    assert ttfe < 0.5
    assert latency < 0.5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancel_while_waiting_for_headers(provider: str) -> None:
    cancel = threading.Event()
    with ProviderServer(Reply([TEXT], delay=5.0)) as server:
        stream = _client(provider, server).stream(request(cancel=cancel))
        threading.Timer(0.2, cancel.set).start()
        start = time.perf_counter()
        assert list(stream) == []
        elapsed = time.perf_counter() - start
    print(f"\n{provider}: cancel while waiting for headers: {(elapsed - 0.2) * 1000:.1f} ms")
    assert elapsed < 0.7


def test_cancel_before_start_sends_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    with ProviderServer(Reply([TEXT])) as server:
        assert list(openai(server).stream(request(cancel=cancel))) == []
        assert server.requests == []


def test_closing_an_abandoned_stream_closes_the_connection() -> None:
    with ProviderServer(_first_event_then_silence("openai")) as server:
        stream = openai(server).stream(request())
        assert next(stream) == TextEvent("Hi")
        start = time.perf_counter()
        stream.close()  # type: ignore[attr-defined]
        assert time.perf_counter() - start < 0.5


def test_read_timeout_on_a_silent_server_raises() -> None:
    with ProviderServer(_first_event_then_silence("openai")) as server:
        stream = openai(server, read_timeout=0.3).stream(request())
        assert next(stream) == TextEvent("Hi")
        with pytest.raises(ProviderError, match="stream broken") as info:
            list(stream)
        where = server.url[7:]
    assert info.value.retryable
    assert str(info.value) == f"OpenAI stream broken: no data for 0.3 s ({where})"


def test_read_timeout_waiting_for_headers_is_retried() -> None:
    wait = RecordingWait()
    with ProviderServer(Reply([TEXT], delay=1.0), Reply([TEXT])) as server:
        outcome = run(openai(server, wait, read_timeout=0.2).stream(request()))
    assert outcome.text.startswith("I'm unable") and len(wait.delays) == 1


def test_watcher_threads_do_not_accumulate() -> None:
    cancel = threading.Event()
    with ProviderServer(Reply([TEXT])) as server:
        client = openai(server)
        before = threading.active_count()
        for _ in range(20):
            run(client.stream(request(cancel=cancel)))
        time.sleep(0.3)
        assert threading.active_count() <= before + 2


# --- create_client and packaging ----------------------------------------------------------------


def test_create_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    c = create_client("openai")
    assert isinstance(c, OpenAIChatClient) and c.model == "gpt-4o-mini"
    a = create_client("Anthropic", model="claude-x", base_url="http://127.0.0.1:9/")
    assert isinstance(a, AnthropicClient) and a.model == "claude-x" and a.base_url == "http://127.0.0.1:9"
    assert "x-api-key" not in a._headers  # local server: the env key is not sent
    with pytest.raises(ValueError, match="unknown provider 'ollama'"):
        create_client("ollama")
    assert ReexportedProviderError is ProviderError


def test_create_client_passes_stream_timeout_and_options() -> None:
    retry = RetryPolicy(max_retries=1)
    url = "http://127.0.0.1:9/v1"
    headers = {"X": "1"}
    c = create_client("openai", "m", url, stream_timeout=2.5, read_timeout=7.0, retry=retry, headers=headers)
    assert isinstance(c, OpenAIChatClient)
    assert c.settings == HTTPSettings(read_timeout=7.0, stream_timeout=2.5, retry=retry, headers=headers)
    a = create_client("anthropic", "m", "http://127.0.0.1:9", None, stream_timeout=1.0, max_tokens=99)
    assert isinstance(a, AnthropicClient) and a.max_tokens == 99
    assert a.settings.stream_timeout == 1.0
    default = create_client("openai", "m", "http://127.0.0.1:9/v1")
    assert isinstance(default, OpenAIChatClient) and default.settings == HTTPSettings()
    with pytest.raises(TypeError, match="no_such_option"):
        create_client("openai", "m", "http://127.0.0.1:9/v1", no_such_option=1)
    with pytest.raises(TypeError, match="max_retries"):  # one way to set retries: retry=RetryPolicy(...)
        create_client("openai", "m", "http://127.0.0.1:9/v1", max_retries=1)


def test_importing_the_core_does_not_import_requests() -> None:
    code = "import sys, miniagent; assert 'requests' not in sys.modules, 'requests imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
