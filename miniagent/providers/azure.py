"""Azure OpenAI's v1 API: chat completions or the Responses API of one Azure resource.

Wire format: https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle (the v1
API: ``https://RESOURCE.openai.azure.com/openai/v1``, the same bodies and events as OpenAI's, no
``api-version``), the model named by its deployment. Authentication: the resource's key in the
``api-key`` header, or a Microsoft Entra ID token as ``Authorization: Bearer`` (what the official
SDK calls ``azure_ad_token``).

Invariants: the resource's URL is always given (``base_url``, else ``$AZURE_OPENAI_ENDPOINT``);
the model is always given (a deployment name has no default); the key or token is a secret of the
transport like any key (never in a text); neither ``OPENAI_API_KEY`` nor any other provider's key
is ever sent.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Literal

from .._catalogue import provider
from ..errors import ProviderError
from ._config import HTTPSettings, is_local_url
from .openai import OpenAIChatClient
from .responses import OpenAIResponsesClient

__all__ = [
    "AZURE_ENDPOINT_ENV",
    "AZURE_TOKEN_ENV",
    "AzureChatClient",
    "AzureResponsesClient",
    "azure_base_url",
    "create_azure_client",
]

_ROW = provider("azure")
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
"""The resource's endpoint (``https://RESOURCE.openai.azure.com``) when no ``base_url`` is given."""
AZURE_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"
"""A Microsoft Entra ID token, used when no key is given or set."""
_V1_PATH = "/openai/v1"
PROVIDER = "Azure OpenAI"


def azure_base_url(base_url: str | None) -> str:
    """The v1 API root of the resource: ``base_url``, else ``$AZURE_OPENAI_ENDPOINT``; a bare
    resource URL (no path) gets ``/openai/v1``.

    Raises:
        ValueError: neither is given (the text says how to name the resource).
    """
    url = base_url or os.environ.get(AZURE_ENDPOINT_ENV) or ""
    url = url.strip().rstrip("/")
    if not url:
        raise ValueError(
            "azure needs the resource's URL: base_url='https://RESOURCE.openai.azure.com/openai/v1' "
            f"(the CLI: --base-url) or set {AZURE_ENDPOINT_ENV}"
        )
    _scheme, _, rest = url.partition("://")
    if rest and "/" not in rest:
        url += _V1_PATH
    return url


def _credential(api_key: str | None, azure_ad_token: str | None, base_url: str) -> tuple[str | None, bool]:
    """``(secret, is_token)``: ``api_key``, else ``azure_ad_token``, else ``$AZURE_OPENAI_API_KEY``,
    else ``$AZURE_OPENAI_AD_TOKEN`` (the official SDK's order); ``(None, False)`` lets the base
    client read the key variable (and say it is missing).

    Raises:
        ProviderError: none of them for a server that is not on this machine.
    """
    if api_key:
        return api_key, False
    if azure_ad_token:
        return azure_ad_token, True
    if os.environ.get(_ROW.key_env or "") or is_local_url(base_url):
        return None, False
    token = os.environ.get(AZURE_TOKEN_ENV)
    if token:
        return token, True
    raise ProviderError(
        f"no {PROVIDER} credential: pass api_key=... or azure_ad_token=..., or set "
        f"{_ROW.key_env} (the resource's key) or {AZURE_TOKEN_ENV} (a Microsoft Entra ID token)"
    )


def _auth(key: str, is_token: bool) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if is_token else {"api-key": key}


class AzureChatClient(OpenAIChatClient):
    """``OpenAIChatClient`` for an Azure OpenAI resource (``POST {base_url}/chat/completions``).

    Args:
        model: the deployment name.
        base_url: the v1 API root (``azure_base_url``).
        api_key: the resource's key (``api-key`` header); default ``$AZURE_OPENAI_API_KEY``.
        azure_ad_token: a Microsoft Entra ID token (``Authorization: Bearer``), used when no key
            is given or set; default ``$AZURE_OPENAI_AD_TOKEN``.
        **options: the keyword arguments of ``OpenAIChatClient``.

    Raises:
        ValueError: no resource URL; ProviderError: no key and no token.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        azure_ad_token: str | None = None,
        **options: Any,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        url = azure_base_url(base_url)
        key, self._is_token = _credential(api_key, azure_ad_token, url)
        super().__init__(model, url, key, **options)

    def _auth_headers(self, key: str) -> dict[str, str]:
        return _auth(key, self._is_token)

    def __repr__(self) -> str:
        """``AzureChatClient(model=..., base_url=...)``; never shows the key."""
        return f"AzureChatClient(model={self.model!r}, base_url={self.base_url!r})"


class AzureResponsesClient(OpenAIResponsesClient):
    """``OpenAIResponsesClient`` for an Azure OpenAI resource (``POST {base_url}/responses``,
    stateless, encrypted reasoning replayed).

    Args: as ``AzureChatClient``; ``**options``: the keyword arguments of
    ``OpenAIResponsesClient`` (``reasoning_effort``, ``encrypted_reasoning``...).

    Raises:
        ValueError: no resource URL, a bad option; ProviderError: no key and no token.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        azure_ad_token: str | None = None,
        **options: Any,
    ) -> None:
        """Configure the client; no connection is made until ``stream``."""
        url = azure_base_url(base_url)
        key, self._is_token = _credential(api_key, azure_ad_token, url)
        super().__init__(model, url, key, **options)

    def _auth_headers(self, key: str) -> dict[str, str]:
        return _auth(key, self._is_token)


def create_azure_client(
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    api: Literal["chat", "responses"] = "chat",
    azure_ad_token: str | None = None,
    reasoning_effort: str | None = None,
    settings: HTTPSettings | None = None,
    **options: Any,
) -> AzureChatClient | AzureResponsesClient:
    """The Azure OpenAI client for ``api`` (the catalogue's factory of ``"azure"``).

    Args:
        model: the deployment name (required).
        base_url: the v1 API root, or the resource's URL (``azure_base_url``).
        api_key: the resource's key; see ``AzureChatClient`` for the token.
        api: ``"chat"`` (chat completions, default) or ``"responses"`` (the Responses API).
        reasoning_effort: the Responses API's ``reasoning.effort``; for chat, sent as
            ``reasoning_effort`` (what chat completions call it).
        settings: the HTTP settings.
        **options: the other keyword arguments of the chosen client.

    Raises:
        ValueError: no model, no resource URL, an ``api`` not in ``("chat", "responses")``.
        ProviderError: no key and no token.
    """
    if not model:
        raise ValueError("azure needs the deployment name as the model (model=...; the CLI: --model NAME)")
    if api == "responses":
        return AzureResponsesClient(
            model,
            base_url,
            api_key,
            azure_ad_token=azure_ad_token,
            reasoning_effort=reasoning_effort,
            settings=settings,
            **options,
        )
    if api != "chat":
        raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
    if reasoning_effort is not None:
        settings = settings if settings is not None else HTTPSettings()
        settings = replace(settings, extra_body={"reasoning_effort": reasoning_effort, **settings.extra_body})
    return AzureChatClient(
        model, base_url, api_key, azure_ad_token=azure_ad_token, settings=settings, **options
    )
