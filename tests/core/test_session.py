"""Session files: JSONL lines, torn tails, bad lines, the lock, fsync, rollback of partial writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from miniagent import Message, SessionError, ToolCall, append_session, load_session
from miniagent.session import SessionFile

USER = Message("user", "hi")
CALL = Message("assistant", "", (ToolCall("c1", "read", {"path": "a"}),))
RESULT = Message("tool", "text", tool_call_id="c1", is_error=True)


def test_missing_file_is_an_empty_session(tmp_path: Path) -> None:
    assert load_session(tmp_path / "none.jsonl") == []


def test_append_creates_folders_and_writes_one_line_per_message(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "s.jsonl"
    for message in (USER, CALL, RESULT):
        append_session(path, message)
    lines = path.read_text().split("\n")
    assert lines[-1] == ""
    assert [json.loads(line)["role"] for line in lines[:-1]] == ["user", "assistant", "tool"]
    assert load_session(path) == [USER, CALL, RESULT]


def test_json_form_is_compact_and_leaves_defaults_out(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append_session(path, USER)
    append_session(path, Message("tool", "ok", tool_call_id="c1"))
    assert path.read_text() == (
        '{"role":"user","content":"hi"}\n{"role":"tool","content":"ok","tool_call_id":"c1"}\n'
    )


def test_line_separators_inside_content_do_not_break_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    tricky = Message("user", "a\nb\r\nc\u2028d\u2029e\x00f")
    append_session(path, tricky)
    assert path.read_bytes().count(b"\n") == 1
    assert load_session(path) == [tricky]


def test_torn_tail_is_dropped_on_load_without_touching_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    content = b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hel'
    path.write_bytes(content)
    assert load_session(path) == [USER]
    assert path.read_bytes() == content


def test_append_session_cuts_a_torn_tail_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hel')
    append_session(path, RESULT)
    assert load_session(path) == [USER, RESULT]
    assert path.read_bytes().endswith(b"\n")


def test_whole_last_line_without_newline_is_kept_and_gets_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}')
    assert load_session(path) == [USER]
    append_session(path, RESULT)
    assert load_session(path) == [USER, RESULT]
    assert path.read_bytes().count(b"\n") == 2


def test_session_file_writer_cuts_torn_tail_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{"rol')
    with SessionFile(path) as session:
        assert session.load() == [USER]
        session.append(CALL)
        session.append(RESULT)
    assert load_session(path) == [USER, CALL, RESULT]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b'not json\n{"role":"user","content":"hi"}\n', 1),
        (b'{"role":"user","content":"hi"}\n{"role":"robot","content":"x"}\n', 2),
        (b'{"role":"user","content":"hi"}\n[1,2]\n{"role":"user","content":"hi"}\n', 2),
        (b'{"role":"tool","content":"x"}\n', 1),
        (b'{"role":"assistant","content":"","tool_calls":[{"id":"a","name":"b","input":[]}]}\n', 1),
        (b'{"role":"user","content":"hi"}\n\xff\xfe\n', 2),
        # The last line lacks its newline but is JSON: not torn, so a bad message is an error.
        (b'{"role":"user","content":"hi"}\n{"role":"nobody"}', 2),
    ],
)
def test_bad_line_raises_naming_file_and_line_and_leaves_the_file(
    tmp_path: Path, content: bytes, line: int
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionError) as raised:
        load_session(path)
    assert raised.value.line == line
    assert f"{path}:{line}:" in str(raised.value)
    with pytest.raises(SessionError), SessionFile(path) as session:
        session.load()
    assert path.read_bytes() == content


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'\n{"role":"user","content":"hi"}\n  \n')
    assert load_session(path) == [USER]


def test_a_second_writer_fails_at_once_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    append_session(path, USER)
    with SessionFile(path) as first:
        first.load()
        with pytest.raises(SessionError, match="in use by another run") as raised:
            append_session(path, RESULT)
        assert str(path) in str(raised.value)
        # Another process is refused too.
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from miniagent import *;append_session(sys.argv[1], Message('user', 'x'))",
                str(path),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert probe.returncode != 0 and "in use by another run" in probe.stderr
        first.append(CALL)
    append_session(path, RESULT)  # the lock is released on close
    assert load_session(path) == [USER, CALL, RESULT]


def test_fsync_option_syncs_the_file_and_the_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    path = tmp_path / "s.jsonl"
    append_session(path, USER, fsync=True)
    assert synced == ["dir", "file"]
    append_session(path, RESULT, fsync=True)
    assert synced == ["dir", "file", "file"]
    append_session(path, RESULT)
    assert synced == ["dir", "file", "file"]


def test_partial_write_is_rolled_back_and_the_error_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    append_session(path, USER)
    real_write = os.write
    error = OSError(28, "No space left on device")

    def short_write(fd: int, data: bytes) -> int:
        if len(data) > 10:
            return real_write(fd, data[:10])  # the disk took only part of the line
        raise error

    monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(OSError) as raised:
        append_session(path, CALL)
    assert raised.value is error
    monkeypatch.undo()
    assert path.read_bytes() == b'{"role":"user","content":"hi"}\n'
    append_session(path, RESULT)
    assert load_session(path) == [USER, RESULT]


def test_read_only_file_raises_the_original_os_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    path = tmp_path / "s.jsonl"
    append_session(path, USER)
    path.chmod(0o444)
    with pytest.raises(PermissionError):
        append_session(path, RESULT)


@pytest.mark.parametrize(
    "content",
    [b"my important notes, no trailing newline", b"\x7fELF\x02\x01\x01\x00\x00binary", b"[1, 2"],
    ids=["text", "binary", "json-array"],
)
def test_a_file_that_is_not_a_session_is_refused_never_cut(tmp_path: Path, content: bytes) -> None:
    # Found by a new user: `--session notes.txt` on a one-line file without a newline treated the
    # line as torn and cut it away on the next append.
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(SessionError, match="line is not") as raised:
        load_session(path)
    assert raised.value.line == 1
    with pytest.raises(SessionError):
        append_session(path, USER)
    assert path.read_bytes() == content
