"""OpenAIResponsesClient against a real HTTP server on 127.0.0.1: the Responses fixtures served
whole, byte by byte, in random chunks, with CRLF and cut at every event; the request body."""

from __future__ import annotations

from typing import Any

import pytest
from api_rules_responses import ResponsesAPI, call_reply, openai_error, responses_sse, text_reply
from providers_server import (
    Outcome,
    ProviderServer,
    Reply,
    byte_by_byte,
    crlf,
    event_boundaries,
    fixture,
    random_chunks,
    request,
    run,
    stream_reply,
    whole,
)

from miniagent import Message, ProviderError, Reasoning, ToolCall, ToolSpec
from miniagent.model import ModelRequest, ReasoningEvent, UsageEvent
from miniagent.providers import HTTPSettings, OpenAIResponsesClient, RetryPolicy, create_client
from miniagent.providers._responses_body import responses_origin
from miniagent.usage import Usage

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
SDK_TEXT = (
    "I can't provide real-time updates, but you can easily check the current weather in San Francisco "
    "using a weather website or app. Typically, San Francisco has cool, foggy summers and mild winters, "
    "so it's good to be prepared for variable weather!"
)

# file -> (text, [(id, name, input)], stop reason, incomplete, usage), from tests/fixtures/sse/README.md
EXPECTED: dict[str, tuple[str, list[tuple[str, str, dict[str, Any]]], str, str | None, Usage]] = {
    "responses-text.sse": (SDK_TEXT, [], "completed", None, Usage(14, 50, requests=1)),
    "responses-reasoning-summary.sse": (
        'There are three r\'s in "strawberry".',
        [],
        "completed",
        None,
        Usage(25, 210, requests=1, reasoning_tokens=192),
    ),
    "responses-function-call.sse": (
        "",
        [("call_Dh8ZqJ2tV6xW1yN4mK7pR3sL", "get_weather", {"location": "Paris, France"})],
        "completed",
        None,
        Usage(61, 87, requests=1, reasoning_tokens=64),
    ),
    "responses-parallel-calls.sse": (
        "",
        [
            ("call_3fQm8LkP2wXz9RtY6bNcV1hA", "get_weather", {"location": "Bogotá, Colombia"}),
            ("call_7HsT4vJ1nQe5WcZ2xLm8KpRd", "get_weather", {"location": "München, Germany"}),
        ],
        "completed",
        None,
        Usage(68, 44, requests=1),
    ),
    "responses-preamble-call.sse": (
        "I'll read notes.txt first.",
        [("call_Np4Kx8Qw2Ez6Rt1Yu5Io9Pa3", "read_file", {"path": "notes.txt"})],
        "completed",
        None,
        Usage(140, 233, requests=1, reasoning_tokens=192),
    ),
    "responses-refusal.sse": (
        "I'm sorry, but I can't help with that request.",
        [],
        "refusal",
        "refusal",
        Usage(81, 12, requests=1),
    ),
    "responses-incomplete-text.sse": (
        "The three laws of motion are: first, an object at rest stays",
        [],
        "max_output_tokens",
        "max_output_tokens",
        Usage(21, 16, requests=1),
    ),
    "responses-content-filter.sse": (
        "Here is how you",
        [],
        "content_filter",
        "content_filter",
        Usage(33, 4, requests=1),
    ),
    "responses-usage-cached.sse": (
        "It is 18 °C and sunny in Paris.",
        [],
        "completed",
        None,
        Usage(2006, 301, 1920, requests=1, reasoning_tokens=256),
    ),
    "responses-whole-items.sse": (
        "Checking the weather.",
        [("call_whole_2", "get_weather", {"location": "Oslo"})],
        "completed",
        None,
        Usage(90, 40, requests=1),
    ),
    "responses-reasoning-two-items.sse": (
        "",
        [("call_Tq6Bn2Mx9Lz4Wv8Rc1Ys5Kd7", "get_weather", {"location": "Lima"})],
        "completed",
        None,
        Usage(70, 150, requests=1, reasoning_tokens=128),
    ),
}


