"""The embedded model's OpenAI- and Anthropic-compatible clients: the HTTP clients, named for it.

Invariant: every error text these clients produce (HTTP and connection errors, undecodable
events, in-stream errors, a stream that ends early, a stream timeout) starts with
``"local model"``, never ``"OpenAI"`` or ``"Anthropic"``. The wire format, request bodies and
events are exactly the base clients'.

``LocalServer.openai_client()`` / ``anthropic_client()`` build them against the running server;
they can also be built against any ``base_url`` (a test's loopback server), no model needed.
"""

from __future__ import annotations

from ..anthropic import AnthropicClient
from ..openai import OpenAIChatClient

__all__ = ["PROVIDER", "LocalAnthropicClient", "LocalOpenAIClient"]

PROVIDER = "local model"
"""The provider name in the error texts of the embedded model's clients."""


class LocalOpenAIClient(OpenAIChatClient):
    """An ``OpenAIChatClient`` (same arguments) for the embedded llama.cpp server's
    ``/v1/chat/completions``, whose errors name the local model."""

    _provider = PROVIDER

    def __repr__(self) -> str:
        """``LocalOpenAIClient(model=..., base_url=...)``."""
        return f"LocalOpenAIClient(model={self.model!r}, base_url={self.base_url!r})"


class LocalAnthropicClient(AnthropicClient):
    """An ``AnthropicClient`` (same arguments) for the embedded llama.cpp server's
    ``/v1/messages``, whose errors name the local model."""

    _provider = PROVIDER

    def __repr__(self) -> str:
        """``LocalAnthropicClient(model=..., base_url=...)``."""
        return f"LocalAnthropicClient(model={self.model!r}, base_url={self.base_url!r})"
