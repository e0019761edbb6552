"""A streamable HTTP MCP server on 127.0.0.1 for tests (stdlib ``http.server`` in a thread) whose
answers a test scripts: ``FakeMCP(answers)`` where ``answers`` maps a JSON-RPC method (or
``"GET"``, ``"DELETE"``) to a function ``(request, message) -> None`` that writes the answer
with the helpers of ``Exchange``. ``initialize``, ``notifications/*`` and ``tools/list`` have
defaults; every request is kept in ``seen`` (method, headers, message)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.providers_server import LoopbackServer

Answer = Callable[["Exchange", dict[str, Any]], None]
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


class Exchange(BaseHTTPRequestHandler):
    """One HTTP exchange; ``server.fake`` is the ``FakeMCP``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeMCP:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    # --- answers --------------------------------------------------------------------------------

    def json(self, value: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.body(json.dumps(value).encode(), status, "application/json", headers)

    def body(
        self,
        data: bytes,
        status: int = 200,
        media: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Mcp-Session-Id", "s-1")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_events(self, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", "s-1")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, value: Any = None, *, raw: str | None = None, event_id: str | None = None) -> None:
        text = raw if raw is not None else f"data: {json.dumps(value)}\n"
        if event_id is not None:
            text = f"id: {event_id}\n{text}"
        self.wfile.write((text + "\n").encode())
        self.wfile.flush()

    def result(self, message: dict[str, Any], result: Any) -> None:
        self.json({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # --- routing --------------------------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        message = json.loads(self.rfile.read(length) or b"{}")
        method = message.get("method") or ("response" if "id" in message else "?")
        self.fake.record(method, dict(self.headers), message)
        answer = self.fake.answers.get(method)
        if answer is not None:
            answer(self, message)
        elif method == "initialize":
            self.result(message, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
        elif method == "tools/list":
            self.result(message, {"tools": TOOLS})
        elif "id" not in message or method == "response":
            self.body(b"", 202)
        else:
            self.result(message, {"content": [{"type": "text", "text": "ok"}]})

    def do_GET(self) -> None:
        self.fake.record("GET", dict(self.headers), {})
        answer = self.fake.answers.get("GET")
        if answer is None:
            self.body(b"", 405)
        else:
            answer(self, {})

    def do_DELETE(self) -> None:
        self.fake.record("DELETE", dict(self.headers), {})
        answer = self.fake.answers.get("DELETE")
        if answer is None:
            self.body(b"", 200)
        else:
            answer(self, {})


class FakeMCP(LoopbackServer):
    """The scripted server (module docstring); ``url`` is its ``/mcp`` endpoint."""

    def __init__(self, answers: dict[str, Answer] | None = None) -> None:
        super().__init__(Exchange)
        self._server.fake = self  # type: ignore[attr-defined]
        self.answers = dict(answers or {})
        self.seen: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return self.url + "/mcp"

    def record(self, method: str, headers: dict[str, str], message: dict[str, Any]) -> None:
        with self._lock:
            self.seen.append((method, headers, message))

    def methods(self) -> list[str]:
        with self._lock:
            return [method for method, _, _ in self.seen]
