"""The embedded model as a ``ModelClient`` that owns its server: ``create_local_client``.

``create_local_client(model=None, *, api="native", ...)`` starts a ``LocalServer`` and returns a
``LocalModelClient``, whose ``close()`` also stops the server; ``create_client("local", ...)``
calls it. ``grammar_when_safe`` decides when the OpenAI/Anthropic paths may ask llama.cpp for a
grammar of the output schema (the native client constrains each turn itself).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from ...model import ModelClient, ModelEvent, ModelRequest
from ...output import is_feedback, with_output_instruction
from .model_file import Api, LocalModelError, cache_dir
from .server import LocalServer

__all__ = ["LocalModelClient", "create_local_client", "grammar_when_safe"]


class LocalModelClient:
    """A ``ModelClient`` that owns its ``LocalServer``: ``close()`` stops the server.

    Args:
        server: the running server.
        client: a client bound to it (from ``server.openai_client()`` or ``anthropic_client()``).

    Attributes:
        server: the ``LocalServer``; ``server.base_url`` tells where it listens.
        api: ``"openai"`` or ``"anthropic"``, the endpoint the client speaks to.
    """

    def __init__(self, server: LocalServer, client: ModelClient, api: Api = "native") -> None:
        self.server = server
        self.api: Api = api
        self._client = client

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Yield the events of one assistant turn (delegates to the wrapped client).

        Raises:
            LocalModelError: the server was closed.
            ProviderError: whatever the wrapped HTTP client raises.
        """
        if not self.server.running:
            raise LocalModelError("the local model server is closed")
        if self.api != "native":  # the native client constrains each turn itself
            request = grammar_when_safe(request)
        events: Iterable[ModelEvent] = self._client.stream(request)
        yield from events

    @property
    def model(self) -> str:
        """The model's name: its GGUF file's name without ``.gguf`` (what traces and logs name,
        as ``model`` of the HTTP clients)."""
        return self.server.model_path.name.removesuffix(".gguf")

    def can_price(self) -> bool:
        """``True``: the embedded model costs nothing (its clients price with ``LOCAL_PRICES``,
        so a cost budget is never refused for it)."""
        return True

    def close(self) -> None:
        """Close the wrapped client (when it has ``close()``) and stop the server. Idempotent."""
        closer = getattr(self._client, "close", None)
        if callable(closer):
            closer()
        self.server.close()

    def __enter__(self) -> LocalModelClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalModelClient(api={self.api!r}, server={self.server!r})"


def grammar_when_safe(request: ModelRequest) -> ModelRequest:
    """Decide whether this turn asks llama.cpp for a grammar from ``request.output_schema``.

    llama.cpp turns ``response_format`` into a grammar over the whole reply, which leaves no room
    for a tool call (measured: with tools and a schema, the model answers JSON and never calls).
    So a turn with tools is constrained only after an invalid answer (the last message is the
    loop's feedback, ``output.is_feedback``): the model cannot fail twice. Other turns with tools
    get the schema as a system-prompt instruction instead. Without tools, every turn is
    constrained.
    """
    schema = request.output_schema
    if schema is None or not request.tools:
        return request
    if request.messages and is_feedback(request.messages[-1]):
        return request
    system = with_output_instruction(request.system, schema)
    return dataclasses.replace(request, system=system, output_schema=None)


def create_local_client(
    model: str | os.PathLike[str] | None = None,
    *,
    api: Api = "native",
    client_options: dict[str, Any] | None = None,
    **server_options: Any,
) -> LocalModelClient:
    """Start the embedded model and return a client that speaks to it.

    This is what ``create_client("local", model=...)`` calls. Blocks until the server is healthy
    (first use of the default model also downloads it: ~93 MB, progress on stderr).

    Args:
        model: ``None`` for the default SmolLM2-135M-Instruct, or a path to a ``.gguf`` file.
        api: ``"native"`` (default: llama.cpp's ``/completion`` with miniagent's prompt,
            demos, grammar and the prompt cache on disk, see ``native``); or
            ``"openai"`` (``/v1/chat/completions``) or ``"anthropic"`` (``/v1/messages``),
            both with the chat template of ``template`` (the model then writes free
            text and free arguments: right on about 1 task in 10).
        client_options: keyword arguments for the client (``LocalChatClient``,
            ``OpenAIChatClient`` or ``AnthropicClient``), e.g. ``max_tokens``, ``stream_timeout``.
        **server_options: keyword arguments for ``LocalServer`` (``n_ctx``, ``threads``,
            ``seed``, ``temperature``, ``startup_timeout``, ``verbose``, ``prompt_cache``, ...).
            ``prompt_cache`` defaults to ``cache_dir()/prompt-cache`` for the native API.

    Returns:
        A ``LocalModelClient``; call ``close()`` (or use ``with``) to stop the server. It also
        stops at interpreter exit, and when this process dies.

    Raises:
        LocalModelError: see ``LocalServer``.
        ValueError: ``api`` is not ``"native"``, ``"openai"`` or ``"anthropic"``.
    """
    if api not in ("native", "openai", "anthropic"):
        raise ValueError(f"api must be 'native', 'openai' or 'anthropic', not {api!r}")
    if api == "native":
        server_options.setdefault("prompt_cache", cache_dir() / "prompt-cache")
    server = LocalServer(model, **server_options)
    try:
        client = server.client(api, **(client_options or {}))
    except BaseException:
        server.close()
        raise
    return LocalModelClient(server, client, api)
