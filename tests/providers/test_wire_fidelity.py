"""Wire fidelity (issue 11): what a model sends goes back the way its API requires.

Every kind runs the real loop against a real loopback HTTP server that enforces the API's rule
(``api_rules``) and answers a breaking request with the API's own 400 error, as a user's run
would meet it. New stream shapes are fixtures (tests/fixtures/sse/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from api_rules import (
    ANTHROPIC_RULES,
    OPENAI_RULES,
    anthropic_error,
    anthropic_thinking,
    deepseek_reasoning_passed_back,
    enforcing,
    openai_error,
)
from providers_server import (
    ProviderServer,
    Reply,
    anthropic_sse,
    byte_by_byte,
    fixture,
    random_chunks,
    request,
    run,
    sse,
)

from miniagent import (
    Message,
    ModelEvent,
    Reasoning,
    ReasoningEvent,
    RunResult,
    Tool,
    ToolCall,
    ToolResult,
    load_session,
    run_agent,
    tool,
)
from miniagent.providers import RetryPolicy, create_client

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
THINKING_ON = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
SIGNATURE = (
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds8B1L3rPfeAS0TCddpNMJlCgKL4IMTDuSxGcIKuFqZtmAnSqA"
    "gQbTPv6xLnQZZ4B7FGnz5fWm3XDu2sY5ZW8gvu3DwQW1q9eSLnZDBr6bTY5p2Dt2U5QDQDjc0YYd1wKxPhUu2FqC2IE+4RvsGTvhv64c6DW7Bb9"
)
THINKING_TEXT = "The user wants the weather in Paris. I should call get_weather with location Paris."
REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pL"
    "mN3kZm4hC5T6zoCKgK0AFB9fOnQF4zJvFGq"
)


class Recorder:
    """Tools that record their inputs."""

    def __init__(self) -> None:
        self.inputs: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str, result: ToolResult | None = None) -> Tool:
        def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
            self.inputs.append((name, arguments))
            return result if result is not None else ToolResult(f"{name} ok")

        schema = {"type": "object", "additionalProperties": True}
        return Tool(name, f"the {name} tool", schema, execute)


def anthropic_text(text: str) -> Reply:
    return Reply(
        [
            anthropic_sse(
                {
                    "type": "message_start",
                    "message": {"id": "m2", "content": [], "usage": {"input_tokens": 1}},
                },
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 2},
                },
                {"type": "message_stop"},
            )
        ]
    )


def anthropic_tool_use(
    call_id: str, name: str, arguments: dict[str, Any], *thinking: dict[str, Any]
) -> Reply:
    """A turn: the given thinking/redacted_thinking start blocks, then one tool_use block."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "m", "content": []}}]
    for index, block in enumerate(thinking):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    index = len(thinking)
    events += [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": json.dumps(arguments)},
        },
        {"type": "content_block_stop", "index": index},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    return Reply([anthropic_sse(*events)])


def openai_text(text: str) -> Reply:
    return Reply(
        [sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}, done=True)]
    )


def run_anthropic(
    handler: Any, tools: list[Tool], *, session: Path | None = None, **options: Any
) -> tuple[RunResult, ProviderServer, list[ModelEvent]]:
    events: list[ModelEvent] = []
    with ProviderServer(handler=handler) as server:
        client = create_client("anthropic", "claude-test", server.url, "key", retry=NO_RETRY, **options)
        try:
            result = run_agent(
                client=client,
                system="be brief",
                tools=tools,
                user="go",
                max_turns=4,
                on_event=events.append,
                session_path=session,
            )
        finally:
            client.close()  # type: ignore[attr-defined]
    return result, server, events


def run_openai(
    handler: Any, tools: list[Tool], **options: Any
) -> tuple[RunResult, ProviderServer, list[ModelEvent]]:
    events: list[ModelEvent] = []
    with ProviderServer(handler=handler) as server:
        client = create_client("openai", "test-model", f"{server.url}/v1", "key", retry=NO_RETRY, **options)
        try:
            result = run_agent(
                client=client, system="be brief", tools=tools, user="go", max_turns=4, on_event=events.append
            )
        finally:
            client.close()  # type: ignore[attr-defined]
    return result, server, events


