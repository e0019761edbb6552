"""Turning provider error answers into ``ProviderError``s without leaking secrets.

Shapes understood (the error bodies the supported servers document):

- OpenAI and compatible servers: ``{"error": {"message": ..., "type": ..., "code": ...}}``
  (https://platform.openai.com/docs/guides/error-codes); llama.cpp and vLLM put an integer
  HTTP status in ``code``, some gateways (LiteLLM, Azure) the same status as a string
  (``"500"``), read as the number, and LiteLLM the text ``"None"`` in ``type``, read as no
  type; Ollama sends ``{"error": "text"}``.
- Anthropic: ``{"type": "error", "error": {"type": "overloaded_error", "message": ...}}``
  (https://docs.anthropic.com/en/api/errors), also as the data of an in-stream ``error`` event.
- Google's APIs (Gemini): ``{"error": {"code": 400, "message": ..., "status": "INVALID_ARGUMENT"}}``
  (https://ai.google.dev/gemini-api/docs/troubleshooting), also as the data of an event of a
  stream; ``status`` is the kind.
- FastAPI-style servers: ``{"detail": ...}``; an HTML page (a proxy's or web server's error
  page): its title or first heading; anything else: the start of the body text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from typing import Any

from .._json import loads
from .._redaction import redact
from .._text import shorten
from ..errors import ProviderError

__all__ = [
    "MAX_ERROR_CHARS",
    "NEVER_RETRYABLE_KINDS",
    "RETRYABLE_KINDS",
    "RETRYABLE_STATUSES",
    "error_details",
    "in_stream_error",
    "redact",
    "truncate",
]

MAX_ERROR_CHARS = 500
"""Longest provider message (characters) copied into an error text."""

RETRYABLE_STATUSES = frozenset((408, 409, 429))
"""HTTP statuses retried besides every 5xx (529 "overloaded" included)."""

RETRYABLE_KINDS = frozenset(
    (
        "overloaded_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "api_error",
        "server_error",
        "timeout_error",
        "internal_server_error",
        "service_unavailable",
        "unavailable_error",
    )
)
"""Provider error types (Anthropic ``error.type``, OpenAI ``error.type``/``code``) worth a retry."""

NEVER_RETRYABLE_KINDS = frozenset(("insufficient_quota", "billing_hard_limit_reached", "billing_error"))
"""Provider error types that no retry can fix although their status is retryable: OpenAI
answers a used-up quota with HTTP 429 ``insufficient_quota`` (not a rate limit: it lasts until
the bill is paid)."""

_NO_KIND = frozenset(("", "none", "null"))

_SPACES = re.compile(r"\s+")
_TAGS = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HEADING = re.compile(r"<h[1-3][^>]*>(.*?)</h[1-3]>", re.IGNORECASE | re.DOTALL)
_HIDDEN = re.compile(r"<(script|style|head)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def truncate(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Return ``text`` cut to at most ``limit`` characters, with the one marker when cut
    (``_text.shorten``)."""
    return shorten(text, limit)


def error_details(body: bytes, secrets: Iterable[str | None] = ()) -> tuple[str, str | None]:
    """Extract the provider's own message and error type from an error response body.

    Args:
        body: the (possibly cut) response body bytes.
        secrets: strings to redact (before the message is cut, so no part of one survives).

    Returns:
        ``(message, kind)``: the message (whitespace collapsed, at most ``MAX_ERROR_CHARS``
        characters, ``"(empty body)"`` when there is nothing) and the error type or ``None``.
        Redacted (``redact`` with ``secrets``) before it is cut to length.
    """
    text = body.decode("utf-8", "replace").strip()
    try:
        data: Any = loads(text)  # depth-safe: a deep body is a ValueError here too
    except ValueError:
        data = None
    if isinstance(data, dict):
        message, kind = _from_json(data)
        if message:
            return truncate(redact(_SPACES.sub(" ", message).strip(), secrets)), kind
    if "<" in text and ">" in text:
        text = _html_line(text)
    text = _SPACES.sub(" ", text).strip()
    return truncate(redact(text, secrets)) if text else "(empty body)", None


def _html_line(text: str) -> str:
    """One readable line from an HTML error page (a proxy's 502, nginx's 404): its ``<title>``,
    else its first heading, else its text without scripts, styles and tags; entities decoded."""
    for pattern in (_TITLE, _HEADING):
        found = pattern.search(text)
        if found and _TAGS.sub(" ", found.group(1)).strip():
            return html.unescape(_TAGS.sub(" ", found.group(1)))
    return html.unescape(_TAGS.sub(" ", _HIDDEN.sub(" ", text)))


def _from_json(data: dict[str, Any]) -> tuple[str, str | None]:
    """Message and kind from a decoded JSON error body (see the module docstring)."""
    err = data.get("error")
    if isinstance(err, dict):
        message = err.get("message")
        kind = _kind(err.get("type"))
        if kind is None:
            kind = _kind(err.get("code"))
        if kind is None:
            kind = _kind(err.get("status"))  # Google's APIs: "INVALID_ARGUMENT", "UNAVAILABLE"
        text = message if isinstance(message, str) else json.dumps(err, ensure_ascii=False)
        return text, kind
    if isinstance(err, str):
        return err, None
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str):
            return value, None
        if value is not None:
            return json.dumps(value, ensure_ascii=False), None
    return "", None


def _kind(value: Any) -> str | None:
    """An error ``type`` or ``code`` as a kind: a string that names something (not a number
    such as ``"500"``, not LiteLLM's ``"None"``), else ``None``."""
    if not isinstance(value, str) or value.strip().lower() in _NO_KIND or value.strip().isdigit():
        return None
    return value


def _status_code(value: Any) -> int | None:
    """An error ``code`` that is an HTTP status: an int, or a string of digits (``"500"``)."""
    if type(value) is int:
        return value
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 3:
        return int(value)
    return None


def in_stream_error(provider: str, data: Any, secrets: Iterable[str | None] = ()) -> ProviderError:
    """Build the error for an error object received inside a 200 event stream.

    Args:
        provider: display name (``"Anthropic"``, ``"OpenAI"``, ``"local model"``): the client's.
        data: the decoded event data: Anthropic ``{"type": "error", "error": {...}}`` or OpenAI
            style ``{"error": {...}}``.
        secrets: strings to redact from the message.

    Returns:
        A ``ProviderError`` (status ``None``) whose ``kind`` is the provider's error type and
        ``retryable`` is true for overload, rate-limit and server-side kinds, or a ``code``
        that is a retryable HTTP status (an int or its digits as a string, ``"500"``); never
        for ``NEVER_RETRYABLE_KINDS``.
    """
    err = data.get("error") if isinstance(data, dict) else None
    message, kind = _from_json(data) if isinstance(data, dict) else ("", None)
    code = _status_code(err.get("code")) if isinstance(err, dict) else None
    retryable = kind in RETRYABLE_KINDS or (
        code is not None and (code in RETRYABLE_STATUSES or code >= 500)
    )
    retryable = retryable and kind not in NEVER_RETRYABLE_KINDS
    text = truncate(redact(_SPACES.sub(" ", message or "unknown error").strip(), secrets))
    label = f" ({kind})" if kind else ""
    return ProviderError(f"{provider} stream error{label}: {text}", retryable=retryable, kind=kind)
