"""The durability option: ``run_agent(..., session_fsync=True)`` / ``append_session(..., fsync=True)``.

With the option every appended line is followed by ``os.fsync`` of the session file (after the
line is written: the size at the fsync is the end of that line), and creating the file is followed
by an ``fsync`` of its folder and of the parent of every folder created for it. Without the option
nothing is fsynced. The cost is measured and printed (appends/s with and without fsync; ``-s``):
400 fsynced appends in CI, 2,000 with ``MINIAGENT_STRESS_FULL=1``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from stress_support import scale

from miniagent import Message, ToolCall, append_session, load_session, run_agent
from miniagent.session import SessionFile
from miniagent.testing import ScriptedClient
from miniagent.tools import tool


@tool
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: the text.
    """
    return text


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Patch ``os.fsync`` to log ``(path, size)`` (size -1 for a folder) and still sync."""
    log: list[tuple[str, int]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        log.append((path, -1 if os.path.isdir(path) else os.fstat(fd).st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return log


def line_ends(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i + 1 for i, byte in enumerate(data) if byte == 0x0A]


def script() -> ScriptedClient:
    return ScriptedClient(
        [
            ["one", ToolCall("c1", "echo", {"text": "a"}), ToolCall("c2", "echo", {"text": "b"})],
            [ToolCall("c3", "nope", {})],
            ["done"],
        ]
    )


def test_run_agent_fsyncs_every_line_and_the_new_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = record_fsyncs(monkeypatch)
    session = tmp_path / "new" / "deeper" / "s.jsonl"
    result = run_agent(
        client=script(),
        system="s",
        tools=[echo],
        user="u",
        max_turns=4,
        session_path=session,
        session_fsync=True,
    )
    assert result.stop_reason == "complete"
    folders = [path for path, size in log if size < 0]
    files = [(path, size) for path, size in log if size >= 0]
    assert folders == [str(session.parent), str(tmp_path / "new"), str(tmp_path)]
    assert all(path == str(session) for path, _ in files)
    assert [size for _, size in files] == line_ends(session)  # one fsync after each line
    assert len(files) == len(result.messages) == 7
    assert log[: len(folders)] == [(f, -1) for f in folders]  # the folders right at creation

    log.clear()  # resuming an existing session: no folder fsync, one per line again
    run_agent(
        client=ScriptedClient([["again"]]),
        system="s",
        tools=[],
        user="more",
        max_turns=1,
        session_path=session,
        session_fsync=True,
    )
    assert [size for _, size in log] == line_ends(session)[-2:]

    log.clear()
    append_session(session, Message("user", "x"), fsync=True)
    assert log == [(str(session), session.stat().st_size)]

    log.clear()  # without the option nothing is fsynced
    run_agent(
        client=ScriptedClient([["no sync"]]),
        system="s",
        tools=[],
        user="u",
        max_turns=1,
        session_path=session,
    )
    append_session(session, Message("user", "y"))
    assert log == []
    assert len(load_session(session)) == 13


def test_fsync_after_a_torn_tail_is_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = tmp_path / "s.jsonl"
    append_session(session, Message("user", "kept"))
    with session.open("ab") as stream:
        stream.write(b'{"role":"assistant","content":"to')  # a crash in the middle of a line
    log = record_fsyncs(monkeypatch)
    append_session(session, Message("user", "next"), fsync=True)
    assert log == [(str(session), session.stat().st_size)]
    assert load_session(session) == [Message("user", "kept"), Message("user", "next")]


def appends_per_second(path: Path, count: int, fsync: bool) -> float:
    message = Message("assistant", "a typical answer " * 10, (ToolCall("id", "write_file", {"path": "x"}),))
    with SessionFile(path, fsync=fsync) as session:
        started = time.perf_counter()
        for _ in range(count):
            session.append(message)
        elapsed = time.perf_counter() - started
    return count / elapsed


def test_fsync_cost(tmp_path: Path) -> None:
    synced_count = scale(400, 2000)
    plain = appends_per_second(tmp_path / "plain.jsonl", synced_count * 10, fsync=False)
    synced = appends_per_second(tmp_path / "synced.jsonl", synced_count, fsync=True)
    print(
        f"\n[fsync cost] without fsync: {plain:,.0f} appends/s; with fsync: {synced:,.0f} appends/s "
        f"({plain / synced:.1f}x slower; {1e6 / synced:.0f} us per fsynced append) on {tmp_path}"
    )
    assert len(load_session(tmp_path / "synced.jsonl")) == synced_count