# --- kind 1: Anthropic thinking and redacted_thinking blocks --------------------------------------


def test_thinking_block_is_replayed_first_with_its_signature(tmp_path: Path) -> None:
    rule = anthropic_thinking({SIGNATURE: THINKING_TEXT})
    handler = enforcing(
        [*ANTHROPIC_RULES, rule],
        [Reply([fixture("anthropic-thinking-tool-use.sse")]), anthropic_text("Sunny in Paris.")],
        anthropic_error,
    )
    tools = Recorder()
    session = tmp_path / "s.jsonl"
    result, server, events = run_anthropic(
        handler, [tools.tool("get_weather")], session=session, extra_body=THINKING_ON
    )
    assert result.stop_reason == "complete", server.requests[-1]
    assert tools.inputs == [("get_weather", {"location": "Paris"})]
    turn = result.messages[1]
    assert turn.reasoning == (Reasoning(THINKING_TEXT, SIGNATURE),)
    assert turn.content == "I'll check the weather in Paris."
    replayed = server.requests[1].body["messages"][1]["content"]
    assert replayed[0] == {"type": "thinking", "thinking": THINKING_TEXT, "signature": SIGNATURE}
    assert [b["type"] for b in replayed] == ["thinking", "text", "tool_use"]
    assert ReasoningEvent(Reasoning(THINKING_TEXT, SIGNATURE)) in events  # on_event shows it
    assert load_session(session) == result.messages  # kept in the session
    # The rule is not vacuous: the same request without the block is what the API refuses.
    stripped = json.loads(json.dumps(server.requests[1].body))
    stripped["messages"][1]["content"] = replayed[1:]
    assert "must start with a thinking block" in (rule(stripped) or "")


def test_redacted_thinking_is_replayed_verbatim_in_order() -> None:
    first = {"type": "redacted_thinking", "data": REDACTED}
    second = {"type": "thinking", "thinking": "Check the file.", "signature": "c2lnbmF0dXJl"}
    rule = anthropic_thinking({"c2lnbmF0dXJl": "Check the file."})
    handler = enforcing(
        [*ANTHROPIC_RULES, rule],
        [anthropic_tool_use("toolu_1", "read_file", {"path": "a"}, first, second), anthropic_text("done")],
        anthropic_error,
    )
    result, server, _ = run_anthropic(handler, [Recorder().tool("read_file")], extra_body=THINKING_ON)
    assert result.stop_reason == "complete"
    assert result.messages[1].reasoning == (
        Reasoning("", None, REDACTED),
        Reasoning("Check the file.", "c2lnbmF0dXJl"),
    )
    replayed = server.requests[1].body["messages"][1]["content"]
    assert replayed[:2] == [first, second]


