"""What ``read_file`` reads: only what it shows, in bounded memory, whatever the file's size.

- The first ``BINARY_SNIFF_BYTES`` decide the encoding (``textfiles``: a byte order mark, else
  UTF-8) or that the file is binary.
- Whole file (no ``offset``/``limit``): a file of at most ``WHOLE_FILE_BYTES`` is read whole and
  capped with an exact count; a larger one is read at its two ends only (about ``4 * max_chars``
  bytes each) and the note counts the characters left out of the ends and the bytes in between.
- A range of lines (``offset``/``limit``): the file is streamed in chunks of ``CHUNK_BYTES``; only
  the selected lines' head and tail (``max_chars`` characters each) are kept, so one line of
  gigabytes costs no memory. A file of at most ``WHOLE_FILE_BYTES`` is read to its end to give the
  total line count; a larger one stops after the selection ("more follow").
- Secrets (``redact``) are hidden in the whole text before it is cut; where only pieces are read
  (the two ends, a page of lines), parts of secrets at each piece's cut edges are hidden too.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from .._capture import BINARY_SNIFF_BYTES, ends_text
from .._redaction import Redactor
from .._text import cap, cap_ends
from .textfiles import decode_file, display_text, sniff_encoding

__all__ = ["WHOLE_FILE_BYTES", "CHUNK_BYTES", "Shown", "read_shown"]

WHOLE_FILE_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 65536
_SHORTENED = "\n[file shortened; read parts of it with offset and limit (lines)]"


@dataclass(frozen=True, slots=True)
class Shown:
    """What ``read_shown`` found: the text to show, or an error text for the model."""

    text: str
    is_error: bool = False


class _Selection:
    """The selected lines' text kept by its ends: the first ``max_chars`` characters and a rolling
    tail of the last ones, with the exact total."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.head: list[str] = []
        self.head_chars = 0
        self.tail = ""
        self.total = 0

    def add(self, piece: str) -> None:
        self.total += len(piece)
        if self.head_chars < self.max_chars:
            taken = piece[: self.max_chars - self.head_chars]
            self.head.append(taken)
            self.head_chars += len(taken)
        self.tail += piece
        if len(self.tail) > 2 * self.max_chars:
            self.tail = self.tail[-self.max_chars :]

    def text(self, redact: Redactor, start_cut: bool, end_cut: bool) -> str:
        """The selection capped to ``max_chars``; secrets redacted before the cut, and parts of
        secrets at the edges of the selection (``start_cut``/``end_cut``: lines were left out
        there) and at the edges of a dropped middle."""
        head = "".join(self.head)
        if self.total <= self.max_chars:
            return redact.edges(head, start=start_cut, end=end_cut)
        head = redact.edges(head, start=start_cut, end=True)
        tail = redact.edges(self.tail, start=True, end=end_cut)
        return cap_ends(head, tail, self.total, self.max_chars)


def _chunks(handle: BinaryIO, codec: str) -> Iterator[str]:
    """The file's text from the current position, decoded chunk by chunk."""
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    while True:
        data = handle.read(CHUNK_BYTES)
        text = decoder.decode(data, final=not data)
        if text:
            yield text
        if not data:
            return


def _line_range(
    handle: BinaryIO,
    codec: str,
    shown: str,
    first: int,
    last: int,
    max_chars: int,
    count_all: bool,
    redact: Redactor,
) -> Shown:
    """Stream the lines ``first``..``last`` (1-based, inclusive) of the file (module docstring)."""
    selection = _Selection(max_chars)
    number, partial, more = 1, False, False
    for chunk in _chunks(handle, codec):
        if number > last and not count_all:
            more = True
            break
        position = 0
        while position < len(chunk):
            newline = chunk.find("\n", position)
            end = len(chunk) if newline < 0 else newline + 1
            if first <= number <= last:
                selection.add(chunk[position:end])
            partial = newline < 0
            if newline >= 0:
                number += 1
            position = end
            if number > last and not count_all and position < len(chunk):
                more = True
                break
        if more:
            break
    if more:
        note = f"[lines {first}-{last}; more follow; continue with offset={last + 1}]"
        return Shown(f"{selection.text(redact, first > 1, True)}\n{note}")
    lines = number - 1 + (1 if partial else 0)
    if lines == 0:
        return Shown(f"({shown} is empty)")
    if first > lines:
        return Shown(f"offset {first} is past the end of {shown} ({lines} lines)", is_error=True)
    text = selection.text(redact, first > 1, last < lines)
    if last < lines:
        text += f"\n[lines {first}-{last} of {lines}; continue with offset={last + 1}]"
    return Shown(text)


def _whole(
    handle: BinaryIO, start: bytes, size: int, codec: str, mark: bytes, max_chars: int, redact: Redactor
) -> str:
    """The whole file capped to ``max_chars``: read whole when small, else by its two ends;
    secrets redacted before any cut."""
    if size <= WHOLE_FILE_BYTES:
        data = start + handle.read(WHOLE_FILE_BYTES + 1 - len(start))
        file = decode_file(data[:WHOLE_FILE_BYTES])
        text = redact(display_text(file)) if file is not None else ""
        result = cap(text, max_chars)
        return result if len(result) == len(text) else result + _SHORTENED
    keep = 4 * max_chars + 16
    head = (start + handle.read(max(0, keep + len(mark) - len(start))))[len(mark) : len(mark) + keep]
    tail_at = max(len(mark) + len(head), size - keep)
    unit = 4 if codec.startswith("utf-32") else 2 if codec.startswith("utf-16") else 1
    tail_at += (unit - (tail_at - len(mark)) % unit) % unit
    handle.seek(tail_at)
    tail = handle.read(keep)
    return ends_text(head, tail, size - len(mark), max_chars, redact, codec=codec) + _SHORTENED


def read_shown(
    handle: BinaryIO,
    size: int,
    shown: str,
    max_chars: int,
    offset: int | None,
    limit: int | None,
    redact: Redactor | None = None,
) -> Shown:
    """Read what ``read_file`` shows of an open regular file (module docstring).

    Args:
        handle: the file, at its start.
        size: its size in bytes (``fstat``).
        shown: its path as shown to the model.
        max_chars: the cap of the result in characters.
        offset: the first line (1-based) or ``None``; limit: the number of lines or ``None``.
        redact: hides secret values before any cut, and their parts at every cut edge.

    Returns:
        The text (with notes on what was left out), or an error (binary, offset past the end).
    """
    start = handle.read(BINARY_SNIFF_BYTES)
    encoding = sniff_encoding(start)
    if encoding is None:
        return Shown(f"{shown} is a binary file ({size} bytes); not shown", is_error=True)
    codec, mark = encoding
    redact = redact if redact is not None else Redactor(())
    if not start:
        return Shown(f"({shown} is empty)")
    if offset is None and limit is None:
        text = _whole(handle, start, size, codec, mark, max_chars, redact)
        return Shown(f"({shown} is empty)") if not text else Shown(text)
    handle.seek(len(mark))
    first = offset if offset is not None else 1
    last = first + limit - 1 if limit is not None else 2**63
    return _line_range(handle, codec, shown, first, last, max_chars, size <= WHOLE_FILE_BYTES, redact)
