"""Wire fidelity 3, kinds 1, 8, 9 and 10: how a turn ended, errors worded as the server meant
them, a key held back, usage that never came.

Every input is served from a real loopback HTTP server (``providers_server.ProviderServer``)
that answers as the API does (``api_rules_endings``); the real loop runs against it. The streams
worth keeping are fixtures (tests/fixtures/sse/README.md).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from api_rules import ANTHROPIC_RULES, OPENAI_RULES, anthropic_error, enforcing, openai_error
from api_rules_endings import (
    anthropic_system_not_blank,
    chat_text_with_usage,
    chat_tool_call_without_usage,
    keyless_gateway,
    openai_quota_exceeded,
    openai_rate_limited,
)
from providers_server import (
    ProviderServer,
    RecordingWait,
    Reply,
    anthropic_sse,
    byte_by_byte,
    crlf,
    fixture,
    random_chunks,
    request,
    run,
    sse,
)

from miniagent import (
    DoneEvent,
    EmptyResponseError,
    IncompleteResponseError,
    MiniagentError,
    ProviderError,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    load_session,
    run_agent,
)
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers._endings import turn_ending
from miniagent.testing import ScriptedClient

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
OPENAI_TEXT = Reply([fixture("openai-text.sse")])
ANTHROPIC_TEXT = Reply([fixture("anthropic-text.sse")])


def openai_client(server: ProviderServer, **options: Any) -> Any:
    options.setdefault("retry", NO_RETRY)
    return create_client("openai", "m", f"{server.url}/v1", options.pop("api_key", "key"), **options)


def anthropic_client(server: ProviderServer, **options: Any) -> Any:
    options.setdefault("retry", NO_RETRY)
    return create_client("anthropic", "m", server.url, "key", **options)


CLIENTS = {"openai": openai_client, "anthropic": anthropic_client}


class Recorder:
    """Tools that record the inputs they ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str) -> Tool:
        def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
            self.ran.append((name, arguments))
            return ToolResult(f"{name} ok")

        schema = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}
        return Tool(name, f"the {name} tool", schema, execute)


# --- kind 1: how a turn ended ----------------------------------------------------------------------

ENDINGS = [
    # (fixture, client, reason, the provider's word, the text that arrived)
    (
        "openai-length-after-text.sse",
        "openai",
        "max_output_tokens",
        "length",
        "The three laws of motion are: first, an object at rest stays",
    ),
    (
        "anthropic-max-tokens-text.sse",
        "anthropic",
        "max_output_tokens",
        "max_tokens",
        "Here is a short story about a lighthouse keeper named Ada. Every night she",
    ),
    (
        "anthropic-context-window-exceeded.sse",
        "anthropic",
        "context_window",
        "model_context_window_exceeded",
        "Summing up the files above: the parser",
    ),
    ("openrouter-finish-error.sse", "openai", "provider_error", "error", "The capital of Australia is"),
    ("openai-content-filter.sse", "openai", "content_filter", "content_filter", "Here is how you"),
    (
        "anthropic-refusal.sse",
        "anthropic",
        "refusal",
        "refusal",
        "I can't help with synthesizing that compound, since it could cause serious harm.",
    ),
    ("deepseek-reasoning-cut.sse", "openai", "max_output_tokens", "length", ""),  # all reasoning
    ("anthropic-thinking-cut.sse", "anthropic", "max_output_tokens", "max_tokens", ""),  # all thinking
    ("llamacpp-empty-length.sse", "openai", "max_output_tokens", "length", ""),  # empty, cut
]


@pytest.mark.parametrize(("name", "api", "reason", "detail", "text"), ENDINGS, ids=[e[0] for e in ENDINGS])
def test_an_answer_that_did_not_end_naturally_is_never_complete(
    tmp_path: Path, name: str, api: str, reason: str, detail: str, text: str
) -> None:
    session = tmp_path / "s.jsonl"
    seen: list[Any] = []
    with ProviderServer(Reply(random_chunks(fixture(name), seed=len(name)))) as server:
        client = CLIENTS[api](server)
        with pytest.raises(IncompleteResponseError) as caught:
            run_agent(
                client=client,
                system="be brief",
                tools=[],
                user="q",
                max_turns=3,
                session_path=session,
                on_message=seen.append,
            )
        client.close()
    error = caught.value
    assert (error.reason, error.detail, error.text) == (reason, detail, text)
    assert isinstance(error, MiniagentError) and not isinstance(error, EmptyResponseError)
    assert "without text or tool calls" not in str(error)
    assert [m.role for m in load_session(session)] == ["user"]  # nothing of the turn committed
    assert [m.role for m in seen] == ["user"]
    assert len(server.requests) == 1  # not retried, not asked again
    assert pickle.loads(pickle.dumps(error)) == error


