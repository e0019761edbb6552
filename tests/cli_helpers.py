"""Helpers for the CLI tests: a scripted OpenAI-compatible SSE server and a CLI runner.

``FakeOpenAI`` is a real HTTP server on 127.0.0.1 (stdlib ``http.server`` in a thread) that
answers each ``POST /v1/chat/completions`` with the next scripted turn as server-sent events, so
the CLI's real ``requests`` code path runs. Turns:

- ``text_turn("Hello")``: text deltas, then ``finish_reason: stop``.
- ``tool_turn("read_file", {"path": "notes.txt"})``: one tool call, ``finish_reason: tool_calls``.
- ``STALL``: headers and one text event, then nothing until ``release`` is set (or the test
  ends); ``first_event_sent`` is set once the event is flushed.
- ``empty_turn()``: a stream with neither text nor calls.
- ``("status", code, body)``: an HTTP error.

Every request body is kept in ``requests`` (decoded JSON) and ``posts`` counts them; ``wait_posts``
blocks until ``n`` arrived, so tests wait on facts, not on time.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.providers_server import LoopbackServer

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "bin" / "miniagent"

Turn = Any  # list[dict] of SSE payloads | "stall" | ("status", code, body)
STALL = "stall"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": "test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_turn(text: str, pieces: int = 3) -> list[dict[str, Any]]:
    """SSE payloads streaming ``text`` in ``pieces`` deltas, then a stop."""
    size = max(1, -(-len(text) // pieces))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    chunks.append(_chunk({}, "stop"))
    return chunks


def tool_turn(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> list[dict[str, Any]]:
    """SSE payloads of one tool call whose arguments arrive in two pieces."""
    raw = json.dumps(arguments)
    half = len(raw) // 2
    return [
        _chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ],
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[:half]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[half:]}}]}),
        _chunk({}, "tool_calls"),
    ]


def empty_turn() -> list[dict[str, Any]]:
    """A stream that ends without text or tool calls."""
    return [_chunk({"role": "assistant", "content": ""}), _chunk({}, "stop")]


class FakeOpenAI(LoopbackServer):
    """A scripted OpenAI chat-completions server (use as a context manager).

    Args:
        turns: one entry per expected POST, in order (see the module docstring). A POST beyond
            the script gets HTTP 400 ``script exhausted``.
    """

    def __init__(self, turns: Iterable[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # the headers of each POST, in order
        self.first_event_sent = threading.Event()
        self._cond = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._cond:
                    index = len(owner.requests)
                    owner.requests.append(body)
                    owner.headers.append(dict(self.headers))
                    owner._cond.notify_all()
                turn = owner.turns[index] if index < len(owner.turns) else ("status", 400, "script exhausted")
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner._serve(self, turn)

        super().__init__(Handler)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def posts(self) -> int:
        """How many POSTs arrived so far."""
        with self._cond:
            return len(self.requests)

    def wait_posts(self, count: int, timeout: float = 10.0) -> None:
        """Block until ``count`` POSTs arrived; ``AssertionError`` after ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")

    def _serve(self, handler: BaseHTTPRequestHandler, turn: Turn) -> None:
        if isinstance(turn, tuple) and turn[0] == "status":
            _, code, text = turn
            body = json.dumps({"error": {"message": text, "type": "invalid_request_error"}}).encode()
            handler.send_response(code)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        if turn == STALL:
            handler.wfile.write(
                b"data: " + json.dumps(_chunk({"role": "assistant", "content": "Thinking"})).encode()
            )
            handler.wfile.write(b"\n\n")
            handler.wfile.flush()
            self.first_event_sent.set()
            self.release.wait(30)
            return
        for payload in turn:
            handler.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()


def cli_env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the CLI child: no real keys, state and configuration under ``tmp_path``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MINIAGENT_PROVIDER", "MINIAGENT_MODEL", "MINIAGENT_BASE_URL")
        and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env["OPENAI_API_KEY"] = "test-key"
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # never the user's configuration file
    env.pop("MINIAGENT_PROFILE", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TERM", None)
    if extra:
        env.update(extra)
    return env


def cli_command(args: Sequence[str], *, launcher: bool = False) -> list[str]:
    """The argv that runs the real CLI: ``python -m miniagent.cli`` or ``python bin/miniagent``."""
    if launcher:
        return [sys.executable, str(BIN), *args]
    return [sys.executable, "-m", "miniagent.cli", *args]


def model_args(server: FakeOpenAI, workspace: Path) -> list[str]:
    """Options pointing the CLI at ``server`` with ``workspace``."""
    return [
        "--provider",
        "openai",
        "--base-url",
        server.base_url,
        "--model",
        "test",
        "--workspace",
        str(workspace),
    ]


def run_cli(
    args: Sequence[str],
    tmp_path: Path,
    *,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    launcher: bool = False,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to completion with stdin from ``input`` (or /dev/null); capture both outputs."""
    return subprocess.run(
        cli_command(args, launcher=launcher),
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, env),
        cwd=tmp_path,
        timeout=timeout,
    )


def spawn_cli(args: Sequence[str], tmp_path: Path, **popen: Any) -> subprocess.Popen[str]:
    """Start the CLI with pipes on stdout/stderr and /dev/null on stdin."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(
        cli_command(args),
        text=True,
        env=cli_env(tmp_path, popen.pop("env", None)),
        cwd=tmp_path,
        **popen,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """Parse every stdout line as JSON (fails on any line that is not)."""
    return [json.loads(line) for line in stdout.splitlines()]


def on_a_terminal(args: list[str], tmp_path: Path, answers: list[tuple[bytes, bytes]], end: bytes) -> str:
    """Run the CLI on a pty; for each (expected, reply) wait for ``expected`` then type ``reply``;
    return everything shown until ``end`` appeared and the child exited."""
    master, slave = os.openpty()
    child = subprocess.Popen(
        cli_command(args),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=cli_env(tmp_path, {"TERM": "xterm", "COLUMNS": "60"}),
        cwd=tmp_path,
        start_new_session=True,
    )
    os.close(slave)
    screen = b""
    try:
        for expected, reply in [*answers, (end, b"")]:
            deadline = time.monotonic() + 20
            while expected not in screen:
                assert time.monotonic() < deadline, f"{expected!r} not seen: {screen!r}"
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    try:
                        screen += os.read(master, 65536)
                    except OSError:
                        break
            if reply:
                os.write(master, reply)
        child.wait(timeout=20)
    finally:
        child.kill()
        os.close(master)
    return screen.decode("utf-8", "replace")
