"""The loop's log records: requests, tool calls and the stop reason, on ``miniagent.agent``.

Nothing is formatted unless an application receives ``miniagent`` records (``_log``): the loop
decides once per run (``log.enabled(INFO)``) whether it calls these steps at all.
"""

from __future__ import annotations

import time

from ._log import Logger
from .context import MessageWindow
from .messages import ToolCall
from .tools import Tool, ToolResult

__all__ = ["LoopLogs", "log"]

log = Logger("miniagent.agent")  # requests, tools, stop reason (see _log: nothing until an app logs)


class LoopLogs:
    """The loop's logging steps (a base of the loop's state class)."""

    def log_request(self, turn: int, window: MessageWindow) -> float:
        log.info("request %d: %d messages", turn, len(window))
        return time.monotonic()

    def log_request_done(self, turn: int, started: float, text: str, calls: list[ToolCall]) -> None:
        seconds = time.monotonic() - started
        done = "request %d done in %.2f s: %d characters, %d tool calls"
        log.info(done, turn, seconds, len(text), len(calls))

    def log_tool(self, tool: Tool, call: ToolCall) -> float:
        log.info("tool %s (%s) started", tool.name, call.id)
        return time.monotonic()

    def log_tool_done(self, tool: Tool, call: ToolCall, started: float, result: ToolResult) -> None:
        seconds, outcome = time.monotonic() - started, "error" if result.is_error else "ok"
        done = "tool %s (%s) done in %.2f s: %s, %d characters"
        log.info(done, tool.name, call.id, seconds, outcome, len(result.content))
