"""Shared helpers for the core tests: tools that record what ran, and invariant checks."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from miniagent import Message, Tool, ToolResult


def recording_tool(
    name: str = "echo",
    *,
    log: list[dict[str, Any]] | None = None,
    action: Callable[[dict[str, Any], threading.Event | None], ToolResult] | None = None,
    read_only: bool = False,
) -> Tool:
    """A tool that appends its input to ``log`` and returns ``action(...)`` or ``ran NAME``."""
    calls = log if log is not None else []

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        calls.append(arguments)
        if action is not None:
            return action(arguments, cancel)
        return ToolResult(f"ran {name}")

    return Tool(name, f"the {name} tool", {"type": "object"}, execute, read_only)


def assert_every_call_answered_once(messages: list[Message]) -> None:
    """Each committed call id has exactly one tool result, right after its assistant message
    (notes about calls may stand among the results)."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            raise AssertionError(f"tool message without a preceding call at {index - 1}")
        if message.role != "assistant" or not message.tool_calls:
            continue
        expected = [call.id for call in message.tool_calls]
        answered = []
        while index < len(messages) and messages[index].role == "tool":
            if messages[index].state is None:  # a note (miniagent.pending) answers nothing
                answered.append(messages[index].tool_call_id)
            index += 1
        assert answered == expected, (expected, answered)


@contextlib.contextmanager
def usual_umask(mask: int = 0o022) -> Iterator[None]:
    """Run the block under the usual umask (files 0644 unless asked otherwise), then restore it."""
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)
