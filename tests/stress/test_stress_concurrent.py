"""Two processes writing one session file: never a fused or interleaved line.

Chosen behaviour (DESIGN.md "Beyond the seed", session.py): a run holds an exclusive ``flock`` on
its session file for the whole run; a second writer does NOT wait for it: it fails at once with a
``SessionError`` whose text names the file, and writes nothing. Tests use real processes
(``lock_child.py``) and a deterministic handshake: the first child prints ``holding`` from inside
a tool and waits on its stdin, so the parent knows the lock is held while the second one runs.

Races without a handshake (two writers started together, many times; 10 rounds in CI, 50 with
``MINIAGENT_STRESS_FULL=1``): each writer either completes or fails with ``SessionError``; the
file stays valid JSONL, and each run's messages form one contiguous block.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from stress_support import HERE, PYTHON, jsonl_lines_ok, scale, unanswered_calls

from miniagent import load_session

CHILD = HERE / "lock_child.py"


def start(session: Path, role: str, name: str, turns: int = 20) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, str(CHILD), str(session), role, name, str(turns)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )


def last_json(output: str) -> dict[str, str]:
    return json.loads(output.strip().splitlines()[-1])


@pytest.mark.parametrize("exists", [False, True], ids=["new-file", "existing-file"])
@pytest.mark.parametrize("second_role", ["writer", "append"])
def test_second_writer_fails_at_once_naming_the_file(tmp_path: Path, exists: bool, second_role: str) -> None:
    session = tmp_path / "s.jsonl"
    if exists:
        first = start(session, "writer", "earlier", 2)
        assert last_json(first.communicate(timeout=60)[0]) == {"stop": "complete"}
    before = session.read_bytes() if exists else b""
    holder = start(session, "holder", "A")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"  # A is inside a tool: lock held
        snapshot = session.read_bytes()
        started = time.monotonic()
        second = start(session, second_role, "B")
        output, _ = second.communicate(timeout=60)  # A is still blocked: B cannot have waited for it
        elapsed = time.monotonic() - started
        assert second.returncode == 3, output
        result = last_json(output)
        assert result["error"] == "SessionError"
        assert str(session) in result["message"]
        assert "in use by another run" in result["message"]
        assert session.read_bytes() == snapshot  # B wrote nothing
        assert holder.poll() is None  # A still holds the lock: B did not wait for it
        holder.stdin.write("go\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        output, _ = holder.communicate(timeout=60)
        assert last_json(output) == {"stop": "complete"}
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    print(f"\n[concurrent] second writer ({second_role}) failed after {elapsed * 1000:.0f} ms (incl. start)")
    data = session.read_bytes()
    assert data.startswith(before)
    assert jsonl_lines_ok(session)
    messages = load_session(session)
    assert not any("B" in m.content.split()[:1] for m in messages)
    assert unanswered_calls(messages) == []


def test_racing_writers_never_interleave(tmp_path: Path) -> None:
    rounds = scale(10, 50)
    outcomes = {"complete": 0, "SessionError": 0}
    for number in range(rounds):
        session = tmp_path / f"race{number}.jsonl"
        names = [f"W{number}a", f"W{number}b"]
        procs = [start(session, "writer", name, 30) for name in names]
        results = [last_json(p.communicate(timeout=120)[0]) for p in procs]
        for result in results:
            key = result.get("stop") or result.get("error")
            assert key in outcomes, result
            outcomes[key] += 1
            if "error" in result:
                assert str(session) in result["message"]
        assert jsonl_lines_ok(session)
        messages = load_session(session)
        assert unanswered_calls(messages) == []
        owners = [
            next(n for n in names if n in (m.content + "".join(c.id for c in m.tool_calls)))
            for m in messages
            if m.role != "tool"
        ]
        blocks = [o for i, o in enumerate(owners) if i == 0 or owners[i - 1] != o]
        assert len(blocks) == len(set(blocks)), f"interleaved runs: {blocks}"
        completed = sum(1 for r in results if r.get("stop") == "complete")
        assert len(set(blocks)) == completed
    print(f"\n[concurrent] {rounds} races: {outcomes}")
