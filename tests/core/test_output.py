"""Structured output (issue 16, DESIGN.md "Structured output"): run_agent(output_schema=...)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from providers_server import ProviderServer, Reply, fixture, sse

from miniagent import Message, ModelRequest, ToolSpec, run_agent, tool
from miniagent.output import OutputSchema, output_instruction, parse_output, strict_compatible
from miniagent.providers import AnthropicClient, OpenAIChatClient
from miniagent.providers.local import create_local_client, grammar_when_safe
from miniagent.schema import json_schema
from miniagent.testing import ScriptedClient
from miniagent.tools import check_input

SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["file", "lines"],
    "additionalProperties": False,
}


def _run(turns: list[Any], max_turns: int = 3, schema: Any = SCHEMA) -> tuple[Any, ScriptedClient]:
    client = ScriptedClient(turns)
    result = run_agent(
        client=client, system="s", tools=[], user="u", max_turns=max_turns, output_schema=schema
    )
    return result, client


def test_a_valid_answer_completes_with_the_output() -> None:
    result, client = _run([['{"file": "a.txt", ', '"lines": 3}']])
    assert result.stop_reason == "complete"
    assert result.output == {"file": "a.txt", "lines": 3}
    assert client.requests[0].output_schema == SCHEMA
    assert [m.role for m in result.messages] == ["user", "assistant"]


def test_an_invalid_answer_gets_the_validation_error_and_the_loop_goes_on() -> None:
    result, client = _run([['{"file": "a.txt", "lines": "three"}'], ['{"file": "a.txt", "lines": 3}']])
    assert result.stop_reason == "complete"
    assert result.output == {"file": "a.txt", "lines": 3}
    feedback = result.messages[2]
    assert feedback.role == "user"
    assert "answer.lines: expected integer, got string" in feedback.content
    assert client.requests[1].messages[-1] == feedback


def test_never_valid_stops_at_max_turns_without_output() -> None:
    result, _ = _run([["Sure! The file has 3 lines."], ["[1, 2]"]], max_turns=2)
    assert result.stop_reason == "max_turns"
    assert result.output is None
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "the answer is not JSON: Expecting value: line 1 column 1 (char 0)" in result.messages[2].content
    assert "answer: expected object, got array" in result.messages[4].content


def test_a_fenced_json_block_counts_with_prose_around_it() -> None:
    text = 'Here it is:\n```json\n{"file": "a.txt", "lines": 3}\n```\nAnything else?'
    result, _ = _run([[text]])
    assert (result.stop_reason, result.output) == ("complete", {"file": "a.txt", "lines": 3})
    assert parse_output("```\n[1]\n```", {"type": "array"}) == ([1], None)
    value, problem = parse_output('```json\n{"lines": NaN}\n```', {})
    assert value is None and problem is not None and "NaN is not JSON" in problem


def test_without_output_schema_any_text_completes() -> None:
    client = ScriptedClient([["plain text"]])
    result = run_agent(client=client, system="s", tools=[], user="u", max_turns=1)
    assert (result.stop_reason, result.output) == ("complete", None)
    assert client.requests[0].output_schema is None


@dataclasses.dataclass
class Count:
    """How long a file is.

    Attributes:
        file: the file's name.
        lines: its number of lines.
    """

    file: str
    lines: int


def test_a_dataclass_as_output_schema_gives_an_instance() -> None:
    assert json_schema(Count)["required"] == ["file", "lines"]
    result, client = _run([['{"file": "a.txt", "lines": 3}']], schema=Count)
    assert result.output == Count("a.txt", 3)
    assert client.requests[0].output_schema == json_schema(Count)
    with pytest.raises(TypeError):
        OutputSchema.of(object)


def test_strict_compatible() -> None:
    assert strict_compatible(SCHEMA)
    assert strict_compatible(json_schema(Count, strict=True))
    assert not strict_compatible({**SCHEMA, "required": ["file"]})
    assert not strict_compatible({"type": "array", "items": {"type": "integer"}})
    assert not strict_compatible(
        {**SCHEMA, "properties": {**SCHEMA["properties"], "x": {"type": "string", "pattern": "a"}}}
    )
    assert "JSON Schema" in output_instruction(SCHEMA) and json.dumps(
        SCHEMA, separators=(",", ":")
    ) in output_instruction(SCHEMA)


# --- providers ask natively ------------------------------------------------------------------------


def _openai_json_turn(text: str) -> bytes:
    return sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        done=True,
    )


@pytest.mark.parametrize(
    ("schema", "strict"), [(SCHEMA, True), ({"type": "array", "items": {"type": "integer"}}, False)]
)
def test_openai_compatible_requests_carry_response_format(schema: dict[str, Any], strict: bool) -> None:
    answer = '{"file": "a.txt", "lines": 3}' if strict else "[1, 2]"
    with ProviderServer(Reply([_openai_json_turn(answer)])) as server:
        client = OpenAIChatClient("test-model", f"{server.url}/v1")
        result = run_agent(client=client, system="s", tools=[], user="u", max_turns=1, output_schema=schema)
        [captured] = server.requests
    assert result.stop_reason == "complete" and result.output == json.loads(answer)
    assert captured.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": strict},
    }
    assert captured.body["messages"][0] == {"role": "system", "content": "s"}  # no instruction needed


def test_openai_requests_without_output_schema_have_no_response_format() -> None:
    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        client = OpenAIChatClient("test-model", f"{server.url}/v1")
        run_agent(client=client, system="s", tools=[], user="u", max_turns=1)
        [captured] = server.requests
    assert "response_format" not in captured.body


def test_anthropic_requests_carry_the_schema_as_an_instruction() -> None:
    with ProviderServer(Reply([fixture("anthropic-text.sse")])) as server:
        client = AnthropicClient("claude-test", server.url, api_key="k")
        result = run_agent(client=client, system="s", tools=[], user="u", max_turns=1, output_schema=SCHEMA)
        [captured] = server.requests
    assert result.stop_reason == "max_turns"  # the fixture's text is not JSON
    system = captured.body["system"]
    text = system[0]["text"] if isinstance(system, list) else system  # a cached system block
    assert text == "s\n\n" + output_instruction(SCHEMA)


def test_the_local_model_gets_a_grammar_only_where_a_tool_call_stays_possible() -> None:
    base = ModelRequest("s", [Message("user", "u")], (), None, SCHEMA)
    assert grammar_when_safe(base) is base  # no tools: every turn constrained
    tools = (ToolSpec("read_file", "Read.", {"type": "object"}),)
    first = grammar_when_safe(dataclasses.replace(base, tools=tools))
    assert first.output_schema is None and first.system == "s\n\n" + output_instruction(SCHEMA)
    feedback = Message("user", OutputSchema(SCHEMA).feedback("answer: expected object, got array"))
    retry = dataclasses.replace(
        base, tools=tools, messages=[Message("user", "u"), Message("assistant", "[]"), feedback]
    )
    assert grammar_when_safe(retry) is retry


# --- end to end on the embedded model --------------------------------------------------------------


@pytest.mark.local_model
@pytest.mark.timeout(900)  # a loaded 2-core machine; a few seconds when idle
def test_the_embedded_model_answers_valid_json_after_reading_a_file(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    (tmp_path / "notes.txt").write_text("first line\nsecond line\nthird line\n", encoding="utf-8")
    read = []

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Read a text file and return its content.

        Args:
            path: the file's path, relative to the project folder.
        """
        read.append(path)
        target = tmp_path / path
        return target.read_text(encoding="utf-8") if target.is_file() else f"error: no such file: {path}"

    with create_local_client() as client:
        result = run_agent(
            client=client,
            system="You are a helpful assistant.",
            tools=[read_file],
            user="Please read the file notes.txt and tell me what it says",
            max_turns=4,
            output_schema=SCHEMA,
        )
    assert read == ["notes.txt"]
    assert result.stop_reason == "complete", result.messages
    assert check_input(SCHEMA, result.output) is None
    assert json.loads(result.messages[-1].content.strip().strip("`").removeprefix("json")) == result.output
