"""OpenAI chat completions (and compatible servers: llama.cpp, Ollama, vLLM) over SSE.

Wire format: https://platform.openai.com/docs/api-reference/chat/create (request) and
https://platform.openai.com/docs/api-reference/chat-streaming (``chat.completion.chunk``
events, ``data: [DONE]`` at the end).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._catalogue import provider
from .._text import SurrogateJoiner, join_surrogates
from ..errors import IncompleteReason, ProviderError
from ..messages import ToolCall
from ..model import (
    ModelEvent,
    ModelRequest,
    ProviderDoneEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    UsageEvent,
)
from ..net.sse import SSEEvent
from ..usage import Usage
from ._chat_body import build_chat_body, fits_call_id
from ._chat_params import limit_field, temperature_sent
from ._chat_reasoning import TEXT_FIELDS, add_details, chat_origin, closing_block, text_block
from ._client import HTTPClient
from ._config import HTTPSettings
from ._decode import count, load_event_json, named, parse_tool_input
from ._endings import cut_call, turn_ending
from ._errors import in_stream_error
from ._history import WireIds
from ._markup import ToolCallMarkup, parse_tool_call_block

_ROW = provider("openai")

__all__ = ["OpenAIChatClient", "build_chat_body", "map_chat_stream"]

PROVIDER = "OpenAI"

class OpenAIChatClient(HTTPClient):
    """A ``ModelClient`` for ``POST {base_url}/chat/completions`` with ``stream: true``.

    Args:
        model: the model name sent as ``model``.
        base_url: the API root including ``/v1`` (e.g. ``http://127.0.0.1:8080/v1``).
        api_key: sent as ``Authorization: Bearer``; default ``$OPENAI_API_KEY``. A server on
            localhost/loopback needs none (and never gets the environment key).
        settings: the HTTP settings (``HTTPSettings``: read, connect and stream timeouts,
            retry policy, extra headers, extra body fields); default ``HTTPSettings()``.
        temperature: sent when given, unless the model accepts only the default (OpenAI's
            reasoning models: ``_chat_params.sends_temperature``; a warning is logged).
        max_tokens: the output token limit, when given; sent as ``max_completion_tokens`` to
            OpenAI's and Azure's API and for OpenAI reasoning models, else as ``max_tokens``
            (``_chat_params.limit_field``).
        tool_call_markup: also take Hermes ``<tool_call>{...}</tool_call>`` blocks that arrive
            in the text as tool calls (for servers whose tool-call parser misses some, like a
            small local model's; see ``map_chat_stream``). Default off.
        prices: US dollars per million tokens, ``{"input", "output"[, "cache_read"]
            [, "cache_write"]}``, for ``Usage.cost_usd``; default: the ``genai-prices`` table
            (extra ``cost``) for OpenAI's API or a server it knows by its URL, else unknown.

    Raises:
        ProviderError: no API key for a non-local server.
        ValueError: bad ``prices``.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""
    _price_table = "openai"
    _official_hosts = ("api.openai.com",)

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        *,
        settings: HTTPSettings | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tool_call_markup: bool = False,
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
        self.max_tokens = max_tokens
        self.tool_call_markup = tool_call_markup
        self._set_prices(prices)
        self._origin = chat_origin(self.base_url)
        self._limit_field = limit_field(model, self.base_url)
        self.temperature = temperature_sent(self._provider, model, self.base_url, temperature)

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request``.

        The request body is built at once (``request.messages`` is read here, not kept); the
        HTTP request starts on the first ``next()``.

        Returns:
            A generator of ``TextEvent`` (each ``delta.content``), ``ToolCallEvent`` (each call
            once its arguments are complete, at ``finish_reason``) and a final ``DoneEvent``
            with the ``finish_reason`` and how the turn ended (``DoneEvent.incomplete``). Ends
            quietly, possibly early, once ``request.cancel`` is set.

        Raises:
            ProviderError: see ``Transport.stream`` and ``map_chat_stream``.
        """
        ids = WireIds(fits_call_id)
        body = build_chat_body(
            self.model,
            request.system,
            request.messages,
            request.tools,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            extra_body=self.extra_body,
            output_schema=request.output_schema,
            origin=self._origin,
            wire_ids=ids,
            limit_name=self._limit_field,
        )
        return ids.mapped_back(self._stream("/chat/completions", body, request, self._map))

    def _map(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """``map_chat_stream`` with this client's options; its errors name this client's provider."""
        return map_chat_stream(
            events,
            secrets=secrets,
            tool_call_markup=self.tool_call_markup,
            price=self._pricer.priced,
            provider=self._provider,
            origin=self._origin,
        )


@dataclass
class _PendingCall:
    """A tool call being assembled from ``delta.tool_calls`` fragments."""

    ordinal: int
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    extra: dict[str, Any] | None = None  # Gemini's extra_content (thought signature), opaque


class _Calls:
    """Tool-call fragments accumulated by ``index`` (OpenAI streaming tool calls)."""

    def __init__(self) -> None:
        self.by_index: dict[int, _PendingCall] = {}
        self.replaced: list[_PendingCall] = []  # older calls whose index got a new id
        self.stream_tag = uuid.uuid4().hex[:16]
        self.count = 0
        self.emitted = 0  # calls handed out so far (their positions in the turn)
        self.extras: dict[int, dict[str, Any]] = {}  # position in the turn -> extra_content

    def __bool__(self) -> bool:
        return bool(self.by_index or self.replaced)

    def add(self, fragment: Any) -> None:
        """Merge one element of ``delta.tool_calls``."""
        if not isinstance(fragment, dict):
            return
        call_id = fragment.get("id")
        call_id = call_id if isinstance(call_id, str) else ""
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._guess_index(call_id)
        current = self.by_index.get(index)
        if current is not None and call_id and current.id and call_id != current.id:
            self.replaced.append(current)  # a new id on a used index: a new call
            current = None
        if current is None:
            current = self.by_index[index] = _PendingCall(self.count)
            self.count += 1
        if call_id and not current.id:
            current.id = call_id
        extra = fragment.get("extra_content")
        if isinstance(extra, dict):
            current.extra = extra
        function = fragment.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not current.name:
                current.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                current.parts.append(arguments)
            elif isinstance(arguments, dict):  # some servers send an object, not JSON text
                current.parts.append(json.dumps(arguments, ensure_ascii=False))

    def _guess_index(self, call_id: str) -> int:
        """Index for a fragment without one: a new id starts a call, else the last call."""
        if not self.by_index:
            return 0
        last = max(self.by_index)
        if call_id and call_id != self.by_index[last].id:
            return last + 1
        return last

    def take(self, incomplete: IncompleteReason | None, finish_reason: str | None) -> list[ToolCall]:
        """Finish every pending call, in order, and forget them.

        A turn that ended unnaturally (``incomplete``, from ``finish_reason``) cut the calls whose
        arguments are empty or not valid JSON: each becomes ``cut_call`` (it must never run).
        """
        pending = self.replaced + [self.by_index[i] for i in sorted(self.by_index)]
        self.replaced = []
        self.by_index = {}
        self._note_extras(pending)
        calls: list[ToolCall] = []
        for item in pending:
            arguments = "".join(item.parts)
            tool_input, error = parse_tool_input(arguments)
            call_id = item.id or self._made_up_id(item.ordinal)
            if incomplete is not None and (error is not None or not arguments.strip()):
                cut = cut_call(call_id, item.name, incomplete, finish_reason)
                if cut is not None:
                    calls.append(cut)
                continue
            calls.append(ToolCall(call_id, item.name, tool_input, error))
        return calls

    def _note_extras(self, pending: list[_PendingCall]) -> None:
        """Keep the ``extra_content`` of the calls handed out now, by their position in the turn."""
        for position, item in enumerate(pending, self.emitted):
            if item.extra is not None:
                self.extras[position] = item.extra
        self.emitted += len(pending)

    def from_markup(self, body: str) -> ToolCall:
        """The call written in the body of a ``<tool_call>`` block of the text, with a made-up id."""
        name, tool_input, error = parse_tool_call_block(body)
        self.count += 1
        self.emitted += 1
        return ToolCall(self._made_up_id(self.count - 1), name, tool_input, error)

    def _made_up_id(self, ordinal: int) -> str:
        """An id for a call the server gave none: unique to this stream and call."""
        return f"call_{self.stream_tag}_{ordinal}"


def map_chat_stream(
    events: Iterable[SSEEvent],
    *,
    secrets: tuple[str, ...] = (),
    tool_call_markup: bool = False,
    price: Callable[[Usage], Usage] | None = None,
    provider: str = PROVIDER,
    origin: str | None = None,
) -> Iterator[ModelEvent]:
    """Map chat-completion chunk events to model events.

    Args:
        events: the decoded SSE events of one response.
        secrets: strings to redact from error texts.
        tool_call_markup: also read Hermes ``<tool_call>{...}</tool_call>`` blocks that arrive
            as text (a server whose tool-call parser missed them) as tool calls
            (``_markup.ToolCallMarkup``); the blocks are not part of the text.
        price: sets the cost of the request's ``Usage`` (the client's ``Pricer.priced``).
        provider: the name every error text starts with (the client's ``_provider``, e.g.
            ``"local model"`` for the embedded server); default ``"OpenAI"``.
        origin: the ``Reasoning.origin`` of the provider-specific fields kept
            (``_chat_reasoning.chat_origin`` of the client's URL).

    Returns:
        A generator: a ``TextEvent`` per non-empty ``delta.content`` or ``delta.refusal`` (a
        refusal is the turn's text) of choice 0, a surrogate pair split across two deltas
        joined (``SurrogateJoiner``); a ``ReasoningEvent`` per run of
        ``delta.reasoning_content`` (DeepSeek, vLLM, llama.cpp) or ``delta.reasoning``
        (OpenRouter, newer vLLM) pieces, when the answer starts or the stream ends (a field
        present but empty still counts: DeepSeek wants it back on a tool-call turn; the name it
        came in is kept, ``_chat_reasoning.text_block``); one more ``ReasoningEvent`` at the
        end when the turn had OpenRouter ``delta.reasoning_details`` or calls with Gemini's
        ``extra_content`` (``_chat_reasoning.closing_block``); the tool calls
        (accumulated by ``index``; id and name may come only in the first fragment, the whole
        call in one chunk, arguments missing or ``""``) as ``ToolCallEvent``s when a
        ``finish_reason`` arrives (any reason, ``"stop"`` included) or at ``[DONE]``; one
        ``UsageEvent`` (``chat_usage`` of the last ``usage`` object, which servers send in a
        chunk with empty ``choices`` when asked with ``stream_options.include_usage``, or on
        every chunk) when the server sent any; then one ``DoneEvent(finish_reason, incomplete)``
        (``_endings.turn_ending``: ``"length"`` is ``"max_output_tokens"``, ``"content_filter"``,
        OpenRouter's ``"error"`` ``"provider_error"``...). A call whose arguments a turn that
        ended unnaturally cut is emitted with an input error saying so (``cut_call_problem``),
        never run. A missing ``[DONE]`` after a ``finish_reason`` is fine.

    Raises:
        ProviderError: an ``{"error": ...}`` chunk (retryable for server/rate-limit kinds); data
            that is not JSON; usage counts that are not token counts (``_decode.count``); the
            stream ended with neither ``finish_reason`` nor ``[DONE]`` (retryable).
    """
    stream = _ChatStream(tool_call_markup, provider, origin)
    done = False
    for event in events:
        data = event.data
        if not data:
            continue
        if data == "[DONE]" or data.strip() == "[DONE]":
            done = True
            break
        chunk = load_event_json(event, provider, secrets)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error") or event.event == "error":
            raise in_stream_error(provider, chunk, secrets)
        if stream.unnamed:  # the model and the id, from the first chunk (every chunk has them)
            stream.model, stream.response_id = named(chunk, "model"), named(chunk, "id")
            stream.unnamed = False
        reported = chunk.get("usage")
        if isinstance(reported, dict):
            stream.usage, stream.timings = reported, chunk.get("timings")
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # choice 0 only
            delta = choice.get("delta")
            if isinstance(delta, dict):
                yield from stream.delta(delta)
            reason = choice.get("finish_reason")
            if reason and isinstance(reason, str):
                yield from stream.finish(reason)
    yield from stream.end(done, price)


class _ChatStream:
    """What one chat-completions response has streamed so far (``map_chat_stream``'s state).

    Invariant: at most one reasoning block is open (``thought``); it closes when the answer's text
    or calls start, at a ``finish_reason`` or at the end. Calls are emitted whole, at a
    ``finish_reason`` or at the end; text at once (but half a surrogate pair waits for its other half).
    Its errors start with ``provider``.
    """

    def __init__(self, tool_call_markup: bool, provider: str = PROVIDER, origin: str | None = None) -> None:
        self.provider = provider
        self.origin = origin
        self.calls = _Calls()
        self.joiner = SurrogateJoiner()
        self.markup = ToolCallMarkup() if tool_call_markup else None
        self.thought: list[str] | None = None  # the open reasoning block's pieces
        self.thought_field = TEXT_FIELDS[0]  # the name its pieces came in
        self.details: list[dict[str, Any]] = []  # OpenRouter's reasoning_details, merged
        self.usage: dict[str, Any] | None = None  # the last usage object
        self.timings: Any = None  # llama.cpp's timings next to it
        self.finish_reason: str | None = None
        self.incomplete: IncompleteReason | None = None  # how the finish_reason ended the turn
        self.model: str | None = None  # the model and the id the chunks name (for traces)
        self.response_id: str | None = None
        self.unnamed = True  # no chunk read yet

    def delta(self, delta: dict[str, Any]) -> list[ModelEvent]:
        """Reasoning pieces, text (``content``, else ``refusal``) and call fragments of one delta.

        Returns a list, not a generator: this runs for every chunk, and nothing in it can raise.
        """
        piece, name = delta.get("reasoning_content"), TEXT_FIELDS[0]
        if piece is None:
            piece, name = delta.get("reasoning"), TEXT_FIELDS[1]
        if isinstance(piece, str):
            if self.thought is None:
                self.thought, self.thought_field = [], name
            if piece:
                self.thought.append(piece)
        details = delta.get("reasoning_details")
        if details:
            add_details(self.details, details)
        text = delta.get("content")
        if not text or not isinstance(text, str):
            text = delta.get("refusal")
        fragments = delta.get("tool_calls")
        events = self.close_reasoning() if self.thought is not None and (text or fragments) else []
        if text and isinstance(text, str):
            events += self.text(text)
        if fragments and isinstance(fragments, list):
            for fragment in fragments:
                self.calls.add(fragment)
        return events

    def text(self, text: str) -> list[ModelEvent]:
        """A ``TextEvent`` (or, with markup reading, its prose and calls) for one piece of text."""
        if self.joiner.held or "\ud800" <= text[-1] <= "\udbff":  # half a surrogate pair
            text = self.joiner.feed(text)
        if not text:
            return []
        if self.markup is None:
            return [TextEvent(text)]
        return list(_markup_events(self.markup.feed(text), self.calls))

    def finish(self, reason: str) -> Iterator[ModelEvent]:
        """A ``finish_reason``: close the reasoning block and emit the whole calls."""
        self.finish_reason = reason
        self.incomplete = turn_ending(reason)
        yield from self.close_reasoning()
        for call in self.calls.take(self.incomplete, reason):
            yield ToolCallEvent(call)

    def close_reasoning(self) -> list[ModelEvent]:
        """The open reasoning block as one ``ReasoningEvent`` (closed now), if one is open."""
        if self.thought is None:
            return []
        text = join_surrogates("".join(self.thought))
        self.thought = None
        return [ReasoningEvent(text_block(text, self.thought_field, self.origin))]

    def end(self, done: bool, price: Callable[[Usage], Usage] | None) -> Iterator[ModelEvent]:
        """The end of the stream: what is still held, the calls, the usage, then ``DoneEvent``."""
        if not done and self.finish_reason is None:
            raise ProviderError(
                f"{self.provider} stream ended before the response was complete "
                "(no finish_reason and no [DONE])",
                retryable=True,
            )
        yield from self.close_reasoning()
        held = self.joiner.flush()
        if self.markup is not None:
            prose, bodies = self.markup.feed(held) if held else ("", [])
            yield from _markup_events((prose, bodies), self.calls)
            prose, body = self.markup.finish()
            yield from _markup_events((prose, [body] if body is not None else []), self.calls)
        elif held:
            yield TextEvent(held)
        for call in self.calls.take(self.incomplete, self.finish_reason):
            yield ToolCallEvent(call)
        closing = closing_block(self.details, self.calls.extras, self.origin)
        if closing is not None:
            yield ReasoningEvent(closing)
        if self.usage is not None:
            used = chat_usage(self.usage, self.timings, self.provider)
            yield UsageEvent(price(used) if price is not None else used)
        yield ProviderDoneEvent(self.finish_reason, self.incomplete, self.model, self.response_id)


def chat_usage(data: Mapping[str, Any], timings: Any = None, provider: str = PROVIDER) -> Usage:
    """A chat-completions ``usage`` object as a ``Usage`` of one request: ``prompt_tokens``
    (cached ones included, as the API counts them) and ``completion_tokens``; the cached part
    from ``prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, llama.cpp), else DeepSeek's
    ``prompt_cache_hit_tokens``, else llama.cpp's ``timings.cache_n``; the reasoning part of
    the output from ``completion_tokens_details.reasoning_tokens`` (OpenAI, DeepSeek, OpenRouter).

    Raises:
        ProviderError: a count that is not a token count (``_decode.count``); the text starts
            with ``provider``.
    """
    prompt = count(data.get("prompt_tokens"), "prompt_tokens", provider)
    details = data.get("prompt_tokens_details")
    cached = 0
    if isinstance(details, dict):
        cached = count(details.get("cached_tokens"), "cached_tokens", provider)
    if not cached:
        cached = count(data.get("prompt_cache_hit_tokens"), "prompt_cache_hit_tokens", provider)
    if not cached and isinstance(timings, dict):
        cached = count(timings.get("cache_n"), "timings.cache_n", provider)
    output = count(data.get("completion_tokens"), "completion_tokens", provider)
    completion = data.get("completion_tokens_details")
    reasoning = 0
    if isinstance(completion, dict):
        reasoning = count(completion.get("reasoning_tokens"), "reasoning_tokens", provider)
    return Usage(prompt, output, min(cached, prompt), 0, 1, reasoning_tokens=min(reasoning, output))


def _markup_events(split: tuple[str, list[str]], calls: _Calls) -> Iterator[ModelEvent]:
    """The prose and the calls of ``ToolCallMarkup.feed``'s result, as events."""
    prose, bodies = split
    if prose:
        yield TextEvent(prose)
    for body in bodies:
        yield ToolCallEvent(calls.from_markup(body))
