"""HTTP model clients: OpenAI-compatible chat completions and the Anthropic Messages API.

Needs the ``http`` extra (``requests``); ``import miniagent`` alone never imports this package.
Without ``requests``, importing it raises ``ModuleNotFoundError`` (``name == "requests"``) whose
message says what to install: ``miniagent.providers needs requests: pip install 'miniagent[http]'``.

- ``OpenAIChatClient(model, base_url="https://api.openai.com/v1", api_key=None)``
- ``AnthropicClient(model, base_url="https://api.anthropic.com", api_key=None, max_tokens=4096)``
- ``OpenAIResponsesClient(model, base_url="https://api.openai.com/v1", api_key=None)``: the OpenAI
  Responses API, stateless (``store: false``), encrypted reasoning replayed; Azure's in
  ``providers.azure``, OpenRouter and DeepSeek in ``providers.compatible``
- ``GeminiClient(model, base_url="https://generativelanguage.googleapis.com", api_key=None)``
- ``BedrockClient(model, base_url=None, api_key=None, region=None)``: Bedrock Converse streaming
- ``create_client(provider, model=None, base_url=None, api_key=None, **options)``
- ``HTTPSettings(read_timeout=600, connect_timeout=10, stream_timeout=None, retry=RetryPolicy(),
  headers={}, extra_body={})``: the one value that configures a client's HTTP exchange
- ``RetryPolicy(max_retries=3, backoff_base=0.5, backoff_max=8, max_retry_after=60, wait=...)``

Both clients stream over server-sent events (one parser, ``miniagent.net.sse``), retry
transient failures before the first event, stop within milliseconds when the request's cancel
event is set, and keep their connection alive between turns (one TCP/TLS connection per client
as long as the server allows it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import requests as _requests  # noqa: F401  (only to turn its absence into a clear error)
except ModuleNotFoundError as _missing:
    if _missing.name not in ("requests", "urllib3"):
        raise
    raise ModuleNotFoundError(
        "miniagent.providers needs requests: pip install 'miniagent[http]'", name="requests"
    ) from None

import importlib
from dataclasses import fields

from .._catalogue import CATALOGUE, PROVIDERS
from .._catalogue import provider as provider_row
from ..errors import ProviderError
from ..model import ModelClient
from ..net.urls import check_base_url
from ._config import HTTPSettings
from ._retry import RetryPolicy

if TYPE_CHECKING:
    from .anthropic import AnthropicClient
    from .bedrock import BedrockClient
    from .gemini import GeminiClient
    from .openai import OpenAIChatClient
    from .responses import OpenAIResponsesClient

# The client classes are imported when first named (PEP 562): a command that uses one provider
# does not pay for the modules of the others; create_client imports the one it builds.
_CLIENT_MODULES = {
    "AnthropicClient": ".anthropic",
    "BedrockClient": ".bedrock",
    "GeminiClient": ".gemini",
    "OpenAIChatClient": ".openai",
    "OpenAIResponsesClient": ".responses",
}


def __getattr__(name: str) -> Any:
    """The client class ``name``, imported from its module on first use.

    Raises:
        AttributeError: ``name`` is not a client class of this package.
    """
    module = _CLIENT_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "AnthropicClient",
    "BedrockClient",
    "DEFAULT_MODELS",
    "GeminiClient",
    "HTTPSettings",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "PROVIDERS",
    "ProviderError",
    "RetryPolicy",
    "check_base_url",
    "create_client",
]

DEFAULT_MODELS = {row.name: row.default_model for row in CATALOGUE if row.default_model is not None}
"""Model used when ``create_client`` gets no ``model`` (the local client picks its own)."""

_SETTING_NAMES = frozenset(f.name for f in fields(HTTPSettings))
_CLIENT_OPTIONS = frozenset(("temperature", "max_tokens", "tool_call_markup", "prices", "prompt_cache"))
_CLIENT_OPTIONS |= {"reasoning_effort", "reasoning_summary", "encrypted_reasoning", "api", "azure_ad_token"}


def create_client(
    provider: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> ModelClient:
    """Build the model client for ``provider``.

    Args:
        provider: a name of the catalogue (``miniagent._catalogue``, ``PROVIDERS``):
            ``"local"`` (the embedded llama.cpp server, extra ``local``), ``"openai"`` (any
            OpenAI-compatible server), ``"anthropic"``, ``"openai-responses"`` (the Responses
            API), ``"azure"`` (an Azure OpenAI resource: ``base_url`` or
            ``$AZURE_OPENAI_ENDPOINT``, the deployment as ``model``), ``"openrouter"``,
            ``"deepseek"``, ``"gemini"`` or ``"bedrock"``; case-insensitive.
        model: the model name; default ``DEFAULT_MODELS[provider]`` (local: its own default).
        base_url: the API root; default the provider's public endpoint. Not used by ``local``.
        api_key: the key; default from the provider's key variable (``OPENAI_API_KEY``,
            ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or else ``GOOGLE_API_KEY``,
            ``AWS_BEARER_TOKEN_BEDROCK`` or else a SigV4 signature).
        **options: the fields of ``HTTPSettings`` (``read_timeout``, ``connect_timeout``,
            ``stream_timeout`` in seconds, ``retry`` a ``RetryPolicy``, ``headers``,
            ``extra_body``), built here into one ``HTTPSettings`` and given to the client; and
            the request options ``temperature`` and ``max_tokens``; ``prices`` (US dollars per
            million tokens, ``{"input", "output"[, "cache_read"][, "cache_write"]}``, for
            ``Usage.cost_usd``); ``tool_call_markup`` (``openai`` only: read ``<tool_call>``
            blocks left in the text as calls); ``prompt_cache`` (``anthropic`` only, default on:
            ``cache_control`` breakpoints on the stable prefix); ``reasoning_effort``,
            ``reasoning_summary``, ``encrypted_reasoning`` (``openai-responses``, ``azure``);
            ``api`` (``"chat"`` or ``"responses"``) and ``azure_ad_token`` (``azure`` only).
            For ``local`` they go to the HTTP client of the embedded server.

    Returns:
        An object with ``stream(request)`` (and ``close()``).

    Raises:
        ValueError: unknown provider name, ``base_url``/``api_key`` given for ``local``, or a
            ``base_url`` (or proxy URL from the environment) that cannot be used
            (``check_base_url``); nothing is sent or retried.
        TypeError: an option that is neither a setting nor a request option.
        ProviderError: no API key for a remote server.
        ImportError: ``local`` without its extra installed.
    """
    row = provider_row(provider)
    client_options = _client_options(options)
    module, _, attribute = row.client.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    if not row.takes_url:
        if base_url is not None or api_key is not None:
            raise ValueError(f"the {row.name} provider takes no base_url or api_key")
        client: ModelClient = factory(model=model, client_options=client_options)
        return client
    client = factory(model or row.default_model, base_url or row.default_base_url, api_key, **client_options)
    return client


def _client_options(options: dict[str, Any]) -> dict[str, Any]:
    """Split ``create_client``'s options into ``settings=HTTPSettings(...)`` and request options.

    Raises:
        TypeError: an unknown option (the text names it and the known ones).
    """
    unknown = sorted(set(options) - _SETTING_NAMES - _CLIENT_OPTIONS)
    if unknown:
        known = ", ".join(sorted(_SETTING_NAMES | _CLIENT_OPTIONS))
        raise TypeError(f"create_client() got unknown option(s) {', '.join(unknown)}; known: {known}")
    settings = HTTPSettings(**{k: v for k, v in options.items() if k in _SETTING_NAMES})
    return {"settings": settings, **{k: v for k, v in options.items() if k in _CLIENT_OPTIONS}}
