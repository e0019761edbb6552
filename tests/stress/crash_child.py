"""Child process of the crash trials (``test_stress_crash.py``); killed with SIGKILL by the parent.

Usage: ``python crash_child.py SESSION WORKSPACE REPORT_FD SEED PREFIX [--pause-after N]
[--pause-in-tool K] [--tear-at N] [--local]``

Runs ``run_agent`` with the session, real tools that write files (``default_tools(WORKSPACE)``
``write_file`` and a ``note`` tool writing with ``os.write``) and a scripted model: many turns of
text and tool calls, some with large arguments (so some session lines are long enough to be torn
by a kill). ``--local`` uses the embedded local model instead of the script.

Side channel: before ``run_agent`` the child writes ``ready\\n`` to REPORT_FD; then ``on_message``
writes ``commit <index> <digest>\\n`` for each committed message with one ``os.write`` (a short
line, atomic on a pipe) before it returns. ``--pause-after N`` blocks in ``on_message`` after the
Nth report (reading stdin, which the parent never writes), so the parent kills it exactly there;
``--pause-in-tool K`` blocks inside the Kth tool execution, after its file was written.
``--tear-at N`` makes the Nth ``os.write`` of the session module write only the first half of its
line and then block: a kill there leaves exactly the torn tail a crash in the middle of a write
leaves (real kills rarely land inside one ``write`` call).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stress_support import digest

from miniagent import Message, ToolCall, run_agent, tool
from miniagent.testing import ScriptedClient, Turn
from miniagent.toolbox import default_tools


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("session")
    parser.add_argument("workspace")
    parser.add_argument("report_fd", type=int)
    parser.add_argument("seed", type=int)
    parser.add_argument("prefix")
    parser.add_argument("--pause-after", type=int, default=0)
    parser.add_argument("--pause-in-tool", type=int, default=0)
    parser.add_argument("--tear-at", type=int, default=0)
    parser.add_argument("--local", action="store_true")
    args = parser.parse_args()
    report_fd: int = args.report_fd
    workspace = Path(args.workspace)
    rng = random.Random(args.seed)
    reported = 0
    tool_runs = 0

    def pause() -> None:
        os.write(report_fd, b"paused\n")
        sys.stdin.buffer.read()  # the parent never writes: blocks until killed

    def on_message(message: Message) -> None:
        nonlocal reported
        reported += 1
        os.write(report_fd, f"commit {reported} {digest(message)}\n".encode())
        if reported == args.pause_after:
            pause()

    @tool
    def note(name: str, text: str) -> str:
        """Write a note file with os.write.

        Args:
            name: the file name inside the workspace.
            text: the text.
        """
        nonlocal tool_runs
        fd = os.open(workspace / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        tool_runs += 1
        if tool_runs == args.pause_in_tool:
            pause()
        return f"noted {name} ({len(text)} characters)"

    if args.tear_at:
        tear_session_write(args.tear_at, pause)
    tools = [*default_tools(workspace), note]
    if args.local:
        from miniagent.providers import create_client

        client = create_client("local")
        user = "Write a file hello.txt containing 'hi', then write bye.txt containing 'bye'."
        max_turns = 4
    else:
        turns = script(rng, args.prefix)
        client = ScriptedClient(turns, record_messages=False)
        user = f"run {args.prefix}: write many files"
        max_turns = len(turns)
    os.write(report_fd, b"ready\n")
    run_agent(
        client=client,
        system="You write files with tools.",
        tools=tools,
        user=user,
        max_turns=max_turns,
        session_path=args.session,
        on_message=on_message,
    )
    os.write(report_fd, b"finished\n")
    return 0


class _TearingOs:
    """Stands in for ``os`` inside ``miniagent.session``: the Nth ``write`` is torn, then blocks."""

    def __init__(self, tear_at: int, pause: Callable[[], None]) -> None:
        self.writes = 0
        self.tear_at = tear_at
        self.pause = pause

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        self.writes += 1
        if self.writes == self.tear_at:
            os.write(fd, bytes(data[: max(1, len(data) // 2)]))
            self.pause()
        return os.write(fd, data)


def tear_session_write(tear_at: int, pause: Callable[[], None]) -> None:
    import miniagent.session as session_module

    session_module.os = _TearingOs(tear_at, pause)  # type: ignore[assignment]


def script(rng: random.Random, prefix: str) -> list[Turn]:
    """Many turns of text and tool calls; about one call in eight has a large argument."""
    turns: list[Turn] = []
    for turn in range(60):
        items: list[str | ToolCall] = [f"turn {turn}: writing files. "]
        for k in range(rng.randint(1, 3)):
            size = rng.choice((10, 200, 3000)) if rng.random() > 0.125 else rng.randint(100_000, 1_000_000)
            text = "".join(rng.choice("abcdefghij \u00e9\u4e2d\n") for _ in range(min(size, 64))) * (
                size // 64 + 1
            )
            call_id = f"{prefix}_{turn}_{k}"
            kind = rng.random()
            if kind < 0.45:
                items.append(ToolCall(call_id, "write_file", {"path": f"f{turn}_{k}.txt", "content": text}))
            elif kind < 0.9:
                items.append(ToolCall(call_id, "note", {"name": f"n{turn}_{k}.txt", "text": text}))
            elif kind < 0.95:
                items.append(ToolCall(call_id, "no_such_tool", {"x": 1}))
            else:
                items.append(ToolCall(call_id, "write_file", {"path": 7}))  # bad input
        turns.append(items)
    turns.append(["all files written."])
    return turns


if __name__ == "__main__":
    sys.exit(main())
