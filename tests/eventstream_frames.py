"""AWS event stream frames for the tests, encoded from the format's description (prelude, headers,
payload, CRC32s), independently of ``miniagent.net.eventstream``; and the Bedrock transcripts of
``tests/fixtures/eventstream/`` as the bytes the server sends.

A transcript file is a JSON list of messages ``{"headers": {name: string}, "payload": object}``;
string headers only (what Bedrock sends), the payload encoded as compact JSON.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "eventstream"


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message: prelude (lengths and their CRC32), string headers, payload, message CRC32."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", zlib.crc32(prelude))
    body = head + encoded + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(event_type: str, payload: dict[str, Any]) -> bytes:
    """A Bedrock ``event`` message of ``event_type`` with a JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(payload, separators=(",", ":")).encode())


def exception(exception_type: str, message: str) -> bytes:
    """A Bedrock ``exception`` message (``{"message"}`` payload)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": message}).encode())


def transcript(name: str) -> list[dict[str, Any]]:
    """The messages of ``tests/fixtures/eventstream/<name>``."""
    loaded: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())
    return loaded


def encoded(name: str) -> bytes:
    """The bytes of transcript ``name`` as the server sends them."""
    return b"".join(encode_messages(transcript(name)))


def encode_messages(messages: list[dict[str, Any]]) -> list[bytes]:
    """Each message of a transcript as one frame."""
    return [frame(m["headers"], json.dumps(m["payload"], separators=(",", ":")).encode()) for m in messages]


def boundaries(name: str) -> list[int]:
    """Offsets just after each message of transcript ``name``."""
    cuts, at = [], 0
    for raw in encode_messages(transcript(name)):
        at += len(raw)
        cuts.append(at)
    return cuts
