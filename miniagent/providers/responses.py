"""The OpenAI Responses API over SSE, stateless: ``POST {base_url}/responses`` with ``stream: true``.

Wire format: https://platform.openai.com/docs/api-reference/responses/create (request) and
https://platform.openai.com/docs/api-reference/responses-streaming (events). Nothing is stored
on the server (``store: false``): each request carries the whole record, the reasoning items this
server sent replayed from ``Reasoning.data`` byte for byte (``_responses_body``); the events are
read by ``_responses_stream``. The transport (retries before the first event only, cancel in
every phase, keep-alive, keys never in texts) is the one every HTTP client shares (``_client``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._catalogue import provider
from ..model import ModelEvent, ModelRequest
from ..net.sse import SSEEvent
from ._chat_body import fits_call_id
from ._chat_params import is_openai_reasoning_model, temperature_sent
from ._client import HTTPClient
from ._config import HTTPSettings
from ._history import WireIds
from ._responses_body import build_responses_body, responses_origin
from ._responses_stream import map_responses_stream

__all__ = ["REASONING_EFFORTS", "REASONING_SUMMARIES", "OpenAIResponsesClient", "map_responses_stream"]

_ROW = provider("openai-responses")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""The values of ``reasoning.effort`` the API documents (each model takes some of them)."""

REASONING_SUMMARIES = ("auto", "concise", "detailed")
"""The values of ``reasoning.summary``."""


class OpenAIResponsesClient(HTTPClient):
    """A ``ModelClient`` for the OpenAI Responses API, stateless (``store: false``).

    Args:
        model: the model name sent as ``model`` (on Azure: the deployment name).
        base_url: the API root including ``/v1`` (``https://api.openai.com/v1``).
        api_key: sent as ``Authorization: Bearer``; default ``$OPENAI_API_KEY`` (never sent to a
            server on this machine).
        settings: the HTTP settings (``HTTPSettings``); default ``HTTPSettings()``.
        temperature: sent when given, unless the model accepts only the default (OpenAI's
            reasoning models: ``_chat_params.sends_temperature``; a warning is logged).
        max_tokens: the output token limit, sent as ``max_output_tokens``.
        reasoning_effort: ``reasoning.effort``, one of ``REASONING_EFFORTS``; default: the
            model's own.
        reasoning_summary: ``reasoning.summary``, one of ``REASONING_SUMMARIES`` (the summaries
            become the ``Reasoning`` text; OpenAI asks a verified organization for them);
            default none asked.
        encrypted_reasoning: ask for the reasoning items' ``encrypted_content``
            (``include: ["reasoning.encrypted_content"]``), which the next request sends back
            (models without reasoning refuse the ``include``: "Encrypted content is not
            supported with this model"); default: for a model named as an OpenAI reasoning
            model (``o3``, ``gpt-5``...) or when ``reasoning_effort``/``reasoning_summary`` is
            given (an Azure deployment name says nothing about its model).
        prices: US dollars per million tokens (see ``OpenAIChatClient``); default: the
            ``genai-prices`` table for OpenAI's API, or the server it knows by its URL.

    Raises:
        ProviderError: no API key for a non-local server.
        ValueError: a ``reasoning_effort`` or ``reasoning_summary`` not in its list, bad ``prices``.
    """

    _provider = "OpenAI"
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
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
        encrypted_reasoning: bool | None = None,
        prices: Mapping[str, float] | None = None,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        _check_choice("reasoning_effort", reasoning_effort, REASONING_EFFORTS)
        _check_choice("reasoning_summary", reasoning_summary, REASONING_SUMMARIES)
        super().__init__(model, base_url, api_key, settings=settings, temperature=temperature)
        self.max_tokens = max_tokens
        self.reasoning: dict[str, str] = {}
        if reasoning_effort is not None:
            self.reasoning["effort"] = reasoning_effort
        if reasoning_summary is not None:
            self.reasoning["summary"] = reasoning_summary
        if encrypted_reasoning is None:
            encrypted_reasoning = bool(self.reasoning) or is_openai_reasoning_model(model)
        self.encrypted_reasoning = encrypted_reasoning
        self._origin = responses_origin(self.base_url)
        self._set_prices(prices)
        self.temperature = temperature_sent(self._provider, model, self.base_url, temperature)

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request``.

        The request body is built at once (``request.messages`` is read here, not kept); the
        HTTP request starts on the first ``next()``.

        Returns:
            A generator of ``TextEvent``, ``ReasoningEvent``, ``ToolCallEvent``, ``UsageEvent``
            and a final ``DoneEvent`` (``map_responses_stream``); call ids this request mapped
            (``WireIds``) come back as the record's. Ends quietly, possibly early, once
            ``request.cancel`` is set.

        Raises:
            ProviderError: see ``Transport.stream`` and ``map_responses_stream``.
        """
        ids = WireIds(fits_call_id)
        body = build_responses_body(
            self.model,
            request.system,
            request.messages,
            request.tools,
            origin=self._origin,
            wire_ids=ids,
            temperature=self.temperature,
            max_output_tokens=self.max_tokens,
            reasoning=self.reasoning,
            encrypted_reasoning=self.encrypted_reasoning,
            output_schema=request.output_schema,
            extra_body=self.extra_body,
        )
        return ids.mapped_back(self._stream("/responses", body, request, self._map))

    def _map(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """``map_responses_stream`` with this client's provider name, origin and prices."""
        return map_responses_stream(
            events, secrets=secrets, price=self._pricer.priced, provider=self._provider, origin=self._origin
        )


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
