"""Redacting secret values from text (standard library only): the one home for it.

Two callers, one rule set:

- the built-in tools (``toolbox``) hide the values of secret environment variables in every result
  (``redactor(values)``; which variables are secrets is ``toolbox.environment``'s rule);
- the providers hide the API key and any credential a server echoes back in an error body
  (``redact(text, secrets)``: the given strings, ``Bearer`` tokens and ``x-api-key`` /
  ``api_key`` / ``authorization`` values, and the user info and query of any URL:
  ``hide_url_secrets``).

Invariants: every hidden value becomes ``REDACTED`` (``***``); longer values win when one contains
another; redaction runs on the whole text *before* it is shortened (``_text``), so a cut never
leaves a part of a secret that no longer matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["REDACTED", "MIN_REDACTED_CHARS", "hide_url_secrets", "redactor", "redact"]

REDACTED = "***"
MIN_REDACTED_CHARS = 8
"""Shortest environment value worth hiding: shorter ones (``1``, ``true``) would blank ordinary
output and are too short to be real keys."""

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_API_KEY_FIELD = re.compile(r"(?i)((?:x-api-key|api[-_]key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+")
_URL_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/?#@'\"<>]*@")
_URL_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#'\"<>]*)\?[^\s#'\"<>]*")


def hide_url_secrets(text: str) -> str:
    """``text`` with the user info (``user:pass@``) and the query (``?...``) of every URL in it
    (``scheme://...``) replaced by ``***``."""
    text = _URL_USERINFO.sub(r"\1" + REDACTED + "@", text)
    return _URL_QUERY.sub(r"\1?" + REDACTED, text)


def redactor(values: Iterable[str]) -> Callable[[str], str]:
    """Return a function that replaces every occurrence of any of ``values`` with ``***``.

    Args:
        values: the texts to hide (e.g. ``toolbox.environment.secret_values``); empty strings
            are ignored.

    Returns:
        ``text -> text``; the identity when there is nothing to hide. Longer values win when
        one value contains another.
    """
    ordered = sorted({value for value in values if value}, key=lambda value: (-len(value), value))
    if not ordered:
        return lambda text: text
    pattern = re.compile("|".join(re.escape(value) for value in ordered))
    return lambda text: pattern.sub(REDACTED, text)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove credentials from ``text`` (provider error bodies, exception texts).

    Args:
        text: any text that may echo request headers.
        secrets: exact strings to hide (the API key); empty or ``None`` entries are skipped.

    Returns:
        ``text`` with every secret, ``Bearer`` token, ``x-api-key``/``authorization`` value and
        the user info and query of every URL replaced by ``***``.
    """
    text = redactor(secret for secret in secrets if secret)(text)
    text = _BEARER.sub(r"\1" + REDACTED, text)
    return hide_url_secrets(_API_KEY_FIELD.sub(r"\1" + REDACTED, text))
