"""What only one store kind has: SQLite's file checks and WAL, Redis's lease (renewal, loss,
takeover by the same owner); errors and messages that cross process boundaries (issue 18 item 2)."""

from __future__ import annotations

import os
import pickle
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from miniagent import (
    EmptyResponseError,
    IncompleteResponseError,
    Message,
    MiniagentError,
    ProviderError,
    RedisSession,
    SandboxUnavailable,
    SessionError,
    SQLiteSession,
    ToolCall,
)
from miniagent.mcp import MCPError
from miniagent.providers.local import LocalModelError
from tests.helpers import usual_umask

USER = Message("user", "hi")


# --- SQLite -----------------------------------------------------------------------------------------


def test_sqlite_uses_wal_and_one_row_per_message(tmp_path: Path) -> None:
    path = tmp_path / "db" / "sessions.db"
    with SQLiteSession(path, "a") as store:
        store.append(USER)
        store.append(Message("assistant", "hello"))
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = db.execute("SELECT session_id, seq FROM miniagent_messages").fetchall()
    finally:
        db.close()
    assert rows == [("a", 1), ("a", 2)]


@pytest.mark.parametrize("content", [b"{ // my settings }", b"not a database at all, but long enough"])
def test_sqlite_refuses_a_file_that_is_not_a_database_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    for attempt in (lambda s: s.load(), lambda s: s.append(USER)):
        with pytest.raises(SessionError, match="not an SQLite database"), SQLiteSession(path, "a") as store:
            attempt(store)
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == ["settings.json"]


def test_sqlite_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    os.mkfifo(path)
    with pytest.raises(SessionError, match="not a regular file"), SQLiteSession(path, "a") as store:
        store.load()


def test_sqlite_refuses_an_append_after_another_run_wrote_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SQLiteSession(path, "a")
    assert first.load() == []  # no file yet: nothing locked
    with SQLiteSession(path, "a") as second:
        second.append(USER)
    with pytest.raises(SessionError, match="meanwhile"):
        first.append(Message("user", "late"))
    first.close()
    with SQLiteSession(path, "a") as store:
        assert store.load() == [USER]


def test_sqlite_through_a_symlink_is_the_same_database_its_journal_and_its_lock(tmp_path: Path) -> None:
    real = tmp_path / "data" / "s.db"
    with SQLiteSession(real, "a") as first:
        first.append(USER)
        link = tmp_path / "link.db"
        link.symlink_to(real)
        with pytest.raises(SessionError, match="in use"), SQLiteSession(link, "a") as second:
            second.load()
        with SQLiteSession(link, "b") as other:  # another session through the link: one WAL
            other.append(Message("user", "b"))
    assert not (tmp_path / "link.db-wal").exists() and not (tmp_path / "link.db.locks").exists()
    with SQLiteSession(link, "a") as store:
        assert store.load() == [USER]


def test_sqlite_refuses_a_database_with_two_hard_links_untouched(tmp_path: Path) -> None:
    """SQLite names its WAL after the path it was given: two names are two journals."""
    path = tmp_path / "s.db"
    with SQLiteSession(path, "a") as store:
        store.append(USER)
    os.link(path, tmp_path / "copy.db")
    before = path.read_bytes()
    for name in (path, tmp_path / "copy.db"):
        with pytest.raises(SessionError, match="2 hard links"), SQLiteSession(name, "a") as store:
            store.load()
    assert path.read_bytes() == before
    assert not (tmp_path / "copy.db.locks").exists()


def test_sqlite_a_row_written_behind_the_lock_is_a_session_error_not_an_integrity_error(
    tmp_path: Path,
) -> None:
    """A writer that takes no lock (an older version, a copy of the lock folder lost) inserted
    the row this store was about to write: the append says so, and stores nothing."""
    path = tmp_path / "s.db"
    with SQLiteSession(path, "a") as store:
        store.append(USER)
        intruder = sqlite3.connect(path)
        with intruder:
            intruder.execute(
                "INSERT INTO miniagent_messages VALUES ('a', 2, ?)", ('{"role":"user","content":"x"}',)
            )
        intruder.close()
        with pytest.raises(SessionError, match="meanwhile"):
            store.append(Message("assistant", "lost?"))
    with SQLiteSession(path, "a") as store:
        assert [m.content for m in store.load()] == ["hi", "x"]


