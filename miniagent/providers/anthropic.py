"""Anthropic Messages API over SSE.

Wire format: https://docs.anthropic.com/en/api/messages (request) and
https://docs.anthropic.com/en/docs/build-with-claude/streaming (events ``message_start``,
``content_block_start/delta/stop``, ``message_delta``, ``message_stop``, ``ping``, ``error``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from .._catalogue import provider
from .._text import SurrogateJoiner, join_surrogates
from ..errors import IncompleteReason, ProviderError
from ..messages import Reasoning, ToolCall
from ..model import (
    DoneEvent,
    ModelEvent,
    ModelRequest,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    UsageEvent,
)
from ..net.sse import SSEEvent
from ..output import with_output_instruction
from ..usage import Usage
from ._anthropic_body import TRIMMED_PLACEHOLDER, build_messages_body, fits_call_id
from ._client import HTTPClient
from ._config import HTTPSettings
from ._decode import count, load_event_json, nonfinite_problem, parse_tool_input
from ._endings import cut_call, turn_ending
from ._errors import in_stream_error
from ._history import WireIds
from ._pricing import Pricer

_ROW = provider("anthropic")

__all__ = ["AnthropicClient", "TRIMMED_PLACEHOLDER", "build_messages_body", "map_messages_stream"]

PROVIDER = "Anthropic"
API_VERSION = "2023-06-01"



class AnthropicClient(HTTPClient):
    """A ``ModelClient`` for ``POST {base_url}/v1/messages`` with ``stream: true``.

    Args:
        model: the model name sent as ``model``.
        base_url: the API root, with or without a trailing ``/v1`` (and slash):
            ``https://api.anthropic.com`` and ``https://api.anthropic.com/v1/`` both post to
            ``https://api.anthropic.com/v1/messages``. The ``base_url`` attribute keeps the
            root without ``/v1``.
        api_key: sent as ``x-api-key``; default ``$ANTHROPIC_API_KEY``. A server on
            localhost/loopback needs none (and never gets the environment key).
        max_tokens: the required output token limit (``max_tokens``).
        settings: the HTTP settings (``HTTPSettings``: read, connect and stream timeouts,
            retry policy, extra headers, extra body fields); default ``HTTPSettings()``.
        temperature: sent when given.
        prompt_cache: mark the stable prefix with ``cache_control`` breakpoints (default on;
            see ``build_messages_body``).
        prices: US dollars per million tokens, ``{"input", "output"[, "cache_read"]
            [, "cache_write"]}``, for ``Usage.cost_usd``; default: the ``genai-prices`` table
            (extra ``cost``) when the server is Anthropic's, else unknown.

    Raises:
        ProviderError: no API key for a non-local server.
        ValueError: bad ``prices``.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""
    _default_headers: ClassVar[Mapping[str, str]] = {"anthropic-version": API_VERSION}

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        max_tokens: int = 4096,
        *,
        settings: HTTPSettings | None = None,
        temperature: float | None = None,
        prompt_cache: bool = True,
        prices: Mapping[str, float] | None = None,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        super().__init__(
            model,
            base_url,
            api_key,
            settings=settings,
            temperature=temperature,
        )
        if self.base_url.endswith("/v1"):  # the OpenAI-style root: "/v1" is added per request
            self.base_url = self.base_url[: -len("/v1")]
        self.max_tokens = max_tokens
        self.prompt_cache = prompt_cache
        official = _host(self.base_url) == "api.anthropic.com"
        self._pricer = Pricer(model, "anthropic" if official else None, self.base_url, prices)

    def can_price(self) -> bool:
        """Whether the cost of this client's requests can be known (user prices, or a model the
        price table knows); imports ``genai-prices`` when needed."""
        return self._pricer.can_price()

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def __repr__(self) -> str:
        """``AnthropicClient(model=..., base_url=...)``; never shows the key."""
        return f"AnthropicClient(model={self.model!r}, base_url={self.base_url!r})"

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request``.

        The request body is built at once (``request.messages`` is read here, not kept); the
        HTTP request starts on the first ``next()``.

        Returns:
            A generator of ``TextEvent`` (each ``text_delta``), ``ToolCallEvent`` (each
            ``tool_use`` block, at its ``content_block_stop``) and a final ``DoneEvent`` with the
            ``stop_reason`` and how the turn ended (``DoneEvent.incomplete``). Ends quietly,
            possibly early, once ``request.cancel`` is set.

        Raises:
            ProviderError: see ``Transport.stream`` and ``map_messages_stream``.
        """
        ids = WireIds(fits_call_id)
        body = build_messages_body(
            self.model,
            # No native structured output here: the schema goes into the system prompt (the
            # loop checks the answer either way).
            with_output_instruction(request.system, request.output_schema),
            request.messages,
            request.tools,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            extra_body=self.extra_body,
            prompt_cache=self.prompt_cache,
            wire_ids=ids,
        )
        return ids.mapped_back(self._stream("/v1/messages", body, request, self._map))

    def _map(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """``map_messages_stream`` with this client's prices; its errors name this client's provider."""
        return map_messages_stream(
            events,
            secrets=secrets,
            price=self._pricer.priced,
            provider=self._provider,
        )


def _host(url: str) -> str:
    """The lower-case host name of ``url`` (``""`` when it has none)."""
    return (urlsplit(url).hostname or "").lower()


@dataclass
class _ToolBlock:
    """A ``tool_use`` content block being streamed."""

    id: str
    name: str
    initial: dict[str, Any]
    parts: list[str] = field(default_factory=list)

    def call(self) -> ToolCall:
        """The finished call: ``input_json_delta`` text parsed; no deltas → the start ``input``
        (refused like broken JSON when it holds a NaN or an infinity)."""
        arguments = "".join(self.parts)
        if not arguments.strip():
            problem = nonfinite_problem(self.initial)
            if problem is not None:
                return ToolCall(self.id, self.name, {}, f"arguments are not valid JSON: {problem}")
            return ToolCall(self.id, self.name, dict(self.initial))
        tool_input, error = parse_tool_input(arguments)
        return ToolCall(self.id, self.name, tool_input, error)

    def complete(self) -> bool:
        """Whether the arguments are certainly whole: non-empty and a parseable JSON object."""
        arguments = "".join(self.parts)
        return bool(arguments.strip()) and parse_tool_input(arguments)[1] is None

    def cut(self) -> bool:
        """Whether the arguments look cut: broken JSON, or none (no deltas, empty start input)."""
        arguments = "".join(self.parts)
        if not arguments.strip():
            return not self.initial
        return parse_tool_input(arguments)[1] is not None


@dataclass
class _ThinkingBlock:
    """A ``thinking`` or ``redacted_thinking`` content block being streamed."""

    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted_data: str | None = None

    def reasoning(self) -> Reasoning:
        """The finished block: its text joined, signature and redacted data as received."""
        return Reasoning(join_surrogates("".join(self.parts)), self.signature, self.redacted_data)


def _block_index(data: dict[str, Any]) -> int:
    """The event's content block ``index``; -1 when missing or not an integer (a list or an
    object would not even be usable as a key)."""
    index = data.get("index", -1)
    return index if type(index) is int else -1


class _MessageStream:
    """The state of one Messages API response being mapped: one method per event kind.

    Invariants: ``blocks`` holds the open ``tool_use`` blocks by index and ``thinking`` the open
    ``thinking`` / ``redacted_thinking`` blocks; a finished call waits in ``held`` (and so does
    every call after it) while its JSON is empty or broken, so that a call cut by ``max_tokens``
    is never emitted whole; ``stop_reason`` is the last ``message_delta``'s. Its errors start
    with ``provider``.
    """

    def __init__(
        self,
        secrets: tuple[str, ...],
        price: Callable[[Usage], Usage] | None = None,
        provider: str = PROVIDER,
    ) -> None:
        self.secrets = secrets
        self.provider = provider
        self.price = price
        self.usage: dict[str, Any] = {}  # the latest value of each usage field
        self.blocks: dict[int, _ToolBlock] = {}
        self.thinking: dict[int, _ThinkingBlock] = {}
        self.text = SurrogateJoiner()
        self.held: list[_ToolBlock] = []
        self.stop_reason: str | None = None
        self.handlers: dict[str, Callable[[dict[str, Any]], ModelEvent | None]] = {
            "content_block_delta": self.block_delta,
            "content_block_start": self.block_start,
            "content_block_stop": self.block_stop,
            "message_start": self.message_start,
            "message_delta": self.message_delta,
            "error": self.error,
        }

    def block_start(self, data: dict[str, Any]) -> ModelEvent | None:
        """``content_block_start``: open a ``tool_use``, ``thinking`` or ``redacted_thinking``
        block; a ``text`` block's initial text."""
        start = data.get("content_block")
        if not isinstance(start, dict):
            return None
        kind = start.get("type")
        if kind == "tool_use":
            initial = start.get("input")
            self.blocks[_block_index(data)] = _ToolBlock(
                str(start.get("id") or ""),
                str(start.get("name") or ""),
                initial if isinstance(initial, dict) else {},
            )
        elif kind == "text":
            text = start.get("text")
            if text and isinstance(text, str):
                text = self.text.feed(text)
                return TextEvent(text) if text else None
        elif kind == "thinking":
            block = self.thinking[_block_index(data)] = _ThinkingBlock()
            _add_thinking(block, start.get("thinking"), start.get("signature"))
        elif kind == "redacted_thinking":
            redacted = start.get("data")
            self.thinking[_block_index(data)] = _ThinkingBlock(
                redacted_data=redacted if isinstance(redacted, str) else ""
            )
        return None

    def block_delta(self, data: dict[str, Any]) -> ModelEvent | None:
        """``content_block_delta``: a ``text_delta`` becomes a ``TextEvent``; an
        ``input_json_delta`` piece is added to its ``tool_use`` block, a ``thinking_delta`` or
        ``signature_delta`` to its ``thinking`` block."""
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return None
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if text and isinstance(text, str):
                text = self.text.feed(text)
                return TextEvent(text) if text else None
        elif kind == "input_json_delta":
            block = self.blocks.get(_block_index(data))
            piece = delta.get("partial_json")
            if block is not None and isinstance(piece, str):
                block.parts.append(piece)
        elif kind == "thinking_delta" or kind == "signature_delta":
            thinking = self.thinking.get(_block_index(data))
            if thinking is not None:
                _add_thinking(thinking, delta.get("thinking"), delta.get("signature"))
        return None

    def block_stop(self, data: dict[str, Any]) -> ModelEvent | None:
        """``content_block_stop``: a whole ``tool_use`` block becomes a ``ToolCallEvent``, a
        thinking block a ``ReasoningEvent``."""
        index = _block_index(data)
        block = self.blocks.pop(index, None)
        if block is None:
            thinking = self.thinking.pop(index, None)
            return ReasoningEvent(thinking.reasoning()) if thinking is not None else None
        if self.held or not block.complete():
            self.held.append(block)
            return None
        return ToolCallEvent(block.call())

    def message_start(self, data: dict[str, Any]) -> ModelEvent | None:
        """``message_start``: remember the usage so far (input tokens, cache use)."""
        message = data.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(usage, dict):
            self.update_usage(usage)
        return None

    def message_delta(self, data: dict[str, Any]) -> ModelEvent | None:
        """``message_delta``: remember the ``stop_reason`` and the usage (its counts are
        cumulative: the last one wins)."""
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.update_usage(usage)
        delta = data.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if reason and isinstance(reason, str):
            self.stop_reason = reason
        return None

    def update_usage(self, usage: dict[str, Any]) -> None:
        """Take the fields of a usage object; a ``null`` field keeps the value already known
        (``message_delta`` may send ``"input_tokens": null`` after ``message_start`` gave it)."""
        self.usage.update((key, value) for key, value in usage.items() if value is not None)

    def error(self, data: dict[str, Any]) -> ModelEvent | None:
        """``error``: raise it as a ``ProviderError``."""
        raise in_stream_error(self.provider, data, self.secrets)

    def finish(self, stopped: bool) -> Iterator[ModelEvent]:
        """The thinking blocks and calls still pending, in order (``pending_call``), then
        ``DoneEvent`` with how the turn ended; ``stopped``: ``message_stop`` was seen.

        Raises:
            ProviderError: no ``message_stop`` and no stop reason (retryable); usage counts
                that are not token counts.
        """
        if not stopped and self.stop_reason is None:
            raise ProviderError(
                f"{self.provider} stream ended before the message was complete (no message_stop)",
                retryable=True,
            )
        incomplete = turn_ending(self.stop_reason)
        pending = self.held + [self.blocks[i] for i in sorted(self.blocks)]
        held = self.text.flush()
        if held:
            yield TextEvent(held)
        for index in sorted(self.thinking):
            yield ReasoningEvent(self.thinking[index].reasoning())
        for block in pending:
            call = self.pending_call(block, incomplete)
            if call is not None:
                yield ToolCallEvent(call)
        if self.usage:
            usage = messages_usage(self.usage, self.provider)
            yield UsageEvent(self.price(usage) if self.price is not None else usage)
        yield DoneEvent(self.stop_reason, incomplete)

    def pending_call(self, block: _ToolBlock, incomplete: IncompleteReason | None) -> ToolCall | None:
        """The call of a block that waited for the stop reason: whole, or cut (``cut_call``)."""
        if incomplete is None or not block.cut():
            return block.call()
        return cut_call(block.id, block.name, incomplete, self.stop_reason)


