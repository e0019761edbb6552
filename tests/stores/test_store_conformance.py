"""One conformance suite for every ``SessionStore``: JSONL, SQLite and Redis run the same tests
(DESIGN.md "Session stores"; issue 18 item 1). Redis is a real ``redis-server`` on loopback."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from miniagent import (
    JSONLSession,
    Message,
    RedisSession,
    SessionError,
    SessionStore,
    SQLiteSession,
    ToolCall,
    run_agent,
)
from miniagent.testing import ScriptedClient
from tests.helpers import assert_every_call_answered_once

Factory = Callable[[], SessionStore]
LEASE = 0.6  # seconds: Redis leases in these tests, short so a killed writer's expires fast


class Kind:
    """How to make stores of one kind on one session, and the same in a child process."""

    def __init__(
        self,
        name: str,
        make: Factory,
        make_other: Factory,
        child_code: str,
        reopen_after_kill: float,
        aliases: Callable[[], list[Factory]] = list,
    ) -> None:
        self.name = name
        self.make = make
        self.make_other = make_other  # a store of another session, same file / server
        self.child_code = child_code  # Python expression building the store in a child
        self.reopen_after_kill = reopen_after_kill  # seconds until a killed writer's lock is gone
        self.aliases = aliases  # stores of this session reached another way (made once it exists)


def _linked(path: Path) -> list[Path]:
    """A symlink and a hard link to ``path`` (which exists), in another folder."""
    folder = path.parent / "elsewhere"
    folder.mkdir(exist_ok=True)
    symlink, hard = folder / f"sym-{path.name}", folder / f"hard-{path.name}"
    symlink.symlink_to(path)
    os.link(path, hard)
    return [symlink, hard]


@pytest.fixture(params=["jsonl", "sqlite", "redis"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kind]:
    session_id = f"s-{uuid.uuid4().hex}"
    if request.param == "jsonl":
        path = tmp_path / "s.jsonl"
        other = tmp_path / "other.jsonl"
        code = f"JSONLSession({str(path)!r})"
        aliases = lambda: [functools.partial(JSONLSession, alias) for alias in _linked(path)]  # noqa: E731
        yield Kind("jsonl", lambda: JSONLSession(path), lambda: JSONLSession(other), code, 0, aliases)
    elif request.param == "sqlite":
        path = tmp_path / "sessions.db"
        code = f"SQLiteSession({str(path)!r}, {session_id!r})"
        yield Kind(
            "sqlite",
            lambda: SQLiteSession(path, session_id),
            lambda: SQLiteSession(path, "other"),
            code,
            0,
            lambda: [functools.partial(SQLiteSession, alias, session_id) for alias in _linked(path)],
        )
    else:
        url = request.getfixturevalue("redis_url")
        code = f"RedisSession({url!r}, {session_id!r}, lease_seconds={LEASE})"
        yield Kind(
            "redis",
            lambda: RedisSession(url, session_id, lease_seconds=LEASE),
            lambda: RedisSession(url, f"{session_id}-other", lease_seconds=LEASE),
            code,
            LEASE,
            lambda: [
                functools.partial(RedisSession, spelling, session_id, lease_seconds=LEASE)
                for spelling in (url.removesuffix("/0"), url.replace("127.0.0.1", "localhost"))
            ],
        )


USER = Message("user", "hi")
CALL = Message("assistant", "", (ToolCall("c1", "read", {"path": "a", "deep": [{"x": None}]}),))
RESULT = Message("tool", "text \u00e9\u4e2d\n\u2028", tool_call_id="c1", is_error=True)


def test_a_new_session_is_empty(kind: Kind) -> None:
    with kind.make() as store:
        assert store.load() == []


def test_messages_come_back_in_order_after_reopening(kind: Kind) -> None:
    with kind.make() as store:
        assert store.load() == []
        for message in (USER, CALL, RESULT):
            store.append(message)
        assert store.load() == [USER, CALL, RESULT]
    with kind.make() as again:
        assert again.load() == [USER, CALL, RESULT]


def test_append_without_load_goes_after_the_stored_messages(kind: Kind) -> None:
    with kind.make() as store:
        store.append(USER)
    with kind.make() as store:
        store.append(CALL)
    with kind.make() as store:
        assert store.load() == [USER, CALL]


def test_load_returns_a_new_list_each_time(kind: Kind) -> None:
    with kind.make() as store:
        store.append(USER)
        first = store.load()
        first.append(CALL)
        assert store.load() == [USER]


def test_a_second_writer_fails_at_once_while_the_first_is_open(kind: Kind) -> None:
    with kind.make() as first:
        first.append(USER)
        with pytest.raises(SessionError, match="in use"), kind.make() as second:
            second.load()
        with pytest.raises(SessionError, match="in use"), kind.make() as second:
            second.append(CALL)
        first.append(RESULT)
    with kind.make() as after:  # closed: free again
        assert after.load() == [USER, RESULT]


def test_a_second_writer_through_an_alias_fails_at_once(kind: Kind, tmp_path: Path) -> None:
    """The same session reached another way (a symlink or a hard link to the file, another
    spelling of the server's URL) is refused while the first writer holds it, and nothing of
    either writer is lost. (SQLite refuses a database with two hard links even alone:
    ``test_stores``.)"""
    with kind.make() as first:
        first.append(USER)
        aliases = kind.aliases()
        assert len(aliases) == 2
        for alias in aliases:
            with pytest.raises(SessionError, match=r"in use|hard links"), alias() as second:
                second.append(CALL)
        first.append(RESULT)
    shutil.rmtree(tmp_path / "elsewhere", ignore_errors=True)
    with kind.make() as after:
        assert after.load() == [USER, RESULT]


def test_a_message_the_loader_would_refuse_is_not_stored(kind: Kind) -> None:
    bad = Message("assistant", "", (ToolCall("c", "t", ["not", "a", "dict"]),))  # type: ignore[arg-type]
    with kind.make() as store:
        store.append(USER)
        with pytest.raises(SessionError, match="not stored"):
            store.append(bad)
        store.append(CALL)
    with kind.make() as store:
        assert store.load() == [USER, CALL]


def test_close_is_idempotent_and_a_run_does_not_close_the_store(kind: Kind) -> None:
    store = kind.make()
    for user, reply in (("one", "1"), ("two", "2")):
        result = run_agent(
            client=ScriptedClient([[reply]]), system="", tools=[], user=user, max_turns=1, session=store
        )
    assert [m.content for m in result.messages] == ["one", "1", "two", "2"]
    store.append(Message("user", "still open"))
    store.close()
    store.close()
    with kind.make() as again:
        assert [m.content for m in again.load()] == ["one", "1", "two", "2", "still open"]


def test_resume_repair_answers_a_call_left_without_result(kind: Kind) -> None:
    with kind.make() as store:
        store.append(USER)
        store.append(CALL)  # the process "died" before the result
    with kind.make() as store:
        result = run_agent(
            client=ScriptedClient([["done"]]), system="", tools=[], user="again", max_turns=1, session=store
        )
        assert_every_call_answered_once(result.messages)
        assert result.messages[2].tool_call_id == "c1" and result.messages[2].is_error
    with kind.make() as store:
        assert store.load() == result.messages


CHILD = """
import os, sys
from miniagent import JSONLSession, Message, RedisSession, SQLiteSession
store = {code}
store.load()
for i in range({count}):
    store.append(Message("user", f"m{{i}}"))
    print(i, flush=True)
sys.stdout.write("holding\\n"); sys.stdout.flush()
sys.stdin.readline()  # wait here, alive (a Redis lease keeps being renewed), until killed
"""


def test_a_killed_writer_loses_no_commit_and_does_not_hold_the_session(kind: Kind) -> None:
    count = 25
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD.format(code=kind.child_code, count=count))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = [line for line in iter(child.stdout.readline, "holding\n")]
    assert len(acknowledged) == count
    with pytest.raises(SessionError, match="in use"), kind.make() as other:
        other.load()  # the live (stopped) child still holds it
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()
    # JSONL and SQLite: free at once (the kernel drops the lock); Redis: when the lease expires.
    deadline = kind.reopen_after_kill + 5
    store = _open_when_free(kind, deadline)
    with store:
        assert [m.content for m in store.load()] == [f"m{i}" for i in range(count)]


def _open_when_free(kind: Kind, seconds: float) -> SessionStore:
    import time

    end = time.monotonic() + seconds
    while True:
        store = kind.make()
        try:
            store.load()
            return store
        except SessionError:
            store.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.05)  # the lease's own expiry is what is waited for


def test_many_sessions_side_by_side(kind: Kind) -> None:
    """Two sessions of the same kind do not see or lock each other."""
    with kind.make() as store, kind.make_other() as other:
        store.append(USER)
        other.append(CALL)
        assert store.load() == [USER]
        assert other.load() == [CALL]
