"""The one depth-safe JSON decode for text that comes from outside (standard library only).

Python's ``json`` recurses once per nesting level, in C, up to the interpreter's recursion limit:
a document nested a few thousand levels deep raises ``RecursionError`` (not a ``ValueError``), and
one nested a few hundred levels deep decodes, then breaks the next recursive step that meets it
(the input check, a session write, a provider's request body) at whatever stack depth that step
runs. So every place that decodes text a model, a server, a file or a session gave decodes it
here, and a document nested deeper than ``MAX_DEPTH`` arrays and objects is a ``JSONDepthError``
(a ``ValueError``, so callers that already refuse text that is not JSON refuse it the same way).

- ``loads(text, **kwargs)``: ``json.loads`` with the depth check (``kwargs`` as ``json.loads``).
- ``check_nesting(value)``: the check alone, on a decoded value, for a decoder that runs
  ``raw_decode`` itself (the session loader's fast path).

Invariants: ``json``'s own ``RecursionError`` becomes ``JSONDepthError``; a document of at most
``2 * MAX_DEPTH`` characters is never walked (it cannot nest deeper than ``MAX_DEPTH`` and still
be JSON); a longer one is walked once after decoding, level by level without recursion, touching
each array item and object value once (a long text that is mostly strings, such as a tool call's
file content, costs next to nothing). The verdict never depends on the caller's stack depth.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "MAY_NEST_TOO_DEEP", "JSONDepthError", "loads", "check_nesting"]

MAX_DEPTH = 256
"""The deepest nesting of arrays and objects accepted (``[[1]]`` nests 2 deep)."""

MAY_NEST_TOO_DEEP = 2 * MAX_DEPTH
"""Characters a JSON text needs before it can nest deeper than ``MAX_DEPTH``."""

_decode_plain = json.JSONDecoder().decode  # what json.loads runs for a str without options


class JSONDepthError(ValueError):
    """A JSON text nests arrays and objects deeper than ``MAX_DEPTH``."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def check_nesting(value: Any) -> None:
    """Raise ``JSONDepthError`` when the decoded JSON ``value`` nests arrays and objects deeper
    than ``MAX_DEPTH`` (a scalar nests 0 deep)."""
    level = [value] if type(value) is list or type(value) is dict else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise JSONDepthError()
        inner = []
        for container in level:
            for item in container.values() if type(container) is dict else container:
                kind = type(item)
                if kind is dict or kind is list:
                    inner.append(item)
        level = inner


def loads(text: str | bytes | bytearray, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` for text from outside: the same value and the same
    ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for text that is not JSON.

    Raises:
        JSONDepthError: the text nests deeper than ``MAX_DEPTH`` (a ``ValueError``), also when
            ``json`` runs out of stack on it first.
    """
    try:
        value = _decode_plain(text) if isinstance(text, str) and not kwargs else json.loads(text, **kwargs)
    except RecursionError:
        raise JSONDepthError() from None
    if len(text) > MAY_NEST_TOO_DEEP:
        check_nesting(value)
    return value
