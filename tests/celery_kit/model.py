"""A stateless OpenAI-compatible fake model on loopback: it answers from the request alone, so any
number of workers and runs can share it. While the request holds fewer than ``steps`` tool
results it calls ``work``, then it answers ``done``; each answer after ``delay`` seconds."""

from __future__ import annotations

import contextlib
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.cli_helpers import text_turn, tool_turn
from tests.providers_server import LoopbackServer


class StepModel(LoopbackServer):
    """Use as a context manager; ``base_url`` is the OpenAI API root."""

    def __init__(self, steps: int = 1, delay: float = 0.0) -> None:
        self.steps = steps
        self.delay = delay
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                owner.requests += 1
                done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
                if done < owner.steps:
                    turn = tool_turn("work", {"n": done}, call_id=f"call_{done}_{time.monotonic_ns()}")
                else:
                    turn = text_turn(f"done after {done} steps")
                if owner.delay:
                    time.sleep(owner.delay)  # the model's answer time, part of what is simulated
                events = [b"data: " + json.dumps(p).encode() + b"\n\n" for p in turn]
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
        return f"{self.url}/v1"
