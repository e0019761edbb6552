"""Approval that waits, under ``kill -9``: a pending call runs at most once, no decision is lost.

Library trials, on each store (``JSONLSession``, ``SQLiteSession``, ``RedisSession``):

1. Setup (this process): a run stopped ``deferred`` at ``c1`` in the turn ``[read c0, write c1,
   write c2]`` (``c0`` ran; ``approval.defer_changes``).
2. A child process (``os.fork``) does what a person and then a cron job do: on one store,
   ``pending.decide`` approves ``c1`` and denies ``c2`` (each acknowledged on a pipe once it
   returned, as a command's exit status would be); on a second store, ``run_agent(user=None)``
   with ``pending.decided`` settles them and asks the model again. Its ``write`` tool appends its
   text to an effects file with one ``write``: one line per execution.
3. The child is killed with SIGKILL, either at a step (before and after each store append,
   before and after the tool's effect, after each acknowledgement: every boundary in turn, one
   trial each, until a child finishes) or after a random delay from the moment it begins its
   first decision (its store open and loaded), within the time from there to its end (measured
   first): a kill at any moment between the approval and the execution.
4. Recovery (this process): a decision the child did not acknowledge is recorded again (a person
   whose command did not return tries again; a call that no longer waits refuses it), then
   ``run_agent(user=None)`` goes on unless the record already ends with the answer.

Counted after recovery: double executions (a call's text in the effects file more than once);
lost decisions (the approved ``c1`` not answered with its real result or with
``INTERRUPTED_AFTER_START``, a real result without an execution, the denied ``c2`` run or not
answered with its refusal); and, honestly, how many trials ended with ``c1`` answered "may have
run" (killed between its ``started`` note and its result) and how many of those had not run.

The false-stop check of ``max_repeats`` on the task suite of ``bench/tasks`` replays its runs'
records there (``bench.tasks.would_stop``, when the suite runs); here, offline, it reads the
calls the last recorded suite made (the "Task suite" rows of BENCHMARKS.md): a stop needs the
same call ``--max-repeats`` (3) times in a row, so a run whose longest run of one identical call
is shorter cannot be stopped.

CLI trials (JSONL): ``miniagent session approve``, ``session deny`` and ``run --continue`` in one
process group against a stateless loopback model, the group killed with SIGKILL after a random
delay; recovery repeats the decisions (a ``CALL_ID`` that no longer waits exits 64) and runs
``--continue`` to the end. The approved call is ``run_command`` appending to a file.
"""

from __future__ import annotations

import contextlib
import os
import random
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import Report, Row

DENIAL = "too risky"
REFUSED = f"refused by the user: {DENIAL}"
TEXTS = {"c1": "one", "c2": "two"}
SETUP_MESSAGES = 4  # user, the assistant's three calls, c0's result, the pending note
CHILD_APPENDS = 6  # approved c1, denied c2, started c1, c1's result, c2's refusal, the answer


