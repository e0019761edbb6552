"""Text for display: shortening with one marker, and lone surrogates (standard library only).

Shortening (every place that cuts text for a person or a model uses these, so there is one marker):

- ``omission_note(chars)`` is the marker: ``[... N characters left out ...]`` with the exact
  number ``N`` (``[... N characters and M bytes left out ...]`` when bytes were dropped undecoded).
- ``cap(text, max_chars)`` keeps the head and the tail, the marker on a line of its own between
  them (tool results, command output).
- ``shorten(text, limit)`` keeps the head, the marker after one space (one-line texts such as
  error messages).
- Both return the text unchanged when it fits, and never more than the limit in characters unless
  the limit is smaller than the marker itself. Redact *before* shortening (``_redaction``): a cut
  must never split a secret into parts that no longer match.

Surrogates: a ``str`` can hold lone surrogates (U+D800..U+DFFF) -- a file name or argv decoded with
``surrogateescape``, a ``"\\ud800"`` JSON escape from a model -- which have no UTF-8 form.
``replace_surrogates`` puts U+FFFD in their place, ``undecodable_replaced`` turns the bytes that
``surrogateescape`` kept into U+FFFD, and ``utf8`` encodes any text without raising.
(JSON keeps them exactly instead, as ASCII escapes: ``messages.json_utf8``.) A pair split across
two streamed deltas is joined by the stream mappers with ``SurrogateJoiner`` /
``join_surrogates``.
"""

from __future__ import annotations

import re

__all__ = [
    "omission_note",
    "cap",
    "cap_ends",
    "shorten",
    "replace_surrogates",
    "undecodable_replaced",
    "utf8",
    "SURROGATES",
    "SurrogateJoiner",
    "join_surrogates",
]

SURROGATES = re.compile("[\ud800-\udfff]")
"""Matches one lone surrogate code point (a ``str`` never holds a valid pair: those are decoded)."""


def omission_note(chars: int, extra_bytes: int = 0) -> str:
    """Return the marker put where text was cut, e.g. ``[... 1234 characters left out ...]``.

    Args:
        chars: characters left out.
        extra_bytes: bytes left out that were never decoded (only for very long streams).
    """
    if extra_bytes:
        return f"[... {chars} characters and {extra_bytes} bytes left out ...]"
    return f"[... {chars} characters left out ...]"


def split_budget(max_chars: int, note_length: int) -> tuple[int, int]:
    """Characters of head and tail that fit in ``max_chars`` around a note of ``note_length``
    characters on its own line (two newlines). The head gets the smaller half."""
    budget = max(0, max_chars - note_length - 2)
    head = budget // 2
    return head, budget - head


def cap(text: str, max_chars: int) -> str:
    """Shorten ``text`` to at most ``max_chars`` characters, keeping its head and tail.

    Args:
        text: any text.
        max_chars: the limit in characters (>= 1).

    Returns:
        ``text`` unchanged when it fits; else ``head + "\\n" + note + "\\n" + tail`` where the note
        (``omission_note``) gives the exact number of characters left out, i.e.
        ``len(text) - len(head) - len(tail)``.
    """
    if len(text) <= max_chars:
        return text
    return cap_ends(text, text, len(text), max_chars)


def cap_ends(head: str, tail: str, total_chars: int, max_chars: int) -> str:
    """``cap`` of a text known only by its ends (e.g. streamed from a large file).

    Args:
        head: the text's first ``max_chars`` characters (or more).
        tail: its last ``max_chars`` characters (or more).
        total_chars: the text's length (> ``max_chars``).
        max_chars: the limit in characters.

    Returns:
        What ``cap(text, max_chars)`` returns for the whole text.
    """
    head_chars, tail_chars = split_budget(max_chars, len(omission_note(total_chars)))
    left_out = total_chars - head_chars - tail_chars
    tail_part = tail[len(tail) - tail_chars :] if tail_chars else ""
    return f"{head[:head_chars]}\n{omission_note(left_out)}\n{tail_part}"


def shorten(text: str, limit: int) -> str:
    """Shorten a one-line ``text`` to at most ``limit`` characters, keeping its head.

    Args:
        text: any text (e.g. an error message, already redacted).
        limit: the limit in characters (>= 1).

    Returns:
        ``text`` unchanged when it fits; else ``head + " " + note`` where the note
        (``omission_note``) gives the exact number of characters left out.
    """
    if len(text) <= limit:
        return text
    head = max(0, limit - len(omission_note(len(text))) - 1)
    return f"{text[:head]} {omission_note(len(text) - head)}"


def replace_surrogates(text: str) -> str:
    """Return ``text`` with every lone surrogate replaced by U+FFFD (so it has a UTF-8 form)."""
    return SURROGATES.sub("\ufffd", text)


def undecodable_replaced(text: str) -> str:
    """``text`` decoded with ``surrogateescape`` (argv, stdin, a file that is not UTF-8) with its
    undecodable bytes as U+FFFD, as a strict UTF-8 decode with ``errors="replace"`` would have
    given; any other lone surrogate becomes U+FFFD too. Never raises."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return replace_surrogates(text)


def utf8(text: str) -> bytes:
    """Encode ``text`` as UTF-8; lone surrogates become U+FFFD. Never raises."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8")


def join_surrogates(text: str) -> str:
    """``text`` with every high+low surrogate pair made the one character the pair encodes (a
    server that escapes UTF-16 halves as ``\\uXXXX`` may split them across deltas, and Python
    does not join two lone surrogates by concatenation). Lone surrogates stay as they are."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


class SurrogateJoiner:
    """Joins a surrogate pair split across two text deltas (issue 13): a delta that ends with a
    high surrogate keeps it back and puts it before the next delta; ``flush`` gives back a half
    still held when the text ends (left as it is: nothing is invented)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        """Hold nothing."""
        self.held = ""

    def feed(self, text: str) -> str:
        """The part of the non-empty delta ``text`` that can be shown now (maybe ``""``)."""
        if self.held:
            text = join_surrogates(self.held + text)
            self.held = ""
        if "\ud800" <= text[-1] <= "\udbff":
            self.held = text[-1]
            return text[:-1]
        return text

    def flush(self) -> str:
        """The held high surrogate, if any (``""`` otherwise); holds nothing afterwards."""
        held, self.held = self.held, ""
        return held
