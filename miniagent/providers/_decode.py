"""Decoding helpers for streamed payloads: event JSON and tool-call arguments."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ProviderError
from ._errors import redact, truncate
from .sse import SSEEvent

__all__ = ["load_event_json", "parse_tool_input"]

_loads = json.loads


def load_event_json(event: SSEEvent, provider: str, secrets: tuple[str, ...] = ()) -> Any:
    """Decode the JSON ``data`` of ``event``.

    Raises:
        ProviderError: the data is not valid JSON (the text names the JSON problem and shows the
            start of the data, credentials redacted). Marked retryable: in practice this is a
            stream cut or garbled in transit (e.g. the connection closed mid-line), which a new
            request may fix.
    """
    try:
        return _loads(event.data)
    except ValueError as exc:
        raise ProviderError(
            f"{provider} sent an event whose data is not valid JSON ({exc}): "
            f"{truncate(redact(event.data[:1000], secrets), 120)!r}",
            retryable=True,
        ) from None


def parse_tool_input(arguments: str) -> tuple[dict[str, Any], str | None]:
    """Decode streamed tool-call arguments into ``(input, input_error)``.

    Args:
        arguments: the concatenated argument text (OpenAI ``function.arguments`` fragments,
            Anthropic ``input_json_delta.partial_json`` pieces).

    Returns:
        ``(dict, None)`` for a JSON object; ``({}, None)`` for empty or blank text (both APIs
        send ``""`` for a call without arguments); ``({}, message)`` otherwise, where message is
        e.g. ``"arguments are not valid JSON: Expecting ',' delimiter: line 1 column 9"`` or
        ``"arguments must be a JSON object, got array"``.
    """
    if not arguments or arguments.isspace():
        return {}, None
    try:
        value = _loads(arguments)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON: {exc}"
    if isinstance(value, dict):
        return value, None
    return {}, f"arguments must be a JSON object, got {_json_type(value)}"


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"
