"""HTTP model clients: OpenAI-compatible chat completions and the Anthropic Messages API.

Needs the ``http`` extra (``requests``); ``import miniagent`` alone never imports this package.
Without ``requests``, importing it raises ``ModuleNotFoundError`` (``name == "requests"``) whose
message says what to install: ``miniagent.providers needs requests: pip install 'miniagent[http]'``.

- ``OpenAIChatClient(model, base_url="https://api.openai.com/v1", api_key=None)``
- ``AnthropicClient(model, base_url="https://api.anthropic.com", api_key=None, max_tokens=4096)``
- ``create_client(provider, model=None, base_url=None, api_key=None, *, stream_timeout=None,
  **options)``

Both clients stream over server-sent events (one parser, ``miniagent.providers.sse``), retry
transient failures before the first event, stop within milliseconds when the request's cancel
event is set, and keep their connection alive between turns (one TCP/TLS connection per client
as long as the server allows it).
"""

from __future__ import annotations

from typing import Any

try:
    import requests as _requests  # noqa: F401  (only to turn its absence into a clear error)
except ModuleNotFoundError as _missing:
    if _missing.name not in ("requests", "urllib3"):
        raise
    raise ModuleNotFoundError(
        "miniagent.providers needs requests: pip install 'miniagent[http]'", name="requests"
    ) from None

from ..errors import ProviderError
from ..model import ModelClient
from .anthropic import AnthropicClient
from .openai import OpenAIChatClient

__all__ = [
    "AnthropicClient",
    "DEFAULT_MODELS",
    "OpenAIChatClient",
    "PROVIDERS",
    "ProviderError",
    "create_client",
]

PROVIDERS = ("local", "openai", "anthropic")
"""The provider names ``create_client`` accepts."""

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
"""Model used when ``create_client`` gets no ``model`` (the local client picks its own)."""


def create_client(
    provider: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    stream_timeout: float | None = None,
    **options: Any,
) -> ModelClient:
    """Build the model client for ``provider``.

    Args:
        provider: ``"local"`` (the embedded llama.cpp server, extra ``local``), ``"openai"``
            (any OpenAI-compatible server) or ``"anthropic"``; case-insensitive.
        model: the model name; default ``DEFAULT_MODELS[provider]`` (local: its own default).
        base_url: the API root; default the provider's public endpoint. Not used by ``local``.
        api_key: the key; default from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``.
        stream_timeout: most seconds one streamed response may take from the request to its
            end (a stream that never ends, a slow drip), or ``None`` (default): no limit. It
            is checked between reads, so a silent server is bounded by the read timeout
            (``timeout``, default 600 s) alone. Exceeding it raises ``ProviderError`` (kind
            ``"stream_timeout"``, not retried).
        **options: further keyword arguments of the client class (``OpenAIChatClient`` /
            ``AnthropicClient``): ``timeout`` (read timeout, s), ``connect_timeout`` (s),
            ``max_retries``, ``retry``, ``temperature``, ``max_tokens``, ``extra_body``,
            ``headers``. For ``local`` they (and ``stream_timeout``) go to its HTTP client.

    Returns:
        An object with ``stream(request)`` (and ``close()``).

    Raises:
        ValueError: unknown provider name, or ``base_url``/``api_key`` given for ``local``.
        TypeError: an option the client does not take.
        ProviderError: no API key for a remote server.
        ImportError: ``local`` without its extra installed.
    """
    name = provider.strip().lower()
    if stream_timeout is not None:
        options["stream_timeout"] = stream_timeout
    if name == "local":
        if base_url is not None or api_key is not None:
            raise ValueError("the local provider takes no base_url or api_key")
        from .local import create_local_client

        client: ModelClient = create_local_client(model=model, client_options=options or None)
        return client
    if name == "openai":
        return OpenAIChatClient(
            model or DEFAULT_MODELS["openai"],
            base_url or "https://api.openai.com/v1",
            api_key,
            **options,
        )
    if name == "anthropic":
        return AnthropicClient(
            model or DEFAULT_MODELS["anthropic"],
            base_url or "https://api.anthropic.com",
            api_key,
            **options,
        )
    raise ValueError(f"unknown provider {provider!r}: expected one of {', '.join(PROVIDERS)}")
