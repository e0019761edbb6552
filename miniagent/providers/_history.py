"""Make a (possibly trimmed, resumed or foreign) history valid for the chat APIs before mapping it.

Both APIs reject a tool result that answers no tool call of the preceding assistant message,
and an assistant tool call that is not answered right after it (OpenAI: "An assistant message
with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'";
Anthropic: "tool_use ids were found without tool_result blocks immediately after"). Anthropic
also rejects two ``tool_use`` blocks with one id ("tool_use ids must be unique") and an error
result without text ("content cannot be empty if is_error is true"). The record normally
satisfies all of this (the loop makes call ids unique as they arrive), but trimming, a resume,
a session written before that rule, or a foreign history may not.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..messages import MISSING_RESULT, Message, ToolCall, unique_call_id

__all__ = ["EMPTY_ERROR_RESULT", "pair_tool_messages"]

EMPTY_ERROR_RESULT = "the tool reported an error without a message"
"""Text sent for an error result whose content is empty (the record keeps it empty)."""


def pair_tool_messages(messages: Iterable[Message]) -> list[Message]:
    """Return a copy of ``messages`` where every tool call and tool result are paired.

    Rules:
        - a call whose id repeats an earlier call's id gets ``unique_call_id``'s suffix, and the
          results that answer that id are given to its calls in order (first result, first call);
        - a tool message is kept only if it answers a not yet answered call of the nearest
          preceding assistant message (others are dangling: dropped);
        - calls left unanswered when the next user or assistant message (or the end) comes get an
          error tool message ``MISSING_RESULT``, placed after the kept results;
        - an error result with empty content gets the text ``EMPTY_ERROR_RESULT``;
        - an assistant message with neither text nor calls is dropped.

    Args:
        messages: the history, oldest first (iterated once, not kept).

    Returns:
        A new list; unchanged messages are the same immutable objects.
    """
    out: list[Message] = []
    taken: set[str] = set()  # every call id sent so far
    open_calls: dict[str, list[str]] = {}  # recorded id -> unanswered wire ids of the last assistant message

    def close_calls() -> None:
        for wire_ids in open_calls.values():
            for wire_id in wire_ids:
                out.append(Message("tool", MISSING_RESULT, tool_call_id=wire_id, is_error=True))
        open_calls.clear()

    for message in messages:
        if message.role == "tool":
            wire_ids = open_calls.get(message.tool_call_id or "")
            if wire_ids is None or message.tool_call_id is None:
                continue
            wire_id = wire_ids.pop(0)
            if not wire_ids:
                del open_calls[message.tool_call_id]
            out.append(_answer(message, wire_id))
            continue
        close_calls()
        if message.role == "assistant":
            if not message.content and not message.tool_calls:
                continue
            message = _open(message, taken, open_calls)
        out.append(message)
    close_calls()
    return out


def _open(message: Message, taken: set[str], open_calls: dict[str, list[str]]) -> Message:
    """Register the calls of an assistant message as open; rename repeated ids."""
    renamed: list[ToolCall] = []
    for call in message.tool_calls:
        wire_id = unique_call_id(call.id, taken)
        open_calls.setdefault(call.id, []).append(wire_id)
        if wire_id != call.id:
            call = ToolCall(wire_id, call.name, call.input, call.input_error)
        renamed.append(call)
    if all(a is b for a, b in zip(renamed, message.tool_calls, strict=True)):
        return message
    return Message("assistant", message.content, tuple(renamed), reasoning=message.reasoning)


def _answer(message: Message, wire_id: str) -> Message:
    """The tool message as sent: answering ``wire_id``, an empty error result given a text."""
    content = message.content or (EMPTY_ERROR_RESULT if message.is_error else "")
    if wire_id == message.tool_call_id and content == message.content:
        return message
    return Message("tool", content, tool_call_id=wire_id, is_error=message.is_error)
