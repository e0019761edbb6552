"""Reasoning that OpenAI-compatible servers want back, as they sent it (read from the stream,
written into the next request).

What each server sends and wants back on the assistant message that carried it:

- the reasoning text, as ``reasoning_content`` (DeepSeek, llama.cpp, older vLLM) or ``reasoning``
  (OpenRouter, newer vLLM). vLLM reads only the name its release uses and silently ignores the
  other, so the text goes back under the name it came in;
- OpenRouter's ``reasoning_details`` (a list of ``reasoning.text`` / ``reasoning.summary`` /
  ``reasoning.encrypted`` entries, streamed in pieces merged by ``type`` and ``index``): Gemini 3
  through OpenRouter refuses a tool turn without them ("Function call is missing a
  thought_signature");
- Gemini's OpenAI-compatible endpoint: ``extra_content`` (``{"google": {"thought_signature":
  ...}}``) on each tool call, sent back on that call or it refuses the request the same way.

A turn's plain text (``reasoning_content``) is a ``Reasoning(text)``, as before. Anything else is
kept opaque in ``Reasoning.data`` with ``Reasoning.origin`` naming the server (``chat_origin``):
``{"field": "reasoning"}`` on the text block; ``{"reasoning_details": [...], "tool_calls":
[{"extra_content": ...} or {}, ...]}`` (one entry per call of the turn, in order) on one block
with no text that closes the turn. Only a request to that same origin gets the opaque fields back;
another server gets the text as ``reasoning_content`` (what every one of them reads), nothing else.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message, Reasoning

__all__ = ["TEXT_FIELDS", "add_details", "chat_origin", "closing_block", "replayed", "text_block"]

TEXT_FIELDS = ("reasoning_content", "reasoning")
"""The names a reasoning text comes in; the first is what a server that did not send it gets."""

_MERGED_TEXTS = ("text", "summary", "data", "signature")
_STREAMED_TYPES = ("reasoning.text", "reasoning.summary")


def chat_origin(base_url: str) -> str:
    """The ``Reasoning.origin`` of what a chat-completions server at ``base_url`` sent."""
    return f"chat-completions {base_url}"


def text_block(text: str, field: str, origin: str | None) -> Reasoning:
    """The reasoning text of a turn, as a block: plain when it came as ``reasoning_content``, else
    with the name it came in (``{"field": ...}``) for ``origin``."""
    if field == TEXT_FIELDS[0]:
        return Reasoning(text)
    return Reasoning(text, origin=origin, data={"field": field})


def add_details(details: list[dict[str, Any]], pieces: Any) -> None:
    """Merge one delta's ``reasoning_details`` into ``details``: a ``reasoning.text`` or
    ``reasoning.summary`` piece with the ``type``, ``index`` (and ``id``, when it has one) of the
    last entry continues it (its ``text``, ``summary``, ``data`` and ``signature`` appended, other
    fields kept from the first piece that had them); any other piece (a ``reasoning.encrypted``
    one always) starts an entry."""
    if not isinstance(pieces, list):
        return
    for piece in pieces:
        if not isinstance(piece, dict):
            continue
        last = details[-1] if details else None
        if last is None or not _continues(last, piece):
            details.append(dict(piece))
            continue
        for key, value in piece.items():
            if key in _MERGED_TEXTS and isinstance(value, str) and isinstance(last.get(key), str):
                last[key] += value
            elif last.get(key) is None:
                last[key] = value


def _continues(last: dict[str, Any], piece: dict[str, Any]) -> bool:
    """Whether ``piece`` is the next part of the entry ``last``."""
    if piece.get("type") not in _STREAMED_TYPES or piece.get("type") != last.get("type"):
        return False
    return piece.get("index") == last.get("index") and piece.get("id") in (None, last.get("id"))


def closing_block(
    details: list[dict[str, Any]], extras: dict[int, dict[str, Any]], origin: str | None
) -> Reasoning | None:
    """The block that keeps a turn's ``reasoning_details`` and its calls' ``extra_content``
    (``extras``: position of the call in the turn -> its ``extra_content``), or ``None`` when the
    turn had neither."""
    if not details and not extras:
        return None
    data: dict[str, Any] = {}
    if details:
        data["reasoning_details"] = details
    if extras:
        data["tool_calls"] = [
            {"extra_content": extras[i]} if i in extras else {} for i in range(max(extras) + 1)
        ]
    return Reasoning("", origin=origin, data=data)


def replayed(message: Message, origin: str | None) -> tuple[dict[str, Any], list[Any]]:
    """What an assistant message carries back to the server at ``origin``: the fields of the
    message (``reasoning_content`` and/or ``reasoning``, ``reasoning_details``) and, per call in
    order, the fields of that call (``{"extra_content": ...}`` or ``{}``).

    Blocks of another origin give their text as ``reasoning_content`` (a text block) or nothing;
    Anthropic ``redacted_thinking`` blocks give nothing.
    """
    texts: dict[str, list[str]] = {}
    details: list[Any] = []
    calls: list[Any] = []
    for block in message.reasoning:
        if block.redacted_data is not None:
            continue
        data = block.data
        if data is None:
            texts.setdefault(TEXT_FIELDS[0], []).append(block.text)
            continue
        same = origin is not None and block.origin == origin
        field = data.get("field")
        if isinstance(field, str):
            name = field if same and field in TEXT_FIELDS else TEXT_FIELDS[0]
            texts.setdefault(name, []).append(block.text)
        if not same:
            continue
        if isinstance(data.get("reasoning_details"), list):
            details.extend(data["reasoning_details"])
        if isinstance(data.get("tool_calls"), list):
            calls = data["tool_calls"]
    fields: dict[str, Any] = {name: "".join(parts) for name, parts in texts.items()}
    if details:
        fields["reasoning_details"] = details
    return fields, calls
