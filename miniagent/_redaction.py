"""Redacting secret values from text (standard library only): the one home for it.

Two callers, one rule set:

- the built-in tools (``toolbox``) hide the values of secret environment variables in every result
  (``redactor(values)``; which variables are secrets is ``process.environment``'s rule);
- the providers hide the API key and any credential a server echoes back in an error body
  (``redact(text, secrets)``: the given strings, ``Bearer`` tokens and ``x-api-key`` /
  ``api_key`` / ``authorization`` values, and the user info and query of any URL:
  ``hide_url_secrets``).

Invariants: every hidden value becomes ``REDACTED`` (``***``); longer values win when one contains
another; redaction runs on the whole text *before* it is shortened (``_text``), so a cut never
leaves a part of a secret that no longer matches; where only pieces of a text are at hand, each
piece's cut edges are cleared of runs of at least ``MIN_REDACTED_CHARS`` characters of a secret
(``Redactor.edges``). Limit: a secret split over a cut leaves at most 7 of its characters on
either side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["REDACTED", "MIN_REDACTED_CHARS", "Redactor", "hide_url_secrets", "redactor", "redact"]

REDACTED = "***"
MIN_REDACTED_CHARS = 8
"""Shortest environment value worth hiding: shorter ones (``1``, ``true``) would blank ordinary
output and are too short to be real keys."""

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_API_KEY_FIELD = re.compile(r"(?i)((?:x-api-key|api[-_]key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+")
_URL_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/?#@'\"<>]*@")
# The query ends where the URL does: punctuation that ends the sentence (``;``, ``,``, ``.``...)
# right before a space or the end stays, so the text after the URL keeps its shape.
_URL_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#'\"<>]*)\?[^\s#'\"<>]*?(?=[;,.:!)]*(?:[\s#'\"<>]|$))")


def hide_url_secrets(text: str) -> str:
    """``text`` with the user info (``user:pass@``) and the query (``?...``) of every URL in it
    (``scheme://...``) replaced by ``***``."""
    text = _URL_USERINFO.sub(r"\1" + REDACTED + "@", text)
    return _URL_QUERY.sub(r"\1?" + REDACTED, text)


class Redactor:
    """Replaces secret values in text, whole and as fragments at the edges of a cut.

    Calling it replaces every occurrence of a value with ``***`` (longer values win when one
    contains another): apply it to a whole text *before* cutting it. When only a piece of a text
    is at hand (a window of a long line, a page of lines, the two ends of a large file or of a
    long command output), a value may straddle the piece's edge; ``edges`` then also hides the
    run of at least ``MIN_REDACTED_CHARS`` characters at a cut edge that is a part of a value.

    Args:
        values: the texts to hide (e.g. ``process.environment.secret_values``); empty strings
            are ignored.
    """

    def __init__(self, values: Iterable[str]) -> None:
        self.values = sorted({value for value in values if value}, key=lambda value: (-len(value), value))
        alternatives = "|".join(re.escape(value) for value in self.values)
        self._pattern = re.compile(alternatives) if self.values else None

    def __bool__(self) -> bool:
        return bool(self.values)

    def __call__(self, text: str) -> str:
        """``text`` with every whole value replaced by ``***``."""
        return text if self._pattern is None else self._pattern.sub(REDACTED, text)

    def _part_length(self, text: str, at_end: bool) -> int:
        """Length of the longest run at the start (or end) of ``text`` that is part of a value
        and at least ``MIN_REDACTED_CHARS`` long; 0 when there is none."""
        best = 0
        for value in self.values:
            for length in range(min(len(text), len(value)), max(best, MIN_REDACTED_CHARS - 1), -1):
                run = text[len(text) - length :] if at_end else text[:length]
                if run in value:
                    best = length
                    break
        return best

    def edges(self, text: str, *, start: bool = False, end: bool = False) -> str:
        """``text`` (a piece cut out of a longer text) with whole values and, at each cut edge
        (``start``: the text before it was cut away; ``end``: the text after it), a run of at
        least ``MIN_REDACTED_CHARS`` characters that is part of a value replaced by ``***``."""
        text = self(text)
        if not self.values:
            return text
        if end:
            length = self._part_length(text, at_end=True)
            if length:
                text = text[: len(text) - length] + REDACTED
        if start:
            length = self._part_length(text, at_end=False)
            if length:
                text = REDACTED + text[length:]
        return text


def redactor(values: Iterable[str]) -> Redactor:
    """Return a ``Redactor`` of ``values``: a function that replaces every occurrence of any of
    them with ``***`` (longer values win), with ``edges`` for pieces of a text."""
    return Redactor(values)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove credentials from ``text`` (provider error bodies, exception texts).

    Args:
        text: any text that may echo request headers.
        secrets: exact strings to hide (the API key); empty or ``None`` entries are skipped.

    Returns:
        ``text`` with every secret, ``Bearer`` token, ``x-api-key``/``authorization`` value and
        the user info and query of every URL replaced by ``***``.
    """
    text = Redactor(secret for secret in secrets if secret)(text)
    text = _BEARER.sub(r"\1" + REDACTED, text)
    return hide_url_secrets(_API_KEY_FIELD.sub(r"\1" + REDACTED, text))
