"""Errors of the embedded model's HTTP clients name it (issue 19, item 5). ``LocalOpenAIClient`` and
``LocalAnthropicClient`` are built against a real loopback server
(``providers_server.ProviderServer``) that plays a broken llama.cpp: an undecodable event, a stream
cut before its end, an in-stream error object, an HTTP error, a stream that never ends. Every error
text starts with "local model", never "OpenAI"/"Anthropic"; the stream-timeout text names the
library setting, and the CLI's wording of it (``report.error_text``) its option. The same streams
sent to the plain clients still say "OpenAI"/"Anthropic" (their texts unchanged). A tool call cut at
the output-token limit is no error (round 3): it comes marked as cut, for the loop to answer. No
model is started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from providers_server import ProviderServer, Reply, anthropic_sse, fixture, request, run, sse

from miniagent import ProviderError
from miniagent.cli.report import error_text
from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy
from miniagent.providers.local import LocalServer
from miniagent.providers.local.http_clients import LocalAnthropicClient, LocalOpenAIClient

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)

_ANTHROPIC_START = {
    "type": "message_start",
    "message": {"id": "m", "content": [], "usage": {"input_tokens": 3}},
}
_ANTHROPIC_TEXT = (
    _ANTHROPIC_START,
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
)
_ANTHROPIC_CUT_CALL = anthropic_sse(
    _ANTHROPIC_START,
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"path": "essay.txt", "content": "Once'},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 16}},
    {"type": "message_stop"},
)

# What each broken stream is, per wire format: (OpenAI chat completions body, Anthropic body).
BROKEN: dict[str, tuple[bytes, bytes]] = {
    "undecodable": (
        b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"\n\n',
        b'event: ping\ndata: {}\n\nevent: message_start\ndata: {"type": "message_start", "message": \n\n',
    ),
    "cut": (sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}), anthropic_sse(*_ANTHROPIC_TEXT)),
    "error": (
        sse({"error": {"message": "the slot crashed", "type": "server_error", "code": 500}}),
        fixture("anthropic-error-midstream.sse"),
    ),
}
CUT_CALL = (fixture("openai-length-mid-call.sse"), _ANTHROPIC_CUT_CALL)

EXPECTED = {
    "undecodable": "sent an event whose data is not valid JSON",
    "cut": "stream ended before",
    "error": "stream error",
}


@dataclass(frozen=True)
class Flavor:
    """One client class and how to point it at the loopback server."""

    name: str
    make: Callable[[str, HTTPSettings], Any]
    wire: int  # 0: OpenAI chat completions, 1: Anthropic Messages
    provider: str


LOCAL = [
    Flavor(
        "local-openai",
        lambda url, s: LocalOpenAIClient("m", base_url=f"{url}/v1", settings=s),
        0,
        "local model",
    ),
    Flavor(
        "local-anthropic",
        lambda url, s: LocalAnthropicClient("m", base_url=url, settings=s),
        1,
        "local model",
    ),
]
PLAIN = [
    Flavor("openai", lambda url, s: OpenAIChatClient("m", base_url=f"{url}/v1", settings=s), 0, "OpenAI"),
    Flavor("anthropic", lambda url, s: AnthropicClient("m", base_url=url, settings=s), 1, "Anthropic"),
]


def stream_error(flavor: Flavor, reply: Reply, settings: HTTPSettings | None = None) -> ProviderError:
    """Stream one request from ``flavor``'s client against a server answering ``reply``; the
    error it raises."""
    with ProviderServer(reply) as server:
        client = flavor.make(server.url, settings or HTTPSettings(retry=NO_RETRY))
        try:
            with pytest.raises(ProviderError) as caught:
                run(client.stream(request()))
        finally:
            client.close()
    return caught.value


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("flavor", LOCAL, ids=lambda f: f.name)
def test_local_clients_name_the_local_model(flavor: Flavor, case: str) -> None:
    error = stream_error(flavor, Reply([BROKEN[case][flavor.wire]]))
    text = str(error)
    assert text.startswith("local model "), text
    assert EXPECTED[case] in text
    assert "OpenAI" not in text and "Anthropic" not in text


@pytest.mark.parametrize("flavor", LOCAL + PLAIN, ids=lambda f: f.name)
def test_a_call_cut_at_the_limit_is_marked_cut_not_raised(flavor: Flavor) -> None:
    with ProviderServer(Reply([CUT_CALL[flavor.wire]])) as server:
        client = flavor.make(server.url, HTTPSettings(retry=NO_RETRY))
        try:
            outcome = run(client.stream(request()))
        finally:
            client.close()
    [call] = outcome.calls
    assert call.name == "write_file" and call.input == {}
    assert call.input_error is not None and "cut off by the output token limit" in call.input_error
    assert outcome.done[0].incomplete == "max_output_tokens"


@pytest.mark.parametrize("flavor", LOCAL, ids=lambda f: f.name)
def test_http_errors_and_stream_timeouts_name_the_local_model(flavor: Flavor) -> None:
    body = b'{"error": {"code": 500, "message": "llama.cpp fell over", "type": "server_error"}}'
    error = stream_error(flavor, Reply([body], status=500, content_type="application/json"))
    assert str(error).startswith("local model HTTP 500") and "llama.cpp fell over" in str(error)
    # A limit of 1 us has passed by the time the first chunk is read (the check runs per chunk).
    tight = HTTPSettings(retry=NO_RETRY, stream_timeout=1e-6)
    error = stream_error(flavor, Reply([BROKEN["cut"][flavor.wire]]), tight)
    assert error.kind == "stream_timeout"
    assert str(error) == "local model stream did not finish within 1e-06 s (stream_timeout)"
    assert error_text(error) == f"{error}; raise it with --stream-timeout"  # the CLI names its option


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("flavor", PLAIN, ids=lambda f: f.name)
def test_plain_clients_still_name_their_provider(flavor: Flavor, case: str) -> None:
    error = stream_error(flavor, Reply([BROKEN[case][flavor.wire]]))
    text = str(error)
    assert text.startswith(f"{flavor.provider} "), text
    assert EXPECTED[case] in text and "local model" not in text


def test_the_server_hands_out_the_named_clients() -> None:
    # LocalServer's client factories, on a server object that never started a model (only the
    # attributes the factories read are set).
    server = object.__new__(LocalServer)
    server.alias, server.temperature, server.base_url = "m", 0.0, "http://127.0.0.1:9"
    openai = server.openai_client()
    anthropic = server.anthropic_client()
    assert type(openai) is LocalOpenAIClient and type(anthropic) is LocalAnthropicClient
    assert repr(openai) == "LocalOpenAIClient(model='m', base_url='http://127.0.0.1:9/v1')"
    for client in (openai, anthropic):
        client.close()  # type: ignore[attr-defined]
