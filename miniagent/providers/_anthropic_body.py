"""The body of a Messages API request: what miniagent sends to Anthropic.

Wire format: https://docs.anthropic.com/en/api/messages. Everything the API would refuse is made
acceptable here, on the wire only (the record stays as it is): a user turn first, tool calls and
results paired and call ids mapped (``_history``), thinking blocks replayed verbatim only when
they are Anthropic's own, tool schemas in the form the API takes (``_schemas``), no blank system
prompt, and ``cache_control`` breakpoints on the stable prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, Reasoning
from ..model import ToolSpec
from ._history import WireIds, pair_tool_messages
from ._schemas import anthropic_input_schema

__all__ = ["TRIMMED_PLACEHOLDER", "build_messages", "build_messages_body", "fits_call_id"]

TRIMMED_PLACEHOLDER = "(earlier conversation omitted)"
"""Text of the user message put first when the history does not start with a user message
(after trimming or a resume): the Messages API requires the first message to be a user turn."""

_CALL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_CACHED: dict[str, Any] = {"cache_control": {"type": "ephemeral"}}


def build_messages_body(
    model: str,
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec],
    *,
    max_tokens: int = 4096,
    temperature: float | None = None,
    extra_body: Mapping[str, Any] | None = None,
    prompt_cache: bool = True,
    wire_ids: WireIds | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming Messages API request.

    Shape: ``{"model", "max_tokens", "messages", "stream": true[, "system"][, "tools"]}``, tools
    as ``{"name", "description", "input_schema"}``, the schema as the API takes it
    (``_schemas.anthropic_input_schema``: an object root without ``anyOf``/``oneOf``/``allOf``).
    The messages are made valid for the API (see ``build_messages``; ``wire_ids``: the id rule
    of this request, default ``WireIds(fits_call_id)``); a system prompt that is empty or only
    whitespace is not sent (the API refuses it: "system: text content blocks must be non-empty").

    With ``prompt_cache`` (the default), ``cache_control: {"type": "ephemeral"}`` breakpoints
    mark the stable prefix (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
    the last tool, the system prompt (then sent as one ``text`` block) and the last block of
    the newest user message (a user text or the tool results), so a long run reads its history
    from the cache instead of paying for it again each turn. Three breakpoints of the four
    allowed. Everything before a breakpoint is built the same way every turn (tools in the
    given order, keys in a fixed order, no per-request values), so the prefix is byte-stable.
    """
    wire = build_messages(messages, wire_ids)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": wire,
        "stream": True,
    }
    if system.strip():
        body["system"] = [{"type": "text", "text": system, **_CACHED}] if prompt_cache else system
    specs = [
        {
            "name": spec.name,
            "description": spec.description,
            "input_schema": anthropic_input_schema(spec.input_schema),
        }
        for spec in tools
    ]
    if specs:
        if prompt_cache:
            specs[-1].update(_CACHED)
        body["tools"] = specs
    if prompt_cache:
        newest_user = next((turn for turn in reversed(wire) if turn["role"] == "user"), None)
        if newest_user is not None:
            newest_user["content"][-1] = {**newest_user["content"][-1], **_CACHED}
    if temperature is not None:
        body["temperature"] = temperature
    if extra_body:
        body.update(extra_body)
    return body


def build_messages(messages: Iterable[Message], wire_ids: WireIds | None = None) -> list[dict[str, Any]]:
    """Map the history to Messages API ``messages`` that the API accepts.

    - tool calls and results are paired first (``pair_tool_messages``: dangling results
      dropped, unanswered calls answered with an error result), and a call id the API would
      refuse (``fits_call_id``) is sent as its ``_history.short_id`` (``wire_ids``);
    - assistant reasoning blocks come first, in their order and unchanged: ``thinking`` (text and
      ``signature``) or ``redacted_thinking`` (``data``); reasoning without a signature, or with
      another provider's fields (``Reasoning.data``), cannot be verified by the API and is left
      out;
    - assistant text and calls become ``text`` and ``tool_use`` blocks; empty text makes no block;
    - tool results become ``tool_result`` blocks (``is_error`` when set) in a user message; the
      results of one assistant message share one user message and come before any user text
      that follows (consecutive same-role messages are merged);
    - when the first message is not a user message, a user message ``TRIMMED_PLACEHOLDER``
      is put first; an empty history becomes that single user message;
    - a final assistant message loses trailing whitespace (the API rejects it in a prefill).

    Returns:
        A list of ``{"role": "user" | "assistant", "content": [block, ...]}``.
    """
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    ids = wire_ids if wire_ids is not None else WireIds(fits_call_id)
    for message in pair_tool_messages(messages, ids):
        if message.role == "user":
            if message.content.strip():
                add("user", [{"type": "text", "text": message.content}])
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = [_thinking_block(r) for r in message.reasoning if _replayable(r)]
            if message.content.strip():
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in message.tool_calls
            )
            add("assistant", blocks)
        else:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
            }
            if message.content:
                result["content"] = message.content
            if message.is_error:
                result["is_error"] = True
            add("user", [result])
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": TRIMMED_PLACEHOLDER}]})
    last = turns[-1]
    if last["role"] == "assistant":
        for block in last["content"]:
            if block["type"] == "text":
                block["text"] = block["text"].rstrip()
        last["content"] = [b for b in last["content"] if b["type"] != "text" or b["text"]]
        if not last["content"]:
            turns.pop()
    return turns


def _replayable(block: Reasoning) -> bool:
    """Whether the API can take ``block`` back: it carries a signature or redacted data, and no
    other provider's fields (``Reasoning.data``: sent back only to the provider that made it)."""
    return (block.signature is not None or block.redacted_data is not None) and block.data is None


def _thinking_block(block: Reasoning) -> dict[str, Any]:
    """The content block that replays ``block`` verbatim."""
    if block.redacted_data is not None:
        return {"type": "redacted_thinking", "data": block.redacted_data}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def fits_call_id(call_id: str) -> bool:
    """Whether the API takes ``call_id`` as a ``tool_use`` id as it is (``^[a-zA-Z0-9_-]+$``)."""
    return _CALL_ID.fullmatch(call_id) is not None
