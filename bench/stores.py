"""Session stores: appends per second and the resume of a 10,000-message session, per store.

- Append: one open store, ``append`` per message (what ``run_agent`` does), records per second:
  ``JSONLSession``, ``SQLiteSession`` (WAL, one transaction per message), ``RedisSession`` (one
  fenced Lua script per message) against a real ``redis-server`` on loopback.
- Resume: ``run_agent(session=store)`` on a fresh store over a stored 10,000-message session with
  one scripted turn (take the lock, load, resume repair, one request, two appends).

Redis rows need ``redis-server`` on PATH and the ``redis`` package; skipped otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from .common import Report, Row, fmt_ms, fmt_rate, median

RESUME_MESSAGES = 10_000


def _messages(count: int) -> list[Any]:
    from miniagent import Message, ToolCall

    out: list[Any] = [Message("user", "Summarise the logs under /var/log/app and fix what fails.")]
    i = 0
    while len(out) < count:
        call = ToolCall(f"call_{i:06d}", "read_file", {"path": f"logs/app-{i % 97}.log", "limit": 200})
        out.append(Message("assistant", "Reading the next log file.", (call,)))
        out.append(Message("tool", f"line {i}: request handled in {i % 13} ms\n" * 2, (), call.id))
        i += 1
    return out[:count]


@contextlib.contextmanager
def _redis_url() -> Iterator[str | None]:
    try:
        import redis  # noqa: F401
    except ModuleNotFoundError:
        yield None
        return
    from tests.redis_server import redis_server

    with redis_server() as server:
        yield None if server is None else server.url


def _kinds(folder: str, redis_url: str | None) -> dict[str, Callable[[str], Any]]:
    from miniagent import JSONLSession, RedisSession, SQLiteSession

    kinds: dict[str, Callable[[str], Any]] = {
        "JSONLSession": lambda name: JSONLSession(os.path.join(folder, f"{name}.jsonl")),
        "SQLiteSession": lambda name: SQLiteSession(os.path.join(folder, "sessions.db"), name),
    }
    if redis_url is not None:
        kinds["RedisSession"] = lambda name: RedisSession(redis_url, name)
    return kinds


def _append_rate(make: Callable[[str], Any], count: int) -> float:
    messages = _messages(count)
    with make(f"append-{uuid.uuid4().hex}") as store:
        store.load()
        start = time.perf_counter()
        for message in messages:
            store.append(message)
        return count / (time.perf_counter() - start)


def _resume_time(make: Callable[[str], Any], name: str) -> float:
    from miniagent import run_agent
    from miniagent.testing import ScriptedClient

    start = time.perf_counter()
    with make(name) as store:
        result = run_agent(
            client=ScriptedClient([["done"]]), system="", tools=[], user="go on", max_turns=1, session=store
        )
    elapsed = time.perf_counter() - start
    assert len(result.messages) >= RESUME_MESSAGES + 2
    return elapsed


def run(report: Report, quick: bool) -> None:
    section = report.section("stores", "Session stores")
    folder = tempfile.mkdtemp(prefix="bench-stores-")
    try:
        with _redis_url() as redis_url:
            if redis_url is None:
                report.skip("stores: RedisSession", "redis-server or the redis package is missing")
            count = 1_000 if quick else 5_000
            repeats = 3 if quick else 5
            for label, make in _kinds(folder, redis_url).items():
                rate = median([_append_rate(make, count) for _ in range(repeats)])
                section.rows.append(Row(f"append: {label}.append, no fsync", fmt_rate(rate, "records/s")))
            for label, make in _kinds(folder, redis_url).items():
                name = f"resume-{uuid.uuid4().hex}"
                with make(name) as store:
                    for message in _messages(RESUME_MESSAGES):
                        store.append(message)
                times = []
                for _ in range(repeats):
                    times.append(_resume_time(make, name))
                section.rows.append(
                    Row(f"resume: run_agent on a {RESUME_MESSAGES:,}-message {label}", fmt_ms(median(times)))
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
