"""The real ``miniagent`` CLI, run as a subprocess against a scripted OpenAI-compatible server.

Every exit code (0, 2, 130, 143, 1, 64), ``--json``, ``-`` on stdin, ``chat`` on a
pseudo-terminal, the read-only default without a terminal, and signals. Signal tests wait for a
fact that proves the child reached the blocking point (a line on its stdout or stderr, the fake
server's flag, a file the tool wrote) before signalling: no blind sleeps.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from miniagent.cli import (
    EXIT_USAGE,
    default_session_path,
    resolve_approval,
    resolve_provider,
    run_cli,
    session_folder,
)
from miniagent.process.groups import group_alive
from tests.cli_helpers import (
    STALL,
    FakeOpenAI,
    cli_command,
    cli_env,
    empty_turn,
    json_lines,
    model_args,
    spawn_cli,
    text_turn,
    tool_turn,
)
from tests.cli_helpers import run_cli as run_cli_process
from tests.helpers import assert_every_call_answered_once

NOTES = "The launch code is PURPLE-ELEPHANT-42."

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text(NOTES + "\n", encoding="utf-8")
    return folder


def _read_line_until(stream: Any, predicate: Any, timeout: float = 15) -> list[str]:
    """Read lines from a pipe until ``predicate(line)``; return all lines read."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            raise AssertionError(f"stream ended before the expected line; got {lines!r}")
        lines.append(line)
        if predicate(line):
            return lines
    raise AssertionError(f"timed out; got {lines!r}")


# --- pure helpers ------------------------------------------------------------------------------


def test_resolve_provider_prefers_explicit_then_keys_then_local() -> None:
    assert resolve_provider("openai", {"ANTHROPIC_API_KEY": "k"}) == "openai"
    assert resolve_provider(None, {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}) == "anthropic"
    assert resolve_provider(None, {"OPENAI_API_KEY": "o"}) == "openai"
    assert resolve_provider("", {}) == "local"
    assert resolve_provider(None, {}, base_url="http://127.0.0.1:11434/v1") == "openai"
    assert resolve_provider(None, {"GEMINI_API_KEY": "g"}) == "gemini"
    with pytest.raises(ValueError, match="unknown provider"):
        resolve_provider("ollama", {})


def test_resolve_approval_defaults_to_ask_only_on_a_terminal() -> None:
    assert resolve_approval(None, stdin_is_terminal=True) == "ask"
    assert resolve_approval(None, stdin_is_terminal=False) == "read-only"
    assert resolve_approval("all", stdin_is_terminal=False) == "all"
    with pytest.raises(ValueError):
        resolve_approval("maybe", stdin_is_terminal=True)


def test_default_session_path_is_under_xdg_state_and_new(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    first = default_session_path(env, now=0)
    assert first.parent == tmp_path / "miniagent" / "sessions" and first.suffix == ".jsonl"
    assert first.exists() and first.stat().st_size == 0  # claimed, an empty session
    # Found by a new user: chats started in the same second shared (and fought over) one file.
    others = [default_session_path(env, now=0) for _ in range(3)]
    assert len({first, *others}) == 4
    assert session_folder({}) == Path.home() / ".local" / "state" / "miniagent" / "sessions"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--bogus", "x"],
        ["--bogus"],
        ["run"],
        ["run", "--provider", "ollama", "x"],
        ["run", "--approve", "maybe", "x"],
        ["run", "--max-turns", "0", "x"],
        ["run", "--provider", "local", "--base-url", "http://127.0.0.1:1/v1", "x"],
        ["chat", "--workspace", "/no/such/folder"],
    ],
)
def test_usage_errors_exit_64_in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Usage:" in captured.err or "error" in captured.err.lower()


# --- startup -----------------------------------------------------------------------------------


