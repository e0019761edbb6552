"""What the CLI does when its input or output is not what it expects (issue "The first hour"
item 5, issue "Hostile and unlucky input" kind 6): a closed pipe exits quietly, any other failed
write or a closed or undecodable input is one error line with the documented exit code, never a
traceback, and the session stays valid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miniagent import load_session
from tests.cli_helpers import (
    FakeOpenAI,
    cli_command,
    cli_env,
    json_lines,
    model_args,
    run_cli,
    text_turn,
    tool_turn,
)
from tests.helpers import assert_every_call_answered_once

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("a note\n", encoding="utf-8")
    return folder


def _spawn(args: list[str], tmp_path: Path, **popen: object) -> subprocess.CompletedProcess[bytes]:
    if popen.get("input") is None:
        popen.setdefault("stdin", subprocess.DEVNULL)
    else:
        popen.pop("stdin", None)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        cli_command(args), env=cli_env(tmp_path), cwd=tmp_path, timeout=30, **popen
    )


def test_a_closed_pipe_on_stdout_exits_quietly(tmp_path: Path, workspace: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already left
    session = tmp_path / "s.jsonl"
    with FakeOpenAI([text_turn("The answer.")]) as server:
        args = ["run", "--session", str(session), *model_args(server, workspace), "hi"]
        try:
            done = _spawn(args, tmp_path, stdout=write_end)
        finally:
            os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""
    assert [m.role for m in load_session(session)] == ["user", "assistant"]


def test_json_to_a_full_disk_is_one_error_line_and_the_session_stays_valid(
    tmp_path: Path, workspace: Path
) -> None:
    session = tmp_path / "s.jsonl"
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("never sent")]
    with FakeOpenAI(turns) as server, open("/dev/full", "wb") as full:
        args = ["run", "--json", "--session", str(session), *model_args(server, workspace), "hi"]
        done = _spawn(args, tmp_path, stdout=full)
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err == "miniagent: error: cannot write to standard output: No space left on device\n"
    assert_every_call_answered_once(load_session(session))


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_closed_stdout_is_one_error_line(tmp_path: Path, workspace: Path, command: str) -> None:
    with FakeOpenAI([text_turn("The answer.")]) as server:
        args = [command, "--json", *model_args(server, workspace)] + (["hi"] if command == "run" else [])
        done = _spawn(
            args,
            tmp_path,
            stdin=None if command == "chat" else subprocess.DEVNULL,
            input=b"hi\n" if command == "chat" else None,
            stdout=subprocess.DEVNULL,
            preexec_fn=lambda: os.close(1),
        )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "miniagent: error: cannot write to standard output: standard output is closed"
    ]


def test_a_closed_stdin_for_the_prompt_is_a_usage_error(tmp_path: Path) -> None:
    done = _spawn(
        ["run", "--provider", "openai", "-"], tmp_path, stdout=subprocess.PIPE, preexec_fn=lambda: os.close(0)
    )
    assert done.returncode == 64 and done.stdout == b""
    assert done.stderr.decode().startswith('miniagent: error: the prompt is "-" but standard input is closed')


@pytest.mark.parametrize("command", ["run", "chat"])
def test_stdin_that_is_not_utf8_is_sent_with_replacement_characters(
    tmp_path: Path, workspace: Path, command: str
) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        args = [command, *model_args(server, workspace)] + (["-"] if command == "run" else [])
        done = _spawn(args, tmp_path, input=b"caf\xe9 \xff\n", stdout=subprocess.PIPE)
        assert done.returncode == 0, done.stderr
        assert server.requests[0]["messages"][-1]["content"] == "caf\ufffd \ufffd"


def test_a_state_folder_that_is_a_file_is_one_error_line(tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "state-file"
    state.write_text("not a folder")
    with FakeOpenAI([text_turn("never")]) as server:
        done = run_cli(
            ["chat", *model_args(server, workspace)],
            tmp_path,
            input="hello\n",
            env={"XDG_STATE_HOME": str(state)},
        )
        assert server.posts == 0
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("miniagent: error: cannot create a session in ")
    assert "XDG_STATE_HOME" in lines[0]


def test_chat_with_empty_input_starts_nothing_and_leaves_no_session(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([]) as server:
        done = run_cli(["chat", *model_args(server, workspace)], tmp_path, input="")
        assert server.posts == 0
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert not (tmp_path / "state").exists()


def test_ctrl_c_while_the_model_starts_says_aborted(tmp_path: Path) -> None:
    started = tmp_path / "started"
    script = tmp_path / "slow_start.py"
    script.write_text(
        "import pathlib, sys, threading\n"
        "import miniagent.providers as providers\n"
        "def slow(*args, **kwargs):\n"
        f"    pathlib.Path({str(started)!r}).write_text('yes')\n"
        "    threading.Event().wait(30)\n"
        "providers.create_client = slow\n"
        "from miniagent.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    argv = [
        sys.executable,
        str(script),
        "run",
        "--json",
        "--provider",
        "openai",
        "--workspace",
        str(tmp_path),
        "hi",
    ]
    child = subprocess.Popen(
        argv,
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 15
        while not started.exists():
            assert time.monotonic() < deadline, "the client never started"
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=10)
    finally:
        child.kill()
    assert child.returncode == 130
    assert "miniagent: aborted" in stderr and "Traceback" not in stderr
    assert json_lines(stdout) == [{"stop_reason": "aborted", "exit_code": 130}]


@pytest.mark.parametrize(
    ("text", "pieces", "shown"),
    [("ab\ud83d\ude00cd", 2, "ab\U0001f600cd"), ("lone \ud800 half", 1, "lone \ufffd half")],
)
def test_surrogates_in_the_answer_never_cost_the_answer(
    tmp_path: Path, workspace: Path, text: str, pieces: int, shown: str
) -> None:
    # A pair split across two deltas is shown joined; a lone half is U+FFFD (before: exit 1).
    with FakeOpenAI([text_turn(text, pieces=pieces)]) as server:
        done = run_cli(["run", *model_args(server, workspace), "hi"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown + "\n"
