"""Built-in tools against real files and real processes in temporary folders."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from miniagent import Message, ToolCall, ToolResult, run_agent
from miniagent._capture import OutputBuffer
from miniagent.process.groups import group_alive
from miniagent.testing import ScriptedClient, Turn
from miniagent.toolbox import Workspace, cap, default_tools, run_shell
from miniagent.tools import Tool, check_input

Run = Callable[..., ToolResult]
ECHO_PGID = "awk '{print $5}' /proc/$$/stat"  # the command's process group id ($$ runs under the reaper)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace ``ws`` and, next to it, ``ws_evil`` and ``outside`` with secrets."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "ws_evil").mkdir()
    (tmp_path / "ws_evil" / "secret.txt").write_text("evil secret\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside secret\n")
    return ws, tmp_path


@pytest.fixture
def ws(dirs: tuple[Path, Path]) -> Path:
    return dirs[0]


def tools_for(root: Path, **options: Any) -> dict[str, Tool]:
    return {t.name: t for t in default_tools(root, **options)}


@pytest.fixture
def run(ws: Path) -> Run:
    tools = tools_for(ws)

    def call(name: str, cancel: threading.Event | None = None, **arguments: Any) -> ToolResult:
        tool = tools[name]
        problem = check_input(tool.input_schema, arguments)
        assert problem is None, problem
        return tool.execute(arguments, cancel)

    return call


def group_gone(pgid: int, within: float = 5.0) -> bool:
    """Check that no member of group ``pgid`` is alive now, then poll until ``killpg(pgid, 0)``
    raises ProcessLookupError (killed orphans stay zombies until init reaps them, which takes
    up to ~2 s in some containers)."""
    assert not group_alive(pgid), "a member of the group is still running"
    deadline = time.monotonic() + within
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


# --- the tool set -----------------------------------------------------------------------------------


def test_default_tools_names_flags_and_schemas(ws: Path) -> None:
    tools = default_tools(ws)
    assert [t.name for t in tools] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "grep",
        "run_command",
    ]
    flags = {t.name: t.read_only for t in tools}
    assert flags == {
        "read_file": True,
        "write_file": False,
        "edit_file": False,
        "list_dir": True,
        "grep": True,
        "run_command": False,
    }
    for t in tools:
        assert t.description
        assert t.input_schema["type"] == "object"
        assert t.input_schema["additionalProperties"] is False
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), (t.name, name)
            assert prop.get("type"), (t.name, name)
        for name in t.input_schema.get("required", []):
            assert name in t.input_schema["properties"]


def test_default_tools_rejects_missing_workspace_and_tiny_cap(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        default_tools(tmp_path / "nope")
    with pytest.raises(ValueError):
        default_tools(tmp_path, max_output_chars=10)


# --- confinement ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir", "grep"])
@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "{root}/outside/secret.txt",
        "{root}/ws_evil/secret.txt",
        "../ws_evil/secret.txt",
        "/etc/passwd",
    ],
)
def test_paths_outside_are_refused(dirs: tuple[Path, Path], run: Run, tool: str, path: str) -> None:
    _, root = dirs
    path = path.format(root=root)
    arguments: dict[str, Any] = {"path": path}
    if tool == "write_file":
        arguments["content"] = "pwned"
    elif tool == "edit_file":
        arguments.update(old_text="secret", new_text="pwned")
    elif tool == "grep":
        arguments["pattern"] = "secret"
    result = run(tool, **arguments)
    assert result.is_error
    assert "outside the workspace" in result.content
    assert "secret\n" not in result.content
    assert (root / "outside" / "secret.txt").read_text() == "outside secret\n"
    assert (root / "ws_evil" / "secret.txt").read_text() == "evil secret\n"


def test_string_prefix_sibling_is_not_inside(dirs: tuple[Path, Path]) -> None:
    ws, root = dirs
    workspace = Workspace(ws)
    assert str(root / "ws_evil").startswith(str(ws))  # the trap a prefix check falls into
    assert not workspace.contains((root / "ws_evil").resolve())


def test_absolute_path_inside_is_accepted(ws: Path, run: Run) -> None:
    (ws / "a.txt").write_text("alpha\n")
    result = run("read_file", path=str(ws / "a.txt"))
    assert result == ToolResult("alpha\n")
    written = run("write_file", path=str(ws / "b.txt"), content="x")
    assert written == ToolResult("created b.txt (1 character, 1 byte)")


def test_symlinked_file_leading_out_is_refused_for_read_edit_write(dirs: tuple[Path, Path], run: Run) -> None:
    ws, root = dirs
    (ws / "link.txt").symlink_to(root / "outside" / "secret.txt")
    for tool, extra in [
        ("read_file", {}),
        ("write_file", {"content": "pwned"}),
        ("edit_file", {"old_text": "outside", "new_text": "pwned"}),
        ("grep", {"pattern": "secret"}),
    ]:
        result = run(tool, path="link.txt", **extra)
        assert result.is_error, tool
        assert "outside the workspace" in result.content
    assert (root / "outside" / "secret.txt").read_text() == "outside secret\n"


def test_symlinked_folder_leading_out_is_refused_for_read_write_list(
    dirs: tuple[Path, Path], run: Run
) -> None:
    ws, root = dirs
    (ws / "out").symlink_to(root / "outside", target_is_directory=True)
    assert run("read_file", path="out/secret.txt").is_error
    result = run("write_file", path="out/new.txt", content="pwned")
    assert result.is_error and "outside the workspace" in result.content
    assert run("write_file", path="out/deeper/new.txt", content="pwned").is_error
    assert not (root / "outside" / "new.txt").exists()
    assert not (root / "outside" / "deeper").exists()
    assert run("list_dir", path="out").is_error


def test_dangling_symlink_leading_out_cannot_be_written_through(dirs: tuple[Path, Path], run: Run) -> None:
    ws, root = dirs
    (ws / "dangling").symlink_to(root / "outside" / "created-by-write.txt")
    result = run("write_file", path="dangling", content="pwned")
    assert result.is_error
    assert not (root / "outside" / "created-by-write.txt").exists()


def test_list_and_grep_do_not_follow_symlinks_out(dirs: tuple[Path, Path], run: Run) -> None:
    ws, root = dirs
    (ws / "out").symlink_to(root / "outside", target_is_directory=True)
    (ws / "out.txt").symlink_to(root / "outside" / "secret.txt")
    (ws / "inside.txt").write_text("inside secret\n")
    (ws / "alias.txt").symlink_to(ws / "inside.txt")
    listing = run("list_dir", depth=3)
    assert not listing.is_error
    assert "out -> (symlink leading outside the workspace; not followed)" in listing.content
    assert "out.txt -> (symlink leading outside the workspace; not followed)" in listing.content
    assert "alias.txt -> inside.txt (symlink; not followed)" in listing.content
    assert "out/secret.txt" not in listing.content
    found = run("grep", pattern="secret")
    assert "outside secret" not in found.content
    assert "inside.txt:1: inside secret" in found.content
    assert "alias.txt:1: inside secret" in found.content  # symlink inside the root: searched
    assert "2 symlinks leading outside the workspace" in found.content


def test_symlink_inside_the_root_is_followed_for_read_and_write(ws: Path, run: Run) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("one\n")
    (ws / "alias").symlink_to(ws / "real", target_is_directory=True)
    assert run("read_file", path="alias/f.txt").content == "one\n"
    written = run("write_file", path="alias/g.txt", content="two")
    assert written == ToolResult("created real/g.txt (3 characters, 3 bytes)")


def test_nul_in_path_is_an_error_result(run: Run) -> None:
    result = run("read_file", path="a\x00b")
    assert result.is_error and "cannot resolve" in result.content


# --- read_file --------------------------------------------------------------------------------------


def test_read_file_offset_limit(ws: Path, run: Run) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert run("read_file", path="n.txt", offset=3, limit=2).content == (
        "line 3\nline 4\n\n[lines 3-4 of 10; continue with offset=5]"
    )
    assert run("read_file", path="n.txt", offset=9).content == "line 9\nline 10\n"
    past = run("read_file", path="n.txt", offset=11)
    assert past.is_error and "past the end" in past.content and "10 lines" in past.content
    # offset 0: the input check refuses it (the schema's minimum), and so does the tool itself
    read_file = tools_for(ws)["read_file"]
    assert check_input(read_file.input_schema, {"path": "n.txt", "offset": 0}) == (
        "input.offset: 0 is less than the minimum 1"
    )
    assert read_file.execute({"path": "n.txt", "offset": 0}, None).is_error


def test_read_file_errors(ws: Path, run: Run) -> None:
    (ws / "d").mkdir()
    missing = run("read_file", path="nope.txt")
    assert missing == ToolResult("file not found: nope.txt", is_error=True)
    folder = run("read_file", path="d")
    assert folder.is_error and "folder" in folder.content
    (ws / "empty.txt").write_text("")
    assert run("read_file", path="empty.txt") == ToolResult("(empty.txt is empty)")


def test_a_missing_file_names_the_files_a_user_may_have_meant(ws: Path, run: Run) -> None:
    (ws / "README.md").write_text("# hi\n")
    (ws / "Notes.txt").write_text("x\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "readme.txt").write_text("y\n")
    assert run("read_file", path="README").content == "file not found: README (did you mean README.md?)"
    assert run("read_file", path="notes.txt").content == "file not found: notes.txt (did you mean Notes.txt?)"
    assert run("read_file", path="sub/README").content == (
        "file not found: sub/README (did you mean sub/readme.txt?)"
    )
    assert run("read_file", path="nowhere/x").content == "file not found: nowhere/x"  # no folder: none
    assert run("read_file", path="sub").content.endswith("(use list_dir)")  # a folder is never a near file


def test_read_binary_file_is_reported_not_dumped(ws: Path, run: Run) -> None:
    (ws / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" + bytes(range(256)) * 10)
    result = run("read_file", path="blob.bin")
    assert result.is_error
    assert result.content == "blob.bin is a binary file (2567 bytes); not shown"


def test_read_invalid_utf8_is_replaced(ws: Path, run: Run) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9 ok\n")
    assert run("read_file", path="latin.txt") == ToolResult("caf\ufffd ok\n")


def test_read_file_cap_with_exact_count(ws: Path) -> None:
    text = "".join(f"{i:05d}\n" for i in range(2000))  # 12000 characters
    (ws / "big.txt").write_text(text)
    result = tools_for(ws, max_output_chars=1000)["read_file"].execute({"path": "big.txt"}, None)
    body, hint = result.content.rsplit("\n", 1)
    assert "offset and limit" in hint
    assert len(body) <= 1000
    match = re.fullmatch(r"(.*)\n\[\.\.\. (\d+) characters left out \.\.\.\]\n(.*)", body, re.S)
    assert match is not None
    head, left_out, tail = match.group(1), int(match.group(2)), match.group(3)
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + left_out + len(tail) == len(text)


# --- capping ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 999, 1000, 1001, 5000, 123_457])
def test_cap_keeps_head_and_tail_with_exact_count(size: int) -> None:
    text = "".join(chr(0x41 + i % 26) for i in range(size))
    result = cap(text, 1000)
    assert len(result) <= 1000
    if size <= 1000:
        assert result == text
        return
    match = re.fullmatch(r"(.*)\n\[\.\.\. (\d+) characters left out \.\.\.\]\n(.*)", result, re.S)
    assert match is not None
    head, left_out, tail = match.group(1), int(match.group(2)), match.group(3)
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + left_out + len(tail) == size
    assert abs(len(head) - len(tail)) <= 1


def test_output_buffer_bounded_memory_counts_chars_and_bytes() -> None:
    buffer = OutputBuffer(100)
    data = ("é" * 1000).encode()  # 2000 bytes, 1000 characters
    for index in range(0, len(data), 7):
        buffer.append(data[index : index + 7])
    result = buffer.text(60)
    match = re.fullmatch(r"(é*)\n\[\.\.\. (\d+) characters and (\d+) bytes left out \.\.\.\]\n(é*)", result)
    assert match is not None, result
    head, chars, dropped, tail = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
    # kept ends are 100 bytes = 50 characters each; the middle 1800 bytes were never kept
    assert len(head) + len(tail) + chars == 100
    assert dropped == 1800


def test_command_output_cap_with_exact_count(ws: Path) -> None:
    tool = tools_for(ws, max_output_chars=500)["run_command"]
    result = tool.execute({"command": "seq 1 3000"}, None)
    expected = "".join(f"{i}\n" for i in range(1, 3001))
    body, status = result.content.rsplit("\n", 1)
    assert status == "exit code: 0"
    match = re.fullmatch(r"(.*)\n\[\.\.\. (\d+) characters left out \.\.\.\]\n(.*)", body, re.S)
    assert match is not None
    head, left_out, tail = match.group(1), int(match.group(2)), match.group(3) + "\n"
    assert expected.startswith(head) and expected.endswith(tail)
    assert len(head) + left_out + len(tail) == len(expected)


# --- write_file / edit_file -------------------------------------------------------------------------


def test_write_file_creates_folders_and_overwrites(ws: Path, run: Run) -> None:
    assert run("write_file", path="a/b/c.txt", content="héllo\n") == ToolResult(
        "created a/b/c.txt (6 characters, 7 bytes)"
    )
    assert (ws / "a" / "b" / "c.txt").read_text() == "héllo\n"
    assert run("write_file", path="a/b/c.txt", content="x").content.startswith("overwrote")
    assert run("write_file", path="a", content="x").is_error
    (ws / "file").write_text("")
    not_folder = run("write_file", path="file/inner.txt", content="x")
    assert not_folder.is_error and "cannot write" in not_folder.content


def test_edit_file_exactly_once(ws: Path, run: Run) -> None:
    (ws / "e.py").write_text("a = 1\nb = 2\nb = 2\n")
    zero = run("edit_file", path="e.py", old_text="c = 3", new_text="c = 4")
    assert zero.is_error and "occurs 0 times" in zero.content
    two = run("edit_file", path="e.py", old_text="b = 2", new_text="b = 3")
    assert two.is_error and "occurs 2 times" in two.content
    assert (ws / "e.py").read_text() == "a = 1\nb = 2\nb = 2\n"
    one = run("edit_file", path="e.py", old_text="b = 2\nb = 2", new_text="b = 3")
    assert one == ToolResult("edited e.py: replaced 1 occurrence at line 2")
    assert (ws / "e.py").read_text() == "a = 1\nb = 3\n"
    assert run("edit_file", path="e.py", old_text="", new_text="x").is_error
    assert run("edit_file", path="missing.py", old_text="a", new_text="b").is_error


def test_an_edit_that_changes_nothing_is_an_error_not_done(ws: Path, run: Run) -> None:
    """The embedded model once wrote ``edit_file(old_text="eggs", new_text="eggs")`` for "change
    eggs to œufs" and was told "edited": the user heard of a change that never happened."""
    (ws / "todo.txt").write_text("milk\neggs\n")
    same = run("edit_file", path="todo.txt", old_text="eggs", new_text="eggs")
    assert same.is_error and "the same" in same.content
    assert (ws / "todo.txt").read_text() == "milk\neggs\n"


