"""Turning bytes into text a model can read: decoding, binary detection, bounded collection.

- ``decode(data)``: UTF-8 with every invalid byte sequence replaced by U+FFFD; never raises.
- ``is_binary(data)``: a NUL byte within the first 8 KB (8192 bytes).
- ``OutputBuffer``: collects a stream of bytes of any length in bounded memory (head and tail),
  for command output; its text is capped with the one marker of ``miniagent._text.cap``.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

from ._redaction import Redactor
from ._text import cap, omission_note, split_budget

__all__ = ["BINARY_SNIFF_BYTES", "decode", "is_binary", "ends_text", "OutputBuffer"]

BINARY_SNIFF_BYTES = 8192


def decode(data: bytes) -> str:
    """Decode ``data`` as UTF-8, replacing invalid sequences with U+FFFD. Never raises."""
    return data.decode("utf-8", errors="replace")


def is_binary(data: bytes) -> bool:
    """Return whether ``data`` looks binary: a NUL byte in its first 8192 bytes."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


class OutputBuffer:
    """Bytes of a stream kept in bounded memory: the first and the last ``keep_bytes`` bytes.

    Args:
        keep_bytes: bytes kept at each end (>= 4). With ``keep_bytes >= 4 * max_chars`` the
            kept ends always hold enough characters for ``text(max_chars)``.
    """

    def __init__(self, keep_bytes: int) -> None:
        if keep_bytes < 4:
            raise ValueError("keep_bytes must be at least 4")
        self._keep = keep_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def append(self, data: bytes) -> None:
        """Add the next bytes of the stream."""
        self.total_bytes += len(data)
        room = self._keep - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._keep:
                del self._tail[: len(self._tail) - self._keep]

    def complete(self) -> bytes | None:
        """Return the whole stream when every byte was kept, else ``None``."""
        if len(self._head) + len(self._tail) == self.total_bytes:
            return bytes(self._head + self._tail)
        return None

    def text(self, max_chars: int, redact: Callable[[str], str] | None = None) -> str:
        """Return the stream decoded (``decode``) and capped (``cap``) to ``max_chars`` characters.

        When the stream was longer than the kept bytes, the note counts the characters left out
        of the kept ends plus the bytes in the middle that were never kept.

        Args:
            max_chars: the cap in characters.
            redact: applied to the decoded text *before* it is cut (to each kept end when the
                middle was dropped), so a cut never leaves part of a redacted value behind. With
                ``keep_bytes >= 4 * max_chars + 16`` the shown parts never reach the ends of a
                dropped middle either. The note then counts characters after redaction.
        """
        whole = self.complete()
        if whole is not None:
            text = decode(whole)
            return cap(text if redact is None else redact(text), max_chars)
        if len(self._tail) > self._keep:
            del self._tail[: len(self._tail) - self._keep]
        return ends_text(bytes(self._head), bytes(self._tail), self.total_bytes, max_chars, redact)


def ends_text(
    head: bytes,
    tail: bytes,
    total_bytes: int,
    max_chars: int,
    redact: Callable[[str], str] | None = None,
    codec: str = "utf-8",
) -> str:
    """The text of a byte stream known only by its two ends, capped to ``max_chars`` characters.

    Args:
        head: the stream's first bytes.
        tail: its last bytes (not overlapping ``head``); for UTF-16/32 starting on a code unit.
        total_bytes: the stream's length in bytes (the middle was never read).
        max_chars: the cap in characters.
        redact: applied to each decoded end before it is cut; a ``Redactor`` also clears the
            ends' edges at the dropped middle of parts of secrets (``Redactor.edges``).
        codec: ``"utf-8"`` (a sequence split at either cut is dropped) or a UTF-16/32 codec.

    Returns:
        ``head + "\\n" + note + "\\n" + tail``; the note (``omission_note``) counts the characters
        left out of the decoded ends and the bytes in the middle that were never decoded.
    """
    # Decode each end without splitting a sequence at the cut.
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    head_text = decoder.decode(head, final=False)
    head_used = len(head) - len(decoder.getstate()[0])
    skip = 0
    if codec == "utf-8":
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] <= 0xBF:
            skip += 1
    tail_text = tail[skip:].decode(codec, errors="replace")
    if isinstance(redact, Redactor):  # the dropped middle is a cut: clear both of its edges
        head_text, tail_text = redact.edges(head_text, end=True), redact.edges(tail_text, start=True)
    elif redact is not None:
        head_text, tail_text = redact(head_text), redact(tail_text)
    dropped_bytes = total_bytes - head_used - (len(tail) - skip)
    note_length = len(omission_note(len(head_text) + len(tail_text), dropped_bytes))
    head_chars, tail_chars = split_budget(max_chars, note_length)
    head_chars = min(head_chars, len(head_text))
    tail_chars = min(tail_chars, len(tail_text))
    left_out = len(head_text) - head_chars + len(tail_text) - tail_chars
    tail_part = tail_text[len(tail_text) - tail_chars :] if tail_chars else ""
    note = omission_note(left_out, dropped_bytes)
    return f"{head_text[:head_chars]}\n{note}\n{tail_part}"
