"""Usage numbers that are not token counts (issue "Wire fidelity 3" kind 10, "Hostile and unlucky
input, round 3" kind 2): a ProviderError from the stream, never 0 and never a crash of the pricer.
Streams come from a loopback server."""

from __future__ import annotations

from typing import Any

import pytest
from providers_server import ProviderServer, Reply, anthropic_sse, request, run, sse

from miniagent import ProviderError, Usage, UsageEvent
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers._pricing import Pricer

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
HUGE = 10**400


def _openai(usage: dict[str, Any]) -> bytes:
    return sse(
        {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
        done=True,
    )


def _anthropic(usage: dict[str, Any]) -> bytes:
    return anthropic_sse(
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    )


def _stream(provider: str, body: bytes) -> list[Usage]:
    with ProviderServer(Reply([body])) as server:
        base = f"{server.url}/v1" if provider == "openai" else server.url
        client = create_client(provider, "m", base, "key", retry=NO_RETRY)
        try:
            outcome = run(client.stream(request()))
        finally:
            client.close()  # type: ignore[attr-defined]
    return [event.usage for event in outcome.events if isinstance(event, UsageEvent)]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("12", '"12"'),
        (12.0, "12.0"),
        (-3, "-3"),
        (True, "true"),
        (HUGE, "a number of about 401 digits"),
        (10**10 + 1, "10000000001"),
        ([1], "[1]"),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_usage_number_that_is_not_a_token_count_is_a_provider_error(
    provider: str, value: Any, shown: str
) -> None:
    if provider == "openai":
        body = _openai({"prompt_tokens": value, "completion_tokens": 1})
    else:
        body = _anthropic({"input_tokens": value, "output_tokens": 1})
    with pytest.raises(ProviderError) as caught:
        _stream(provider, body)
    field = "prompt_tokens" if provider == "openai" else "input_tokens"
    who = "OpenAI" if provider == "openai" else "Anthropic"
    assert str(caught.value) == f"{who} reported usage {field} = {shown}, which is not a token count"
    assert caught.value.retryable is False


def test_missing_and_null_counts_are_zero_and_sane_ones_are_kept() -> None:
    usage = {
        "prompt_tokens": 10**10,
        "completion_tokens": None,
        "prompt_tokens_details": {"cached_tokens": 5},
    }
    assert _stream("openai", _openai(usage)) == [Usage(10**10, 0, 5, 0, 1)]


def test_the_pricer_never_overflows() -> None:
    huge = Usage(HUGE, HUGE, HUGE, 0, 1)
    assert Pricer("m", None, "http://127.0.0.1", {"input": 3.0, "output": 15.0}).cost(huge) is None
    assert Pricer("gpt-4o-mini", "openai", "https://api.openai.com/v1", None).cost(huge) is None
    priced = Pricer("m", None, "http://127.0.0.1", {"input": 3.0, "output": 15.0})
    assert priced.cost(Usage(1_000_000, 1_000_000, requests=1)) == pytest.approx(18.0)