def test_sqlite_files_and_folders_it_creates_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "s.db"
    with usual_umask(), SQLiteSession(path, "a") as store:
        store.append(USER)
        for made in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert made.stat().st_mode & 0o777 == 0o600, made
        locks = Path(f"{path}.locks")
        assert locks.stat().st_mode & 0o777 == 0o700
        assert all(lock.stat().st_mode & 0o777 == 0o600 for lock in locks.iterdir())
    for folder in (tmp_path / "new", tmp_path / "new" / "deeper"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


# --- Redis ------------------------------------------------------------------------------------------


def _session() -> str:
    return f"t-{uuid.uuid4().hex}"


def test_redis_lease_is_renewed_while_the_store_lives(redis_url: str) -> None:
    session = _session()
    with RedisSession(redis_url, session, lease_seconds=0.3) as store:
        store.append(USER)
        time.sleep(1.0)  # three lease lifetimes: only renewal keeps it
        with pytest.raises(SessionError, match="in use"):
            RedisSession(redis_url, session).load()
        store.append(Message("assistant", "still mine"))
    with RedisSession(redis_url, session) as again:
        assert [m.content for m in again.load()] == ["hi", "still mine"]


def test_redis_a_lost_lease_stores_nothing_more(redis_url: str) -> None:
    import redis

    session = _session()
    client = redis.Redis.from_url(redis_url)
    try:
        with RedisSession(redis_url, session) as store:
            store.append(USER)
            client.delete(f"miniagent:session:{session}:lease")  # expired, then taken by another
            with RedisSession(redis_url, session) as thief:
                thief.append(Message("user", "thief"))
                with pytest.raises(SessionError, match="lease lost"):
                    store.append(Message("user", "late"))
                with pytest.raises(SessionError, match="lease lost"):
                    store.load()
    finally:
        client.close()
    with RedisSession(redis_url, session) as after:
        assert [m.content for m in after.load()] == ["hi", "thief"]


def test_redis_the_same_owner_takes_over_and_fences_the_old_writer(redis_url: str) -> None:
    session = _session()
    old = RedisSession(redis_url, session, owner="task-1")
    old.append(USER)
    with pytest.raises(SessionError, match="in use"):
        RedisSession(redis_url, session, owner="task-2").load()
    with RedisSession(redis_url, session, owner="task-1") as new:  # the task delivered again
        assert new.load() == [USER]
        with pytest.raises(SessionError, match="lease lost"):
            old.append(Message("user", "from the old incarnation"))
        new.append(Message("assistant", "resumed"))
    old.close()
    with RedisSession(redis_url, session) as after:
        assert [m.content for m in after.load()] == ["hi", "resumed"]


def test_redis_bad_arguments() -> None:
    with pytest.raises(ValueError, match="lease_seconds"):
        RedisSession("redis://127.0.0.1:1/0", "s", lease_seconds=0)
    with pytest.raises(ValueError, match="owner"):
        RedisSession("redis://127.0.0.1:1/0", "s", owner="a|b")


# --- across process boundaries ----------------------------------------------------------------------


def _every_library_error() -> list[MiniagentError]:
    from miniagent.providers._http import StatusError

    return [
        MiniagentError("base"),
        EmptyResponseError(),
        IncompleteResponseError("max_output_tokens", "length", "Once upon a"),
        IncompleteResponseError("refusal"),
        SessionError("/x/s.jsonl", "line is not a valid message", line=3),
        SessionError(Path("/x/s.jsonl"), "in use"),
        ProviderError("overloaded", status=529, retryable=True, kind="overloaded_error"),
        StatusError("rate limited", status=429, retryable=True, kind=None, retry_after=1.5),
        LocalModelError("no model file"),
        SandboxUnavailable("the kernel has no Landlock"),
        MCPError("server exited", server="files", kind="closed"),
        MCPError("bad params", server="files", kind="error", code=-32602),
    ]


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def test_every_library_error_pickles_to_an_equal_one() -> None:
    errors = _every_library_error()
    covered = {type(error) for error in errors}
    missing = {
        cls.__qualname__
        for cls in _subclasses(MiniagentError) - covered
        if cls.__module__.startswith("miniagent")
    }
    assert not missing, f"add these errors to this test: {missing}"
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert copy == error and type(copy) is type(error)
        assert str(copy) == str(error) and vars(copy) == vars(error)
        assert hash(copy) == hash(error)
    assert SessionError("a", "b") != SessionError("a", "c")


def test_message_to_json_and_back() -> None:
    message = Message("assistant", "x\u2028", (ToolCall("c", "t", {"a": [1, None]}, "bad input"),))
    data = message.to_json()
    assert data == {
        "role": "assistant",
        "content": "x\u2028",
        "tool_calls": [{"id": "c", "name": "t", "input": {"a": [1, None]}, "input_error": "bad input"}],
    }
    import json

    assert Message.from_json(data) == message
    assert Message.from_json(json.dumps(data)) == message
    assert Message.from_json(json.dumps(data).encode()) == message
    with pytest.raises(ValueError):
        Message.from_json({"role": "robot"})


def test_run_result_to_json_and_back() -> None:
    from miniagent import RunResult, Usage

    result = RunResult(
        [Message("user", "hi"), Message("assistant", "yo")],
        "max_turns",
        Usage(input_tokens=3, output_tokens=4, requests=1, cost_usd=None),
    )
    data = result.to_json()
    assert data["stop_reason"] == "max_turns" and data["usage"]["input_tokens"] == 3
    import json

    assert RunResult.from_json(data) == result
    assert RunResult.from_json(json.dumps(data)) == result
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(ValueError, match="stop reason"):
        RunResult.from_json({**data, "stop_reason": "done"})