@pytest.mark.parametrize("variant", ["bytes", "crlf-random"])
@pytest.mark.parametrize(("name", "api", "reason", "detail", "text"), ENDINGS, ids=[e[0] for e in ENDINGS])
def test_each_ending_survives_any_chunking(
    name: str, api: str, reason: str, detail: str, text: str, variant: str
) -> None:
    body = fixture(name)
    chunks = byte_by_byte(body) if variant == "bytes" else random_chunks(crlf(body), seed=7, max_size=5)
    with ProviderServer(Reply(chunks)) as server:
        client = CLIENTS[api](server)
        outcome = run(client.stream(request()))
        client.close()
    assert outcome.text == text and outcome.calls == []
    assert [(d.stop_reason, d.incomplete) for d in outcome.done] == [(detail, reason)]
    assert outcome.events[-1] is outcome.done[0]


def test_the_error_names_the_reason_and_the_providers_word_but_no_cli_option() -> None:
    error = IncompleteResponseError("max_output_tokens", "length", "Once upon a")
    assert str(error) == (
        "the model's answer was cut at the output token limit (stop reason 'length'); "
        "11 characters of text arrived and were not committed"
    )
    for reason in ("max_output_tokens", "context_window", "content_filter", "refusal", "provider_error"):
        assert "--" not in str(IncompleteResponseError(reason, "x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown incomplete reason"):
        IncompleteResponseError("tired")  # type: ignore[arg-type]


def test_a_natural_end_with_nothing_is_still_the_empty_answer() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]},
        done=True,
    )
    with ProviderServer(Reply([body])) as server:
        client = openai_client(server)
        with pytest.raises(EmptyResponseError):
            run_agent(client=client, system="", tools=[], user="q", max_turns=1)
        client.close()


@pytest.mark.parametrize(
    ("word", "reason"),
    [
        ("stop", None),
        ("tool_calls", None),
        ("end_turn", None),
        ("stop_sequence", None),
        ("tool_use", None),
        ("eos", None),
        (None, None),
        ("STOP", None),
        ("length", "max_output_tokens"),
        ("max_tokens", "max_output_tokens"),
        ("model_length", "context_window"),
        ("model_context_window_exceeded", "context_window"),
        ("content_filter", "content_filter"),
        ("refusal", "refusal"),
        ("error", "provider_error"),
        ("pause_turn", "provider_error"),
        ("insufficient_system_resource", "provider_error"),  # unknown: never natural
    ],
)
def test_every_stop_reason_is_read_natural_or_not(word: str | None, reason: str | None) -> None:
    assert turn_ending(word) == reason


def test_a_scripted_ending_reaches_the_loop_and_a_later_done_does_not_clear_it() -> None:
    client = ScriptedClient([["cut", DoneEvent("length", "max_output_tokens")]])  # a DoneEvent() follows
    with pytest.raises(IncompleteResponseError) as caught:
        run_agent(client=client, system="", tools=[], user="q", max_turns=1)
    assert (caught.value.reason, caught.value.text) == ("max_output_tokens", "cut")


def test_a_call_cut_by_the_limit_is_answered_with_an_error_result_and_the_run_goes_on(tmp_path: Path) -> None:
    tools = Recorder()
    session = tmp_path / "s.jsonl"
    handler = enforcing(
        OPENAI_RULES, [Reply([fixture("openai-length-mid-call.sse")]), OPENAI_TEXT], openai_error
    )
    with ProviderServer(handler=handler) as server:
        client = openai_client(server)
        result = run_agent(
            client=client,
            system="",
            tools=[tools.tool("write_file")],
            user="write an essay",
            max_turns=3,
            session_path=session,
        )
        client.close()
    assert result.stop_reason == "complete" and tools.ran == []  # the cut call never ran
    call = result.messages[1].tool_calls[0]
    assert (call.id, call.name, call.input) == ("call_Cut5xLq2Zr8", "write_file", {})
    answer = result.messages[2]
    assert answer.role == "tool" and answer.tool_call_id == call.id and answer.is_error
    assert answer.content.startswith(
        "invalid input for write_file: the arguments were cut off by the output token limit"
    )
    assert "shorter arguments" in answer.content
    assert load_session(session) == result.messages
    assert len(server.requests) == 2  # the second request passed the API's rules