def client(server: ProviderServer, model: str = "gpt-5-mini", **kwargs: Any) -> OpenAIResponsesClient:
    """``kwargs``: fields of ``HTTPSettings`` (retry default: none) or of the client."""
    kwargs.setdefault("retry", NO_RETRY)
    names = (
        "api_key",
        "temperature",
        "max_tokens",
        "reasoning_effort",
        "reasoning_summary",
        "encrypted_reasoning",
    )
    own = {k: kwargs.pop(k) for k in names if k in kwargs}
    return OpenAIResponsesClient(model, f"{server.url}/v1", settings=HTTPSettings(**kwargs), **own)


def check(outcome: Outcome, name: str) -> None:
    text, calls, word, incomplete, usage = EXPECTED[name]
    assert outcome.text == text
    assert [(c.id, c.name, c.input) for c in outcome.calls] == calls
    assert all(c.input_error is None for c in outcome.calls)
    assert [(d.stop_reason, d.incomplete) for d in outcome.done] == [(word, incomplete)]
    assert [e.usage for e in outcome.events if isinstance(e, UsageEvent)] == [usage]
    assert outcome.events[-1] is outcome.done[0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("variant", ["whole", "bytes", "random", "crlf-random", "raw-close"])
def test_fixture(name: str, variant: str) -> None:
    body = fixture(name)
    if variant == "whole":
        outcome = stream_reply(client, whole(body))
    elif variant == "bytes":
        outcome = stream_reply(client, byte_by_byte(body))
    elif variant == "random":
        outcome = stream_reply(client, random_chunks(body, seed=len(name)))
    elif variant == "crlf-random":
        outcome = stream_reply(client, random_chunks(crlf(body), seed=7, max_size=5))
    else:  # not chunked: Connection: close ends the body
        with ProviderServer(Reply(random_chunks(body, seed=3), chunked=False)) as server:
            outcome = run(client(server).stream(request()))
    check(outcome, name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_cut_at_every_event_boundary(name: str) -> None:
    """A stream cut before its terminal event is a retryable ProviderError, never a turn."""
    body = fixture(name)
    cuts = [0, *event_boundaries(body)]
    completed = []
    with ProviderServer(handler=lambda got: Reply([body[: int(got.headers["X-Cut"])]])) as server:
        for cut in cuts:
            c = client(server, headers={"X-Cut": str(cut)})
            try:
                outcome = run(c.stream(request()))
            except ProviderError as err:
                assert err.retryable, err
                continue
            finally:
                c.close()
            check(outcome, name)
            completed.append(cut)
    assert completed == [len(body)]


def test_reasoning_blocks_keep_the_done_item_and_what_followed_it() -> None:
    outcome = stream_reply(client, [fixture("responses-preamble-call.sse")])
    blocks = [e.reasoning for e in outcome.events if isinstance(e, ReasoningEvent)]
    assert [b.data["before"] for b in blocks if b.data] == ["text", 0]
    raw = fixture("responses-preamble-call.sse").decode()
    for block in blocks:
        assert (
            block.data is not None and block.origin is not None and block.origin.startswith("responses http")
        )
        item = block.data["item"]
        assert item["encrypted_content"].startswith("gAAAAAB") and f'"{item["encrypted_content"]}"' in raw
    assert blocks[0].text == "**Planning the read**\n\nThe notes are in notes.txt; reading it first."
    kinds = [e.type for e in outcome.events]
    assert kinds.index("reasoning") < kinds.index("text")  # shown before the text it preceded


def test_two_summary_parts_are_joined_by_a_blank_line() -> None:
    outcome = stream_reply(client, [fixture("responses-reasoning-summary.sse")])
    (block,) = [e.reasoning for e in outcome.events if isinstance(e, ReasoningEvent)]
    assert block.text.count("\n\n**Answering briefly**") == 1


def test_a_failed_response_is_retried_before_the_first_event() -> None:
    with ProviderServer(
        Reply([fixture("responses-failed.sse")]), Reply([fixture("responses-text.sse")])
    ) as server:
        waits: list[float] = []
        retry = RetryPolicy(max_retries=2, wait=lambda cancel, seconds: waits.append(seconds) or False)
        outcome = run(client(server, retry=retry).stream(request()))
    assert outcome.text == SDK_TEXT and len(server.requests) == 2 and len(waits) == 1


def test_a_failed_response_names_its_code() -> None:
    with (
        ProviderServer(Reply([fixture("responses-failed.sse")])) as server,
        pytest.raises(ProviderError) as caught,
    ):
        run(client(server).stream(request()))
    assert caught.value.kind == "server_error" and caught.value.retryable
    assert "An error occurred while processing your request" in str(caught.value)


def test_an_error_event_after_text_is_not_retried() -> None:
    with ProviderServer(Reply([fixture("responses-error-event.sse")])) as server:
        retry = RetryPolicy(max_retries=3, wait=lambda cancel, seconds: False)
        seen: list[Any] = []
        with pytest.raises(ProviderError) as caught:
            for event in client(server, retry=retry).stream(request()):
                seen.append(event)
    assert [e.text for e in seen] == ["Let", " me"] and len(server.requests) == 1
    assert caught.value.kind == "server_error"
    assert str(caught.value) == (
        "OpenAI stream error (server_error): The server had an error while processing your request. "
        "Sorry about that!"
    )


def test_an_error_event_with_an_error_object_is_read_too() -> None:
    body = responses_sse(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model. Please adjust your input "
                "and try again.",
                "param": "input",
            },
        }
    )
    with ProviderServer(Reply([body])) as server, pytest.raises(ProviderError) as caught:
        run(client(server).stream(request()))
    assert caught.value.kind == "invalid_request_error" and not caught.value.retryable
    assert "exceeds the context window" in str(caught.value)