def test_redacted_thinking_fixture_stream() -> None:
    with ProviderServer(Reply(random_chunks(fixture("anthropic-redacted-thinking.sse"), seed=5))) as server:
        client = create_client("anthropic", "m", server.url, "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    reasoning = [e.reasoning for e in outcome.events if isinstance(e, ReasoningEvent)]
    assert reasoning == [
        Reasoning("", None, REDACTED),
        Reasoning("A plain greeting is enough.", SIGNATURE[:60]),
    ]
    assert outcome.text == "Hello!"


def test_sessions_written_before_reasoning_still_load(tmp_path: Path) -> None:
    session = tmp_path / "old.jsonl"
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "t", "input": {}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
        {"role": "assistant", "content": "done"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    messages = load_session(session)
    assert [m.reasoning for m in messages] == [(), (), (), ()]
    assert messages[3] == Message("assistant", "done")


# --- kind 2: reasoning_content / reasoning of OpenAI-compatible servers ---------------------------


def test_deepseek_reasoning_content_is_passed_back_on_the_tool_call_turn() -> None:
    handler = enforcing(
        [*OPENAI_RULES, deepseek_reasoning_passed_back],
        [Reply([fixture("deepseek-reasoning-tool-call.sse")]), openai_text("It is Monday.")],
        openai_error,
    )
    result, server, events = run_openai(handler, [Recorder().tool("get_date")])
    assert result.stop_reason == "complete", server.requests[-1]
    thought = "The user asks for the date. I will call get_date."
    assert result.messages[1].reasoning == (Reasoning(thought),)
    assert server.requests[1].body["messages"][2]["reasoning_content"] == thought
    assert ReasoningEvent(Reasoning(thought)) in events


def test_deepseek_rule_is_what_a_turn_without_reasoning_breaks() -> None:
    body = {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]}
    assert deepseek_reasoning_passed_back(body) == (
        "The reasoning_content in the thinking mode must be passed back to the API."
    )


def test_openrouter_reasoning_field() -> None:
    with ProviderServer(Reply(byte_by_byte(fixture("openrouter-reasoning.sse")))) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert [e.reasoning for e in outcome.events if isinstance(e, ReasoningEvent)] == [
        # the name it came in is kept, to send it back so (tests/test_wire_requests.py, kind 5)
        Reasoning(
            "Two plus two is four.", origin=f"chat-completions {server.url}/v1", data={"field": "reasoning"}
        )
    ]
    assert outcome.text == "2 + 2 = 4."
    # the reasoning event comes before the text it preceded
    kinds = [e.type for e in outcome.events]
    assert kinds.index("reasoning") < kinds.index("text")


# --- kind 3: refusals ----------------------------------------------------------------------------


def test_refusal_is_the_turns_text() -> None:
    result, _, _ = run_openai(lambda _: Reply([fixture("openai-refusal.sse")]), [])
    assert result.stop_reason == "complete"
    assert result.messages[-1] == Message("assistant", "I'm sorry, I can't help with that request.")


# --- kind 4: duplicate call ids ------------------------------------------------------------------


def test_two_calls_with_one_id_in_a_turn_are_both_answered() -> None:
    handler = enforcing(
        OPENAI_RULES, [Reply([fixture("openai-duplicate-call-ids.sse")]), openai_text("ok")], openai_error
    )
    tools = Recorder()
    result, server, events = run_openai(handler, [tools.tool("get_weather")])
    assert result.stop_reason == "complete", server.requests[-1]
    assert tools.inputs == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert [c.id for c in result.messages[1].tool_calls] == ["call_dup", "call_dup_2"]
    sent = server.requests[1].body["messages"]
    assert [m.get("tool_call_id") for m in sent[3:5]] == ["call_dup", "call_dup_2"]
    assert [e.call.id for e in events if e.type == "tool_call"] == ["call_dup", "call_dup_2"]


def test_an_id_that_repeats_an_earlier_turns_id_is_renamed() -> None:
    handler = enforcing(
        ANTHROPIC_RULES,
        [
            anthropic_tool_use("toolu_same", "t", {"n": 1}),
            anthropic_tool_use("toolu_same", "t", {"n": 2}),
            anthropic_text("done"),
        ],
        anthropic_error,
    )
    result, server, _ = run_anthropic(handler, [Recorder().tool("t")])
    assert result.stop_reason == "complete", server.requests[-1]
    assert [c.id for m in result.messages for c in m.tool_calls] == ["toolu_same", "toolu_same_2"]
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["toolu_same", "toolu_same_2"]


def test_a_session_written_with_repeated_ids_is_sent_valid(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "x", "name": "t", "input": {}}]},
        {"role": "tool", "content": "one", "tool_call_id": "x"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "x", "name": "t", "input": {}}]},
        {"role": "tool", "content": "two", "tool_call_id": "x"},
        {"role": "assistant", "content": "ok"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    handler = enforcing(ANTHROPIC_RULES, [anthropic_text("fine")], anthropic_error)
    result, server, _ = run_anthropic(handler, [], session=session)
    assert result.stop_reason == "complete", server.requests[-1]
    sent = server.requests[0].body["messages"]
    assert [b.get("tool_use_id") for m in sent for b in m["content"] if b["type"] == "tool_result"] == [
        "x",
        "x_2",
    ]
    assert [b["content"] for m in sent for b in m["content"] if b["type"] == "tool_result"] == ["one", "two"]


# --- kind 5: empty error results -----------------------------------------------------------------


def test_an_empty_error_result_is_sent_with_text() -> None:
    handler = enforcing(
        ANTHROPIC_RULES, [anthropic_tool_use("toolu_1", "t", {}), anthropic_text("ok")], anthropic_error
    )
    result, server, _ = run_anthropic(handler, [Recorder().tool("t", ToolResult("", is_error=True))])
    assert result.stop_reason == "complete", server.requests[-1]
    assert result.messages[2] == Message(
        "tool", "", tool_call_id="toolu_1", is_error=True
    )  # the record is true
    sent = server.requests[1].body["messages"][2]["content"][0]
    assert sent["is_error"] is True and sent["content"]


# --- kind 6: double-encoded arguments ------------------------------------------------------------


def test_arguments_encoded_twice_are_decoded_once_more() -> None:
    handler = enforcing(
        OPENAI_RULES,
        [Reply([fixture("openai-double-encoded-arguments.sse")]), openai_text("A")],
        openai_error,
    )
    tools = Recorder()
    result, _, _ = run_openai(handler, [tools.tool("get_shop")])
    assert result.stop_reason == "complete"
    assert tools.inputs == [("get_shop", {"shop_name": "A"})]


@pytest.mark.parametrize(
    "arguments",
    [json.dumps("just text"), json.dumps(json.dumps([1, 2])), json.dumps(json.dumps(json.dumps({"a": 1})))],
)
def test_other_strings_stay_an_input_error(arguments: str) -> None:
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "t", "arguments": arguments}}
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )
    with ProviderServer(Reply([body])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert outcome.calls[0].input == {}
    assert outcome.calls[0].input_error == "arguments must be a JSON object, got string"


# --- kind 7: tool-call markup left in the text ---------------------------------------------------


def test_markup_blocks_the_server_missed_become_calls() -> None:
    handler = enforcing(
        OPENAI_RULES,
        [Reply([fixture("llamacpp-tool-call-markup.sse")]), openai_text("It says hi.")],
        openai_error,
    )
    tools = Recorder()
    result, server, events = run_openai(
        handler, [tools.tool("read_file"), tools.tool("list_dir")], tool_call_markup=True
    )
    assert result.stop_reason == "complete", server.requests[-1]
    assert tools.inputs == [("read_file", {"path": "notes.txt"}), ("list_dir", {"path": "."})]
    turn = result.messages[1]
    assert "<tool_call>" not in turn.content and [c.name for c in turn.tool_calls] == [
        "read_file",
        "list_dir",
    ]
    assert not any("tool_call>" in e.text for e in events if e.type == "text")


def test_markup_that_cannot_be_read_is_an_error_result_never_the_answer() -> None:
    broken = '<tool_call>\n{"name": "read_file", "arguments": {"path": }\n</tool_call>'
    first = Reply(
        [sse({"choices": [{"index": 0, "delta": {"content": broken}, "finish_reason": "stop"}]}, done=True)]
    )
    handler = enforcing(OPENAI_RULES, [first, openai_text("Sorry, reading failed.")], openai_error)
    tools = Recorder()
    result, _, _ = run_openai(handler, [tools.tool("read_file")], tool_call_markup=True)
    assert tools.inputs == []
    answer = result.messages[2]
    assert answer.role == "tool" and answer.is_error
    assert answer.content.startswith("invalid input for read_file: the <tool_call> block could not be read")
    assert result.messages[-1].content == "Sorry, reading failed."


@pytest.mark.parametrize("seed", range(3))
def test_markup_split_anywhere_in_the_stream(seed: int) -> None:
    body = fixture("llamacpp-tool-call-markup.sse")
    with ProviderServer(Reply(random_chunks(body, seed=seed, max_size=7))) as server:
        client = create_client(
            "openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY, tool_call_markup=True
        )
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert [(c.name, c.input) for c in outcome.calls] == [
        ("read_file", {"path": "notes.txt"}),
        ("list_dir", {"path": "."}),
    ]
    assert outcome.text == ""


def test_without_the_option_markup_is_text() -> None:
    with ProviderServer(Reply([fixture("llamacpp-tool-call-markup.sse")])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert outcome.calls == [] and outcome.text.count("<tool_call>") == 2


# --- kind 8: shapes whose behaviour stays -------------------------------------------------------


def test_usage_only_and_empty_chunks() -> None:
    with ProviderServer(Reply(byte_by_byte(fixture("openai-usage-and-empty-chunks.sse")))) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert outcome.text == "Hi there" and outcome.calls == []
    assert [d.stop_reason for d in outcome.done] == ["stop"]


def test_length_in_the_middle_of_a_call_marks_the_call_cut() -> None:
    # Round 3: the cut call is kept with an input error (it never runs); the loop side is in
    # tests/test_wire_endings.py.
    with ProviderServer(Reply([fixture("openai-length-mid-call.sse")])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    [call] = outcome.calls
    assert (call.id, call.name, call.input) == ("call_Cut5xLq2Zr8", "write_file", {})
    assert call.input_error is not None and "output token limit" in call.input_error


def test_block_index_that_restarts() -> None:
    with ProviderServer(Reply(random_chunks(fixture("anthropic-index-restart.sse"), seed=2))) as server:
        client = create_client("anthropic", "m", server.url, "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert outcome.text == "Reading it."
    assert [(c.id, c.name, c.input) for c in outcome.calls] == [
        ("toolu_01RstIdx0a", "read_file", {"path": "notes.txt"}),
        ("toolu_01RstIdx0b", "list_dir", {"path": "."}),
    ]


# --- the loop keeps reasoning with its turn ------------------------------------------------------


def test_reasoning_is_committed_with_its_turn_and_counted_in_message_chars() -> None:
    from miniagent import message_chars
    from miniagent.testing import ScriptedClient

    client = ScriptedClient([[Reasoning("think"), "answer"]])
    result = run_agent(client=client, system="", tools=[], user="q", max_turns=1)
    assert result.messages[-1] == Message("assistant", "answer", reasoning=(Reasoning("think"),))
    assert message_chars(result.messages[-1]) == len("answer") + len("think")


def test_reasoning_alone_is_an_empty_answer() -> None:
    from miniagent import EmptyResponseError
    from miniagent.testing import ScriptedClient

    with pytest.raises(EmptyResponseError):
        run_agent(client=ScriptedClient([[Reasoning("hmm")]]), system="", tools=[], user="q", max_turns=1)


def test_duplicate_ids_from_a_scripted_client_are_made_unique() -> None:
    from miniagent.testing import ScriptedClient

    @tool
    def t() -> str:
        """A tool."""
        return "ok"

    client = ScriptedClient(
        [[ToolCall("a", "t", {}), ToolCall("a", "t", {}), ToolCall("a_2", "t", {})], ["done"]]
    )
    result = run_agent(client=client, system="", tools=[t], user="q", max_turns=2)
    assert [c.id for c in result.messages[1].tool_calls] == ["a", "a_2", "a_2_2"]
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["a", "a_2", "a_2_2"]


# --- issue 13, kind 6: a surrogate pair split across two text deltas ----------------------------

EMOJI = "\U0001f600"
HIGH, LOW = "\ud83d", "\ude00"


def test_openai_surrogate_pair_split_across_deltas_is_joined(tmp_path: Path) -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"reasoning_content": "think " + HIGH}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": LOW}}]},
        {"choices": [{"index": 0, "delta": {"content": "smile " + HIGH}}]},
        {"choices": [{"index": 0, "delta": {"content": LOW + " ok"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    assert b"\\ud83d" in body  # the halves travel as JSON escapes
    session = tmp_path / "s.jsonl"
    with ProviderServer(Reply([body])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        result = run_agent(client=client, system="", tools=[], user="q", max_turns=1, session_path=session)
        client.close()  # type: ignore[attr-defined]
    assert result.messages[-1].content == f"smile {EMOJI} ok"
    assert result.messages[-1].reasoning == (Reasoning(f"think {EMOJI}"),)
    assert result.messages[-1].content.encode("utf-8")
    assert EMOJI in session.read_text(encoding="utf-8")


def test_anthropic_surrogate_pair_split_across_deltas_is_joined() -> None:
    body = anthropic_sse(
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a" + HIGH}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": LOW}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "b" + HIGH}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    )
    with ProviderServer(Reply([body])) as server:
        client = create_client("anthropic", "m", server.url, "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert outcome.text == f"a{EMOJI}b{HIGH}"  # a half left at the end stays as it came
    assert [e.text for e in outcome.events if e.type == "text"] == ["a", EMOJI, "b", HIGH]
