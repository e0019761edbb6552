"""A server-sent events (SSE) decoder that frames raw bytes itself.

Follows the WHATWG HTML "event stream interpretation" rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

- lines end with ``\\r\\n``, ``\\r`` or ``\\n``, also when a ``\\r\\n`` pair is split across two
  network chunks;
- a line starting with ``:`` is a comment;
- ``field: value`` with one optional space after the colon stripped; a line without a colon is a
  field with an empty value;
- ``data`` lines are joined with ``\\n``; ``event`` sets the event type (default ``"message"``);
  ``id`` sets the last event id (ignored when it contains NUL); ``retry`` takes ASCII digits;
- a blank line dispatches the event; an event whose data buffer is empty is not dispatched;
- a leading UTF-8 byte order mark is dropped; invalid UTF-8 is replaced by U+FFFD.

Bounded memory: one line may hold at most ``max_size`` bytes, and the data of one event at most
``max_size`` characters (default ``MAX_EVENT_BYTES``, 64 MiB); a larger one (e.g. a line that
never ends) raises ``ProviderError`` (kind ``"sse_too_large"``) as soon as the limit is passed,
so the decoder never holds much more than the limit.

One deliberate extension (the issue asks for it): at the end of the stream a last line without a
line terminator is still interpreted, and a pending event without its closing blank line is
dispatched, so a server that omits the final blank line loses nothing.

Performance: whole chunks are handled with ``bytes.rfind`` / ``str.split`` in C; only complete
lines are decoded (a line terminator byte never occurs inside a multi-byte UTF-8 sequence, so a
character split across chunks is always decoded whole). Python code runs once per line, not once
per byte.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..errors import ProviderError

__all__ = ["MAX_EVENT_BYTES", "SSEDecoder", "SSEEvent", "iter_sse_events"]

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""Default cap (bytes) of one SSE line and of the data of one event."""


class SSEEvent(NamedTuple):
    """One dispatched server-sent event.

    Attributes:
        event: the event type (``event:`` field), ``"message"`` when none was given.
        data: the data lines joined with ``"\\n"`` (no trailing newline).
        id: the last event id seen so far in the stream, or ``None``.
        retry: the reconnection time in milliseconds from this event's ``retry:`` field, or
            ``None``.
    """

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


_new_event = tuple.__new__  # builds an SSEEvent without the Python-level NamedTuple __new__


