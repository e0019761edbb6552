"""The tools of the Celery test runs (built inside the worker from the spec)."""

from __future__ import annotations

import os
import threading
from typing import Any

from miniagent import Tool, ToolResult


def make_tools(seconds: float = 0.0, started_file: str | None = None) -> list[Tool]:
    """One tool ``work``: waits ``seconds`` (ends at once on cancel, with an error result that says
    so); first writes the process group of its worker to ``started_file`` (so a test can kill
    that worker)."""

    def work(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        if started_file is not None:
            with open(started_file, "a") as stream:
                stream.write(f"{os.getpgid(0)}\n")
        if cancel is not None and cancel.wait(seconds):
            return ToolResult(f"worked {arguments.get('n')} (cancelled)", is_error=True)
        return ToolResult(f"worked {arguments.get('n')}")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return [Tool("work", "Do one step of work.", schema, work)]
