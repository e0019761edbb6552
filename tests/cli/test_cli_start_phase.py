"""The start of a run (MCP servers, the model's client) under signals and ``--timeout``.

Found by a new user: SIGTERM or SIGHUP while an MCP server started killed the CLI without a word
and left the server orphaned; ``--timeout`` did not cover the MCP servers' start (exit 1 after
the 30 s initialize limit); after a SIGTERM the local model's child outlived the CLI for seconds.
Now every signal of that phase is handled like Ctrl-C (one message, exit ``128 + signal``, every
started process killed) and ``--timeout`` covers the whole start (exit 124).

Each test waits until the stuck process has really started (it writes its pid to a file) before
it signals: nothing depends on how fast the machine is.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miniagent.process.groups import group_alive
from tests.cli_helpers import FakeOpenAI, cli_env, model_args, spawn_cli


def _stuck_mcp_config(tmp_path: Path) -> tuple[Path, Path]:
    """An MCP config whose server writes its pid, then never answers ``initialize``."""
    pid_file = tmp_path / "server.pid"
    code = (
        f"import os, pathlib, time; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); "
        "time.sleep(100)"
    )
    config = tmp_path / "bad5.json"
    config.write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": ["-c", code]}}}))
    return config, pid_file


def _wait_for_pid(pid_file: Path, child: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the stuck process never started"
        time.sleep(0.01)
    return int(pid_file.read_text())


def _assert_gone(pgid: int) -> None:
    """The group is gone (SIGKILLed before the CLI exited; the grace only covers reaping by init)."""
    deadline = time.monotonic() + 5
    while group_alive(pgid):
        assert time.monotonic() < deadline, "a started process outlived the CLI"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_signal_while_an_mcp_server_starts_stops_it_and_exits_128_plus_signal(
    tmp_path: Path, signum: int, code: int
) -> None:
    config, pid_file = _stuck_mcp_config(tmp_path)
    with FakeOpenAI([]) as server:
        args = ["run", *model_args(server, tmp_path), "--mcp-config", str(config), "x"]
        child = spawn_cli(args, tmp_path)
        try:
            pid = _wait_for_pid(pid_file, child)
            child.send_signal(signum)
            _, stderr = child.communicate(timeout=20)
        finally:
            child.kill()
        assert server.posts == 0
    assert child.returncode == code, stderr
    assert "miniagent: aborted" in stderr and "nothing was sent" in stderr
    assert "Traceback" not in stderr
    _assert_gone(pid)


def test_timeout_covers_the_start_of_the_mcp_servers(tmp_path: Path) -> None:
    config, pid_file = _stuck_mcp_config(tmp_path)
    with FakeOpenAI([]) as server:
        args = ["run", *model_args(server, tmp_path), "--mcp-config", str(config), "--timeout", "2", "x"]
        child = spawn_cli(args, tmp_path)
        try:
            _, stderr = child.communicate(timeout=25)  # the server's own initialize limit is 30 s
        finally:
            child.kill()
        assert server.posts == 0
    assert child.returncode == 124, stderr
    assert "--timeout 2" in stderr and "did not start in time" in stderr
    _assert_gone(int(pid_file.read_text()))


def test_sigterm_while_the_model_starts_kills_its_child_at_once(tmp_path: Path) -> None:
    # Like the local provider: the client's start runs a child in its own session (registered as
    # the local model's child is) and then blocks in C code, as llama.cpp's loading does.
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "slow_start.py"
    script.write_text(
        "import ctypes, pathlib, subprocess, sys\n"
        "import miniagent.providers as providers\n"
        "from miniagent.process.groups import register_group\n"
        "def slow(*args, **kwargs):\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(100)'],"
        " start_new_session=True, stdin=subprocess.PIPE)\n"
        "    register_group(child.pid)\n"
        f"    pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        "    ctypes.CDLL(None).sleep(100)\n"
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
        text=True,
    )
    try:
        pid = _wait_for_pid(pid_file, child)
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=20)
    finally:
        child.kill()
    assert child.returncode == 143, stderr
    assert "aborted by SIGTERM" in stderr
    _assert_gone(pid)


def test_json_ends_with_an_aborted_line_after_a_signal_while_starting(tmp_path: Path) -> None:
    config, pid_file = _stuck_mcp_config(tmp_path)
    with FakeOpenAI([]) as server:
        args = ["run", "--json", *model_args(server, tmp_path), "--mcp-config", str(config), "x"]
        child = spawn_cli(args, tmp_path)
        try:
            pid = _wait_for_pid(pid_file, child)
            child.send_signal(signal.SIGINT)
            stdout, stderr = child.communicate(timeout=20)
        finally:
            child.kill()
    assert child.returncode == 130, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert lines == [{"stop_reason": "aborted", "exit_code": 130}]
    _assert_gone(pid)


def test_json_ends_with_an_error_line_when_the_start_times_out(tmp_path: Path) -> None:
    config, pid_file = _stuck_mcp_config(tmp_path)
    with FakeOpenAI([]) as server:
        args = ["run", "--json", *model_args(server, tmp_path), "--mcp-config", str(config), "--timeout", "1"]
        child = spawn_cli([*args, "x"], tmp_path)
        try:
            stdout, stderr = child.communicate(timeout=25)
        finally:
            child.kill()
    assert child.returncode == 124, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["stop_reason"] is None and lines[0]["exit_code"] == 124
    assert "did not start in time" in lines[0]["error"]
    _assert_gone(int(pid_file.read_text()))


def test_ctrl_c_while_waiting_for_a_start_thread_counts_it_as_abandoned() -> None:
    # Found by the suite under load: on CPython 3.11 a KeyboardInterrupt inside Thread.join(timeout)
    # marks the still-running thread stopped, so the start thread was not counted as abandoned
    # and the exit waited for it (the Ctrl-C exit took up to 10 s instead of at once).
    import threading
    from typing import Any, cast

    from miniagent.cli.runner import Runner

    runner = Runner(cast(Any, None), cast(Any, None))
    entered, release = threading.Event(), threading.Event()
    main = threading.get_ident()

    def start() -> str:
        entered.set()
        release.wait(30)
        return "started"

    def interrupt() -> None:
        entered.wait(30)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner._in_thread(start, name="test-start")
        assert runner.abandoned
    finally:
        release.set()