def messages_usage(data: Mapping[str, Any], provider: str = PROVIDER) -> Usage:
    """A Messages API ``usage`` object as a ``Usage`` of one request: ``input_tokens`` is the sum
    of the API's ``input_tokens`` (the uncached part), ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens`` (DESIGN.md: cached tokens count as input). A count that is not
    a token count raises ``ProviderError`` (``_decode.count``), its text starting with ``provider``.
    """
    fresh = count(data.get("input_tokens"), "input_tokens", provider)
    written = count(data.get("cache_creation_input_tokens"), "cache_creation_input_tokens", provider)
    read = count(data.get("cache_read_input_tokens"), "cache_read_input_tokens", provider)
    output = count(data.get("output_tokens"), "output_tokens", provider)
    return Usage(fresh + written + read, output, read, written, 1)


def _add_thinking(block: _ThinkingBlock, text: Any, signature: Any) -> None:
    """Add a piece of thinking text and/or of its signature (strings only) to ``block``."""
    if isinstance(text, str) and text:
        block.parts.append(text)
    if isinstance(signature, str) and signature:
        block.signature = (block.signature or "") + signature


def map_messages_stream(
    events: Iterable[SSEEvent],
    *,
    secrets: tuple[str, ...] = (),
    price: Callable[[Usage], Usage] | None = None,
    provider: str = PROVIDER,
) -> Iterator[ModelEvent]:
    """Map Messages API stream events to model events.

    Args:
        events: the decoded SSE events of one response.
        secrets: strings to redact from error texts.
        price: sets the cost of the request's ``Usage`` (the client's ``Pricer.priced``).
        provider: the name every error text starts with (the client's ``_provider``, e.g.
            ``"local model"`` for the embedded server); default ``"Anthropic"``.

    Returns:
        A generator: a ``TextEvent`` per non-empty ``text_delta`` (a surrogate pair split across
        two deltas is joined: ``SurrogateJoiner``); a ``ReasoningEvent`` per
        ``thinking`` block (``thinking_delta`` text, ``signature_delta``) or ``redacted_thinking``
        block (``data``) at its ``content_block_stop``; a ``ToolCallEvent`` per ``tool_use``
        block at its ``content_block_stop`` when its JSON is a whole object (a call with empty or
        broken JSON, and every call after it, waits for the ``stop_reason``, so a call cut by
        ``max_tokens`` is never emitted whole: it comes with an input error saying it was cut,
        ``cut_call_problem``, and never runs); one ``UsageEvent`` (``messages_usage`` of the usage in
        ``message_start`` and ``message_delta``) when the server sent any; then
        ``DoneEvent(stop_reason, incomplete)`` (``_endings.turn_ending``, e.g. ``"max_tokens"``:
        ``"max_output_tokens"``). ``ping`` and unknown event types are ignored. A cut after
        ``message_delta`` (stop reason known) but before ``message_stop`` counts as complete.

    Raises:
        ProviderError: an ``error`` event (``kind`` = its type; retryable for
            ``overloaded_error``, ``rate_limit_error``, ``api_error``); data that is not JSON;
            usage counts that are not token counts; the stream ended before a stop reason
            (retryable).
    """
    state = _MessageStream(secrets, price, provider)
    handlers = state.handlers
    stopped = False
    for event in events:
        if event.event == "ping":
            continue
        data = load_event_json(event, provider, secrets)
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event.event
        if kind == "message_stop":
            stopped = True
            break
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            out = handler(data)
            if out is not None:
                yield out
    yield from state.finish(stopped)
