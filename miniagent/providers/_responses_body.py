"""The body of an OpenAI Responses API request: the whole record as input items, stateless.

Wire format: https://platform.openai.com/docs/api-reference/responses/create. miniagent keeps no
state on the server (``store: false``), so every request carries the whole (possibly trimmed)
record as ``input`` items: user messages, assistant messages, ``function_call`` and
``function_call_output`` items, and the reasoning items this server sent, with their ``id`` and
``encrypted_content`` exactly as they came (``include: ["reasoning.encrypted_content"]`` asks for
them).

Invariants (each is a 400 of the API when broken):

- every ``function_call`` is answered by a ``function_call_output`` with its ``call_id`` and every
  output answers a call ("No tool output found for function call ..."): pairing and call ids as in
  ``_history`` (``pair_tool_messages``, ``WireIds``);
- a reasoning item is sent only to the server it came from (``Reasoning.origin``), only with its
  ``encrypted_content`` (without it, a stateless request names an item the server never stored),
  and always immediately before the item that followed it in the turn ("... of type 'reasoning'
  was provided without its required following item"): each block records what followed it
  (``"before"``: ``"text"`` or the position of a call in the turn). Two reasoning items in a row
  are refused too, so at most one goes before each item (the last one that preceded it); one
  whose follower is not known or no longer in the record is not sent;
- messages and calls go without the server's item ids (``msg_...``, ``fc_...``): a stateless
  request may not name stored items, and an item id would tie the item to its reasoning item;
- tool schemas in the form OpenAI takes (``_schemas.openai_parameters``), with ``strict`` always
  said: the Responses API reads a function without ``strict`` as strict, so a schema outside
  strict mode's rules (``miniagent.output.strict_compatible``) is sent ``"strict": false``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, Reasoning, ToolCall
from ..model import ToolSpec
from ..output import strict_compatible
from ._history import WireIds, pair_tool_messages
from ._schemas import openai_parameters, openai_response_schema

__all__ = [
    "ENCRYPTED_REASONING",
    "REASONING_ITEM_FIELDS",
    "build_responses_body",
    "responses_origin",
    "text_format",
]

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The ``include`` value that makes a stateless response carry its reasoning items' content."""

REASONING_ITEM_FIELDS = ("type", "id", "summary", "encrypted_content", "content")
"""The fields of a reasoning item sent back (the input item's fields; ``status`` and anything
the server adds to its output are left out)."""


def responses_origin(base_url: str) -> str:
    """The ``Reasoning.origin`` of what a Responses API server at ``base_url`` sent."""
    return f"responses {base_url}"


def build_responses_body(
    model: str,
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec],
    *,
    origin: str,
    wire_ids: WireIds,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    reasoning: Mapping[str, str] | None = None,
    encrypted_reasoning: bool = True,
    output_schema: dict[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming, stateless Responses request.

    Shape: ``{"model", "input": [...], "stream": true, "store": false[, "instructions"]
    [, "include": ["reasoning.encrypted_content"]][, "tools"][, "temperature"]
    [, "max_output_tokens"][, "reasoning": {"effort"[, "summary"]}][, "text": {"format"}]}``,
    then ``extra_body`` on top. ``input`` items, per message of the paired record
    (``pair_tool_messages`` with ``wire_ids``): ``{"role": "user", "content"}``; for an
    assistant message its reasoning items from ``origin`` (see the module docstring), ``{"role":
    "assistant", "content"}`` when it has text, one ``{"type": "function_call", "call_id",
    "name", "arguments": JSON text}`` per call; ``{"type": "function_call_output", "call_id",
    "output"}`` per tool message.

    Args:
        origin: this client's ``responses_origin``; reasoning blocks of any other origin are not sent.
        wire_ids: the call-id rule of this request (ids it changes are mapped back on the way in).
        reasoning: ``{"effort": ...}`` and/or ``{"summary": ...}``, sent as ``reasoning``.
        encrypted_reasoning: ask for the reasoning items' ``encrypted_content``.
        output_schema: the answer's JSON Schema, asked for as ``text.format`` (``text_format``).
    """
    body: dict[str, Any] = {"model": model}
    if system:
        body["instructions"] = system
    items: list[dict[str, Any]] = []
    for message in pair_tool_messages(messages, wire_ids):
        if message.role == "user":
            items.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            items += _assistant_items(message, origin)
        else:
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}
            )
    body["input"] = items
    body["stream"] = True
    body["store"] = False
    if encrypted_reasoning:
        body["include"] = [ENCRYPTED_REASONING]
    specs = [_wire_function(spec) for spec in tools]
    if specs:
        body["tools"] = specs
    if temperature is not None:
        body["temperature"] = temperature
    if max_output_tokens is not None:
        body["max_output_tokens"] = max_output_tokens
    if reasoning:
        body["reasoning"] = dict(reasoning)
    if output_schema is not None:
        body["text"] = {"format": text_format(output_schema)}
    if extra_body:
        body.update(extra_body)
    return body


def text_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``text.format`` asking for a JSON answer valid against ``schema``: ``{"type":
    "json_schema", "name": "answer", "schema": ..., "strict": ...}``, the schema as OpenAI takes
    it (``_schemas.openai_response_schema``), strict only when strict mode accepts it
    (``miniagent.output.strict_compatible``)."""
    wire_schema = openai_response_schema(schema)
    return {
        "type": "json_schema",
        "name": "answer",
        "schema": wire_schema,
        "strict": strict_compatible(wire_schema),
    }


def _wire_function(spec: ToolSpec) -> dict[str, Any]:
    """A tool as a Responses function tool; ``strict`` always given (see the module docstring)."""
    parameters = openai_parameters(spec.input_schema)
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": parameters,
        "strict": spec.strict and strict_compatible(parameters),
    }


def _assistant_items(message: Message, origin: str) -> list[dict[str, Any]]:
    """The items of one assistant turn: its text, its calls, each reasoning item right before its
    follower (at most one before each: the API refuses two reasoning items in a row)."""
    followers: list[dict[str, Any]] = []
    if message.content:
        followers.append({"role": "assistant", "content": message.content})
    followers += [_wire_call(call) for call in message.tool_calls]
    ahead: dict[int, dict[str, Any]] = {}  # follower's position -> the reasoning item before it
    for block in message.reasoning:
        item = replayed_item(block, origin)
        position = _follower(block, bool(message.content), len(message.tool_calls))
        if item is not None and position is not None:
            ahead[position] = item  # a later block before the same follower wins
    items: list[dict[str, Any]] = []
    for position, follower in enumerate(followers):
        if position in ahead:
            items.append(ahead[position])
        items.append(follower)
    return items


def replayed_item(block: Reasoning, origin: str) -> dict[str, Any] | None:
    """The reasoning item ``block`` holds, as it goes back to ``origin``; ``None`` for a block of
    another origin, or one without a reasoning item and its ``encrypted_content``."""
    data = block.data
    if data is None or block.origin != origin:
        return None
    item = data.get("item")
    if not isinstance(item, dict) or not isinstance(item.get("encrypted_content"), str):
        return None
    return {key: item[key] for key in REASONING_ITEM_FIELDS if key in item}


def _follower(block: Reasoning, has_text: bool, calls: int) -> int | None:
    """Where the item that followed ``block`` stands among the turn's text and calls, or ``None``
    when it is not known or no longer there."""
    before = block.data.get("before") if block.data is not None else None
    if before == "text":
        return 0 if has_text else None
    if type(before) is int and 0 <= before < calls:
        return before + (1 if has_text else 0)
    return None


def _wire_call(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.input, ensure_ascii=False),
    }