def test_a_turn_cut_after_a_whole_call_runs_that_call_and_answers_the_cut_one(tmp_path: Path) -> None:
    tools = Recorder()
    handler = enforcing(
        ANTHROPIC_RULES,
        [Reply([fixture("anthropic-max-tokens-mid-call.sse")]), ANTHROPIC_TEXT],
        anthropic_error,
    )
    with ProviderServer(handler=handler) as server:
        client = anthropic_client(server)
        result = run_agent(
            client=client,
            system="",
            tools=[tools.tool("read_file"), tools.tool("write_file")],
            user="write chapter 1",
            max_turns=3,
        )
        client.close()
    assert result.stop_reason == "complete"
    assert tools.ran == [("read_file", {"path": "outline.md"})]
    turn = result.messages[1]
    assert turn.content == "I'll read the outline, then write the chapter."
    assert [(c.name, c.input) for c in turn.tool_calls] == [
        ("read_file", {"path": "outline.md"}),
        ("write_file", {}),
    ]
    results = [m for m in result.messages if m.role == "tool"]
    assert (results[0].content, results[0].is_error) == ("read_file ok", False)
    assert (
        results[1].is_error
        and "cut off by the output token limit (stop reason 'max_tokens')" in results[1].content
    )
    assert len(server.requests) == 2 and result.messages[-1].content == "Hello there!"


def test_a_call_cut_before_its_name_is_no_call(tmp_path: Path) -> None:
    body = anthropic_sse(
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_x", "name": "", "input": {}},
        },
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    )
    with ProviderServer(Reply([body])) as server:
        client = anthropic_client(server)
        with pytest.raises(IncompleteResponseError) as caught:
            run_agent(client=client, system="", tools=[], user="q", max_turns=1)
        client.close()
    assert caught.value.reason == "max_output_tokens"


# --- kind 1: the embedded model's native client (llama.cpp /completion, served on loopback) ----


