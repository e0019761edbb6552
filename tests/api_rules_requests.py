"""Request rules of the real APIs about what a client sends (issue "Wire fidelity 3", kinds 2, 3,
5, 6, 7), enforced by the loopback test servers.

As in ``api_rules``: each rule reads a request body and returns ``None`` when the real API would
accept it, else the API's own error text; ``api_rules.enforcing`` answers a breaking request with
the API's 400. The rules are written from the APIs' documents and error texts, independently of
miniagent's code (a rule that reused it would pass whatever miniagent sends).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from api_rules import Rule
from providers_server import Reply

# --- error bodies --------------------------------------------------------------------------------


def gemini_error(message: str) -> Reply:
    """The 400 of Gemini's OpenAI-compatible endpoint (a JSON list of one error)."""
    body = [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}]
    return Reply([json.dumps(body).encode()], status=400, content_type="application/json", chunked=False)


def openrouter_error(message: str) -> Reply:
    """OpenRouter's 400 that passes on the upstream provider's error in ``metadata.raw``."""
    raw = json.dumps({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": raw, "provider_name": "Google AI Studio"},
        }
    }
    return Reply([json.dumps(body).encode()], status=400, content_type="application/json", chunked=False)


# --- kind 2: tool schemas ------------------------------------------------------------------------

_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_PLACES = ("items", "additionalProperties", "not")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _schemas(node: Any, context: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every sub-schema of ``node`` with its context (the keys that lead to it)."""
    if not isinstance(node, dict):
        return
    yield context, node
    for key in _MAPS:
        for name, sub in (node.get(key) or {}).items() if isinstance(node.get(key), dict) else ():
            yield from _schemas(sub, (*context, key, name))
    for key in _PLACES:
        if isinstance(node.get(key), dict):
            yield from _schemas(node[key], (*context, key))
    for key in _LISTS:
        for index, sub in enumerate(node.get(key) or ()):
            yield from _schemas(sub, (*context, key, str(index)))


def _kinds(node: dict[str, Any]) -> list[Any]:
    kinds = node.get("type")
    return kinds if isinstance(kinds, list) else [kinds]


def _shape_problem(schema: Any) -> str | None:
    """OpenAI's checks of every function schema (strict or not)."""
    for context, node in _schemas(schema):
        if "object" in _kinds(node) and "properties" not in node:
            return f"In context={context}, object schema missing properties."
        if "array" in _kinds(node) and "items" not in node:
            return f"In context={context}, array schema missing items."
    return None


def _functions(body: Any) -> Iterator[dict[str, Any]]:
    for tool in body.get("tools") or ():
        yield tool["function"]


def openai_function_schemas(body: Any) -> str | None:
    """OpenAI chat completions: every function's ``parameters`` has an object root and every
    object and array schema in it says what it holds."""
    for function in _functions(body):
        parameters = function.get("parameters")
        kind = parameters.get("type") if isinstance(parameters, dict) else None
        if kind != "object":
            return (
                f"Invalid schema for function '{function['name']}': schema must be a JSON Schema of "
                f"'type: \"object\"', got 'type: \"{kind}\"'."
            )
        problem = _shape_problem(parameters)
        if problem:
            return f"Invalid schema for function '{function['name']}': {problem}"
    return None


def openai_response_format_schema(body: Any) -> str | None:
    """OpenAI: the ``response_format`` schema says what every object and array holds."""
    spec = (body.get("response_format") or {}).get("json_schema")
    problem = _shape_problem(spec["schema"]) if spec else None
    return f"Invalid schema for response_format '{spec['name']}': {problem}" if spec and problem else None


def anthropic_input_schemas(body: Any) -> str | None:
    """Anthropic: every ``input_schema`` is an object schema without a top-level combination."""
    for index, tool in enumerate(body.get("tools") or ()):
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{index}.custom.input_schema.type: Field required"
        if any(key in schema for key in ("oneOf", "allOf", "anyOf")):
            return (
                f"tools.{index}.custom.input_schema: input_schema does not support oneOf, allOf, or "
                "anyOf at the top level"
            )
    return None


# --- kind 3: strict mode -------------------------------------------------------------------------

_STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "definitions", "description", "title", "pattern", "format", "multipleOf",
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
}  # fmt: skip
_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
STRICT_MAX_DEPTH = 10