def test_a_cut_call_is_kept_with_an_error_and_the_turn_is_incomplete() -> None:
    outcome = stream_reply(client, [fixture("responses-incomplete-mid-call.sse")])
    (call,) = outcome.calls
    assert (call.id, call.name, call.input) == ("call_Wr9Lc3Vb7Nm1Qx5Zt2Kp8Jh4", "write_file", {})
    assert call.input_error is not None and "cut off by the output token limit" in call.input_error
    assert [(d.stop_reason, d.incomplete) for d in outcome.done] == [
        ("max_output_tokens", "max_output_tokens")
    ]


def test_a_surrogate_pair_split_across_deltas_is_joined() -> None:
    events = [
        {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "hi \ud83d"},
        {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "\ude00!"},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    outcome = stream_reply(client, [responses_sse(*events)])
    assert outcome.text == "hi \U0001f600!"


# --- the request body -----------------------------------------------------------------------------

TOOLS = (
    ToolSpec("get_weather", "the weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
    ToolSpec(
        "exact",
        "strict tool",
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        strict=True,
    ),
)


def test_the_body_is_stateless_and_carries_the_whole_record() -> None:
    handler = ResponsesAPI(text_reply("ok"))
    record = [
        Message("user", "weather in Paris?"),
        Message("assistant", "Checking.", (ToolCall("call_1", "get_weather", {"city": "Paris"}),)),
        Message("tool", "18 C", tool_call_id="call_1"),
        Message("assistant", "It is 18 C."),
        Message("user", "thanks"),
    ]
    with ProviderServer(handler=handler) as server:
        c = client(server, max_tokens=300, reasoning_effort="low", api_key="sk-test")
        outcome = run(c.stream(ModelRequest("be brief", record, TOOLS)))
    assert outcome.text == "ok", handler.refused
    captured = server.requests[0]
    assert captured.path == "/v1/responses" and captured.headers["Authorization"] == "Bearer sk-test"
    body = captured.body
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "be brief" and body["max_output_tokens"] == 300
    assert body["reasoning"] == {"effort": "low"}
    assert body["input"] == [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C"},
        {"role": "assistant", "content": "It is 18 C."},
        {"role": "user", "content": "thanks"},
    ]
    assert [(t["name"], t["strict"]) for t in body["tools"]] == [("get_weather", False), ("exact", True)]
    assert body["tools"][0]["parameters"] == {"type": "object", "properties": {"city": {"type": "string"}}}


def test_a_model_without_reasoning_is_not_asked_for_encrypted_content() -> None:
    handler = ResponsesAPI(text_reply("ok"))
    with ProviderServer(handler=handler) as server:
        outcome = run(client(server, model="gpt-4.1", temperature=0.2).stream(request()))
    assert outcome.text == "ok", handler.refused
    body = server.requests[0].body
    assert "include" not in body and "reasoning" not in body and body["temperature"] == 0.2
    refused = {"model": "gpt-4.1", "include": ["reasoning.encrypted_content"], "input": []}
    from api_rules_responses import encrypted_content_supported

    assert encrypted_content_supported(refused, {}) == (
        400,
        "Encrypted content is not supported with this model.",
    )


def test_a_reasoning_model_gets_no_temperature() -> None:
    handler = ResponsesAPI(text_reply("ok"))
    with ProviderServer(handler=handler) as server:
        outcome = run(client(server, model="gpt-5", temperature=0.2).stream(request()))
    assert outcome.text == "ok", handler.refused
    assert "temperature" not in server.requests[0].body


@pytest.mark.parametrize(
    ("schema", "strict"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            True,
        ),
        ({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}, False),
    ],
)
def test_structured_output_goes_as_text_format(schema: dict[str, Any], strict: bool) -> None:
    handler = ResponsesAPI(text_reply('{"a": "x"}'))
    with ProviderServer(handler=handler) as server:
        c = client(server)
        run(c.stream(ModelRequest("", [Message("user", "q")], (), None, schema)))
    assert not handler.refused, handler.refused
    assert server.requests[0].body["text"] == {
        "format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": strict}
    }


