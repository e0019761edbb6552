"""Misbehaving providers, served by a raw-socket HTTP server on 127.0.0.1 (``raw_server.py``).

Every case runs ``run_agent`` with a session and the real ``OpenAIChatClient`` / ``AnthropicClient``
(small read timeout and backoff): a connection reset mid-stream and before the first event, headers
then silence (read timeout), HTTP 500 three times then success, 429 with ``Retry-After``, an HTML
page with status 200, invalid JSON in a ``data:`` line, a 20 MB single text delta, and a stream that
never ends or drips forever (bounded by the clients' ``stream_timeout``, or by the cancel event).
Each ends in a clear ``ProviderError``, a retry that succeeds, or a clean ``aborted``; the session
never holds a partial assistant message.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from raw_server import (
    RawServer,
    Request,
    anthropic_delta,
    anthropic_start,
    anthropic_text,
    endless,
    head,
    openai_delta,
    openai_text,
    reply,
    reset_after,
    silent_after,
)
from stress_support import jsonl_lines_ok

from miniagent import Message, ModelClient, ProviderError, load_session, run_agent
from miniagent.model import ModelEvent
from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy

USER = Message("user", "hi")


@dataclass
class Flavor:
    name: str
    start: bytes
    delta: Callable[[str], bytes]
    text: Callable[..., bytes]
    make: Callable[..., ModelClient]


def settings(retry: RetryPolicy, read_timeout: float, stream_timeout: float | None) -> HTTPSettings:
    return HTTPSettings(read_timeout, connect_timeout=2.0, stream_timeout=stream_timeout, retry=retry)


def make_openai(
    url: str, retry: RetryPolicy, timeout: float, stream_timeout: float | None = None
) -> ModelClient:
    return OpenAIChatClient("m", base_url=url + "/v1", settings=settings(retry, timeout, stream_timeout))


def make_anthropic(
    url: str, retry: RetryPolicy, timeout: float, stream_timeout: float | None = None
) -> ModelClient:
    return AnthropicClient("m", base_url=url, settings=settings(retry, timeout, stream_timeout))


FLAVORS = [
    Flavor("openai", b"", openai_delta, openai_text, make_openai),
    Flavor("anthropic", anthropic_start(), anthropic_delta, anthropic_text, make_anthropic),
]


@pytest.fixture(params=FLAVORS, ids=lambda f: f.name)
def flavor(request: pytest.FixtureRequest) -> Flavor:
    return request.param  # type: ignore[no-any-return]


class Waits:
    """A ``RetryPolicy.wait`` that records the delays and waits only briefly (on the cancel event)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, cancel: threading.Event | None, seconds: float) -> bool:
        self.delays.append(seconds)
        return cancel.wait(0.001) if cancel is not None else False


def policy(retries: int = 3, waits: Waits | None = None) -> RetryPolicy:
    return RetryPolicy(max_retries=retries, backoff_base=0.01, backoff_max=0.05, wait=waits or Waits())


def run(
    client: ModelClient,
    session: Path,
    cancel: threading.Event | None = None,
    on_event: Callable[[ModelEvent], None] | None = None,
) -> str:
    result = run_agent(
        client=client,
        system="s",
        tools=[],
        user="hi",
        max_turns=1,
        session_path=session,
        cancel=cancel,
        on_event=on_event,
    )
    return result.stop_reason


def assert_only_user(session: Path) -> None:
    assert jsonl_lines_ok(session)
    assert load_session(session) == [USER], "a failed or cancelled turn must commit nothing"


def expect_error(client: ModelClient, session: Path, *fragments: str) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        run(client, session)
    text = str(raised.value)
    for fragment in fragments:
        assert fragment in text, text
    assert_only_user(session)
    return raised.value


def test_reset_mid_stream_is_an_error_not_a_retry(flavor: Flavor, tmp_path: Path) -> None:
    prefix = head() + flavor.start + flavor.delta("partial answer")
    with RawServer(reset_after(prefix), reply(head() + flavor.text("retried"))) as server:
        client = flavor.make(server.url, policy(), 5.0)
        expect_error(client, tmp_path / "s.jsonl", "stream broken: connection reset by the server (")
        assert len(server.requests) == 1  # text was already streamed: never retried


@pytest.mark.parametrize("prefix", [b"", b"headers"], ids=["before-headers", "after-headers"])
def test_reset_before_the_first_event_is_retried(flavor: Flavor, tmp_path: Path, prefix: bytes) -> None:
    first = reset_after(head() + flavor.start if prefix else b"")
    with RawServer(first, reply(head() + flavor.text("second ", "try"))) as server:
        session = tmp_path / "s.jsonl"
        assert run(flavor.make(server.url, policy(), 5.0), session) == "complete"
        assert len(server.requests) == 2
    assert load_session(session) == [USER, Message("assistant", "second try")]