class SSEDecoder:
    """Incremental SSE decoder: feed it byte chunks as they arrive, get whole events back.

    Usage::

        decoder = SSEDecoder()
        for chunk in chunks:            # bytes of any size, split anywhere
            for event in decoder.feed(chunk):
                ...
        for event in decoder.close():   # end of stream
            ...

    Not thread-safe; one decoder per stream.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_last_id",
        "_max_size",
        "_pending",
        "_pending_size",
        "_retry",
        "_skip_lf",
        "_started",
    )

    def __init__(self, max_size: int = MAX_EVENT_BYTES) -> None:
        """Create a decoder in its initial state (no buffered bytes, no pending event).

        Args:
            max_size: most bytes of one line, and of the data of one event (``feed`` raises
                ``ProviderError`` beyond it).
        """
        self._max_size = max_size
        self._pending: list[bytes] = []  # bytes of an unterminated line, in order
        self._pending_size = 0
        self._data_size = 0  # characters in _data (slow path only; the fast path holds none)
        self._skip_lf = False  # the last chunk ended with "\r": drop a "\n" that starts the next
        self._started = False  # a leading BOM has been checked for
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk`` (raw bytes of the body, any size) and return the events it completes.

        Returns:
            The events dispatched by the complete lines now available, in stream order (often
            empty). Bytes after the last line terminator are kept for the next call.

        Raises:
            ProviderError: a line, or the data of one event, longer than ``max_size`` bytes
                (kind ``"sse_too_large"``, not retryable).
        """
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        # Cut after the last blank line when the chunk has one (LF-only data), so the lines of an
        # event still open wait as bytes and whole events reach the fast path; else after the
        # last line terminator. Either way no event is dispatched later than its blank line.
        cut = chunk.rfind(b"\n\n")
        if cut >= 0 and b"\r" not in chunk:
            cut += 1
        else:
            cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if cut < 0:
            if chunk:
                self._keep(chunk)
            return []
        if self._pending:
            self._pending.append(chunk[: cut + 1])
            head = b"".join(self._pending)
            self._pending = []
            self._pending_size = 0
        else:
            head = chunk[: cut + 1]
        rest = chunk[cut + 1 :]
        if rest:
            self._keep(rest)
        elif head[-1:] == b"\r":
            self._skip_lf = True
        events = self._lines(head.decode("utf-8", "replace"))
        if self._data_size > self._max_size:
            self._too_large("the data of one event")
        return events

    def _keep(self, piece: bytes) -> None:
        """Hold ``piece`` of a line whose terminator has not arrived; refuse past the cap."""
        self._pending.append(piece)
        self._pending_size += len(piece)
        if self._pending_size > self._max_size:
            self._too_large("one line")

    def _too_large(self, what: str) -> None:
        self._pending = []
        self._pending_size = 0
        self._data = []
        self._data_size = 0
        raise ProviderError(
            f"the event stream sent {what} longer than {self._max_size} bytes (limit of the SSE reader)",
            kind="sse_too_large",
        )

    def close(self) -> list[SSEEvent]:
        """Signal the end of the stream and return what it completes.

        An unterminated last line is interpreted as a line, and a pending event is dispatched
        even without its closing blank line (extension of the WHATWG rules, see the module
        docstring). The decoder is reset and may be reused for a new stream.

        Returns:
            The final events (zero or one).
        """
        events: list[SSEEvent] = []
        if self._pending:
            tail = b"".join(self._pending)
            self._pending = []
            self._pending_size = 0
            events = self._lines(tail.decode("utf-8", "replace") + "\n")
        if self._data:
            events.append(self._dispatch())
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._last_id = None
        self._retry = None
        return events

    def _lines(self, text: str) -> list[SSEEvent]:
        """Interpret ``text``: complete lines, the last one ending with its terminator.

        Fast path: the text is cut into blocks at blank lines (``"\n\n"``); a block that is a
        single ``data: ...`` line, or ``event: ...`` plus one ``data: ...`` line (the shapes
        OpenAI and Anthropic send), becomes an event without a per-line loop. Any other block,
        and a block that continues an event begun in an earlier chunk, goes line by line.
        """
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        events: list[SSEEvent] = []
        append = events.append
        last_id = self._last_id
        blocks = text.split("\n\n")
        tail = blocks.pop()  # the lines after the last blank line: an event still open
        clean = not (self._data or self._event) and self._retry is None
        for block in blocks:
            if clean and block.startswith(("data: ", "event: ")):
                if "\n" not in block:
                    if block[0] == "d":
                        append(_new_event(SSEEvent, ("message", block[6:], last_id, None)))
                        continue
                else:
                    head, _, data = block.partition("\n")
                    if head[0] == "e" and data.startswith("data: ") and "\n" not in data:
                        append(_new_event(SSEEvent, (head[7:] or "message", data[6:], last_id, None)))
                        continue
            self._block(block, events)
            self._line("", events)
            clean = self._retry is None
            last_id = self._last_id
        if tail:
            self._block(tail[:-1], events)
        return events

    def _block(self, block: str, events: list[SSEEvent]) -> None:
        """Interpret the lines of ``block`` (joined by ``"\n"``, no trailing terminator)."""
        for line in block.split("\n"):
            self._line(line, events)

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        """Interpret one line; a blank line dispatches the pending event into ``events``."""
        if not line:
            if self._data:
                events.append(self._dispatch())
            else:
                self._event = ""
        elif line.startswith("data:"):
            value = line[6:] if line.startswith("data: ") else line[5:]
            self._data.append(value)
            self._data_size += len(value) + 1
        elif line[0] != ":":
            self._field(line)

    def _field(self, line: str) -> None:
        """Apply a non-``data`` field line (``event``, ``id``, ``retry``; others ignored)."""
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":  # "data" without a colon: an empty data line
            self._data.append(value)
            self._data_size += len(value) + 1
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            with contextlib.suppress(ValueError):  # over 4,300 digits: int() refuses; ignored
                self._retry = int(value)

    def _dispatch(self) -> SSEEvent:
        """Build the pending event and reset the per-event buffers."""
        data = self._data
        event = SSEEvent(
            self._event or "message",
            data[0] if len(data) == 1 else "\n".join(data),
            self._last_id,
            self._retry,
        )
        self._data = []
        self._data_size = 0
        self._event = ""
        self._retry = None
        return event


def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Decode an iterable of raw byte chunks into ``SSEEvent``s, lazily.

    Args:
        chunks: the response body as it arrives (any chunk sizes).

    Returns:
        An iterator of events; each is yielded as soon as the chunk that completes it is read.
        At the end of ``chunks`` a last event without its closing blank line is still yielded.
    """
    decoder = SSEDecoder()
    for chunk in chunks:
        if chunk:
            yield from decoder.feed(chunk)
    yield from decoder.close()