def test_options_are_checked_and_reach_create_client() -> None:
    with pytest.raises(ValueError, match="reasoning_effort must be one of none, minimal, low"):
        OpenAIResponsesClient("gpt-5", api_key="k", reasoning_effort="max")
    with pytest.raises(ValueError, match="reasoning_summary must be one of auto"):
        OpenAIResponsesClient("gpt-5", api_key="k", reasoning_summary="all")
    made = create_client("openai-responses", api_key="k", reasoning_effort="high", reasoning_summary="auto")
    assert isinstance(made, OpenAIResponsesClient)
    assert made.reasoning == {"effort": "high", "summary": "auto"} and made.encrypted_reasoning
    assert repr(made) == "OpenAIResponsesClient(model='gpt-5-mini', base_url='https://api.openai.com/v1')"


def test_the_key_never_reaches_an_error_text() -> None:
    key = "sk-proj-SECRETSECRETSECRET0123456789"
    echo = openai_error(401, f"Incorrect API key provided: {key}. You can find your API key at ...")
    with ProviderServer(echo) as server, pytest.raises(ProviderError) as caught:
        run(client(server, api_key=key).stream(request()))
    assert key not in str(caught.value) and "HTTP 401" in str(caught.value)


def test_prices_give_the_cost_with_cached_and_reasoning_tokens() -> None:
    prices = {"input": 0.25, "output": 2.0, "cache_read": 0.025}
    with ProviderServer(Reply([fixture("responses-usage-cached.sse")])) as server:
        c = OpenAIResponsesClient(
            "gpt-5-mini", f"{server.url}/v1", settings=HTTPSettings(retry=NO_RETRY), prices=prices
        )
        outcome = run(c.stream(request()))
    (usage,) = [e.usage for e in outcome.events if isinstance(e, UsageEvent)]
    assert (usage.cache_read_tokens, usage.reasoning_tokens) == (1920, 256)
    assert usage.cost_usd == pytest.approx((86 * 0.25 + 1920 * 0.025 + 301 * 2.0) / 1e6)


