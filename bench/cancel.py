"""Cancellation latency: cancel -> ``run_agent`` returns, p50 and p99 over 100+ trials each.

The run goes on in the main thread; a helper thread waits until the run is blocked where the
case says, sleeps a little (so the block is real), then records the time and sets the cancel
event. Latency = the moment ``run_agent`` returned minus the moment the event was set.

- (a) provider blocked on a silent socket: the real ``OpenAIChatClient`` against a local server
  that sends the headers and one event, then nothing (``bench.server``, name ``silent``).
- (b) a cooperative tool waiting on the event (``cancel.wait(30)``).
- (c) ``run_command`` (``miniagent.toolbox``) running ``sleep 30``.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from .common import Report, Row, fmt_ms, median, percentile

TARGETS = {"a": 0.100, "b": 0.100, "c": 0.200}
BLOCKED_FOR = 0.02  # seconds the run is left blocked before the cancel


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


def _case_socket(base_url: str) -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import run_agent
    from miniagent.providers import HTTPSettings, OpenAIChatClient, RetryPolicy

    no_retry = HTTPSettings(retry=RetryPolicy(max_retries=0))

    client = OpenAIChatClient("gpt-4o-mini", base_url=base_url, settings=no_retry)

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
        f"{trials} trials per case; each run is left blocked {BLOCKED_FOR * 1e3:.0f} ms, then the event "
        "is set from another thread; latency = set -> `run_agent` returned. (c) kills the command's process "
        "group (SIGTERM) and waits for it."
    )
    silent = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"},"finish_reason":null}]}\n\n'
    )
    with SSEServer() as server, tempfile.TemporaryDirectory(prefix="bench-cancel-") as workspace:
        server.add("silent", "openai", silent)
        cases = {
            "a": (
                "provider blocked on a silent socket (OpenAIChatClient)",
                _case_socket(server.openai_base("silent")),
            ),
            "b": ("cooperative tool waiting on the event", _case_tool()),
            "c": ("run_command running `sleep 30`", _case_command(workspace)),
        }
        for key, (label, start) in cases.items():
            _trial(start)  # warm-up
            samples = [_trial(start) for _ in range(trials)]
            p50, p99 = median(samples), percentile(samples, 99)
            section.rows.append(
                Row(
                    f"({key}) {label}",
                    f"p50 {fmt_ms(p50)}, p99 {fmt_ms(p99)}",
                    f"p99 < {TARGETS[key] * 1e3:.0f} ms",
                    p99 < TARGETS[key],
                    f"max {fmt_ms(max(samples))}",
                )
            )