def test_edit_file_counts_overlapping_and_keeps_invalid_bytes(ws: Path, run: Run) -> None:
    (ws / "o.txt").write_bytes(b"aaa \xff end\r\nnext\r\n")
    overlapping = run("edit_file", path="o.txt", old_text="aa", new_text="b")
    assert overlapping.is_error and "occurs 2 times" in overlapping.content
    assert not run("edit_file", path="o.txt", old_text="end\nnext", new_text="fin\nnext").is_error
    assert (ws / "o.txt").read_bytes() == b"aaa \xff fin\r\nnext\r\n"


# --- list_dir / grep --------------------------------------------------------------------------------


def test_list_dir_depth(ws: Path, run: Run) -> None:
    (ws / "a" / "b" / "c").mkdir(parents=True)
    (ws / "a" / "b" / "c" / "deep.txt").write_text("")
    (ws / "a" / "one.txt").write_text("")
    (ws / "top.txt").write_text("")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("")
    assert run("list_dir").content == ".git/\na/\ntop.txt"
    assert run("list_dir", path=".", depth=2).content == ".git/\na/\na/b/\na/one.txt\ntop.txt"
    assert run("list_dir", depth=4).content == (".git/\na/\na/b/\na/b/c/\na/b/c/deep.txt\na/one.txt\ntop.txt")
    assert run("list_dir", path="a/b").content == "a/b/c/"
    assert run("list_dir", path="top.txt").is_error
    assert run("list_dir", path="nope").is_error
    list_dir = tools_for(ws)["list_dir"]  # depth 0: refused by the input check and by the tool
    assert check_input(list_dir.input_schema, {"depth": 0}) == "input.depth: 0 is less than the minimum 1"
    assert list_dir.execute({"depth": 0}, None).is_error
    (ws / "empty").mkdir()
    assert run("list_dir", path="empty").content == "(empty is empty)"