def test_reasoning_of_another_origin_is_never_sent() -> None:
    handler = ResponsesAPI(text_reply("ok"))
    with ProviderServer(handler=handler) as server:
        origin = responses_origin(f"{server.url}/v1")
        elsewhere = responses_origin("https://api.openai.com/v1")
        item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABx"}
        record = [
            Message("user", "q"),
            Message(
                "assistant",
                "a",
                reasoning=(
                    Reasoning("thought", signature="sig"),  # Anthropic thinking
                    Reasoning("plain"),  # reasoning_content of a chat server
                    Reasoning("", origin=elsewhere, data={"item": item, "before": "text"}),  # another org's
                ),
            ),
            Message("user", "again"),
        ]
        run(client(server).stream(ModelRequest("", record, ())))
        assert origin != elsewhere
    assert not handler.refused, handler.refused
    assert [i.get("type", i.get("role")) for i in server.requests[0].body["input"]] == [
        "user",
        "assistant",
        "user",
    ]


def test_call_ids_the_api_would_refuse_are_mapped_and_mapped_back() -> None:
    long_id = "chatcmpl-tool-8f3a2c91d4e64b7f9a0c5e1d2b3f4a6c"  # 46 characters
    from miniagent.providers._history import short_id

    handler = ResponsesAPI(call_reply(short_id(long_id), "t", {}))
    record = [
        Message("user", "q"),
        Message("assistant", "", (ToolCall(long_id, "t", {}),)),
        Message("tool", "r", tool_call_id=long_id),
    ]
    with ProviderServer(handler=handler) as server:
        outcome = run(client(server).stream(ModelRequest("", record, ())))
    sent = server.requests[0].body["input"]
    assert sent[1]["call_id"] == sent[2]["call_id"] == short_id(long_id)
    assert [c.id for c in outcome.calls] == [
        long_id
    ]  # the model repeated the wire id: the record's comes back


def test_an_unknown_event_and_a_done_marker_are_fine() -> None:
    body = (
        responses_sse(
            {"type": "response.output_text.annotation.added", "annotation": {}},
            {"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "hi"},
        )
        + b"data: [DONE]\n\n"
    )
    outcome = stream_reply(client, [body])
    assert outcome.text == "hi" and [d.stop_reason for d in outcome.done] == ["completed"]


def test_data_that_is_not_json_is_a_retryable_error() -> None:
    not_json = Reply([b"event: response.created\ndata: {nope\n\n"])
    with ProviderServer(not_json) as server, pytest.raises(ProviderError) as caught:
        run(client(server).stream(request()))
    assert caught.value.retryable and "not valid JSON" in str(caught.value)


def test_a_bad_usage_count_is_refused() -> None:
    body = responses_sse(
        {"type": "response.completed", "response": {"usage": {"input_tokens": "12", "output_tokens": 1}}}
    )
    with ProviderServer(Reply([body])) as server, pytest.raises(ProviderError, match='input_tokens = "12"'):
        run(client(server).stream(request()))


def test_schemas_the_api_would_refuse_as_they_stand_are_sent_in_a_form_it_takes() -> None:
    from api_rules_responses import function_schemas

    loose = ToolSpec("mcp_tool", "no properties", {"type": "object"})
    either = ToolSpec(
        "either",
        "a combination at the root",
        {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object"}]},
    )
    handler = ResponsesAPI(text_reply("ok"))
    with ProviderServer(handler=handler) as server:
        run(client(server).stream(ModelRequest("", [Message("user", "q")], (loose, either))))
    assert not handler.refused, handler.refused
    assert [t["strict"] for t in server.requests[0].body["tools"]] == [False, False]
    # what the API answers a function sent without "strict" (strict by default) whose schema breaks a rule
    function = {"type": "function", "name": "t", "parameters": {"type": "object", "properties": {}}}
    unsaid = {"tools": [function]}
    assert function_schemas(unsaid, {}) == (
        400,
        "Invalid schema for function 't': In context=(), 'additionalProperties' is required to be supplied "
        "and to be false.",
    )
