"""The AWS event stream decoder: whole messages only, both checksums checked, bounded memory.

The encoded vectors are botocore's own test cases (tests/unit/test_eventstream.py of
boto/botocore: every header type, a payload, an error message, and the corrupt ones), so the
decoder reads what AWS's own parser reads; the other frames come from ``eventstream_frames``,
encoded from the format's description.
"""

from __future__ import annotations

import random
import struct
import zlib

import pytest
from eventstream_frames import event, frame

from miniagent import ProviderError
from miniagent.net.eventstream import MAX_PAYLOAD_BYTES, EventStreamDecoder, EventStreamMessage

EMPTY = b"\x00\x00\x00\x10\x00\x00\x00\x00\x05\xc2H\xeb}\x98\xc8\xff"
INT8 = b"\x00\x00\x00\x17\x00\x00\x00\x07)\x86\x01X\x04byte\x02\xff\xc2\xf8i\xdc"
INT16 = b"\x00\x00\x00\x19\x00\x00\x00\tq\x0e\x92>\x05short\x03\xff\xff\xb2|\xb6\xcc"
INT32 = b"\x00\x00\x00\x1d\x00\x00\x00\r\x83\xe3\xf0\xe7\x07integer\x04\xff\xff\xff\xff\x8b\x8e\x12\xeb"
INT64 = b"\x00\x00\x00\x1e\x00\x00\x00\x0e]J\xdb\x8d\x04long\x05\xff\xff\xff\xff\xff\xff\xff\xffK\xc22\xda"
PAYLOAD = b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96"
ONE_STRING = (
    b"\x00\x00\x00=\x00\x00\x00 \x07\xfd\x83\x96\x0ccontent-type\x07\x00\x10"
    b"application/json{'foo':'bar'}\x8d\x9c\x08\xb1"
)
ALL_TYPES = (
    b"\x00\x00\x00\x62\x00\x00\x00\x52\x03\xb5\xcb\x9c"
    b"\x010\x00\x011\x01\x012\x02\x02\x013\x03\x00\x03"
    b"\x014\x04\x00\x00\x00\x04\x015\x05\x00\x00\x00\x00\x00\x00\x00\x05"
    b"\x016\x06\x00\x05bytes\x017\x07\x00\x04utf8"
    b"\x018\x08\x00\x00\x00\x00\x00\x00\x00\x08\x019\x090123456789abcdef"
    b"\x63\x35\x36\x71"
)
ERROR = (
    b"\x00\x00\x00\x52\x00\x00\x00\x42\xbf\x23\x63\x7e"
    b"\x0d:message-type\x07\x00\x05error"
    b"\x0b:error-code\x07\x00\x04code"
    b"\x0e:error-message\x07\x00\x07message"
    b"\x6b\x6c\xea\x3d"
)
POSITIVE = [
    (EMPTY, {}, b""),
    (INT8, {"byte": -1}, b""),
    (INT16, {"short": -1}, b""),
    (INT32, {"integer": -1}, b""),
    (INT64, {"long": -1}, b""),
    (PAYLOAD, {}, b"{'foo':'bar'}"),
    (ONE_STRING, {"content-type": "application/json"}, b"{'foo':'bar'}"),
    (
        ALL_TYPES,
        {
            "0": True,
            "1": False,
            "2": 2,
            "3": 3,
            "4": 4,
            "5": 5,
            "6": b"bytes",
            "7": "utf8",
            "8": 8,
            "9": b"0123456789abcdef",
        },
        b"",
    ),
    (ERROR, {":message-type": "error", ":error-code": "code", ":error-message": "message"}, b""),
]
NEGATIVE = [
    (b"\x01\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'}\xc3e96", "eventstream_corrupt"),  # length
    (b"\x00\x00\x00\x1d\x00\x00\x00\x00\xfdR\x8cZ{'foo':'bar'\x8d\xc3e96", "eventstream_corrupt"),  # payload
    (ONE_STRING.replace(b"content-type", b"content+type"), "eventstream_corrupt"),  # a header
    (b"\x00\x00\x00=\xff\x00\x01\x02" + ONE_STRING[8:], "eventstream_corrupt"),  # headers length
    (
        b"\x00\x00\x00\x24\x00\x00\x00\x14\x4b\xb9\x82\xd0\x04test\x04asdf\x04test\x04asdf\xf3\xf4\x75\x63",
        "eventstream_corrupt",  # a header given twice
    ),
    (
        b"\x00\x00\x00\x3d\xff\x00\x01\x02\x15\x83\xf5\xc2\x0ccontent-type\x07\x00\x10application/json"
        b"{'foo':'bar'}\x2f\x37\x7f\x5d",
        "eventstream_too_large",  # headers past the cap, checksums right
    ),
]


@pytest.mark.parametrize(("encoded", "headers", "payload"), POSITIVE)
def test_botocore_s_messages_decode_fed_byte_by_byte(
    encoded: bytes, headers: dict[str, object], payload: bytes
) -> None:
    decoder = EventStreamDecoder()
    messages = [m for i in range(len(encoded)) for m in decoder.feed(encoded[i : i + 1])]
    assert messages == [EventStreamMessage(headers, payload)]
    assert decoder.close() == []


def test_every_message_of_one_buffer_comes_out_in_order() -> None:
    decoder = EventStreamDecoder()
    messages = decoder.feed(b"".join(encoded for encoded, _, _ in POSITIVE))
    assert [(m.headers, m.payload) for m in messages] == [(h, p) for _, h, p in POSITIVE]


@pytest.mark.parametrize(("encoded", "kind"), NEGATIVE)
def test_botocore_s_corrupt_messages_are_refused(encoded: bytes, kind: str) -> None:
    with pytest.raises(ProviderError) as caught:
        EventStreamDecoder().feed(encoded)
    assert caught.value.kind == kind
    assert caught.value.retryable is (kind == "eventstream_corrupt")


def test_a_payload_past_the_cap_is_refused_from_its_prelude_alone() -> None:
    total = 16 + MAX_PAYLOAD_BYTES + 1
    prelude = struct.pack(">II", total, 0)
    decoder = EventStreamDecoder()
    with pytest.raises(ProviderError, match="exceeds") as caught:
        decoder.feed(prelude + struct.pack(">I", zlib.crc32(prelude)))  # no payload byte sent yet
    assert caught.value.kind == "eventstream_too_large"


def test_a_stream_that_ends_inside_a_message_is_an_error() -> None:
    whole = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}})
    for cut in (1, 11, 12, len(whole) - 1):
        decoder = EventStreamDecoder()
        assert decoder.feed(whole[:cut]) == []
        with pytest.raises(ProviderError, match="ended inside a message") as caught:
            decoder.close()
        assert caught.value.retryable


def test_random_chunks_give_the_same_messages() -> None:
    frames = [frame({":event-type": f"e{i}", "n": "x" * i}, b"p" * (i * 37)) for i in range(40)]
    body = b"".join(frames)
    rng = random.Random(5)
    for _ in range(20):
        decoder, messages, at = EventStreamDecoder(), [], 0
        while at < len(body):
            size = rng.randint(1, 300)
            messages += decoder.feed(body[at : at + size])
            at += size
        assert [m.headers[":event-type"] for m in messages] == [f"e{i}" for i in range(40)]
        assert [len(m.payload) for m in messages] == [i * 37 for i in range(40)]
