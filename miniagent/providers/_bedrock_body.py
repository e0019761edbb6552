"""The body of a Bedrock ``ConverseStream`` request: the record as Converse ``messages``.

Wire format: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
(``messages`` of ``user`` and ``assistant`` turns made of content blocks: ``text``, ``toolUse``,
``toolResult``, ``reasoningContent``; ``system``; ``inferenceConfig``; ``toolConfig``), and the
shapes of botocore's ``bedrock-runtime`` service model (a ``toolUseId`` matches
``[a-zA-Z0-9_.:-]+`` with at most 64 characters).

Reasoning a Bedrock model sent (``reasoningContent``: a text with its ``signature``, or
``redactedContent``) is kept as ``Reasoning(text, signature, redacted_data, origin=
bedrock_origin(base_url), data={"model": ...})`` and goes back, unchanged and first in its turn,
only to the same origin and model (an Anthropic model on Bedrock checks the signature, as the
Anthropic API does, but the two do not take each other's); any other reasoning is left out.

Invariants: the first message is a ``user`` one and roles alternate (consecutive turns of one role
are merged); no text block is blank; ``toolConfig`` is there whenever the messages hold
``toolUse`` or ``toolResult`` blocks (the API refuses them otherwise); one record gives one body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, Reasoning
from ..model import ToolSpec
from ..output import with_output_instruction
from ._history import WireIds, pair_tool_messages
from ._schemas import object_root

__all__ = ["EMPTY_RESULT", "TRIMMED_PLACEHOLDER", "bedrock_origin", "build_converse_body", "fits_tool_use_id"]

TRIMMED_PLACEHOLDER = "(earlier conversation omitted)"
"""Text of the user turn put first when the history does not start with a user message."""

EMPTY_RESULT = "(no output)"
"""Text sent for a tool result without text: the API refuses a blank text block."""

_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")


def bedrock_origin(base_url: str) -> str:
    """The ``Reasoning.origin`` of what the Bedrock runtime at ``base_url`` sent."""
    return f"bedrock {base_url}"


def fits_tool_use_id(call_id: str) -> bool:
    """Whether the API takes ``call_id`` as a ``toolUseId`` as it is."""
    return _TOOL_USE_ID.fullmatch(call_id) is not None


def build_converse_body(
    model: str,
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec],
    *,
    origin: str,
    max_tokens: int | None = None,
    temperature: float | None = None,
    output_schema: dict[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
    wire_ids: WireIds | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``ConverseStream`` request (the model goes in the URL).

    Shape: ``{"messages"[, "system": [{"text"}]][, "inferenceConfig": {"maxTokens",
    "temperature"}][, "toolConfig": {"tools": [{"toolSpec": {"name"[, "description"],
    "inputSchema": {"json"}}}]}]}``; messages as ``build_converse_messages`` makes them for
    ``model`` at ``origin``; each schema an object root (``_schemas.object_root``: what the
    Anthropic models on Bedrock require). Converse has no structured output of its own here: an
    ``output_schema`` goes into the system prompt (the loop checks the answer either way). A
    tool the history used but ``tools`` lacks is declared with an open object schema, since
    the API refuses tool blocks without a ``toolConfig``. ``extra_body`` is merged last (e.g.
    ``additionalModelRequestFields``).
    """
    ids = wire_ids if wire_ids is not None else WireIds(fits_tool_use_id)
    wire = build_converse_messages(model, messages, origin, ids)
    body: dict[str, Any] = {"messages": wire}
    instruction = with_output_instruction(system, output_schema)
    if instruction.strip():
        body["system"] = [{"text": instruction}]
    config: dict[str, Any] = {}
    if max_tokens is not None:
        config["maxTokens"] = max_tokens
    if temperature is not None:
        config["temperature"] = temperature
    if config:
        body["inferenceConfig"] = config
    specs = [_tool_spec(spec.name, spec.description, object_root(spec.input_schema)) for spec in tools]
    declared = {spec["toolSpec"]["name"] for spec in specs}
    for name in _used_tools(wire):
        if name not in declared:
            specs.append(_tool_spec(name, "", {"type": "object"}))
            declared.add(name)
    if specs:
        body["toolConfig"] = {"tools": specs}
    if extra_body:
        body.update(extra_body)
    return body