def test_grep_results_and_glob(ws: Path, run: Run) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("def foo():\n    return 1\n")
    (ws / "src" / "b.txt").write_text("foo bar\r\n")
    (ws / "blob.bin").write_bytes(b"foo\x00")
    result = run("grep", pattern=r"fo+")
    assert result.content == ("src/a.py:1: def foo():\nsrc/b.txt:1: foo bar\n[skipped: 1 binary files]")
    assert run("grep", pattern="foo", glob="*.py").content == "src/a.py:1: def foo():"
    assert run("grep", pattern="return", path="src/a.py").content == "src/a.py:2:     return 1"
    none = run("grep", pattern="zzz")
    assert not none.is_error and "no matches" in none.content


def test_grep_long_line_is_cut_with_the_one_marker(ws: Path, run: Run) -> None:
    (ws / "long.txt").write_text("foo" + "x" * 997 + "\n")
    result = run("grep", pattern="foo")
    assert result.content == (
        "long.txt:1: foo" + "x" * 497 + " [... 500 characters left out ...] [match at column 1]"
    )


def test_grep_hit_far_into_a_long_line_shows_a_window_around_it(ws: Path, run: Run) -> None:
    """The issue's case: a hit at column 22,905 of a 22,940-character line."""
    line = "a" * 22_904 + "NEEDLE" + "b" * 30
    (ws / "min.js").write_text(line + "\n")
    content = run("grep", pattern="NEEDLE").content
    window = r"min\.js:1: \[\.\.\. (\d+) characters left out \.\.\.\] (a*NEEDLEb*) \[match at column 22905\]"
    match = re.fullmatch(window, content)
    assert match, content
    assert len(match.group(2)) == 500 and int(match.group(1)) + 500 == len(line)
    middle = "x" * 10_000 + "HIT" + "y" * 10_000
    (ws / "mid.txt").write_text(middle + "\n")
    shown = run("grep", pattern="HIT", path="mid.txt").content
    assert shown.count("characters left out") == 2 and "[match at column 10001]" in shown


