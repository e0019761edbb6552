"""Decoding helpers for streamed payloads: event JSON and tool-call arguments."""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

from .._json import JSONDepthError, loads
from ..errors import ProviderError
from ..net.sse import SSEEvent
from ..validation import json_type_name
from ._errors import redact, truncate

__all__ = [
    "MAX_TOKEN_COUNT",
    "count",
    "load_event_json",
    "named",
    "nonfinite_problem",
    "parse_tool_input",
]

_loads = loads  # depth-safe: a document nested too deeply is a ValueError (miniagent._json)

MAX_TOKEN_COUNT = 10**10
"""Largest token count taken from a usage object: far above any model's context window, so a
bigger one is a broken server, not a request."""


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _loads_strict(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``/``Infinity``/``-Infinity`` and numbers that overflow
    to infinity (``1e999``): none of them is JSON, and they would make the session and the
    CLI's ``--json`` output non-standard."""
    return _loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def load_event_json(event: SSEEvent, provider: str, secrets: tuple[str, ...] = ()) -> Any:
    """Decode the JSON ``data`` of ``event``.

    Raises:
        ProviderError: the data is not valid JSON (the text names the JSON problem and shows the
            start of the data, credentials redacted). Marked retryable: in practice this is a
            stream cut or garbled in transit (e.g. the connection closed mid-line), which a new
            request may fix; not so for data nested deeper than ``miniagent._json.MAX_DEPTH``.

    ``NaN``/``Infinity`` literals are accepted here (a stray one in an event field the agent
    does not use is harmless); values that reach the record are checked where they are taken
    (``parse_tool_input``, ``nonfinite_problem``).
    """
    try:
        return _loads(event.data)
    except ValueError as exc:
        raise ProviderError(
            f"{provider} sent an event whose data is not valid JSON ({exc}): "
            f"{truncate(redact(event.data[:1000], secrets), 120)!r}",
            retryable=not isinstance(exc, JSONDepthError),
        ) from None


def parse_tool_input(arguments: str) -> tuple[dict[str, Any], str | None]:
    """Decode streamed tool-call arguments into ``(input, input_error)``.

    Args:
        arguments: the concatenated argument text (OpenAI ``function.arguments`` fragments,
            Anthropic ``input_json_delta.partial_json`` pieces).

    Returns:
        ``(dict, None)`` for a JSON object, also when it was encoded twice (a JSON string whose
        content is the object's JSON text, as some servers send; one extra level only);
        ``({}, None)`` for empty or blank text (both APIs send ``""`` for a call without
        arguments); ``({}, message)`` otherwise, where message is
        e.g. ``"arguments are not valid JSON: Expecting ',' delimiter: line 1 column 9"``,
        ``"arguments are not valid JSON: NaN is not allowed"`` (also ``Infinity``,
        ``-Infinity``, and ``number 1e999 is out of range``: not JSON, Python's ``json`` would
        accept them) or ``"arguments must be a JSON object, got array"``.
    """
    if not arguments or arguments.isspace():
        return {}, None
    try:
        value = _loads_strict(arguments)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON: {exc}"
    if isinstance(value, str) and value.lstrip().startswith("{"):  # encoded twice
        try:
            inner = _loads_strict(value)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return inner, None
    if isinstance(value, dict):
        return value, None
    return {}, f"arguments must be a JSON object, got {json_type_name(value)}"


def nonfinite_problem(value: Any) -> str | None:
    """``None`` when ``value`` (decoded JSON) holds no NaN or infinite number, else the problem,
    e.g. ``"NaN is not allowed"`` (for a tool input taken whole from an event, such as Anthropic's
    ``content_block_start`` ``input``)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            if math.isnan(item):
                return "NaN is not allowed"
            return f"{'-' if item < 0 else ''}Infinity is not allowed"
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def named(data: Any, key: str) -> str | None:
    """``data[key]`` when ``data`` is an object and that is a non-empty string, else ``None``
    (a response's model or id, as the server named it)."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def count(value: Any, name: str = "count", provider: str = "the server") -> int:
    """A token count of a usage object: an int from 0 to ``MAX_TOKEN_COUNT`` as it is; a field
    the server left out (missing, ``null``) 0.

    Args:
        value: the decoded JSON value.
        name: the field's name, for the error text.
        provider: the client's display name, which the error text starts with.

    Raises:
        ProviderError: anything else (a string, a fractional or float number, a boolean, a
            negative number, a number above ``MAX_TOKEN_COUNT``): a count that cannot be
            trusted is never taken as zero, and never reaches the pricer.
    """
    if type(value) is int and 0 <= value <= MAX_TOKEN_COUNT:
        return value
    if value is None:
        return 0
    if type(value) is int and value.bit_length() > 64:  # never turned into 400 digits of text
        shown = f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"  # log10(2)
    else:
        shown = truncate(json.dumps(value, ensure_ascii=False), 60)
    raise ProviderError(f"{provider} reported usage {name} = {shown}, which is not a token count")
