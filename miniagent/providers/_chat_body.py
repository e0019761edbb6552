"""The body of a chat completions request: what miniagent sends to an OpenAI-compatible server.

Wire format: https://platform.openai.com/docs/api-reference/chat/create. Everything the server
would refuse is made acceptable here, on the wire only (the record stays as it is): tool calls
and results paired and call ids mapped (``_history``), tool schemas in the form OpenAI takes
(``_schemas``), strict mode only when every strict rule holds (``miniagent.output
.strict_compatible``), the reasoning each server wants back (``_chat_reasoning``) and the output
limit under the name the model takes (``_chat_params``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, ToolCall
from ..model import ToolSpec
from ..output import strict_compatible
from ._chat_reasoning import replayed
from ._history import WireIds, pair_tool_messages
from ._schemas import openai_parameters, openai_response_schema

__all__ = ["MAX_CALL_ID", "build_chat_body", "fits_call_id", "response_format"]

MAX_CALL_ID = 40
"""OpenAI's longest tool call id ("Expected a string with maximum length 40"); longer ones are
mapped on the wire (``_history.WireIds``)."""


def fits_call_id(call_id: str) -> bool:
    """Whether OpenAI takes ``call_id`` as a tool call id as it is (1 to ``MAX_CALL_ID`` characters)."""
    return 0 < len(call_id) <= MAX_CALL_ID


def build_chat_body(
    model: str,
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    origin: str | None = None,
    wire_ids: WireIds | None = None,
    limit_name: str = "max_tokens",
) -> dict[str, Any]:
    """The JSON body of a streaming chat completions request.

    Shape: ``{"model", "messages", "stream": true, "stream_options": {"include_usage": true}
    [, "tools"][, "temperature"][, limit_name]}`` (the usage chunk feeds ``UsageEvent``;
    ``limit_name`` is ``"max_tokens"`` or ``"max_completion_tokens"``, see ``_chat_params``)
    with ``messages`` = optional ``{"role": "system"}`` first, then ``user`` messages,
    ``assistant`` messages (``content`` null when only calls, ``tool_calls`` of
    ``{"id", "type": "function", "function": {"name", "arguments": JSON text}}``, plus the
    reasoning the message carried, as its server wants it back: the text as
    ``reasoning_content`` (DeepSeek, llama.cpp) or as ``reasoning`` when it came so, and
    OpenRouter's ``reasoning_details`` and Gemini's per-call ``extra_content`` when the request
    goes to the ``origin`` that sent them; see ``_chat_reasoning``) and ``tool`` messages
    (``tool_call_id``, ``content``). Tool calls and results are paired first
    (``pair_tool_messages``), so a trimmed history is still accepted, and call ids longer than
    OpenAI takes are mapped (``wire_ids``, default ``WireIds(fits_call_id)``). Tool schemas
    are sent as OpenAI takes them (``_schemas.openai_parameters``). With ``output_schema``:
    ``response_format`` (see ``response_format``).
    """
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    ids = wire_ids if wire_ids is not None else WireIds(fits_call_id)
    for message in pair_tool_messages(messages, ids):
        if message.role == "user":
            wire.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            wire.append(_wire_assistant(message, origin))
        else:
            wire.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
    body: dict[str, Any] = {
        "model": model,
        "messages": wire,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    specs = [{"type": "function", "function": _wire_function(spec)} for spec in tools]
    if specs:
        body["tools"] = specs
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body[limit_name] = max_tokens
    if output_schema is not None:
        body["response_format"] = response_format(output_schema)
    if extra_body:
        body.update(extra_body)
    return body


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``response_format`` asking for a JSON answer valid against ``schema`` (OpenAI "Structured
    Outputs"; llama.cpp's server turns it into a grammar): ``{"type": "json_schema",
    "json_schema": {"name": "answer", "schema": ..., "strict": ...}}``, the schema as OpenAI
    takes it (``_schemas.openai_response_schema``), strict only when OpenAI's strict mode accepts
    it (``miniagent.output.strict_compatible``: every rule of "Supported schemas")."""
    wire_schema = openai_response_schema(schema)
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": wire_schema, "strict": strict_compatible(wire_schema)},
    }


def _wire_function(spec: ToolSpec) -> dict[str, Any]:
    """A tool as a chat-completions function, its schema as OpenAI takes it; ``"strict": true``
    when the tool asks for it and OpenAI's strict mode accepts the schema (``strict_compatible``;
    else it goes non-strict, which every schema may: OpenAI "Structured Outputs")."""
    parameters = openai_parameters(spec.input_schema)
    function: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "parameters": parameters,
    }
    if spec.strict and strict_compatible(parameters):
        function["strict"] = True
    return function


def _wire_assistant(message: Message, origin: str | None) -> dict[str, Any]:
    """An assistant message with its calls and the reasoning its server wants back."""
    item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    per_call: list[Any] = []
    if message.reasoning:
        fields, per_call = replayed(message, origin)
        item.update(fields)
    if message.tool_calls:
        calls = [_wire_call(call) for call in message.tool_calls]
        for call, extra in zip(calls, per_call, strict=False):
            if isinstance(extra, dict) and isinstance(extra.get("extra_content"), dict):
                call["extra_content"] = extra["extra_content"]
        item["tool_calls"] = calls
    return item


def _wire_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(call.input, ensure_ascii=False),
        },
    }
