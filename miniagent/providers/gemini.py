"""The Gemini API (Google AI Studio) over SSE: ``models/{model}:streamGenerateContent?alt=sse``.

Wire format: https://ai.google.dev/api/generate-content (request; every event of the stream is
one ``GenerateContentResponse``: ``candidates[].content.parts``, ``finishReason``,
``promptFeedback``, ``usageMetadata``), https://ai.google.dev/gemini-api/docs/thinking (thought
parts) and https://ai.google.dev/gemini-api/docs/thought-signatures (``thoughtSignature`` on a
part, to be sent back on that part). The request side, and what a turn keeps in the record, is
``_gemini_body``.

Invariants:

- The key travels in the ``x-goog-api-key`` header only, never in the URL.
- Text is emitted at once; a ``functionCall`` part arrives whole and is emitted at once, with a
  made-up id when the API gave none (that id is never sent back: ``_gemini_body``).
- A stream that ends with neither a ``finishReason`` nor a blocked prompt was cut (retryable).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from .._catalogue import provider
from ..errors import IncompleteReason, ProviderError
from ..messages import Reasoning, ToolCall
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
from ._client import HTTPClient
from ._config import HTTPSettings, is_local_url
from ._decode import count, load_event_json, named, nonfinite_problem
from ._endings import turn_ending
from ._errors import in_stream_error
from ._gemini_body import build_gemini_body, gemini_origin

_ROW = provider("gemini")

__all__ = ["GeminiClient", "gemini_usage", "map_gemini_stream"]

PROVIDER = "Gemini"
API_VERSION = "v1beta"
FALLBACK_KEY_ENV = "GOOGLE_API_KEY"
"""The key variable read when ``GEMINI_API_KEY`` is not set (the SDKs read both)."""

class GeminiClient(HTTPClient):
    """A ``ModelClient`` for ``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

    Args:
        model: the model name (``gemini-2.5-flash``; a leading ``models/`` is dropped).
        base_url: the API root, with or without a trailing ``/v1beta``; default
            ``https://generativelanguage.googleapis.com``.
        api_key: sent as ``x-goog-api-key``; default ``$GEMINI_API_KEY``, else
            ``$GOOGLE_API_KEY``. A server on localhost/loopback needs none (and never gets the
            environment key).
        settings: the HTTP settings (``HTTPSettings``); default ``HTTPSettings()``.
        temperature: ``generationConfig.temperature``, when given.
        max_tokens: ``generationConfig.maxOutputTokens``, when given.
        include_thoughts: ask for thought summaries (``thinkingConfig.includeThoughts``); they
            stream as ``ReasoningEvent``s. Default off (thinking models think either way).
        prices: US dollars per million tokens (``{"input", "output"[, "cache_read"]}``) for
            ``Usage.cost_usd``; default: the ``genai-prices`` table (extra ``cost``) when the
            server is Google's, else unknown.

    Raises:
        ProviderError: no API key for a non-local server.
        ValueError: bad ``base_url`` or ``prices``.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""
    _price_table = "google"
    _official_hosts = ("generativelanguage.googleapis.com",)

    def __init__(
        self,
        model: str,
        base_url: str = "https://generativelanguage.googleapis.com",
        api_key: str | None = None,
        *,
        settings: HTTPSettings | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        include_thoughts: bool = False,
        prices: Mapping[str, float] | None = None,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        if not api_key and not os.environ.get(self._key_env) and not is_local_url(base_url):
            api_key = os.environ.get(FALLBACK_KEY_ENV) or None
        try:
            super().__init__(model, base_url, api_key, settings=settings, temperature=temperature)
        except ProviderError as err:
            raise ProviderError(f"{err} (or {FALLBACK_KEY_ENV})") from None
        if self.base_url.endswith(f"/{API_VERSION}"):
            self.base_url = self.base_url[: -len(API_VERSION) - 1]
        self.model = model.removeprefix("models/")
        self.max_tokens = max_tokens
        self.include_thoughts = include_thoughts
        self._origin = gemini_origin(self.base_url)
        self._set_prices(prices)

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request``.

        The request body is built at once (``request.messages`` is read here, not kept); the
        HTTP request starts on the first ``next()``.

        Returns:
            A generator of the events of ``map_gemini_stream``, ending with a ``DoneEvent``.
            Ends quietly, possibly early, once ``request.cancel`` is set.

        Raises:
            ProviderError: see ``Transport.stream`` and ``map_gemini_stream``.
        """
        body = build_gemini_body(
            request.system,
            request.messages,
            request.tools,
            origin=self._origin,
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            output_schema=request.output_schema,
            include_thoughts=self.include_thoughts,
            extra_body=self.extra_body,
        )
        path = f"/{API_VERSION}/models/{quote(self.model, safe='')}:streamGenerateContent?alt=sse"
        return self._stream(path, body, request, self._map)

    def _map(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """``map_gemini_stream`` with this client's origin and prices."""
        return map_gemini_stream(
            events,
            secrets=secrets,
            price=self._pricer.priced,
            provider=self._provider,
            origin=self._origin,
            model=self.model,
        )


def map_gemini_stream(
    events: Iterable[SSEEvent],
    *,
    secrets: tuple[str, ...] = (),
    price: Callable[[Usage], Usage] | None = None,
    provider: str = PROVIDER,
    origin: str | None = None,
    model: str = "",
) -> Iterator[ModelEvent]:
    """Map the events of a ``streamGenerateContent?alt=sse`` response to model events.

    Args:
        events: the decoded SSE events of one response (each one ``GenerateContentResponse``).
        secrets: strings to redact from error texts.
        price: sets the cost of the request's ``Usage`` (the client's ``Pricer.priced``).
        provider: the name every error text starts with.
        origin: the ``Reasoning.origin`` of the blocks kept (``_gemini_body.gemini_origin``).
        model: the model asked, kept in those blocks (signatures go back to it only).

    Returns:
        A generator, for candidate 0: a ``TextEvent`` per non-empty ``text`` part; a
        ``ReasoningEvent`` per run of thought parts (``thought: true``, their signature kept),
        when the run ends; a ``ToolCallEvent`` per ``functionCall`` part at once (``args`` not
        an object, or holding a NaN: an input error; no ``name``: dropped); at the end one
        ``ReasoningEvent`` with the turn's layout when the signatures or ids need it
        (``_gemini_body``); one ``UsageEvent`` (``gemini_usage`` of the last
        ``usageMetadata``) when the server sent any; then ``DoneEvent(finishReason,
        incomplete)`` (``_endings.turn_ending``: ``MAX_TOKENS`` is ``"max_output_tokens"``,
        ``SAFETY``, ``RECITATION``, ``PROHIBITED_CONTENT``... ``"content_filter"``,
        ``MALFORMED_FUNCTION_CALL`` ``"provider_error"``), or for a prompt the API blocked
        (``promptFeedback.blockReason``, no candidates) ``DoneEvent("prompt blocked: REASON",
        "content_filter")``.

    Raises:
        ProviderError: an ``{"error": {...}}`` event (its ``status`` the kind; retryable for a
            retryable ``code``); data that is not JSON; usage counts that are not token counts;
            the stream ended before a ``finishReason`` (retryable).
    """
    stream = _GeminiStream(provider, origin, model)
    for event in events:
        if not event.data:
            continue
        data = load_event_json(event, provider, secrets)
        if not isinstance(data, dict):
            continue
        if "error" in data:
            raise in_stream_error(provider, data, secrets)
        yield from stream.response(data)
    yield from stream.end(price)


class _GeminiStream:
    """What one response has streamed so far (``map_gemini_stream``'s state).

    Invariants: at most one run of unsigned thought parts is open (``thought``) and at most one
    run of unsigned text parts (``text_run``, its layout entry); a part with a signature is an
    entry of its own. ``layout`` lists every part of the turn so far (``_gemini_body``'s
    entries). Errors start with ``provider``.
    """

    def __init__(self, provider: str, origin: str | None, model: str) -> None:
        self.provider = provider
        self.origin = origin
        self.model = model
        self.tag = uuid.uuid4().hex[:16]
        self.thought: list[str] | None = None
        self.thoughts = 0
        self.text_run: dict[str, Any] | None = None
        self.layout: list[dict[str, Any]] = []
        self.calls = 0
        self.needs_layout = False
        self.finish_reason: str | None = None
        self.blocked: str | None = None
        self.version: str | None = None  # modelVersion and responseId (for traces)
        self.response_id: str | None = None
        self.usage: dict[str, Any] | None = None

    def response(self, data: dict[str, Any]) -> list[ModelEvent]:
        """The events of one ``GenerateContentResponse``; remembers its usage, finish reason and
        prompt feedback."""
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            self.usage = usage
        self.version = named(data, "modelVersion") or self.version
        self.response_id = named(data, "responseId") or self.response_id
        feedback = data.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if isinstance(reason, str) and reason:
            self.blocked = reason
        candidates = data.get("candidates")
        events: list[ModelEvent] = []
        for candidate in candidates if isinstance(candidates, list) else ():
            if not isinstance(candidate, dict) or candidate.get("index", 0) != 0:
                continue  # candidate 0 only
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict):
                    events += self.part(part)
            finish = candidate.get("finishReason")
            if isinstance(finish, str) and finish:
                self.finish_reason = finish
        return events

    def part(self, part: dict[str, Any]) -> list[ModelEvent]:
        """The events of one part: a thought piece, a text piece or a function call. A part that
        carries a signature stays a part of its own (the API wants it back as it came)."""
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        text = part.get("text")
        text = text if isinstance(text, str) else None
        if part.get("thought") is True:
            self.text_run = None
            events = self.close_thought() if signature is not None else []
            self.thought = self.thought if self.thought is not None else []
            if text:
                self.thought.append(text)
            if signature is not None:
                events += self.close_thought(signature)
            return events
        call = part.get("functionCall")
        if isinstance(call, dict):
            events = self.close_thought()
            self.text_run = None
            return events + self.function_call(call, signature)
        if text is None:
            return []  # a part of a kind miniagent does not use (inline data, code execution)
        events = self.close_thought()
        if signature is not None:
            self.text_run = None
            self.layout.append({"text": len(text), "thoughtSignature": signature})
            self.needs_layout = True
        elif self.text_run is None:
            self.text_run = {"text": len(text)}
            self.layout.append(self.text_run)
        else:
            self.text_run["text"] += len(text)
        if text:
            events.append(TextEvent(text))
        return events

    def close_thought(self, signature: str | None = None) -> list[ModelEvent]:
        """The open run of thought parts as one ``ReasoningEvent`` (closed now), if one is open."""
        if self.thought is None:
            return []
        data: dict[str, Any] = {"thought": True, "model": self.model}
        if signature is not None:
            data["thoughtSignature"] = signature
        block = Reasoning("".join(self.thought), origin=self.origin, data=data)
        self.thought = None
        self.layout.append({"thought": self.thoughts})
        self.thoughts += 1
        return [ReasoningEvent(block)]

    def function_call(self, call: dict[str, Any], signature: str | None) -> list[ModelEvent]:
        """A whole ``functionCall`` part as a ``ToolCallEvent`` (none without a name)."""
        name = call.get("name")
        if not isinstance(name, str) or not name:
            return []
        entry: dict[str, Any] = {"call": self.calls}
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{self.tag}_{self.calls}"
            entry["id"] = None
            self.needs_layout = True
        if signature is not None:
            entry["thoughtSignature"] = signature
            self.needs_layout = True
        self.layout.append(entry)
        self.calls += 1
        args = call.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            problem = f"arguments must be a JSON object, got {type(args).__name__}"
            return [ToolCallEvent(ToolCall(call_id, name, {}, problem))]
        nonfinite = nonfinite_problem(args)
        if nonfinite is not None:
            return [ToolCallEvent(ToolCall(call_id, name, {}, f"arguments are not valid JSON: {nonfinite}"))]
        return [ToolCallEvent(ToolCall(call_id, name, args))]

    def end(self, price: Callable[[Usage], Usage] | None) -> Iterator[ModelEvent]:
        """The end of the stream: the open thought run, the layout, the usage, then ``DoneEvent``."""
        if self.finish_reason is None and self.blocked is None:
            raise ProviderError(
                f"{self.provider} stream ended before the response was complete (no finishReason)",
                retryable=True,
            )
        yield from self.close_thought()
        if self.needs_layout or not _in_usual_order(self.layout):
            yield ReasoningEvent(
                Reasoning("", origin=self.origin, data={"model": self.model, "parts": self.layout})
            )
        if self.usage is not None:
            used = gemini_usage(self.usage, self.provider)
            yield UsageEvent(price(used) if price is not None else used)
        stop_reason = self.finish_reason
        incomplete: IncompleteReason | None
        if stop_reason is None:
            stop_reason, incomplete = f"prompt blocked: {self.blocked}", "content_filter"
        else:
            incomplete = turn_ending(stop_reason)
        yield ProviderDoneEvent(stop_reason, incomplete, self.version, self.response_id)


