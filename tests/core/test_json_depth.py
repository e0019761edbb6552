"""Deep nesting everywhere JSON is read (issue "Hostile and unlucky input, round 3", kind 1): one
depth-safe decode (``miniagent._json``) for provider events and tool arguments, ``<tool_call>``
markup, structured answers, session lines, messages from a queue and MCP messages. Each source
is fed from where it really comes from: a loopback HTTP server, a session file, a stdio child."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from providers_server import ProviderServer, Reply, anthropic_sse, request, run, sse

from miniagent import (
    Message,
    ProviderError,
    RunResult,
    SessionError,
    Tool,
    ToolResult,
    load_session,
    run_agent,
)
from miniagent._json import MAX_DEPTH, JSONDepthError, check_nesting, loads
from miniagent.mcp import StdioMCPServer
from miniagent.providers import RetryPolicy, create_client
from miniagent.testing import ScriptedClient

pytestmark = pytest.mark.timeout(60)

NO_RETRY = RetryPolicy(max_retries=0)


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


# --- the decode itself ------------------------------------------------------------------------------


def test_the_limit_is_exact_and_brackets_in_strings_do_not_count() -> None:
    assert loads(nested(MAX_DEPTH)) is not None
    with pytest.raises(JSONDepthError, match=f"JSON nested deeper than {MAX_DEPTH} levels"):
        loads(nested(MAX_DEPTH + 1))
    quoted = json.dumps({"code": "[" * 5000 + "{" * 5000, "escaped": '\\"[[[[' * 300})
    assert loads(quoted)["code"].startswith("[[[")
    assert issubclass(JSONDepthError, ValueError)


def test_bytes_options_and_objects_are_checked_the_same_way() -> None:
    with pytest.raises(JSONDepthError):
        loads(nested(1000).encode())
    with pytest.raises(JSONDepthError):
        loads(nested(300), parse_constant=float)
    deep_objects = '{"a": ' * 300 + "1" + "}" * 300
    with pytest.raises(JSONDepthError):
        loads(deep_objects)
    check_nesting(json.loads(nested(MAX_DEPTH)))
    with pytest.raises(JSONDepthError):
        check_nesting(json.loads(nested(MAX_DEPTH + 1)))


def test_far_too_deep_text_is_refused_at_once() -> None:
    with pytest.raises(JSONDepthError):
        loads("[" * 100_000)
    with pytest.raises(JSONDepthError):
        loads(nested(100_000))


def test_json_running_out_of_stack_is_a_depth_error_too() -> None:
    def deep(levels: int) -> Any:
        return deep(levels - 1) if levels else loads(nested(200))

    with pytest.raises(JSONDepthError):
        deep(sys.getrecursionlimit() - 100)


# --- providers: tool arguments, markup, events ------------------------------------------------------


def _recording_tool(inputs: list[Any]) -> Tool:
    def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
        inputs.append(arguments)
        return ToolResult("ran")

    return Tool("take", "takes anything", {"type": "object"}, execute)


def _openai_call(arguments: str) -> bytes:
    function = {"name": "take", "arguments": arguments}
    call = {"index": 0, "id": "call_1", "type": "function", "function": function}
    return sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )


def _openai_text(text: str) -> bytes:
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}, done=True)


def _run_openai(first: bytes, **options: Any) -> RunResult:
    inputs: list[Any] = []
    with ProviderServer(Reply([first]), Reply([_openai_text("done")])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY, **options)
        try:
            tools = [_recording_tool(inputs)]
            result = run_agent(client=client, system="", tools=tools, user="go", max_turns=3)
        finally:
            client.close()  # type: ignore[attr-defined]
    assert inputs == []
    return result


def test_openai_arguments_nested_1000_deep_are_an_error_result() -> None:
    result = _run_openai(_openai_call('{"x": ' + nested(1000) + "}"))
    assert result.stop_reason == "complete"
    answer = result.messages[2]
    assert answer.is_error
    assert answer.content == (
        f"invalid input for take: arguments are not valid JSON: JSON nested deeper than {MAX_DEPTH} levels"
    )


@pytest.mark.parametrize("as_string", [False, True])
def test_markup_arguments_nested_1000_deep_are_an_error_result(as_string: bool) -> None:
    arguments = '{"x": ' + nested(1000) + "}"
    shown = json.dumps(arguments) if as_string else arguments
    block = '<tool_call>\n{"name": "take", "arguments": ' + shown + "}\n</tool_call>"
    result = _run_openai(_openai_text(block), tool_call_markup=True)
    answer = result.messages[2]
    assert answer.is_error and "JSON nested" in answer.content, answer.content
    assert result.stop_reason == "complete"


def test_anthropic_arguments_nested_1000_deep_are_an_error_result() -> None:
    deep = '{"x": ' + nested(1000) + "}"
    body = anthropic_sse(
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "take", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": deep}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    )  # fmt: skip
    with ProviderServer(Reply([body])) as server:
        client = create_client("anthropic", "claude-test", server.url, "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    [call] = outcome.calls
    assert call.input == {}
    assert call.input_error == f"arguments are not valid JSON: JSON nested deeper than {MAX_DEPTH} levels"


def test_an_event_nested_too_deeply_is_a_provider_error_that_is_not_retried() -> None:
    body = b'data: {"choices": ' + nested(5000, '{"index": 0}').encode() + b"}\n\n"
    with ProviderServer(Reply([body])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=RetryPolicy(max_retries=2))
        with pytest.raises(ProviderError, match="JSON nested") as caught:
            run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
        assert len(server.requests) == 1
    assert caught.value.retryable is False


# --- structured answers -----------------------------------------------------------------------------


def test_a_structured_answer_nested_100000_deep_gets_feedback_not_a_crash() -> None:
    client = ScriptedClient([[nested(100_000)], ['{"ok": true}']])
    schema = {"type": "object"}
    result = run_agent(client=client, system="", tools=[], user="u", max_turns=3, output_schema=schema)
    assert result.stop_reason == "complete"
    assert result.output == {"ok": True}
    feedback = result.messages[2].content
    assert f"the answer is not JSON: JSON nested deeper than {MAX_DEPTH} levels" in feedback


# --- sessions and messages from a queue ------------------------------------------------------------


def _deep_line(depth: int = MAX_DEPTH + 50) -> str:
    """A message line whose tool input nests ``depth`` deep: ``json`` itself would read it."""
    call = {"id": "c1", "name": "take", "input": {"x": 1}}
    line = json.dumps({"role": "assistant", "content": "", "tool_calls": [call]})
    return line.replace('"x": 1', '"x": ' + nested(depth))


@pytest.mark.parametrize("last", [False, True])
def test_a_session_line_nested_too_deeply_is_refused_and_the_file_kept(tmp_path: Path, last: bool) -> None:
    path = tmp_path / "s.jsonl"
    lines = [json.dumps({"role": "user", "content": "hi"}), _deep_line()]
    if not last:
        lines.append(json.dumps({"role": "user", "content": "again"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(SessionError) as caught:
        load_session(path)
    assert str(caught.value).endswith("s.jsonl:2: line is nested too deep")
    assert path.read_bytes() == before


def test_messages_and_results_from_a_queue_refuse_deep_json() -> None:
    with pytest.raises(ValueError, match="JSON nested"):
        Message.from_json(_deep_line())
    with pytest.raises(ValueError, match="JSON nested"):
        RunResult.from_json('{"stop_reason": "complete", "messages": [' + _deep_line() + "]}")


# --- MCP ------------------------------------------------------------------------------------------


SERVER = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    sys.stdout.write("[" * 100000 + "]" * 100000 + "\n")  # nested far too deeply: not a message
    if request["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "deep"}}
    else:
        result = {"tools": [{"name": "t", "description": "", "inputSchema": {"type": "object"}}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def test_an_mcp_line_nested_too_deeply_is_skipped_like_any_line_that_is_not_a_message() -> None:
    with StdioMCPServer(sys.executable, ["-c", SERVER], name="deep") as server:
        assert [t.name for t in server.tools()] == ["t"]