def test_help_and_version_are_fast_and_import_nothing_heavy(tmp_path: Path) -> None:
    # Fast = nothing heavy imported (the probe below); the time itself is the machine's (bench).
    result = run_cli_process(["--help"], tmp_path, launcher=True)
    assert result.returncode == 0, result.stderr
    assert "run" in result.stdout and "chat" in result.stdout
    version = run_cli_process(["--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("miniagent ")
    probe = (
        "import sys, miniagent; assert 'typer' not in sys.modules and 'requests' not in sys.modules; "
        "import miniagent.cli; "
        "heavy = [m for m in ('requests', 'pydantic', 'rich', 'miniagent.providers', 'miniagent.toolbox') "
        "if m in sys.modules]; assert not heavy, heavy"
    )
    check = subprocess.run(
        [sys.executable, "-c", probe], env=cli_env(tmp_path), capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


# --- exit codes ----------------------------------------------------------------------------------


def test_run_reads_a_file_and_prints_the_answer(tmp_path: Path, workspace: Path) -> None:
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("The note says PURPLE-ELEPHANT-42.")]
    with FakeOpenAI(turns) as server:
        result = run_cli_process(
            ["run", *model_args(server, workspace), "What is in notes.txt?"], tmp_path, launcher=True
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The note says PURPLE-ELEPHANT-42.\n"  # only the answer on stdout
    assert "-> read_file" in result.stderr  # the tool line is progress: stderr
    sent = server.requests[1]["messages"]
    assert sent[-1]["role"] == "tool" and NOTES in sent[-1]["content"]
    assert str(workspace) in sent[0]["content"] and "read_file" in sent[0]["content"]


def test_json_output_is_one_object_per_line_and_nothing_else(tmp_path: Path, workspace: Path) -> None:
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("It says PURPLE.")]
    session = tmp_path / "s.jsonl"
    with FakeOpenAI(turns) as server:
        args = ["run", "--json", "--session", str(session), *model_args(server, workspace), "Read notes"]
        result = run_cli_process(args, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert [line.get("role") for line in lines[:-1]] == ["user", "assistant", "tool", "assistant"]
    assert lines[1]["tool_calls"][0]["name"] == "read_file"
    assert lines[-1] == {"stop_reason": "complete", "exit_code": 0}
    assert [json.loads(line) for line in session.read_text().splitlines()] == lines[:-1]


def test_max_turns_exits_2_with_the_last_tools_recorded(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([tool_turn("read_file", {"path": "notes.txt"})]) as server:
        args = ["run", "--json", "--max-turns", "1", *model_args(server, workspace), "Read notes"]
        result = run_cli_process(args, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = json_lines(result.stdout)
    assert lines[-2]["role"] == "tool" and NOTES in lines[-2]["content"]
    assert lines[-1] == {"stop_reason": "max_turns", "exit_code": 2}
    assert server.posts == 1


def test_prompt_from_stdin(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("Done.")]) as server:
        result = run_cli_process(
            ["run", *model_args(server, workspace), "-"], tmp_path, input="Summarise\nthe notes\n"
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n"
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "Summarise\nthe notes"}


def test_empty_prompt_on_stdin_is_a_usage_error(tmp_path: Path, workspace: Path) -> None:
    result = run_cli_process(["run", "--provider", "openai", "-"], tmp_path, input="\n")
    assert result.returncode == 64 and result.stdout == ""
    assert "miniagent: error: the prompt is empty" in result.stderr


def test_bad_max_turns_exits_64_not_2(tmp_path: Path) -> None:
    result = run_cli_process(["run", "--max-turns", "abc", "hello"], tmp_path)
    assert result.returncode == 64
    assert "--max-turns" in result.stderr and result.stdout == ""


def test_unreachable_provider_exits_1_with_one_line(tmp_path: Path, workspace: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["run", "--json", "--provider", "openai", "--base-url", f"http://127.0.0.1:{port}/v1"]
    result = run_cli_process([*args, "--workspace", str(workspace), "hello"], tmp_path)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("miniagent: error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    last = json_lines(result.stdout)[-1]
    assert last["exit_code"] == 1 and last["stop_reason"] is None and last["error"]


def test_provider_error_shows_a_traceback_only_with_debug(tmp_path: Path, workspace: Path) -> None:
    bad_key = ("status", 401, "Incorrect API key provided")
    with FakeOpenAI([bad_key, bad_key]) as server:
        plain = run_cli_process(["run", *model_args(server, workspace), "hi"], tmp_path)
        debug = run_cli_process(["run", "--debug", *model_args(server, workspace), "hi"], tmp_path)
    assert plain.returncode == 1 and debug.returncode == 1
    assert plain.stdout == ""
    assert "Traceback" not in plain.stderr and "Incorrect API key" in plain.stderr
    assert plain.stderr.count("\n") == 1
    assert "Traceback" in debug.stderr


def test_empty_model_answer_exits_1(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([empty_turn()]) as server:
        result = run_cli_process(["run", *model_args(server, workspace), "hi"], tmp_path)
    assert result.returncode == 1
    assert "miniagent: error: model completed without text or tool calls" in result.stderr


@pytest.mark.parametrize("command", ["run", "chat"])
def test_corrupt_session_exits_1_and_is_left_untouched(tmp_path: Path, workspace: Path, command: str) -> None:
    session = tmp_path / "broken.jsonl"
    original = b'{"role":"user","content":"hi"}\nnot json at all\n{"role":"user","content":"again"}\n'
    session.write_bytes(original)
    with FakeOpenAI([text_turn("never")]) as server:
        args = [command, "--session", str(session), *model_args(server, workspace)]
        if command == "run":
            args.append("hello")
        result = run_cli_process(args, tmp_path, input="hello\n")
    assert result.returncode == 1
    assert f"{session}:2" in result.stderr and "Traceback" not in result.stderr
    assert session.read_bytes() == original
    assert server.posts == 0


def test_read_only_is_the_default_without_a_terminal(tmp_path: Path, workspace: Path) -> None:
    turns = [tool_turn("write_file", {"path": "out.txt", "content": "x"}), text_turn("I was not allowed.")]
    with FakeOpenAI(turns) as server:
        result = run_cli_process(["run", "--json", *model_args(server, workspace), "Write out.txt"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "out.txt").exists()
    tool = next(line for line in json_lines(result.stdout) if line.get("role") == "tool")
    assert tool["is_error"] is True
    assert tool["content"].startswith("refused:") and "read-only" in tool["content"]
    assert server.requests[1]["messages"][-1]["content"] == tool["content"]  # the model was told why


def test_approve_all_lets_tools_change_files(tmp_path: Path, workspace: Path) -> None:
    turns = [tool_turn("write_file", {"path": "out.txt", "content": "written"}), text_turn("Wrote it.")]
    with FakeOpenAI(turns) as server:
        args = ["run", "--approve", "all", *model_args(server, workspace), "Write out.txt"]
        result = run_cli_process(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (workspace / "out.txt").read_text() == "written"


# --- signals -----------------------------------------------------------------------------------


def test_sigint_during_a_slow_tool_exits_130_with_every_call_answered(
    tmp_path: Path, workspace: Path
) -> None:
    session = tmp_path / "s.jsonl"
    turns = [tool_turn("run_command", {"command": "sleep 30"}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        args = [
            "run",
            "--json",
            "--approve",
            "all",
            "--session",
            str(session),
            *model_args(server, workspace),
            "go",
        ]
        child = spawn_cli(args, tmp_path)
        try:
            assert child.stdout is not None
            _read_line_until(child.stdout, lambda line: '"tool_calls"' in line)  # the call is committed
            started = time.monotonic()
            child.send_signal(signal.SIGINT)
            rest, stderr = child.communicate(timeout=10)
        finally:
            child.kill()
    assert child.returncode == 130, stderr
    assert time.monotonic() - started < 5
    assert json.loads(rest.splitlines()[-1]) == {"stop_reason": "aborted", "exit_code": 130}
    messages = load_session(session)
    assert_every_call_answered_once(messages)
    assert messages[-1].role == "tool" and messages[-1].is_error
    assert server.posts == 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_during_a_stalled_stream(tmp_path: Path, workspace: Path, signum: int, code: int) -> None:
    session = tmp_path / "s.jsonl"
    with FakeOpenAI([STALL]) as server:
        args = ["run", "--json", "--session", str(session), *model_args(server, workspace), "go"]
        child = spawn_cli(args, tmp_path)
        try:
            assert server.first_event_sent.wait(15)  # the child is now blocked reading the stream
            started = time.monotonic()
            child.send_signal(signum)
            stdout, stderr = child.communicate(timeout=10)
        finally:
            child.kill()
    assert child.returncode == code, stderr
    assert time.monotonic() - started < 5
    assert json_lines(stdout)[-1] == {"stop_reason": "aborted", "exit_code": code}
    assert [m.role for m in load_session(session)] == ["user"]  # the partial turn was not committed


def _fill_pipe(fd: int) -> None:
    """Write into pipe ``fd`` until it is full, so the next write of the CLI blocks."""
    fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ: one page, quick to fill
    os.set_blocking(fd, False)
    for size in (4096, 1):
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(fd, b"x" * size)


def test_second_sigint_exits_at_once(tmp_path: Path, workspace: Path) -> None:
    # Once the first Ctrl-C was taken, the CLI's stdout is made full (the test stops reading and
    # fills the pipe), so the cancelled run blocks at its next line (the tool result) and can
    # never write its end: whenever the second Ctrl-C comes, only the emergency exit can end the
    # process. (It relied on the second Ctrl-C coming within the command's 0.5 s kill grace.)
    marker = workspace / "pgid.txt"
    command = "awk '{print $5}' /proc/$$/stat > pgid.txt; trap '' TERM; sleep 30"
    turns = [tool_turn("run_command", {"command": command}), text_turn("never")]
    pgid = None
    read_fd, write_fd = os.pipe()
    with FakeOpenAI(turns) as server, os.fdopen(read_fd, "r") as out:
        args = ["run", "--json", "--approve", "all", *model_args(server, workspace), "go"]
        child = spawn_cli(args, tmp_path, stdout=write_fd)
        try:
            assert child.stderr is not None
            _read_line_until(out, lambda line: '"tool_calls"' in line)
            deadline = time.monotonic() + 10
            while not (marker.exists() and marker.read_text().strip()):  # the shell is running
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.01)
            pgid = int(marker.read_text())
            _fill_pipe(write_fd)
            child.send_signal(signal.SIGINT)
            _read_line_until(child.stderr, lambda line: "cancelling" in line)  # first one handled
            child.send_signal(signal.SIGINT)
            child.wait(timeout=10)
            os.close(write_fd)
            write_fd = -1
            stdout = out.read()
            deadline = time.monotonic() + 5
            while group_alive(pgid):  # the CLI killed its command on the way out
                assert time.monotonic() < deadline, "the command outlived the CLI"
                time.sleep(0.02)
        finally:
            child.kill()
            if write_fd >= 0:
                os.close(write_fd)
            if pgid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
    assert child.returncode == 130
    assert '"stop_reason"' not in stdout  # it did not wait for the run to close


# --- chat ----------------------------------------------------------------------------------------


def _read_pty_until(fd: int, needle: str, buffer: list[str], timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while needle not in "".join(buffer):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{needle!r} not seen; output: {''.join(buffer)!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            if not data:
                raise AssertionError(f"terminal closed before {needle!r}; output: {''.join(buffer)!r}")
            buffer.append(data.decode("utf-8", "replace"))
    return "".join(buffer)


def test_chat_on_a_terminal(tmp_path: Path, workspace: Path) -> None:
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("The notes say PURPLE-ELEPHANT-42.")]
    with FakeOpenAI(turns) as server:
        master, slave = os.openpty()
        child = subprocess.Popen(
            cli_command(["chat", *model_args(server, workspace)]),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=cli_env(tmp_path, {"TERM": "xterm"}),
            cwd=tmp_path,
            start_new_session=True,
        )
        os.close(slave)
        output: list[str] = []
        try:
            _read_pty_until(master, "/exit", output)  # the greeting: ready for input
            os.write(master, b"What is in notes.txt?\n")
            _read_pty_until(master, "The notes say PURPLE-ELEPHANT-42.", output)
            os.write(master, b"/exit\n")
            assert child.wait(timeout=10) == 0
        finally:
            child.kill()
            os.close(master)
    text = "".join(output)
    assert "-> read_file" in text and "<- read_file ok" in text
    sessions = list((tmp_path / "state" / "miniagent" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1 and str(sessions[0]) in text  # the path is printed for --session
    assert [m.role for m in load_session(sessions[0])] == ["user", "assistant", "tool", "assistant"]


def test_chat_keeps_one_history_across_lines(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "chat.jsonl"
    with FakeOpenAI([text_turn("Hello Ada."), text_turn("Your name is Ada.")]) as server:
        args = ["chat", "--json", "--session", str(session), *model_args(server, workspace)]
        result = run_cli_process(args, tmp_path, input="My name is Ada.\n\nWhat is my name?\n")
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert [line.get("stop_reason") for line in lines if "exit_code" in line] == ["complete", "complete"]
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "Hello Ada."
    # A new chat on the same session resumes it.
    with FakeOpenAI([text_turn("Still Ada.")]) as server:
        args = ["chat", "--session", str(session), *model_args(server, workspace)]
        again = run_cli_process(args, tmp_path, input="And now?\n/exit\n")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Still Ada.\n"
    assert len(server.requests[0]["messages"]) == 6


def test_chat_ctrl_c_cancels_the_answer_and_keeps_chatting(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "chat.jsonl"
    with FakeOpenAI([STALL, text_turn("Second answer.")]) as server:
        args = ["chat", "--session", str(session), *model_args(server, workspace)]
        child = spawn_cli(args, tmp_path, stdin=subprocess.PIPE)
        try:
            assert child.stdin is not None
            child.stdin.write("first question\n")
            child.stdin.flush()
            assert server.first_event_sent.wait(15)
            child.send_signal(signal.SIGINT)
            stdout, stderr = child.communicate("second question\n", timeout=15)
        finally:
            child.kill()
    assert child.returncode == 0, stderr
    assert stdout == "Second answer.\n"
    assert "cancelled" in stderr
    assert [m.content for m in load_session(session)] == [
        "first question",
        "second question",
        "Second answer.",
    ]


def test_ctrl_c_at_the_approval_prompt_aborts_the_run(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "s.jsonl"
    turns = [tool_turn("write_file", {"path": "out.txt", "content": "x"}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        master, slave = os.openpty()
        args = ["run", "--session", str(session), *model_args(server, workspace), "write it"]
        child = subprocess.Popen(
            cli_command(args),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=cli_env(tmp_path),
            cwd=tmp_path,
            start_new_session=True,
        )
        os.close(slave)
        output: list[str] = []
        try:
            _read_pty_until(master, "approve?", output)  # --approve defaults to ask on a terminal
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=10) == 130
        finally:
            child.kill()
            os.close(master)
    assert not (workspace / "out.txt").exists()
    messages = load_session(session)
    assert_every_call_answered_once(messages)
    assert messages[-1].content == "aborted before execution"
    assert server.posts == 1


# --- the embedded model ------------------------------------------------------------------------


@pytest.mark.local_model
@pytest.mark.timeout(600)
def test_run_against_the_local_model(tmp_path: Path, workspace: Path) -> None:
    pytest.importorskip("xllamacpp")
    args = ["run", "--provider", "local", "--workspace", str(workspace), "--json"]
    question = "Please read the file notes.txt and tell me what it says"
    result = run_cli_process([*args, question], tmp_path, timeout=580)
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    final = {k: lines[-1][k] for k in ("stop_reason", "exit_code")}  # the line also carries usage
    assert final == {"stop_reason": "complete", "exit_code": 0}
    tools = [line for line in lines if line.get("role") == "tool"]
    assert tools and NOTES in tools[0]["content"]
    assert "purple-elephant-42" in lines[-2]["content"].lower()


# --- found by a new user's trial ------------------------------------------------------------------


def test_an_install_without_typer_gets_an_install_hint_not_a_traceback(tmp_path: Path) -> None:
    code = "import sys; sys.modules['typer'] = None; from miniagent._launcher import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"], capture_output=True, text=True, env=cli_env(tmp_path)
    )
    assert done.returncode == 1
    assert done.stderr.startswith("miniagent: error: the command line needs typer")
    assert "pip install 'miniagent[cli]'" in done.stderr and "Traceback" not in done.stderr


def test_python_dash_m_miniagent_runs_the_cli(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "miniagent", "--version"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
    )
    assert done.returncode == 0 and done.stdout.startswith("miniagent ")


def test_a_prompt_with_undecodable_bytes_is_sent_with_replacement_characters(
    tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        command = cli_command(["run", *model_args(server, workspace), "--json"])
        done = subprocess.run(
            [os.fsencode(part) for part in command] + [b"bad \xff byte"],
            capture_output=True,
            env=cli_env(tmp_path),
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        assert server.requests[0]["messages"][-1]["content"] == "bad \ufffd byte"
    assert json.loads(done.stdout.decode("utf-8").splitlines()[0])["content"] == "bad \ufffd byte"


def test_miniagent_api_key_is_sent_to_a_local_server(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok"), text_turn("ok")]) as server:
        done = run_cli_process(["run", *model_args(server, workspace), "hi"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Authorization" not in server.headers[0]  # OPENAI_API_KEY never goes to localhost
        env = {"MINIAGENT_API_KEY": "local-server-key"}
        done = run_cli_process(["run", *model_args(server, workspace), "hi"], tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert server.headers[1]["Authorization"] == "Bearer local-server-key"


def test_a_client_that_is_slow_to_close_does_not_hold_the_exit(tmp_path: Path) -> None:
    # A local llama.cpp server finishes the prompt it evaluates before it stops; after a cancel
    # that can take many seconds. The CLI waits about a second, then exits without it.
    script = tmp_path / "slow_close.py"
    script.write_text(
        "import sys, threading, time\n"
        "import miniagent.providers as providers\n"
        "from miniagent.testing import ScriptedClient\n"
        "class Slow(ScriptedClient):\n"
        "    def close(self):\n"
        "        time.sleep(60)\n"
        "providers.create_client = lambda *a, **k: Slow([['done']])\n"
        "from miniagent.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script), "run", "--provider", "openai", "--workspace", str(tmp_path), "hi"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_one_signal_while_the_approval_prompt_waits_stops_the_run(
    tmp_path: Path, workspace: Path, signum: int, code: int
) -> None:
    # Found by a new user: a single SIGTERM at the prompt hung until the prompt was answered.
    session = tmp_path / "s.jsonl"
    turns = [tool_turn("write_file", {"path": "x.txt", "content": "x"}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        args = [
            "run",
            "--json",
            "--approve",
            "ask",
            "--session",
            str(session),
            *model_args(server, workspace),
        ]
        child = spawn_cli([*args, "go"], tmp_path, stdin=subprocess.PIPE)  # nobody answers
        try:
            assert child.stderr is not None
            _read_line_until(child.stderr, lambda line: line.startswith("tool call: write_file"))
            started = time.monotonic()
            child.send_signal(signum)
            child.wait(timeout=10)  # stdin stays open: the prompt would wait for ever
            assert child.stdout is not None
            stdout = child.stdout.read()
        finally:
            child.kill()
    assert child.returncode == code
    assert time.monotonic() - started < 5
    assert json_lines(stdout)[-1] == {"stop_reason": "aborted", "exit_code": code}
    messages = load_session(session)
    assert messages[-1].content == "aborted before execution"
    assert not (workspace / "x.txt").exists()


def test_sighup_during_a_command_stops_it_and_closes_the_calls(tmp_path: Path, workspace: Path) -> None:
    # Found by a new user: closing the terminal left the command running and the call unanswered.
    marker = workspace / "pgid.txt"
    session = tmp_path / "s.jsonl"
    command = "awk '{print $5}' /proc/$$/stat > pgid.txt; sleep 30"  # the group id ($$: under the reaper)
    turns = [tool_turn("run_command", {"command": command}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        args = ["run", "--approve", "all", "--session", str(session), *model_args(server, workspace), "go"]
        child = spawn_cli(args, tmp_path)
        try:
            deadline = time.monotonic() + 15
            while not (marker.exists() and marker.read_text().strip()):
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.01)
            pgid = int(marker.read_text())
            child.send_signal(signal.SIGHUP)
            child.communicate(timeout=10)
        finally:
            child.kill()
    assert child.returncode == 129
    deadline = time.monotonic() + 5
    while group_alive(pgid):
        assert time.monotonic() < deadline, "the command outlived the CLI"
        time.sleep(0.02)
    assert_every_call_answered_once(load_session(session))


def test_ctrl_c_while_the_client_starts_exits_at_once(tmp_path: Path) -> None:
    # Found by a new user: starting the local server blocks in C code, where the main thread
    # could not take the Ctrl-C; the CLI now starts the client in a thread. Here the start blocks
    # in a C call (libc sleep), like llama.cpp's start-up.
    started = tmp_path / "started"
    script = tmp_path / "slow_start.py"
    script.write_text(
        "import ctypes, pathlib, sys\n"
        "import miniagent.providers as providers\n"
        "def slow(*args, **kwargs):\n"
        f"    pathlib.Path({str(started)!r}).write_text('yes')\n"
        "    ctypes.CDLL(None).sleep(30)\n"
        "providers.create_client = slow\n"
        "from miniagent.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    command = [sys.executable, str(script), "run", "--provider", "openai", "--workspace", str(tmp_path), "hi"]
    child = subprocess.Popen(
        command,
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 15
        while not started.exists():
            assert time.monotonic() < deadline, "the client never started"
            time.sleep(0.01)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        child.wait(timeout=10)
    finally:
        child.kill()
    assert child.returncode == 130
    assert time.monotonic() - sent < 3


def test_chat_help_and_exit_commands_are_not_sent_to_the_model(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([]) as server:
        done = run_cli_process(["chat", *model_args(server, workspace)], tmp_path, input="/help\n/EXIT \n")
        assert server.posts == 0
    assert done.returncode == 0, done.stderr
    assert "/exit or /quit" in done.stderr