def _in_usual_order(layout: list[dict[str, Any]]) -> bool:
    """Whether the parts were thoughts, then at most one run of text, then calls (the order
    ``_gemini_body`` rebuilds without a layout)."""
    ranks = [0 if "thought" in e else 1 if "text" in e else 2 for e in layout]
    return ranks == sorted(ranks) and ranks.count(1) <= 1


def gemini_usage(data: Mapping[str, Any], provider: str = PROVIDER) -> Usage:
    """A ``usageMetadata`` object as a ``Usage`` of one request: ``input_tokens`` is
    ``promptTokenCount`` (cached tokens included, as the API counts them) plus
    ``toolUsePromptTokenCount``; ``output_tokens`` is ``candidatesTokenCount`` plus
    ``thoughtsTokenCount`` (thinking is billed as output); ``cache_read_tokens`` is
    ``cachedContentTokenCount``.

    Raises:
        ProviderError: a count that is not a token count (``_decode.count``); the text starts
            with ``provider``.
    """
    prompt = count(data.get("promptTokenCount"), "promptTokenCount", provider)
    tools = count(data.get("toolUsePromptTokenCount"), "toolUsePromptTokenCount", provider)
    cached = count(data.get("cachedContentTokenCount"), "cachedContentTokenCount", provider)
    answer = count(data.get("candidatesTokenCount"), "candidatesTokenCount", provider)
    thoughts = count(data.get("thoughtsTokenCount"), "thoughtsTokenCount", provider)
    return Usage(prompt + tools, answer + thoughts, min(cached, prompt + tools), 0, 1)
