"""Crash trials: a child running ``run_agent`` is killed with SIGKILL; nothing committed is lost.

Each trial kills a child process (``crash_child.py``: a session, real file-writing tools, a
scripted model with many turns of tool calls, some arguments of up to 1 MB so a kill can tear a
line) either after a seeded random delay or at a deterministic point: blocked inside
``on_message`` right after its Nth commit, inside its Kth tool run after the tool's file was
written, or in the middle of its Nth session line (half of the line written, as a crash inside a
``write`` leaves it). A trial chains one to three kills on the same session (the next child resumes what the
previous one left), then the test itself resumes with a ``ScriptedClient``.

After every kill: the session loads (only a torn last line is dropped: every complete line is a
message, and ``load_session`` returns exactly those); every message the child reported as
committed (through a pipe written with ``os.write`` before ``on_message`` returns) is in the file,
in order and equal. After the final resume: the first request's history answers every call
exactly once, and the file is valid JSONL (every line ``json.loads``, final newline).

Counts: 60 kills in CI, 300 with ``MINIAGENT_STRESS_FULL=1`` (a child that finished before its
kill point counts as a trial but not as a kill). ``pytest -s`` prints the tally:
trials run, sessions unloadable, committed messages lost, unanswered calls after resume (all three
must be 0), plus how many kills tore a line.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from stress_support import HERE, PYTHON, digest, jsonl_lines_ok, scale, unanswered_calls

from miniagent import Message, SessionError, load_session, run_agent
from miniagent.messages import message_from_json
from miniagent.testing import ScriptedClient

CHILD = HERE / "crash_child.py"
TRIALS = scale(60, 300)


@dataclass
class Tally:
    trials: int = 0
    kills: int = 0
    finished_before_kill: int = 0
    torn_tails: int = 0
    unloadable: int = 0
    lost: int = 0
    unanswered: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"trials={self.trials} kills={self.kills} finished_before_kill={self.finished_before_kill} "
            f"torn_tails={self.torn_tails} unloadable={self.unloadable} lost={self.lost} "
            f"unanswered={self.unanswered}"
        )


@dataclass
class Round:
    reported: list[str]
    killed: bool
    finished: bool


def run_child(
    session: Path,
    workspace: Path,
    seed: int,
    prefix: str,
    *,
    delay: float | None = None,
    pause_after: int = 0,
    pause_in_tool: int = 0,
    tear_at: int = 0,
    local: bool = False,
    ready_timeout: float = 60.0,
) -> Round:
    """Start a child, kill it (after ``delay`` s past ready, or once it reports ``paused``)."""
    read_fd, write_fd = os.pipe()
    command = [PYTHON, str(CHILD), str(session), str(workspace), str(write_fd), str(seed), prefix]
    if pause_after:
        command += ["--pause-after", str(pause_after)]
    if pause_in_tool:
        command += ["--pause-in-tool", str(pause_in_tool)]
    if tear_at:
        command += ["--tear-at", str(tear_at)]
    if local:
        command.append("--local")
    proc = subprocess.Popen(command, pass_fds=(write_fd,), stdin=subprocess.PIPE, cwd=HERE)
    os.close(write_fd)
    buffer = b""
    lines: list[str] = []
    deadline: float | None = None
    eof = False

    def pump(timeout: float | None) -> None:
        nonlocal buffer, eof
        ready, _, _ = select.select([read_fd], [], [], timeout)
        if ready:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                eof = True
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines.extend(line.decode() for line in complete)

    try:
        start = time.monotonic()
        while not eof:
            if "paused" in lines or "finished" in lines:
                break
            if deadline is None and "ready" in lines and delay is not None:
                deadline = time.monotonic() + delay
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                pump(remaining)
            else:
                if time.monotonic() - start > ready_timeout:
                    raise AssertionError(f"child did not get ready/paused in {ready_timeout}s: {lines}")
                pump(1.0)
        killed = "finished" not in lines and proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        while not eof:  # drain what the child wrote before it died
            pump(None)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(read_fd)
        if proc.stdin is not None:
            proc.stdin.close()
    if not killed:
        assert proc.returncode == 0, f"child failed with {proc.returncode}: {lines[-3:]}"
    reported = [line.split()[2] for line in lines if line.startswith("commit ")]
    return Round(reported, killed, "finished" in lines)


def check_after_kill(
    session: Path, before: list[Message], round_: Round, tally: Tally, label: str
) -> list[Message]:
    """Check the session left by a killed child; return its messages (or ``before`` if unloadable)."""
    data = session.read_bytes() if session.exists() else b""
    cut = data.rfind(b"\n") + 1
    whole, tail = data[:cut], data[cut:]
    expected: list[Message] = []
    try:
        expected = [message_from_json(json.loads(line)) for line in whole.splitlines()]
    except ValueError as error:
        tally.unloadable += 1
        tally.problems.append(f"{label}: a complete line is not a message: {error}")
        return before
    if tail:
        try:
            expected.append(message_from_json(json.loads(tail)))
        except ValueError:
            tally.torn_tails += 1
    try:
        loaded = load_session(session)
    except (SessionError, OSError) as error:
        tally.unloadable += 1
        tally.problems.append(f"{label}: load_session failed: {error}")
        return before
    if loaded != expected:
        tally.unloadable += 1
        tally.problems.append(f"{label}: load_session dropped more than a torn last line")
    if loaded[: len(before)] != before:
        lost = sum(1 for a, b in zip(before, loaded[: len(before)], strict=False) if a != b)
        lost += max(0, len(before) - len(loaded))
        tally.lost += lost
        tally.problems.append(f"{label}: {lost} earlier messages changed or missing")
    new = [digest(m) for m in loaded[len(before) :]]
    if new[: len(round_.reported)] != round_.reported:
        missing = sum(1 for i, d in enumerate(round_.reported) if i >= len(new) or new[i] != d)
        tally.lost += missing
        tally.problems.append(f"{label}: {missing} reported commits missing or different")
    return loaded


def resume_and_check(session: Path, tally: Tally, label: str) -> None:
    client = ScriptedClient([["resumed and done"]])
    result = run_agent(client=client, system="s", tools=[], user="resume", max_turns=1, session_path=session)
    assert result.stop_reason == "complete"
    problems = unanswered_calls(client.requests[0].messages)
    tally.unanswered += len(problems)
    if problems:
        tally.problems.append(f"{label}: unanswered after resume: {problems[:5]}")
    problems = unanswered_calls(load_session(session))
    tally.unanswered += len(problems)
    if not jsonl_lines_ok(session):
        tally.unloadable += 1
        tally.problems.append(f"{label}: not valid JSONL after the resume")
    if load_session(session) != result.messages:
        tally.lost += 1
        tally.problems.append(f"{label}: the file differs from the resumed run's record")


def one_trial(tmp: Path, number: int, tally: Tally) -> None:
    rng = random.Random(number)
    session = tmp / f"trial{number}" / "session.jsonl"
    workspace = tmp / f"trial{number}" / "ws"
    workspace.mkdir(parents=True)
    before: list[Message] = []
    for round_number in range(rng.choice((1, 1, 2, 3))):
        label = f"trial {number} round {round_number}"
        mode = rng.random()
        seed = rng.randrange(1 << 30)
        prefix = f"r{round_number}"
        if mode < 0.4:
            round_ = run_child(session, workspace, seed, prefix, delay=rng.uniform(0.0, 0.3))
        elif mode < 0.65:
            round_ = run_child(session, workspace, seed, prefix, pause_after=rng.randint(1, 80))
        elif mode < 0.8:
            round_ = run_child(session, workspace, seed, prefix, pause_in_tool=rng.randint(1, 60))
        else:
            round_ = run_child(session, workspace, seed, prefix, tear_at=rng.randint(1, 80))
        tally.trials += 1
        tally.kills += round_.killed
        tally.finished_before_kill += round_.finished
        before = check_after_kill(session, before, round_, tally, label)
    resume_and_check(session, tally, f"trial {number}")
    if not tally.problems:
        shutil.rmtree(session.parent)  # large lines: keep the disk use of the run small


def test_sigkill_trials_lose_nothing(tmp_path: Path) -> None:
    tally = Tally()
    number = 0
    while tally.kills < TRIALS:
        one_trial(tmp_path, number, tally)
        number += 1
        if tally.problems:
            break
    print(f"\n[crash trials] {tally.line()}")
    assert not tally.problems, tally.problems[:10]
    assert tally.unloadable == tally.lost == tally.unanswered == 0
    assert tally.kills >= TRIALS


@pytest.mark.local_model
def test_sigkill_trial_against_the_local_model(tmp_path: Path) -> None:
    """One kill of a child driven by the embedded local model, right after the model's first commit."""
    tally = Tally()
    for number in (1,):
        session = tmp_path / f"local{number}" / "session.jsonl"
        workspace = tmp_path / f"local{number}" / "ws"
        workspace.mkdir(parents=True)
        round_ = run_child(session, workspace, number, "local", pause_after=2, local=True, ready_timeout=600)
        tally.trials += 1
        tally.kills += round_.killed
        check_after_kill(session, [], round_, tally, f"local {number}")
        resume_and_check(session, tally, f"local {number}")
    print(f"\n[crash trials, local model] {tally.line()}")
    assert not tally.problems, tally.problems
