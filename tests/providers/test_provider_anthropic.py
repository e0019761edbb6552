"""AnthropicClient against a real HTTP server on 127.0.0.1: fixtures, shapes, request bodies."""

from __future__ import annotations

import random
from typing import Any

import pytest
from providers_server import (
    Outcome,
    ProviderServer,
    Reply,
    anthropic_sse,
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

from miniagent import Message, ProviderError, ToolCall, ToolSpec
from miniagent.providers import AnthropicClient, HTTPSettings, RetryPolicy
from miniagent.providers._anthropic_body import TRIMMED_PLACEHOLDER, build_messages
from miniagent.providers._history import short_id

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)

EXPECTED: dict[str, tuple[str, list[tuple[str, str, dict[str, Any]]], str]] = {
    "anthropic-text.sse": ("Hello there!", [], "end_turn"),
    "anthropic-tool-use.sse": (
        "Okay, let's check the weather for San Francisco, CA:",
        [
            (
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                {"location": "San Francisco, CA", "unit": "fahrenheit"},
            )
        ],
        "tool_use",
    ),
}


def client(server: ProviderServer, **kwargs: Any) -> AnthropicClient:
    """``kwargs``: fields of ``HTTPSettings`` (retry default: none) or of the client."""
    if "max_retries" in kwargs:
        kwargs["retry"] = RetryPolicy(max_retries=kwargs.pop("max_retries"))
    kwargs.setdefault("retry", NO_RETRY)
    client_args = {k: kwargs.pop(k) for k in ("api_key", "temperature", "max_tokens") if k in kwargs}
    return AnthropicClient("claude-test", server.url, settings=HTTPSettings(**kwargs), **client_args)


def stream_body(chunks: list[bytes], **kwargs: Any) -> Outcome:
    return stream_reply(client, chunks, **kwargs)


def check(outcome: Outcome, name: str) -> None:
    text, calls, finish = EXPECTED[name]
    assert outcome.text == text
    assert [(c.id, c.name, c.input) for c in outcome.calls] == calls
    assert [d.stop_reason for d in outcome.done] == [finish]
    assert outcome.events[-1] is outcome.done[0]


def variants(body: bytes, name: str) -> dict[str, list[bytes]]:
    return {
        "whole": whole(body),
        "bytes": byte_by_byte(body),
        "random": random_chunks(body, seed=len(name)),
        "crlf-random": random_chunks(crlf(body), seed=11, max_size=5),
        "crlf-bytes": byte_by_byte(crlf(body)),
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("variant", ["whole", "bytes", "random", "crlf-random", "crlf-bytes"])
def test_fixture(name: str, variant: str) -> None:
    check(stream_body(variants(fixture(name), name)[variant]), name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_cut_at_every_event_boundary(name: str) -> None:
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
    stop_at = body.find(b'"stop_reason":"')  # the message_delta event
    assert stop_at > 0
    assert completed == [cut for cut in cuts if cut > stop_at]


@pytest.mark.parametrize("variant", ["whole", "bytes", "crlf-random"])
def test_error_midstream_fixture(variant: str) -> None:
    body = fixture("anthropic-error-midstream.sse")
    with ProviderServer(Reply(variants(body, "e")[variant])) as server:
        seen: list[Any] = []
        with pytest.raises(ProviderError, match="Overloaded") as info:
            for event in client(server, max_retries=3).stream(request()):
                seen.append(event)
        assert len(server.requests) == 1  # "Hello" was yielded: no retry
    assert info.value.kind == "overloaded_error" and info.value.retryable
    assert [e.text for e in seen] == ["Hello"]


def test_error_midstream_cut_at_every_boundary_never_completes() -> None:
    body = fixture("anthropic-error-midstream.sse")
    with ProviderServer(handler=lambda got: Reply([body[: int(got.headers["X-Cut"])]])) as server:
        for cut in [0, *event_boundaries(body)]:
            with pytest.raises(ProviderError):
                run(client(server, headers={"X-Cut": str(cut)}).stream(request()))


def _tool_stream(*json_parts: str, stop: str = "tool_use", stop_block: bool = True) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "content": [], "stop_reason": None}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "tu1", "name": "run"},
        },
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": part},
        }
        for part in json_parts
    ]
    if stop_block:
        events.append({"type": "content_block_stop", "index": 1})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    return anthropic_sse(*events)


def test_tool_use_without_deltas_or_empty_json_means_empty_input() -> None:
    for parts in [(), ("",), ("", " ")]:
        outcome = stream_body([_tool_stream(*parts)])
        assert outcome.calls == [ToolCall("tu1", "run", {})]
        assert outcome.text == ""  # thinking is ignored


def test_tool_use_with_bad_json_gets_input_error() -> None:
    [call] = stream_body([_tool_stream('{"cmd": ', "1,,}")]).calls
    assert call.input == {} and call.input_error is not None
    assert call.input_error.startswith("arguments are not valid JSON")
    [call] = stream_body([_tool_stream("[1]")]).calls
    assert call.input_error == "arguments must be a JSON object, got array"


