"""Messages, tools and names in the forms of the OpenTelemetry GenAI semantic conventions
(standard library only; ``miniagent.otel`` puts them on spans).

Invariants:

- Content (message texts, tool arguments and results, the system prompt) is only ever built
  here on request: ``miniagent.otel`` calls these only when content capture is on.
- The message forms follow the conventions' JSON schemas (``gen-ai-input-messages.json``,
  ``gen-ai-output-messages.json``): a list of ``{"role", "parts"}`` objects whose parts are
  ``text``, ``reasoning``, ``tool_call`` and ``tool_call_response``, serialised as JSON strings
  (span attributes hold no nested objects).
- ``provider_name`` gives each catalogue client its conventions' ``gen_ai.provider.name`` (a
  well-known value where one applies), from the client's class, never from its settings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from .messages import Message, ToolCall
from .model import ModelClient

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "capture_content_from_env",
    "input_messages",
    "output_messages",
    "provider_name",
    "server_of",
    "system_instructions",
    "tool_arguments",
    "tool_definitions",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})

# gen_ai.provider.name per client class (the conventions' well-known values where one applies).
_PROVIDERS = {
    "OpenAIChatClient": "openai",
    "OpenAIResponsesClient": "openai",
    "AnthropicClient": "anthropic",
    "GeminiClient": "gcp.gemini",
    "BedrockClient": "aws.bedrock",
    "AzureChatClient": "azure.ai.openai",
    "AzureResponsesClient": "azure.ai.openai",
    "OpenRouterClient": "openrouter",
    "DeepSeekClient": "deepseek",
    "LocalModelClient": "llama.cpp",
    "LocalChatClient": "llama.cpp",
    "LocalOpenAIClient": "llama.cpp",
    "LocalAnthropicClient": "llama.cpp",
}


def capture_content_from_env(environ: dict[str, str] | None = None) -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content: ``true``
    (or ``1``, ``yes``, and the newer ``span_only`` / ``span_and_event``), any case; unset or
    anything else is off."""
    value = (os.environ if environ is None else environ).get(CAPTURE_CONTENT_ENV, "")
    return value.strip().lower() in _CAPTURE_ON


def provider_name(client: ModelClient) -> str:
    """``gen_ai.provider.name`` of ``client``: its ``gen_ai_provider`` attribute when it has one,
    else the value for its class (or the nearest catalogue class it derives from), else the
    class name in lower case (a custom value, as the conventions allow)."""
    own = getattr(client, "gen_ai_provider", None)
    if isinstance(own, str) and own:
        return own
    for klass in type(client).__mro__:
        name = _PROVIDERS.get(klass.__name__)
        if name is not None:
            return name
    return type(client).__name__.lower()


def server_of(client: ModelClient) -> tuple[str, int] | None:
    """``(server.address, server.port)`` from the client's ``base_url``, or ``None`` without one
    (the port is the scheme's default when the URL names none)."""
    base_url = getattr(client, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return None
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def system_instructions(system: str) -> str:
    """``gen_ai.system_instructions``: the system prompt as one text part."""
    return _json([{"type": "text", "content": system}])


def _call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": dict(call.input)}


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        part = {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = [
        {"type": "reasoning", "content": r.text} for r in message.reasoning if r.text
    ]
    if message.content:
        parts.append({"type": "text", "content": message.content})
    parts.extend(_call_part(call) for call in message.tool_calls)
    return {"role": message.role, "parts": parts}


def input_messages(messages: Iterable[Message]) -> str:
    """``gen_ai.input.messages``: the messages sent, oldest first."""
    return _json([_message(m) for m in messages])


def output_messages(text: str, calls: Sequence[ToolCall], finish_reason: str | None) -> str:
    """``gen_ai.output.messages``: one assistant message of the turn's text and calls."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts.extend(_call_part(call) for call in calls)
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish_reason:
        message["finish_reason"] = finish_reason
    return _json([message])


def tool_definitions(tools: Iterable[Any]) -> str:
    """``gen_ai.tool.definitions``: type, name and description of each tool (no schemas)."""
    return _json([{"type": "function", "name": t.name, "description": t.description} for t in tools])


def tool_arguments(call: ToolCall) -> str:
    """``gen_ai.tool.call.arguments``: the call's input as a JSON object."""
    return _json(dict(call.input))