def test_write_file_lone_surrogate_becomes_the_replacement_character(ws: Path, run: Run) -> None:
    assert not run("write_file", path="s.txt", content="a\ud800b").is_error
    assert (ws / "s.txt").read_text(encoding="utf-8") == "a\ufffdb"


def test_grep_bad_regex_and_missing_path(run: Run) -> None:
    bad = run("grep", pattern="(unclosed")
    assert bad.is_error and "invalid regular expression" in bad.content
    assert run("grep", pattern="x", path="missing").is_error


# --- run_command ------------------------------------------------------------------------------------


def test_command_merges_output_in_order_and_reports_status(ws: Path, run: Run) -> None:
    result = run("run_command", command="echo out; echo err >&2; echo out2; pwd; exit 3")
    assert result == ToolResult(f"out\nerr\nout2\n{ws.resolve()}\nexit code: 3", is_error=True)
    assert run("run_command", command="true") == ToolResult("exit code: 0")
    assert run("run_command", command="cat").content == "exit code: 0"  # stdin is /dev/null
    killed = run("run_command", command="kill -KILL $$")
    assert killed.is_error and killed.content == "killed by signal SIGKILL"


def test_command_non_utf8_bytes_are_replaced(run: Run) -> None:
    literal = run("run_command", command="printf '\\xff\\xfe ok'")  # as written in the brief
    assert not literal.is_error and "ok" in literal.content
    octal = run("run_command", command="printf '\\377\\376 ok'")  # bytes 0xff 0xfe in any sh
    assert octal == ToolResult("\ufffd\ufffd ok\nexit code: 0")


