"""Make a (possibly trimmed, resumed or foreign) history valid for the chat APIs before mapping it.

Both APIs reject a tool result that answers no tool call of the preceding assistant message,
and an assistant tool call that is not answered right after it (OpenAI: "An assistant message
with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'";
Anthropic: "tool_use ids were found without tool_result blocks immediately after"). Anthropic
also rejects two ``tool_use`` blocks with one id ("tool_use ids must be unique") and an error
result without text ("content cannot be empty if is_error is true"). The record normally
satisfies all of this (the loop makes call ids unique as they arrive), but trimming, a resume,
a session written before that rule, or a foreign history may not.

Call ids also cross providers: a session begun on vLLM (46-character ids) goes on with OpenAI (at
most 40 characters: "string too long. Expected a string with maximum length 40") or Anthropic
(``^[a-zA-Z0-9_-]+$``). ``WireIds`` maps each id the API would refuse to ``short_id(id)``, on the
wire only: the record keeps its ids, the same record id always maps to the same wire id (in every
request, in every process), and a wire id that comes back from the model is mapped back
(``WireIds.back``) before the loop sees it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

from ..messages import MISSING_RESULT, Message, ToolCall, unique_call_id
from ..model import ModelEvent, ToolCallEvent

__all__ = ["EMPTY_ERROR_RESULT", "WireIds", "pair_tool_messages", "short_id"]

EMPTY_ERROR_RESULT = "the tool reported an error without a message"
"""Text sent for an error result whose content is empty (the record keeps it empty)."""


def short_id(call_id: str) -> str:
    """``call_`` and 24 hex digits of the SHA-256 of ``call_id`` (29 characters of
    ``[a-z0-9_]``): a deterministic id that every API accepts."""
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"call_{digest[:24]}"


class WireIds:
    """The call ids of one request as its API accepts them.

    Args:
        fits: whether the API accepts an id as it is (e.g. at most 40 characters).

    Attributes:
        back: wire id -> record id, for every id this request changed.
    """

    def __init__(self, fits: Callable[[str], bool]) -> None:
        self.fits = fits
        self.back: dict[str, str] = {}

    def __call__(self, call_id: str) -> str:
        """``call_id`` itself when it fits, else ``short_id(call_id)`` (remembered in ``back``)."""
        if self.fits(call_id):
            return call_id
        wire_id = short_id(call_id)
        self.back[wire_id] = call_id
        return wire_id

    def mapped_back(self, events: Iterator[ModelEvent]) -> Iterator[ModelEvent]:
        """``events`` with each tool call whose id is one of this request's wire ids given its
        record id back (a model that repeats an id it was shown); ``events`` itself when this
        request changed no id."""
        if not self.back:
            return events
        return self._map_back(events)

    def _map_back(self, events: Iterator[ModelEvent]) -> Iterator[ModelEvent]:
        back = self.back
        try:
            for event in events:
                if isinstance(event, ToolCallEvent) and event.call.id in back:
                    call = event.call
                    event = ToolCallEvent(ToolCall(back[call.id], call.name, call.input, call.input_error))
                yield event
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # an abandoned stream releases its connection at once


def pair_tool_messages(messages: Iterable[Message], wire_ids: WireIds | None = None) -> list[Message]:
    """Return a copy of ``messages`` where every tool call and tool result are paired.

    Rules:
        - a call whose id repeats an earlier call's id gets ``unique_call_id``'s suffix, and the
          results that answer that id are given to its calls in order (first result, first call);
        - a tool message is kept only if it answers a not yet answered call of the nearest
          preceding assistant message (others are dangling: dropped);
        - calls left unanswered when the next user or assistant message (or the end) comes get an
          error tool message ``MISSING_RESULT``, placed after the kept results;
        - an error result with empty content gets the text ``EMPTY_ERROR_RESULT``;
        - an assistant message with neither text nor calls is dropped, and so is a note about a
          call (a tool message with ``state``, ``miniagent.pending``);
        - with ``wire_ids``, every call id (after the renaming above) is sent as ``wire_ids``
          maps it, and so is the result that answers it.

    Args:
        messages: the history, oldest first (iterated once, not kept).
        wire_ids: the API's id rule for this request, or ``None`` (ids as recorded).

    Returns:
        A new list; unchanged messages are the same immutable objects.
    """
    out: list[Message] = []
    taken: set[str] = set()  # every call id sent so far
    open_calls: dict[str, list[str]] = {}  # recorded id -> unanswered wire ids of the last assistant message

    def close_calls() -> None:
        for unanswered in open_calls.values():
            for wire_id in unanswered:
                out.append(Message("tool", MISSING_RESULT, tool_call_id=wire_id, is_error=True))
        open_calls.clear()

    for message in messages:
        if message.state is not None:
            continue  # a note about a call (miniagent.pending): part of the record, never sent
        if message.role == "tool":
            unanswered = open_calls.get(message.tool_call_id or "")
            if unanswered is None or message.tool_call_id is None:
                continue
            wire_id = unanswered.pop(0)
            if not unanswered:
                del open_calls[message.tool_call_id]
            out.append(_answer(message, wire_id))
            continue
        close_calls()
        if message.role == "assistant":
            if not message.content and not message.tool_calls:
                continue
            message = _open(message, taken, open_calls, wire_ids)
        out.append(message)
    close_calls()
    return out


def _open(
    message: Message, taken: set[str], open_calls: dict[str, list[str]], wire_ids: WireIds | None
) -> Message:
    """Register the calls of an assistant message as open; rename repeated ids (and map them)."""
    renamed: list[ToolCall] = []
    for call in message.tool_calls:
        wire_id = unique_call_id(call.id, taken)
        if wire_ids is not None and not wire_ids.fits(wire_id):
            wire_id = unique_call_id(wire_ids(wire_id), taken)  # unique among the sent ids too
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
