"""Shared helpers of the stress tier (``tests/stress``).

The tier runs in CI with reduced counts; ``MINIAGENT_STRESS_FULL=1`` switches every test to its
full count (e.g. 300 crash trials instead of 60, 20,000 soak turns instead of 5,000).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from miniagent import Message
from miniagent.messages import message_to_json

HERE = Path(__file__).resolve().parent
FULL = os.environ.get("MINIAGENT_STRESS_FULL", "") not in ("", "0")
PYTHON = sys.executable


def scale(ci: int, full: int) -> int:
    """``full`` when ``MINIAGENT_STRESS_FULL=1``, else ``ci``."""
    return full if FULL else ci


def digest(message: Message) -> str:
    """A short fingerprint of a message's JSON form (what the crash child reports)."""
    data = json.dumps(message_to_json(message), ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:32]


def unanswered_calls(messages: Sequence[Message]) -> list[str]:
    """Call ids that do not have exactly one tool message right after their assistant message.

    Also reports tool messages that answer no pending call (as ``"orphan:<id>"``).
    """
    problems: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            problems.append(f"orphan:{message.tool_call_id}")
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered: list[str | None] = []
        while index < len(messages) and messages[index].role == "tool":
            answered.append(messages[index].tool_call_id)
            index += 1
        for call in message.tool_calls:
            if answered.count(call.id) != 1:
                problems.append(call.id)
        expected = {call.id for call in message.tool_calls}
        problems.extend(f"orphan:{i}" for i in answered if i not in expected)
    return problems


def jsonl_lines_ok(path: Path) -> bool:
    """Every line of ``path`` is JSON and the file ends with a newline (or is empty)."""
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        return False
    try:
        for line in data.splitlines():
            json.loads(line)
    except ValueError:
        return False
    return True