def test_command_timeout_kills_a_group_that_ignores_sigterm(ws: Path) -> None:
    started = time.monotonic()
    outcome = run_shell(f"trap '' TERM; {ECHO_PGID}; sleep 30", ws, timeout=0.3, kill_grace=0.5)
    elapsed = time.monotonic() - started
    print(f"timeout + grace took {elapsed:.3f} s")
    assert outcome.stopped == "timeout"
    assert outcome.returncode == -signal.SIGKILL
    assert outcome.output.strip() == str(outcome.pgid)
    assert 0.75 <= elapsed < 3.0  # 0.3 s timeout + 0.5 s grace before SIGKILL
    assert not group_alive(outcome.pgid)


def test_command_timeout_note(run: Run) -> None:
    result = run("run_command", command="echo before; sleep 30", timeout=0.2)
    assert result == ToolResult("before\n[timed out after 0.2 s]", is_error=True)


def test_command_cancel_from_another_thread(ws: Path, run: Run) -> None:
    cancel = threading.Event()
    set_at: list[float] = []
    marker = ws / "started"

    def canceller() -> None:
        # Cancel once the command has reached its `sleep` (the marker file appears just before).
        deadline = time.monotonic() + 5
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        set_at.append(time.monotonic())
        cancel.set()

    thread = threading.Thread(target=canceller)
    thread.start()
    result = run("run_command", cancel, command=f"{ECHO_PGID}; touch started; sleep 30")
    returned_at = time.monotonic()
    thread.join()
    assert marker.exists()
    latency = returned_at - set_at[0]
    print(f"cancel latency: {latency * 1000:.1f} ms")
    assert latency < 1.0
    assert result.is_error
    lines = result.content.splitlines()
    assert lines[1:] == ["[cancelled]"]
    assert group_gone(int(lines[0]))


def test_cancel_already_set_does_not_run_long(ws: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = run_shell("sleep 30", ws, timeout=30, cancel=cancel)
    assert outcome.stopped == "cancelled"
    assert outcome.seconds < 1.0
    assert not group_alive(outcome.pgid)


def test_background_child_does_not_hang_or_survive(run: Run) -> None:
    started = time.monotonic()
    result = run("run_command", command=f"{ECHO_PGID}; sleep 30 & echo started")
    elapsed = time.monotonic() - started
    print(f"background child command took {elapsed:.3f} s")
    lines = result.content.splitlines()
    assert lines[1:] == ["started", "exit code: 0"]
    assert elapsed < 3.0
    assert group_gone(int(lines[0]))


def test_background_child_with_closed_output_is_stopped_too(run: Run) -> None:
    result = run("run_command", command=f"{ECHO_PGID}; sleep 30 >/dev/null 2>&1 &")
    assert not group_alive(int(result.content.splitlines()[0]))


def test_timeout_is_bounded_in_the_schema_and_in_code(ws: Path, run: Run) -> None:
    assert run("run_command", command="echo hi", timeout=600) == ToolResult("hi\nexit code: 0")
    tool = tools_for(ws)["run_command"]
    assert tool.input_schema["properties"]["timeout"]["maximum"] == 600
    result = tool.execute({"command": "echo hi", "timeout": 10_000}, None)
    assert result == ToolResult("[timeout lowered to the maximum of 600 s]\nhi\nexit code: 0")
    assert tool.execute({"command": "echo hi", "timeout": 0}, None).is_error


@pytest.mark.parametrize("tool_name", ["run_command", "grep"])
def test_a_nan_or_infinite_timeout_is_an_error_result(ws: Path, tool_name: str) -> None:
    # JSON decoders accept NaN; a NaN deadline would never pass (found in review). 1e400 decodes
    # to infinity and 10**400 overflows float() (issue 13): error results, never a raise.
    tool = tools_for(ws)[tool_name]
    arguments = {"command": "echo hi"} if tool_name == "run_command" else {"pattern": "x"}
    for timeout in (float("nan"), float("inf"), 10**400):
        result = tool.execute({**arguments, "timeout": timeout}, None)
        assert result == ToolResult("timeout must be a positive, finite number of seconds", is_error=True)


def test_no_threads_outlive_a_command(run: Run) -> None:
    before = threading.active_count()
    run("run_command", command="sleep 30 & echo x")
    assert threading.active_count() == before


# --- the done-when test: an agent confined to its folder --------------------------------------------


def test_agent_works_inside_the_folder_and_cannot_leave_it(dirs: tuple[Path, Path]) -> None:
    ws, root = dirs
    (ws / "notes.txt").write_text("todo: write tests\n")
    secret = root / "outside" / "secret.txt"
    turns: list[Turn] = [
        [ToolCall("1", "list_dir", {"path": ".", "depth": 2})],
        [ToolCall("2", "read_file", {"path": "notes.txt"})],
        [ToolCall("3", "grep", {"pattern": "todo", "glob": "*.txt"})],
        [ToolCall("4", "edit_file", {"path": "notes.txt", "old_text": "todo", "new_text": "done"})],
        [ToolCall("5", "run_command", {"command": "cat notes.txt && ls"})],
        [
            ToolCall("6", "read_file", {"path": "../outside/secret.txt"}),
            ToolCall("7", "read_file", {"path": str(secret)}),
            ToolCall("8", "write_file", {"path": "../outside/secret.txt", "content": "pwned"}),
            ToolCall("9", "edit_file", {"path": str(secret), "old_text": "outside", "new_text": "x"}),
            ToolCall("10", "list_dir", {"path": ".."}),
            ToolCall("11", "grep", {"pattern": "secret", "path": "../ws_evil"}),
        ],
        ["All done."],
    ]
    client = ScriptedClient(turns)
    result = run_agent(
        client=client,
        system="work in the folder",
        tools=default_tools(ws),
        user="go",
        max_turns=10,
    )
    assert result.stop_reason == "complete"
    answers = {m.tool_call_id: m for m in result.messages if m.role == "tool"}
    assert answers["1"] == Message("tool", "notes.txt", tool_call_id="1")
    assert answers["2"].content == "todo: write tests\n"
    assert answers["3"].content == "notes.txt:1: todo: write tests"
    assert answers["4"].content == "edited notes.txt: replaced 1 occurrence at line 1"
    assert answers["5"].content == "done: write tests\nnotes.txt\nexit code: 0"
    for call_id in ("6", "7", "8", "9", "10", "11"):
        assert answers[call_id].is_error, call_id
        assert "outside the workspace" in answers[call_id].content
        assert "secret\n" not in answers[call_id].content
    assert secret.read_text() == "outside secret\n"
    assert (root / "ws_evil" / "secret.txt").read_text() == "evil secret\n"
    assert (ws / "notes.txt").read_text() == "done: write tests\n"
    assert result.messages[-1] == Message("assistant", "All done.")


def test_fifo_is_not_read_and_does_not_hang_grep(ws: Path, run: Run) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "a.txt").write_text("needle\n")
    result = run("read_file", path="pipe")
    assert result == ToolResult("pipe is a named pipe (FIFO), not a regular file; refused", is_error=True)
    found = run("grep", pattern="needle")
    assert found.content == "a.txt:1: needle\n[skipped: 1 special files (not regular)]"