def _tool_spec(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name}
    if description.strip():
        spec["description"] = description  # the API refuses an empty one
    spec["inputSchema"] = {"json": schema}
    return {"toolSpec": spec}


def _used_tools(wire: list[dict[str, Any]]) -> list[str]:
    """The names of the tools the ``toolUse`` blocks of ``wire`` call, in order, once each."""
    names = [block["toolUse"]["name"] for turn in wire for block in turn["content"] if "toolUse" in block]
    return list(dict.fromkeys(names))


def build_converse_messages(
    model: str, messages: Iterable[Message], origin: str, wire_ids: WireIds | None = None
) -> list[dict[str, Any]]:
    """Map the history to Converse ``messages`` the API accepts.

    - calls and results are paired first (``pair_tool_messages``), and an id the API would
      refuse is sent as its ``_history.short_id`` (``wire_ids``);
    - a user message becomes a ``text`` block (blank ones are left out);
    - an assistant message becomes its reasoning of ``origin`` and ``model`` first (see the
      module docstring), then its text (when not blank) and ``toolUse`` blocks (``{"toolUseId",
      "name", "input"}``);
    - a tool message becomes a ``toolResult`` block (``{"toolUseId", "content": [{"text"}]}``,
      ``EMPTY_RESULT`` for an empty one; ``"status": "error"`` or ``"success"`` for the
      Anthropic models, the only ones that take the field) in a user turn;
    - consecutive turns of one role are merged, a user turn ``TRIMMED_PLACEHOLDER`` is put first
      when the history does not start with one, and a final assistant turn loses its trailing
      whitespace (the Anthropic models refuse it).
    """
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    status = "anthropic." in model
    ids = wire_ids if wire_ids is not None else WireIds(fits_tool_use_id)
    for message in pair_tool_messages(messages, ids):
        if message.role == "user":
            if message.content.strip():
                add("user", [{"text": message.content}])
        elif message.role == "assistant":
            blocks = [_reasoning_block(r) for r in message.reasoning if _replayable(r, origin, model)]
            if message.content.strip():
                blocks.append({"text": message.content})
            blocks.extend(
                {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.input}} for c in message.tool_calls
            )
            add("assistant", blocks)
        else:
            result: dict[str, Any] = {
                "toolUseId": message.tool_call_id or "",
                "content": [{"text": message.content or EMPTY_RESULT}],
            }
            if status:
                result["status"] = "error" if message.is_error else "success"
            add("user", [{"toolResult": result}])
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"text": TRIMMED_PLACEHOLDER}]})
    _trim_final_assistant(turns)
    return turns


def _trim_final_assistant(turns: list[dict[str, Any]]) -> None:
    last = turns[-1]
    if last["role"] != "assistant":
        return
    for block in last["content"]:
        if "text" in block:
            block["text"] = block["text"].rstrip()
    last["content"] = [b for b in last["content"] if "text" not in b or b["text"]]
    if not last["content"]:
        turns.pop()


def _replayable(block: Reasoning, origin: str, model: str) -> bool:
    """Whether ``block`` came from this origin and model (the only ones that take it back)."""
    return block.origin == origin and block.data is not None and block.data.get("model") == model


def _reasoning_block(block: Reasoning) -> dict[str, Any]:
    """The ``reasoningContent`` block that replays ``block`` verbatim."""
    if block.redacted_data is not None:
        return {"reasoningContent": {"redactedContent": block.redacted_data}}
    text: dict[str, Any] = {"text": block.text}
    if block.signature is not None:
        text["signature"] = block.signature
    return {"reasoningContent": {"reasoningText": text}}