@pytest.mark.parametrize("partial", [False, True], ids=["no-event", "after-an-event"])
def test_headers_then_silence_hits_the_read_timeout(flavor: Flavor, tmp_path: Path, partial: bool) -> None:
    prefix = head() + (flavor.start + flavor.delta("x") if partial else b"")
    with RawServer(silent_after(prefix)) as server:
        started = time.monotonic()
        client = flavor.make(server.url, policy(retries=1), 0.3)
        expect_error(client, tmp_path / "s.jsonl", "stream broken: no data for 0.3 s")
        elapsed = time.monotonic() - started
        assert len(server.requests) == (1 if partial else 2)
    assert elapsed < 5.0


def test_http_500_three_times_then_success(flavor: Flavor, tmp_path: Path) -> None:
    error = reply(b'{"error":{"message":"boom","type":"server_error"}}', 500, "application/json")
    waits = Waits()
    with RawServer(error, error, error, reply(head() + flavor.text("fine"))) as server:
        session = tmp_path / "s.jsonl"
        assert run(flavor.make(server.url, policy(3, waits), 5.0), session) == "complete"
        assert len(server.requests) == 4
    assert len(waits.delays) == 3
    assert load_session(session) == [USER, Message("assistant", "fine")]


def test_http_500_beyond_the_retries_is_a_clear_error(flavor: Flavor, tmp_path: Path) -> None:
    error = reply(b'{"error":{"message":"still broken","type":"server_error"}}', 500, "application/json")
    with RawServer(error) as server:
        raised = expect_error(
            flavor.make(server.url, policy(2), 5.0), tmp_path / "s.jsonl", "500", "still broken"
        )
        assert raised.status == 500
        assert len(server.requests) == 3


def test_429_with_retry_after_is_honoured(flavor: Flavor, tmp_path: Path) -> None:
    limited = reply(b'{"error":{"message":"slow down"}}', 429, "application/json", Retry_After="0.25")
    waits = Waits()
    with RawServer(limited, reply(head() + flavor.text("ok"))) as server:
        session = tmp_path / "s.jsonl"
        assert run(flavor.make(server.url, policy(3, waits), 5.0), session) == "complete"
    assert waits.delays == [0.25]
    assert load_session(session)[-1] == Message("assistant", "ok")


def test_429_with_retry_after_really_waits(tmp_path: Path) -> None:
    limited = reply(b'{"error":{"message":"slow down"}}', 429, "application/json", Retry_After="0.3")
    with RawServer(limited, reply(head() + openai_text("ok"))) as server:
        started = time.monotonic()
        client = OpenAIChatClient(
            "m", base_url=server.url + "/v1", settings=HTTPSettings(retry=RetryPolicy(max_retries=1))
        )
        assert run(client, tmp_path / "s.jsonl") == "complete"
        assert time.monotonic() - started >= 0.3


def test_html_page_with_status_200(flavor: Flavor, tmp_path: Path) -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"
    with RawServer(reply(page, 200, "text/html")) as server:
        expect_error(flavor.make(server.url, policy(), 5.0), tmp_path / "s.jsonl", "text/html", "Bad Gateway")


def test_html_page_labelled_as_event_stream(flavor: Flavor, tmp_path: Path) -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
    with RawServer(reply(head() + page)) as server:
        expect_error(flavor.make(server.url, policy(1), 5.0), tmp_path / "s.jsonl", "stream ended")


def test_invalid_json_in_a_data_line(flavor: Flavor, tmp_path: Path) -> None:
    body = head() + flavor.start + flavor.delta("half ") + b"data: {not json at all\n\n" + flavor.text("more")
    with RawServer(reply(body)) as server:
        expect_error(flavor.make(server.url, policy(), 5.0), tmp_path / "s.jsonl", "not valid JSON")
        assert len(server.requests) == 1


