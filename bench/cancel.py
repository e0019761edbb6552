r"""Cancellation latency: cancel -> ``run_agent`` returns, p50 and p99 over 100+ trials each.

The run goes on in the main thread; a helper thread waits until the run is blocked where the
case says, sleeps a little (so the block is real), then records the time and sets the cancel
event. Latency = the moment ``run_agent`` returned minus the moment the event was set.

- (a) provider blocked on a silent socket: the real ``OpenAIChatClient`` against a local server
  that sends the headers and one event, then nothing (``bench.server``, name ``silent``).
- (b) a cooperative tool waiting on the event (``cancel.wait(30)``).
- (c) ``run_command`` (``miniagent.toolbox``) running ``sleep 30``.
- (d)-(j) the provider in each phase of a request (issue 13 kind 7), every client timeout 60 s:
  connect to a server whose accept queue is full; send a 30 MB body to a server that never
  reads; wait for the headers of a server that read the request and never answers; and the same
  through a loopback HTTP proxy that accepts and waits (forwarding for ``http://``, ``CONNECT``
  for ``https://``), or whose accept queue is full.
- (k)-(o) the same promise for ``GeminiClient``: a silent socket after the first event, connect,
  send 30 MB, waiting for the headers, and waiting for a proxy's ``CONNECT``; (p)-(t) the same
  for ``BedrockClient`` (an AWS event stream silent after its first message).
- (u) the input check of a call whose argument makes a pattern backtrack for minutes
  (``^([A-Za-z0-9]+\s?)+$`` against 36 letters and ``!``): the search runs in the validator's
  child process, which the cancel kills (the hook approves, then the check starts).
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .common import Report, Row, fmt_ms, median, percentile

TARGETS = {"a": 0.100, "b": 0.100, "c": 0.200, **dict.fromkeys("defghijklmnopqrstu", 0.100)}
BIG_BODY = 30 * 1024 * 1024
BLOCKED_FOR = 0.02  # seconds the run is left blocked before the cancel
GEMINI_SILENT = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "Thinking"}], "role": "model"}, '
    b'"index": 0}]}\r\n\r\n'
)


def _trial(start_run: Callable[[threading.Event, threading.Event], Any]) -> float:
    """One trial: ``start_run(cancel, blocked)`` runs the agent; ``blocked`` is set when it blocks."""
    cancel, blocked = threading.Event(), threading.Event()
    fired: list[float] = []

    def canceller() -> None:
        if not blocked.wait(30):
            return
        time.sleep(BLOCKED_FOR)
        fired.append(time.perf_counter())
        cancel.set()

    thread = threading.Thread(target=canceller, daemon=True)
    thread.start()
    result = start_run(cancel, blocked)
    returned = time.perf_counter()
    thread.join(5)
    assert result.stop_reason == "aborted", result.stop_reason
    assert fired, "the run returned before it was cancelled"
    return returned - fired[0]


def _openai(base_url: str, settings: Any) -> Any:
    from miniagent.providers import OpenAIChatClient

    return OpenAIChatClient("gpt-4o-mini", base_url=base_url, api_key="bench", settings=settings)


def _gemini(base_url: str, settings: Any) -> Any:
    from miniagent.providers import GeminiClient

    return GeminiClient("gemini-2.5-flash", base_url=base_url, api_key="bench", settings=settings)


def _bedrock(base_url: str, settings: Any) -> Any:
    from miniagent.providers.bedrock import BedrockClient

    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    return BedrockClient(model, base_url=base_url, api_key="bench", settings=settings)


def _bedrock_silent() -> bytes:
    """One ``contentBlockDelta`` message of an AWS event stream (prelude, headers, payload, CRCs)."""
    import struct
    import zlib

    headers = b""
    for name, value in ((":event-type", "contentBlockDelta"), (":message-type", "event")):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        )
    payload = b'{"contentBlockIndex":0,"delta":{"text":"Thinking"}}'
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _case_socket(
    base_url: str, make: Callable[[str, Any], Any] = _openai
) -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import run_agent
    from miniagent.providers import HTTPSettings, RetryPolicy

    no_retry = HTTPSettings(retry=RetryPolicy(max_retries=0))

    client = make(base_url, no_retry)

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        return run_agent(
            client=client,
            system="bench",
            tools=[],
            user="go",
            max_turns=1,
            cancel=cancel,
            on_event=lambda event: blocked.set(),  # the one event arrived: now the socket is silent
        )

    return start


class _Listener:
    """A loopback listener: ``mode`` ``"full"`` never accepts (its accept queue is filled, new
    connects hang), ``"idle"`` accepts and never reads, ``"reads"`` reads and never answers.
    ``seen`` is set at each accepted connection (at once for ``"full"``)."""

    def __init__(self, mode: str) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0 if mode == "full" else 16)
        self.port = int(self.sock.getsockname()[1])
        self.mode = mode
        self.seen = threading.Event()
        self.release = threading.Event()
        self._held: list[socket.socket] = []
        if mode == "full":
            for _ in range(8):
                filler = socket.socket()
                filler.setblocking(False)
                with contextlib.suppress(OSError):
                    filler.connect(("127.0.0.1", self.port))
                self._held.append(filler)
            time.sleep(0.05)
        else:
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._held.append(conn)
            if self.mode == "reads":
                threading.Thread(target=self._read, args=(conn,), daemon=True).start()
            self.seen.set()

    def _read(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while conn.recv(65536):
                pass

    def close(self) -> None:
        for s in (*self._held, self.sock):
            with contextlib.suppress(OSError):
                s.close()


@contextlib.contextmanager
def _proxy_env(name: str | None, port: int) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "no_proxy")}
    for key in saved:
        os.environ.pop(key, None)
    if name is not None:
        os.environ[name] = f"http://127.0.0.1:{port}"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _case_phase(
    listener: _Listener,
    base_url: str,
    proxy: str | None,
    body_chars: int,
    make: Callable[[str, Any], Any] = _openai,
) -> Callable[[threading.Event, threading.Event], Any]:
    """The provider blocked in one phase of a request; ``proxy``: the variable pointing at ``listener``."""
    from miniagent import run_agent
    from miniagent.providers import HTTPSettings, RetryPolicy

    slow = HTTPSettings(read_timeout=60.0, connect_timeout=60.0, retry=RetryPolicy(max_retries=0))
    user = "x" * body_chars if body_chars else "go"

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        listener.seen.clear()
        if listener.mode == "full":
            listener.seen.set()
        client = make(base_url, slow)
        threading.Thread(target=lambda: listener.seen.wait(30) and blocked.set(), daemon=True).start()
        with _proxy_env(proxy, listener.port):
            try:
                return run_agent(
                    client=client, system="bench", tools=[], user=user, max_turns=1, cancel=cancel
                )
            finally:
                client.close()

    return start


def _phase_cases(stack: contextlib.ExitStack) -> dict[str, tuple[str, Callable[..., Any], int]]:
    """(label, start, trials divisor) of the cases (d)-(j); listeners are closed by ``stack``."""

    def listener(mode: str) -> _Listener:
        made = _Listener(mode)
        stack.callback(made.close)
        return made

    full, idle, reads = listener("full"), listener("idle"), listener("reads")
    direct, gemini = "http://127.0.0.1:{}/v1", "http://127.0.0.1:{}"
    remote, remote_tls = "http://api.example.test/v1", "https://api.example.test/v1"
    return {
        "d": ("connect: accept queue full", _case_phase(full, direct.format(full.port), None, 0), 1),
        "e": (
            "send: 30 MB body, server never reads",
            _case_phase(idle, direct.format(idle.port), None, BIG_BODY),
            10,
        ),
        "f": ("waiting for headers", _case_phase(reads, direct.format(reads.port), None, 0), 1),
        "g": ("proxy: connect, accept queue full", _case_phase(full, remote, "HTTP_PROXY", 0), 1),
        "h": ("proxy (http://): waiting for headers", _case_phase(reads, remote, "HTTP_PROXY", 0), 1),
        "i": ("proxy (https://): waiting for CONNECT", _case_phase(reads, remote_tls, "HTTPS_PROXY", 0), 1),
        "j": ("proxy: send 30 MB, proxy never reads", _case_phase(idle, remote, "HTTP_PROXY", BIG_BODY), 10),
        "l": (
            "Gemini: connect, accept queue full",
            _case_phase(full, gemini.format(full.port), None, 0, _gemini),
            1,
        ),
        "m": (
            "Gemini: send 30 MB, server never reads",
            _case_phase(idle, gemini.format(idle.port), None, BIG_BODY, _gemini),
            10,
        ),
        "n": (
            "Gemini: waiting for headers",
            _case_phase(reads, gemini.format(reads.port), None, 0, _gemini),
            1,
        ),
        "o": (
            "Gemini: proxy (https://), waiting for CONNECT",
            _case_phase(reads, "https://gemini.example.test", "HTTPS_PROXY", 0, _gemini),
            1,
        ),
        "q": (
            "Bedrock: connect, accept queue full",
            _case_phase(full, gemini.format(full.port), None, 0, _bedrock),
            1,
        ),
        "r": (
            "Bedrock: send 30 MB, server never reads",
            _case_phase(idle, gemini.format(idle.port), None, BIG_BODY, _bedrock),
            10,
        ),
        "s": (
            "Bedrock: waiting for headers",
            _case_phase(reads, gemini.format(reads.port), None, 0, _bedrock),
            1,
        ),
        "t": (
            "Bedrock: proxy (https://), waiting for CONNECT",
            _case_phase(reads, "https://bedrock-runtime.example.test", "HTTPS_PROXY", 0, _bedrock),
            1,
        ),
    }


def _case_tool() -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import ToolCall, ToolResult, run_agent
    from miniagent.testing import ScriptedClient
    from miniagent.tools import Tool

    box: dict[str, threading.Event] = {}

    def wait(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        box["blocked"].set()
        assert cancel is not None
        cancel.wait(30)
        return ToolResult("stopped" if cancel.is_set() else "waited")

    tool = Tool("wait", "Wait for the cancel event.", {"type": "object", "properties": {}}, wait)

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        box["blocked"] = blocked
        client = ScriptedClient([[ToolCall("call_1", "wait", {})], ["never"]])
        return run_agent(client=client, system="bench", tools=[tool], user="go", max_turns=2, cancel=cancel)

    return start


def _case_pattern() -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import Approval, ToolCall, ToolResult, run_agent
    from miniagent.testing import ScriptedClient
    from miniagent.tools import Tool

    name = {"type": "string", "pattern": r"^([A-Za-z0-9]+\s?)+$"}
    schema = {"type": "object", "properties": {"name": name}}
    tool = Tool("name", "Take a name.", schema, lambda arguments, cancel: ToolResult("never"))

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        client = ScriptedClient([[ToolCall("call_1", "name", {"name": "a" * 36 + "!"})], ["never"]])

        def approve(call: Any) -> Approval:
            blocked.set()  # the input check starts right after this
            return Approval(True)

        return run_agent(
            client=client,
            system="bench",
            tools=[tool],
            user="go",
            max_turns=2,
            cancel=cancel,
            before_tool_call=approve,
        )

    return start


def _case_command(workspace: str) -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import ToolCall, run_agent
    from miniagent.testing import ScriptedClient
    from miniagent.toolbox import default_tools

    tools = [t for t in default_tools(workspace) if t.name == "run_command"]

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        client = ScriptedClient([[ToolCall("call_1", "run_command", {"command": "sleep 30"})], ["never"]])

        def approve(call: Any) -> Any:
            from miniagent import Approval

            blocked.set()  # the command starts right after this; BLOCKED_FOR lets it get going
            return Approval(True)

        return run_agent(
            client=client,
            system="bench",
            tools=tools,
            user="go",
            max_turns=2,
            cancel=cancel,
            before_tool_call=approve,
        )

    return start


def run(report: Report, quick: bool) -> None:
    from .server import SSEServer

    section = report.section("cancel", "Cancellation latency")
    trials = 100 if quick else 200
    section.notes.append(
        f"{trials} trials per case (the 30 MB cases: a tenth); each run is left blocked "
        f"{BLOCKED_FOR * 1e3:.0f} ms, then the event is set from another thread; latency = set -> "
        "`run_agent` returned. (c) kills the command's process group (SIGTERM) and waits for it. "
        "(d)-(j): every client timeout is 60 s; the socket of each phase is shut down by the stream's "
        "cancel watcher, which holds it from before the TCP connect."
    )
    silent = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"},"finish_reason":null}]}\n\n'
    )
    with (
        SSEServer() as server,
        tempfile.TemporaryDirectory(prefix="bench-cancel-") as workspace,
        contextlib.ExitStack() as stack,
    ):
        server.add("silent", "openai", silent)
        server.add("silent", "gemini", GEMINI_SILENT)
        server.add("silent", "bedrock", _bedrock_silent())
        cases: dict[str, tuple[str, Callable[..., Any], int]] = {
            "a": (
                "provider blocked on a silent socket (OpenAIChatClient)",
                _case_socket(server.openai_base("silent")),
                1,
            ),
            "b": ("cooperative tool waiting on the event", _case_tool(), 1),
            "c": ("run_command running `sleep 30`", _case_command(workspace), 1),
            "k": (
                "Gemini: provider blocked on a silent socket (GeminiClient)",
                _case_socket(server.gemini_base("silent"), _gemini),
                1,
            ),
            "p": (
                "Bedrock: provider blocked on a silent socket (BedrockClient)",
                _case_socket(server.bedrock_base("silent"), _bedrock),
                1,
            ),
            **_phase_cases(stack),
            "u": ("input check backtracking in a pattern (search child)", _case_pattern(), 1),
        }
        for key, (label, start, divisor) in cases.items():
            _trial(start)  # warm-up
            samples = [_trial(start) for _ in range(max(5, trials // divisor))]
            p50, p99 = median(samples), percentile(samples, 99)
            section.rows.append(
                Row(
                    f"({key}) {label}",
                    f"p50 {fmt_ms(p50)}, p99 {fmt_ms(p99)}",
                    f"p99 < {TARGETS[key] * 1e3:.0f} ms",
                    p99 < TARGETS[key],
                    f"max {fmt_ms(max(samples))}; {len(samples)} trials",
                )
            )