def _strict_schema_problem(schema: Any) -> str | None:
    """The first rule of OpenAI "Structured Outputs" strict mode ``schema`` breaks, worded as
    OpenAI words it."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        return "In context=(), schema must be a JSON Schema of 'type: \"object\"' and not use 'anyOf'."
    for context, node in _schemas(schema):
        problem = _strict_node_problem(node) or _strict_depth_problem(context)
        if problem:
            return f"In context={context}, {problem}"
    return None


def _strict_node_problem(node: dict[str, Any]) -> str | None:
    if "$ref" in node and len(node) > 1:
        return f"$ref cannot have keywords {set(node) - {'$ref'}}."
    for key in node:
        if key not in _STRICT_KEYWORDS:
            return f"'{key}' is not permitted."
    if "format" in node and node["format"] not in _FORMATS:
        return f"'{node['format']}' is not a valid format."
    if "object" in _kinds(node):
        if node.get("additionalProperties") is not False:
            return "'additionalProperties' is required to be supplied and to be false."
        missing = [name for name in node.get("properties", {}) if name not in node.get("required", [])]
        if missing:
            return (
                "'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'."
            )
    return None


def _strict_depth_problem(context: tuple[str, ...]) -> str | None:
    depth = 1 + context.count("properties")
    if depth > STRICT_MAX_DEPTH:
        return f"{depth} levels of nesting exceeds limit of {STRICT_MAX_DEPTH}."
    return None


def openai_strict_schemas(body: Any) -> str | None:
    """OpenAI: a function sent with ``strict: true`` (and a strict ``response_format``) keeps
    every strict rule."""
    for function in _functions(body):
        if function.get("strict"):
            problem = _strict_schema_problem(function.get("parameters"))
            if problem:
                return f"Invalid schema for function '{function['name']}': {problem}"
    spec = (body.get("response_format") or {}).get("json_schema")
    if spec and spec.get("strict"):
        problem = _strict_schema_problem(spec.get("schema"))
        if problem:
            return f"Invalid schema for response_format '{spec['name']}': {problem}"
    return None


def strict_accepts(schema: Any) -> bool:
    """Whether the server's strict rules accept ``schema`` (for tests of the rule itself)."""
    return _strict_schema_problem(schema) is None


# --- kind 5: reasoning sent back -----------------------------------------------------------------


def _current_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant messages after the last user message (what Gemini checks strictly)."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return [m for m in messages[last_user + 1 :] if m.get("role") == "assistant"]


def _missing_signature(name: str, position: int) -> str:
    return (
        "Function call is missing a thought_signature in functionCall parts. This is required for "
        "tools to work correctly, and missing thought_signature may lead to degraded model "
        f"performance. Additional data, function call `default_api:{name}` , position {position}. "
        "please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )


def gemini_thought_signatures(issued: dict[str, str]) -> Rule:
    """Gemini's OpenAI-compatible endpoint: in the current turn, the first call of each assistant
    message carries ``extra_content.google.thought_signature``, the one issued for that call
    (``issued``: call id -> signature), unchanged."""

    def rule(body: Any) -> str | None:
        for position, message in enumerate(_current_turn(body["messages"]), 1):
            calls = message.get("tool_calls") or []
            if not calls:
                continue
            first = calls[0]
            sent = ((first.get("extra_content") or {}).get("google") or {}).get("thought_signature")
            if sent is None or sent != issued.get(first["id"]):
                return _missing_signature(first["function"]["name"], position)
        return None

    return rule


def openrouter_reasoning_details(issued: list[dict[str, Any]]) -> Rule:
    """Gemini 3 through OpenRouter: each assistant message of the current turn with calls carries
    ``reasoning_details`` holding the encrypted entries the server issued for them, unchanged."""

    def rule(body: Any) -> str | None:
        for position, message in enumerate(_current_turn(body["messages"]), 1):
            calls = message.get("tool_calls") or []
            sent = message.get("reasoning_details") or []
            for call in calls:
                wanted = [d for d in issued if d.get("id") == call["id"]]
                if wanted and not all(d in sent for d in wanted):
                    return _missing_signature(call["function"]["name"], position)
        return None

    return rule


def vllm_read_reasoning(body: Any, field: str) -> list[str | None]:
    """The reasoning a vLLM release that reads only ``field`` sees on each assistant message
    (the other name is silently ignored)."""
    return [m.get(field) for m in body["messages"] if m.get("role") == "assistant"]


# --- kind 6: parameters of today's models --------------------------------------------------------

_REASONING_MODEL = re.compile(r"(o1|o3|o4-mini|gpt-5)")


def openai_reasoning_model_parameters(body: Any) -> str | None:
    """OpenAI reasoning models (o-series, gpt-5): no ``max_tokens``, no ``temperature`` but 1."""
    if not _REASONING_MODEL.match(body.get("model", "")):
        return None
    if "max_tokens" in body:
        return (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead."
        )
    if "temperature" in body and body["temperature"] != 1:
        return (
            f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
            "Only the default (1) value is supported."
        )
    return None


# --- kind 7: call ids ----------------------------------------------------------------------------


def openai_call_id_length(body: Any) -> str | None:
    """OpenAI: a tool call id has at most 40 characters."""
    for i, message in enumerate(body["messages"]):
        for j, call in enumerate(message.get("tool_calls") or ()):
            if len(call["id"]) > 40:
                return (
                    f"Invalid 'messages[{i}].tool_calls[{j}].id': string too long. Expected a string "
                    f"with maximum length 40, but got a string with length {len(call['id'])} instead."
                )
        if message.get("role") == "tool" and len(message["tool_call_id"]) > 40:
            return (
                f"Invalid 'messages[{i}].tool_call_id': string too long. Expected a string with "
                f"maximum length 40, but got a string with length {len(message['tool_call_id'])} instead."
            )
    return None


_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def anthropic_tool_use_id_pattern(body: Any) -> str | None:
    """Anthropic: ``tool_use.id`` and ``tool_result.tool_use_id`` match ``^[a-zA-Z0-9_-]+$``."""
    for i, message in enumerate(body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        for j, block in enumerate(content):
            for kind, key in (("tool_use", "id"), ("tool_result", "tool_use_id")):
                if block.get("type") == kind and not _ANTHROPIC_ID.match(block[key]):
                    where = f"messages.{i}.content.{j}.{kind}.{key}"
                    return f"{where}: String should match pattern '^[a-zA-Z0-9_-]+$'"
    return None