def test_output_buffer_is_exact_when_everything_was_kept() -> None:
    buffer = OutputBuffer(100)
    buffer.append(b"x" * 250)  # more than one end, less than both: nothing dropped
    assert buffer.text(1000) == "x" * 250


def test_large_command_output_is_fast_and_bounded(ws: Path) -> None:
    tool = tools_for(ws, max_output_chars=1000)["run_command"]
    started = time.monotonic()
    result = tool.execute({"command": "head -c 50000000 /dev/zero | tr '\\0' a"}, None)
    elapsed = time.monotonic() - started
    print(f"50 MB of output took {elapsed:.2f} s")
    assert len(result.content) < 1100
    assert result.content.startswith("aaaa")
    assert "bytes left out" in result.content
    assert result.content.endswith("a\nexit code: 0")


# --- secrets stay out of commands and their output --------------------------------------------------

FAKE_KEY = "sk-test-SECRET123"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("ANTHROPIC_API_KEY", True),
        ("openai_api_key", True),
        ("GITHUB_TOKEN", True),
        ("SLACK_BOT_TOKEN", True),
        ("DB_PASSWORD", True),
        ("AWS_ACCESS_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DJANGO_SECRET_KEY", True),
        ("CLIENT_SECRET", True),
        ("SECRET_KEY_BASE", True),
        ("AWS_BEARER_TOKEN_BEDROCK", True),  # a Bedrock API key
        ("GEMINI_API_KEY", True),
        ("API_KEY", True),
        ("TOKEN", True),
        ("HOME", False),
        ("PATH", False),
        ("MY_SETTING", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("KEYBOARD", False),
        ("PASSWORD_STORE_DIR", False),
        ("SECRETARY", False),
    ],
)
def test_secret_variable_names(name: str, secret: bool) -> None:
    from miniagent.process.environment import is_secret_name

    assert is_secret_name(name) is secret


@pytest.fixture
def fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_testSECRET789")
    monkeypatch.setenv("my_db_password", "hunter2hunter2")
    monkeypatch.setenv("MY_SETTING", "visible-value")


@pytest.mark.usefixtures("fake_keys")
def test_command_environment_has_no_secrets(ws: Path) -> None:
    tool = tools_for(ws)["run_command"]  # created before the call: os.environ is read per call
    listing = tool.execute({"command": "env"}, None)
    assert not listing.is_error
    for secret in (FAKE_KEY, "sk-ant-test-SECRET456", "ghp_testSECRET789", "hunter2hunter2"):
        assert secret not in listing.content
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "my_db_password"):
        assert f"{name}=" not in listing.content
    assert "MY_SETTING=visible-value" in listing.content
    assert f"HOME={os.environ['HOME']}" in listing.content
    assert f"PATH={os.environ['PATH']}" in listing.content
    printed = tool.execute({"command": "printenv OPENAI_API_KEY"}, None)
    assert printed == ToolResult("exit code: 1", is_error=True)


@pytest.mark.usefixtures("fake_keys")
def test_secret_values_are_redacted_from_command_output(ws: Path, run: Run) -> None:
    (ws / "leak.txt").write_text(f"key={FAKE_KEY}\nshort=abc\n")
    result = run("run_command", command="cat leak.txt; cat /proc/$PPID/environ | tr '\\0' '\\n'")
    assert FAKE_KEY not in result.content
    assert result.content.startswith("key=***\nshort=abc\n")


