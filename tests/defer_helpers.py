"""Helpers for the tests of approval that waits: a stateless fake model for the CLI.

``ReplyingModel`` is a real OpenAI-compatible server on 127.0.0.1 that answers each request from
the request alone (``answer(body) -> SSE payloads``), so a run killed anywhere, and the runs that
go on after it, all get the answer their history calls for. ``calls_turn`` streams several tool
calls in one turn.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.providers_server import LoopbackServer

Payloads = list[dict[str, Any]]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-defer",
        "object": "chat.completion.chunk",
        "model": "test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def calls_turn(calls: Sequence[tuple[str, str, dict[str, Any]]]) -> Payloads:
    """SSE payloads of one turn with the tool calls ``(id, name, arguments)``, in order."""
    chunks = [_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        call = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        chunks.append(_chunk({"tool_calls": [call]}))
    chunks.append(_chunk({}, "tool_calls"))
    return chunks


def results_in(body: dict[str, Any]) -> int:
    """How many tool results a chat-completions request body holds."""
    return sum(1 for message in body.get("messages", []) if message.get("role") == "tool")


class ReplyingModel(LoopbackServer):
    """A stateless fake model (use as a context manager); every request body is kept.

    Args:
        answer: ``answer(request_body) -> SSE payloads`` (e.g. ``tests.cli_helpers.text_turn``).
    """

    def __init__(self, answer: Callable[[dict[str, Any]], Payloads]) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.bodies.append(body)
                events = [b"data: " + json.dumps(p).encode() + b"\n\n" for p in answer(body)]
                data = b"".join(events) + b"data: [DONE]\n\n"
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        super().__init__(Handler)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"
