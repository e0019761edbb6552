"""Bedrock ``ConverseStream`` events to model events.

Wire format: the response body is an AWS event stream (``net.eventstream``); each message's
``:message-type`` header is ``event`` (``:event-type`` ``messageStart``, ``contentBlockStart``,
``contentBlockDelta``, ``contentBlockStop``, ``messageStop``, ``metadata``; a JSON payload, which
may carry a ``p`` padding field), ``exception`` (``:exception-type`` such as
``throttlingException``, ``modelStreamErrorException``, ``validationException``; payload
``{"message"}``) or ``error`` (``:error-code``, ``:error-message``). The event shapes are those of
botocore's ``bedrock-runtime`` service model (``ConverseStreamOutput``).

Invariants: text is emitted at once; a ``toolUse`` block becomes a call at its
``contentBlockStop`` when its input is a whole JSON object, else it waits for the stop reason
(a call cut by ``max_tokens`` never runs: ``_endings.cut_call``); a stream without
``messageStop`` was cut (retryable).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from ..messages import Reasoning, ToolCall
from ..model import DoneEvent, ModelEvent, ReasoningEvent, TextEvent, ToolCallEvent, UsageEvent
from ..net.eventstream import EventStreamMessage
from ..usage import Usage
from ._decode import count, parse_tool_input
from ._endings import cut_call, turn_ending
from ._errors import redact, truncate

__all__ = ["RETRYABLE_EXCEPTIONS", "converse_usage", "map_converse_stream"]

PROVIDER = "Bedrock"

RETRYABLE_EXCEPTIONS = frozenset(
    (
        "throttlingException",
        "internalServerException",
        "serviceUnavailableException",
        "modelStreamErrorException",
    )
)
"""The stream exceptions worth a new request (before any event was yielded)."""


@dataclass
class _ToolBlock:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)

    def call(self) -> ToolCall:
        tool_input, error = parse_tool_input("".join(self.parts))
        return ToolCall(self.id, self.name, tool_input, error)

    def whole(self) -> bool:
        """Whether the input arrived and is a whole JSON object (else it may have been cut)."""
        joined = "".join(self.parts)
        return bool(joined.strip()) and parse_tool_input(joined)[1] is None


@dataclass
class _ReasoningBlock:
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted: str | None = None

    def reasoning(self, origin: str | None, model: str) -> Reasoning:
        text = "" if self.redacted is not None else "".join(self.parts)
        return Reasoning(text, self.signature, self.redacted, origin, {"model": model})


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("contentBlockIndex", -1)
    return index if type(index) is int else -1


class _ConverseStream:
    """The state of one ``ConverseStream`` response: one method per event type."""

    def __init__(self, provider: str, origin: str | None, model: str) -> None:
        self.provider, self.origin, self.model = provider, origin, model
        self.tools: dict[int, _ToolBlock] = {}
        self.thinking: dict[int, _ReasoningBlock] = {}
        self.held: list[_ToolBlock] = []
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.handlers: dict[str, Callable[[dict[str, Any]], list[ModelEvent]]] = {
            "contentBlockStart": self.block_start,
            "contentBlockDelta": self.block_delta,
            "contentBlockStop": self.block_stop,
            "messageStop": self.message_stop,
            "metadata": self.metadata,
        }

    def block_start(self, data: dict[str, Any]) -> list[ModelEvent]:
        start = data.get("start")
        tool = start.get("toolUse") if isinstance(start, dict) else None
        if isinstance(tool, dict):
            call_id, name = tool.get("toolUseId"), tool.get("name")
            self.tools[_index(data)] = _ToolBlock(
                call_id if isinstance(call_id, str) else "", name if isinstance(name, str) else ""
            )
        return []

    def block_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return []
        text = delta.get("text")
        if isinstance(text, str) and text:
            return [TextEvent(text)]
        tool = delta.get("toolUse")
        block = self.tools.get(_index(data))
        if isinstance(tool, dict) and block is not None and isinstance(tool.get("input"), str):
            block.parts.append(tool["input"])
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            thinking = self.thinking.setdefault(_index(data), _ReasoningBlock())
            piece, signature, redacted = (reasoning.get(k) for k in ("text", "signature", "redactedContent"))
            if isinstance(piece, str):
                thinking.parts.append(piece)
            if isinstance(signature, str):
                thinking.signature = (thinking.signature or "") + signature
            if isinstance(redacted, str):
                thinking.redacted = (thinking.redacted or "") + redacted
        return []

    def block_stop(self, data: dict[str, Any]) -> list[ModelEvent]:
        index = _index(data)
        thinking = self.thinking.pop(index, None)
        if thinking is not None:
            return [ReasoningEvent(thinking.reasoning(self.origin, self.model))]
        block = self.tools.pop(index, None)
        if block is None:
            return []
        if self.held or not block.whole():
            self.held.append(block)  # empty or broken input: the stop reason says whether it was cut
            return []
        return [ToolCallEvent(block.call())]

    def message_stop(self, data: dict[str, Any]) -> list[ModelEvent]:
        reason = data.get("stopReason")
        self.stop_reason = reason if isinstance(reason, str) and reason else "unknown"
        return []

    def metadata(self, data: dict[str, Any]) -> list[ModelEvent]:
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        return []

    def finish(self, price: Callable[[Usage], Usage] | None) -> Iterator[ModelEvent]:
        """The reasoning and calls still pending, the usage, then ``DoneEvent``."""
        if self.stop_reason is None:
            raise ProviderError(
                f"{self.provider} stream ended before the message was complete (no messageStop)",
                retryable=True,
            )
        incomplete = turn_ending(self.stop_reason)
        for index in sorted(self.thinking):
            yield ReasoningEvent(self.thinking[index].reasoning(self.origin, self.model))
        for block in self.held + [self.tools[i] for i in sorted(self.tools)]:
            if incomplete is None or block.whole():
                yield ToolCallEvent(block.call())
            else:
                cut = cut_call(block.id, block.name, incomplete, self.stop_reason)
                if cut is not None:
                    yield ToolCallEvent(cut)
        if self.usage is not None:
            used = converse_usage(self.usage, self.provider)
            yield UsageEvent(price(used) if price is not None else used)
        yield DoneEvent(self.stop_reason, incomplete)


def converse_usage(data: Mapping[str, Any], provider: str = PROVIDER) -> Usage:
    """A ``metadata.usage`` object as a ``Usage`` of one request: ``input_tokens`` is
    ``inputTokens`` (the part not read from or written to the prompt cache) plus
    ``cacheReadInputTokens`` and ``cacheWriteInputTokens``; ``output_tokens`` is
    ``outputTokens``.

    Raises:
        ProviderError: a count that is not a token count (``_decode.count``).
    """
    fresh = count(data.get("inputTokens"), "inputTokens", provider)
    read = count(data.get("cacheReadInputTokens"), "cacheReadInputTokens", provider)
    written = count(data.get("cacheWriteInputTokens"), "cacheWriteInputTokens", provider)
    output = count(data.get("outputTokens"), "outputTokens", provider)
    return Usage(fresh + read + written, output, read, written, 1)


def _payload(message: EventStreamMessage, provider: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object of a message's payload (``{}`` for an empty one)."""
    if not message.payload:
        return {}
    try:
        data = json.loads(message.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        shown = truncate(redact(message.payload[:200].decode("utf-8", "replace"), secrets), 120)
        raise ProviderError(f"{provider} sent an event that is not JSON: {shown!r}", retryable=True) from None
    return data if isinstance(data, dict) else {}


def _stream_error(message: EventStreamMessage, provider: str, secrets: tuple[str, ...]) -> ProviderError:
    """The error of an ``exception`` or ``error`` message."""
    headers = message.headers
    if headers.get(":message-type") == "exception":
        kind = str(headers.get(":exception-type") or "exception")
        text = _payload(message, provider, secrets).get("message")
    else:
        kind = str(headers.get(":error-code") or "error")
        text = headers.get(":error-message")
    said = truncate(redact(str(text or "no message").strip(), secrets))
    return ProviderError(
        f"{provider} stream error ({kind}): {said}", retryable=kind in RETRYABLE_EXCEPTIONS, kind=kind
    )


def map_converse_stream(
    events: Iterable[Any],
    *,
    secrets: tuple[str, ...] = (),
    price: Callable[[Usage], Usage] | None = None,
    provider: str = PROVIDER,
    origin: str | None = None,
    model: str = "",
) -> Iterator[ModelEvent]:
    """Map the messages of a ``ConverseStream`` response (``EventStreamMessage``s) to model events.

    Args:
        events: the decoded messages of one response.
        secrets: strings to redact from error texts.
        price: sets the cost of the request's ``Usage``.
        provider: the name every error text starts with.
        origin: the ``Reasoning.origin`` of the reasoning kept (``_bedrock_body.bedrock_origin``).
        model: the model id, kept with the reasoning (it goes back to that model only).

    Returns:
        A generator: a ``TextEvent`` per non-empty ``text`` delta; a ``ReasoningEvent`` per
        ``reasoningContent`` block at its ``contentBlockStop`` (text and ``signature`` pieces
        joined, or the ``redactedContent``); a ``ToolCallEvent`` per ``toolUse`` block (see the
        module docstring); one ``UsageEvent`` (``converse_usage``) when ``metadata`` came; then
        ``DoneEvent(stopReason, incomplete)`` (``_endings.turn_ending``: ``max_tokens`` is
        ``"max_output_tokens"``, ``guardrail_intervened`` and ``content_filtered``
        ``"content_filter"``, ``malformed_tool_use`` ``"provider_error"``...).

    Raises:
        ProviderError: an ``exception`` or ``error`` message (its type the kind; retryable for
            ``RETRYABLE_EXCEPTIONS``); a payload that is not JSON; usage counts that are not
            token counts; no ``messageStop`` (retryable).
    """
    stream = _ConverseStream(provider, origin, model)
    for message in events:
        kind = message.headers.get(":message-type", "event")
        if kind != "event":
            raise _stream_error(message, provider, secrets)
        handler = stream.handlers.get(str(message.headers.get(":event-type")))
        if handler is not None:
            yield from handler(_payload(message, provider, secrets))
    yield from stream.finish(price)
