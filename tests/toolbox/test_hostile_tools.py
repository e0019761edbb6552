"""Hostile and unlucky input to the built-in tools (issue 13 kinds 1-3): error results, never a
raise, a hang or unbounded memory. Bounded: fixed sizes, fixed time limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from miniagent import ToolResult
from miniagent.toolbox import default_tools


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


def call(ws: Path, name: str, **arguments: Any) -> ToolResult:
    tool = {t.name: t for t in default_tools(ws)}[name]
    return tool.execute(arguments, None)


def finishes(function: Any, seconds: float = 10.0) -> Any:
    """Run ``function`` in a thread; fail (instead of hanging the suite) if it blocks."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(function()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the tool blocked"
    return box[0]


# --- kind 1: model-chosen arguments that raised --------------------------------------------------


def test_tilde_is_never_expanded_inside_a_workspace(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws.parent / "home-that-must-not-be-used"))
    (ws / "~notes.txt").write_text("tilde file\n")
    assert call(ws, "read_file", path="~notes.txt") == ToolResult("tilde file\n")
    missing = call(ws, "read_file", path="~nosuchuser/x")
    assert missing == ToolResult("file not found: ~nosuchuser/x", is_error=True)
    assert not call(ws, "write_file", path="~/x.txt", content="here").is_error
    assert (ws / "~" / "x.txt").read_text() == "here"
    assert call(ws, "list_dir", path="~").content == "~/x.txt"


@pytest.mark.parametrize("pattern", ["a{9999999999}", "(" * 500 + ")" * 500, "(" * 5000 + "a" + ")" * 5000])
def test_patterns_that_raise_in_compile_are_error_results(ws: Path, pattern: str) -> None:
    result = call(ws, "grep", pattern=pattern)
    assert result.is_error and result.content.startswith("invalid regular expression")
    assert len(result.content) < 400


# --- kind 2: special files ---------------------------------------------------------------------------


def test_a_fifo_never_blocks_a_file_tool(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    refused = "pipe is a named pipe (FIFO), not a regular file; refused"
    assert finishes(lambda: call(ws, "read_file", path="pipe")) == ToolResult(refused, is_error=True)
    assert finishes(lambda: call(ws, "read_file", path="pipe", limit=1)).is_error
    assert finishes(lambda: call(ws, "edit_file", path="pipe", old_text="a", new_text="b")).is_error
    written = finishes(lambda: call(ws, "write_file", path="pipe", content="x"))
    assert written.is_error and "named pipe (FIFO)" in written.content
    # With a reader waiting, a write would have gone into the pipe: still refused, nothing sent.
    reader = os.open(ws / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert finishes(lambda: call(ws, "write_file", path="pipe", content="x")).is_error
        assert os.read(reader, 10) == b""  # no writer left, nothing was written
    finally:
        os.close(reader)
    assert (ws / "pipe").is_fifo()


# --- kind 3: memory -----------------------------------------------------------------------------------

# call_mb: the peak of what the call itself allocated (tracemalloc: Python's allocations, which
# hold every byte a tool reads), independent of the interpreter's size and of the machine's load;
# own_mb (peak RSS) also counts the interpreter and imports, so a limit on it measures the machine.
_PEAK = r"""
import json, resource, sys, tracemalloc
from miniagent.toolbox import default_tools
tools = {t.name: t for t in default_tools(sys.argv[1])}
tracemalloc.start()
result = tools[sys.argv[2]].execute(json.loads(sys.argv[3]), None)
call_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"content": result.content, "is_error": result.is_error,
                  "call_mb": call_peak / 1024**2,
                  "own_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def peak(ws: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool call in a fresh interpreter; its result and peak RSS (MB) of it and children."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(ws), tool, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture
def sparse(ws: Path) -> Path:
    """A 2 GB text file that is a hole after its first 1,000 lines (no disk used)."""
    path = ws / "sparse.txt"
    with open(path, "wb") as handle:
        handle.write(b"".join(b"line %d\n" % n for n in range(1, 1001)))
        handle.truncate(2 * 1024**3)
    return path


def test_read_file_reads_only_what_it_shows(ws: Path, sparse: Path) -> None:
    lines = peak(ws, "read_file", {"path": "sparse.txt", "offset": 3, "limit": 5})
    assert lines["content"] == (
        "line 3\nline 4\nline 5\nline 6\nline 7\n\n[lines 3-7; more follow; continue with offset=8]"
    )
    # A 2 GB file: reading it whole would allocate 2048 MB; what is shown needs a few.
    assert lines["call_mb"] < 64, lines["call_mb"]
    whole = peak(ws, "read_file", {"path": "sparse.txt"})
    assert whole["content"].startswith("line 1\nline 2\n")
    assert "bytes left out ...]" in whole["content"] and whole["call_mb"] < 64, whole["call_mb"]


def test_read_file_of_a_large_file_past_the_end_and_in_the_middle(ws: Path) -> None:
    path = ws / "big.txt"
    path.write_bytes(b"".join(b"%d\n" % n for n in range(1, 1_500_001)))  # ~10 MB, > the whole-read size
    tools = {t.name: t for t in default_tools(ws)}
    middle = tools["read_file"].execute({"path": "big.txt", "offset": 1_000_000, "limit": 2}, None)
    note = "[lines 1000000-1000001; more follow; continue with offset=1000002]"
    assert middle.content == f"1000000\n1000001\n\n{note}"
    past = tools["read_file"].execute({"path": "big.txt", "offset": 2_000_000}, None)
    assert past == ToolResult("offset 2000000 is past the end of big.txt (1500000 lines)", is_error=True)


def test_grep_worker_memory_is_capped_and_the_result_says_so(ws: Path) -> None:
    (ws / "long.txt").write_bytes(b"a" * 20_000_000 + b"\n")
    (ws / "short.txt").write_text("ac\n")
    found = peak(ws, "grep", {"pattern": "(a|b)*c", "timeout": 60})
    assert found["content"] == (
        "short.txt:1: ac\n[skipped: 1 files the search ran out of memory on (limit 192 MB)]"
    )
    assert found["children_mb"] < 200