def test_parent_environ_read_through_proc_is_redacted(ws: Path) -> None:
    """The key is in the real environment of the process running the tool (not only in
    os.environ), so /proc/$PPID/environ really holds it; the output must still not show it."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc")
    script = (
        "import sys\n"
        "from miniagent.toolbox import default_tools\n"
        "tool = {t.name: t for t in default_tools(sys.argv[1])}['run_command']\n"
        # The shell's parent is the reaper; its parent is this process, the one running the tool.
        "command = \"cat /proc/$(awk '{print $4}' /proc/$PPID/stat)/environ | tr '\\\\0' '\\\\n'\"\n"
        "result = tool.execute({'command': command}, None)\n"
        "sys.stdout.write(result.content)\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "MY_SETTING": "visible-value"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(ws)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "MY_SETTING=visible-value" in done.stdout  # the parent's environment was read
    assert "OPENAI_API_KEY=***" in done.stdout
    assert FAKE_KEY not in done.stdout


def test_custom_command_env_is_honoured(ws: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ONLY": "this", "LEAK_TOKEN": FAKE_KEY}
    tool = tools_for(ws, command_env=env)["run_command"]
    env["ONLY"] = "changed later"  # copied when the tools are made
    listing = tool.execute({"command": "env"}, None).content
    names = {line.split("=", 1)[0] for line in listing.splitlines()[:-1] if "=" in line}
    assert "ONLY=this" in listing
    assert "HOME" not in names and "LEAK_TOKEN" in names  # exactly that environment
    assert FAKE_KEY not in listing  # passed on purpose, still redacted from the output
    same = tool.execute({"command": f'test "$LEAK_TOKEN" = {FAKE_KEY} && echo same'}, None)
    assert same == ToolResult("same\nexit code: 0")


def test_redaction_happens_before_the_cap_cuts(ws: Path) -> None:
    tool = tools_for(ws, max_output_chars=300, command_env={"LEAK_TOKEN": FAKE_KEY})["run_command"]
    for count, dropped in ((40, False), (23_530, True)):  # kept whole; middle dropped (400 kB)
        size = count * len(FAKE_KEY)
        command = f"yes \"$LEAK_TOKEN\" | tr -d '\\n' | head -c {size}"
        result = tool.execute({"command": command}, None)
        assert result.content.endswith("***\nexit code: 0")
        assert ("bytes left out" in result.content) is dropped
        for start in range(len(FAKE_KEY) - 4):  # not even a piece of the key at a cut
            assert FAKE_KEY[start : start + 5] not in result.content.replace("***", "\n")


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"A": 1}, TypeError),
        ({"A=B": "x"}, ValueError),
        ({"": "x"}, ValueError),
        ({"A": "x\x00y"}, ValueError),
    ],
)
def test_invalid_command_env_is_refused(ws: Path, env: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        default_tools(ws, command_env=env)


# --- grep in a child process: time limit and cancel -------------------------------------------------


def shell_running() -> set[int]:
    from miniagent.process.groups import running_groups

    return set(running_groups())


def live_children() -> list[int]:
    """Pids of this process's children that are running (zombies excluded)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


@pytest.mark.usefixtures("fake_keys")
def test_key_stays_out_of_the_session_of_an_agent_run(ws: Path, tmp_path: Path) -> None:
    """The user's report: the model runs `env | grep KEY` with the key set."""
    session = tmp_path / "session.jsonl"
    client = ScriptedClient([[ToolCall("1", "run_command", {"command": "env | grep KEY"})], ["ok"]])
    result = run_agent(
        client=client,
        system="s",
        tools=default_tools(ws),
        user="go",
        max_turns=3,
        session_path=session,
    )
    answer = next(m for m in result.messages if m.role == "tool")
    assert answer.content == "exit code: 1"  # grep found no variable named *KEY*
    assert FAKE_KEY not in session.read_text()


def test_grep_slow_regex_times_out(ws: Path, run: Run) -> None:
    (ws / "redos.txt").write_text("a" * 40 + "b\n")
    started = time.monotonic()
    result = run("grep", pattern="(a+)+$", path="redos.txt", timeout=1)
    elapsed = time.monotonic() - started
    print(f"ReDoS grep with timeout=1 took {elapsed:.2f} s")
    assert result.is_error
    assert result.content.startswith("no matches for '(a+)+$'\n[timed out after 1 s;")
    assert elapsed < 4.0
    assert not shell_running()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_grep_cancel_from_another_thread(ws: Path, run: Run) -> None:
    (ws / "a.txt").write_text("aaa\n")  # matched before the slow file (sorted order)
    (ws / "redos.txt").write_text("a" * 40 + "b\n")
    cancel = threading.Event()
    groups: list[int] = []
    set_at: list[float] = []
    before = set(live_children())  # e.g. the session's redis-server: not this test's

    def canceller() -> None:
        deadline = time.monotonic() + 10
        while not shell_running() and time.monotonic() < deadline:
            time.sleep(0.005)
        groups.extend(shell_running())
        time.sleep(0.3)  # deep inside re by now
        set_at.append(time.monotonic())
        cancel.set()

    thread = threading.Thread(target=canceller)
    thread.start()
    result = run("grep", cancel, pattern="(a+)+$|^aaa$")
    returned_at = time.monotonic()
    thread.join()
    latency = returned_at - set_at[0]
    print(f"grep cancel latency: {latency * 1000:.1f} ms")
    # The search alone would run for ages (2**40 steps): any return well before that is the
    # cancel's doing, so the bound is loose (a busy machine must not fail it).
    assert latency < 10.0
    assert result == ToolResult("a.txt:1: aaa\n[cancelled]", is_error=True)
    assert len(groups) == 1  # the worker was running when cancelled
    assert group_gone(groups[0])
    assert set(live_children()) <= before  # the worker is gone; others' children do not count