def test_a_20_mb_single_text_delta(flavor: Flavor, tmp_path: Path) -> None:
    text = "0123456789abcdef" * (20 * 1024 * 1024 // 16)
    with RawServer(reply(head() + flavor.text(text))) as server:
        session = tmp_path / "s.jsonl"
        started = time.monotonic()
        assert run(flavor.make(server.url, policy(), 10.0), session) == "complete"
        elapsed = time.monotonic() - started
    messages = load_session(session)
    assert messages == [USER, Message("assistant", text)]
    print(f"\n[providers] {flavor.name}: a 20 MB single event streamed and committed in {elapsed:.2f}s")


@pytest.mark.parametrize("how", ["after-n-events", "timer"])
def test_a_stream_that_never_ends_is_cancelled(flavor: Flavor, tmp_path: Path, how: str) -> None:
    """No client option bounds a stream's total time or size (only the read timeout between reads);
    the caller bounds it with the cancel event: here from ``on_event`` or a timer thread."""
    cancel = threading.Event()
    seen = 0

    def on_event(event: ModelEvent) -> None:
        nonlocal seen
        seen += 1
        if how == "after-n-events" and seen == 2000:
            cancel.set()

    timer = threading.Timer(0.5, cancel.set)
    with RawServer(endless(head() + flavor.start, flavor.delta("more "))) as server:
        client = flavor.make(server.url, policy(), 5.0)
        if how == "timer":
            timer.start()
        started = time.monotonic()
        assert run(client, tmp_path / "s.jsonl", cancel, on_event) == "aborted"
        elapsed = time.monotonic() - started
    timer.cancel()
    assert_only_user(tmp_path / "s.jsonl")
    assert seen >= (2000 if how == "after-n-events" else 1)
    if how == "timer":
        assert elapsed < 2.0


def test_empty_200_body_is_retried_then_a_clear_error(flavor: Flavor, tmp_path: Path) -> None:
    with RawServer(reply(head())) as server:
        expect_error(flavor.make(server.url, policy(2), 5.0), tmp_path / "s.jsonl", "stream ended")
        assert len(server.requests) == 3  # a cut before any event is retryable


def test_broken_chunked_encoding_mid_stream(flavor: Flavor, tmp_path: Path) -> None:
    first = flavor.start + flavor.delta("partial")
    body = b"%x\r\n%s\r\nZZZ-not-a-chunk-size\r\n" % (len(first), first)
    chunked = head(extra={"Transfer-Encoding": "chunked"}).replace(b"Connection: close\r\n", b"")
    with RawServer(reply(chunked + body)) as server:
        error = expect_error(flavor.make(server.url, policy(), 5.0), tmp_path / "s.jsonl")
        assert "stream broken" in str(error) or "stream ended before" in str(error)  # urllib3 may see EOF
        assert len(server.requests) == 1


@pytest.mark.parametrize("drip", [False, True], ids=["flood", "slow-drip"])
def test_stream_timeout_bounds_a_stream_that_never_ends(flavor: Flavor, tmp_path: Path, drip: bool) -> None:
    def dripping(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(head() + flavor.start)
        while not release.wait(0.05):  # one small event every 50 ms: the read timeout never fires
            conn.sendall(flavor.delta("."))

    handler = dripping if drip else endless(head() + flavor.start, flavor.delta("more "))
    with RawServer(handler) as server:
        client = flavor.make(server.url, policy(), 5.0, 0.5)
        started = time.monotonic()
        error = expect_error(client, tmp_path / "s.jsonl", "did not finish within 0.5 s")
        elapsed = time.monotonic() - started
        assert error.kind == "stream_timeout"
        assert len(server.requests) == 1
    assert 0.5 <= elapsed < 3.0


def test_stream_timeout_is_a_client_option(tmp_path: Path) -> None:
    with RawServer(endless(head(), openai_delta("x"))) as server:
        client = OpenAIChatClient(
            "m", base_url=server.url + "/v1", settings=HTTPSettings(stream_timeout=0.3, retry=policy())
        )
        expect_error(client, tmp_path / "s.jsonl", "stream_timeout")
    with RawServer(endless(head() + anthropic_start(), anthropic_delta("x"))) as server:
        client2 = AnthropicClient(
            "m", base_url=server.url, settings=HTTPSettings(stream_timeout=0.3, retry=policy())
        )
        expect_error(client2, tmp_path / "s2.jsonl", "stream_timeout")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_stream_timeout_through_create_client(provider: str, tmp_path: Path) -> None:
    from miniagent.providers import create_client

    start = anthropic_start() if provider == "anthropic" else b""
    delta = anthropic_delta if provider == "anthropic" else openai_delta
    with RawServer(endless(head() + start, delta("x"))) as server:
        base_url = server.url + ("/v1" if provider == "openai" else "")
        client = create_client(provider, "m", base_url, stream_timeout=0.3, retry=policy())
        started = time.monotonic()
        error = expect_error(client, tmp_path / "s.jsonl", "did not finish within 0.3 s")
        assert error.kind == "stream_timeout" and time.monotonic() - started < 3.0
