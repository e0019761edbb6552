"""A CLI killed with SIGKILL leaves no command behind: the command's runner dies with its parent."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.cli_helpers import FakeOpenAI, model_args, spawn_cli, text_turn, tool_turn

pytestmark = pytest.mark.timeout(60)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2 :].split()[1]) == pid:
                found.append(int(name))
    return found


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_kill_9_of_the_cli_while_a_command_runs_leaves_no_process_behind(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    command = "echo $$ > sh.pid; sleep 47"
    turns = [tool_turn("run_command", {"command": command}), text_turn("never")]
    with FakeOpenAI(turns) as server:
        cli = spawn_cli(["run", *model_args(server, workspace), "--approve", "all", "go"], tmp_path)
        try:
            pid_file = workspace / "sh.pid"
            deadline = time.monotonic() + 30
            while not (pid_file.exists() and pid_file.read_text().strip()):
                assert cli.poll() is None and time.monotonic() < deadline, cli.communicate()
                time.sleep(0.02)
            shell = int(pid_file.read_text())
            deadline = time.monotonic() + 10
            while not (sleepers := _children(shell)):
                assert time.monotonic() < deadline, "sleep 47 did not start"
                time.sleep(0.02)
            runner = _parent(shell)
            assert runner != cli.pid and _parent(runner) == cli.pid  # the reaper between them
            tree = [runner, shell, *sleepers]
            os.kill(cli.pid, signal.SIGKILL)
            cli.wait(timeout=10)
            deadline = time.monotonic() + 10
            while any(_alive(pid) for pid in tree):
                assert time.monotonic() < deadline, [pid for pid in tree if _alive(pid)]
                time.sleep(0.02)
        finally:
            if cli.poll() is None:
                cli.kill()
            cli.communicate()
