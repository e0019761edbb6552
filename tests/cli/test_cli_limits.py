"""Limits of unattended runs (issue "Usage, cost and budgets"): ``--timeout`` cancels like a
Ctrl-C, exits 124 and leaves a valid session; the logs of ``-v`` and ``--log-file`` never hold a
key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from miniagent import JSONLSession, load_session
from tests.cli_helpers import (
    STALL,
    FakeOpenAI,
    cli_command,
    cli_env,
    json_lines,
    model_args,
    run_cli,
    spawn_cli,
    text_turn,
    tool_turn,
)
from tests.helpers import assert_every_call_answered_once

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("a note\n")
    return folder


def test_timeout_during_a_stalled_stream_exits_124_with_the_session_valid(
    tmp_path: Path, workspace: Path
) -> None:
    # --timeout covers the start too: 0.5 s ran out before the client had started on a busy
    # machine. 5 s leaves the start a wide margin, and the test checks that the request really
    # reached the server (it stalls there until the clock ends the run).
    session = tmp_path / "s.jsonl"
    with FakeOpenAI([STALL]) as server:
        args = ["run", "--json", "--timeout", "5", "--session", str(session), *model_args(server, workspace)]
        child = spawn_cli([*args, "go"], tmp_path)
        try:
            assert server.first_event_sent.wait(30), "the request never reached the server"
            stdout, stderr = child.communicate(timeout=30)
        finally:
            child.kill()
    assert child.returncode == 124, stderr
    assert json_lines(stdout)[-1] == {"stop_reason": "aborted", "exit_code": 124}
    assert [m.role for m in load_session(session)] == ["user"]


def test_timeout_during_a_command_closes_its_call(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "s.jsonl"
    turns = [tool_turn("run_command", {"command": "sleep 30"}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        args = [
            "run",
            "--approve",
            "all",
            "--timeout",
            "3",
            "--session",
            str(session),
            *model_args(server, workspace),
        ]
        done = run_cli([*args, "go"], tmp_path)
    assert done.returncode == 124, done.stderr
    assert "--timeout 3: time is up" in done.stderr and "Traceback" not in done.stderr
    messages = load_session(session)
    assert_every_call_answered_once(messages)
    assert messages[-1].role == "tool"


def test_timeout_while_the_model_starts_exits_124(tmp_path: Path) -> None:
    script = tmp_path / "slow_start.py"
    script.write_text(
        "import sys, threading\n"
        "import miniagent.providers as providers\n"
        "providers.create_client = lambda *a, **k: threading.Event().wait(30)\n"
        "from miniagent.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    argv = [sys.executable, str(script), "run", "--json", "--timeout", "0.5", "--provider", "openai", "hi"]
    done = subprocess.run(
        argv,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 124, done.stderr
    assert json_lines(done.stdout)[-1]["exit_code"] == 124
    # Found by a new user: it blamed "the MCP servers and the model" with no MCP server configured.
    assert "--timeout 0.5: the model did not start in time" in done.stderr


def test_verbose_and_log_file_say_what_happened_without_keys(tmp_path: Path, workspace: Path) -> None:
    key = "sk-test-THIS-KEY-MUST-NOT-BE-LOGGED-1234"
    log = tmp_path / "run.log"
    turns = [
        ("status", 503, f"overloaded, key {key}"),
        tool_turn("read_file", {"path": "notes.txt"}),
        text_turn("ok"),
    ]
    with FakeOpenAI(turns) as server:
        args = ["run", "-v", "--log-file", str(log), *model_args(server, workspace), "read the notes"]
        done = run_cli(args, tmp_path, env={"MINIAGENT_API_KEY": key, "OPENAI_API_KEY": key})
        assert server.headers[0]["Authorization"] == f"Bearer {key}"  # the key was really in use
    assert done.returncode == 0, done.stderr
    written = log.read_text()
    for text in (done.stderr, written):
        assert key not in text
        assert "retry 1 in" in text and "request 1: " in text and "request 2 done in" in text
        assert "tool read_file (call_1) done in" in text and ": ok, " in text
        assert "stop reason: complete" in text
    assert "HTTP 200 from 127.0.0.1:" in written and "HTTP 200" not in done.stderr  # -v is INFO
    assert "miniagent: agent: " in done.stderr and "miniagent: miniagent." not in done.stderr  # one prefix
    assert done.stdout == "ok\n"


def test_no_logs_without_asking(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        done = run_cli(["run", *model_args(server, workspace), "hi"], tmp_path)
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "ok\n"


def test_chat_holds_its_session_open_between_lines(tmp_path: Path, workspace: Path) -> None:
    # One open session for the whole conversation: another run cannot slip in between two lines.
    session = tmp_path / "chat.jsonl"
    with FakeOpenAI([text_turn("First."), text_turn("Second.")]) as server:
        chat = subprocess.Popen(
            cli_command(["chat", "--session", str(session), *model_args(server, workspace)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(tmp_path),
            cwd=tmp_path,
        )
        try:
            assert chat.stdin is not None and chat.stdout is not None
            chat.stdin.write("one\n")
            chat.stdin.flush()
            assert chat.stdout.readline() == "First.\n"  # between two lines now
            other = run_cli(["run", "--session", str(session), *model_args(server, workspace), "x"], tmp_path)
            assert other.returncode == 1 and "lock" in other.stderr
            assert server.posts == 1  # refused before any request
            stdout, stderr = chat.communicate("two\n", timeout=20)
        finally:
            chat.kill()
    assert chat.returncode == 0, stderr
    assert stdout == "Second.\n"
    assert [m.content for m in load_session(session)] == ["one", "First.", "two", "Second."]


def test_a_locked_session_fails_before_the_client_starts(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text('{"role":"user","content":"hi"}\n')
    started = tmp_path / "started"
    script = tmp_path / "start.py"
    script.write_text(
        "import pathlib, sys\n"
        "import miniagent.providers as providers\n"
        f"providers.create_client = lambda *a, **k: pathlib.Path({str(started)!r}).write_text('yes')\n"
        "from miniagent.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    with JSONLSession(session) as holder:
        holder.load()  # holds the lock, as a running chat would
        argv = [sys.executable, str(script), "run", "--session", str(session), "--provider", "openai", "hi"]
        done = subprocess.run(
            argv,
            env=cli_env(tmp_path),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
    assert done.returncode == 1 and "lock" in done.stderr
    assert not started.exists()