class _FakeServer:
    """What ``LocalChatClient`` reads of its server; ``base_url`` is a loopback ``ProviderServer``."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.alias = "smollm2"
        self.base_url = url
        self.model_path = tmp_path / "model.gguf"
        self.n_ctx = 2048
        self.prompt_cache = None


def _completion(*pieces: str, stop_type: str) -> Reply:
    events = [{"content": piece, "stop": False} for piece in pieces]
    events.append(
        {
            "content": "",
            "stop": True,
            "stop_type": stop_type,
            "tokens_predicted": 8,
            "tokens_evaluated": 120,
            "timings": {"cache_n": 100, "prompt_n": 20},
        }
    )
    return Reply([sse(*events)])


def _native(server: ProviderServer, tmp_path: Path) -> Any:
    from miniagent.providers.local.native import LocalChatClient

    client = LocalChatClient(_FakeServer(server.url, tmp_path), max_tokens=8, settings=None)
    client.lock_path = None
    return client


def test_the_native_client_cut_at_its_limit_is_incomplete_with_its_text(tmp_path: Path) -> None:
    with ProviderServer(_completion("The file", " says that", stop_type="limit")) as server:
        client = _native(server, tmp_path)
        with pytest.raises(IncompleteResponseError) as caught:
            run_agent(client=client, system="", tools=[], user="What is in notes.txt?", max_turns=1)
        client.close()
    assert (caught.value.reason, caught.value.detail, caught.value.text) == (
        "max_output_tokens",
        "limit",
        "The file says that",
    )


def test_the_native_client_keeps_the_name_of_a_call_cut_at_its_limit(tmp_path: Path) -> None:
    cut = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "Once upon'
    with ProviderServer(_completion(cut, stop_type="limit")) as server:
        client = _native(server, tmp_path)
        outcome = run(client.stream(request(tools=())))
        client.close()
    [call] = outcome.calls
    assert (call.name, call.input) == ("write_file", {})
    assert call.input_error is not None and "cut off by the output token limit" in call.input_error
    assert (outcome.done[0].stop_reason, outcome.done[0].incomplete) == ("limit", "max_output_tokens")


def test_the_native_client_drops_a_call_cut_before_its_name(tmp_path: Path) -> None:
    with ProviderServer(_completion('<tool_call>\n{"na', stop_type="limit")) as server:
        client = _native(server, tmp_path)
        outcome = run(client.stream(request()))
        client.close()
    assert outcome.calls == [] and outcome.done[0].incomplete == "max_output_tokens"


# --- kind 8: errors worded as the server meant them ---------------------------------------------


def test_insufficient_quota_is_not_retried() -> None:
    wait = RecordingWait()
    with ProviderServer(openai_quota_exceeded(), OPENAI_TEXT) as server:
        client = openai_client(server, retry=RetryPolicy(max_retries=3, wait=wait))
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
    error = caught.value
    assert (error.status, error.kind, error.retryable) == (429, "insufficient_quota", False)
    assert "You exceeded your current quota" in str(error) and "retr" not in str(error)
    assert len(server.requests) == 1 and wait.delays == []


def test_a_rate_limit_429_is_still_retried() -> None:
    wait = RecordingWait()
    with ProviderServer(openai_rate_limited(), OPENAI_TEXT) as server:
        client = openai_client(server, retry=RetryPolicy(max_retries=3, wait=wait))
        outcome = run(client.stream(request()))
        client.close()
    assert outcome.text.startswith("I'm unable") and len(server.requests) == 2 and len(wait.delays) == 1


def test_an_error_chunk_whose_code_is_the_string_500_is_retryable() -> None:
    with ProviderServer(Reply([fixture("openai-error-code-string.sse")])) as server:
        client = openai_client(server)
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
    error = caught.value
    assert error.retryable and error.kind is None  # "500" is a status, "None" is no type
    assert str(error) == "OpenAI stream error: litellm.APIConnectionError: upstream connection reset"


def test_an_error_chunk_before_any_event_with_code_500_as_a_string_is_retried() -> None:
    first = sse(
        {"error": {"message": "upstream connection reset", "type": "None", "param": "None", "code": "500"}}
    )
    wait = RecordingWait()
    with ProviderServer(Reply([first]), OPENAI_TEXT) as server:
        client = openai_client(server, retry=RetryPolicy(max_retries=2, wait=wait))
        outcome = run(client.stream(request()))
        client.close()
    assert outcome.text.startswith("I'm unable") and len(server.requests) == 2


def test_a_code_429_string_mid_stream_is_retryable_and_a_quota_is_not() -> None:
    for code, kind, retryable in (("429", None, True), ("insufficient_quota", "insufficient_quota", False)):
        body = sse({"error": {"message": "no", "code": code}})
        with ProviderServer(Reply([body])) as server:
            client = openai_client(server)
            with pytest.raises(ProviderError) as caught:
                run(client.stream(request()))
            client.close()
        assert (caught.value.kind, caught.value.retryable) == (kind, retryable)


@pytest.mark.parametrize("prompt_cache", [True, False])
@pytest.mark.parametrize("system", ["", "   ", " \n\t "])
def test_a_blank_system_prompt_is_not_sent_to_anthropic(system: str, prompt_cache: bool) -> None:
    handler = enforcing([anthropic_system_not_blank, *ANTHROPIC_RULES], [ANTHROPIC_TEXT], anthropic_error)
    with ProviderServer(handler=handler) as server:
        client = anthropic_client(server, prompt_cache=prompt_cache)
        result = run_agent(client=client, system=system, tools=[], user="hi", max_turns=1)
        client.close()
    assert result.stop_reason == "complete" and "system" not in server.requests[0].body


def test_the_blank_system_rule_is_the_apis() -> None:
    assert anthropic_system_not_blank({"system": [{"type": "text", "text": "  "}]}) == (
        "system: text content blocks must be non-empty"
    )
    assert anthropic_system_not_blank({"system": "be brief"}) is None


# --- kind 9: a key held back must say so --------------------------------------------------------


@pytest.mark.parametrize("status", [500, 401, 403])
def test_a_key_held_back_from_a_local_server_is_named(monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-1234567890")
    wait = RecordingWait()
    with ProviderServer(handler=keyless_gateway(status, OPENAI_TEXT)) as server:
        client = create_client("openai", "m", f"{server.url}/v1", retry=RetryPolicy(max_retries=3, wait=wait))
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
    text = str(caught.value)
    assert text.startswith(f"OpenAI HTTP {status}: ")
    assert "OPENAI_API_KEY is set but was not sent" in text and "MINIAGENT_API_KEY" in text
    assert "api_key=" in text and "sk-never-sent" not in text
    assert all("authorization" not in {h.lower() for h in r.headers} for r in server.requests)
    if status == 500:
        assert text.endswith("(after 3 retries)") and len(server.requests) == 4


def test_the_anthropic_key_held_back_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-sent")
    with ProviderServer(handler=keyless_gateway(401, ANTHROPIC_TEXT)) as server:
        client = create_client("anthropic", "m", server.url, retry=NO_RETRY)
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
    assert "ANTHROPIC_API_KEY is set but was not sent" in str(caught.value)
    assert "MINIAGENT_API_KEY" in str(caught.value) and "sk-ant" not in str(caught.value)


def test_no_hint_without_a_held_back_key_and_a_passed_key_gets_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ProviderServer(handler=keyless_gateway(401, OPENAI_TEXT)) as server:
        client = create_client("openai", "m", f"{server.url}/v1", retry=NO_RETRY)
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
        assert "MINIAGENT_API_KEY" not in str(caught.value)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        keyed = create_client("openai", "m", f"{server.url}/v1", "sk-passed", retry=NO_RETRY)
        assert run(keyed.stream(request())).text.startswith("I'm unable")
        keyed.close()


def test_other_statuses_of_a_keyless_local_server_carry_no_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    with ProviderServer(openai_error("bad request")) as server:
        client = create_client("openai", "m", f"{server.url}/v1", retry=NO_RETRY)
        with pytest.raises(ProviderError) as caught:
            run(client.stream(request()))
        client.close()
    assert caught.value.status == 400 and "MINIAGENT_API_KEY" not in str(caught.value)


# --- kind 10: usage that never came -------------------------------------------------------------


def test_requests_without_usage_count_as_requests_of_unknown_usage() -> None:
    tools = Recorder()
    replies = [
        chat_tool_call_without_usage("call_1", "read_file", {"path": "a"}),
        Reply([fixture("openai-no-usage.sse")]),
    ]
    with ProviderServer(*replies) as server:
        client = openai_client(server)
        result = run_agent(client=client, system="", tools=[tools.tool("read_file")], user="q", max_turns=3)
        client.close()
    assert (
        result.stop_reason == "complete" and result.messages[-1].content == "Paris is the capital of France."
    )
    assert result.usage == Usage(requests=2, cost_usd=None, unreported_requests=2)
    assert Usage.from_json(result.usage.to_json()) == result.usage


@pytest.mark.parametrize("budget", [{"max_total_tokens": 10_000}, {"max_cost_usd": 1.0}])
def test_a_budget_stops_once_a_request_came_without_usage(budget: dict[str, Any]) -> None:
    tools = Recorder()
    replies = [chat_tool_call_without_usage("call_1", "read_file", {"path": "a"}), OPENAI_TEXT]
    with ProviderServer(*replies) as server:
        client = openai_client(server, prices={"input": 1.0, "output": 2.0})
        with pytest.raises(ValueError, match="reported none for 1 of this run's requests"):
            run_agent(
                client=client, system="", tools=[tools.tool("read_file")], user="q", max_turns=3, **budget
            )
        client.close()
    assert len(server.requests) == 1 and tools.ran == [("read_file", {"path": "a"})]  # the call was answered


def test_an_anthropic_stream_without_usage_counts_as_unreported() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ]
    with ProviderServer(Reply([anthropic_sse(*events)])) as server:
        client = anthropic_client(server)
        result = run_agent(client=client, system="", tools=[], user="q", max_turns=1)
        client.close()
    assert result.usage == Usage(requests=1, unreported_requests=1)


def test_a_scripted_turn_without_usage_counts_as_unreported() -> None:
    client = ScriptedClient([[ToolCall("c", "t", {})], ["done", Usage(10, 2, requests=1, cost_usd=0.5)]])
    tool = Recorder().tool("t")
    result = run_agent(client=client, system="", tools=[tool], user="q", max_turns=2)
    assert result.usage == Usage(10, 2, requests=2, cost_usd=None, unreported_requests=1)


BAD_COUNTS = ["12", 12.5, 12.0, -3, True, 10**401, 10**11]


@pytest.mark.parametrize("value", BAD_COUNTS, ids=[f"{type(v).__name__}-{str(v)[:8]}" for v in BAD_COUNTS])
def test_usage_counts_that_are_not_token_counts_are_provider_errors(value: Any) -> None:
    reply = chat_text_with_usage("Hi", {"prompt_tokens": value, "completion_tokens": 2, "total_tokens": 3})
    with ProviderServer(reply) as server:
        client = openai_client(server, prices={"input": 1.0, "output": 2.0})
        with pytest.raises(ProviderError) as caught:
            run_agent(client=client, system="", tools=[], user="q", max_turns=1)
        client.close()
    text = str(caught.value)
    assert text.startswith("OpenAI reported usage prompt_tokens = ") and text.endswith(
        "which is not a token count"
    )
    assert len(text) < 200  # a 401-digit number is shortened


@pytest.mark.parametrize("value", ["16", 16.0, -1, 10**401])
def test_anthropic_usage_counts_that_are_not_token_counts_are_provider_errors(value: Any) -> None:
    events = json.loads(
        json.dumps(
            [
                json.loads(line[6:])
                for line in fixture("anthropic-text.sse").decode().splitlines()
                if line.startswith("data: ")
            ]
        )
    )
    for event in events:
        if event["type"] == "message_delta":
            event["usage"] = {"output_tokens": value}
    with ProviderServer(Reply([anthropic_sse(*events)])) as server:
        client = anthropic_client(server)
        with pytest.raises(ProviderError, match="Anthropic reported usage output_tokens = "):
            run(client.stream(request()))
        client.close()


def test_a_null_count_in_message_delta_keeps_the_one_message_start_gave() -> None:
    events = [
        {
            "type": "message_start",
            "message": {"id": "m", "content": [], "usage": {"input_tokens": 40, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": None, "cache_read_input_tokens": None, "output_tokens": 7},
        },
        {"type": "message_stop"},
    ]
    with ProviderServer(Reply([anthropic_sse(*events)])) as server:
        client = anthropic_client(server)
        outcome = run(client.stream(request()))
        client.close()
    [usage] = [e.usage for e in outcome.events if e.type == "usage"]
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (40, 7, 1)


# --- old records still load -----------------------------------------------------------------------


def test_an_old_session_with_a_cut_answer_committed_loads_and_goes_on(tmp_path: Path) -> None:
    # What earlier versions wrote for a reply cut at the limit: committed as if complete.
    session = tmp_path / "old.jsonl"
    lines = [
        {"role": "user", "content": "tell me a story"},
        {"role": "assistant", "content": "Once upon a"},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "t", "input": {}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        client = openai_client(server)
        result = run_agent(
            client=client, system="", tools=[], user="and then?", max_turns=1, session_path=session
        )
        client.close()
    assert result.stop_reason == "complete" and [m.content for m in result.messages[:2]] == [
        "tell me a story",
        "Once upon a",
    ]
    assert len(load_session(session)) == len(lines) + 2


def test_usage_and_results_written_before_unreported_requests_still_load() -> None:
    from miniagent import RunResult

    old = {
        "input_tokens": 5,
        "output_tokens": 2,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "requests": 1,
        "cost_usd": 0.1,
    }
    assert Usage.from_json(old) == Usage(5, 2, 0, 0, 1, 0.1)
    result = RunResult.from_json(
        {"messages": [{"role": "user", "content": "q"}], "stop_reason": "complete", "usage": old}
    )
    assert result.usage.unreported_requests == 0
    with pytest.raises(ValueError):
        Usage.from_json({**old, "unreported_requests": -1})
