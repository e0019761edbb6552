"""Usage in the CLI (issue "Usage, cost and budgets" item 5): ``--json``'s final line carries the
run's usage and cost; on a terminal, ``run`` prints one usage line on stderr (never on a pipe)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import cli_env, json_lines

pytestmark = pytest.mark.timeout(60)

SCRIPT = """\
import sys
import miniagent.providers as providers
from miniagent import ToolCall, Usage
from miniagent.testing import ScriptedClient
turns = [
    [ToolCall("c1", "read_file", {"path": "notes.txt"}), Usage(100, 5, cache_read_tokens=80, requests=1)],
    ["ok", Usage(120, 3, cache_read_tokens=100, requests=1, cost_usd=0.25)],
]
providers.create_client = lambda *a, **k: ScriptedClient(turns)
from miniagent.cli import main
main(sys.argv[1:])
"""


def _script(tmp_path: Path) -> list[str]:
    (tmp_path / "notes.txt").write_text("a note\n")
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPT)
    return [sys.executable, str(script), "run", "--provider", "openai", "--workspace", str(tmp_path)]


def test_the_json_result_line_carries_usage_and_cost(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_script(tmp_path), "--json", "read"],
        env=cli_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    last = json_lines(done.stdout)[-1]
    assert last["stop_reason"] == "complete" and last["exit_code"] == 0
    assert last["usage"] == {
        "input_tokens": 220,
        "output_tokens": 8,
        "cache_read_tokens": 180,
        "cache_write_tokens": 0,
        "requests": 2,
        "cost_usd": None,  # the first request's cost is unknown: the total is unknown, not 0.25
        "unreported_requests": 0,
        "reasoning_tokens": 0,
    }
    assert "cost_usd" not in last  # once, inside usage
    assert "tokens in" not in done.stderr  # no usage line without a terminal


def test_run_prints_one_usage_line_on_a_terminal(tmp_path: Path) -> None:
    master, slave = os.openpty()
    child = subprocess.Popen(
        [*_script(tmp_path), "--approve", "read-only", "read"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=cli_env(tmp_path, {"TERM": "xterm"}),
    )
    os.close(slave)
    screen = b""
    try:
        deadline = time.monotonic() + 20
        while child.poll() is None or select.select([master], [], [], 0)[0]:
            assert time.monotonic() < deadline
            if select.select([master], [], [], 0.1)[0]:
                try:
                    screen += os.read(master, 65536)
                except OSError:
                    break
        assert child.wait(timeout=10) == 0
    finally:
        child.kill()
        os.close(master)
    lines = [line for line in screen.decode().splitlines() if "tokens in" in line]
    assert len(lines) == 1
    assert lines[0].endswith("miniagent: 220 tokens in (81% cached), 8 out, 2 requests")