@pytest.mark.parametrize("stop_block", [True, False])
def test_max_tokens_while_writing_a_call_marks_it_cut(stop_block: bool) -> None:
    body = _tool_stream('{"cmd": "rm -rf /tm', stop="max_tokens", stop_block=stop_block)
    outcome = stream_body([body])
    [call] = outcome.calls
    assert (call.id, call.name, call.input) == ("tu1", "run", {})  # never run: no input
    assert call.input_error is not None and "cut off by the output token limit" in call.input_error
    assert (outcome.done[0].stop_reason, outcome.done[0].incomplete) == ("max_tokens", "max_output_tokens")


def test_max_tokens_after_a_whole_call_keeps_it() -> None:
    outcome = stream_body([_tool_stream('{"cmd": "ls"}', stop="max_tokens")])
    assert outcome.calls == [ToolCall("tu1", "run", {"cmd": "ls"})]
    assert outcome.done[0].stop_reason == "max_tokens"


def test_request_body_shape_and_headers() -> None:
    messages = [
        Message("user", "weather?"),
        Message("assistant", "Checking.", (ToolCall("t1", "w", {"q": "SF"}), ToolCall("t2", "w", {}))),
        Message("tool", "sunny", tool_call_id="t1"),
        Message("tool", "failed", tool_call_id="t2", is_error=True),
        Message("user", "and tomorrow?"),
    ]
    tools = (ToolSpec("w", "Weather.", {"type": "object"}),)
    with ProviderServer(Reply([fixture("anthropic-text.sse")])) as server:
        c = client(server, api_key="sk-ant-test", max_tokens=123)
        run(c.stream(request(messages, system="sys", tools=tools)))
        [captured] = server.requests
    assert captured.path == "/v1/messages"
    assert captured.headers["x-api-key"] == "sk-ant-test"
    assert captured.headers["anthropic-version"] == "2023-06-01"
    assert captured.body == {
        "model": "claude-test",
        "max_tokens": 123,
        "stream": True,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {
                "name": "w",
                "description": "Weather.",
                "input_schema": {"type": "object"},
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "w", "input": {"q": "SF"}},
                    {"type": "tool_use", "id": "t2", "name": "w", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "failed", "is_error": True},
                    {"type": "text", "text": "and tomorrow?", "cache_control": {"type": "ephemeral"}},
                ],
            },
        ],
    }


def test_trimmed_history_starting_with_assistant_and_tool_messages() -> None:
    messages = [
        Message("tool", "old result", tool_call_id="lost"),  # its call was trimmed away
        Message("assistant", "", (ToolCall("c1", "ls", {}),)),
        Message("tool", "a.txt", tool_call_id="c1"),
    ]
    assert build_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": TRIMMED_PLACEHOLDER}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"}]},
    ]


def test_merges_consecutive_same_role_and_drops_empty_messages() -> None:
    messages = [
        Message("user", "a"),
        Message("user", "b"),
        Message("assistant", ""),
        Message("assistant", "x"),
        Message("assistant", "y  "),
    ]
    assert build_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
    ]


def test_unanswered_calls_and_duplicate_results() -> None:
    messages = [
        Message("user", "go"),
        Message("assistant", "", (ToolCall("c1", "ls", {}), ToolCall("c2", "ls", {}))),
        Message("tool", "one", tool_call_id="c1"),
        Message("tool", "one again", tool_call_id="c1"),
        Message("assistant", "next"),
    ]
    sent = build_messages(messages)
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant"]
    results = sent[2]["content"]
    assert [(b["tool_use_id"], b.get("is_error", False)) for b in results] == [
        ("c1", False),
        ("c2", True),
    ]


def test_empty_history_and_foreign_ids() -> None:
    assert build_messages([]) == [
        {"role": "user", "content": [{"type": "text", "text": TRIMMED_PLACEHOLDER}]}
    ]
    sent = build_messages(
        [
            Message("user", "go"),
            Message("assistant", "", (ToolCall("fc.1:x", "ls", {}),)),
            Message("tool", "ok", tool_call_id="fc.1:x"),
        ]
    )
    # an id the API refuses goes as its short hash-based id (tests/test_wire_requests.py, kind 7)
    assert sent[1]["content"][0]["id"] == sent[2]["content"][0]["tool_use_id"] == short_id("fc.1:x")


def test_ping_only_then_close_is_premature() -> None:
    body = b'event: ping\ndata: {"type": "ping"}\n\n'
    with pytest.raises(ProviderError, match="before the message was complete") as info:
        stream_body([body])
    assert info.value.retryable


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_cut_anywhere(name: str) -> None:
    """Cuts inside lines (sampled offsets): a retryable ProviderError or the whole turn."""
    body = fixture(name)
    offsets = sorted(random.Random(name).sample(range(len(body)), 40))
    with ProviderServer(handler=lambda got: Reply([body[: int(got.headers["X-Cut"])]])) as server:
        for cut in offsets:
            c = client(server, headers={"X-Cut": str(cut)})
            try:
                outcome = run(c.stream(request()))
            except ProviderError as err:
                assert err.retryable, (cut, err)
                continue
            finally:
                c.close()
            check(outcome, name)
