"""Make a (possibly trimmed or resumed) history valid for the chat APIs before mapping it.

Both APIs reject a tool result that answers no tool call of the preceding assistant message,
and an assistant tool call that is not answered right after it (OpenAI: "An assistant message
with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'";
Anthropic: "tool_use ids were found without tool_result blocks immediately after"). The record
normally satisfies this, but trimming, a resume or a foreign history may not.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..messages import MISSING_RESULT, Message

__all__ = ["pair_tool_messages"]


def pair_tool_messages(messages: Iterable[Message]) -> list[Message]:
    """Return a copy of ``messages`` where every tool call and tool result are paired.

    Rules:
        - a tool message is kept only if it answers a not yet answered call of the nearest
          preceding assistant message (others are dangling: dropped);
        - calls left unanswered when the next user or assistant message (or the end) comes get an
          error tool message ``MISSING_RESULT``, placed after the kept results;
        - an assistant message with neither text nor calls is dropped.

    Args:
        messages: the history, oldest first (iterated once, not kept).

    Returns:
        A new list; the messages themselves are the same immutable objects.
    """
    out: list[Message] = []
    open_calls: dict[str, None] = {}  # ids of the last assistant message, not yet answered

    def close_calls() -> None:
        for call_id in open_calls:
            out.append(Message("tool", MISSING_RESULT, tool_call_id=call_id, is_error=True))
        open_calls.clear()

    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in open_calls:
                del open_calls[message.tool_call_id]
                out.append(message)
            continue
        close_calls()
        if message.role == "assistant":
            if not message.content and not message.tool_calls:
                continue
            for call in message.tool_calls:
                open_calls[call.id] = None
        out.append(message)
    close_calls()
    return out
