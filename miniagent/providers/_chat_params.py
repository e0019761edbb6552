"""The request parameters a chat-completions model accepts: the output limit and the temperature.

OpenAI's reasoning models (the o-series: ``o1``, ``o3``, ``o4-mini``...; the ``gpt-5`` family but
``gpt-5-chat``) refuse ``max_tokens`` ("Unsupported parameter: 'max_tokens' is not supported with
this model. Use 'max_completion_tokens' instead.") and any ``temperature`` but the default 1
("Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1)
value is supported."). OpenAI's API documents ``max_tokens`` as deprecated in favour of
``max_completion_tokens`` for every model.

The rule (``limit_field``, ``sends_temperature``):

- the output limit goes as ``max_completion_tokens`` to OpenAI's own API (``api.openai.com``)
  and Azure OpenAI (``*.openai.azure.com``, ``*.cognitiveservices.azure.com``) for every model,
  and to any server for a model named as an OpenAI reasoning model (``o3-mini``, ``gpt-5.1``: a
  gateway that passes the request on to OpenAI);
  everywhere else as ``max_tokens``, which DeepSeek, Ollama, OpenRouter, Gemini's
  OpenAI-compatible endpoint and every llama.cpp and vLLM release read (newer llama.cpp and vLLM
  read both; Ollama and DeepSeek only ``max_tokens``, and would silently ignore the other);
- ``temperature`` is not sent for an OpenAI reasoning model (named bare, or served by OpenAI or
  Azure), unless it is the default 1. A name with a vendor prefix (``openai/o3``) is a router's
  (OpenRouter, LiteLLM), which maps both parameters itself.

``extra_body`` is applied after these, so a caller can still send either field by hand.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .._log import Logger

__all__ = ["is_openai_reasoning_model", "limit_field", "openai_host", "sends_temperature", "temperature_sent"]

_log = Logger("miniagent.providers")

_REASONING_MODEL = re.compile(r"(?:o[134](?:-|$)|gpt-5(?![.\d]*-chat))", re.IGNORECASE)
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com")


def openai_host(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API or Azure OpenAI (they share the parameter rules)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(_AZURE_SUFFIXES)


def is_openai_reasoning_model(model: str) -> bool:
    """Whether ``model`` names an OpenAI reasoning model (``o1``, ``o3-mini``, ``o4-mini``,
    ``gpt-5``, ``gpt-5.1-codex``...; not ``gpt-5-chat-latest``, not ``openai/o3``)."""
    return _REASONING_MODEL.match(model) is not None


def limit_field(model: str, base_url: str) -> str:
    """The name the output-token limit is sent under: ``"max_completion_tokens"`` or
    ``"max_tokens"`` (see the module docstring)."""
    if openai_host(base_url) or is_openai_reasoning_model(model):
        return "max_completion_tokens"
    return "max_tokens"


def sends_temperature(model: str, base_url: str, temperature: float) -> bool:
    """Whether ``temperature`` goes in the request: not for an OpenAI reasoning model (named
    bare, or on OpenAI's or Azure's API), unless it is the default 1."""
    if temperature == 1:
        return True
    reasoning = is_openai_reasoning_model(model.rsplit("/", 1)[-1] if openai_host(base_url) else model)
    return not reasoning


def temperature_sent(provider: str, model: str, base_url: str, temperature: float | None) -> float | None:
    """``temperature`` when the request may carry it (``sends_temperature``), else ``None`` with a
    warning naming ``provider`` and the model (the OpenAI clients' constructors)."""
    if temperature is None or sends_temperature(model, base_url, temperature):
        return temperature
    _log.warning("%s: temperature %s not sent: %s accepts only the default", provider, temperature, model)
    return None
