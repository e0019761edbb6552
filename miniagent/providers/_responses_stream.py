"""Map an OpenAI Responses API event stream to model events.

Wire format: https://platform.openai.com/docs/api-reference/responses-streaming (every event's
``data`` is a JSON object whose ``type`` names it; the stream ends with ``response.completed``,
``response.incomplete`` or ``response.failed``, no ``[DONE]``).

Invariants:

- Output items arrive one after another (``output_index``): a message's text deltas become
  ``TextEvent``s at once; a function call becomes one ``ToolCallEvent`` when its item is done
  (arguments from the done item, else ``response.function_call_arguments.done``, else the joined
  deltas); a reasoning item becomes one ``ReasoningEvent`` when the next message or call starts
  (or at the end), so that its block knows what followed it (``"before"``, which
  ``_responses_body`` needs to send it back in place).
- A reasoning block keeps the done item whole in ``Reasoning.data["item"]`` (its ``id`` and
  ``encrypted_content`` exactly as they came; the copy in ``output_item.added`` may be incomplete
  and is never kept); its text is the summary (parts joined by a blank line), else the reasoning
  text.
- An item that came only whole (``output_item.done`` without deltas, as some compatible servers
  send) gives the same events as one that was streamed.
- The turn ends as the terminal event says: ``completed`` (natural, unless the answer was a
  refusal: ``"refusal"``), ``incomplete`` with ``incomplete_details.reason`` (``_endings``);
  ``response.failed`` and ``error`` events raise ``ProviderError``; a stream without a terminal
  event was cut (``ProviderError``, retryable).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .._text import SurrogateJoiner
from ..errors import IncompleteReason, ProviderError
from ..messages import Reasoning, ToolCall
from ..model import (
    ModelEvent,
    ProviderDoneEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    UsageEvent,
)
from ..net.sse import SSEEvent
from ..usage import Usage
from ._decode import count, load_event_json, named, parse_tool_input
from ._endings import cut_call, turn_ending
from ._errors import in_stream_error

__all__ = ["map_responses_stream", "responses_usage"]

PROVIDER = "OpenAI"
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def map_responses_stream(
    events: Iterable[SSEEvent],
    *,
    secrets: tuple[str, ...] = (),
    price: Callable[[Usage], Usage] | None = None,
    provider: str = PROVIDER,
    origin: str | None = None,
) -> Iterator[ModelEvent]:
    """Map the events of one streamed response to model events.

    Args:
        events: the decoded SSE events of one response.
        secrets: strings to redact from error texts.
        price: sets the cost of the request's ``Usage`` (the client's ``Pricer.priced``).
        provider: the name every error text starts with (``"OpenAI"``, ``"Azure OpenAI"``).
        origin: the ``Reasoning.origin`` of the reasoning items kept
            (``_responses_body.responses_origin`` of the client's URL).

    Returns:
        A generator (see the module docstring): ``TextEvent`` per ``response.output_text.delta``
        and ``response.refusal.delta``; ``ReasoningEvent`` per reasoning item;
        ``ToolCallEvent`` per function call (a call that an incomplete response cut is kept with
        the input error ``_endings.cut_call_problem``); one ``UsageEvent`` (``responses_usage``)
        when the terminal event carried usage; then ``DoneEvent(word, incomplete)``: ``word``
        ``"completed"``, ``"refusal"`` or the incomplete reason (``"max_output_tokens"``,
        ``"content_filter"``), ``incomplete`` as ``_endings.turn_ending`` reads it.

    Raises:
        ProviderError: an ``error`` event or ``response.failed`` (the server's ``code`` as the
            kind; retryable for ``server_error`` and ``rate_limit_exceeded``), data that is not
            JSON, usage counts that are not token counts, a stream without a terminal event
            (retryable).
    """
    stream = _ResponsesStream(provider, origin)
    for event in events:
        data = event.data
        if not data:
            continue
        if data == "[DONE]":  # not sent by OpenAI; some compatible servers end with it
            stream.word = stream.word or "completed"
            break
        payload = load_event_json(event, provider, secrets)
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "response.output_text.delta":  # most events: the fast path
            text = payload.get("delta")
            if isinstance(text, str) and text:
                stream.texted.add(_key(payload.get("item_id"), payload.get("output_index")))
                yield from stream.text(text)
            continue
        if kind == "error" or kind == "response.failed":
            raise _error(payload, provider, secrets)
        handle = _HANDLERS.get(kind if isinstance(kind, str) else "")
        if handle is not None:
            yield from handle(stream, payload)
        if kind in _TERMINAL:
            break
    yield from stream.end(price)


@dataclass
class _Call:
    """A function call item being streamed."""

    ordinal: int
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)
    arguments: str | None = None  # from function_call_arguments.done


@dataclass
class _Thought:
    """A reasoning item being streamed: summary and reasoning text pieces."""

    summary: dict[int, list[str]] = field(default_factory=dict)
    content: list[str] = field(default_factory=list)


class _ResponsesStream:
    """What one response has streamed so far (``map_responses_stream``'s state)."""

    def __init__(self, provider: str, origin: str | None) -> None:
        self.provider = provider
        self.origin = origin
        self.joiner = SurrogateJoiner()
        self.calls: dict[str, _Call] = {}  # open calls by item key
        self.call_count = 0  # calls seen so far (their positions in the turn)
        self.thoughts: dict[str, _Thought] = {}  # open reasoning items by item key
        self.waiting: list[tuple[str, dict[str, Any]]] = []  # done reasoning items, follower unknown
        self.texted: set[str] = set()  # message items whose text came as deltas
        self.refused = False
        self.word: str | None = None  # how the response ended, once it did
        self.usage: Any = None
        self.model: str | None = None  # the terminal response's model and id (for traces)
        self.response_id: str | None = None
        self.stream_tag = uuid.uuid4().hex[:16]

    def text(self, text: str) -> list[ModelEvent]:
        """A ``TextEvent`` for a piece of text (half a surrogate pair waits for its other half)."""
        if self.joiner.held or "\ud800" <= text[-1] <= "\udbff":
            text = self.joiner.feed(text)
        return [TextEvent(text)] if text else []

    def follower(self, before: str | int) -> list[ModelEvent]:
        """A message or call starts: the reasoning item just before it precedes it (``before``);
        earlier waiting ones preceded another reasoning item (the API refuses those back)."""
        events: list[ModelEvent] = []
        for index, (text, item) in enumerate(self.waiting):
            last = index == len(self.waiting) - 1
            events.append(self._block(text, item, before if last else None))
        self.waiting = []
        return events

    def _block(self, text: str, item: dict[str, Any], before: str | int | None) -> ReasoningEvent:
        return ReasoningEvent(Reasoning(text, origin=self.origin, data={"item": item, "before": before}))

    def open_call(self, key: str, item: dict[str, Any]) -> _Call:
        """A call item starts (or comes whole): its state, with its position in the turn."""
        call = _Call(self.call_count, _string(item.get("call_id")), _string(item.get("name")))
        self.call_count += 1
        self.calls[key] = call
        return call

    def finish_call(self, key: str, item: dict[str, Any] | None) -> ToolCall:
        """The whole call of item ``key`` (``item``: its done item, or ``None`` at the end)."""
        call = self.calls.pop(key)
        arguments = item.get("arguments") if item is not None else None
        if not isinstance(arguments, str):
            arguments = call.arguments if call.arguments is not None else "".join(call.parts)
        call_id = _string(item.get("call_id")) if item is not None else ""
        name = _string(item.get("name")) if item is not None else ""
        tool_input, error = parse_tool_input(arguments)
        return ToolCall(
            call_id or call.call_id or self._made_up_id(call.ordinal), name or call.name, tool_input, error
        )

    def _made_up_id(self, ordinal: int) -> str:
        """An id for a call the server gave none: unique to this stream and call."""
        return f"call_{self.stream_tag}_{ordinal}"

    def end(self, price: Callable[[Usage], Usage] | None) -> Iterator[ModelEvent]:
        """The end of the stream: what is still held, the cut calls, the usage, then ``DoneEvent``."""
        if self.word is None:
            raise ProviderError(
                f"{self.provider} stream ended before the response was complete (no response.completed)",
                retryable=True,
            )
        held = self.joiner.flush()
        if held:
            yield TextEvent(held)
        incomplete = turn_ending(self.word)
        yield from self._open_calls(incomplete)
        yield from self._flush_reasoning()
        if isinstance(self.usage, dict):
            used = responses_usage(self.usage, self.provider)
            yield UsageEvent(price(used) if price is not None else used)
        yield ProviderDoneEvent(self.word, incomplete, self.model, self.response_id)

    def _open_calls(self, incomplete: IncompleteReason | None) -> Iterator[ModelEvent]:
        """Calls whose item never finished, in order: whole ones as they are; when the response
        was incomplete, one whose arguments are empty or not JSON was cut (``cut_call``)."""
        for key in sorted(self.calls, key=lambda k: self.calls[k].ordinal):
            pending = self.calls[key]
            arguments = pending.arguments if pending.arguments is not None else "".join(pending.parts)
            call = self.finish_call(key, None)
            if incomplete is not None and (call.input_error is not None or not arguments.strip()):
                cut = cut_call(call.id, call.name, incomplete, self.word)
                if cut is not None:
                    yield ToolCallEvent(cut)
                continue
            yield ToolCallEvent(call)

    def _flush_reasoning(self) -> Iterator[ModelEvent]:
        """Reasoning items nothing followed, and unfinished ones (text only: their content may
        be incomplete), as blocks that are never sent back."""
        for text, item in self.waiting:
            yield self._block(text, item, None)
        self.waiting = []
        for thought in self.thoughts.values():
            yield ReasoningEvent(Reasoning(_thought_text(thought), origin=self.origin, data={"before": None}))
        self.thoughts = {}


def responses_usage(data: dict[str, Any], provider: str = PROVIDER) -> Usage:
    """A Responses ``usage`` object as a ``Usage`` of one request: ``input_tokens`` (cached ones
    included), ``output_tokens`` (reasoning ones included), the cached part from
    ``input_tokens_details.cached_tokens``, cache writes from ``input_tokens_details
    .cache_write_tokens``, ``reasoning_tokens`` from ``output_tokens_details.reasoning_tokens``.

    Raises:
        ProviderError: a count that is not a token count (``_decode.count``).
    """
    given = count(data.get("input_tokens"), "input_tokens", provider)
    written = count(data.get("output_tokens"), "output_tokens", provider)
    inputs = data.get("input_tokens_details")
    outputs = data.get("output_tokens_details")
    cached = wrote = reasoning = 0
    if isinstance(inputs, dict):
        cached = min(count(inputs.get("cached_tokens"), "cached_tokens", provider), given)
        wrote = min(count(inputs.get("cache_write_tokens"), "cache_write_tokens", provider), given - cached)
    if isinstance(outputs, dict):
        reasoning = min(count(outputs.get("reasoning_tokens"), "reasoning_tokens", provider), written)
    return Usage(given, written, cached, wrote, 1, reasoning_tokens=reasoning)


# --- one handler per event type ------------------------------------------------------------------


def _item_added(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    item = payload.get("item")
    if not isinstance(item, dict):
        return []
    key = _key(item.get("id"), payload.get("output_index"))
    kind = item.get("type")
    if kind == "reasoning":
        stream.thoughts[key] = _Thought()
        return []
    if kind == "message":
        return stream.follower("text")
    if kind == "function_call":
        events = stream.follower(stream.call_count)
        stream.open_call(key, item)
        return events
    return []


def _item_done(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    item = payload.get("item")
    if not isinstance(item, dict):
        return []
    key = _key(item.get("id"), payload.get("output_index"))
    kind = item.get("type")
    if kind == "reasoning":
        thought = stream.thoughts.pop(key, None)
        stream.waiting.append((_reasoning_text(item, thought), item))
        return []
    if kind == "function_call":
        events = [] if key in stream.calls else stream.follower(stream.call_count)
        if key not in stream.calls:
            stream.open_call(key, item)
        return [*events, ToolCallEvent(stream.finish_call(key, item))]
    if kind == "message" and key not in stream.texted:  # it came whole, not as deltas
        return stream.follower("text") + _whole_message(stream, item)
    return []


def _whole_message(stream: _ResponsesStream, item: dict[str, Any]) -> list[ModelEvent]:
    events: list[ModelEvent] = []
    content = item.get("content")
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "refusal":
            stream.refused = True
            text = part.get("refusal")
        else:
            text = part.get("text")
        if isinstance(text, str) and text:
            events += stream.text(text)
    return events


def _refusal_delta(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    text = payload.get("delta")
    stream.refused = True
    if not isinstance(text, str) or not text:
        return []
    stream.texted.add(_key(payload.get("item_id"), payload.get("output_index")))
    return stream.text(text)


def _arguments_delta(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    call = stream.calls.get(_key(payload.get("item_id"), payload.get("output_index")))
    piece = payload.get("delta")
    if call is not None and isinstance(piece, str):
        call.parts.append(piece)
    return []


def _arguments_done(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    call = stream.calls.get(_key(payload.get("item_id"), payload.get("output_index")))
    arguments = payload.get("arguments")
    if call is not None and isinstance(arguments, str):
        call.arguments = arguments
    return []


def _summary_delta(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    thought = stream.thoughts.get(_key(payload.get("item_id"), payload.get("output_index")))
    piece, index = payload.get("delta"), payload.get("summary_index")
    if thought is not None and isinstance(piece, str):
        thought.summary.setdefault(index if type(index) is int else 0, []).append(piece)
    return []


def _reasoning_delta(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    thought = stream.thoughts.get(_key(payload.get("item_id"), payload.get("output_index")))
    piece = payload.get("delta")
    if thought is not None and isinstance(piece, str):
        thought.content.append(piece)
    return []


def _ended(stream: _ResponsesStream, payload: dict[str, Any]) -> list[ModelEvent]:
    response = payload.get("response")
    response = response if isinstance(response, dict) else {}
    stream.usage = response.get("usage")
    stream.model, stream.response_id = named(response, "model"), named(response, "id")
    if payload.get("type") == "response.incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        stream.word = reason if isinstance(reason, str) and reason else "incomplete"
    else:
        stream.word = "refusal" if stream.refused else "completed"
    return []


_HANDLERS: dict[str, Callable[[_ResponsesStream, dict[str, Any]], list[ModelEvent]]] = {
    "response.output_item.added": _item_added,
    "response.output_item.done": _item_done,
    "response.refusal.delta": _refusal_delta,
    "response.function_call_arguments.delta": _arguments_delta,
    "response.function_call_arguments.done": _arguments_done,
    "response.reasoning_summary_text.delta": _summary_delta,
    "response.reasoning_text.delta": _reasoning_delta,
    "response.completed": _ended,
    "response.incomplete": _ended,
}


def _error(payload: dict[str, Any], provider: str, secrets: tuple[str, ...]) -> ProviderError:
    """The ``ProviderError`` of an ``error`` event (its fields flat, or in an ``error`` object as
    some servers send them) or of ``response.failed`` (``response.error``)."""
    if payload.get("type") == "response.failed":
        response = payload.get("response")
        error = response.get("error") if isinstance(response, dict) else None
        if not isinstance(error, dict):
            error = {"message": "the response failed", "code": None}
    elif isinstance(payload.get("error"), dict):
        error = payload["error"]
    else:
        error = {"message": payload.get("message"), "code": payload.get("code")}
    return in_stream_error(provider, {"error": error}, secrets)


def _key(item_id: Any, output_index: Any) -> str:
    """How the events of one output item are told apart: its id, else its position."""
    if isinstance(item_id, str) and item_id:
        return item_id
    return f"#{output_index}"


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _reasoning_text(item: dict[str, Any], thought: _Thought | None) -> str:
    """The text of a done reasoning item: its summary parts, else its reasoning text, else what
    streamed."""
    parts = [p.get("text") for p in item.get("summary") or () if isinstance(p, dict)]
    texts = [p for p in parts if isinstance(p, str) and p]
    if not texts:
        parts = [p.get("text") for p in item.get("content") or () if isinstance(p, dict)]
        texts = [p for p in parts if isinstance(p, str) and p]
    if texts:
        return "\n\n".join(texts)
    return _thought_text(thought) if thought is not None else ""


def _thought_text(thought: _Thought) -> str:
    summary = ["".join(thought.summary[i]) for i in sorted(thought.summary)]
    return "\n\n".join(summary) if summary else "".join(thought.content)
