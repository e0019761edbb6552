"""The child-process machinery of the tools (``miniagent.process``) with real processes."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from miniagent.process.children import check_environment, run_process, start_child, stop_child
from miniagent.process.groups import group_alive, kill_running_children, running_groups
from miniagent.toolbox.timeouts import ToolTimeout

PYTHON = sys.executable


def test_a_child_with_pipes_talks_and_its_whole_group_is_stopped(tmp_path: Path) -> None:
    """The MCP stdio shape: stdin and stdout pipes, stderr elsewhere, a grandchild in the group."""
    script = (
        "import subprocess, sys\n"
        "subprocess.Popen(['sleep', '300'])\n"  # a grandchild that would outlive a plain kill
        "for line in sys.stdin:\n"
        "    print(line.strip().upper(), flush=True)\n"
    )
    child = start_child(
        [PYTHON, "-c", script],
        tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert os.getpgid(child.pid) == child.pid  # a group of its own
        assert child.pid in running_groups()
        child.stdin.write(b"ping\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"PING\n"
    finally:
        stop_child(child, grace=0.2)
        child.stdin.close()
        child.stdout.close()
    assert child.returncode is not None
    assert not group_alive(child.pid)
    assert child.pid not in running_groups()


def test_stop_child_kills_a_group_that_ignores_sigterm(tmp_path: Path) -> None:
    script = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('up', flush=True)\n"
        "time.sleep(300)\n"
    )
    child = start_child([PYTHON, "-c", script], tmp_path)
    assert child.stdout is not None
    assert child.stdout.readline() == b"up\n"
    started = time.monotonic()
    stop_child(child, grace=0.1)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 3
    assert not group_alive(child.pid)


def test_stop_child_on_an_exited_child_only_reaps_and_unregisters(tmp_path: Path) -> None:
    child = start_child(["true"], tmp_path, stdout=subprocess.DEVNULL)
    child.wait()
    stop_child(child)
    assert child.returncode == 0 and child.pid not in running_groups()


def test_kill_running_children_reaches_every_registered_group(tmp_path: Path) -> None:
    children = [start_child(["sleep", "300"], tmp_path, stdout=subprocess.DEVNULL) for _ in range(2)]
    kill_running_children()
    for child in children:
        assert child.wait(timeout=5) == -signal.SIGKILL
        stop_child(child)
    assert not running_groups() & {child.pid for child in children}


def test_run_process_reads_merged_output_and_stdin_bytes(tmp_path: Path) -> None:
    script = "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data))\nprint('err', file=sys.stderr)\n"
    outcome = run_process([PYTHON, "-c", script], tmp_path, timeout=30, input_data=b"x" * 300_000)
    assert outcome.returncode == 0 and outcome.stopped is None
    assert outcome.output.complete() == b"300000\nerr\n"
    assert not group_alive(outcome.pgid) and outcome.pgid not in running_groups()


def test_run_process_cancel_and_timeout(tmp_path: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    cancelled = run_process(["sleep", "300"], tmp_path, timeout=60, cancel=cancel)
    timed_out = run_process(["sleep", "300"], tmp_path, timeout=0.2)
    assert cancelled.stopped == "cancelled" and timed_out.stopped == "timeout"
    assert cancelled.seconds < 5 and timed_out.seconds < 5


def test_run_process_missing_program_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        run_process([str(tmp_path / "missing")], tmp_path, timeout=5)
    assert not running_groups()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, (30.0, [])),
        (5, (5.0, [])),
        (0.5, (0.5, [])),
        (1000, (300.0, ["[timeout lowered to the maximum of 300 s]"])),
        (math.inf, (None, [])),
        (10**400, (None, [])),
        (0, (None, [])),
        (-1, (None, [])),
        (math.nan, (None, [])),
        ("soon", (None, [])),
    ],
)
def test_tool_timeout_vocabulary(raw: object, expected: tuple[float | None, list[str]]) -> None:
    timeout = ToolTimeout(default=30.0, maximum=300.0)
    assert timeout.resolve(raw) == expected
    assert ToolTimeout.INVALID == "timeout must be a positive, finite number of seconds"
    assert ToolTimeout.timed_out(2.5) == "[timed out after 2.5 s]"
    assert timeout.schema("search") == {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": 300.0,
        "description": "Seconds before the search is stopped. Default: 30; at most 300.",
    }


def test_check_environment() -> None:
    assert check_environment({"A": "1"}) == {"A": "1"}
    with pytest.raises(ValueError):
        check_environment({"A=B": "1"})


# --- no descendant survives a contained command (issue 14 kind 7) --------------------------------


def _running(token: str) -> list[int]:
    """Pids of live processes with ``token`` as an argument (zombies excluded)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline.split(b"\0") and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def _gone(token: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while _running(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


ESCAPES = {
    "new group (set -m)": "bash -c 'set -m; sleep {s} & echo started'",
    "new session (setsid)": "setsid sleep {s} & echo started",
    "double fork into a new session": "(setsid sh -c 'sleep {s} &' &); echo started",
}


@pytest.mark.parametrize("how", list(ESCAPES))
@pytest.mark.parametrize("ending", ["exit", "timeout", "cancel"])
def test_no_descendant_survives_a_contained_command(tmp_path: Path, how: str, ending: str) -> None:
    seconds = f"{4000 + len(how) + len(ending)}.{os.getpid() % 1000}"
    command = ESCAPES[how].format(s=seconds)
    if ending != "exit":
        command += "; sleep 60"
    cancel = threading.Event()
    if ending == "cancel":
        threading.Timer(0.5, cancel.set).start()
    timeout = 0.5 if ending == "timeout" else 30
    outcome = run_process(["/bin/sh", "-c", command], tmp_path, timeout=timeout, cancel=cancel, contain=True)
    assert outcome.output.complete() == b"started\n"
    assert outcome.stopped == {"exit": None, "timeout": "timeout", "cancel": "cancelled"}[ending]
    assert _gone(seconds), f"a descendant survived: {how}, {ending}"


def test_the_contained_status_is_the_commands(tmp_path: Path) -> None:
    def status(command: str) -> int:
        return run_process(["/bin/sh", "-c", command], tmp_path, timeout=30, contain=True).returncode

    assert status("exit 3") == 3
    assert status("kill -9 $$") == -signal.SIGKILL
    assert status("kill -TERM $$") == -signal.SIGTERM
    missing = run_process([str(tmp_path / "missing")], tmp_path, timeout=30, contain=True)
    assert missing.returncode == 127 and b"No such file" in (missing.output.complete() or b"")


def test_the_emergency_kill_reaches_descendants_that_left_the_group(tmp_path: Path) -> None:
    seconds = f"{6000 + os.getpid() % 1000}.5"
    child = start_child(
        ["/bin/sh", "-c", f"setsid sleep {seconds} & echo started; sleep 60"], tmp_path, contain=True
    )
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == b"started\n"
        deadline = time.monotonic() + 5
        while not _running(seconds):  # the background sleep may start just after the echo
            assert time.monotonic() < deadline
            time.sleep(0.01)
        kill_running_children()  # what the CLI's second Ctrl-C does before os._exit
        assert _gone(seconds)
    finally:
        stop_child(child)
        child.stdout.close()
