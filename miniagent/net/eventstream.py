"""An AWS event stream decoder (``application/vnd.amazon.eventstream``) that frames raw bytes
itself, as ``sse.SSEDecoder`` does for server-sent events.

The format (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html,
"Event stream encoding"; the same frames carry Bedrock's ``ConverseStream``): each message is

- a 12-byte prelude: the message's total length and its headers' length (big-endian ``uint32``
  each), then the CRC32 of those 8 bytes;
- the headers: per header a name (``uint8`` length, UTF-8), a type byte and a value: ``0`` true,
  ``1`` false, ``2`` int8, ``3`` int16, ``4`` int32, ``5`` int64, ``6`` bytes (``uint16``
  length), ``7`` string (``uint16`` length, UTF-8), ``8`` timestamp (int64 milliseconds), ``9``
  UUID (16 bytes);
- the payload (the rest), then the CRC32 of everything before it in the message.

Invariants: a message is returned only when whole and both of its checksums hold; a prelude is
checked before its message is awaited, so a corrupt length never makes the decoder wait for (or
hold) gigabytes: headers are capped at ``MAX_HEADERS_BYTES`` and payloads at
``MAX_PAYLOAD_BYTES`` (botocore's limits). Every error is a ``ProviderError``: kind
``"eventstream_corrupt"`` (a checksum, a header, a stream that ends inside a message; retryable:
in practice a stream garbled or cut in transit) or ``"eventstream_too_large"``. Standard library
only.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import ProviderError

__all__ = ["MAX_HEADERS_BYTES", "MAX_PAYLOAD_BYTES", "EventStreamDecoder", "EventStreamMessage"]

MAX_HEADERS_BYTES = 128 * 1024
"""Most bytes of the headers of one message."""

MAX_PAYLOAD_BYTES = 24 * 1024 * 1024
"""Most bytes of the payload of one message."""

_PRELUDE = struct.Struct(">III")
_PRELUDE_BYTES = 12
_CRC_BYTES = 4
_MIN_MESSAGE = _PRELUDE_BYTES + _CRC_BYTES


class EventStreamMessage(NamedTuple):
    """One message of an event stream.

    Attributes:
        headers: name -> value (``bool``, ``int``, ``bytes``, ``str``; a timestamp as its
            ``int`` milliseconds, a UUID as its 16 bytes, as botocore gives them), e.g.
            ``{":message-type": "event", ":event-type": "contentBlockDelta", ":content-type":
            "application/json"}``.
        payload: the payload bytes.
    """

    headers: dict[str, Any]
    payload: bytes


def _corrupt(problem: str) -> ProviderError:
    return ProviderError(f"event stream broken: {problem}", retryable=True, kind="eventstream_corrupt")


def _fixed(size: int, form: str) -> Callable[[bytes, int], tuple[Any, int]]:
    unpack = struct.Struct(form).unpack_from

    def read(data: bytes, at: int) -> tuple[Any, int]:
        if at + size > len(data):
            raise _corrupt("a header value runs past the headers")
        return unpack(data, at)[0], at + size

    return read


def _sized(data: bytes, at: int) -> tuple[bytes, int]:
    if at + 2 > len(data):
        raise _corrupt("a header value runs past the headers")
    (size,) = struct.unpack_from(">H", data, at)
    end = at + 2 + size
    if end > len(data):
        raise _corrupt("a header value runs past the headers")
    return data[at + 2 : end], end


def _text(data: bytes, at: int) -> tuple[str, int]:
    raw, end = _sized(data, at)
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        raise _corrupt("a string header is not UTF-8") from None


def _uuid(data: bytes, at: int) -> tuple[bytes, int]:
    if at + 16 > len(data):
        raise _corrupt("a header value runs past the headers")
    return data[at : at + 16], at + 16


_VALUES: dict[int, Callable[[bytes, int], tuple[Any, int]]] = {
    0: lambda data, at: (True, at),
    1: lambda data, at: (False, at),
    2: _fixed(1, ">b"),
    3: _fixed(2, ">h"),
    4: _fixed(4, ">i"),
    5: _fixed(8, ">q"),
    6: _sized,
    7: _text,
    8: _fixed(8, ">q"),
    9: _uuid,
}


def parse_headers(data: bytes) -> dict[str, Any]:
    """The headers of one message (their bytes as framed).

    Raises:
        ProviderError: a header cut short, of an unknown type, not UTF-8 where it must be, or
            given twice (kind ``"eventstream_corrupt"``).
    """
    headers: dict[str, Any] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name_end = at + 1 + size
        if name_end + 1 > len(data):
            raise _corrupt("a header name runs past the headers")
        try:
            name = data[at + 1 : name_end].decode("utf-8")
        except UnicodeDecodeError:
            raise _corrupt("a header name is not UTF-8") from None
        read = _VALUES.get(data[name_end])
        if read is None:
            raise _corrupt(f"header {name!r} has unknown type {data[name_end]}")
        value, at = read(data, name_end + 1)
        if name in headers:
            raise _corrupt(f"header {name!r} appears twice")
        headers[name] = value
    return headers


class EventStreamDecoder:
    """Incremental decoder: feed it byte chunks as they arrive, get whole messages back.

    Usage::

        decoder = EventStreamDecoder()
        for chunk in chunks:              # bytes of any size, split anywhere
            for message in decoder.feed(chunk):
                ...
        decoder.close()                   # end of stream: raises if a message was cut

    Not thread-safe; one decoder per stream.
    """

    __slots__ = ("_buffer", "_total")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._total: int | None = None  # the length of the message whose prelude was checked

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        """Add ``data``; return the messages it completed, in order.

        Raises:
            ProviderError: a checksum that does not hold, a length out of bounds or a bad header
                (see the module docstring).
        """
        buffer = self._buffer
        buffer += data
        messages: list[EventStreamMessage] = []
        start = 0
        while True:
            if self._total is None:
                if len(buffer) - start < _PRELUDE_BYTES:
                    break
                self._total = _check_prelude(buffer, start)
            if len(buffer) - start < self._total:
                break
            messages.append(_message(bytes(buffer[start : start + self._total])))
            start += self._total
            self._total = None
        if start:
            del buffer[:start]
        return messages

    def close(self) -> list[EventStreamMessage]:
        """End of stream: nothing may be left over (always returns ``[]``).

        Raises:
            ProviderError: the stream ended inside a message (kind ``"eventstream_corrupt"``).
        """
        if self._buffer:
            raise _corrupt(f"the stream ended inside a message ({len(self._buffer)} bytes of it arrived)")
        return []


def _check_prelude(buffer: bytearray, start: int) -> int:
    """The total length of the message whose prelude starts at ``start``, once checked."""
    total, headers, crc = _PRELUDE.unpack_from(buffer, start)
    if zlib.crc32(buffer[start : start + 8]) != crc:
        raise _corrupt("the prelude checksum does not match")
    if headers > MAX_HEADERS_BYTES:
        raise ProviderError(
            f"event stream message headers of {headers} bytes exceed {MAX_HEADERS_BYTES}",
            kind="eventstream_too_large",
        )
    payload = total - _MIN_MESSAGE - headers
    if payload > MAX_PAYLOAD_BYTES:
        raise ProviderError(
            f"event stream message payload of {payload} bytes exceeds {MAX_PAYLOAD_BYTES}",
            kind="eventstream_too_large",
        )
    if payload < 0:
        raise _corrupt(f"a message of {total} bytes cannot hold {headers} bytes of headers")
    return int(total)


def _message(raw: bytes) -> EventStreamMessage:
    """One whole message (prelude already checked): its checksum, headers and payload."""
    (crc,) = struct.unpack_from(">I", raw, len(raw) - _CRC_BYTES)
    if zlib.crc32(raw[:-_CRC_BYTES]) != crc:
        raise _corrupt("the message checksum does not match")
    (headers_length,) = struct.unpack_from(">I", raw, 4)
    headers_end = _PRELUDE_BYTES + headers_length
    return EventStreamMessage(parse_headers(raw[_PRELUDE_BYTES:headers_end]), raw[headers_end:-_CRC_BYTES])