@dataclass
class Tally:
    """What a series of trials found (see the module docstring)."""

    trials: int = 0
    kills: int = 0
    double_executions: int = 0
    lost_decisions: int = 0
    may_have_run: int = 0
    may_have_run_but_did_not: int = 0
    problems: list[str] = field(default_factory=list)
    reached: Counter[int] = field(default_factory=Counter)  # killed after N of the child's appends

    def add(self, other: Tally) -> None:
        for name in ("trials", "kills", "double_executions", "lost_decisions", "may_have_run"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.may_have_run_but_did_not += other.may_have_run_but_did_not
        self.problems += other.problems
        self.reached += other.reached

    def line(self) -> str:
        return (
            f"trials={self.trials} kills={self.kills} double_executions={self.double_executions} "
            f"lost_decisions={self.lost_decisions} may_have_run={self.may_have_run} "
            f"(of which did not run: {self.may_have_run_but_did_not})"
        )


# --- the stores ----------------------------------------------------------------------------------


@dataclass
class Kit:
    """One store kind: ``open(session_id)`` returns a new, unopened store of that session."""

    name: str
    open: Callable[[str], Any]


def kits(folder: str, redis_url: str | None) -> list[Kit]:
    """JSONL (a file per session), SQLite (one database) and, with ``redis_url``, Redis (stores
    named by one owner, so recovery takes a killed child's lease over at once)."""
    from miniagent import JSONLSession, RedisSession, SQLiteSession

    found = [
        Kit("JSONLSession", lambda sid: JSONLSession(os.path.join(folder, f"{sid}.jsonl"))),
        Kit("SQLiteSession", lambda sid: SQLiteSession(os.path.join(folder, "sessions.db"), sid)),
    ]
    if redis_url is not None:
        found.append(Kit("RedisSession", lambda sid: RedisSession(redis_url, sid, 30, owner="trial")))
    return found


@contextlib.contextmanager
def redis_url() -> Iterator[str | None]:
    """A ``redis-server`` of this process's own on loopback, or ``None`` without one."""
    try:
        import redis  # noqa: F401
    except ModuleNotFoundError:
        yield None
        return
    from tests.redis_server import redis_server

    with redis_server() as server:
        yield None if server is None else server.url


# --- the child's steps -----------------------------------------------------------------------------


class Steps:
    """Counts the child's steps; at step ``kill_at`` (1-based; 0: never) it SIGKILLs itself."""

    def __init__(self, kill_at: int) -> None:
        self.kill_at = kill_at
        self.count = 0

    def step(self) -> None:
        self.count += 1
        if self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def _step_store(inner: Any, steps: Steps) -> Any:
    """``inner`` with a step before and after each append (a ``SessionStore`` itself)."""
    from miniagent.session import StoreContext

    class StepStore(StoreContext):
        def load(self) -> Any:
            return inner.load()

        def append(self, message: Any) -> None:
            steps.step()
            inner.append(message)
            steps.step()

        def close(self) -> None:
            inner.close()

    return StepStore()


def make_tools(effects: str, steps: Steps | None = None) -> list[Any]:
    """``read`` (read-only) and ``write``, which appends its ``text`` and a newline to ``effects``
    with one ``write`` (one line per execution; a step before and after)."""
    from miniagent import Tool, ToolResult

    def write(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        if steps is not None:
            steps.step()
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{arguments['text']}\n".encode())
        finally:
            os.close(fd)
        if steps is not None:
            steps.step()
        return ToolResult(f"wrote {arguments['text']}")

    def read(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return ToolResult("the text")

    return [
        Tool("read", "read", {"type": "object"}, read, read_only=True),
        Tool("write", "write", {"type": "object"}, write),
    ]


def _turn() -> list[Any]:
    from miniagent import ToolCall

    return [ToolCall("c0", "read", {}), *(ToolCall(cid, "write", {"text": t}) for cid, t in TEXTS.items())]


def _go_on(store: Any, tools: list[Any]) -> Any:
    """``run_agent(user=None)`` on ``store`` with the recorded decisions (else: defer)."""
    from miniagent import run_agent
    from miniagent.approval import defer_changes
    from miniagent.pending import decided
    from miniagent.testing import ScriptedClient

    hook = decided(store.load(), defer_changes(tools))
    return run_agent(
        client=ScriptedClient([["done"]]),
        system="",
        tools=tools,
        user=None,
        max_turns=2,
        session=store,
        before_tool_call=hook,
    )


def _child(kit: Kit, sid: str, effects: str, ack: int, go: int, begin: int, kill_at: int) -> None:
    """The child's whole life (see the module docstring); never returns. It writes to ``begin``
    once its first store is open and loaded, right before the first decision is stored."""
    from miniagent.pending import decide

    code = 0
    try:
        os.read(go, 1)
        steps = Steps(kill_at)
        with _step_store(kit.open(sid), steps) as store:
            store.load()
            os.write(begin, b"b")
            decide(store, "c1", True)
            os.write(ack, b"c1\n")
            steps.step()
            decide(store, "c2", False, DENIAL)
            os.write(ack, b"c2\n")
            steps.step()
        with _step_store(kit.open(sid), steps) as store:
            _go_on(store, make_tools(effects, steps))
    except BaseException:
        code = 1
    os._exit(code)


# --- one trial -------------------------------------------------------------------------------------


def _setup(kit: Kit, sid: str, effects: str) -> None:
    from miniagent import run_agent
    from miniagent.approval import defer_changes
    from miniagent.testing import ScriptedClient

    tools = make_tools(effects)
    with kit.open(sid) as store:
        result = run_agent(
            client=ScriptedClient([_turn()]),
            system="",
            tools=tools,
            user="edit",
            max_turns=2,
            session=store,
            before_tool_call=defer_changes(tools),
        )
    assert result.stop_reason == "deferred", result.stop_reason


def trial(
    kit: Kit, folder: str, *, kill_at: int = 0, delay: float | None = None
) -> tuple[Tally, bool, float]:
    """One trial; returns (its tally, whether the child finished on its own, the child's seconds
    from its first decision to its end). ``delay``: SIGKILL that many seconds after the child
    began its first decision (its store open and loaded)."""
    sid = f"t-{uuid.uuid4().hex}"
    effects = os.path.join(folder, f"{sid}.effects")
    _setup(kit, sid, effects)
    ack_read, ack_write = os.pipe()
    go_read, go_write = os.pipe()
    begin_read, begin_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ack_read)
        os.close(go_write)
        os.close(begin_read)
        _child(kit, sid, effects, ack_write, go_read, begin_write, kill_at)
    os.close(ack_write)
    os.close(go_read)
    os.close(begin_write)
    os.write(go_write, b"g")
    os.read(begin_read, 1)  # b"" when the child ended first
    os.close(begin_read)
    started = time.perf_counter()
    if delay is not None:
        time.sleep(delay)  # the child runs meanwhile (a spin would take its core on a busy machine)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - started
    os.close(go_write)
    with os.fdopen(ack_read, "rb") as pipe:
        acked = set(pipe.read().decode().split())
    tally = Tally(trials=1)
    finished = os.WIFEXITED(status)
    if not finished:
        tally.kills = 1
        with kit.open(sid) as store:
            tally.reached[len(store.load()) - SETUP_MESSAGES] += 1
    elif os.WEXITSTATUS(status) != 0:
        tally.problems.append(f"{kit.name}: the child failed (exit {os.WEXITSTATUS(status)})")
    _recover(kit, sid, effects, acked, tally)
    return tally, finished, seconds


def _recover(kit: Kit, sid: str, effects: str, acked: set[str], tally: Tally) -> None:
    from miniagent.pending import can_continue, decide

    with kit.open(sid) as store:
        for call_id, approved, reason in (("c1", True, ""), ("c2", False, DENIAL)):
            if call_id not in acked:
                with contextlib.suppress(ValueError):  # it no longer waits: the run got to it
                    decide(store, call_id, approved, reason)
    with kit.open(sid) as store:
        if can_continue(store.load()) is None:
            result = _go_on(store, make_tools(effects))
            if result.stop_reason != "complete":
                tally.problems.append(f"{kit.name}: recovery stopped {result.stop_reason}")
        final = store.load()
    _judge(kit.name, final, effects, tally)


def _judge(name: str, final: list[Any], effects: str, tally: Tally) -> None:
    from miniagent.pending import INTERRUPTED_AFTER_START

    runs = Counter(Path(effects).read_text().split()) if os.path.exists(effects) else Counter()
    tally.double_executions += sum(1 for count in runs.values() if count > 1)
    results = {cid: [m.content for m in final if m.tool_call_id == cid and m.state is None] for cid in TEXTS}
    c1 = results["c1"]
    if c1 == [f"wrote {TEXTS['c1']}"]:
        if runs[TEXTS["c1"]] != 1:
            tally.lost_decisions += 1
            tally.problems.append(f"{name}: c1 answered as run, ran {runs[TEXTS['c1']]} times")
    elif c1 == [INTERRUPTED_AFTER_START]:
        tally.may_have_run += 1
        tally.may_have_run_but_did_not += runs[TEXTS["c1"]] == 0
    else:
        tally.lost_decisions += 1
        tally.problems.append(f"{name}: the approved c1 was answered {c1!r}")
    if results["c2"] != [REFUSED] or runs[TEXTS["c2"]]:
        tally.lost_decisions += 1
        tally.problems.append(
            f"{name}: the denied c2 was answered {results['c2']!r}, ran {runs[TEXTS['c2']]}"
        )
    if not final or final[-1].role != "assistant" or final[-1].content != "done":
        tally.problems.append(f"{name}: the record does not end with the answer")


def every_step(kit: Kit, folder: str) -> Tally:
    """One trial per kill point, from the first step until a child finishes without a kill."""
    tally = Tally()
    kill_at = 1
    while True:
        found, finished, _ = trial(kit, folder, kill_at=kill_at)
        tally.add(found)
        if finished:
            return tally
        kill_at += 1


def random_kills(kit: Kit, folder: str, kills: int, rng: random.Random) -> Tally:
    """Trials killed after a random delay within the time from a child's first decision to its
    end (the median of three unkilled children), until ``kills`` of them were killed (a child
    that finished first counts as a trial; at most ``10 * kills`` trials: a sleep this short may
    wake after a fast child ended)."""
    whole = sorted(trial(kit, folder)[2] for _ in range(3))[1]
    tally = Tally()
    while tally.kills < kills and tally.trials < 10 * kills:
        tally.add(trial(kit, folder, delay=rng.uniform(0, whole))[0])
    return tally


# --- the CLI trials -------------------------------------------------------------------------------


def cli_trials(count: int, rng: random.Random, folder: str) -> Tally:
    """CLI trials (see the module docstring), the process group killed after a random delay
    within the time of a whole unkilled sequence, until ``count`` were killed (at most
    ``4 * count`` trials)."""
    from tests.cli_helpers import cli_command, cli_env, text_turn
    from tests.defer_helpers import ReplyingModel, calls_turn, results_in

    calls = [
        ("call_run", "run_command", {"command": "echo ran >> effects.txt"}),
        ("call_write", "write_file", {"path": "notes.txt", "content": "no"}),
    ]

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        return calls_turn(calls) if results_in(body) == 0 else text_turn("done")

    base = Path(folder) / "cli"
    base.mkdir()
    tally = Tally()
    with ReplyingModel(answer) as server:
        model = ["--provider", "openai", "--base-url", server.base_url, "--model", "test"]

        def cli(args: list[str], workspace: Path) -> list[str]:
            if args[0] == "session":
                return cli_command(args)
            return cli_command([*args, *model, "--workspace", str(workspace)])

        template = base / "template.jsonl"
        ws0 = base / "ws0"
        ws0.mkdir()
        first = subprocess.run(
            cli(["run", "--approve", "defer", "--session", str(template), "edit"], ws0),
            env=cli_env(base),
            cwd=base,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert first.returncode == 4, first.stderr

        def sequence(session: Path, workspace: Path) -> str:
            steps = [
                cli(["session", "approve", str(session), "call_run"], workspace),
                cli(["session", "deny", str(session), "call_write", "--reason", DENIAL], workspace),
                cli(["run", "--session", str(session), "--continue"], workspace),
            ]
            return " && ".join(shlex.join(step) for step in steps)

        def one(delay: float | None) -> tuple[Tally, float]:
            name = uuid.uuid4().hex
            session, workspace = base / f"{name}.jsonl", base / name
            workspace.mkdir()
            shutil.copy(template, session)
            started = time.perf_counter()
            child = subprocess.Popen(
                ["sh", "-c", sequence(session, workspace)],
                env=cli_env(base),
                cwd=base,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            killed = False
            if delay is not None:
                try:
                    child.wait(delay)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
                    killed = True
            child.wait()
            seconds = time.perf_counter() - started
            found = Tally(trials=1, kills=int(killed))
            _cli_recover(session, workspace, cli, found)
            return found, seconds

        whole = sorted(one(None)[1] for _ in range(2))[0]
        while tally.kills < count and tally.trials < 4 * count:
            tally.add(one(rng.uniform(0, whole))[0])
    return tally


def _cli_recover(
    session: Path, workspace: Path, cli: Callable[[list[str], Path], list[str]], tally: Tally
) -> None:
    from miniagent import load_session
    from miniagent.pending import INTERRUPTED_AFTER_START
    from tests.cli_helpers import cli_env

    env = cli_env(session.parent)
    for args in (
        ["session", "approve", str(session), "call_run"],
        ["session", "deny", str(session), "call_write", "--reason", DENIAL],
        ["run", "--session", str(session), "--continue"],
    ):
        done = subprocess.run(
            cli(args, workspace), env=env, cwd=session.parent, capture_output=True, timeout=120
        )
        if done.returncode not in (0, 64):  # 64: the call no longer waits, or nothing to continue
            tally.problems.append(f"cli recovery {args[:2]} exit {done.returncode}: {done.stderr[-200:]!r}")
    effects = workspace / "effects.txt"
    runs = effects.read_text().count("ran") if effects.exists() else 0
    tally.double_executions += runs > 1
    final = load_session(session)
    run_result = [m for m in final if m.tool_call_id == "call_run" and m.state is None]
    write_result = [m for m in final if m.tool_call_id == "call_write" and m.state is None]
    if len(run_result) != 1:
        tally.lost_decisions += 1
    elif run_result[0].content == INTERRUPTED_AFTER_START:
        tally.may_have_run += 1
        tally.may_have_run_but_did_not += runs == 0
    elif run_result[0].is_error or runs != 1:
        tally.lost_decisions += 1
        tally.problems.append(f"cli: call_run answered {run_result[0].content[:80]!r}, ran {runs}")
    if [m.content for m in write_result] != [REFUSED] or (workspace / "notes.txt").exists():
        tally.lost_decisions += 1
        tally.problems.append(f"cli: call_write answered {[m.content for m in write_result]!r}")


# --- the false-stop check on recorded traces ---------------------------------------------------------


def recorded_streaks(benchmarks: Path) -> list[tuple[str, int]]:
    """(task, longest run of one identical call) for each task row of the "Task suite" section
    of ``benchmarks`` (calls as the suite recorded them: ``name(input)`` joined by ``"; "``)."""
    text = benchmarks.read_text(encoding="utf-8") if benchmarks.is_file() else ""
    found = []
    for line in text.splitlines():
        if not line.startswith(("| task: ", "| held-out: ")):
            continue
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        name, note = cells[0], cells[-1]
        calls = [c for c in note.partition("; ")[2].split("; ") if c]
        longest = run = 0
        for index, call in enumerate(calls):
            run = run + 1 if index and call == calls[index - 1] else 1
            longest = max(longest, run)
        found.append((name, longest))
    return found


# --- the bench section -----------------------------------------------------------------------------


def run(report: Report, quick: bool) -> None:
    """The ``defer`` section of ``python -m bench``."""
    section = report.section("defer", "Approval that waits, under kill -9")
    rng = random.Random(20261201)
    count = 50 if quick else 200
    folder = tempfile.mkdtemp(prefix="bench-defer-")
    total = Tally()
    try:
        with redis_url() as url:
            if url is None:
                report.skip("defer: RedisSession", "redis-server or the redis package is missing")
            for kit in kits(folder, url):
                steps = every_step(kit, folder)
                kills = random_kills(kit, folder, count, rng)
                for label, found in (("every step", steps), (f"{count} random delays", kills)):
                    total.add(found)
                    section.rows.append(_row(f"{kit.name}: kill -9 at {label}", found))
        cli = cli_trials(10 if quick else 30, rng, folder)
        total.add(cli)
        section.rows.append(_row("CLI (JSONL): kill -9 of approve, deny, run --continue", cli))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    section.rows.append(
        Row("double executions, all trials", str(total.double_executions), "0", total.double_executions == 0)
    )
    section.rows.append(
        Row("lost decisions, all trials", str(total.lost_decisions), "0", total.lost_decisions == 0)
    )
    streaks = recorded_streaks(Path(__file__).resolve().parent.parent / "BENCHMARKS.md")
    stoppable = [name for name, longest in streaks if longest >= 3]
    section.rows.append(
        Row(
            "max_repeats 3 on the recorded task-suite runs: runs it could stop",
            f"{len(stoppable)} of {len(streaks)}",
            "0 false stops",
            not stoppable if streaks else None,
            f"offline: longest run of one identical call {max((n for _, n in streaks), default=0)} "
            "(a stop needs 3); the suite itself replays each record when it runs (bench/tasks)",
        )
    )
    section.notes.append(
        "A trial forks a child that approves c1, denies c2 and goes on (run_agent(user=None)), kills "
        "it with SIGKILL at a step or after a random delay, then recovers and checks the effects "
        "file and the record (bench/defer.py). 'may have run': c1 answered INTERRUPTED_AFTER_START "
        "(killed between its started note and its result): never run again, whether it had run or "
        "not; at most once, not exactly once."
    )
    if total.problems:
        section.notes.append("Problems: " + "; ".join(total.problems[:10]))


def _row(name: str, found: Tally) -> Row:
    ok = found.double_executions == 0 and found.lost_decisions == 0 and not found.problems
    reached = ", ".join(f"{n}: {found.reached[n]}" for n in sorted(found.reached))
    where = f" (after N of the child's {CHILD_APPENDS} appends: {reached})" if reached else ""
    note = (
        f"{found.kills} killed{where}; 'may have run' {found.may_have_run} "
        f"(of which had not run: {found.may_have_run_but_did_not})"
    )
    value = f"{found.trials} trials: {found.double_executions} double, {found.lost_decisions} lost"
    return Row(name, value, "0 double, 0 lost", ok, note)
