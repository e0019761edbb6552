"""Regressions from a new-user trial: keys and loopback host forms, NaN in tool arguments, an
Anthropic ``base_url`` ending in ``/v1``, an install without ``requests``, retry counts in errors.

Every HTTP test talks to a real server on the loopback interface (``providers_server``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from providers_server import (
    ProviderServer,
    RecordingWait,
    Reply,
    anthropic_sse,
    first_text_event,
    request,
    run,
    sse,
)

from miniagent import ProviderError
from miniagent.agent import run_agent
from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy
from miniagent.providers._config import is_local_url
from miniagent.providers._decode import parse_tool_input
from miniagent.tools import Tool, tool

pytestmark = pytest.mark.timeout(30)

KEY = "sk-env-KEY-should-not-leave-1234"
EXPLICIT = "sk-explicit-KEY-5678"
NO_RETRY = HTTPSettings(retry=RetryPolicy(max_retries=0))

# --- 1. environment keys never go to a loopback server, whatever the host's spelling -----------

IPV4_FORMS = [
    "127.0.0.1",
    "localhost",
    "127.1",
    "0.0.0.0",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "127.0.1",
]


def _ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _serve(host: str, *replies: Reply) -> ProviderServer:
    """A ProviderServer listening on ``host`` (``127.0.0.1`` or ``::1``)."""
    server = ProviderServer(*replies)
    if host == "::1":
        handler = server._server.RequestHandlerClass
        server._server.server_close()
        server._server = _V6Server(("::1", 0), handler)
        server._server.daemon_threads = True
        server._thread = threading.Thread(
            target=server._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
    return server


def _port(server: ProviderServer) -> int:
    port: int = server._server.server_address[1]
    return port


def _stream_once(provider: str, base: str, api_key: str | None = None) -> None:
    if provider == "openai":
        client: Any = OpenAIChatClient("m", f"{base}/v1", api_key, settings=NO_RETRY)
    else:
        client = AnthropicClient("m", base, api_key, settings=NO_RETRY)
    try:
        list(client.stream(request()))
    except ProviderError:
        pass  # the reply is cut after the first event; only the request headers matter here
    finally:
        client.close()


def _auth(headers: dict[str, str]) -> list[str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    return [lowered[h] for h in ("authorization", "x-api-key") if h in lowered]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("host", IPV4_FORMS)
def test_env_key_is_not_sent_to_any_ipv4_loopback_form(
    monkeypatch: pytest.MonkeyPatch, provider: str, host: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with _serve("127.0.0.1", Reply([first_text_event(provider)])) as server:
        _stream_once(provider, f"http://{host}:{_port(server)}")
        _stream_once(provider, f"http://{host}:{_port(server)}", api_key=EXPLICIT)
        assert len(server.requests) == 2, "the client did not reach the server"
        assert _auth(server.requests[0].headers) == []
        sent = _auth(server.requests[1].headers)  # an explicit key is sent
        assert sent == ([f"Bearer {EXPLICIT}"] if provider == "openai" else [EXPLICIT])


@pytest.mark.skipif(not _ipv6_loopback_available(), reason="no IPv6 loopback")
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("listen", "host"), [("::1", "[::1]"), ("::1", "[0:0::1]"), ("127.0.0.1", "[::ffff:127.0.0.1]")]
)
def test_env_key_is_not_sent_to_ipv6_loopback_forms(
    monkeypatch: pytest.MonkeyPatch, provider: str, listen: str, host: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with _serve(listen, Reply([first_text_event(provider)])) as server:
        _stream_once(provider, f"http://{host}:{_port(server)}")
        assert len(server.requests) == 1, "the client did not reach the server"
        assert _auth(server.requests[0].headers) == []


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost.:1", True),
        ("http://LocalHost:1", True),
        ("http://api.localhost:1/v1", True),
        ("http://[::]:1", True),
        ("http://[::ffff:0.0.0.0]:1", True),
        ("http://[::ffff:7f00:2]:1", True),
        ("http://127.255.255.254:1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.1:1", False),
        ("http://[::ffff:10.0.0.1]:1", False),
        ("http://[2001:db8::1]:1", False),
        ("http://localhost.example.com:1", False),
        ("http://127.0.0.1.example.com:1", False),
        ("http://1.2.3:1", False),
        ("http://[::1:1", False),  # malformed: not local (and never a crash)
    ],
)
def test_is_local_url(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_env_key_still_sent_to_a_remote_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = OpenAIChatClient("m", "http://10.255.255.1:9/v1")
    try:
        assert client._headers["Authorization"] == f"Bearer {KEY}"
    finally:
        client.close()


# --- 2. NaN / Infinity in tool arguments --------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"path": "a.txt", "offset": NaN}', "NaN is not allowed"),
        ('{"offset": Infinity}', "Infinity is not allowed"),
        ('{"offset": [-Infinity]}', "-Infinity is not allowed"),
        ('{"offset": 1e999}', "number 1e999 is out of range"),
    ],
)
def test_non_finite_arguments_are_refused(arguments: str, problem: str) -> None:
    assert parse_tool_input(arguments) == ({}, f"arguments are not valid JSON: {problem}")


def test_finite_numbers_still_parse() -> None:
    assert parse_tool_input('{"a": 1.5, "b": -2e10, "c": 3}') == ({"a": 1.5, "b": -2e10, "c": 3}, None)


def _read_tool(log: list[dict[str, Any]]) -> Tool:
    @tool(read_only=True)
    def read_file(path: str, offset: float = 0) -> str:
        """Read a file.

        Args:
            path: the file.
            offset: where to start.
        """
        log.append({"path": path, "offset": offset})
        return "content"

    return read_file


def _openai_call(arguments: str) -> bytes:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": arguments},
    }
    return sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )


def _anthropic_call(partial_json: str | None, initial: str = "{}") -> bytes:
    events = [
        '{"type": "message_start", "message": {"id": "m", "content": []}}',
        '{"type": "content_block_start", "index": 0, "content_block": '
        f'{{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {initial}}}}}',
    ]
    if partial_json is not None:
        delta = {"type": "input_json_delta", "partial_json": partial_json}
        events.append(json.dumps({"type": "content_block_delta", "index": 0, "delta": delta}))
    events += [
        '{"type": "content_block_stop", "index": 0}',
        '{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}',
        '{"type": "message_stop"}',
    ]
    return "".join(f"event: {json.loads(e)['type']}\ndata: {e}\n\n" for e in events).encode()


def _final(provider: str) -> bytes:
    if provider == "openai":
        return sse(
            {"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}, done=True
        )
    return anthropic_sse(
        {"type": "message_start", "message": {"id": "m2", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "done"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    )


def _strict(line: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name} in the session")

    return json.loads(line, parse_constant=refuse)


CASES = [
    ("openai", _openai_call('{"path": "a.txt", "offset": NaN}')),
    ("openai", _openai_call('{"path": "a.txt", "offset": -Infinity}')),
    ("anthropic", _anthropic_call('{"path": "a.txt", "offset": NaN}')),
    ("anthropic", _anthropic_call('{"path": "a.txt", "offset": Infinity}')),
    ("anthropic", _anthropic_call(None, initial='{"path": "a.txt", "offset": NaN}')),
]


@pytest.mark.parametrize(("provider", "body"), CASES)
def test_nan_arguments_are_answered_with_an_error_and_the_session_stays_strict_json(
    tmp_path: Path, provider: str, body: bytes
) -> None:
    log: list[dict[str, Any]] = []
    session = tmp_path / "session.jsonl"
    with ProviderServer(Reply([body]), Reply([_final(provider)])) as server:
        if provider == "openai":
            client: Any = OpenAIChatClient("m", f"{server.url}/v1", settings=NO_RETRY)
        else:
            client = AnthropicClient("m", server.url, settings=NO_RETRY)
        try:
            result = run_agent(
                client=client,
                system="s",
                tools=[_read_tool(log)],
                user="read",
                max_turns=3,
                session_path=session,
            )
        finally:
            client.close()
    assert log == []  # the call was not executed
    calls = [c for m in result.messages if m.role == "assistant" for c in m.tool_calls]
    assert len(calls) == 1 and calls[0].input == {}
    assert calls[0].input_error is not None and "is not allowed" in calls[0].input_error
    results = [m for m in result.messages if m.role == "tool"]
    assert len(results) == 1 and results[0].is_error
    assert result.messages[-1].content == "done"
    lines = session.read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        _strict(line)
    json.dumps([m for m in map(_strict, lines)], allow_nan=False)


def test_nan_in_an_unused_event_field_is_harmless() -> None:
    body = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprob": NaN}]}\n\n' + sse(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, done=True
    )
    with ProviderServer(Reply([body])) as server:
        client = OpenAIChatClient("m", f"{server.url}/v1", settings=NO_RETRY)
        try:
            outcome = run(client.stream(request()))
        finally:
            client.close()
    assert outcome.text == "Hi" and outcome.done[0].stop_reason == "stop"


# --- 3. Anthropic base_url with /v1 --------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_anthropic_base_url_with_or_without_v1(suffix: str) -> None:
    with ProviderServer(Reply([first_text_event("anthropic")])) as server:
        client = AnthropicClient("m", f"{server.url}{suffix}", settings=NO_RETRY)
        assert client.base_url == server.url
        try:
            with pytest.raises(ProviderError):  # the reply is cut after "Hi"
                list(client.stream(request()))
        finally:
            client.close()
        assert [r.path for r in server.requests] == ["/v1/messages"]


def test_anthropic_base_url_with_a_path_prefix_keeps_it() -> None:
    client = AnthropicClient("m", "http://127.0.0.1:9/proxy/anthropic/v1/")
    assert client.base_url == "http://127.0.0.1:9/proxy/anthropic"
    client.close()


# --- 4. an install without requests --------------------------------------------------------------


def test_providers_without_requests_say_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['requests'] = None\n"
        "try:\n"
        "    from miniagent.providers import create_client\n"
        "except ModuleNotFoundError as exc:\n"
        "    assert exc.name == 'requests', exc.name\n"
        "    print(exc)\n"
        "else:\n"
        "    raise SystemExit('imported without requests')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "miniagent.providers needs requests: pip install 'miniagent[http]'"


# --- 6. an error after retries says so -----------------------------------------------------------


def test_broken_first_event_is_retried_and_the_error_says_so() -> None:
    wait = RecordingWait()
    policy = RetryPolicy(max_retries=3, backoff_base=0.0, wait=wait)
    with ProviderServer(Reply([b"data: {not json\n\n"])) as server:
        client = OpenAIChatClient("m", f"{server.url}/v1", settings=HTTPSettings(retry=policy))
        try:
            with pytest.raises(ProviderError, match=r"not valid JSON.*\(after 3 retries\)$") as info:
                run(client.stream(request()))
        finally:
            client.close()
        assert len(server.requests) == 4
    assert info.value.retryable and len(wait.delays) == 3


def test_one_retry_is_singular_and_no_retry_adds_nothing() -> None:
    err = Reply([b'{"error": {"message": "boom"}}'], status=500, content_type="application/json")
    for retries, suffix in ((1, " (after 1 retry)"), (0, "boom")):
        policy = RetryPolicy(max_retries=retries, backoff_base=0.0, wait=RecordingWait())
        with ProviderServer(err) as server:
            client = OpenAIChatClient("m", f"{server.url}/v1", settings=HTTPSettings(retry=policy))
            try:
                with pytest.raises(ProviderError) as info:
                    run(client.stream(request()))
            finally:
                client.close()
        assert str(info.value).endswith(suffix) and info.value.status == 500
