"""Wire fidelity 3, what miniagent sends (kinds 2, 3, 5, 6, 7): each input the APIs refused runs
the real loop against a loopback HTTP server that enforces the API's rule
(``api_rules_requests``) and answers a breaking request with the API's own 400 text.

- kind 2: tool schemas every API accepts, whatever their source (hand-written, MCP, ``@tool``);
- kind 3: strict mode only when every strict rule of OpenAI holds;
- kind 5: the reasoning each server wants back (vLLM's field name, OpenRouter's
  ``reasoning_details``, Gemini's ``extra_content`` thought signatures);
- kind 6: the output limit and temperature each model family accepts;
- kind 7: call ids mapped on the wire when a session crosses providers.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from api_rules import ANTHROPIC_RULES, OPENAI_RULES, anthropic_error, enforcing, openai_error
from api_rules_requests import (
    anthropic_input_schemas,
    anthropic_tool_use_id_pattern,
    gemini_error,
    gemini_thought_signatures,
    openai_call_id_length,
    openai_function_schemas,
    openai_reasoning_model_parameters,
    openai_response_format_schema,
    openai_strict_schemas,
    openrouter_error,
    openrouter_reasoning_details,
    strict_accepts,
    vllm_read_reasoning,
)
from providers_server import ProviderServer, Reply, anthropic_sse, fixture, random_chunks, sse

from miniagent import (
    Message,
    Reasoning,
    RunResult,
    Tool,
    ToolCall,
    ToolResult,
    load_session,
    run_agent,
    tool,
)
from miniagent.output import strict_compatible
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers._chat_params import limit_field, sends_temperature
from miniagent.providers._chat_reasoning import chat_origin
from miniagent.providers._history import short_id
from miniagent.providers._schemas import object_root, openai_parameters
from miniagent.providers.openai import build_chat_body

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
VLLM_ID = "chatcmpl-tool-8f3a2c91d4e64b7f9a0c5e1d2b3f4a6c"  # 46 characters
VLLM_THOUGHT = "The user wants the weather in Paris. I will call get_weather."


class Recorder:
    """Tools that record their inputs."""

    def __init__(self) -> None:
        self.inputs: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str, schema: dict[str, Any] | None = None, *, strict: bool = False) -> Tool:
        def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
            self.inputs.append((name, arguments))
            return ToolResult(f"{name} ok")

        schema = schema if schema is not None else {"type": "object", "additionalProperties": True}
        return Tool(name, f"the {name} tool", schema, execute, strict=strict)


def openai_call(call_id: str, name: str, arguments: dict[str, Any], **fragment: Any) -> Reply:
    """A chat-completions turn with one tool call (``fragment``: extra fields of the call)."""
    call = {"index": 0, "id": call_id, "type": "function", **fragment}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}
    return Reply(
        [
            sse(
                {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                done=True,
            )
        ]
    )


def openai_text(text: str) -> Reply:
    return Reply(
        [sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}, done=True)]
    )


def anthropic_call(call_id: str, name: str, arguments: dict[str, Any]) -> Reply:
    return Reply(
        [
            anthropic_sse(
                {"type": "message_start", "message": {"id": "m", "content": []}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(arguments)},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
                {"type": "message_stop"},
            )
        ]
    )


def anthropic_text(text: str) -> Reply:
    return Reply(
        [
            anthropic_sse(
                {"type": "message_start", "message": {"id": "m2", "content": []}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                {"type": "message_stop"},
            )
        ]
    )


def run_with(
    provider: str,
    handler: Any,
    tools: list[Tool],
    *,
    model: str = "test-model",
    session: Path | None = None,
    user: str | None = "go",
    **options: Any,
) -> tuple[RunResult, ProviderServer]:
    """One run of the real loop against a loopback server answering with ``handler``."""
    output_schema = options.pop("output_schema", None)
    with ProviderServer(handler=handler) as server:
        url = f"{server.url}/v1" if provider == "openai" else server.url
        client = create_client(provider, model, url, "key", retry=NO_RETRY, **options)
        try:
            result = run_agent(
                client=client,
                system="be brief",
                tools=tools,
                user=user or "go on",
                max_turns=4,
                session_path=session,
                output_schema=output_schema,
            )
        finally:
            client.close()  # type: ignore[attr-defined]
    return result, server


def sent_tools(server: ProviderServer) -> list[dict[str, Any]]:
    return list(server.requests[0].body.get("tools") or [])


# --- kind 2: tool schemas every API accepts ------------------------------------------------------

NO_PROPERTIES = {"type": "object"}  # what many MCP servers list for a tool without arguments
LOOSE_PARTS = {
    "type": "object",
    "properties": {"tags": {"type": "array"}, "filters": {"type": ["object", "null"]}},
    "required": ["tags"],
}
EITHER = {
    "anyOf": [
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    ]
}


def test_objects_without_properties_and_arrays_without_items_reach_openai() -> None:
    handler = enforcing(
        [*OPENAI_RULES, openai_function_schemas],
        [openai_call("call_1", "search", {"tags": ["a"], "filters": {"k": 1}}), openai_text("found")],
        openai_error,
    )
    tools = Recorder()
    originals = [copy.deepcopy(NO_PROPERTIES), copy.deepcopy(LOOSE_PARTS)]
    made = [tools.tool("ping", NO_PROPERTIES), tools.tool("search", LOOSE_PARTS)]
    result, server = run_with("openai", handler, made)
    assert result.stop_reason == "complete", server.requests[-1].body
    assert tools.inputs == [("search", {"tags": ["a"], "filters": {"k": 1}})]
    parameters = [spec["function"]["parameters"] for spec in sent_tools(server)]
    assert parameters[0] == {"type": "object", "properties": {}}
    assert parameters[1]["properties"]["tags"] == {"type": "array", "items": {}}
    assert parameters[1]["properties"]["filters"] == {"type": ["object", "null"], "properties": {}}
    assert [t.input_schema for t in made] == originals  # the tools keep their own schemas
    # The rule is the API's: the schemas as written are what it refuses.
    raw = {"tools": [{"type": "function", "function": {"name": "search", "parameters": LOOSE_PARTS}}]}
    assert openai_function_schemas(raw) == (
        "Invalid schema for function 'search': In context=('properties', 'tags'), array schema missing items."
    )
    raw = {"tools": [{"type": "function", "function": {"name": "ping", "parameters": NO_PROPERTIES}}]}
    assert openai_function_schemas(raw) == (
        "Invalid schema for function 'ping': In context=(), object schema missing properties."
    )


@pytest.mark.parametrize("combination", ["anyOf", "oneOf", "allOf"])
def test_a_top_level_combination_reaches_anthropic(combination: str) -> None:
    schema = {combination: EITHER["anyOf"], "description": "a file or a page"}
    handler = enforcing(
        [*ANTHROPIC_RULES, anthropic_input_schemas],
        [anthropic_call("toolu_1", "fetch", {"path": "a", "url": "b"}), anthropic_text("done")],
        anthropic_error,
    )
    tools = Recorder()
    result, server = run_with("anthropic", handler, [tools.tool("fetch", schema)])
    assert result.stop_reason == "complete", server.requests[-1].body
    sent = sent_tools(server)[0]["input_schema"]
    assert sent["type"] == "object" and not set(sent) & {"anyOf", "oneOf", "allOf"}
    assert sent["properties"] == {"path": {"type": "string"}, "url": {"type": "string"}}
    assert sent.get("required") == (["path", "url"] if combination == "allOf" else None)
    assert sent["description"] == "a file or a page"
    raw = {"tools": [{"name": "fetch", "input_schema": {"type": "object", **schema}}]}
    assert anthropic_input_schemas(raw) == (
        "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
    )


def test_a_top_level_combination_reaches_openai_and_the_local_check_keeps_it() -> None:
    handler = enforcing(
        [*OPENAI_RULES, openai_function_schemas],
        [openai_call("call_1", "fetch", {}), openai_text("sorry")],
        openai_error,
    )
    tools = Recorder()
    result, server = run_with("openai", handler, [tools.tool("fetch", EITHER)])
    assert result.stop_reason == "complete", server.requests[-1].body
    assert tools.inputs == []  # {} matches neither branch of the tool's own schema
    answer = result.messages[2]
    assert answer.is_error and answer.content.startswith("invalid input for fetch:")
    assert sent_tools(server)[0]["function"]["parameters"]["type"] == "object"


def test_schemas_of_an_mcp_server_reach_both_apis(tmp_path: Path) -> None:
    from miniagent.mcp import StdioMCPServer

    script = tmp_path / "server.py"
    listed = [
        {"name": "now", "description": "The time.", "inputSchema": NO_PROPERTIES},
        {"name": "tag", "description": "Tags.", "inputSchema": LOOSE_PARTS},
        {"name": "fetch", "description": "A file or a page.", "inputSchema": EITHER},
    ]
    script.write_text(
        "import json, sys\n"
        f"TOOLS = {listed!r}\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    if 'id' not in request:\n"
        "        continue\n"
        "    method = request['method']\n"
        "    if method == 'initialize':\n"
        "        result = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}},"
        " 'serverInfo': {'name': 'shapes'}}\n"
        "    elif method == 'tools/list':\n"
        "        result = {'tools': TOOLS}\n"
        "    else:\n"
        "        result = {'content': [{'type': 'text', 'text': 'tagged'}]}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'result': result}), flush=True)\n"
    )
    with StdioMCPServer(sys.executable, [str(script)], name="shapes") as server:
        tools = server.tools()
        openai = enforcing(
            [*OPENAI_RULES, openai_function_schemas],
            [openai_call("call_1", "tag", {"tags": ["x"]}), openai_text("ok")],
            openai_error,
        )
        result, _ = run_with("openai", openai, tools)
        assert result.stop_reason == "complete" and result.messages[2].content == "tagged"
        anthropic = enforcing(
            [*ANTHROPIC_RULES, anthropic_input_schemas],
            [anthropic_call("toolu_1", "tag", {"tags": ["x"]}), anthropic_text("ok")],
            anthropic_error,
        )
        result, _ = run_with("anthropic", anthropic, tools)
        assert result.stop_reason == "complete" and result.messages[2].content == "tagged"


def test_wire_forms_are_pure_and_deterministic() -> None:
    ready = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}
    assert openai_parameters(ready) is ready  # nothing to change: no copy
    before = copy.deepcopy(LOOSE_PARTS)
    assert openai_parameters(LOOSE_PARTS) == openai_parameters(copy.deepcopy(LOOSE_PARTS))
    assert before == LOOSE_PARTS
    nested = {"type": "object", "properties": {"x": {"anyOf": [{"type": "array"}, {"$defs": {}}]}}}
    assert openai_parameters(nested)["properties"]["x"]["anyOf"][0] == {"type": "array", "items": {}}
    # a $ref branch is followed; a property whose branches differ keeps both forms
    schema = {
        "oneOf": [{"$ref": "#/$defs/A"}, {"type": "object", "properties": {"n": {"type": "string"}}}],
        "$defs": {"A": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    }
    flat = object_root(schema)
    assert flat["properties"] == {"n": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
    assert "required" not in flat and flat["$defs"] == schema["$defs"]
    assert object_root(True) == {"type": "object", "properties": {}}


# --- kind 3: strict mode the API really accepts --------------------------------------------------

STRICT_OK = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
    "required": ["city", "days"],
    "additionalProperties": False,
}
REF_WITH_DESCRIPTION = {
    "type": "object",
    "properties": {"place": {"$ref": "#/$defs/Place", "description": "where"}},
    "required": ["place"],
    "additionalProperties": False,
    "$defs": {
        "Place": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        }
    },
}


def test_a_ref_with_a_description_is_sent_non_strict() -> None:
    handler = enforcing(
        [*OPENAI_RULES, openai_function_schemas, openai_strict_schemas],
        [openai_call("call_1", "weather", {"place": {"city": "Paris"}}), openai_text("sunny")],
        openai_error,
    )
    tools = Recorder()
    made = [
        tools.tool("weather", REF_WITH_DESCRIPTION, strict=True),
        tools.tool("plain", STRICT_OK, strict=True),
    ]
    result, server = run_with("openai", handler, made)
    assert result.stop_reason == "complete", server.requests[-1].body
    functions = {spec["function"]["name"]: spec["function"] for spec in sent_tools(server)}
    assert "strict" not in functions["weather"]
    assert functions["plain"]["strict"] is True  # a schema that keeps every rule still goes strict
    refused = {"tools": [{"type": "function", "function": {**functions["weather"], "strict": True}}]}
    assert openai_strict_schemas(refused) == (
        "Invalid schema for function 'weather': In context=('properties', 'place'), "
        "$ref cannot have keywords {'description'}."
    )


def test_an_output_schema_with_a_ref_and_a_description_is_asked_non_strict() -> None:
    answer = json.dumps({"place": {"city": "Paris"}})
    handler = enforcing(
        [*OPENAI_RULES, openai_strict_schemas, openai_response_format_schema],
        [openai_text(answer)],
        openai_error,
    )
    result, server = run_with("openai", handler, [], output_schema=REF_WITH_DESCRIPTION)
    assert result.stop_reason == "complete" and result.output == {"place": {"city": "Paris"}}
    spec = server.requests[0].body["response_format"]["json_schema"]
    assert spec["strict"] is False and spec["schema"] == REF_WITH_DESCRIPTION


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nested(levels: int) -> dict[str, Any]:
    schema = _object(leaf={"type": "string"})
    for _ in range(levels - 1):
        schema = _object(inner=schema)
    return schema


STRICT_CASES: list[tuple[str, Any, bool]] = [
    ("plain", STRICT_OK, True),
    (
        "string pattern and format",
        _object(at={"type": "string", "format": "date-time", "pattern": "^[0-9]"}),
        True,
    ),
    (
        "number bounds",
        _object(n={"type": "number", "minimum": 0, "exclusiveMaximum": 5, "multipleOf": 1}),
        True,
    ),
    (
        "array sizes",
        _object(xs={"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
        True,
    ),
    ("nested anyOf", _object(v={"anyOf": [{"type": "string"}, _object(k={"type": "boolean"})]}), True),
    ("enum without type", _object(e={"enum": ["a", 1, None]}), True),
    ("a lone $ref", {**_object(p={"$ref": "#/$defs/P"}), "$defs": {"P": _object(c={"type": "null"})}}, True),
    ("a recursive $ref", _object(children={"type": "array", "items": {"$ref": "#"}}), True),
    ("ten levels of nesting", _nested(9), True),
    ("a $ref with a description", REF_WITH_DESCRIPTION, False),
    ("no additionalProperties", {**STRICT_OK, "additionalProperties": True}, False),
    ("a property not required", {**STRICT_OK, "required": ["city"]}, False),
    ("an object without properties", _object(o={"type": "object", "additionalProperties": False}), False),
    ("an array without items", _object(xs={"type": "array"}), False),
    ("minLength", _object(s={"type": "string", "minLength": 1}), False),
    ("allOf", _object(a={"allOf": [{"type": "string"}]}), False),
    ("oneOf", _object(a={"oneOf": [{"type": "string"}, {"type": "integer"}]}), False),
    ("not", _object(a={"type": "string", "not": {"const": "x"}}), False),
    ("if/then", _object(a={"type": "string", "if": {"const": "x"}, "then": {}}), False),
    ("default", _object(a={"type": "string", "default": "x"}), False),
    ("an unsupported format", _object(u={"type": "string", "format": "uri"}), False),
    ("a look-ahead pattern", _object(p={"type": "string", "pattern": "^(?=a)"}), False),
    ("an empty schema", _object(any={}), False),
    ("a root anyOf", {"anyOf": [STRICT_OK]}, False),
    ("a root array", {"type": "array", "items": {"type": "string"}}, False),
    ("a remote $ref", _object(r={"$ref": "https://example.com/schema.json"}), False),
    ("eleven levels of nesting", _nested(10), False),
    ("5001 properties", _object(**{f"p{i}": {"type": "string"} for i in range(5001)}), False),
    ("1001 enum values", _object(e={"type": "integer", "enum": list(range(1001))}), False),
    ("a big string enum", _object(e={"type": "string", "enum": [f"{i:060d}" for i in range(251)]}), False),
    (
        "120,001 characters of names",
        _object(**{"a" * 60_001: {"type": "null"}, "b" * 60_000: {"type": "null"}}),
        False,
    ),
]


@pytest.mark.parametrize(("case", "schema", "strict"), STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_every_strict_rule_is_checked(case: str, schema: Any, strict: bool) -> None:
    assert strict_compatible(schema) is strict
    if strict:  # what miniagent sends strict, the server's strict rules accept
        assert strict_accepts(schema)


Mode = Literal["a", "b"]


@dataclass
class Point:
    x: int
    y: int = 0


def test_strict_at_tool_level_is_what_the_decorator_builds() -> None:
    @tool(strict=True)
    def find(query: str, mode: Mode = "a", point: Point | None = None, tags: list[str] | None = None) -> str:
        """Find.

        Args:
            query: what to look for.
        """
        return query

    assert strict_compatible(find.input_schema) and strict_accepts(find.input_schema)


# --- kind 5: the reasoning each API wants back ---------------------------------------------------


def test_vllm_gets_its_reasoning_back_under_the_name_it_used(tmp_path: Path) -> None:
    handler = enforcing(
        OPENAI_RULES, [Reply([fixture("vllm-reasoning-tool-call.sse")]), openai_text("Sunny.")], openai_error
    )
    session = tmp_path / "s.jsonl"
    result, server = run_with("openai", handler, [Recorder().tool("get_weather")], session=session)
    assert result.stop_reason == "complete", server.requests[-1].body
    turn = result.messages[1]
    origin = chat_origin(f"{server.url}/v1")
    assert turn.reasoning == (Reasoning(VLLM_THOUGHT, origin=origin, data={"field": "reasoning"}),)
    body = server.requests[1].body
    assert vllm_read_reasoning(body, "reasoning") == [VLLM_THOUGHT]  # a release that reads "reasoning"
    assert vllm_read_reasoning(body, "reasoning_content") == [None]
    # the record keeps what is needed, across a session file
    restored = load_session(session)
    assert restored == result.messages
    again = build_chat_body("m", "", restored, (), origin=origin)
    assert next(m.get("reasoning") for m in again["messages"] if m["role"] == "assistant") == VLLM_THOUGHT
    elsewhere = build_chat_body("m", "", restored, (), origin=chat_origin("https://api.deepseek.com"))
    assistant = next(m for m in elsewhere["messages"] if m["role"] == "assistant")
    assert assistant["reasoning_content"] == VLLM_THOUGHT and "reasoning" not in assistant


def test_an_older_vllm_gets_reasoning_content_back() -> None:
    body = fixture("vllm-reasoning-tool-call.sse").replace(b'"reasoning"', b'"reasoning_content"')
    handler = enforcing(OPENAI_RULES, [Reply([body]), openai_text("Sunny.")], openai_error)
    result, server = run_with("openai", handler, [Recorder().tool("get_weather")])
    assert result.stop_reason == "complete"
    assert result.messages[1].reasoning == (Reasoning(VLLM_THOUGHT),)  # as before: no opaque fields
    sent = server.requests[1].body
    assert vllm_read_reasoning(sent, "reasoning_content") == [VLLM_THOUGHT]
    assert vllm_read_reasoning(sent, "reasoning") == [None]


OPENROUTER_SIGNATURE_ID = "tool_get_weather_Qm3xT8pLw2ZrV9kN4sYd"


def _openrouter_issued() -> list[dict[str, Any]]:
    """The encrypted reasoning details the OpenRouter fixture sends."""
    issued = []
    for line in fixture("openrouter-gemini-reasoning-details.sse").decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                issued += [
                    d
                    for d in choice["delta"].get("reasoning_details") or []
                    if d["type"] == "reasoning.encrypted"
                ]
    return issued


@pytest.mark.parametrize("seed", range(2))
def test_gemini_through_openrouter_gets_its_reasoning_details_back(seed: int, tmp_path: Path) -> None:
    issued = _openrouter_issued()
    assert [d["id"] for d in issued] == [OPENROUTER_SIGNATURE_ID]
    rule = openrouter_reasoning_details(issued)
    first = Reply(random_chunks(fixture("openrouter-gemini-reasoning-details.sse"), seed=seed))
    handler = enforcing([*OPENAI_RULES, rule], [first, openai_text("Sunny in Paris.")], openrouter_error)
    tools = Recorder()
    session = tmp_path / "s.jsonl"
    result, server = run_with(
        "openai", handler, [tools.tool("get_weather")], model="google/gemini-3-pro-preview", session=session
    )
    assert result.stop_reason == "complete", server.requests[-1].body
    assert tools.inputs == [("get_weather", {"location": "Paris"})]
    assistant = server.requests[1].body["messages"][2]
    thought = "The user asks for the weather in Paris. I should call get_weather."
    assert assistant["reasoning"] == thought
    assert assistant["reasoning_details"] == [
        {"type": "reasoning.text", "text": thought, "format": "google-gemini-v1", "index": 0},
        *issued,
    ]
    assert load_session(session) == result.messages
    stripped = copy.deepcopy(server.requests[1].body)
    del stripped["messages"][2]["reasoning_details"]
    assert "missing a thought_signature" in (rule(stripped) or "")


GEMINI_SIGNATURE = (
    "CpkCAdHtim8sR3vQ0xL7mK2pN9wT4cY6zB1eF5gH8jU3iO0aS7dG2fJ5kL9qW4rT1yX6vC3bN8mZ0pE7uI2oA5sD9gH4jK1lQ6wR3tY8x"
    "V0cB5nM2zL7pE4uI9oA"
)


def test_gemini_gets_each_thought_signature_back_on_its_call() -> None:
    second_signature = "EtoBCtcBAdHtim9second"
    issued = {"function-call-5938017246391562871": GEMINI_SIGNATURE, "function-call-77": second_signature}
    rule = gemini_thought_signatures(issued)
    step_two = Reply(
        [
            sse(
                {
                    "choices": [
                        {
                            "delta": {
                                "role": "assistant",
                                "tool_calls": [
                                    {
                                        "extra_content": {"google": {"thought_signature": second_signature}},
                                        "function": {
                                            "arguments": '{"location":"Rome"}',
                                            "name": "get_weather",
                                        },
                                        "id": "function-call-77",
                                        "type": "function",
                                    }
                                ],
                            },
                            "finish_reason": "stop",  # Gemini may end a call turn with "stop"
                            "index": 0,
                        }
                    ]
                },
                done=True,
            )
        ]
    )
    handler = enforcing(
        [*OPENAI_RULES, rule],
        [Reply([fixture("gemini-openai-thought-signature.sse")]), step_two, openai_text("All sunny.")],
        gemini_error,
    )
    tools = Recorder()
    result, server = run_with("openai", handler, [tools.tool("get_weather")], model="gemini-3-pro-preview")
    assert result.stop_reason == "complete", server.requests[-1].body
    assert [i["location"] for _, i in tools.inputs] == ["Paris", "London", "Rome"]
    sent = [m for m in server.requests[2].body["messages"] if m["role"] == "assistant"]
    assert [[c.get("extra_content") for c in m["tool_calls"]] for m in sent] == [
        [{"google": {"thought_signature": GEMINI_SIGNATURE}}, None],
        [{"google": {"thought_signature": second_signature}}],
    ]
    stripped = copy.deepcopy(server.requests[2].body)
    del stripped["messages"][2]["tool_calls"][0]["extra_content"]
    assert (rule(stripped) or "").startswith(
        "Function call is missing a thought_signature in functionCall parts."
    )


def test_provider_fields_go_only_to_the_provider_that_sent_them() -> None:
    from miniagent.providers._anthropic_body import build_messages

    gemini = chat_origin("https://generativelanguage.googleapis.com/v1beta/openai")
    record = [
        Message("user", "go"),
        Message(
            "assistant",
            "",
            (ToolCall("c1", "t", {}),),
            reasoning=(
                Reasoning("thinking", origin=gemini, data={"field": "reasoning"}),
                Reasoning(
                    "",
                    origin=gemini,
                    data={
                        "reasoning_details": [{"type": "reasoning.encrypted", "data": "x"}],
                        "tool_calls": [{"extra_content": {"google": {"thought_signature": "s"}}}],
                    },
                ),
            ),
        ),
        Message("tool", "ok", tool_call_id="c1"),
    ]
    same = build_chat_body("m", "", record, (), origin=gemini)["messages"][1]
    assert same["reasoning"] == "thinking" and same["reasoning_details"] == [
        {"type": "reasoning.encrypted", "data": "x"}
    ]
    assert same["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "s"}}
    other = build_chat_body("m", "", record, (), origin=chat_origin("http://127.0.0.1:8000/v1"))["messages"][
        1
    ]
    assert other == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "thinking",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
    }
    assert [b["type"] for b in build_messages(record)[1]["content"]] == ["tool_use"]  # nothing to Anthropic
    signed = Message("assistant", "a", reasoning=(Reasoning("t", "sig", origin=gemini, data={"k": 1}),))
    assert build_messages([Message("user", "q"), signed])[1]["content"] == [{"type": "text", "text": "a"}]


def test_reasoning_details_pieces_merge_by_type_index_and_id() -> None:
    from miniagent.providers._chat_reasoning import add_details

    details: list[dict[str, Any]] = []
    add_details(details, [{"type": "reasoning.text", "text": "a", "signature": None, "index": 0}])
    add_details(details, [{"type": "reasoning.text", "text": "b", "index": 0}, "not a piece"])
    add_details(details, [{"type": "reasoning.text", "text": "", "signature": "s1", "index": 0}])
    add_details(details, [{"type": "reasoning.encrypted", "data": "d1", "id": "c1", "index": 0}])
    add_details(details, [{"type": "reasoning.encrypted", "data": "d2", "id": "c2", "index": 0}])
    add_details(details, [{"type": "reasoning.text", "text": "c", "index": 1}])
    add_details(details, None)
    assert details == [
        {"type": "reasoning.text", "text": "ab", "signature": "s1", "index": 0},
        {"type": "reasoning.encrypted", "data": "d1", "id": "c1", "index": 0},
        {"type": "reasoning.encrypted", "data": "d2", "id": "c2", "index": 0},
        {"type": "reasoning.text", "text": "c", "index": 1},
    ]


def test_reasoning_with_provider_fields_loads_and_old_lines_still_do(tmp_path: Path) -> None:
    from miniagent import SessionError

    origin = chat_origin("https://openrouter.ai/api/v1")
    message = Message(
        "assistant", "a", reasoning=(Reasoning("t", origin=origin, data={"field": "reasoning"}),)
    )
    assert Message.from_json(json.dumps(message.to_json())) == message
    assert message.to_json()["reasoning"] == [{"text": "t", "origin": origin, "data": {"field": "reasoning"}}]
    old = {"role": "assistant", "content": "a", "reasoning": [{"text": "t", "signature": "s"}]}
    assert Message.from_json(old).reasoning == (Reasoning("t", "s"),)
    session = tmp_path / "bad.jsonl"
    bad = {"role": "assistant", "content": "a", "reasoning": [{"text": "t", "data": ["not", "an", "object"]}]}
    session.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n" + json.dumps(bad) + "\n")
    before = session.read_bytes()
    with pytest.raises(SessionError, match="reasoning data is not a JSON object"):
        load_session(session)
    assert session.read_bytes() == before


# --- kind 6: parameters of today's models --------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5-mini", "gpt-5.1-codex", "o3-mini", "o4-mini", "o1"])
def test_openai_reasoning_models_get_max_completion_tokens_and_no_temperature(model: str) -> None:
    handler = enforcing([*OPENAI_RULES, openai_reasoning_model_parameters], [openai_text("hi")], openai_error)
    result, server = run_with("openai", handler, [], model=model, max_tokens=500, temperature=0.2)
    assert result.stop_reason == "complete", server.requests[-1].body
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 500
    assert "max_tokens" not in body and "temperature" not in body
    assert openai_reasoning_model_parameters({**body, "max_tokens": 500}) == (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )


@pytest.mark.parametrize(
    "model", ["deepseek-chat", "llama-3.1-8b-instruct", "openai/gpt-5", "gpt-5-chat-latest"]
)
def test_other_models_keep_max_tokens_and_temperature(model: str) -> None:
    handler = enforcing(OPENAI_RULES, [openai_text("hi")], openai_error)
    result, server = run_with("openai", handler, [], model=model, max_tokens=500, temperature=0.2)
    assert result.stop_reason == "complete"
    body = server.requests[0].body
    assert body["max_tokens"] == 500 and body["temperature"] == 0.2 and "max_completion_tokens" not in body


def test_openai_and_azure_hosts_get_max_completion_tokens_for_every_model() -> None:
    assert limit_field("gpt-4o-mini", "https://api.openai.com/v1") == "max_completion_tokens"
    assert limit_field("my-deployment", "https://res.openai.azure.com/openai/v1") == "max_completion_tokens"
    assert limit_field("gpt-4o-mini", "https://openrouter.ai/api/v1") == "max_tokens"
    assert limit_field("o3", "http://127.0.0.1:4000/v1") == "max_completion_tokens"  # a gateway to OpenAI
    assert not sends_temperature("gpt-5", "https://api.openai.com/v1", 0.2)
    assert sends_temperature("gpt-5", "https://api.openai.com/v1", 1)
    assert not sends_temperature("openai/o3", "https://api.openai.com/v1", 0.2)
    assert sends_temperature("openai/o3", "https://openrouter.ai/api/v1", 0.2)  # the router maps it
    assert sends_temperature("gpt-4.1", "https://api.openai.com/v1", 0.2)


def test_the_cli_runs_with_a_reasoning_model(tmp_path: Path) -> None:
    from tests.cli_helpers import run_cli

    handler = enforcing(
        [*OPENAI_RULES, openai_reasoning_model_parameters], [openai_text("Hello.")], openai_error
    )
    with ProviderServer(handler=handler) as server:
        args = ["run", "hi", "--provider", "openai", "--model", "gpt-5", "--base-url", f"{server.url}/v1"]
        done = run_cli([*args, "--max-output-tokens", "64", "--workspace", str(tmp_path)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Hello." in done.stdout
    assert server.requests[0].body["max_completion_tokens"] == 64


# --- kind 7: ids that cross providers ------------------------------------------------------------


def test_a_session_begun_on_vllm_goes_on_with_openai(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    vllm = enforcing(
        OPENAI_RULES, [Reply([fixture("vllm-reasoning-tool-call.sse")]), openai_text("Sunny.")], openai_error
    )
    run_with("openai", vllm, [Recorder().tool("get_weather")], session=session)
    openai = enforcing(
        [*OPENAI_RULES, openai_call_id_length],
        [openai_call("call_abc", "get_weather", {"location": "Rome"}), openai_text("Rainy.")],
        openai_error,
    )
    result, server = run_with(
        "openai", openai, [Recorder().tool("get_weather")], session=session, user="and Rome?"
    )
    assert result.stop_reason == "complete", server.requests[-1].body
    record = load_session(session)
    assert (
        record[1].tool_calls[0].id == VLLM_ID and record[2].tool_call_id == VLLM_ID
    )  # the record keeps its ids
    for captured in server.requests:  # every request maps the id the same way
        sent = captured.body["messages"]
        assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == short_id(VLLM_ID)
    refused = {"messages": [{"role": "assistant", "tool_calls": [{"id": VLLM_ID}]}]}
    assert openai_call_id_length(refused) == (
        "Invalid 'messages[0].tool_calls[0].id': string too long. Expected a string with maximum length 40, "
        "but got a string with length 46 instead."
    )


def test_ids_from_kimi_reach_anthropic_and_stay_apart(tmp_path: Path) -> None:
    # Kimi K2 names calls "functions.NAME:N"; two ids that differ only in a character Anthropic
    # refuses must not become one id on the wire.
    first, second = "functions.read_file:0", "functions.read_file.0"
    session = tmp_path / "s.jsonl"
    lines = [
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": first, "name": "read_file", "input": {}}]},
        {"role": "tool", "content": "one", "tool_call_id": first},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": second, "name": "read_file", "input": {}}],
        },
        {"role": "tool", "content": "two", "tool_call_id": second},
        {"role": "assistant", "content": "read"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    handler = enforcing(
        [*ANTHROPIC_RULES, anthropic_tool_use_id_pattern], [anthropic_text("fine")], anthropic_error
    )
    result, server = run_with("anthropic", handler, [], session=session, user="thanks")
    assert result.stop_reason == "complete", server.requests[-1].body
    sent = server.requests[0].body["messages"]
    uses = [b["id"] for m in sent for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in sent for b in m["content"] if b["type"] == "tool_result"]
    assert uses == results == [short_id(first), short_id(second)] and uses[0] != uses[1]
    assert [b["content"] for m in sent for b in m["content"] if b["type"] == "tool_result"] == ["one", "two"]


def test_long_ids_with_one_prefix_stay_apart_and_fitting_ids_stay_as_they_are() -> None:
    common = "chatcmpl-tool-" + "0" * 30
    record = [
        Message("user", "go"),
        Message(
            "assistant",
            "",
            (
                ToolCall(common + "aa", "t", {}),
                ToolCall(common + "bb", "t", {}),
                ToolCall("call_ok", "t", {}),
            ),
        ),
        Message("tool", "1", tool_call_id=common + "aa"),
        Message("tool", "2", tool_call_id=common + "bb"),
        Message("tool", "3", tool_call_id="call_ok"),
    ]
    body = build_chat_body("m", "", record, ())
    ids = [c["id"] for c in body["messages"][1]["tool_calls"]]
    assert ids == [short_id(common + "aa"), short_id(common + "bb"), "call_ok"]
    assert [m["tool_call_id"] for m in body["messages"][2:]] == ids
    assert all(len(i) <= 40 for i in ids)


def test_a_mapped_id_that_comes_back_is_mapped_back(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": VLLM_ID, "name": "t", "input": {}}]},
        {"role": "tool", "content": "ok", "tool_call_id": VLLM_ID},
        {"role": "assistant", "content": "done"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # a model that repeats the id it was shown
    handler = enforcing(
        [*OPENAI_RULES, openai_call_id_length],
        [openai_call(short_id(VLLM_ID), "t", {}), openai_text("again done")],
        openai_error,
    )
    result, server = run_with("openai", handler, [Recorder().tool("t")], session=session, user="again")
    assert result.stop_reason == "complete", server.requests[-1].body
    new_call = result.messages[5].tool_calls[0]
    assert new_call.id == f"{VLLM_ID}_2"  # the record id, made unique by the loop
    sent = server.requests[1].body["messages"]
    wire = [c["id"] for m in sent for c in m.get("tool_calls") or ()]
    assert wire == [short_id(VLLM_ID), short_id(f"{VLLM_ID}_2")] and len(set(wire)) == 2
