"""The provider catalogue: one row per provider (standard library only).

Adding a provider is its client module plus one row here. Everything that lists, checks or
chooses providers reads these rows: ``create_client`` (which client, its default model and
URL), the clients' key variables, ``--provider``'s metavar and help, and the CLI's choice when
no provider is named (``chosen_by_key``). ``import miniagent.cli`` can check a name without
importing ``requests``.

Invariants:

- ``PROVIDERS`` lists the names in the rows' order; ``check_provider`` is the one check of a name
  (and its error text).
- A row's ``client`` is ``"module:attribute"``, imported only when a client is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CATALOGUE",
    "CHOSEN_BY_KEY",
    "FALLBACK",
    "FOR_BASE_URL",
    "PROVIDERS",
    "Provider",
    "check_provider",
    "chosen_by_key",
    "provider",
]


@dataclass(frozen=True)
class Provider:
    """One provider of the catalogue."""

    name: str
    """What ``create_client`` and ``--provider`` accept (lowercase)."""
    client: str
    """``"module:attribute"`` of the client factory. With ``takes_url``, it is called as
    ``factory(model, base_url, api_key, **options)``; without, as
    ``factory(model=model, client_options=options)``."""
    key_env: str | None = None
    """The environment variable of the API key, or ``None`` when none is needed."""
    default_model: str | None = None
    """The model used when none is given (``None``: the client picks its own)."""
    default_base_url: str | None = None
    """The API root used when none is given."""
    takes_url: bool = True
    """Whether the provider takes ``base_url`` and ``api_key`` (the embedded model does not)."""


CATALOGUE: tuple[Provider, ...] = (
    Provider("local", "miniagent.providers.local:create_local_client", takes_url=False),
    Provider(
        "openai",
        "miniagent.providers.openai:OpenAIChatClient",
        key_env="OPENAI_API_KEY",
        default_model="gpt-4o-mini",
        default_base_url="https://api.openai.com/v1",
    ),
    Provider(
        "anthropic",
        "miniagent.providers.anthropic:AnthropicClient",
        key_env="ANTHROPIC_API_KEY",
        default_model="claude-sonnet-4-5",
        default_base_url="https://api.anthropic.com",
    ),
    Provider(
        "openai-responses",
        "miniagent.providers.responses:OpenAIResponsesClient",
        key_env="OPENAI_API_KEY",
        default_model="gpt-5-mini",
        default_base_url="https://api.openai.com/v1",
    ),
    Provider(
        "azure",  # the resource's URL and a deployment name are needed: no default for either
        "miniagent.providers.azure:create_azure_client",
        key_env="AZURE_OPENAI_API_KEY",
    ),
    Provider(
        "openrouter",
        "miniagent.providers.compatible:OpenRouterClient",
        key_env="OPENROUTER_API_KEY",
        default_model="openai/gpt-4o-mini",
        default_base_url="https://openrouter.ai/api/v1",
    ),
    Provider(
        "deepseek",
        "miniagent.providers.compatible:DeepSeekClient",
        key_env="DEEPSEEK_API_KEY",
        default_model="deepseek-chat",
        default_base_url="https://api.deepseek.com",
    ),
    Provider(
        "gemini",
        "miniagent.providers.gemini:GeminiClient",
        key_env="GEMINI_API_KEY",
        default_model="gemini-2.5-flash",
        default_base_url="https://generativelanguage.googleapis.com",
    ),
    Provider(
        "bedrock",
        "miniagent.providers.bedrock:BedrockClient",
        key_env="AWS_BEARER_TOKEN_BEDROCK",
        default_model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        default_base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    ),
)
"""Every provider, in the order they are listed to users."""

CHOSEN_BY_KEY = ("anthropic", "openai", "gemini", "bedrock")
"""With no provider named, the CLI takes the first of these whose key variable is set."""

FOR_BASE_URL = "openai"
"""With no provider named and no key set, a base URL means an OpenAI-compatible server."""

FALLBACK = "local"
"""With no provider named, no key set and no base URL: the embedded model."""

PROVIDERS = tuple(row.name for row in CATALOGUE)
"""The provider names ``create_client`` and ``--provider`` accept."""

_BY_NAME = {row.name: row for row in CATALOGUE}


def check_provider(name: str) -> str:
    """Return the provider ``name`` in its canonical form (surrounding spaces dropped, lowercase).

    Raises:
        ValueError: ``name`` is not one of ``PROVIDERS`` (the text lists them).
    """
    canonical = name.strip().lower()
    if canonical not in _BY_NAME:
        raise ValueError(f"unknown provider {name!r}: expected one of {', '.join(PROVIDERS)}")
    return canonical


def provider(name: str) -> Provider:
    """The row of provider ``name`` (any case, surrounding spaces ignored).

    Raises:
        ValueError: not a provider name (``check_provider``'s text).
    """
    return _BY_NAME[check_provider(name)]


def chosen_by_key(environ: Mapping[str, str], base_url: str | None = None) -> str:
    """The provider the CLI uses when none is named: the first of ``CHOSEN_BY_KEY`` whose key
    variable is set in ``environ`` -- where ``FOR_BASE_URL`` stands in that order, a given
    ``base_url`` chooses it too (an OpenAI-compatible server needs no key) --, else
    ``FALLBACK`` (the embedded model)."""
    for name in CHOSEN_BY_KEY:
        key_env = _BY_NAME[name].key_env
        if (key_env and environ.get(key_env)) or (base_url and name == FOR_BASE_URL):
            return name
    return FOR_BASE_URL if base_url else FALLBACK

