"""Sessions: appending records, loading and resuming a 100,000-message session.

- Append: ``SessionFile.append`` (what ``run_agent`` does: one open, locked file per run) and
  ``append_session`` (open, lock, check the tail, write, close per message), with and without
  fsync, in records per second.
- Load: ``load_session`` of a 100,000-message file (a user message, then rounds of an assistant
  message with a tool call and its tool result, ~150 bytes a line) against the floor: read the
  file and ``json.loads`` each line, keeping the results in a list as any loader must (keeping
  100,000 objects alive is what makes the garbage collector run; a variant that throws each
  result away is reported too, for information).
- Resume: ``run_agent`` with that ``session_path`` and one scripted turn (load, resume repair,
  one request, commit, append), on a fresh copy of the file each time.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import time

from .common import Report, Row, fmt_ms, fmt_rate, fmt_x, median

LOAD_TARGET = 1.3
RESUME_TARGET = 1.0
MESSAGES = 100_000


def _messages(count: int) -> list[object]:
    from miniagent import Message, ToolCall

    out: list[object] = [Message("user", "Summarise the logs under /var/log/app and fix what fails.")]
    i = 0
    while len(out) < count:
        call = ToolCall(f"call_{i:06d}", "read_file", {"path": f"logs/app-{i % 97}.log", "limit": 200})
        out.append(Message("assistant", "Reading the next log file.", (call,)))
        out.append(Message("tool", f"line {i}: request handled in {i % 13} ms\n" * 2, (), call.id))
        i += 1
    return out[:count]


def _write_session(path: str, count: int) -> int:
    from miniagent.session import SessionFile

    with SessionFile(path) as session:
        for message in _messages(count):
            session.append(message)  # type: ignore[arg-type]
    return os.path.getsize(path)


def _floor(path: str) -> list[object]:
    """Read the file and ``json.loads`` each line, keeping the results (as a loader must)."""
    loads = json.loads
    with open(path, "rb") as stream:
        data = stream.read()
    return [loads(line) for line in data.split(b"\n") if line]


def _floor_discard(path: str) -> None:
    """The same, throwing each result away (no objects kept alive, so no GC work at all)."""
    loads = json.loads
    with open(path, "rb") as stream:
        data = stream.read()
    for line in data.split(b"\n"):
        if line:
            loads(line)


def _append_rate(folder: str, count: int, fsync: bool, per_message: bool) -> float:
    from miniagent.session import SessionFile, append_session

    messages = _messages(count)
    path = os.path.join(folder, f"append-{fsync}-{per_message}-{time.monotonic_ns()}.jsonl")
    start = time.perf_counter()
    if per_message:
        for message in messages:
            append_session(path, message, fsync=fsync)  # type: ignore[arg-type]
    else:
        with SessionFile(path, fsync=fsync) as session:
            for message in messages:
                session.append(message)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return count / elapsed


def run(report: Report, quick: bool) -> None:
    from miniagent import load_session, run_agent, tool
    from miniagent.testing import ScriptedClient

    section = report.section("sessions", "Sessions")
    folder = tempfile.mkdtemp(prefix="bench-sessions-")
    try:
        plain = 5_000 if quick else 20_000
        synced = 100 if quick else 300
        for label, count, fsync, per_message in (
            ("SessionFile.append (run_agent's path), no fsync", plain, False, False),
            ("SessionFile.append, fsync per line", synced, True, False),
            ("append_session (open+lock+close per message), no fsync", plain // 2, False, True),
            ("append_session, fsync per line", synced, True, True),
        ):
            rates = [_append_rate(folder, count, fsync, per_message) for _ in range(3 if quick else 5)]
            section.rows.append(Row(f"append: {label}", fmt_rate(median(rates), "records/s")))

        path = os.path.join(folder, "big.jsonl")
        size = _write_session(path, MESSAGES)
        repeats = 3 if quick else 7
        load_times, floor_times, discard_times = [], [], []
        load_session(path)  # warm the page cache
        for _ in range(repeats):  # interleaved, so drift hits both alike; nothing kept between runs
            gc.collect()
            start = time.perf_counter()
            kept = _floor(path)
            floor_times.append(time.perf_counter() - start)
            del kept
            gc.collect()
            start = time.perf_counter()
            loaded = load_session(path)
            load_times.append(time.perf_counter() - start)
            assert len(loaded) == MESSAGES
            del loaded
            gc.collect()
            start = time.perf_counter()
            _floor_discard(path)
            discard_times.append(time.perf_counter() - start)
        load, floor = median(load_times), median(floor_times)
        section.rows.append(
            Row(
                f"load_session, {MESSAGES:,} messages ({size / 1e6:.1f} MB)",
                fmt_ms(load),
                f"<= {LOAD_TARGET}x the floor",
                load <= LOAD_TARGET * floor,
                f"{fmt_x(load / floor)} the floor; {fmt_rate(MESSAGES / load, 'messages/s')}",
            )
        )
        section.rows.append(Row("floor: read the file + json.loads per line, results kept", fmt_ms(floor)))
        section.rows.append(
            Row(
                "(information) the same, results thrown away",
                fmt_ms(median(discard_times)),
                "",
                None,
                "no objects survive, so the garbage collector never runs",
            )
        )

        @tool
        def read_file(path: str, limit: int = 0) -> str:
            """Read a file.

            Args:
                path: the file.
                limit: most lines.
            """
            return "ok"

        resume_times = []
        for i in range(repeats):
            copy = os.path.join(folder, f"resume-{i}.jsonl")
            shutil.copyfile(path, copy)
            client = ScriptedClient([["All logs read; nothing fails."]], record_messages=False)
            start = time.perf_counter()
            result = run_agent(
                client=client, system="bench", tools=[read_file], user="go on", max_turns=4, session_path=copy
            )
            resume_times.append(time.perf_counter() - start)
            assert result.stop_reason == "complete" and len(result.messages) >= MESSAGES + 2
            os.unlink(copy)
        resume = median(resume_times)
        section.rows.append(
            Row(
                f"resume: run_agent on a {MESSAGES:,}-message session, one turn",
                fmt_ms(resume),
                f"< {RESUME_TARGET:.0f} s",
                resume < RESUME_TARGET,
                f"{fmt_x(resume / floor)} the load floor",
            )
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
