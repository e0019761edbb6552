"""The one depth-safe JSON decode for text that comes from outside (standard library only).

Python's ``json`` recurses once per nesting level, in C, up to the interpreter's recursion limit:
a document nested a few thousand levels deep raises ``RecursionError`` (not a ``ValueError``), and
one nested a few hundred levels deep decodes, then breaks the next recursive step that meets it
(the input check, a session write, a provider's request body) at whatever stack depth that step
runs. So every place that decodes text a model, a server, a file or a session gave decodes it
here, and a document nested deeper than ``MAX_DEPTH`` arrays and objects is a ``JSONDepthError``
(a ``ValueError``, so callers that already refuse text that is not JSON refuse it the same way).

- ``loads(text, **kwargs)``: ``json.loads`` with the depth check (``kwargs`` as ``json.loads``).
- ``check_depth(text, start, end)``: the check alone, for a decoder that runs ``raw_decode``
  itself (the session loader's fast path, after each document).

Invariants: a document of at most ``2 * MAX_DEPTH`` characters is never scanned (it cannot nest
deeper than ``MAX_DEPTH`` and still be JSON), nor is a longer one with at most ``MAX_DEPTH``
brackets in all (two ``str.count`` calls, C speed); only a text with more brackets than that is
scanned: strings removed, then the running depth of what is left, all in linear time (a text
that is not JSON is scanned as far as it goes and then left to ``json.loads`` to refuse). The
verdict never depends on the caller's own stack depth.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "JSONDepthError", "loads", "check_depth", "json_depth"]

MAX_DEPTH = 256
"""The deepest nesting of arrays and objects accepted (``[[1]]`` nests 2 deep)."""

_SHORT = 2 * MAX_DEPTH  # a valid document this short nests at most MAX_DEPTH deep

# A string literal, unterminated ones included (they run to the end): never backtracks, so the
# scan stays linear whatever the text.
_STRING = re.compile(r'"[^"\\]*(?:\\(?s:.)?[^"\\]*)*(?:"|\Z)')
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\(?s:.)?[^"\\]*)*(?:"|\Z)')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_BYTES = re.compile(rb"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_STEP_BYTES = [0] * 256
_STEP_BYTES[ord("[")] = _STEP_BYTES[ord("{")] = 1
_STEP_BYTES[ord("]")] = _STEP_BYTES[ord("}")] = -1


class JSONDepthError(ValueError):
    """A JSON text nests arrays and objects deeper than ``MAX_DEPTH``.

    Attributes:
        depth: the depth found (at least ``MAX_DEPTH + 1``; ``None`` when ``json`` itself ran out
            of stack first).
    """

    def __init__(self, depth: int | None) -> None:
        if depth is None:
            super().__init__("JSON nested too deeply to decode")
        else:
            super().__init__(f"JSON nested {depth} levels deep (at most {MAX_DEPTH} are accepted)")
        self.depth = depth


def json_depth(text: str | bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """How deep the arrays and objects of the JSON text ``text[start:end]`` nest (``0`` for a
    scalar), counting brackets outside strings; linear time, also for text that is not JSON."""
    piece = text[start:end] if start or end is not None else text
    if isinstance(piece, str):
        brackets: Any = _NOT_BRACKET.sub("", _STRING.sub("", piece))
        steps: Any = map(_STEP.__getitem__, brackets)
    else:
        brackets = _NOT_BRACKET_BYTES.sub(b"", _STRING_BYTES.sub(b"", piece))
        steps = map(_STEP_BYTES.__getitem__, brackets)
    return max(accumulate(steps), default=0)


def check_depth(text: str | bytes | bytearray, start: int = 0, end: int | None = None) -> None:
    """Raise ``JSONDepthError`` when the JSON text ``text[start:end]`` nests deeper than
    ``MAX_DEPTH``; return at once for a short text or one with few brackets (module docstring)."""
    stop = len(text) if end is None else end
    if stop - start <= _SHORT:
        return
    if isinstance(text, str):
        brackets = text.count("[", start, stop) + text.count("{", start, stop)
    else:
        brackets = text.count(b"[", start, stop) + text.count(b"{", start, stop)
    if brackets <= MAX_DEPTH:
        return
    depth = json_depth(text, start, stop)
    if depth > MAX_DEPTH:
        raise JSONDepthError(depth)


def loads(text: str | bytes | bytearray, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` for text from outside: the same value and the same
    ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for text that is not JSON.

    Raises:
        JSONDepthError: the text nests deeper than ``MAX_DEPTH`` (a ``ValueError``), also when
            ``json`` runs out of stack on it first.
    """
    check_depth(text)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise JSONDepthError(None) from None
