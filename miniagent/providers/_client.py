"""What the HTTP model clients share: settings, key and headers, the transport, ``close()``.

Each client (``OpenAIChatClient``, ``AnthropicClient``) keeps its own constructor signature and
docstring, its request body builder and its stream mapper; this base holds the rest. It builds
the ``Transport`` from the client's one ``HTTPSettings`` value (layering: ``_client`` imports
``_http``, which imports ``_config``; never the other way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from ..model import ModelEvent, ModelRequest
from ..net.sse import SSEDecoder, SSEEvent
from ..net.urls import check_base_url, check_proxy_for
from ._config import HTTPSettings, base_headers, resolve_api_key, withheld_key
from ._http import Decoder, Signer, Transport
from ._pricing import Pricer

__all__ = ["HTTPClient", "StreamMapper"]


class StreamMapper(Protocol):
    """A provider's stream mapper, e.g. ``map_chat_stream``: SSE events in, model events out."""

    def __call__(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """Map the events of one response; ``secrets`` are redacted from error texts."""
        ...


class HTTPClient:
    """Base of the streaming HTTP clients.

    Subclasses set ``_provider`` (the name every error text of the instance starts with: its
    transport's and its stream mapper's), ``_key_env`` (the environment variable of the key),
    optionally ``_default_headers`` (sent unless ``headers`` override them), and override
    ``_auth_headers`` when the key does not go as a bearer token; a client with another way to
    authenticate than a key overrides ``_resolve_key``. Error texts name library settings
    (``stream_timeout``), never a CLI option: the CLI words its own advice by the error's
    ``kind``. Prices: a subclass names the price table's provider of its official API
    (``_price_table``) and that API's hosts (``_official_hosts``; an entry starting with ``.``
    matches a suffix), and calls ``_set_prices(prices)`` once its ``model`` and ``base_url``
    are final.
    """

    _provider: ClassVar[str]
    _key_env: ClassVar[str]
    _default_headers: ClassVar[Mapping[str, str]] = {}
    _price_table: ClassVar[str | None] = None
    _official_hosts: ClassVar[tuple[str, ...]] = ()
    _pricer: Pricer

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        *,
        settings: HTTPSettings | None,
        temperature: float | None,
    ) -> None:
        """Check ``base_url`` and the environment's proxy for it, resolve the key, build the
        headers and the transport from ``settings`` (default ``HTTPSettings()``); no connection
        is made.

        Raises:
            ValueError: ``base_url`` (or the proxy URL the environment gives for it) cannot be
                used: no ``http://``/``https://``, user info, backslash, percent-encoded host,
                query, bad port (see ``_urls.check_base_url``). Nothing is retried.
            ProviderError: no API key for a non-local server.
        """
        settings = settings if settings is not None else HTTPSettings()
        self.model = model
        self.base_url = check_base_url(base_url)
        check_proxy_for(self.base_url)
        self.settings = settings
        self.temperature = temperature
        self.extra_body = dict(settings.extra_body)
        key = self._resolve_key(api_key)
        self._headers = base_headers({**self._default_headers, **settings.headers})
        if key:
            self._headers.update(self._auth_headers(key))
        self._transport = Transport(
            self._provider,
            settings,
            (key,) if key else (),
            withheld_key=withheld_key(api_key, self._key_env, self.base_url),
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry ``key``: ``Authorization: Bearer`` unless the API says
        otherwise (Anthropic's ``x-api-key``, Gemini's ``x-goog-api-key``, Azure's)."""
        return {"Authorization": f"Bearer {key}"}

    def _set_prices(self, prices: Mapping[str, float] | None) -> None:
        """Price this client's requests: ``prices`` (US dollars per million tokens) when given,
        else the ``genai-prices`` table for the official API (``_official_hosts``) or a server
        the table knows by its URL (``_pricing.Pricer``).

        Raises:
            ValueError: bad ``prices``.
        """
        host = (urlsplit(self.base_url).hostname or "").lower()
        official = any(
            host.endswith(name) if name.startswith(".") else host == name for name in self._official_hosts
        )
        self._pricer = Pricer(self.model, self._price_table if official else None, self.base_url, prices)

    def can_price(self) -> bool:
        """Whether the cost of this client's requests can be known (user prices, or a model the
        price table knows); imports ``genai-prices`` when needed."""
        return self._pricer.can_price()

    def __repr__(self) -> str:
        """``ClientName(model=..., base_url=...)``; never shows a key."""
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _resolve_key(self, api_key: str | None) -> str | None:
        """The key to send (``_config.resolve_api_key``: ``api_key``, else ``$_key_env`` for a
        server that is not local).

        Raises:
            ProviderError: no key for a server that is not local.
        """
        return resolve_api_key(api_key, self._key_env, self.base_url, self._provider)

    def _stream(
        self,
        path: str,
        body: Mapping[str, Any],
        request: ModelRequest,
        mapper: StreamMapper,
        *,
        decoder: Callable[[], Decoder] | None = None,
        sign: Signer | None = None,
    ) -> Iterator[ModelEvent]:
        """POST ``body`` to ``{base_url}{path}``; ``mapper(events, secrets=...)`` maps the stream
        (framed by ``decoder()``, default SSE; each attempt signed by ``sign``: see
        ``Transport.stream``)."""

        def mapped(events: Iterable[SSEEvent]) -> Iterator[ModelEvent]:
            return mapper(events, secrets=self._transport.secrets)

        framing = decoder if decoder is not None else SSEDecoder
        url, cancel = f"{self.base_url}{path}", request.cancel
        return self._transport.stream(url, self._headers, body, cancel, mapped, decoder=framing, sign=sign)

    def close(self) -> None:
        """Close the HTTP session (its pooled connections). The client is unusable afterwards."""
        self._transport.close()
