"""Each provider's ``DoneEvent`` names the model that answered and the response's id, as the
server sent them (real transcripts served from 127.0.0.1); traces read them
(``gen_ai.response.model``, ``gen_ai.response.id``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.test_provider_anthropic import client as anthropic_client
from tests.providers.test_provider_gemini import client as gemini_client
from tests.providers.test_provider_openai import client as openai_client
from tests.providers.test_provider_responses import client as responses_client
from tests.providers_server import fixture, sse, stream_reply, whole

CASES = [
    (openai_client, "openai-text.sse", "gpt-4o-2024-08-06", "chatcmpl-9tXjg9DdaOfymTPDrSLfxslQEH0C2"),
    (
        anthropic_client,
        "anthropic-text.sse",
        "claude-3-opus-latest",
        "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK",
    ),
    (
        responses_client,
        "responses-text.sse",
        "gpt-4o-mini-2024-07-18",
        "resp_823b29a909584d572be97b3cf9af53dcd43ca4de36e3eaf7",
    ),
    (gemini_client, "gemini-text.sse", "gemini-2.0-flash", "pdSfaOurIPqAm9IPucqbqA4"),
]


@pytest.mark.parametrize(("make", "name", "model", "response_id"), CASES, ids=[c[1] for c in CASES])
def test_the_done_event_names_the_model_and_the_response(
    make: Any, name: str, model: str, response_id: str
) -> None:
    outcome = stream_reply(make, whole(fixture(name)))
    [done] = outcome.done
    assert (done.model, done.response_id) == (model, response_id)


def test_a_server_that_names_neither_leaves_them_unknown() -> None:
    body = sse({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}, done=True)
    [done] = stream_reply(openai_client, [body]).done
    assert (done.model, done.response_id) == (None, None)
    choice = {"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}
    odd = sse({"model": 7, "id": "", "choices": [choice]}, done=True)
    [done] = stream_reply(openai_client, [odd]).done
    assert (done.model, done.response_id) == (None, None)  # only non-empty strings count