def test_grep_timeout_is_bounded_in_the_schema_and_in_code(ws: Path, run: Run) -> None:
    (ws / "a.txt").write_text("hit\n")
    tool = tools_for(ws)["grep"]
    assert tool.input_schema["properties"]["timeout"]["maximum"] == 300
    assert run("grep", pattern="hit", timeout=300) == ToolResult("a.txt:1: hit")
    lowered = tool.execute({"pattern": "hit", "timeout": 10_000}, None)
    assert lowered == ToolResult("[timeout lowered to the maximum of 300 s]\na.txt:1: hit")
    assert tool.execute({"pattern": "hit", "timeout": 0}, None).is_error


def test_grep_bad_regex_is_refused_before_any_child(ws: Path, run: Run) -> None:
    started = time.monotonic()
    bad = run("grep", pattern="(a+)+$)")
    assert bad.is_error and "invalid regular expression" in bad.content
    assert time.monotonic() - started < 0.5


def test_grep_worker_failure_is_an_error_result(ws: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from miniagent.toolbox import search

    monkeypatch.setattr(search, "_WORKER", ws / "missing_worker.py")
    result = run("grep", pattern="x")
    assert result.is_error
    assert result.content.startswith("the search failed (exit status 2): ")
    assert "missing_worker.py" in result.content


def test_grep_worker_imports_only_the_standard_library(ws: Path) -> None:
    from miniagent.toolbox import search

    (ws / "a.txt").write_text("hit\n")
    request = {
        "root": str(ws.resolve()),
        "top": str(ws.resolve()),
        "is_dir": True,
        "pattern": "hit",
        "glob_name": r"[^/]*\.txt",
        "glob_path": None,
        "max_matches": 10,
        "max_line_chars": 50,
        "max_file_bytes": 1000,
        "sniff_bytes": 100,
        "skipped_folders": [".git"],
        "max_memory_bytes": 192 * 1024 * 1024,
    }
    argv = search._worker_argv()
    done = subprocess.run(
        [*argv[:-1], "-X", "importtime", argv[-1]],
        input=json.dumps(request).encode(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        b'["match", {"path": "a.txt", "line": 1, "text": "hit"}]',
        b'["done", {"skipped": {}, "full": false}]',
    ]
    imported = {line.split(b"|")[-1].strip() for line in done.stderr.splitlines()}
    assert not any(name.startswith((b"miniagent", b"typing", b"pathlib")) for name in imported)


def test_ordinary_grep_latency(ws: Path, run: Run) -> None:
    for index in range(50):
        (ws / f"f{index}.txt").write_text("".join(f"line {n}\n" for n in range(200)))
    (ws / "f7.txt").write_text("needle\n")
    times = []
    for _ in range(10):
        started = time.perf_counter()
        result = run("grep", pattern="needle")
        times.append(time.perf_counter() - started)
    assert result == ToolResult("f7.txt:1: needle")
    median = sorted(times)[len(times) // 2]
    print(f"ordinary grep over 50 files: median {median * 1000:.1f} ms")
    assert median < 1.0


def test_secret_values_in_files_are_redacted_from_every_tool_result(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by a new user: a key in a workspace file went unmasked into the session via read_file.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET123")
    (ws / "k.env").write_text("key=sk-test-SECRET123\nother=1\n")
    tools = tools_for(ws)
    assert tools["read_file"].execute({"path": "k.env"}, None).content.startswith("key=***")
    grep = tools["grep"].execute({"pattern": "key", "path": "."}, None).content
    assert "sk-test-SECRET123" not in grep and "***" in grep
    assert "sk-test-SECRET123" not in tools["run_command"].execute({"command": "cat k.env"}, None).content
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "sk-test-SECRET123" in tools["read_file"].execute({"path": "k.env"}, None).content


def test_run_command_leaves_no_escaped_descendant(ws: Path, run: Run) -> None:
    """Issue 14 kind 7: `set -m` puts the child in a new group; it survived the tool before."""
    token = f"{5000 + os.getpid() % 1000}.25"
    result = run("run_command", command=f"bash -c 'set -m; sleep {token} &'; setsid sleep {token} & echo ok")
    assert result.content == "ok\nexit code: 0"
    deadline = time.monotonic() + 3
    while any(
        token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        for pid in os.listdir("/proc")
        if pid.isdigit() and Path(f"/proc/{pid}/cmdline").exists()
    ):
        assert time.monotonic() < deadline, "a descendant of the command survived it"
        time.sleep(0.02)
