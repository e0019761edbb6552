"""OpenAI-compatible services named in the catalogue: OpenRouter and DeepSeek.

Each is ``OpenAIChatClient`` (chat completions, with everything it reads and sends back: the
reasoning text, OpenRouter's ``reasoning_details``, DeepSeek's ``reasoning_content``) with the
service's URL, its own key variable and its name in error texts; so ``--provider deepseek`` saves
``--base-url`` and never sends ``OPENAI_API_KEY`` to another service.
"""

from __future__ import annotations

from typing import Any

from .._catalogue import provider
from .openai import OpenAIChatClient

__all__ = ["DeepSeekClient", "OpenRouterClient"]

_OPENROUTER = provider("openrouter")
_DEEPSEEK = provider("deepseek")


class OpenRouterClient(OpenAIChatClient):
    """``OpenAIChatClient`` for OpenRouter (https://openrouter.ai/docs/api-reference/overview).

    Args:
        model: a model name as OpenRouter lists it (``"openai/gpt-4o-mini"``).
        base_url: default ``https://openrouter.ai/api/v1``.
        api_key: default ``$OPENROUTER_API_KEY``.
        **options: the keyword arguments of ``OpenAIChatClient`` (``settings``, ``temperature``,
            ``max_tokens``, ``tool_call_markup``, ``prices``).

    Raises:
        ProviderError: no API key; ValueError: see ``OpenAIChatClient``.
    """

    _provider = "OpenRouter"
    _key_env = _OPENROUTER.key_env or ""

    def __init__(
        self,
        model: str,
        base_url: str = _OPENROUTER.default_base_url or "",
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        super().__init__(model, base_url, api_key, **options)


class DeepSeekClient(OpenAIChatClient):
    """``OpenAIChatClient`` for DeepSeek (https://api-docs.deepseek.com/): thinking mode's
    ``reasoning_content`` is kept and sent back on the turn that carried it.

    Args:
        model: ``"deepseek-chat"`` or ``"deepseek-reasoner"``.
        base_url: default ``https://api.deepseek.com``.
        api_key: default ``$DEEPSEEK_API_KEY``.
        **options: the keyword arguments of ``OpenAIChatClient``.

    Raises:
        ProviderError: no API key; ValueError: see ``OpenAIChatClient``.
    """

    _provider = "DeepSeek"
    _key_env = _DEEPSEEK.key_env or ""

    def __init__(
        self,
        model: str,
        base_url: str = _DEEPSEEK.default_base_url or "",
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        super().__init__(model, base_url, api_key, **options)
