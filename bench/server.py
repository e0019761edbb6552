"""A local SSE server on 127.0.0.1 for the stream and cancellation benchmarks (stdlib only).

Paths: ``/<name>/v1/chat/completions``, ``/<name>/v1/responses``, ``/<name>/v1/messages``,
``/<name>/v1beta/models/<model>:streamGenerateContent`` and ``/<name>/model/<id>/converse-stream``
answer with the bytes stored under ``(name, "openai")`` / ``(name, "responses")`` /
``(name, "anthropic")`` / ``(name, "gemini")`` / ``(name, "bedrock")``, as ``text/event-stream`` with chunked
transfer encoding, written in 64 KiB pieces; the first event is sent and flushed on its own so
that time to first event means something. Name ``silent``: headers and one event, then nothing
until the client goes away (the cancellation benchmark).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WRITE_SIZE = 65536


class SSEServer:
    """Serve recorded streams from memory until ``close()``."""

    def __init__(self) -> None:
        self.bodies: dict[tuple[str, str], bytes] = {}
        self.first_events: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # as production servers do: no Nagle delay between the headers and the first event
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                parts = self.path.strip("/").split("/")
                name = parts[0] if parts else ""
                api = "anthropic" if self.path.endswith("/messages") else "openai"
                if self.path.endswith("/responses"):
                    api = "responses"
                elif ":streamGenerateContent" in self.path:
                    api = "gemini"
                elif self.path.endswith("/converse-stream"):
                    api = "bedrock"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if name == "silent":
                    self._chunk(server.bodies[("silent", api)])
                    self.wfile.flush()
                    self._wait_for_close()
                    return
                body = server.bodies[(name, api)]
                first = server.first_events.get((name, api), 0)
                if first:
                    self._chunk(body[:first])
                    self.wfile.flush()
                for start in range(first, len(body), WRITE_SIZE):
                    self._chunk(body[start : start + WRITE_SIZE])
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

            def _wait_for_close(self) -> None:
                sock = self.connection
                while not server._stop.is_set():
                    readable, _, _ = select.select([sock], [], [], 0.05)
                    if readable:
                        try:
                            if not sock.recv(65536, socket.MSG_PEEK):
                                break  # the client closed (or shut down) its side
                            sock.recv(65536)
                        except OSError:
                            break
                self.close_connection = True

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that hangs up early (cancel, time to first event) is not an error

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.root = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def add(self, name: str, api: str, body: bytes, first_event: int = 0) -> None:
        self.bodies[(name, api)] = body
        self.first_events[(name, api)] = first_event

    def openai_base(self, name: str) -> str:
        return f"{self.root}/{name}/v1"

    def anthropic_base(self, name: str) -> str:
        return f"{self.root}/{name}"

    def gemini_base(self, name: str) -> str:
        return f"{self.root}/{name}"

    def bedrock_base(self, name: str) -> str:
        return f"{self.root}/{name}"

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> SSEServer:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.close()
