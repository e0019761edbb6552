"""OpenAIChatClient against a real HTTP server on 127.0.0.1: fixtures, shapes, request bodies."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
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
    sse,
    stream_reply,
    whole,
)

from miniagent import Message, ProviderError, ToolCall, ToolSpec
from miniagent.providers import HTTPSettings, OpenAIChatClient, RetryPolicy

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)

OPENAI_TEXT = (
    "I'm unable to provide real-time updates, including current weather information. For the "
    "latest weather in San Francisco, I recommend checking a reliable weather website or app "
    "such as the Weather Channel, BBC Weather, or a local San Francisco news station."
)

# file -> (text, [(id, name, input)], finish reason), from tests/fixtures/sse/README.md
EXPECTED: dict[str, tuple[str, list[tuple[str, str, dict[str, Any]]], str]] = {
    "openai-text.sse": (OPENAI_TEXT, [], "stop"),
    "openai-one-tool.sse": (
        "",
        [("call_5uxEBMFySqqQGu02I5QHA8k6", "get_weather", {"city": "New York City"})],
        "tool_calls",
    ),
    "openai-parallel-tools.sse": (
        "",
        [
            (
                "call_lQnnsesjFMWMQ5IeWPHzR4th",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "UK", "units": "c"},
            ),
            (
                "call_2xjOUgaCdiwAcl9ZBL9LyMUU",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ],
        "tool_calls",
    ),
    "ollama-parallel-tools.sse": (
        "",
        [
            ("call_wteop8bt", "run_command", {"command": "ls"}),
            ("call_rk2xye1l", "run_command", {"command": "ls -l"}),
        ],
        "tool_calls",
    ),
    "llamacpp-tool-call.sse": (
        "",
        [("ZJ2xV7o3tT5wzSrRLrqRnsFF9fATW899", "python", {"code": "print('Hello, World!')"})],
        "tool_calls",
    ),
}


def client(server: ProviderServer, **kwargs: Any) -> OpenAIChatClient:
    """``kwargs``: fields of ``HTTPSettings`` (retry default: none) or of the client."""
    kwargs.setdefault("retry", NO_RETRY)
    client_args = {k: kwargs.pop(k) for k in ("api_key", "temperature", "max_tokens") if k in kwargs}
    return OpenAIChatClient("test-model", f"{server.url}/v1", settings=HTTPSettings(**kwargs), **client_args)


def stream_body(chunks: list[bytes], **kwargs: Any) -> Outcome:
    return stream_reply(client, chunks, **kwargs)


def check(outcome: Outcome, name: str) -> None:
    text, calls, finish = EXPECTED[name]
    assert outcome.text == text
    assert [(c.id, c.name, c.input) for c in outcome.calls] == calls
    assert all(c.input_error is None for c in outcome.calls)
    assert [d.stop_reason for d in outcome.done] == [finish]
    assert outcome.events[-1] is outcome.done[0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("variant", ["whole", "bytes", "random", "crlf-random", "raw-close"])
def test_fixture(name: str, variant: str) -> None:
    body = fixture(name)
    if variant == "whole":
        outcome = stream_body(whole(body))
    elif variant == "bytes":
        outcome = stream_body(byte_by_byte(body))
    elif variant == "random":
        outcome = stream_body(random_chunks(body, seed=len(name)))
    elif variant == "crlf-random":
        outcome = stream_body(random_chunks(crlf(body), seed=7, max_size=5))
    else:  # not chunked: Connection: close ends the body
        with ProviderServer(Reply(random_chunks(body, seed=3), chunked=False)) as server:
            outcome = run(client(server).stream(request()))
    check(outcome, name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_cut_at_every_event_boundary(name: str) -> None:
    """A premature end raises ProviderError (retryable); never a completed partial turn."""
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
            check(outcome, name)  # a completed turn is always the whole turn
            completed.append(cut)
    finish_at = body.find(b'"finish_reason":"')
    assert finish_at > 0
    assert completed == [cut for cut in cuts if cut > finish_at]


def test_shape_vllm_first_fragment_without_arguments_and_no_done() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "chatcmpl-tool-1",
                                "type": "function",
                                "function": {"name": "ls"},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"p"'}}]}}
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ': "."}'}}]}}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )
    outcome = stream_body([body])
    assert outcome.calls == [ToolCall("chatcmpl-tool-1", "ls", {"p": "."})]
    assert outcome.done[0].stop_reason == "tool_calls"


def test_shape_calls_without_id_get_stable_distinct_ids_and_empty_arguments_mean_empty_object() -> None:
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"name": "a", "arguments": ""}}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"name": "b"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )
    outcome = stream_body([body])
    assert [(c.name, c.input, c.input_error) for c in outcome.calls] == [
        ("a", {}, None),
        ("b", {}, None),
    ]
    ids = [c.id for c in outcome.calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


def test_shape_new_id_on_used_index_starts_a_new_call() -> None:
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "x1", "function": {"name": "f", "arguments": '{"n": 1}'}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "x2", "function": {"name": "g", "arguments": '{"n": 2}'}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "x2", "function": {"name": "g", "arguments": ""}}]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )
    outcome = stream_body([body])
    assert outcome.calls == [ToolCall("x1", "f", {"n": 1}), ToolCall("x2", "g", {"n": 2})]


def test_shape_tool_calls_with_finish_reason_stop_and_text() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"content": "Let me look."}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}},
        done=True,
    )
    outcome = stream_body([body])
    assert outcome.text == "Let me look."
    assert outcome.calls == [ToolCall("c", "f", {})]
    assert outcome.done[0].stop_reason == "stop"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": 1', "arguments are not valid JSON: Expecting"),
        ("[1, 2]", "arguments must be a JSON object, got array"),
        ('"text"', "arguments must be a JSON object, got string"),
    ],
)
def test_bad_arguments_are_emitted_with_input_error(arguments: str, problem: str) -> None:
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "f", "arguments": arguments}}
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )
    [call] = stream_body([body]).calls
    assert call.input == {}
    assert call.input_error is not None and call.input_error.startswith(problem)


def test_length_cut_while_writing_a_call_marks_it_cut() -> None:
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c",
                                "function": {
                                    "name": "write_file",
                                    "arguments": '{"path": "a.txt", "content": "abc',
                                },
                            }
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        done=True,
    )
    outcome = stream_body([body])
    [call] = outcome.calls
    assert (call.id, call.name, call.input) == ("c", "write_file", {})  # never run: no input
    assert call.input_error is not None and "cut off by the output token limit" in call.input_error
    assert outcome.done[0].incomplete == "max_output_tokens"


def test_length_cut_in_text_ends_with_the_text() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"content": "Once upon a"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        done=True,
    )
    outcome = stream_body([body])
    assert outcome.text == "Once upon a"
    assert outcome.done[0].stop_reason == "length"
    assert outcome.done[0].incomplete == "max_output_tokens"


def test_in_stream_error_chunk() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"error": {"message": "The server had an error", "type": "server_error", "code": None}},
    )
    with pytest.raises(ProviderError, match="The server had an error") as info:
        stream_body([body])
    assert info.value.retryable and info.value.kind == "server_error"


def test_invalid_json_data_names_the_problem() -> None:
    body = b'data: {"choices": [\n\n'
    with pytest.raises(ProviderError, match="not valid JSON") as info:
        stream_body([body])
    assert not isinstance(info.value.__cause__, json.JSONDecodeError)


def test_html_page_with_status_200() -> None:
    reply = Reply([b"<html><body><h1>Welcome to nginx!</h1></body></html>"], content_type="text/html")
    with ProviderServer(reply) as server, pytest.raises(ProviderError, match="text/html") as info:
        run(client(server).stream(request()))
    assert "Welcome to nginx!" in str(info.value)


def test_request_body_shape() -> None:
    messages = [
        Message("tool", "orphan result", tool_call_id="gone"),  # dangling after trimming
        Message("user", "list files"),
        Message(
            "assistant",
            "",
            (ToolCall("c1", "ls", {"path": "."}), ToolCall("c2", "cat", {"path": "ä.txt"})),
        ),
        Message("tool", "a.txt", tool_call_id="c1"),
        Message("tool", "boom", tool_call_id="c2", is_error=True),
        Message("assistant", "Done."),
        Message("assistant", ""),  # empty: not sent
        Message("user", "thanks"),
    ]
    tools = (ToolSpec("ls", "List a directory.", {"type": "object", "properties": {}}),)
    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        c = client(server, api_key="sk-test", temperature=0.0, max_tokens=50)
        run(c.stream(request(messages, tools=tools)))
        [captured] = server.requests
    assert captured.path == "/v1/chat/completions"
    assert captured.headers["Authorization"] == "Bearer sk-test"
    assert captured.headers["Accept"] == "text/event-stream"
    body = captured.body
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["temperature"] == 0.0 and body["max_tokens"] == 50
    assert body["stream_options"] == {"include_usage": True}  # the usage chunk (issue 15)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List a directory.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}},
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "cat", "arguments": '{"path": "ä.txt"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "boom"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks"},
    ]


def test_unanswered_call_gets_an_error_result() -> None:
    messages = [
        Message("user", "go"),
        Message("assistant", "", (ToolCall("c1", "ls", {}),)),
        Message("user", "still there?"),
    ]
    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        run(client(server).stream(request(messages, system="")))
        sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["tool_call_id"] == "c1"


def test_no_tools_key_when_no_tools_and_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        run(client(server).stream(request()))
        captured = server.requests[0]
    assert "tools" not in captured.body
    assert "Authorization" not in captured.headers  # the env key is not sent to localhost


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
